#pragma once
// The kernels of a training step beyond the reference's block (validation/gpu/h100_kernels.json):
// each measured kernel costed as the model costs it, compared with its measurement (`validate
// kernels`), and the calibration's parameters for them fitted (`validate fit-kernels
// --kernel-measurements`).
#include <vector>

#include "calib/layer_validation.hpp"
#include "calib/step_measurements.hpp"

namespace perfsweep::calib {

// Whether the model predicts this kind (every kind of h100_kernels.json).
bool modelled_kernel(const KernelMeasurement& k);

// [forward, backward] seconds of the kernel timed alone (backward 0 where there is none).
std::array<double, 2> predict_kernel(const System& system, const KernelMeasurement& k);

// One row per modelled kernel and pass (`layer` = its kind).
std::vector<ValidationRow> validate_kernels(const System& system, const std::vector<KernelMeasurement>& kernels);

// The isolated-call overhead (Calibration::isolated_call_s) of the host that measured `kernels`,
// per pass, fitted to them with every kernel parameter kept: a kernel timed alone between two
// CUDA events includes the host's dispatch of its call, which depends on the measuring machine's
// CPU and software, not on the GPU. Weighted least squares with fit_line's weights, at least 0.
// A pass without measurements keeps the system's calibration value. Needs a kernel calibration.
std::array<double, 2> fit_call_overhead(const System& system, const std::vector<KernelMeasurement>& kernels);

// Fits, into `cal` (whose GEMM, attention and isolated_call_s come from the layer measurements),
// the stream kinds rmsnorm, gated_activation, embedding, cross_entropy (the lm_head_loss time
// less its GEMM), optimizer and cast, each pass with fit_line (launch 0 when the measured sizes
// are too alike to tell a launch cost from a bandwidth), and the attention's
// causal_efficiency from the causal attention kernels. GEMM and other kinds are compared, not
// fitted. Kinds with no measurement stay unfitted (the roofline times them).
void fit_step_kernels(const System& system, kernels::Calibration& cal, const std::vector<KernelMeasurement>& kernels);

// The FP8 GEMM model (Calibration::gemm_fp8) from the fp8_gemm measurements (forward only): the
// bf16 forward's form (tiles, depth factor, launch) with its own efficiency of the system's
// matrix_flops_fp8; the backward the bf16 backward's with its efficiency scaled as the
// forward's. Without fp8_gemm measurements `cal` is unchanged. fit_step_kernels calls it last.
void fit_fp8_gemm(const System& system, kernels::Calibration& cal, const std::vector<KernelMeasurement>& kernels);

}  // namespace perfsweep::calib
