#include "calib/step_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include "core/error.hpp"
#include "model/precision.hpp"
#include "model/roofline.hpp"

namespace perfsweep::calib {

namespace {
using kernels::GemmPass;
using kernels::GemmType;
using kernels::kBwd;
using kernels::kFwd;
using kernels::StreamKind;
constexpr double kGB = 1e-9;
constexpr std::size_t kFp8 = static_cast<std::size_t>(GemmType::Fp8);
constexpr std::size_t kBf16 = static_cast<std::size_t>(GemmType::Bf16);

// Who issues a measured call: an eager PyTorch operator (forward), torch.autograd.grad
// (backward), a torch.compile'd function.
enum class Host : std::uint8_t { Eager, Autograd, Compiled };

double host_seconds(const kernels::Calibration* cal, Host h) {
  if (cal == nullptr) return 0;
  switch (h) {
    case Host::Eager: return cal->host_call_s[kFwd];
    case Host::Autograd: return cal->host_call_s[kBwd];
    case Host::Compiled: return cal->host_compiled_call_s;
  }
  return 0;
}

// One measured quantity of an entry: what one measured call runs on the GPU and the host calls
// it takes, with its in-stream and isolated measurements (0 where not measured).
struct Item {
  std::string layer;
  std::string pass;
  double gpu_s = 0;
  Host host = Host::Eager;
  double host_calls = 1;      // host calls per measured call (an operator each)
  std::size_t iso_pass = kFwd;  // the isolated_call_s a call timed alone pays
  double isolated_calls = 1;  // calls timed alone that the isolated time sums
  double stream_s = 0, isolated_s = 0;
  bool tensor = false;        // a tensor-core kernel (GEMM, flash attention)
  std::size_t step_pass = kFwd;  // the pass of a step its kernels belong to
};

// A GEMM on one GPU: (n x k)(k x m), nothing split.
LayerCost one_gpu_gemm(const System& s, const char* name, std::int64_t n, std::int64_t k, std::int64_t m) {
  return gemm(s, name, {n, k, m, k, m}, {});
}

// A tensor-core kernel (GEMM, flash attention): the sustained fraction applies, the stream
// kinds' fits skip it.
bool tensor_kind(const KernelMeasurement& k) {
  return k.kind == "fp8_linear" || k.kind == "fp8_gemm" || k.kind == "gemm" || k.kind == "attention" ||
         k.kind == "grouped_gemm";
}

// The experts' GEMM of a grouped_gemm entry as a training step's MoE layer costs it (block.cpp:
// shard_expert): one grouped GEMM of `experts` (tokens x k)(k x m) products; in FP8 as an
// expert's FP8 GEMM (to_fp8: operands read in one byte, the output in bf16), its operands
// quantized before the measured call (no quantization kernels of its own).
LayerCost grouped_gemm_cost(const System& s, const KernelMeasurement& k) {
  LayerCost c = grouped_experts(one_gpu_gemm(s, "grouped_gemm", k.tokens, k.k, k.m), k.experts);
  if (k.fp8) {
    const BlockLayer expert{.name = "grouped_gemm", .sublayer = Sublayer::Mlp, .role = Role::ColumnProjection,
                            .operand = Operand::Routed};
    to_fp8(s, expert, Fp8Policy{.recipe = Fp8Recipe::Current}, c);
    c.quant = {};
  }
  return c;
}

// The layer costs of a measured kernel (lm_head_loss: the GEMM, then the loss).
std::vector<LayerCost> kernel_costs(const System& s, const KernelMeasurement& k) {
  if (k.kind == "rmsnorm") return {layer_norm(s, "rmsnorm", {k.n, k.e, k.n, k.e}, {}, {NormKind::RmsNorm, false})};
  if (k.kind == "swiglu_gate") return {gated_activation(s, "swiglu_gate", k.n * k.f)};
  if (k.kind == "gemm") return {one_gpu_gemm(s, "gemm", k.n, k.k, k.m)};
  if (k.kind == "attention") {
    const std::int64_t kv = k.kv > 0 ? k.kv : k.h;  // 0: as many as query heads
    const std::int64_t keys = k.lk > 0 ? k.lk : k.l;
    return {attention_core(s, "attention", {k.b, k.h, kv, k.d, k.l, keys, k.dv}, {},
                           {.causal = k.causal, .dropout = false, .window = k.window})};
  }
  if (k.kind == "grouped_gemm") return {grouped_gemm_cost(s, k)};
  if (k.kind == "embedding") return {embedding(s, "embedding", k.n, k.e, k.vocab, {}, 0)};
  if (k.kind == "lm_head_loss") {
    return {one_gpu_gemm(s, "lm_head", k.n, k.e, k.vocab),
            cross_entropy(s, "loss", k.n, k.vocab, {}, LogitsDtype::Fp32)};
  }
  return {};
}

// Seconds of one GEMM pass on the GPU of a linear layer (n x k)(k x m) in `type`: the
// calibration's model for the pass (launch plus the larger of arithmetic and HBM traffic), or
// the roofline's GEMM class (the backward's two GEMMs share its time).
double gemm_gpu_seconds(const System& s, GemmType type, GemmPass pass, std::int64_t n, std::int64_t k,
                        std::int64_t m) {
  const Precision precision = type == GemmType::Bf16 ? Precision::Bf16 : Precision::Fp8;
  const kernels::GemmDims d = kernels::gemm_dims(pass, n, k, m);
  const double in_bytes = type == GemmType::Bf16 ? 2 : 1;
  const double gb = (static_cast<double>(d.rows) * static_cast<double>(d.depth) +
                     static_cast<double>(d.depth) * static_cast<double>(d.cols)) * in_bytes * kGB +
                    static_cast<double>(d.rows) * static_cast<double>(d.cols) * 2 * kGB;
  const kernels::Calibration* cal = s.kernel_calibration.get();
  if (cal != nullptr) {
    const kernels::GemmModel& g = cal->gemm_of(type)[static_cast<std::size_t>(pass)];
    const double compute = kernels::gemm_compute_seconds(*cal, g, tensor_peak(s, precision), s.flops_units, 1, d.rows,
                                                         d.depth, d.cols);
    return g.launch_s + std::max(compute, gb / s.hbm_bandwidth);
  }
  const double flops = 2.0 * static_cast<double>(d.rows) * static_cast<double>(d.depth) * static_cast<double>(d.cols);
  return std::max(compute_seconds(s, KernelClass::Gemm, flops * s.flops_units, precision),
                  memory_seconds(s, KernelClass::Gemm, gb));
}

// Seconds of a memory-bound kernel of `kind` moving `gb`: the calibration's curve (launch
// included), or the roofline's memory time of the kernel class (the optimizer's or elementwise).
double stream_gpu_seconds(const System& s, StreamKind kind, double gb) {
  return stream_seconds(s, kind, kind == StreamKind::Optimizer ? KernelClass::Optimizer : KernelClass::Elementwise, gb);
}

// The kernels of each fp8_cast operation (measure_fp8.py), bytes per element of the bf16 tensor:
// the reductions and casts as their stream kinds; abs and the scale's multiply, plain elementwise
// kernels, on the plain cast's curve (x * s of a bf16 tensor by an fp32 scale writes fp32).
struct CastPart {
  StreamKind kind;
  double bytes;
};
struct CastOpKernels {
  std::array<CastPart, 2> parts;
  std::size_t count;
  Host host;
  double host_calls;
};
constexpr std::array<CastOpKernels, kCastOpCount> kCastOpKernels{{
    {{{{StreamKind::Amax, 2}, {}}}, 1, Host::Eager, 1},                                           // amax
    {{{{StreamKind::Quantize, 4}, {StreamKind::Amax, 2}}}, 2, Host::Eager, 2},                    // amax_unfused
    {{{{StreamKind::Quantize, 6}, {StreamKind::Quantize, 5}}}, 2, Host::Eager, 2},                // cast_scaled
    {{{{StreamKind::Quantize, 3}, {}}}, 1, Host::Eager, 1},                                       // cast_plain
    {{{{StreamKind::Transpose, 2}, {}}}, 1, Host::Eager, 1},                                      // transpose_fp8
    {{{{StreamKind::Quantize, 8}, {StreamKind::Quantize, 5}}}, 2, Host::Eager, 2},                // cast_from_fp32
    {{{{StreamKind::Amax, 2}, {StreamKind::CastTranspose, 4}}}, 2, Host::Compiled, 1},            // fused
}};

double cast_op_seconds(const System& s, std::size_t op, double elements) {
  double t = 0;
  const CastOpKernels& k = kCastOpKernels[op];
  for (std::size_t i = 0; i < k.count; ++i) t += stream_gpu_seconds(s, k.parts[i].kind, k.parts[i].bytes * elements * kGB);
  return t;
}

// GB a forward-only streaming kernel moves.
double stream_gigabytes(const KernelMeasurement& k) {
  if (k.kind == "adamw") return kernels::kAdamwBytesPerParameter * static_cast<double>(k.elements) * kGB;
  return kernels::kCastBytesPerElement * static_cast<double>(k.elements) * kGB;
}

StreamKind stream_of(const KernelMeasurement& k) {
  if (k.kind == "rmsnorm") return StreamKind::RmsNorm;
  if (k.kind == "swiglu_gate") return StreamKind::GatedActivation;
  if (k.kind == "embedding") return StreamKind::Embedding;
  if (k.kind == "lm_head_loss") return StreamKind::CrossEntropy;
  if (k.kind == "adamw") return StreamKind::Optimizer;
  return StreamKind::Cast;
}

bool forward_only(const KernelMeasurement& k) { return k.kind == "adamw" || k.kind == "cast"; }

// The measured quantities of an entry, predicted on `s`.
std::vector<Item> items_of(const System& s, const KernelMeasurement& k) {
  std::vector<Item> out;
  const auto add = [&](std::string layer, std::string pass, double gpu, Host host, double host_calls,
                       std::size_t iso_pass, double iso_calls, double stream_s, double isolated_s) {
    const bool tensor = tensor_kind(k);
    const std::size_t step_pass = pass == "fwd" ? kFwd : kBwd;
    out.push_back({std::move(layer), std::move(pass), gpu, host, host_calls, iso_pass, iso_calls, stream_s, isolated_s,
                   tensor, step_pass});
  };
  // A pair [fwd, bwd] as the file gives it: in-stream t and isolated t_iso, or isolated t.
  const auto measured = [&](std::size_t p, bool stream) {
    if (stream) return k.in_stream ? k.t[p] : 0.0;
    return k.in_stream ? k.t_iso[p] : k.t[p];
  };
  if (k.kind == "fp8_linear") {
    for (const GemmType type : {GemmType::Fp8, GemmType::Bf16}) {
      const std::size_t t = static_cast<std::size_t>(type);
      const char* layer = type == GemmType::Fp8 ? "fp8_linear" : "linear";
      const char* names[] = {"fwd", "dgrad", "wgrad"};
      for (const GemmPass g : {GemmPass::Fprop, GemmPass::Dgrad, GemmPass::Wgrad}) {
        const std::size_t gi = static_cast<std::size_t>(g);
        add(layer, names[gi], gemm_gpu_seconds(s, type, g, k.n, k.k, k.m), Host::Eager, 1, kFwd, 1, k.gemm_s[t][gi], 0);
      }
    }
    // Isolated: the FP8 forward, and the backward's two GEMMs each timed alone.
    if (k.in_stream) {
      add("fp8_linear", "fwd", gemm_gpu_seconds(s, GemmType::Fp8, GemmPass::Fprop, k.n, k.k, k.m), Host::Eager, 1, kFwd,
          1, 0, k.t_iso[kFwd]);
      add("fp8_linear", "bwd",
          gemm_gpu_seconds(s, GemmType::Fp8, GemmPass::Dgrad, k.n, k.k, k.m) +
              gemm_gpu_seconds(s, GemmType::Fp8, GemmPass::Wgrad, k.n, k.k, k.m),
          Host::Eager, 2, kFwd, 2, 0, k.t_iso[kBwd]);
    }
    return out;
  }
  if (k.kind == "fp8_cast") {
    const double elements = static_cast<double>(k.rows) * static_cast<double>(k.cols);
    for (std::size_t op = 0; op < kCastOpCount; ++op) {
      if (!k.has_cast_op[op]) continue;
      const CastOpKernels& c = kCastOpKernels[op];
      add(std::string("fp8_cast.") + kCastOpNames[op], "fwd", cast_op_seconds(s, op, elements), c.host, c.host_calls,
          kFwd, 1, k.cast_s[op][0], k.cast_s[op][1]);
    }
    return out;
  }
  if (k.kind == "fp8_gemm") {
    add("fp8_gemm", "fwd", gemm_gpu_seconds(s, GemmType::Fp8, GemmPass::Fprop, k.n, k.k, k.m), Host::Eager, 1, kFwd, 1,
        measured(kFwd, true), measured(kFwd, false));
    return out;
  }
  if (k.kind == "grouped_gemm") {
    const LayerResult r = time_layer(s, grouped_gemm_cost(s, k));
    add(k.kind, "fwd", r.fwd.t, Host::Eager, 1, kFwd, 1, measured(kFwd, true), measured(kFwd, false));
    return out;
  }
  if (forward_only(k)) {
    add(k.kind, "fwd", stream_gpu_seconds(s, stream_of(k), stream_gigabytes(k)), Host::Eager, 1, kFwd, 1,
        measured(kFwd, true), measured(kFwd, false));
    return out;
  }
  const std::vector<LayerCost> costs = kernel_costs(s, k);
  // lm_head_loss runs four operators (the linear layer, the cast to fp32, log-softmax, NLL).
  const double ops = k.kind == "lm_head_loss" ? 4 : 1;
  for (std::size_t p = 0; p < 2; ++p) {
    double t = 0;
    for (const LayerCost& c : costs) {
      const LayerResult r = time_layer(s, c);
      t += p == kFwd ? r.fwd.t : r.bwd.t;
    }
    // A norm timed by itself runs none of the residual-stream kernels it carries in a block:
    // alone_seconds is t less those plus the isolated call's overhead.
    const kernels::Calibration* cal = s.kernel_calibration.get();
    const double gpu = alone_seconds(s, costs.front(), t, p) - (cal != nullptr ? cal->isolated_call_s[p] : 0.0);
    add(k.kind, kernels::kPassNames[p], gpu, p == kFwd ? Host::Eager : Host::Autograd, p == kFwd ? ops : 1, p, 1,
        measured(p, true), measured(p, false));
  }
  return out;
}

// The in-stream and isolated predictions of an item.
double stream_prediction(const System& s, const Item& it) {
  const kernels::Calibration* cal = s.kernel_calibration.get();
  const double gpu = it.tensor && cal != nullptr ? it.gpu_s / cal->sustained_tensor_fraction[it.step_pass] : it.gpu_s;
  return std::max(gpu, it.host_calls * host_seconds(cal, it.host));
}
double isolated_prediction(const System& s, const Item& it) {
  const kernels::Calibration* cal = s.kernel_calibration.get();
  return it.gpu_s + (cal != nullptr ? it.isolated_calls * cal->isolated_call_s[it.iso_pass] : 0.0);
}

// fit_line where the sizes spread enough to tell a launch cost from a bandwidth (the largest at
// least kSpread times the smallest); else the launch is 0 and the fraction is the achieved
// bandwidth at the measured size (h100_kernels.json's three rmsnorm shapes all move n e = 2^26
// elements).
constexpr double kSpread = 1.5;
LineFit fit_spread_line(const std::vector<double>& x, const std::vector<double>& y, double offset) {
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  if (*hi >= kSpread * *lo) return fit_line(x, y, offset);
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double w2 = std::pow(y[i], -2 * kWeightExponent);
    sxy += w2 * x[i] * (y[i] - offset);
    sxx += w2 * x[i] * x[i];
  }
  return {0, std::max(sxy / sxx, 1.0), 0};
}

// Weighted least squares of y = x / efficiency through the origin, efficiency <= 1.
double efficiency_through_origin(const std::vector<double>& x, const std::vector<double>& y) {
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double w2 = std::pow(y[i], -2 * kWeightExponent);
    sxy += w2 * x[i] * y[i];
    sxx += w2 * x[i] * x[i];
  }
  return sxx > 0 && sxy > 0 ? std::min(1.0, sxx / sxy) : 0.0;
}

