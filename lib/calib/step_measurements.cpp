#include "calib/step_measurements.hpp"

#include <cmath>
#include <set>

#include "calib/measurement_entry.hpp"
#include "config/yaml_file.hpp"
#include "core/error.hpp"

namespace perfsweep::calib {

namespace {

// A kernel's shape fields (rows, columns, elements): up to 2^40, so that a product of two stays
// exact in double and within int64.
constexpr std::int64_t kMaxKernelDim = std::int64_t{1} << 40;

// The shape fields of each kernel kind, and whether it has a backward pass.
struct KindFields {
  const char* kind;
  std::initializer_list<const char*> fields;
  bool backward;
};
const KindFields kKinds[] = {
    {"rmsnorm", {"n", "e"}, true},
    {"swiglu_gate", {"n", "f"}, true},
    {"gemm", {"n", "k", "m"}, true},
    {"attention", {"b", "h", "kv", "l", "d"}, true},
    {"embedding", {"V", "e", "n"}, true},
    {"lm_head_loss", {"V", "e", "n"}, true},
    {"adamw", {"N", "chunk"}, false},
    {"cast", {"N"}, false},
    {"fp8_gemm", {"n", "k", "m"}, false},
    {"fp8_linear", {"n", "k", "m"}, true},
    {"fp8_cast", {"rows", "cols"}, false},
    {"grouped_gemm", {"experts", "tokens", "k", "m"}, false},
};

std::int64_t* field_of(KernelMeasurement& k, const std::string& name) {
  if (name == "n") return &k.n;
  if (name == "e") return &k.e;
  if (name == "f") return &k.f;
  if (name == "k") return &k.k;
  if (name == "m") return &k.m;
  if (name == "b") return &k.b;
  if (name == "h") return &k.h;
  if (name == "kv") return &k.kv;
  if (name == "l") return &k.l;
  if (name == "d") return &k.d;
  if (name == "V") return &k.vocab;
  if (name == "N") return &k.elements;
  if (name == "rows") return &k.rows;
  if (name == "cols") return &k.cols;
  if (name == "experts") return &k.experts;
  if (name == "tokens") return &k.tokens;
  return &k.chunk;
}

// The list under `key` of a measurement file, each entry a mapping with a `cfg` mapping holding
// a unique id; `read` reads one entry.
template <typename T, typename F>
std::vector<T> read_entries(const std::filesystem::path& file, const char* key, F&& read) {
  const std::string f = file.string();
  const YAML::Node root = load_yaml_file(file);
  if (!root.IsMap() || !root[key]) throw InputError(f + ": expected a mapping with '" + key + "'");
  const YAML::Node list = root[key];
  if (!list.IsSequence() || list.size() == 0) throw InputError(f + ": " + key + " must be a non-empty list");
  std::vector<T> out;
  std::set<std::string> ids;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YAML::Node entry = list[i];
    Entry at{f, std::string(key) + "[" + std::to_string(i) + "]"};
    if (!entry.IsMap()) at.fail("entry", "must be a mapping");
    const YAML::Node cfg = entry["cfg"];
    if (!cfg || !cfg.IsMap()) at.fail("cfg", "is missing or not a mapping");
    if (!cfg["id"] || !cfg["id"].IsScalar() || cfg["id"].Scalar().empty()) at.fail("cfg.id", "is missing");
    const std::string id = cfg["id"].Scalar();
    at.name += " (" + id + ")";
    if (!ids.insert(id).second) at.fail("cfg.id", "repeats an earlier entry's id");
    const YAML::Node result = entry["result"];
    if (!result || !result.IsMap()) at.fail("result", "is missing or not a mapping");
    out.push_back(read(at, id, cfg, result));
  }
  return out;
}

double gigabytes(const Entry& at, const YAML::Node& result, const char* key) {
  const double v = number_or_nan(result[key]);
  if (!std::isfinite(v) || !(v > 0)) {
    at.fail(std::string("result.") + key, "must be a positive number of GB, got " + shown(result[key]));
  }
  return v;
}

}  // namespace

