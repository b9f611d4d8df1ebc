#include "calib/measurement_entry.hpp"

#include <cmath>

#include "core/limits.hpp"
#include "core/text.hpp"

namespace perfsweep::calib {

std::string shown(const YAML::Node& n) {
  if (!n) return "nothing";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  if (n.IsNull()) return "null";
  return quoted_text(n.Scalar());
}

namespace {
bool integer_of(const YAML::Node& n, std::int64_t& v) {
  if (!n.IsScalar()) return false;
  try {
    v = n.as<std::int64_t>();
  } catch (const YAML::Exception&) {
    return false;
  }
  return true;
}
}  // namespace

std::int64_t positive_integer(const Entry& at, const YAML::Node& cfg, const char* key, std::int64_t max) {
  const YAML::Node n = cfg[key];
  if (!n) at.fail(std::string("cfg.") + key, "is missing");
  std::int64_t v = 0;
  if (!integer_of(n, v) || v <= 0 || v > max) {
    at.fail(std::string("cfg.") + key, "must be an integer in [1, " + std::to_string(max) + "], got " + shown(n));
  }
  return v;
}

std::int64_t count_or(const Entry& at, const YAML::Node& cfg, const char* key, std::int64_t fallback, std::int64_t max) {
  const YAML::Node n = cfg[key];
  if (!n) return fallback;
  std::int64_t v = 0;
  if (!integer_of(n, v) || v < 0 || v > max) {
    at.fail(std::string("cfg.") + key, "must be an integer in [0, " + std::to_string(max) + "], got " + shown(n));
  }
  return v;
}

double number_or_nan(const YAML::Node& n) {
  if (!n || !n.IsScalar()) return NAN;
  try {
    return n.as<double>();
  } catch (const YAML::Exception&) {
    return NAN;
  }
}

double seconds(const Entry& at, const YAML::Node& n, const std::string& field, bool allow_zero) {
  const double v = number_or_nan(n);
  if (!std::isfinite(v)) at.fail(field, "must be a number of seconds, got " + shown(n));
  // A positive time is a divisor of relative errors: at least kMinMeasured, not a denormal.
  if (allow_zero ? !(v >= 0) : !(v >= kMinMeasured)) {
    at.fail(field, std::string("must be a ") + (allow_zero ? "non-negative time" : "positive time (at least 1e-12 s)") +
                       ", got " + shown_text(n.Scalar()));
  }
  return v;
}

void check_model(const Entry& at, const Transformer& m) {
  if (const std::string error = model_limits_error(m); !error.empty()) at.fail("cfg", "describes no model: " + error);
}

bool flag_or(const Entry& at, const YAML::Node& cfg, const char* key, bool fallback) {
  const YAML::Node n = cfg[key];
  if (!n) return fallback;
  if (n.IsScalar()) {
    if (n.Scalar() == "true" || n.Scalar() == "True") return true;
    if (n.Scalar() == "false" || n.Scalar() == "False") return false;
  }
  at.fail(std::string("cfg.") + key, "must be true or false, got " + shown(n));
}

std::string choice_or(const Entry& at, const YAML::Node& cfg, const char* key, std::initializer_list<const char*> allowed,
                      const char* fallback) {
  const YAML::Node n = cfg[key];
  if (!n) return fallback;
  std::string list;
  for (const char* a : allowed) {
    if (n.IsScalar() && n.Scalar() == a) return a;
    list += std::string(list.empty() ? "" : ", ") + a;
  }
  at.fail(std::string("cfg.") + key, "must be one of " + list + ", got " + shown(n));
}

std::set<std::string> id_set(const std::string& ids) {
  std::set<std::string> wanted;
  std::size_t pos = 0;
  while (pos <= ids.size()) {
    const std::size_t comma = std::min(ids.find(',', pos), ids.size());
    if (comma > pos) wanted.insert(ids.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return wanted;
}

}  // namespace perfsweep::calib
