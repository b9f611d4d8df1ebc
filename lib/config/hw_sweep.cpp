#include "config/hw_sweep.hpp"

#include <yaml-cpp/yaml.h>

#include "config/yaml_file.hpp"

#include <cmath>
#include <cstring>
#include <string>

#include "config/inputs.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"
#include "core/text.hpp"

namespace perfsweep {

std::vector<double> linspace(double start, double stop, std::int64_t num) {
  std::vector<double> y;
  if (num <= 0) return y;
  if (num == 1) return {start};
  const double step = (stop - start) / static_cast<double>(num - 1);
  for (std::int64_t i = 0; i < num; ++i) y.push_back(static_cast<double>(i) * step + start);
  y.back() = stop;
  return y;
}

std::size_t HardwareSweep::n_points() const {
  std::size_t n = 1;
  for (const SweepAxis& a : axes) n *= a.size();
  return n;
}

namespace {

// Values along one axis: enough for any design space, few enough to refuse a typo such as 1e9.
constexpr std::int64_t kMaxAxisValues = 100000;

// A system by name or path; errors say which field of the sweep file named it. A relative path
// (one with a '/' or a .yaml/.yml/.json ending) is relative to the sweep file's directory.
System system_for(const YAML::Node& n, const std::string& where, const std::filesystem::path& sweep_dir) {
  const std::string name = yaml_scalar(n, where, "a system name or path");
  const bool is_path = name.find('/') != std::string::npos || name.ends_with(".yaml") || name.ends_with(".yml") ||
                       name.ends_with(".json");
  try {
    if (is_path && std::filesystem::path(name).is_relative()) return load_system_named((sweep_dir / name).string());
    return load_system_named(name);
  } catch (const InputError& e) {
    throw InputError(where + ": " + e.what());
  }
}

double number(const YAML::Node& n, const std::string& where) {
  if (!n.IsScalar() || yaml_is_text(n)) throw InputError(where + " must be a number, got " + yaml_shown(n));
  try {
    const double v = n.as<double>();
    if (!std::isfinite(v)) throw InputError(where + " must be finite, got " + yaml_shown(n));
    return v;
  } catch (const YAML::BadConversion&) {
    throw InputError(where + " must be a number, got " + yaml_shown(n));
  }
}

std::vector<double> parse_values(const YAML::Node& spec, const std::string& param, const std::string& where,
                                 const std::filesystem::path& sweep_dir) {
  std::vector<double> values;
  if (spec.IsSequence()) {
    for (std::size_t i = 0; i < spec.size(); ++i) values.push_back(number(spec[i], where + "[" + std::to_string(i) + "]"));
  } else if (spec.IsMap() && spec.size() == 1 && spec["linspace"]) {
    const YAML::Node l = spec["linspace"];
    if (!l.IsSequence() || l.size() != 3) throw InputError(where + ".linspace must be [start, stop, num]");
    const double num = number(l[2], where + ".linspace num");
    if (num < 1 || num != std::floor(num)) {
      throw InputError(where + ".linspace num must be a positive integer, got " + shown_text(l[2].Scalar()));
    }
    if (num > static_cast<double>(kMaxAxisValues)) {
      throw InputError(where + ".linspace num must be at most " + std::to_string(kMaxAxisValues) + ", got " +
                       shown_text(l[2].Scalar()));
    }
    values = linspace(number(l[0], where + ".linspace start"), number(l[1], where + ".linspace stop"),
                      static_cast<std::int64_t>(num));
  } else if (spec.IsMap() && spec.size() == 1 && spec["interpolate"]) {
    const YAML::Node in = spec["interpolate"];
    const std::string w = where + ".interpolate";
    if (!in.IsMap()) throw InputError(w + " must be {systems: [...], points_per_segment: N}");
    for (const auto& kv : in) {
      const std::string k = yaml_scalar(kv.first, w + ": a key", "a plain name");
      if (k != "systems" && k != "points_per_segment" && k != "key") throw InputError(w + ": unknown key '" + k + "'");
    }
    if (!in["systems"] || !in["systems"].IsSequence() || in["systems"].size() < 2) {
      throw InputError(w + ".systems must list at least two systems");
    }
    if (!in["points_per_segment"]) throw InputError(w + ": missing key 'points_per_segment'");
    const double per = number(in["points_per_segment"], w + ".points_per_segment");
    if (per < 2 || per != std::floor(per)) throw InputError(w + ".points_per_segment must be an integer >= 2");
    if (per > static_cast<double>(kMaxAxisValues)) {
      throw InputError(w + ".points_per_segment must be at most " + std::to_string(kMaxAxisValues));
    }
    const std::string key = in["key"] ? yaml_scalar(in["key"], w + ".key", "a system parameter name") : param;
    const SystemKey* f = find_system_key(key);
    if (!f) throw InputError(w + ".key: '" + key + "' is not a numeric system parameter");
    std::vector<double> anchors;
    for (std::size_t i = 0; i < in["systems"].size(); ++i) {
      anchors.push_back(system_for(in["systems"][i], w + ".systems[" + std::to_string(i) + "]", sweep_dir).*(f->member));
    }
    // Each segment's linspace without its last point, but the final segment's.
    for (std::size_t i = 0; i + 1 < anchors.size(); ++i) {
      std::vector<double> seg = linspace(anchors[i], anchors[i + 1], static_cast<std::int64_t>(per));
      if (i + 2 < anchors.size()) seg.pop_back();
      values.insert(values.end(), seg.begin(), seg.end());
    }
  } else {
    throw InputError(where + " must be a list of numbers, {linspace: [start, stop, num]} or {interpolate: ...}");
  }
  if (values.empty()) throw InputError(where + " has no values");
  return values;
}

bool is_network_parameter(const std::string& name) {
  return name.rfind("nvlink_", 0) == 0 || name.rfind("ib_", 0) == 0 || name == "nic_factor";
}

void check_value(const std::string& name, double v, const std::string& where) {
  const SystemKey& k = *find_system_key(name);
  if (in_range(k, v)) return;
  char value[32];
  std::snprintf(value, sizeof value, "%.17g", v);
  throw InputError(where + ": " + name + " value out of range, got " + value + " (must be in " + system_key_range(k) +
                   ")");
}

}  // namespace

System HardwareSweep::point(std::size_t index) const {
  System s = base;
  std::size_t stride = n_points();
  for (const SweepAxis& a : axes) {
    stride /= a.size();
    const std::size_t i = (index / stride) % a.size();
    for (const SweepParameter& p : a.parameters) s.*(find_system_key(p.name)->member) = p.values[i];
  }
  return s;
}

namespace {

HardwareSweep read_hardware_sweep(const std::filesystem::path& file) {
  const std::string f = file.string();
  const YAML::Node root = load_yaml_file(file);
  if (!root.IsMap()) throw InputError(f + ": expected a mapping with keys base and axes");
  // (load_yaml_file refuses a key given twice at any depth: a duplicated axis parameter would
  // reach the output as two datasets)
  for (const auto& kv : root) {
    const std::string& k = kv.first.Scalar();
    if (k != "description" && k != "base" && k != "axes") throw InputError(f + ": unknown key '" + k + "'");
  }
  HardwareSweep sw;
  sw.name = file.stem().string();
  check_name(f + ": the sweep's name (its file name)", sw.name, NameUse::kLabel);
  if (root["description"]) sw.description = yaml_scalar(root["description"], f + ": description", "a text");
  const YAML::Node base = root["base"];
  if (!base || !base.IsMap()) throw InputError(f + ": missing key 'base' ({system: NAME, nvs: N})");
  for (const auto& kv : base) {
    const std::string& k = kv.first.Scalar();
    if (k != "system" && k != "nvs") throw InputError(f + ": base: unknown key '" + k + "'");
  }
  if (!base["system"]) throw InputError(f + ": base: missing key 'system'");
  sw.base_system = yaml_scalar(base["system"], f + ": base.system", "a system name or path");
  sw.base = system_for(base["system"], f + ": base.system", file.parent_path());
  if (base["nvs"]) {
    const double nvs = number(base["nvs"], f + ": base.nvs");
    if (nvs < 1 || nvs != std::floor(nvs)) {
      throw InputError(f + ": base.nvs must be a positive integer, got " + shown_text(base["nvs"].Scalar()));
    }
    if (nvs > static_cast<double>(kMaxNvlinkDomain)) {
      throw InputError(f + ": base.nvs must be at most " + std::to_string(kMaxNvlinkDomain) + ", got " +
                       shown_text(base["nvs"].Scalar()));
    }
    sw.base.nvlink_size = static_cast<std::int64_t>(nvs);
  }
  const YAML::Node axes = root["axes"];
  if (!axes || !axes.IsSequence() || axes.size() < 1 || axes.size() > 2) {
    throw InputError(f + ": 'axes' must be a list of one or two axes");
  }
  for (std::size_t a = 0; a < axes.size(); ++a) {
    const std::string where = f + ": axes[" + std::to_string(a) + "]";
    if (!axes[a].IsMap() || axes[a].size() == 0) throw InputError(where + " must map parameters to values");
    SweepAxis axis;
    for (const auto& kv : axes[a]) {
      SweepParameter p;
      p.name = yaml_scalar(kv.first, where + ": a key", "a system parameter name");
      if (!find_system_key(p.name)) throw InputError(where + ": '" + p.name + "' is not a numeric system parameter");
      if (sw.base.calibration && is_network_parameter(p.name)) {
        throw InputError(where + ": '" + p.name + "' cannot be swept on " + sw.base_system +
                         ", whose collectives are timed by its calibration (" + sw.base.calibration_file +
                         "); sweep an uncalibrated system");
      }
      for (const SweepAxis& other : sw.axes) {
        for (const SweepParameter& q : other.parameters) {
          if (q.name == p.name) throw InputError(where + ": '" + p.name + "' is swept on two axes");
        }
      }
      p.values = parse_values(kv.second, p.name, where + "." + p.name, file.parent_path());
      for (double v : p.values) check_value(p.name, v, where + "." + p.name);
      if (!axis.parameters.empty() && p.values.size() != axis.size()) {
        throw InputError(where + ": zipped parameters need equal lengths: " + axis.parameters.front().name + " has " +
                         std::to_string(axis.size()) + " values, " + p.name + " has " + std::to_string(p.values.size()));
      }
      axis.parameters.push_back(std::move(p));
    }
    sw.axes.push_back(std::move(axis));
  }
  return sw;
}

}  // namespace

HardwareSweep load_hardware_sweep(const std::filesystem::path& file) {
  return with_yaml_errors(file.string(), [&] { return read_hardware_sweep(file); });
}

}  // namespace perfsweep
