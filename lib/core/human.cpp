#include "core/human.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace perfsweep {

std::optional<double> parse_si_number(std::string_view text) {
  if (text.empty() || text.size() > 64) return std::nullopt;
  double scale = 1;
  switch (text.back()) {
    case 'k':
    case 'K': scale = 1e3; break;
    case 'M': scale = 1e6; break;
    case 'B':
    case 'G': scale = 1e9; break;
    case 'T': scale = 1e12; break;
    case 'P': scale = 1e15; break;
    default: break;
  }
  if (scale != 1) text.remove_suffix(1);
  // digits, at most one point, then an optional exponent: no sign, no hex, no "inf" or "nan"
  if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text.front())) || text.front() == '.')) {
    return std::nullopt;
  }
  const std::string s(text);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v) || v < 0) return std::nullopt;
  if (s.find_first_of("xXpP") != std::string::npos) return std::nullopt;
  const double out = v * scale;
  if (!std::isfinite(out)) return std::nullopt;
  return out;
}

std::string grouped_integer(long long v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

std::string human_number(double v, int digits) {
  if (!std::isfinite(v)) return "-";
  const double a = std::abs(v);
  char buf[64];
  if (a < 1e4) {
    // whole numbers from 1,000 up keep their digits ("1,665"), smaller ones `digits` significant
    if (a >= 1000) return grouped_integer(std::llround(v));
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    return buf;
  }
  static constexpr struct {
    double scale;
    const char* suffix;
  } kSuffixes[] = {{1e15, "P"}, {1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "k"}};
  if (a >= 999.5e15) {
    std::snprintf(buf, sizeof buf, "%.3g", v);
    return buf;
  }
  for (const auto& s : kSuffixes) {
    // the largest multiplier whose mantissa, rounded to three digits, is at least 1
    if (a >= s.scale * 0.9995) {
      std::snprintf(buf, sizeof buf, "%.3g%s", v / s.scale, s.suffix);
      return buf;
    }
  }
  return "-";  // not reached: a >= 1e4 takes "k" at least
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string nearest_name(std::string_view given, const std::vector<std::string>& names) {
  if (given.empty()) return "";
  std::string best;
  std::size_t best_distance = static_cast<std::size_t>(-1);
  for (const std::string& n : names) {
    std::size_t d = edit_distance(given, n);
    // a prefix ("H100" of "H100-calibrated") or the same name in other case is nearest of all
    if (d == 0 || (n.size() > given.size() && edit_distance(given, n.substr(0, given.size())) == 0)) d = 0;
    const std::size_t allowed = std::max<std::size_t>(2, std::max(given.size(), n.size()) / 3);
    if (d <= allowed && d < best_distance) {
      best_distance = d;
      best = n;
    }
  }
  return best;
}

}  // namespace perfsweep
