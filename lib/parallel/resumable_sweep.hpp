#pragma once
// The `sweep` tool as a library call: plan a sweep from its options (systems or a hardware
// design-space grid, GPU counts, limits), take the output's lock, resume or refuse its journal,
// run it over MPI with progress reports, publish the HDF5 file atomically and remove the journal.
// Errors are typed (core/error.hpp): InputError for bad options or a journal that must not be
// touched, LockedError when another run owns the output, IoError/H5Error when writing fails.
#include <mpi.h>

#include <cstdint>
#include <map>
#include <string>

#include "config/execution_flags.hpp"
#include <vector>

#include "config/hw_sweep.hpp"
#include "search/sweep_target.hpp"

namespace perfsweep {

struct SweepOptions {
  std::string model = "gpt3_1T";
  std::int64_t seq_len = 0;  // > 0 replaces the model's sequence length
  std::string strat = "1d";  // one strategy here; run_sweeps takes a list or "all" (one run each)
  std::string systems_file;  // YAML list of systems (default sweeps/paper.yaml)
  std::string system;        // or one system
  std::string nvs;           // NVLink sizes for `system`
  std::string sweep_file;    // or a hardware design-space sweep
  std::int64_t global_batch = 4096;
  std::string n_gpus = "4:16384";
  std::int64_t top_n = 10;
  ExecutionFlags exec;  // execution options searched (lists)
  std::string out_dir = "outputs";
  std::string output;  // overrides out_dir
  bool resume = false;
  bool restart = false;
  bool dry_run = false;
  bool force = false;    // overwrite an existing output of the default name
  bool quiet = false;    // no progress reports
  bool verbose = false;  // --dry-run lists every work unit
  // Refused before any work when exceeded: searches (targets x GPU counts) and estimated output.
  std::int64_t max_points = 1000000;
  double max_output_gb = 10.0;
  // A token budget (--tokens, --gpu-hour-cost): its days, GPU-hours and cost for the closing
  // summary's best configuration and, under a runtime, in every top/ row.
  double tokens = 0, gpu_hour_cost = 0;
  std::string software_version;
  std::string command_line;
};

struct SweepPlan {
  Strategy strategy = Strategy::OneD;
  std::vector<SweepTarget> targets;
  std::vector<std::string> system_yaml;  // per target, canonical
  Transformer model;
  std::vector<std::int64_t> n_gpus;
  std::string output;
  bool hardware_sweep = false;
  HardwareSweep sweep;  // when hardware_sweep
  std::string sweep_yaml;
  std::int64_t searches = 0;         // targets x GPU counts
  double estimated_output_bytes = 0;  // of the HDF5 file
  std::vector<std::string> dropped;  // option values the strategy or runtime cannot run (logged)
  std::vector<std::string> input_files;  // the model, system, list, sweep and runtime files read
};

// A target's best configuration at the largest GPU count where it has one.
struct SweepBest {
  std::string group;  // the target's HDF5 group, e.g. "H100-NVS8"
  std::int64_t n_gpus = 0;
  Candidate best;
  SearchProblem problem;
};

// Validates the options and builds the targets; InputError on anything out of bounds.
SweepPlan plan_sweep(const SweepOptions& options);

// Identifies the inputs that determine the results (a journal is only resumed by an identical
// run): software version, a hash of the output and journal schema, strategy, model, batch,
// top-n, GPU counts, every system and the content of every calibration.
std::string sweep_fingerprint(const SweepPlan& plan, const SweepOptions& options);

// Drops the resumed targets (journal records, by target index) whose record the plan's search could
// not have written: every field of every kept configuration is costed again for its target and must
// come out bit for bit (the layout one the search builds, every totals field, throughput and
// memory), each list strictly ordered and no longer than its target's feasible count. Returns how
// many were dropped.
std::size_t drop_unreproduced(const SweepPlan& plan, std::map<std::size_t, TargetResult>& done);

// Collective over comm: the whole run. Returns on every rank; only rank 0 writes. Rank 0 gets each
// target's best configuration (targets with none left out), the others nothing.
std::vector<SweepBest> run_resumable_sweep(const SweepOptions& options, MPI_Comm comm, int thread_level);

// The options of each strategy of --strat (a list, or all): strat one strategy each and, with
// several, -o's name with the strategy before its extension (run.h5 -> run_1d.h5).
std::vector<SweepOptions> options_per_strategy(const SweepOptions& options);

// One run_resumable_sweep per strategy of --strat, every plan checked before the first runs
// (each strategy writes its own file); with several, a closing summary of the best configuration
// over all of them per target.
void run_sweeps(const SweepOptions& options, MPI_Comm comm, int thread_level);

}  // namespace perfsweep