std::vector<KernelMeasurement> read_kernel_measurements(const std::filesystem::path& file) {
  return read_entries<KernelMeasurement>(
      file, "kernels", [](const Entry& at, const std::string& id, const YAML::Node& cfg, const YAML::Node& result) {
        KernelMeasurement k;
        k.id = id;
        if (!cfg["kind"] || !cfg["kind"].IsScalar()) at.fail("cfg.kind", "is missing");
        k.kind = cfg["kind"].Scalar();
        const KindFields* kind = nullptr;
        std::string kinds;
        for (const KindFields& x : kKinds) {
          if (k.kind == x.kind) kind = &x;
          kinds += std::string(kinds.empty() ? "" : ", ") + x.kind;
        }
        if (kind == nullptr) at.fail("cfg.kind", "must be one of " + kinds + ", got '" + k.kind + "'");
        for (const char* name : kind->fields) *field_of(k, name) = positive_integer(at, cfg, name, kMaxKernelDim);
        if (k.kind == "attention") {
          k.causal = flag_or(at, cfg, "causal", false);
          if (k.h % k.kv != 0) at.fail("cfg.kv", "must divide h");
          k.lk = count_or(at, cfg, "lk", 0, kMaxKernelDim);
          if (cfg["lk"] && k.lk == 0) at.fail("cfg.lk", "must be a positive integer, got 0");
          k.dv = count_or(at, cfg, "dv", 0, kMaxKernelDim);
          if (cfg["dv"] && k.dv == 0) at.fail("cfg.dv", "must be a positive integer, got 0");
          k.window = count_or(at, cfg, "window", 0, kMaxKernelDim);
          if (cfg["window"] && k.window == 0) at.fail("cfg.window", "must be a positive integer, got 0");
          if (k.window > 0 && !k.causal) at.fail("cfg.window", "is a causal sliding window: it needs causal: true");
        }
        if (k.kind == "grouped_gemm") {
          k.fp8 = choice_or(at, cfg, "dtype", {"bf16", "fp8"}, "bf16") == std::string("fp8");
        }
        if (k.kind == "fp8_linear") {
          k.model = cfg["model"] && cfg["model"].IsScalar() ? cfg["model"].Scalar() : "";
          k.layer = cfg["layer"] && cfg["layer"].IsScalar() ? cfg["layer"].Scalar() : "";
          k.tp = count_or(at, cfg, "tp", 0);
        }
        // A time pair [forward_s, backward_s] at `key`.
        const auto pair = [&](const char* key, bool required) {
          const YAML::Node t = result[key];
          std::array<double, 2> v{};
          if (!t && !required) return v;
          if (!t || !t.IsSequence() || t.size() != 2) {
            at.fail(std::string("result.") + key, "must be [forward_s, backward_s], got " + shown(t));
          }
          v = {seconds(at, t[0], std::string("result.") + key + "[0]"),
               seconds(at, t[1], std::string("result.") + key + "[1]", !kind->backward)};
          return v;
        };
        if (k.kind == "fp8_cast") {
          // Each operation [in-stream, isolated]; an operation the run could not time is absent
          // (or reported as `<name>_error`).
          bool any = false;
          for (const auto& kv : result) {
            const std::string op = kv.first.IsScalar() ? kv.first.Scalar() : "";
            if (op.size() > 6 && op.compare(op.size() - 6, 6, "_error") == 0) continue;
            std::size_t i = 0;
            while (i < kCastOpCount && op != kCastOpNames[i]) ++i;
            if (i == kCastOpCount) {
              std::string names;
              for (const char* n : kCastOpNames) names += std::string(names.empty() ? "" : ", ") + n;
              at.fail("result." + op, "is not an fp8_cast operation (" + names + ")");
            }
            const YAML::Node v = kv.second;
            if (!v.IsSequence() || v.size() != 2) {
              at.fail("result." + op, "must be [in_stream_s, isolated_s], got " + shown(v));
            }
            k.cast_s[i] = {seconds(at, v[0], "result." + op + "[0]"), seconds(at, v[1], "result." + op + "[1]")};
            k.has_cast_op[i] = true;
            any = true;
          }
          if (!any) at.fail("result", "has no fp8_cast operation");
          k.in_stream = true;
          return k;
        }
        k.t = pair("t", true);
        // t in-stream: where the entry also has t_iso, or says so (times published as kernel
        // durations over calls back to back, without isolated ones)
        const YAML::Node stream = result["in_stream"];
        if (stream && (!stream.IsScalar() || (stream.Scalar() != "true" && stream.Scalar() != "false"))) {
          at.fail("result.in_stream", "must be true or false, got " + shown(stream));
        }
        k.in_stream = static_cast<bool>(result["t_iso"]) || (stream && stream.Scalar() == "true");
        k.t_iso = pair("t_iso", false);
        if (k.kind == "fp8_linear") {
          // Each GEMM in-stream, in FP8 and in bf16; t = [fprop, dgrad + wgrad] in FP8.
          for (const char* type : {"bf16", "fp8"}) {
            const YAML::Node g = result[type];
            if (!g || !g.IsMap()) at.fail(std::string("result.") + type, "must map fwd, dgrad and wgrad to seconds, got " + shown(g));
            const std::size_t ti = std::string(type) == "fp8" ? 1 : 0;
            const char* keys[] = {"fwd", "dgrad", "wgrad"};
            for (std::size_t p = 0; p < 3; ++p) {
              k.gemm_s[ti][p] = seconds(at, g[keys[p]], std::string("result.") + type + "." + keys[p]);
            }
          }
        }
        if (k.kind == "lm_head_loss" && result["peak_extra_bytes"]) {
          const double v = number_or_nan(result["peak_extra_bytes"]);
          if (!std::isfinite(v) || !(v > 0)) {
            at.fail("result.peak_extra_bytes", "must be a positive number, got " + shown(result["peak_extra_bytes"]));
          }
          k.peak_extra_bytes = v;
        }
        return k;
      });
}

