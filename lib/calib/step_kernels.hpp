#pragma once
// The kernels of a training step beyond the reference's block, timed one kind at a time
// (validation/gpu/h100_kernels.json, h100_kernels_fp8.json): each measured kernel costed as the
// model costs it, compared with its measurement (`validate kernels`), and the calibration's
// parameters for them fitted (`validate fit-kernels --kernel-measurements`).
//
// Two timings (docs/validation.md, "In-stream and isolated times"): a kernel inside a training
// step runs in a stream of kernels the host has queued ahead, so its in-stream time (calls back to
// back) is what the model's kernel times are; a call timed alone between two CUDA events also
// waits for the host to issue it (the calibration's isolated_call_s). Calls repeated in a stream
// run at the slower of the GPU and the host that issues them (host_call_s): the small kernels'
// floor.
#include <string>
#include <vector>

#include "calib/layer_validation.hpp"
#include "calib/step_measurements.hpp"

namespace perfsweep::calib {

// Which measured times `validate kernels` compares with: in-stream where a kernel has them (else
// isolated), isolated (the entries that have them), or both.
enum class Timing : std::uint8_t { Stream, Isolated, Both };

// One row per measured quantity and timing: `layer` the kind (fp8_linear and linear: a linear
// layer's GEMMs in FP8 and bf16, passes fwd, dgrad, wgrad in-stream and fwd, bwd isolated;
// fp8_cast.<operation>: one quantization kernel), `timing` stream or isolated.
std::vector<ValidationRow> validate_kernels(const System& system, const std::vector<KernelMeasurement>& kernels,
                                            Timing timing = Timing::Stream);

// The entry with its measured times replaced by what `system` predicts for them, in-stream and
// isolated as the entry has them (measurements made by the model, for the fits' tests).
KernelMeasurement predicted_measurement(const System& system, const KernelMeasurement& k);

// The isolated-call overhead (Calibration::isolated_call_s) of the host that measured `kernels`,
// per pass, fitted to their isolated times with every kernel parameter kept: a kernel timed alone
// between two CUDA events includes the host's dispatch of its call, which depends on the
// measuring machine's CPU and software, not on the GPU. Weighted least squares with fit_line's
// weights, at least 0. A pass without measurements keeps the system's calibration value. Needs a
// kernel calibration.
std::array<double, 2> fit_call_overhead(const System& system, const std::vector<KernelMeasurement>& kernels);

// Fits, into `cal` (fitted to the layer measurements `layers` by fit_kernels), what the kernel
// measurements determine (docs/validation.md, "The kernel calibration from in-stream times"):
// - from in-stream times (entries with t_iso): the tensor-core kernels' sustained fraction, the
//   GEMMs of each data type and pass (fp8_linear), flash attention's tile schedule (attention),
//   the step's memory-bound kinds, the quantization kinds (fp8_cast) and the host's floor per
//   call; then, from the layer measurements' blocks, the residual glue again with those GEMM and
//   attention models (refit_block_glue);
// - from isolated times (h100_kernels.json): the step's memory-bound kinds less isolated_call_s,
//   the causal attention's efficiency and the FP8 GEMMs' efficiency (fp8_gemm), as before.
// Each kind and pass with fit_line (launch 0 where the measured sizes are too alike to tell a
// launch cost from a bandwidth). Kinds with no measurement stay as they were.
void fit_step_kernels(const System& system, kernels::Calibration& cal, const std::vector<KernelMeasurement>& kernels,
                      const std::vector<LayerConfig>& layers);

}  // namespace perfsweep::calib