// The step's memory-bound kinds of one pass, each kind with fit_spread_line: x = the pass's bytes
// at the full bandwidth, y = the measured time less (lm_head_loss) its GEMM's calibrated time;
// from the in-stream times of the entries that have them (no offset), or from isolated times less
// isolated_call_s. A forward-only kind's backward repeats its forward.
void fit_step_kinds(const System& system, kernels::Calibration& cal, const std::vector<KernelMeasurement>& kernels,
                    std::size_t p, bool in_stream) {
  System s = system;
  for (const StreamKind kind : {StreamKind::RmsNorm, StreamKind::GatedActivation, StreamKind::Embedding,
                                StreamKind::CrossEntropy, StreamKind::Optimizer, StreamKind::Cast}) {
    s.kernel_calibration = std::make_shared<const kernels::Calibration>(cal);
    std::vector<double> x, y;
    bool forward_kind = false;
    for (const KernelMeasurement& k : kernels) {
      if (k.in_stream != in_stream || tensor_kind(k) || k.kind == "fp8_cast" || stream_of(k) != kind) {
        continue;
      }
      forward_kind = forward_only(k);
      if (forward_kind) {
        if (p == kBwd) continue;
        x.push_back(stream_gigabytes(k) / s.hbm_bandwidth);
        y.push_back(k.t[kFwd]);
        continue;
      }
      const std::vector<LayerCost> costs = kernel_costs(s, k);
      double other = 0;
      for (std::size_t c = 0; c + 1 < costs.size(); ++c) {
        const LayerResult r = time_layer(s, costs[c]);
        other += p == kFwd ? r.fwd.t : r.bwd.t;
      }
      x.push_back((p == kFwd ? costs.back().mem_fwd : costs.back().mem_bwd) / s.hbm_bandwidth);
      y.push_back(k.t[p] - other);
    }
    const std::size_t i = static_cast<std::size_t>(kind);
    if (x.empty()) {
      if (p == kBwd && forward_kind) cal.stream[i][kBwd] = cal.stream[i][kFwd];
      continue;
    }
    const LineFit f = fit_spread_line(x, y, in_stream ? 0.0 : cal.isolated_call_s[p]);
    cal.stream[i][p] = {1 / f.b, f.a};
    if (forward_kind) cal.stream[i][kBwd] = cal.stream[i][kFwd];  // no backward: repeated
    cal.stream_fitted[i] = true;
  }
}

