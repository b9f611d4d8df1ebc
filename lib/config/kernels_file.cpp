#include "config/kernels_file.hpp"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <string>
#include <vector>

#include "config/yaml_file.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "core/files.hpp"
#include "core/limits.hpp"

namespace perfsweep::kernels {

namespace {
// Version 2 added the training step's kernels (the stream kinds after `norm`, each optional) and
// the attention's optional causal_efficiency; version 1 files still load.
constexpr int kFormatVersion = 2;
constexpr const char* kFormatName = "perfsweep-kernel-calibration";

struct Field {
  const char* name;
  double min;
  bool min_open;
  double max;
};
// Fractions the model divides by are at least kMinFraction, so no time it forms is inf or NaN.
constexpr Field kEfficiency{"efficiency", kMinFraction, false, 1};
constexpr Field kBandwidthFraction{"bandwidth_fraction", kMinFraction, false, 1};
constexpr Field kLaunch{"launch_s", 0, false, 1};
constexpr Field kTileM{"tile_m", 1, false, 65536};
constexpr Field kTileN{"tile_n", 1, false, 65536};
constexpr Field kKHalf{"k_half", 0, false, 1e9};
constexpr Field kHeadDimHalf{"head_dim_half", 0, false, 1e9};
constexpr Field kCausalEfficiency{"causal_efficiency", kMinFraction, false, 1};

void emit_pass(YAML::Emitter& out, const char* pass, std::initializer_list<std::pair<const char*, double>> values) {
  out << YAML::Key << pass << YAML::Value << YAML::Flow << YAML::BeginMap;
  for (const auto& [k, v] : values) out << YAML::Key << k << YAML::Value << v;
  out << YAML::EndMap;
}

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  void keys(const YAML::Node& node, std::initializer_list<const char*> allowed, const std::string& at) const {
    if (!node.IsMap()) throw InputError(file_ + ": " + at + " must be a mapping");
    for (const auto& kv : node) {
      const std::string k = yaml_scalar(kv.first, file_ + ": " + at + ": a key", "a plain name");
      bool ok = false;
      for (const char* a : allowed) ok = ok || k == a;
      if (!ok) throw InputError(file_ + ": " + at + ": unknown key '" + k + "'");
    }
    for (const char* a : allowed) {
      if (!node[a]) throw InputError(file_ + ": " + at + ": missing key '" + a + "'");
    }
  }

