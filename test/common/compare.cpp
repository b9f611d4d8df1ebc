#include "common/compare.hpp"

#include <cmath>
#include <cstdlib>
#include <set>

namespace perfsweep::test {

std::size_t& compared_numbers() {
  static std::size_t n = 0;
  return n;
}

double& largest_relative_difference() {
  static double d = 0;
  return d;
}

namespace {

bool parse_number(const YAML::Node& n, double& out) {
  if (!n.IsScalar()) return false;
  const std::string& s = n.Scalar();
  if (s == "true" || s == "false" || s.empty()) return false;
  if (s == "NaN" || s == "nan" || s == ".nan") {
    out = std::nan("");
    return true;
  }
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end && *end == '\0';
}

void walk(const YAML::Node& e, const YAML::Node& a, const std::string& path, const CompareOptions& opt,
          std::vector<std::string>& out) {
  if (out.size() >= opt.max_reports) return;
  if (e.IsMap()) {
    if (!a.IsMap()) {
      out.push_back(path + ": expected an object");
      return;
    }
    std::set<std::string> seen;
    for (const auto& kv : e) {
      const std::string k = kv.first.as<std::string>();
      seen.insert(k);
      if (!a[k]) {
        out.push_back(path + "." + k + ": missing");
        continue;
      }
      walk(kv.second, a[k], path + "." + k, opt, out);
    }
    for (const auto& kv : a) {
      const std::string k = kv.first.as<std::string>();
      if (!seen.count(k)) out.push_back(path + "." + k + ": unexpected key");
    }
    return;
  }
  if (e.IsSequence()) {
    if (!a.IsSequence() || a.size() != e.size()) {
      out.push_back(path + ": expected a list of " + std::to_string(e.size()));
      return;
    }
    for (std::size_t i = 0; i < e.size(); ++i) walk(e[i], a[i], path + "[" + std::to_string(i) + "]", opt, out);
    return;
  }
  double x = 0, y = 0;
  const bool ex = parse_number(e, x);
  const bool ay = parse_number(a, y);
  if (ex && ay) {
    ++compared_numbers();
    if (x == y || (std::isnan(x) && std::isnan(y))) return;
    const double diff = std::fabs(x - y);
    const double scale = std::max(std::fabs(x), std::fabs(y));
    if (diff > 0) largest_relative_difference() = std::max(largest_relative_difference(), diff / scale);
    if (diff <= opt.rel_tol * scale) return;
    out.push_back(path + ": expected " + e.Scalar() + ", got " + a.Scalar());
    return;
  }
  if (!a.IsScalar() || e.Scalar() != a.Scalar()) {
    out.push_back(path + ": expected '" + e.Scalar() + "', got '" + (a.IsScalar() ? a.Scalar() : "<non-scalar>") + "'");
  }
}

}  // namespace

std::vector<std::string> compare_json(const YAML::Node& expected, const YAML::Node& actual, const std::string& path,
                                      const CompareOptions& opt) {
  std::vector<std::string> out;
  walk(expected, actual, path, opt, out);
  return out;
}

}  // namespace perfsweep::test