// ---- fits to isolated times (h100_kernels.json) ----

void fit_isolated(const System& system, kernels::Calibration& cal, const std::vector<KernelMeasurement>& kernels) {
  System s = system;
  for (std::size_t p = 0; p < 2; ++p) {
    fit_step_kinds(system, cal, kernels, p, false);
    // Causal attention: its unmasked half's compute at causal_efficiency of the non-causal
    // speed, one factor per pass by weighted least squares (weights as fit_line's), <= 1.
    kernels::AttentionModel& a = cal.attention[p];
    double sxy = 0, sxx = 0;
    for (const KernelMeasurement& k : kernels) {
      if (k.kind != "attention" || !k.causal) continue;
      const LayerCost c = kernel_costs(s, k).front();
      kernels::AttentionModel unit = a;
      unit.causal_efficiency = 1;
      const double x =
          attention_compute_seconds(unit, p, cal.sm_count, s.matrix_flops_fp16, s.flops_units, c.shape);
      const double y = k.t[p] - cal.isolated_call_s[p] - a.launch_s;
      const double w2 = std::pow(k.t[p], -2 * kWeightExponent);
      sxy += w2 * x * y;
      sxx += w2 * x * x;
    }
    if (sxx > 0 && sxy > 0) a.causal_efficiency = std::min(1.0, sxx / sxy);
  }
  // FP8 GEMMs (fp8_gemm, forward only): the bf16 forward's form (tiles, depth factor, launch)
  // with its own efficiency of the system's matrix_flops_fp8; the backward GEMMs keep the bf16
  // backward's form with their efficiency in the forward's ratio of FP8 to bf16 efficiency.
  const kernels::GemmModel& bf16 = cal.gemm[kBf16][0];
  kernels::GemmModel unit = bf16;
  unit.efficiency = 1;
  std::vector<double> x, y;
  for (const KernelMeasurement& k : kernels) {
    if (k.kind != "fp8_gemm") continue;
    x.push_back(kernels::gemm_compute_seconds(cal, unit, system.matrix_flops_fp8, system.flops_units, 1, k.n, k.k, k.m));
    y.push_back(k.t[kFwd] - cal.isolated_call_s[kFwd] - bf16.launch_s);
  }
  const double eff = efficiency_through_origin(x, y);
  if (eff > 0) {
    if (!(system.matrix_flops_fp8 > 0)) throw InputError("fp8_gemm measurements need the system's matrix_flops_fp8");
    cal.gemm[kFp8] = cal.gemm[kBf16];
    cal.gemm[kFp8][0].efficiency = eff;
    for (std::size_t g = 1; g < kernels::kGemmPassCount; ++g) {
      cal.gemm[kFp8][g].efficiency = std::min(1.0, cal.gemm[kBf16][g].efficiency * eff / bf16.efficiency);
    }
    cal.gemm_fitted[kFp8] = true;
  }
}