  double number(const YAML::Node& node, const Field& f, const std::string& at) const {
    const YAML::Node n = node[f.name];
    double v = NAN;
    if (yaml_is_text(n) || !YAML::convert<double>::decode(n, v)) {  // "0.5" in quotes is text
      throw InputError(file_ + ": " + at + "." + f.name + " must be a number, got " + yaml_shown(n));
    }
    const bool ok = std::isfinite(v) && (f.min_open ? v > f.min : v >= f.min) && v <= f.max;
    if (!ok) {
      throw InputError(file_ + ": " + at + "." + f.name + " must be in " + (f.min_open ? "(" : "[") +
                       std::to_string(f.min) + ", " + std::to_string(f.max) + "], got " + shown_text(n.Scalar()));
    }
    return v;
  }

  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

}  // namespace

void save_calibration(const Calibration& cal, const std::filesystem::path& file, int significant_digits) {
  YAML::Emitter out;
  out.SetDoublePrecision(static_cast<std::size_t>(significant_digits));
  out << YAML::Comment(
      "perfsweep kernel calibration (validate fit-kernels); model/kernel_calibration.hpp and\n"
      "docs/validation.md define each parameter. Times in seconds; efficiencies are fractions of the\n"
      "system's tensor-core peak, bandwidth fractions of its hbm_bandwidth.");
  out << YAML::BeginMap;
  out << YAML::Key << "format" << YAML::Value << kFormatName;
  out << YAML::Key << "version" << YAML::Value << kFormatVersion;
  out << YAML::Key << "source" << YAML::Value << cal.source;
  out << YAML::Key << "sm_count" << YAML::Value << cal.sm_count;
  const auto emit_gemm = [&out](const char* key, const std::array<GemmModel, 2>& models) {
    out << YAML::Key << key << YAML::Value << YAML::BeginMap;
    for (std::size_t p = 0; p < 2; ++p) {
      const GemmModel& g = models[p];
      emit_pass(out, kPassNames[p],
                {{"efficiency", g.efficiency}, {"tile_m", g.tile_m}, {"tile_n", g.tile_n}, {"k_half", g.k_half},
                 {"launch_s", g.launch_s}});
    }
    out << YAML::EndMap;
  };
  emit_gemm("gemm", cal.gemm);
  if (cal.gemm_fp8_fitted) emit_gemm("gemm_fp8", cal.gemm_fp8);
  out << YAML::Key << "attention" << YAML::Value << YAML::BeginMap;
  for (std::size_t p = 0; p < 2; ++p) {
    const AttentionModel& a = cal.attention[p];
    emit_pass(out, kPassNames[p],
              {{"efficiency", a.efficiency}, {"head_dim_half", a.head_dim_half}, {"launch_s", a.launch_s},
               {"causal_efficiency", a.causal_efficiency}});
  }
  out << YAML::EndMap;
  for (std::size_t k = 0; k < kStreamKindCount; ++k) {
    if (!cal.stream_fitted[k]) continue;
    out << YAML::Key << kStreamKindNames[k] << YAML::Value << YAML::BeginMap;
    for (std::size_t p = 0; p < 2; ++p) {
      const StreamModel& m = cal.stream[k][p];
      emit_pass(out, kPassNames[p], {{"bandwidth_fraction", m.bandwidth_fraction}, {"launch_s", m.launch_s}});
    }
    out << YAML::EndMap;
  }
  for (const auto& [key, values] : {std::pair{"isolated_call_s", cal.isolated_call_s},
                                   std::pair{"residual_glue_bytes", cal.residual_glue_bytes}}) {
    out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "fwd" << YAML::Value << values[kFwd];
    out << YAML::Key << "bwd" << YAML::Value << values[kBwd];
    out << YAML::EndMap;
  }
  if (cal.allocator_reserve > 0) out << YAML::Key << "allocator_reserve" << YAML::Value << cal.allocator_reserve;
  out << YAML::EndMap;
  if (!out.good()) throw InputError(file.string() + ": cannot write kernel calibration: " + out.GetLastError());

  write_text_atomically(file.string(), std::string(out.c_str()) + "\n");
}

namespace {

Calibration read_calibration(const std::filesystem::path& file) {
  const YAML::Node root = load_yaml_file(file);
  const Reader r(file.string());
  std::vector<const char*> top = {"format",    "version",         "source",
                                  "sm_count",  "gemm",            "gemm_fp8",        "attention",
                                  "isolated_call_s", "residual_glue_bytes", "allocator_reserve"};
  for (const char* k : kStreamKindNames) top.push_back(k);
  if (!root.IsMap()) throw InputError(r.file() + ": expected a mapping");
  for (const auto& kv : root) {
    const std::string k = yaml_scalar(kv.first, r.file() + ": a key", "a plain name");
    bool ok = false;
    for (const char* a : top) ok = ok || k == a;
    if (!ok) throw InputError(r.file() + ": unknown key '" + k + "'");
  }
  if (!root["format"] || root["format"].Scalar() != kFormatName) {
    throw InputError(r.file() + ": format must be '" + std::string(kFormatName) + "'");
  }
  const std::string version = root["version"] ? root["version"].Scalar() : "";
  if (version != "1" && version != std::to_string(kFormatVersion)) {
    throw InputError(r.file() + ": version must be 1 or " + std::to_string(kFormatVersion));
  }
  Calibration cal;
  cal.file = file.string();
  if (root["source"]) cal.source = root["source"].Scalar();
  if (!root["sm_count"]) throw InputError(r.file() + ": missing key 'sm_count'");
  const double sms = r.number(root, {"sm_count", 1, false, 1e6}, "");
  if (sms != std::floor(sms)) throw InputError(r.file() + ": sm_count must be an integer");
  cal.sm_count = static_cast<std::int64_t>(sms);
  for (const char* group : {"gemm", "attention", "isolated_call_s", "residual_glue_bytes"}) {
    if (!root[group]) throw InputError(r.file() + ": missing key '" + group + "'");
  }
  r.keys(root["gemm"], {"fwd", "bwd"}, "gemm");
  r.keys(root["attention"], {"fwd", "bwd"}, "attention");
  r.keys(root["isolated_call_s"], {"fwd", "bwd"}, "isolated_call_s");
  r.keys(root["residual_glue_bytes"], {"fwd", "bwd"}, "residual_glue_bytes");
  if (root["gemm_fp8"]) {
    r.keys(root["gemm_fp8"], {"fwd", "bwd"}, "gemm_fp8");
    cal.gemm_fp8_fitted = true;
  }
  for (std::size_t p = 0; p < 2; ++p) {
    for (const bool fp8 : {false, true}) {
      if (fp8 && !cal.gemm_fp8_fitted) continue;
      const char* group = fp8 ? "gemm_fp8" : "gemm";
      const std::string at = std::string(group) + "." + kPassNames[p];
      const YAML::Node g = root[group][kPassNames[p]];
      r.keys(g, {"efficiency", "tile_m", "tile_n", "k_half", "launch_s"}, at);
      (fp8 ? cal.gemm_fp8 : cal.gemm)[p] = {r.number(g, kEfficiency, at), r.number(g, kTileM, at),
                                            r.number(g, kTileN, at), r.number(g, kKHalf, at), r.number(g, kLaunch, at)};
    }
    const std::string at_a = std::string("attention.") + kPassNames[p];
    const YAML::Node a = root["attention"][kPassNames[p]];
    const bool causal = a.IsMap() && a["causal_efficiency"];
    if (causal) {
      r.keys(a, {"efficiency", "head_dim_half", "launch_s", "causal_efficiency"}, at_a);
    } else {
      r.keys(a, {"efficiency", "head_dim_half", "launch_s"}, at_a);
    }
    cal.attention[p] = {r.number(a, kEfficiency, at_a), r.number(a, kHeadDimHalf, at_a), r.number(a, kLaunch, at_a),
                        causal ? r.number(a, kCausalEfficiency, at_a) : 1.0};
    cal.isolated_call_s[p] = r.number(root["isolated_call_s"], {kPassNames[p], 0, false, 1}, "isolated_call_s");
    cal.residual_glue_bytes[p] =
        r.number(root["residual_glue_bytes"], {kPassNames[p], 0, false, 1e6}, "residual_glue_bytes");
  }
  if (root["allocator_reserve"]) cal.allocator_reserve = r.number(root, {"allocator_reserve", 0, false, 1}, "");
  for (std::size_t k = 0; k < kStreamKindCount; ++k) {
    if (!root[kStreamKindNames[k]]) {
      if (k < kLayerStreamKinds) throw InputError(r.file() + ": missing key '" + kStreamKindNames[k] + "'");
      cal.stream_fitted[k] = false;
      continue;
    }
    cal.stream_fitted[k] = true;
    r.keys(root[kStreamKindNames[k]], {"fwd", "bwd"}, kStreamKindNames[k]);
    for (std::size_t p = 0; p < 2; ++p) {
      const std::string at = std::string(kStreamKindNames[k]) + "." + kPassNames[p];
      const YAML::Node m = root[kStreamKindNames[k]][kPassNames[p]];
      r.keys(m, {"bandwidth_fraction", "launch_s"}, at);
      cal.stream[k][p] = {r.number(m, kBandwidthFraction, at), r.number(m, kLaunch, at)};
    }
  }
  return cal;
}

}  // namespace

Calibration load_calibration(const std::filesystem::path& file) {
  return with_yaml_errors(file.string(), [&] { return read_calibration(file); });
}

}  // namespace perfsweep::kernels
