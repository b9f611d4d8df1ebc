#pragma once
// Measured multi-GPU training runs (the validation sets of docs/validation.md), each mapped to the
// configuration it ran, and the model's prediction of each:
//   megatron: published Megatron-LM results on A100 (Narayanan et al. 2021 Table 1, TFLOP/s per
//             GPU; Korthikanti et al. 2022 Table 5, iteration seconds);
//   vtrain:   Megatron-DeepSpeed iteration times on A100 nodes (vTrain's ground_truth_multi.csv);
//   nanotron: nanotron benchmark runs on H100 nodes (status, tokens/s per GPU, allocated memory).
// Columns are found by their header names; a row that does not parse is an InputError naming the
// file, the line and the column.
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "calib/set_validation.hpp"
#include "model/kernel_calibration.hpp"
#include "model/plan.hpp"
#include "model/runtime.hpp"
#include "model/system.hpp"
#include "model/transformer.hpp"

namespace perfsweep::calib {

enum class RunSet : std::uint8_t { Megatron, Vtrain, Nanotron };
const char* run_set_name(RunSet set);  // "megatron", "vtrain", "nanotron"

// What a set measures per run.
enum class Quantity : std::uint8_t { IterationSeconds, TflopsPerGpu, TokensPerSecondPerGpu };
const char* quantity_name(Quantity q);  // "iteration_s", "tflops_per_gpu", "tokens_per_s_per_gpu"

inline constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

struct ClusterRun {
  std::string id;
  std::string group;       // the runs a summary groups (megatron: the source table; else the set)
  std::size_t line = 0;    // 1-based line of the file
  Transformer model;
  Layout layout;           // degrees, micro-batch, NVLink placement, execution options
  std::int64_t global_batch = 0;  // samples per iteration
  Quantity quantity = Quantity::IterationSeconds;
  double measured = kNoValue;        // in the quantity's unit; NaN where the run did not succeed
  std::string status;                // nanotron: Success, OOM or another outcome; else "Success"
  double measured_mem_gb = kNoValue; // nanotron: allocated memory as the file gives it (GiB)
  bool fit = false;                  // used to fit something (then left out of held-out figures)
  // nanotron: validate fits the runtime's host floor on the set (FrameworkOverhead, run_runtime).
  bool host_floor_fitted = false;
  // nanotron: the bus bandwidth of an all-reduce over all the job's GPUs, measured on the cluster
  // at the job's start ("AllReduce (GB/s)"; NaN where the file has none).
  double cluster_allreduce_GBps = kNoValue;
  std::int64_t nodes = 0;            // nanotron: the job's nodes
  // nanotron: run before a fix of nanotron's pipeline engine (the file's after_pp_fix False).
  bool pipeline_before_fix = false;
  // The framework's runtime the run is predicted under: runtimes/megatron.yaml for Megatron-LM
  // and Megatron-DeepSpeed (with the fused softmax of their time in place of flash attention),
  // runtimes/nanotron.yaml for nanotron (its host floor fitted here, so left out of the runtime
  // until run_runtime puts the fitted one in).
  Runtime runtime;
};

// The runtime of a set's runs (run_runtimes sets each run's): loaded from runtimes/.
Runtime set_runtime(RunSet set);

// Readers, one per format (docs/validation.md lists the columns each needs and the values that
// are not in the files). Every error is an InputError "FILE:LINE: column 'NAME': ...".
std::vector<ClusterRun> read_megatron_runs(const std::filesystem::path& file);
std::vector<ClusterRun> read_vtrain_runs(const std::filesystem::path& file);
std::vector<ClusterRun> read_nanotron_runs(const std::filesystem::path& file);
std::vector<ClusterRun> read_cluster_runs(RunSet set, const std::filesystem::path& file);

// Megatron's rank order puts tensor-parallel ranks innermost, then data-parallel, then pipeline:
// the NVLink domain of `node` GPUs holds as much of tp as it can, then of dp, then of pp.
void place_megatron_order(Layout& layout, std::int64_t node);

// The system each set ran on: a name of systems/ (selene_a100, vtrain_a100, hf_h100).
const char* default_system_file(RunSet set);

// Flags the runs used to fit (`fit`), every third run by file order (the 1st, 4th, 7th, ...), a
// choice fixed before any error was seen: of vTrain, the A100 kernel calibration's two scales; of
// nanotron, the cluster's network (fit_cluster_network); no Megatron run fits anything.
void mark_fit_runs(RunSet set, std::vector<ClusterRun>& runs);

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

struct KernelScaleFit {
  KernelScales scales;
  std::size_t runs = 0;             // the fit runs predicted
  double mean_abs_before = 0;       // mean |relative error| on them with the base calibration
  double mean_abs_after = 0;        // and with the fitted scales
  kernels::Calibration calibration; // the base, scaled
};
// The scales minimising the mean |relative error| over the runs marked `fit`, on a fixed grid
// (compute 0.80, 0.81, ..., 1.40; stream_launch 0, 0.05, ..., 1), ties to the first found. The
// system must have a kernel calibration.
KernelScaleFit fit_kernel_scales(const System& system, const std::vector<ClusterRun>& runs);

struct RunPrediction {
  double predicted = kNoValue;      // in the run's quantity
  double iteration_s = kNoValue;    // the predicted step
  // The step as iteration_s = slot_s x slots + outside_s: slot_s, one micro-batch's forward and
  // backward on the stage that bounds the step (with its pipeline transfers); slots, the micro-
  // batches plus the bubble's (pp - 1) / V; outside_s, the exposed data-parallel communication.
  double slot_s = kNoValue, slots = kNoValue, outside_s = kNoValue;
  std::int64_t stage_layers = 0;    // the blocks of the stage that bounds the step
  // Allocated between steps (weights, gradients, optimizer states), in the measured unit (GiB).
  double predicted_mem_gb = kNoValue;
  double peak_mem_gb = kNoValue;    // with the activations of the step's fullest stage, in GB
  bool fits = true;                 // the predicted peak fits the GPU's hbm_capacity
  std::string error;                // why the model could not express the run ("" if it could)
};

// The network of a cluster whose collectives slow down with the job's size, as its own bandwidth
// measurements show: per job node count, the bus bandwidth of an all-reduce over all the job's
// GPUs (the median over the fit runs of that node count). A job of N > 1 nodes is costed with the
// per-GPU network bandwidth (ib_bandwidth x ib_eff) that makes the model's all-reduce over N full
// NVLink domains reach that bus bandwidth: bus / nvlink_size (one ring per NIC of a domain).
// Node counts between two measured ones are interpolated log-log; beyond the largest, the last two
// counts' log-log slope carries on; below the smallest multi-node count, its value.
struct ClusterNetwork {
  NetworkScaling scaling;          // the medians, as a system's network_scaling
  std::vector<std::size_t> runs;   // fit runs behind each median
  bool empty() const { return scaling.nodes.empty(); }
};
// The medians over the runs marked `fit` that carry a measured bandwidth (empty if none do).
ClusterNetwork fit_cluster_network(const std::vector<ClusterRun>& runs);

// A framework's own time per micro-batch, beside the GPU's (nanotron: docs/validation.md): each
// micro-batch keeps a pipeline stage busy at least stage_layers x (layer_s + tp x
// pipelined_layer_per_tp_s with pp > 1 + (tensor-parallel NVLink domains - 1) x
// tp_domain_layer_s), and a run before the fix of nanotron's pipeline engine that spans nodes
// adds before_fix_slot_s to every micro-batch slot. All zero: the GPU's time alone.
//   layer_s: the host's time to issue one block's forward and backward (eager kernels, autograd,
//     tensor-parallel collectives); the GPU waits for it when a block's kernels are short;
//   pipelined_layer_per_tp_s: with pipeline parallelism nanotron's blocking transfers keep the
//     host in step with the GPU, so each block waits on its tensor-parallel collectives for the
//     slowest of tp ranks that start out of step: a time per block growing with tp;
//   tp_domain_layer_s: each further NVLink domain a tensor-parallel group spans (its collectives'
//     latency over the network, per block);
//   before_fix_slot_s: the engine before the fix, per micro-batch slot.
struct FrameworkOverhead {
  double layer_s = 0;
  double pipelined_layer_per_tp_s = 0;
  double tp_domain_layer_s = 0;
  double before_fix_slot_s = 0;
  bool empty() const {
    return layer_s == 0 && pipelined_layer_per_tp_s == 0 && tp_domain_layer_s == 0 && before_fix_slot_s == 0;
  }
};

// The compute scale (KernelScales::compute; stream launches kept) of the system's kernel
// calibration minimising the median |relative error| over the fit runs on one node (no network
// in their step; all the fit runs, on `network`, where fewer than kMinOneNodeFitRuns one-node
// runs succeeded), each with `overhead`, on the grid 0.50, 0.51, ..., 1.50, ties to the first
// found; 1 where the system has no kernel calibration or no such run can be predicted. `runs`
// counts the runs fitted.
inline constexpr std::size_t kMinOneNodeFitRuns = 10;
struct ComputeScaleFit {
  double compute = 1;
  std::size_t runs = 0;
  bool one_node = true;  // fitted on one-node runs (else on all the fit runs)
  double median_abs_before = 0, median_abs_after = 0;
};
ComputeScaleFit fit_one_node_compute(const System& system, const std::vector<ClusterRun>& runs,
                                     const FrameworkOverhead& overhead = {}, const ClusterNetwork* network = nullptr);

// The run's runtime with a fitted overhead as its host floor (host_block_s, host_block_per_tp_s,
// host_block_per_tp_domain_s) and, for a run before nanotron's pipeline fix, its slot time
// (host_slot_pipelined_multinode_s, named NAME-before-fix): what the run is predicted under.
Runtime run_runtime(const ClusterRun& run, const FrameworkOverhead& overhead);

// The run as estimate costs it: the one composition (evaluate) under run_runtime(run, overhead),
// on the cluster's system at the job's scale (with `network`'s scaling where given).
RunPrediction predict_run(const System& system, const ClusterRun& run, const ClusterNetwork* network = nullptr,
                          const FrameworkOverhead& overhead = {});

// The system predict_run costs a run on before taking it to the job's scale (at_scale): the
// cluster's, with `network`'s scaling in place of its own where one is given and not empty.
System with_network(const System& cluster, const ClusterNetwork* network);

// The step of a prediction (predict_run without an overhead) with a framework's overhead, from the
// prediction's slots: the fit's fast form of the host floor the composition applies (predict_run
// with the overhead), for searching the overhead's grid. And the run's quantity of a step.
double iteration_with_overhead(const System& system, const ClusterRun& run, const RunPrediction& p,
                               const FrameworkOverhead& overhead);
double quantity_of_iteration(const ClusterRun& run, double iteration_s);

// The overhead minimising the median |relative error| over the runs marked `fit` that succeeded
// (`predictions`: predict_run of each run without an overhead, in the same order), by coordinate
// descent from zero over fixed grids (layer_s and tp_domain_layer_s 0 to 10 ms by 0.25 ms,
// pipelined_layer_per_tp_s 0 to 5 ms by 0.125 ms, before_fix_slot_s 0 to 2 s by 25 ms; each
// coordinate in that order, a strict improvement only, until a round changes none).
struct OverheadFit {
  FrameworkOverhead overhead;
  std::size_t runs = 0;
  double median_abs_before = 0, median_abs_after = 0;
};
OverheadFit fit_framework_overhead(const System& system, const std::vector<ClusterRun>& runs,
                                   const std::vector<RunPrediction>& predictions);

struct RunResult {
  ClusterRun run;
  RunPrediction prediction;
  double rel_err() const { return prediction.predicted / run.measured - 1; }
  bool has_error() const;  // both values present
};

// What a nanotron set's fit runs fitted (validate_runs), and the system every run of a set was
// predicted on (with_network's, before at_scale): the given one, or a nanotron set's with the
// fitted network and compute scale.
struct ClusterFit {
  ClusterNetwork network;
  ComputeScaleFit compute;
  OverheadFit overhead;
  System system;
};

// Every run predicted; a nanotron set's runs on the network fitted on its fit runs
// (fit_cluster_network), with the compute scale fitted on its one-node fit runs
// (fit_one_node_compute) and the framework's overhead fitted on all its fit runs
// (fit_framework_overhead), the two fitted in turn twice (the compute scale with the overhead of
// the round before, zero at first), unless `unfitted`, which keeps the system as it is and adds
// no overhead. `fit`, when given, receives what was fitted.
std::vector<RunResult> validate_runs(const System& system, const std::vector<ClusterRun>& runs,
                                     bool unfitted = false, ClusterFit* fit = nullptr);

// CSV: id,quantity,measured,predicted,rel_err,fit and, for nanotron,
// status_measured,fits_predicted,measured_mem_gb,predicted_mem_gb, then predicted_iteration_s (the
// predicted step as "%.17g", which estimate's --json `t` of the run's inputs repeats: validate
// --inputs) and note (empty where there is no value).
std::string runs_csv(RunSet set, const std::vector<RunResult>& rows);

// The figures the targets are stated in, per group and over the held-out runs.
struct RunSummary {
  std::string group;
  std::size_t count = 0;       // runs with a measured and a predicted value, held out
  double mean_abs = 0, median_abs = 0, max_abs = 0;
  std::size_t oom_judged = 0, oom_right = 0;  // nanotron: Success and OOM runs, and those predicted right
  std::size_t mem_count = 0;
  double mem_median_abs = 0;   // nanotron: |predicted / measured - 1| of allocated memory, successes
};
std::vector<RunSummary> summarize_runs(const std::vector<RunResult>& rows, bool held_out_only);
// "validate megatron|vtrain|nanotron": one line per group, held out and (if any) fit part.
std::string runs_summary(RunSet set, const std::vector<RunResult>& rows);

}  // namespace perfsweep::calib