// ---- fits to in-stream times (h100_kernels_fp8.json) ----

// A sample of an in-stream fit: what the fit's model needs of the kernel, its measured time and
// the host's floor under it (the sample is left out where the floor comes near the time).
struct GemmSample {
  std::int64_t rows, depth, cols;
  double t;
};

// The GEMM model of one data type and pass: tiles and depth factor on a fixed grid, efficiency
// and launch by fit_line (docs/validation.md).
kernels::GemmModel fit_gemm(const kernels::Calibration& cal, double peak, double flops_units,
                            const std::vector<GemmSample>& samples) {
  kernels::GemmModel best_model;
  LineFit best;
  std::vector<double> x(samples.size()), y(samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i) y[i] = samples[i].t;
  for (const double tm : {64.0, 128.0, 256.0}) {
    for (const double tn : {64.0, 128.0, 192.0, 256.0}) {
      for (int kh = 0; kh <= 32; ++kh) {
        const kernels::GemmModel unit{1, tm, tn, 16.0 * kh, 0};
        for (std::size_t i = 0; i < samples.size(); ++i) {
          const GemmSample& g = samples[i];
          x[i] = kernels::gemm_compute_seconds(cal, unit, peak, flops_units, 1, g.rows, g.depth, g.cols);
        }
        const LineFit f = fit_line(x, y, 0);
        if (f.score < best.score) {
          best = f;
          best_model = {1 / f.b, tm, tn, 16.0 * kh, f.a};
        }
      }
    }
  }
  return best_model;
}

