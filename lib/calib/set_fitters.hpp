#pragma once
// Named fitters over validation sets (`validate fit NAME --sets A,B`, docs/validation.md "Validation
// sets"): each fits a few numbers of the model's inputs on the rows of the chosen sets' fit part,
// every other row held out, and can write what it fitted as the files estimate reads.
//   kernel_scales: the GEMM and flash-attention efficiencies and the memory-bound kernels' launch
//     times of a kernel calibration, each times one scale (a calibration carried to a cluster's
//     framework: the A100 calibration's fit on vTrain's runs), minimising the mean |error|;
//   host_floor: a cluster's network from the all-reduce bandwidth its jobs measured, the kernels'
//     compute scale on its one-node runs and the framework's host floor per block and
//     micro-batch (nanotron's eager host and pipeline engine), minimising the median |error|;
//   carried_efficiency: per GPU's system, one factor on the tensor-core efficiencies of a
//     calibration carried to it by the spec sheet (the H100's on Blackwell), minimising the mean
//     |log error|.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "calib/validation_set.hpp"
#include "model/kernel_calibration.hpp"
#include "search/estimate.hpp"

namespace perfsweep::calib {

// One row a fitter sees: its request as estimate reads its flags, its measured value in the
// set's quantity, and whether it is in the fit part (rows of a held-out set never are).
struct FitRow {
  const ValidationSet* set = nullptr;
  std::size_t row = 0;  // index into set->rows
  EstimateRequest request;
  SetQuantity quantity = SetQuantity::StepSeconds;
  double measured = kMissing;
  bool fit = false;
  const SetRow& set_row() const { return set->rows[row]; }
  // The value of a fitter input the set maps to a column (set.yaml fitter_columns); "" without one.
  std::string input(const std::string& name) const;
};

struct FitterOptions {
  // kernel_scales, host_floor: the kernel calibration the scales multiply (default: the fit rows'
  // system's own; they must share one); carried_efficiency: the calibration carried (required).
  std::string kernels;
};

struct FitResult {
  std::vector<std::string> report;  // the fitted values, and the fit rows' error before and after
  // A row's request with the fitted values in place (the system or runtime it is evaluated on).
  std::function<void(EstimateRequest&, const FitRow&)> apply;
  // Writes what was fitted to `out` (kernel_scales: a kernel calibration YAML; host_floor: a folder
  // of systems/ and runtimes/ files, those the rows name), each file's first line saying how it
  // was made (`command`); returns the files written.
  std::function<std::vector<std::string>(const std::filesystem::path& out, const std::vector<FitRow>& rows,
                                         const std::string& command)>
      write;
};

struct Fitter {
  const char* name;
  const char* what;
  FitResult (*fit)(const std::vector<FitRow>& rows, const FitterOptions& options);
};
const std::vector<Fitter>& fitters();
// The fitter named `name`; InputError listing the fitters otherwise.
const Fitter& find_fitter(const std::string& name);

// A kernel calibration carried to a cluster's framework with two scales:
//   compute: multiplies the GEMM and flash-attention efficiencies (each capped at 1);
//   stream_launch: multiplies the fixed costs (launch_s) of the memory-bound kernels (bias,
//     activation, dropout, norm), which fused kernels (Megatron's bias-GeLU, bias-dropout-add,
//     fused LayerNorm) pay fewer times than the eager kernels the calibration was fitted on.
struct KernelScales {
  double compute = 1;
  double stream_launch = 1;
};
kernels::Calibration scale_calibration(const kernels::Calibration& base, const KernelScales& scales);

// A framework's own time per micro-batch, beside the GPU's (nanotron: docs/validation.md), as the
// runtime's host floor: each micro-batch keeps a pipeline stage busy at least stage_blocks x
// (layer_s + tp x pipelined_layer_per_tp_s with pp > 1 + (tensor-parallel NVLink domains - 1) x
// tp_domain_layer_s), and a run before the fix of nanotron's pipeline engine that spans nodes
// adds before_fix_slot_s to every micro-batch slot (host_block_s, host_block_per_tp_s,
// host_block_per_tp_domain_s, host_slot_pipelined_multinode_s).
struct FrameworkOverhead {
  double layer_s = 0;
  double pipelined_layer_per_tp_s = 0;
  double tp_domain_layer_s = 0;
  double before_fix_slot_s = 0;
};

// The step of an evaluated request as slot_s x slots + outside_s: slot_s, one micro-batch's
// forward and backward on the stage that bounds the step (with its pipeline transfers); slots,
// the micro-batches plus the bubble's (pp - 1) / V; outside_s, the exposed data-parallel
// communication; stage_blocks, the blocks of that stage.
struct StepParts {
  double step_s = kMissing, slot_s = kMissing, slots = kMissing, outside_s = kMissing;
  std::int64_t stage_blocks = 0;
};
StepParts step_parts(const EstimateRequest& evaluated, const Evaluation& ev);

// The step with a framework's host floor, from the parts of the step without one: the fit's fast
// form of what the composition does with the floor in the runtime.
double step_with_overhead(const EstimateRequest& request, const StepParts& parts, const FrameworkOverhead& o,
                          bool before_fix);

}  // namespace perfsweep::calib
