#pragma once
// The roofline of one kernel (estimates.py: get_time_flops, get_time_mem), by kernel class: GEMMs
// and attention run on tensor cores, the rest on vector units; each class has its own achieved
// efficiencies and launch cost (System::kernels).
#include "model/kernel_calibration.hpp"
#include "model/system.hpp"

namespace perfsweep {

// The roofline class of a kernel: its efficiencies and launch cost in System::kernels.
constexpr KernelClass kernel_class(KernelOp op) {
  switch (op) {
    case KernelOp::Gemm: return KernelClass::Gemm;
    case KernelOp::Attention: return KernelClass::Attention;
    case KernelOp::Norm:
    case KernelOp::RmsNorm: return KernelClass::Norm;
    case KernelOp::Optimizer: return KernelClass::Optimizer;
    case KernelOp::Collective: return KernelClass::Collective;
    case KernelOp::Bias:
    case KernelOp::Activation:
    case KernelOp::Dropout:
    case KernelOp::Softmax:
    case KernelOp::GatedActivation:
    case KernelOp::Embedding:
    case KernelOp::CrossEntropy:
    case KernelOp::Cast: return KernelClass::Elementwise;
  }
  return KernelClass::Elementwise;
}

// GEMMs and attention use the tensor-core peak (matrix_flops_fp16), the others the vector peak.
constexpr bool uses_tensor_cores(KernelClass k) { return k == KernelClass::Gemm || k == KernelClass::Attention; }

// The tensor-core peak (TFLOP/s) of a GEMM in data type `p`.
inline double tensor_peak(const System& system, Precision p) { return system.*data_type(p).peak; }

// Seconds to execute `tflop` TFLOP: the class's launch cost plus the work at its achieved
// fraction of the peak (a GEMM's in its data type).
inline double compute_seconds(const System& system, KernelClass kernel, double tflop,
                              Precision precision = Precision::Bf16) {
  const KernelEfficiency& k = system.kernel(kernel);
  double peak = uses_tensor_cores(kernel) ? tensor_peak(system, kernel == KernelClass::Gemm ? precision : Precision::Bf16)
                                          : system.vector_flops_fp16;
  peak *= k.compute;
  return k.launch_s + tflop / peak;
}

// Seconds to stream `gigabytes` through HBM at the class's achieved bandwidth.
inline double memory_seconds(const System& system, KernelClass kernel, double gigabytes) {
  return gigabytes / (system.hbm_bandwidth * system.kernel(kernel).memory);
}

// The kernel calibration's forward curve of the memory-bound kind `kind` where it is fitted, else
// null (the caller's roofline times the kind).
inline const kernels::StreamModel* fitted_stream(const System& system, kernels::StreamKind kind) {
  const kernels::Calibration* cal = system.kernel_calibration.get();
  const auto i = static_cast<std::size_t>(kind);
  return cal != nullptr && cal->stream_fitted[i] ? &cal->stream[i][kernels::kFwd] : nullptr;
}

// `kernels` launches of a memory-bound curve moving `gigabytes` in all.
inline double stream_seconds(const System& system, const kernels::StreamModel& m, double kernels, double gigabytes) {
  return kernels * m.launch_s + gigabytes / (system.hbm_bandwidth * m.bandwidth_fraction);
}

// A memory-bound pass over `gigabytes`: the kernel calibration's curve of `kind` (its launch
// included) when fitted, else the memory time of the kernel class `fallback`.
inline double stream_seconds(const System& system, kernels::StreamKind kind, KernelClass fallback, double gigabytes) {
  if (const kernels::StreamModel* m = fitted_stream(system, kind)) return stream_seconds(system, *m, 1, gigabytes);
  return memory_seconds(system, fallback, gigabytes);
}

// `kernels` elementwise kernels moving `gigabytes` in all at the kernel class's roofline.
inline double elementwise_seconds(const System& system, double kernels, double gigabytes) {
  return kernels * system.kernel(KernelClass::Elementwise).launch_s +
         memory_seconds(system, KernelClass::Elementwise, gigabytes);
}

// A pass timed by a kernel calibration: launch plus the larger of its arithmetic and its HBM
// traffic, each at the calibrated fraction of the system's peak.
struct KernelSeconds {
  double launch = 0;   // s
  double compute = 0;  // s: arithmetic
  double memory = 0;   // s: HBM traffic
  double glue = 0;     // s: the residual-stream kernels a norm pass carries in a block
  double total() const { return launch + (compute > memory ? compute : memory) + glue; }
};

// Whether the calibration times this pass (the others keep the kernel-class roofline).
inline bool calibrated_op(const kernels::Calibration& cal, KernelOp op, const KernelShape& shape) {
  if (op == KernelOp::Collective) return false;
  if (op == KernelOp::Gemm || op == KernelOp::Attention) return shape.rows > 0;
  return cal.stream_fitted[static_cast<std::size_t>(kernels::stream_kind(op))];
}

// `pass`: kernels::kFwd or kBwd; `tflop` and `gigabytes` the reference's counts of the pass.
inline KernelSeconds calibrated_seconds(const System& system, const kernels::Calibration& cal, KernelOp op,
                                        const KernelShape& s, std::size_t pass, double tflop, double gigabytes,
                                        Precision precision = Precision::Bf16) {
  using namespace kernels;
  KernelSeconds t;
  const double peak = op == KernelOp::Gemm ? tensor_peak(system, precision) : system.matrix_flops_fp16;
  switch (op) {
    case KernelOp::Gemm: {
      const std::array<GemmModel, kGemmPassCount>& g = cal.gemm_of(gemm_type(precision));
      if (pass == kFwd) {
        const GemmModel& f = g[static_cast<std::size_t>(GemmPass::Fprop)];
        t.launch = f.launch_s;
        t.compute = gemm_pass_seconds(cal, f, GemmPass::Fprop, peak, system.flops_units, s);
      } else {
        const GemmModel& dg = g[static_cast<std::size_t>(GemmPass::Dgrad)];
        const GemmModel& wg = g[static_cast<std::size_t>(GemmPass::Wgrad)];
        t.launch = dg.launch_s + wg.launch_s;
        t.compute = gemm_pass_seconds(cal, dg, GemmPass::Dgrad, peak, system.flops_units, s) +
                    gemm_pass_seconds(cal, wg, GemmPass::Wgrad, peak, system.flops_units, s);
      }
      t.memory = gigabytes / system.hbm_bandwidth;
      return t;
    }
    case KernelOp::Attention: {
      const AttentionModel& a = cal.attention[pass];
      t.launch = a.launch_s;
      t.compute = attention_compute_seconds(a, pass, cal.sm_count, peak, system.flops_units, s);
      t.memory = gigabytes / system.hbm_bandwidth;
      return t;
    }
    default: {
      const StreamModel& m = cal.stream[static_cast<std::size_t>(stream_kind(op))][pass];
      t.launch = m.launch_s;
      t.compute = tflop / system.vector_flops_fp16;
      t.memory = gigabytes / (system.hbm_bandwidth * m.bandwidth_fraction);
      if (op == KernelOp::Norm || op == KernelOp::RmsNorm) {
        const double elements = static_cast<double>(s.rows) * static_cast<double>(s.depth);
        t.glue = cal.residual_glue_bytes[pass] * elements * 1e-9 / system.hbm_bandwidth;
      }
      return t;
    }
  }
}

// A block with fused bias-dropout-add kernels (Mechanisms::fused_elementwise) adds the residual
// inside them; what stays outside is the backward's sum of the two gradients at the residual fork
// (the sub-layer's input gradient and the residual's): read two, write one, per element of the
// residual stream, at the full hbm_bandwidth as the calibration's glue. Element counts per pass.
inline constexpr std::array<double, 2> kFusedGlueElements{0, 3};
inline double fused_glue_seconds(const System& system, const KernelShape& s, std::size_t pass) {
  const double elements = static_cast<double>(s.rows) * static_cast<double>(s.depth);
  return kFusedGlueElements[pass] * system.element_size * elements / system.hbm_bandwidth;
}

}  // namespace perfsweep