// The flash-attention model of one pass: the causal tail, the causal and split-KV efficiencies
// and the head-dimension factor on a fixed grid, efficiency and launch by fit_line; tile rows 128
// (FlashAttention-2's query block on Hopper at head dimension 128).
constexpr double kAttentionTile = 128;
kernels::AttentionModel fit_attention(const System& s, std::int64_t sm_count, std::size_t pass,
                                      const std::vector<std::pair<KernelShape, double>>& samples) {
  kernels::AttentionModel best_model{1, 0, 0, 1, 0, kAttentionTile, 1};
  LineFit best;
  std::vector<double> x(samples.size()), y(samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i) y[i] = samples[i].second;
  const bool causal = std::any_of(samples.begin(), samples.end(), [](const auto& p) { return p.first.causal; });
  const bool plain = std::any_of(samples.begin(), samples.end(), [](const auto& p) { return !p.first.causal; });
  bool split = false;
  for (const auto& [shape, t] : samples) {
    split = split || (pass == kFwd && kernels::attention_splits(shape.batch, shape.rows, shape.cols, shape.depth,
                                                                sm_count) > 1);
  }
  for (int ce = causal && plain ? 0 : 10; ce <= 10; ++ce) {
    for (int se = split ? 0 : 10; se <= 10; ++se) {
      for (int tail = 0; tail <= 30; ++tail) {
        for (int hd = 0; hd <= 64; ++hd) {
          const kernels::AttentionModel unit{1, 4.0 * hd, 0, 0.8 + 0.02 * ce, 0.05 * tail, kAttentionTile,
                                             0.5 + 0.05 * se};
          for (std::size_t i = 0; i < samples.size(); ++i) {
            x[i] = kernels::attention_compute_seconds(unit, pass, sm_count, s.matrix_flops_fp16, s.flops_units,
                                                      samples[i].first);
          }
          const LineFit f = fit_line(x, y, 0);
          if (f.score < best.score) {
            best = f;
            best_model = unit;
            best_model.efficiency = 1 / f.b;
            best_model.launch_s = f.a;
          }
        }
      }
    }
  }
  return best_model;
}

