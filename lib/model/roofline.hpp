#pragma once
// The roofline of one kernel (estimates.py: get_time_flops, get_time_mem), by kernel class: GEMMs
// and attention run on tensor cores, the rest on vector units; each class has its own achieved
// efficiencies and launch cost (System::kernels).
#include "model/system.hpp"

namespace perfsweep {

// GEMMs and attention use the tensor-core peak (matrix_flops_fp16), the others the vector peak.
constexpr bool uses_tensor_cores(KernelClass k) { return k == KernelClass::Gemm || k == KernelClass::Attention; }

// Seconds to execute `tflop` TFLOP: the class's launch cost plus the work at its achieved
// fraction of the peak.
inline double compute_seconds(const System& system, KernelClass kernel, double tflop) {
  const KernelEfficiency& k = system.kernel(kernel);
  double peak = uses_tensor_cores(kernel) ? system.matrix_flops_fp16 : system.vector_flops_fp16;
  peak *= k.compute;
  return k.launch_s + tflop / peak;
}

// Seconds to stream `gigabytes` through HBM at the class's achieved bandwidth.
inline double memory_seconds(const System& system, KernelClass kernel, double gigabytes) {
  return gigabytes / (system.hbm_bandwidth * system.kernel(kernel).memory);
}

}  // namespace perfsweep
