#pragma once
// Per-layer predictions against GPU layer measurements (`validate layers`), and the kernel
// calibration's fit to them (`validate fit-kernels`).
#include <cmath>
#include <string>
#include <vector>

#include "calib/layer_measurements.hpp"
#include "model/kernel_calibration.hpp"
#include "model/layer.hpp"
#include "model/system.hpp"

namespace perfsweep::calib {

// The layers of one measured configuration as the model costs them: the 1D strategy at the
// measured tp, one shard, with no collectives (the measurements ran one shard alone, so each
// layer's reduce-scatters and all-gathers are dropped from its cost, whatever the placement).
std::vector<LayerCost> measured_layer_costs(const System& system, const LayerConfig& config);

struct ValidationRow {
  std::string id;
  std::string layer;   // a layer name, or "block"
  std::string pass;    // fwd or bwd (kernels::kPassNames); a linear layer's GEMMs also dgrad, wgrad
  double measured_s;
  double predicted_s;
  std::string timing;  // kernels: "stream" (in-stream) or "isolated"; layers: ""
  double rel_err() const { return predicted_s / measured_s - 1; }
};

// A pass timed alone (CUDA events around one call), from its time in a stream of kernels: plus
// the calibration's isolated_call_s, less, for a norm, the block's residual-stream kernels it
// carries in a block. Without a kernel calibration: the stream time.
double alone_seconds(const System& system, const LayerCost& cost, double stream_s, std::size_t pass);

// One row per (config, layer, pass) and two `block` rows per config. A layer row's prediction is
// its time in a stream of kernels plus the calibration's isolated_call_s (what one timed call
// pays alone); a block row's is the sum of the layers' stream times plus one isolated_call_s (the
// block is timed as one call). Without a kernel calibration: the system's roofline, as the
// reference times it.
std::vector<ValidationRow> validate_layers(const System& system, const std::vector<LayerConfig>& configs);

// CSV `id,layer,pass,measured_s,predicted_s,rel_err`, and `timing` where the rows have one.
std::string validation_csv(const std::vector<ValidationRow>& rows);
// count, median, p90 and max |relative error| per layer pass, over all layer passes, per block
// pass and for the block's forward + backward. Rows with a timing (kernels): per kind and pass
// (isolated ones marked so where in-stream ones are there too), and over all kernel passes of the
// in-stream rows (where none, of all).
std::string validation_summary(const std::vector<ValidationRow>& rows);

// The q-quantile of v (linear interpolation), NaN when empty.
double quantile(std::vector<double> v, double q);

// Minimizes sum_i w_i^2 (offset + a + b x_i - y_i)^2 with w_i = y_i^-kWeightExponent, subject to
// a >= 0 and b >= 1 (b = 1 / efficiency, a a launch cost): the shared fit of every kernel kind.
inline constexpr double kWeightExponent = 0.5;
struct LineFit {
  double a = 0, b = 1, score = INFINITY;
};
LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y, double offset);

// Fits every parameter of a kernel calibration to the measurements (docs/validation.md):
// per pass, weighted least squares of |relative error| with the efficiencies and bandwidth
// fractions bounded by 1 and the launch costs by 0, over a fixed grid of the shape parameters
// (GEMM tiles and k_half, attention head_dim_half); then isolated_call_s from the blocks. The
// system gives the peaks; sm_count is the GPU's.
kernels::Calibration fit_kernels(const System& system, const std::vector<LayerConfig>& configs,
                                 std::int64_t sm_count);

// With the GEMM and attention models fitted to in-stream times, the residual glue from the
// layer measurements' blocks again (docs/validation.md): each block less its call's
// isolated_call_s and the sum of its layers' in-stream times, least squares of the relative error,
// >= 0. Nothing without configurations.
void refit_block_glue(const System& system, kernels::Calibration& cal, const std::vector<LayerConfig>& configs);

}  // namespace perfsweep::calib