// Host floor of one kind of call: F minimizing the weighted squares of max(gpu, calls F) - y over
// the in-stream items issued that way, on a grid of 0.1 us.
double fit_host_floor(const std::vector<Item>& items, Host host) {
  double most = 0;
  for (const Item& it : items) {
    if (it.host == host && it.stream_s > 0) most = std::max(most, it.stream_s / it.host_calls);
  }
  double best_f = 0, best = INFINITY;
  for (double f = 0; f <= most; f += 1e-7) {
    double score = 0;
    for (const Item& it : items) {
      if (it.host != host || !(it.stream_s > 0)) continue;
      const double r = (std::max(it.gpu_s, it.host_calls * f) - it.stream_s) * std::pow(it.stream_s, -kWeightExponent);
      score += r * r;
    }
    if (score < best) {
      best = score;
      best_f = f;
    }
  }
  return best_f;
}

// Whether an in-stream time may be the host's rather than the GPU's.
bool near_floor(double measured, double calls, double floor_s) { return calls * floor_s >= 0.8 * measured; }

// The tensor-core kernels' sustained fraction of each pass: the median of isolated / in-stream
// time of the GEMM and flash-attention passes of at least kSustainedMin in-stream, where the
// isolated call's own overhead is a few percent at most, and at most 1 (the backward's isolated
// times carry torch.autograd.grad's or two calls' overheads); 1 without such measurements.
constexpr double kSustainedMin = 1e-3;
std::array<double, 2> fit_sustained_fraction(const std::vector<KernelMeasurement>& kernels) {
  std::array<double, 2> out{1, 1};
  for (std::size_t p = 0; p < 2; ++p) {
    std::vector<double> ratios;
    for (const KernelMeasurement& k : kernels) {
      if (tensor_kind(k) && k.in_stream && k.t[p] >= kSustainedMin && k.t_iso[p] > 0) ratios.push_back(k.t_iso[p] / k.t[p]);
    }
    if (!ratios.empty()) out[p] = std::min(1.0, quantile(ratios, 0.5));
  }
  return out;
}

