#pragma once
// The last check before a number is published. Every number the tools print or write (estimate's
// report, configs' CSV and table, every dataset and attribute of a sweep's HDF5) is a time, a
// memory, a count, a rate, a fraction or an input echoed back: finite and not negative. One that
// is not can only come from inputs the range checks let through (an overflow, a division by a
// value near zero), so it is refused, naming the field and the cause, and nothing is published
// (InputError: exit 2). NaN is published only where it is the documented "nothing fits" marker
// of a hardware sweep's grid (io/grid_h5.hpp).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace perfsweep {

enum class NanMeans { Nonsense, NothingFits };

inline bool publishable(double value, NanMeans nan = NanMeans::Nonsense) {
  return (value >= 0 && value <= std::numeric_limits<double>::max()) ||
         (nan == NanMeans::NothingFits && std::isnan(value));
}
inline bool publishable(std::int64_t value, NanMeans = NanMeans::Nonsense) { return value >= 0; }

[[noreturn]] inline void refuse_published(std::string_view field, const std::string& value, const char* cause) {
  std::string message = "refusing to publish ";
  message += field;
  message += " = ";
  message += value;
  message += ": ";
  message += cause;
  message += "; nothing was written (check the inputs' values)";
  throw InputError(message);
}

// Throws InputError naming `field` and the cause unless publishable(value, nan).
inline void check_published(double value, std::string_view field, NanMeans nan = NanMeans::Nonsense) {
  if (publishable(value, nan)) return;
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  if (std::isnan(value)) {
    refuse_published(field, text, "not a number (the model formed 0/0 or inf - inf: an input too small or too large)");
  }
  if (std::isinf(value)) {
    refuse_published(field, text, "infinite (a division by a value near zero, or a result past the largest double)");
  }
  refuse_published(field, text, "negative (an overflow, or an input that cancels what it should add to)");
}

// A difference (a memory headroom, negative where a configuration does not fit): finite, of any sign.
inline void check_published_difference(double value, std::string_view field) {
  if (std::isfinite(value)) return;
  check_published(value, field);  // refused as NaN or infinite
}

inline void check_published(std::int64_t value, std::string_view field, NanMeans = NanMeans::Nonsense) {
  if (publishable(value)) return;
  refuse_published(field, std::to_string(value), "negative (an integer overflow)");
}

}  // namespace perfsweep