std::vector<TrainRun> read_train_measurements(const std::filesystem::path& file) {
  return read_entries<TrainRun>(
      file, "runs", [](const Entry& at, const std::string& id, const YAML::Node& cfg, const YAML::Node& result) {
        TrainRun r;
        r.id = id;
        Transformer& m = r.model;
        m.name = id;
        m.vocab_size = count_or(at, cfg, "V", 0);
        m.e = positive_integer(at, cfg, "e");
        m.h = positive_integer(at, cfg, "h");
        m.kv_heads = cfg["kv"] ? positive_integer(at, cfg, "kv") : 0;
        m.f = positive_integer(at, cfg, "f");
        m.depth = positive_integer(at, cfg, "depth");
        m.l = positive_integer(at, cfg, "l");
        r.b = positive_integer(at, cfg, "b");
        r.micro_batches = cfg["m"] ? positive_integer(at, cfg, "m") : 1;
        m.mlp = choice_or(at, cfg, "mlp", {"gelu", "swiglu"}, "gelu") == std::string("swiglu") ? MlpKind::SwiGlu
                                                                                              : MlpKind::Gelu;
        m.norm = choice_or(at, cfg, "norm", {"layernorm", "rms"}, "layernorm") == std::string("rms")
                     ? NormKind::RmsNorm
                     : NormKind::LayerNorm;
        m.bias = flag_or(at, cfg, "bias", true);
        m.causal = flag_or(at, cfg, "causal", true);
        r.full_recompute = choice_or(at, cfg, "recompute", {"none", "full"}, "none") == std::string("full");
        if (cfg["dropout"]) {
          const double p = number_or_nan(cfg["dropout"]);
          if (!(p >= 0 && p < 1)) at.fail("cfg.dropout", "must be a probability in [0, 1), got " + shown(cfg["dropout"]));
          m.dropout = p;
        } else {
          m.dropout = 0;
        }
        m.logits_dtype = LogitsDtype::Fp32;
        if (m.e % m.h != 0) at.fail("cfg.h", "must divide e");
        if (m.h % m.kv() != 0) at.fail("cfg.kv", "must divide h");
        check_model(at, m);
        r.params = count_or(at, result, "params", 0, std::int64_t{1} << 53);  // exact in double
        const YAML::Node oom = result["oom"];
        if (!oom || !oom.IsScalar() || (oom.Scalar() != "true" && oom.Scalar() != "false")) {
          at.fail("result.oom", "must be true or false, got " + shown(oom));
        }
        r.oom = oom.Scalar() == "true";
        r.peak_allocated_gb = gigabytes(at, result, "peak_allocated_GB");
        if (!r.oom) {
          r.step_s = seconds(at, result["step_s"], "result.step_s");
          r.peak_reserved_gb = gigabytes(at, result, "peak_reserved_GB");
        }
        return r;
      });
}

}  // namespace perfsweep::calib
