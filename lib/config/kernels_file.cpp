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
// Version 3 has a GEMM model per data type and GEMM pass (`gemm: {bf16: {fprop, dgrad, wgrad},
// fp8: ...}`), the attention's tile scheduling (`tail`, `tile`), the quantization kernels' stream
// kinds, `host_call_s` and `sustained_tensor_fraction`. Version 2 added the training step's kernels (the
// stream kinds after `norm`, each optional) and the attention's optional causal_efficiency.
// Versions 1 and 2 still load: their `gemm` (and `gemm_fp8`) {fwd, bwd} is fprop and, for both
// backward GEMMs, bwd with half of its launch each, so they give the same times.
constexpr int kFormatVersion = 3;
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
constexpr Field kTail{"tail", 0, false, 100};
constexpr Field kTile{"tile", 0, false, 65536};
constexpr Field kSplitEfficiency{"split_efficiency", kMinFraction, false, 1};

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
  out << YAML::Key << "gemm" << YAML::Value << YAML::BeginMap;
  for (std::size_t t = 0; t < kGemmTypeCount; ++t) {
    if (!cal.gemm_fitted[t]) continue;
    out << YAML::Key << kGemmTypeNames[t] << YAML::Value << YAML::BeginMap;
    for (std::size_t p = 0; p < kGemmPassCount; ++p) {
      const GemmModel& g = cal.gemm[t][p];
      emit_pass(out, kGemmPassNames[p],
                {{"efficiency", g.efficiency}, {"tile_m", g.tile_m}, {"tile_n", g.tile_n}, {"k_half", g.k_half},
                 {"launch_s", g.launch_s}});
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  out << YAML::Key << "attention" << YAML::Value << YAML::BeginMap;
  for (std::size_t p = 0; p < 2; ++p) {
    const AttentionModel& a = cal.attention[p];
    emit_pass(out, kPassNames[p],
              {{"efficiency", a.efficiency}, {"head_dim_half", a.head_dim_half}, {"launch_s", a.launch_s},
               {"causal_efficiency", a.causal_efficiency}, {"tail", a.tail}, {"tile", a.tile},
               {"split_efficiency", a.split_efficiency}});
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
  out << YAML::Key << "sustained_tensor_fraction" << YAML::Value << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "fwd" << YAML::Value << cal.sustained_tensor_fraction[kFwd];
  out << YAML::Key << "bwd" << YAML::Value << cal.sustained_tensor_fraction[kBwd];
  out << YAML::EndMap;
  for (const auto& [key, values] : {std::pair{"isolated_call_s", cal.isolated_call_s},
                                   std::pair{"residual_glue_bytes", cal.residual_glue_bytes}}) {
    out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "fwd" << YAML::Value << values[kFwd];
    out << YAML::Key << "bwd" << YAML::Value << values[kBwd];
    out << YAML::EndMap;
  }
  out << YAML::Key << "host_call_s" << YAML::Value << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "fwd" << YAML::Value << cal.host_call_s[kFwd];
  out << YAML::Key << "bwd" << YAML::Value << cal.host_call_s[kBwd];
  out << YAML::Key << "compiled" << YAML::Value << cal.host_compiled_call_s;
  out << YAML::EndMap;
  if (cal.allocator_reserve > 0) out << YAML::Key << "allocator_reserve" << YAML::Value << cal.allocator_reserve;
  out << YAML::EndMap;
  if (!out.good()) throw InputError(file.string() + ": cannot write kernel calibration: " + out.GetLastError());

  write_text_atomically(file.string(), std::string(out.c_str()) + "\n");
}

namespace {

// A GEMM pass's parameters at `at`.
GemmModel read_gemm(const Reader& r, const YAML::Node& g, const std::string& at) {
  r.keys(g, {"efficiency", "tile_m", "tile_n", "k_half", "launch_s"}, at);
  return {r.number(g, kEfficiency, at), r.number(g, kTileM, at), r.number(g, kTileN, at), r.number(g, kKHalf, at),
          r.number(g, kLaunch, at)};
}

Calibration read_calibration(const std::filesystem::path& file) {
  const YAML::Node root = load_yaml_file(file);
  const Reader r(file.string());
  if (!root.IsMap()) throw InputError(r.file() + ": expected a mapping");
  const std::string version = root["version"] && root["version"].IsScalar() ? root["version"].Scalar() : "";
  if (version != "1" && version != "2" && version != std::to_string(kFormatVersion)) {
    throw InputError(r.file() + ": version must be 1, 2 or " + std::to_string(kFormatVersion));
  }
  const bool v3 = version == std::to_string(kFormatVersion);
  std::vector<const char*> top = {"format", "version", "source", "sm_count", "gemm", "attention",
                                  "isolated_call_s", "residual_glue_bytes", "allocator_reserve"};
  if (v3) {
    top.insert(top.end(), {"host_call_s", "sustained_tensor_fraction"});
  } else {
    top.push_back("gemm_fp8");
  }
  for (std::size_t k = 0; k < (v3 ? kStreamKindCount : std::size_t{10}); ++k) top.push_back(kStreamKindNames[k]);
  for (const auto& kv : root) {
    const std::string k = yaml_scalar(kv.first, r.file() + ": a key", "a plain name");
    bool ok = false;
    for (const char* a : top) ok = ok || k == a;
    if (!ok) throw InputError(r.file() + ": unknown key '" + k + "'");
  }
  if (!root["format"] || root["format"].Scalar() != kFormatName) {
    throw InputError(r.file() + ": format must be '" + std::string(kFormatName) + "'");
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
  r.keys(root["attention"], {"fwd", "bwd"}, "attention");
  r.keys(root["isolated_call_s"], {"fwd", "bwd"}, "isolated_call_s");
  r.keys(root["residual_glue_bytes"], {"fwd", "bwd"}, "residual_glue_bytes");
  if (v3) {
    const YAML::Node gemm = root["gemm"];
    if (!gemm.IsMap() || !gemm["bf16"]) throw InputError(r.file() + ": gemm: missing key 'bf16'");
    for (const auto& kv : gemm) {
      const std::string k = yaml_scalar(kv.first, r.file() + ": gemm: a key", "a plain name");
      if (k != kGemmTypeNames[0] && k != kGemmTypeNames[1]) throw InputError(r.file() + ": gemm: unknown key '" + k + "'");
    }
    for (std::size_t t = 0; t < kGemmTypeCount; ++t) {
      cal.gemm_fitted[t] = static_cast<bool>(gemm[kGemmTypeNames[t]]);
      if (!cal.gemm_fitted[t]) continue;
      const std::string at = std::string("gemm.") + kGemmTypeNames[t];
      r.keys(gemm[kGemmTypeNames[t]], {"fprop", "dgrad", "wgrad"}, at);
      for (std::size_t p = 0; p < kGemmPassCount; ++p) {
        cal.gemm[t][p] = read_gemm(r, gemm[kGemmTypeNames[t]][kGemmPassNames[p]], at + "." + kGemmPassNames[p]);
      }
    }
    if (!root["sustained_tensor_fraction"]) throw InputError(r.file() + ": missing key 'sustained_tensor_fraction'");
    r.keys(root["sustained_tensor_fraction"], {"fwd", "bwd"}, "sustained_tensor_fraction");
    for (std::size_t p = 0; p < 2; ++p) {
      cal.sustained_tensor_fraction[p] =
          r.number(root["sustained_tensor_fraction"], {kPassNames[p], kMinFraction, false, 1}, "sustained_tensor_fraction");
    }
    if (!root["host_call_s"]) throw InputError(r.file() + ": missing key 'host_call_s'");
    r.keys(root["host_call_s"], {"fwd", "bwd", "compiled"}, "host_call_s");
    for (std::size_t p = 0; p < 2; ++p) {
      cal.host_call_s[p] = r.number(root["host_call_s"], {kPassNames[p], 0, false, 1}, "host_call_s");
    }
    cal.host_compiled_call_s = r.number(root["host_call_s"], {"compiled", 0, false, 1}, "host_call_s");
  } else {
    // {fwd, bwd}: fprop, and both backward GEMMs with half of the backward's launch each.
    for (const bool fp8 : {false, true}) {
      const char* group = fp8 ? "gemm_fp8" : "gemm";
      if (!root[group]) continue;
      r.keys(root[group], {"fwd", "bwd"}, group);
      const std::size_t t = fp8 ? 1 : 0;
      cal.gemm_fitted[t] = true;
      const GemmModel fwd = read_gemm(r, root[group]["fwd"], std::string(group) + ".fwd");
      GemmModel bwd = read_gemm(r, root[group]["bwd"], std::string(group) + ".bwd");
      bwd.launch_s /= 2;
      cal.gemm[t] = {fwd, bwd, bwd};
    }
  }
  for (std::size_t p = 0; p < 2; ++p) {
    const std::string at_a = std::string("attention.") + kPassNames[p];
    const YAML::Node a = root["attention"][kPassNames[p]];
    const bool causal = a.IsMap() && a["causal_efficiency"];
    if (v3) {
      r.keys(a, {"efficiency", "head_dim_half", "launch_s", "causal_efficiency", "tail", "tile", "split_efficiency"},
             at_a);
    } else if (causal) {
      r.keys(a, {"efficiency", "head_dim_half", "launch_s", "causal_efficiency"}, at_a);
    } else {
      r.keys(a, {"efficiency", "head_dim_half", "launch_s"}, at_a);
    }
    cal.attention[p] = {r.number(a, kEfficiency, at_a), r.number(a, kHeadDimHalf, at_a), r.number(a, kLaunch, at_a),
                        causal ? r.number(a, kCausalEfficiency, at_a) : 1.0, v3 ? r.number(a, kTail, at_a) : 0.0,
                        v3 ? r.number(a, kTile, at_a) : 0.0, v3 ? r.number(a, kSplitEfficiency, at_a) : 1.0};
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