void fit_in_stream(const System& system, kernels::Calibration& cal, const std::vector<KernelMeasurement>& kernels,
                   const std::vector<LayerConfig>& layers) {
  System s = system;
  // The GEMM and attention models are a step's: the in-stream (sustained) times scaled by the
  // sustained fraction.
  cal.sustained_tensor_fraction = fit_sustained_fraction(kernels);
  const std::array<double, 2> sustained = cal.sustained_tensor_fraction;
  const auto refresh = [&] { s.kernel_calibration = std::make_shared<const kernels::Calibration>(cal); };
  // Twice: the kernels' models, then the host floors, then the kernels' models again without the
  // measurements the floors explain, and the floors again.
  for (int round = 0; round < 2; ++round) {
    const double eager = cal.host_call_s[kFwd];
    // GEMMs per data type and pass.
    for (const GemmType type : {GemmType::Bf16, GemmType::Fp8}) {
      const std::size_t t = static_cast<std::size_t>(type);
      const double peak = tensor_peak(system, type == GemmType::Bf16 ? Precision::Bf16 : Precision::Fp8);
      for (const GemmPass g : {GemmPass::Fprop, GemmPass::Dgrad, GemmPass::Wgrad}) {
        const std::size_t gi = static_cast<std::size_t>(g);
        std::vector<GemmSample> samples;
        const auto take = [&](std::int64_t n, std::int64_t k, std::int64_t m, double y) {
          if (!(y > 0) || near_floor(y, 1, eager)) return;
          const kernels::GemmDims d = kernels::gemm_dims(g, n, k, m);
          samples.push_back({d.rows, d.depth, d.cols, y * sustained[g == GemmPass::Fprop ? kFwd : kBwd]});
        };
        // The linear layers' shard shapes (fp8_linear); the earlier set's gemm and fp8_gemm shapes
        // are compared, not fitted.
        for (const KernelMeasurement& k : kernels) {
          if (k.kind == "fp8_linear") take(k.n, k.k, k.m, k.gemm_s[t][gi]);
        }
        if (samples.empty()) continue;
        if (!(peak > 0)) throw InputError("FP8 GEMM measurements need the system's matrix_flops_fp8");
        cal.gemm[t][gi] = fit_gemm(cal, peak, system.flops_units, samples);
        cal.gemm_fitted[t] = true;
      }
    }
    // Flash attention per pass.
    for (std::size_t p = 0; p < 2; ++p) {
      std::vector<std::pair<KernelShape, double>> samples;
      for (const KernelMeasurement& k : kernels) {
        if (k.kind != "attention" || !k.in_stream) continue;
        const double floor_s = p == kFwd ? eager : cal.host_call_s[kBwd];
        if (near_floor(k.t[p], 1, floor_s)) continue;
        samples.push_back({kernel_costs(s, k).front().shape, k.t[p] * sustained[p]});
      }
      if (!samples.empty()) cal.attention[p] = fit_attention(s, cal.sm_count, p, samples);
    }
    refresh();
    // The step's memory-bound kinds, forward and backward.
    for (std::size_t p = 0; p < 2; ++p) fit_step_kinds(system, cal, kernels, p, true);
    // The quantization kinds from the fp8_cast operations that isolate them: amax, cast_plain,
    // transpose_fp8, and the fused function less its amax (the compiled call's host floor aside).
    const auto fit_cast_kind = [&](StreamKind kind, CastOp op, double bytes, bool less_amax) {
      std::vector<double> x, y;
      const CastOpKernels& c = kCastOpKernels[static_cast<std::size_t>(op)];
      const double floor_s = host_seconds(&cal, c.host);
      for (const KernelMeasurement& k : kernels) {
        const std::size_t o = static_cast<std::size_t>(op);
        if (k.kind != "fp8_cast" || !k.has_cast_op[o]) continue;
        const double measured = k.cast_s[o][0];
        if (near_floor(measured, c.host_calls, floor_s)) continue;
        const double elements = static_cast<double>(k.rows) * static_cast<double>(k.cols);
        const double amax = less_amax ? stream_gpu_seconds(s, StreamKind::Amax, 2 * elements * kGB) : 0.0;
        x.push_back(bytes * elements * kGB / s.hbm_bandwidth);
        y.push_back(measured - amax);
      }
      if (x.empty()) return;
      const LineFit f = fit_spread_line(x, y, 0);
      const std::size_t i = static_cast<std::size_t>(kind);
      cal.stream[i][kFwd] = cal.stream[i][kBwd] = {1 / f.b, f.a};
      cal.stream_fitted[i] = true;
      refresh();
    };
    fit_cast_kind(StreamKind::Amax, CastOp::Amax, 2, false);
    fit_cast_kind(StreamKind::Quantize, CastOp::CastPlain, 3, false);
    fit_cast_kind(StreamKind::Transpose, CastOp::TransposeFp8, 2, false);
    fit_cast_kind(StreamKind::CastTranspose, CastOp::FusedCastTranspose, 4, true);
    refresh();
    // The host's floor per call, from every in-stream item.
    std::vector<Item> items;
    for (const KernelMeasurement& k : kernels) {
      if (!k.in_stream) continue;
      for (Item& it : items_of(s, k)) {
        if (it.stream_s > 0) items.push_back(std::move(it));
      }
    }
    cal.host_call_s[kFwd] = fit_host_floor(items, Host::Eager);
    cal.host_call_s[kBwd] = fit_host_floor(items, Host::Autograd);
    cal.host_compiled_call_s = fit_host_floor(items, Host::Compiled);
    refresh();
  }
  refit_block_glue(system, cal, layers);
}

