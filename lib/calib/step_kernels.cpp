#include "calib/step_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include "core/error.hpp"
#include "model/precision.hpp"
#include "model/roofline.hpp"

namespace perfsweep::calib {

namespace {
using kernels::kBwd;
using kernels::kFwd;
using kernels::StreamKind;
constexpr double kGB = 1e-9;

// A GEMM on one GPU: (n x k)(k x m), nothing split.
LayerCost one_gpu_gemm(const System& s, const char* name, std::int64_t n, std::int64_t k, std::int64_t m) {
  return gemm(s, name, {n, k, m, k, m}, {});
}

// The layer costs of a measured kernel (lm_head_loss: the GEMM, then the loss).
std::vector<LayerCost> kernel_costs(const System& s, const KernelMeasurement& k) {
  if (k.kind == "rmsnorm") return {layer_norm(s, "rmsnorm", {k.n, k.e, k.n, k.e}, {}, {NormKind::RmsNorm, false})};
  if (k.kind == "swiglu_gate") return {gated_activation(s, "swiglu_gate", k.n * k.f)};
  if (k.kind == "gemm") return {one_gpu_gemm(s, "gemm", k.n, k.k, k.m)};
  if (k.kind == "fp8_gemm") {
    // torch._scaled_mm on operands quantized beforehand: the GEMM alone, no quantization kernels
    LayerCost c = one_gpu_gemm(s, "fp8_gemm", k.n, k.k, k.m);
    to_fp8(s, {"fp8_gemm", Sublayer::Attention, Role::RowProjection}, Fp8Policy{Fp8Recipe::Delayed}, c);
    c.cast_gb = {};
    c.cast_kernels = {};
    return {c};
  }
  if (k.kind == "attention") {
    const std::int64_t kv = k.kv > 0 ? k.kv : k.h;  // 0: as many as query heads
    return {attention_core(s, "attention", {k.b, k.h, kv, k.d, k.l, k.l}, {}, {k.causal, false})};
  }
  if (k.kind == "embedding") return {embedding(s, "embedding", k.n, k.e, k.vocab, {}, 0)};
  if (k.kind == "lm_head_loss") {
    return {one_gpu_gemm(s, "lm_head", k.n, k.e, k.vocab),
            cross_entropy(s, "loss", k.n, k.vocab, {}, LogitsDtype::Fp32)};
  }
  return {};
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
// Passes measured: the FP8 GEMM's forward alone (h100_kernels.json has no backward).
std::size_t measured_passes(const KernelMeasurement& k) { return forward_only(k) || k.kind == "fp8_gemm" ? 1 : 2; }

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

}  // namespace

bool modelled_kernel(const KernelMeasurement&) { return true; }

std::array<double, 2> predict_kernel(const System& s, const KernelMeasurement& k) {
  if (!modelled_kernel(k)) throw InputError(k.id + ": kind " + k.kind + " is not modelled");
  if (forward_only(k)) {
    const double gb = stream_gigabytes(k);
    const kernels::Calibration* cal = s.kernel_calibration.get();
    const StreamKind kind = stream_of(k);
    if (cal != nullptr && cal->stream_fitted[static_cast<std::size_t>(kind)]) {
      return {cal->isolated_call_s[kFwd] + kernels::stream_seconds(*cal, kind, kFwd, gb, s.hbm_bandwidth), 0.0};
    }
    return {memory_seconds(s, k.kind == "adamw" ? KernelClass::Optimizer : KernelClass::Elementwise, gb), 0.0};
  }
  std::array<double, 2> t{};
  const std::vector<LayerCost> costs = kernel_costs(s, k);
  for (std::size_t p = 0; p < 2; ++p) {
    for (const LayerCost& c : costs) {
      const LayerResult r = time_layer(s, c);
      t[p] += p == kFwd ? r.fwd.t : r.bwd.t;
    }
    // One call timed alone, whatever the kernels it launches.
    t[p] = alone_seconds(s, costs.front(), t[p], p);
  }
  return t;
}

std::vector<ValidationRow> validate_kernels(const System& s, const std::vector<KernelMeasurement>& kernels) {
  std::vector<ValidationRow> rows;
  for (const KernelMeasurement& k : kernels) {
    if (!modelled_kernel(k)) continue;
    const std::array<double, 2> t = predict_kernel(s, k);
    for (std::size_t p = 0; p < measured_passes(k); ++p) rows.push_back({k.id, k.kind, p, k.t[p], t[p]});
  }
  return rows;
}

std::array<double, 2> fit_call_overhead(const System& system, const std::vector<KernelMeasurement>& kernels) {
  if (system.kernel_calibration == nullptr) {
    throw InputError("system " + system.name + ": fitting a call overhead needs a kernel calibration (`kernels:`)");
  }
  // Predictions without the overhead: t = t0 + overhead for every kernel and pass.
  kernels::Calibration bare = *system.kernel_calibration;
  const std::array<double, 2> shipped = bare.isolated_call_s;
  bare.isolated_call_s = {0, 0};
  System s = system;
  s.kernel_calibration = std::make_shared<const kernels::Calibration>(bare);
  std::array<double, 2> sw{}, swr{};
  for (const KernelMeasurement& k : kernels) {
    if (!modelled_kernel(k)) continue;
    const std::array<double, 2> t0 = predict_kernel(s, k);
    for (std::size_t p = 0; p < measured_passes(k); ++p) {
      const double w2 = std::pow(k.t[p], -2 * kWeightExponent);
      sw[p] += w2;
      swr[p] += w2 * (k.t[p] - t0[p]);
    }
  }
  std::array<double, 2> out = shipped;
  for (std::size_t p = 0; p < 2; ++p) {
    if (sw[p] > 0) out[p] = std::max(0.0, swr[p] / sw[p]);
  }
  return out;
}

void fit_step_kernels(const System& system, kernels::Calibration& cal, const std::vector<KernelMeasurement>& kernels) {
  System s = system;
  for (std::size_t p = 0; p < 2; ++p) {
    // Memory-bound kinds: x = the pass's bytes at the full bandwidth, y = the measured time less
    // (lm_head_loss) its GEMM's calibrated time.
    for (const StreamKind kind : {StreamKind::RmsNorm, StreamKind::GatedActivation, StreamKind::Embedding,
                                  StreamKind::CrossEntropy, StreamKind::Optimizer, StreamKind::Cast}) {
      s.kernel_calibration = std::make_shared<const kernels::Calibration>(cal);
      std::vector<double> x, y;
      bool forward_kind = false;
      for (const KernelMeasurement& k : kernels) {
        if (!modelled_kernel(k) || k.kind == "gemm" || k.kind == "fp8_gemm" || k.kind == "attention" ||
            stream_of(k) != kind) {
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
        const LayerCost& c = costs.back();
        double other = 0;
        for (std::size_t i = 0; i + 1 < costs.size(); ++i) {
          const LayerResult r = time_layer(s, costs[i]);
          other += p == kFwd ? r.fwd.t : r.bwd.t;
        }
        x.push_back((p == kFwd ? c.mem_fwd : c.mem_bwd) / s.hbm_bandwidth);
        y.push_back(k.t[p] - other);
      }
      const std::size_t i = static_cast<std::size_t>(kind);
      if (x.empty()) {
        if (p == kBwd && forward_kind) cal.stream[i][kBwd] = cal.stream[i][kFwd];
        continue;
      }
      const LineFit f = fit_spread_line(x, y, cal.isolated_call_s[p]);
      cal.stream[i][p] = {1 / f.b, f.a};
      if (forward_kind) cal.stream[i][kBwd] = cal.stream[i][kFwd];  // no backward: repeated
      cal.stream_fitted[i] = true;
    }
    // Causal attention: its unmasked half's compute at causal_efficiency of the non-causal
    // speed, one factor per pass by weighted least squares (weights as fit_line's), <= 1.
    kernels::AttentionModel& a = cal.attention[p];
    double sxy = 0, sxx = 0;
    for (const KernelMeasurement& k : kernels) {
      if (k.kind != "attention" || !k.causal) continue;
      const LayerCost c = kernel_costs(s, k).front();
      kernels::AttentionModel unit = a;
      unit.causal_efficiency = 1;
      const double x = attention_compute_seconds(unit, p, s.matrix_flops_fp16, s.flops_units, c.shape);
      const double y = k.t[p] - cal.isolated_call_s[p] - a.launch_s;
      const double w2 = std::pow(k.t[p], -2 * kWeightExponent);
      sxy += w2 * x * y;
      sxx += w2 * x * x;
    }
    if (sxx > 0 && sxy > 0) a.causal_efficiency = std::min(1.0, sxx / sxy);
  }
  fit_fp8_gemm(system, cal, kernels);
}

void fit_fp8_gemm(const System& s, kernels::Calibration& cal, const std::vector<KernelMeasurement>& kernels) {
  // The forward's efficiency by weighted least squares (weights as fit_line's), the bf16
  // forward's tiles, depth factor and launch kept: t = alone + launch + x / efficiency, x the
  // arithmetic at the FP8 peak and full efficiency.
  const kernels::GemmModel& bf16 = cal.gemm[kFwd];
  kernels::GemmModel unit = bf16;
  unit.efficiency = 1;
  double sxy = 0, sxx = 0;
  for (const KernelMeasurement& k : kernels) {
    if (k.kind != "fp8_gemm") continue;
    const double x = kernels::gemm_compute_seconds(cal, unit, s.matrix_flops_fp8, s.flops_units, 1, k.n, k.k, k.m);
    const double y = k.t[kFwd] - cal.isolated_call_s[kFwd] - bf16.launch_s;
    const double w2 = std::pow(k.t[kFwd], -2 * kWeightExponent);
    sxy += w2 * x * y;
    sxx += w2 * x * x;
  }
  if (!(sxx > 0 && sxy > 0)) return;
  if (!(s.matrix_flops_fp8 > 0)) throw InputError("fp8_gemm measurements need the system's matrix_flops_fp8");
  cal.gemm_fp8[kFwd] = bf16;
  cal.gemm_fp8[kFwd].efficiency = std::min(1.0, sxx / sxy);
  // No FP8 backward measured: the backward keeps the bf16 backward's form, its efficiency in the
  // forward's ratio of FP8 to bf16 efficiency.
  cal.gemm_fp8[kBwd] = cal.gemm[kBwd];
  cal.gemm_fp8[kBwd].efficiency =
      std::min(1.0, cal.gemm[kBwd].efficiency * cal.gemm_fp8[kFwd].efficiency / bf16.efficiency);
  cal.gemm_fp8_fitted = true;
}

}  // namespace perfsweep::calib