bool any_in_stream(const std::vector<KernelMeasurement>& kernels) {
  return std::any_of(kernels.begin(), kernels.end(), [](const KernelMeasurement& k) { return k.in_stream; });
}

}  // namespace

std::vector<ValidationRow> validate_kernels(const System& s, const std::vector<KernelMeasurement>& kernels,
                                            Timing timing) {
  std::vector<ValidationRow> rows;
  for (const KernelMeasurement& k : kernels) {
    for (const Item& it : items_of(s, k)) {
      const bool stream = it.stream_s > 0 && timing != Timing::Isolated;
      const bool isolated = it.isolated_s > 0 && (timing != Timing::Stream || !k.in_stream);
      if (stream) rows.push_back({k.id, it.layer, it.pass, it.stream_s, stream_prediction(s, it), "stream"});
      if (isolated) rows.push_back({k.id, it.layer, it.pass, it.isolated_s, isolated_prediction(s, it), "isolated"});
    }
  }
  return rows;
}

KernelMeasurement predicted_measurement(const System& s, const KernelMeasurement& k) {
  KernelMeasurement out = k;
  const std::vector<Item> items = items_of(s, k);
  if (k.kind == "fp8_linear") {
    // [fp8 fwd, dgrad, wgrad, bf16 fwd, dgrad, wgrad in-stream, fp8 fwd, bwd isolated]
    for (std::size_t i = 0; i < 6; ++i) out.gemm_s[i < 3 ? kFp8 : kBf16][i % 3] = stream_prediction(s, items[i]);
    out.t = {out.gemm_s[kFp8][0], out.gemm_s[kFp8][1] + out.gemm_s[kFp8][2]};
    if (k.in_stream) out.t_iso = {isolated_prediction(s, items[6]), isolated_prediction(s, items[7])};
    return out;
  }
  if (k.kind == "fp8_cast") {
    std::size_t i = 0;
    for (std::size_t op = 0; op < kCastOpCount; ++op) {
      if (!k.has_cast_op[op]) continue;
      out.cast_s[op] = {stream_prediction(s, items[i]), isolated_prediction(s, items[i])};
      ++i;
    }
    return out;
  }
  for (std::size_t p = 0; p < items.size(); ++p) {
    if (k.in_stream) {
      out.t[p] = stream_prediction(s, items[p]);
      out.t_iso[p] = isolated_prediction(s, items[p]);
    } else {
      out.t[p] = isolated_prediction(s, items[p]);
    }
  }
  return out;
}

std::array<double, 2> fit_call_overhead(const System& system, const std::vector<KernelMeasurement>& kernels) {
  if (system.kernel_calibration == nullptr) {
    throw InputError("system " + system.name + ": fitting a call overhead needs a kernel calibration (`kernels:`)");
  }
  // Predictions without the overhead: t = t0 + calls x overhead for every isolated time.
  const std::array<double, 2> shipped = system.kernel_calibration->isolated_call_s;
  std::array<double, 2> sw{}, swr{};
  for (const KernelMeasurement& k : kernels) {
    for (const Item& it : items_of(system, k)) {
      if (!(it.isolated_s > 0)) continue;
      const double w2 = std::pow(it.isolated_s, -2 * kWeightExponent);
      // per call: (measured - gpu) / calls, weighted by calls^2
      sw[it.iso_pass] += w2 * it.isolated_calls * it.isolated_calls;
      swr[it.iso_pass] += w2 * it.isolated_calls * (it.isolated_s - it.gpu_s);
    }
  }
  std::array<double, 2> out = shipped;
  for (std::size_t p = 0; p < 2; ++p) {
    if (sw[p] > 0) out[p] = std::max(0.0, swr[p] / sw[p]);
  }
  return out;
}

void fit_step_kernels(const System& system, kernels::Calibration& cal, const std::vector<KernelMeasurement>& kernels,
                      const std::vector<LayerConfig>& layers) {
  if (any_in_stream(kernels)) {
    fit_in_stream(system, cal, kernels, layers);
  } else {
    fit_isolated(system, cal, kernels);
  }
}

}  // namespace perfsweep::calib
