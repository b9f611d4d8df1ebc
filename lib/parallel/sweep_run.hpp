#pragma once
// A sweep: many search problems (systems, or hardware points of a design-space sweep) times GPU
// counts, cut into work units of one tensor split each, run over MPI ranks, gathered on rank 0.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "search/search.hpp"
#include "search/sweep_target.hpp"

namespace perfsweep {

// One tensor split at one GPU count, for a group of targets that differ only in HBM capacity
// (search/capacity_sweep.hpp): evaluated once, judged against each target's capacity.
struct WorkUnit {
  std::uint32_t target = 0;  // the group's first target
  std::uint32_t group = 0;   // index into SweepRun::groups()
  std::uint32_t n_index = 0;
  TensorSplit split;
};

struct SweepCallbacks {
  // Rank 0: a target's every unit is in (journal it, e.g.).
  std::function<void(std::size_t target, const TargetResult&)> on_target_complete;
  // Rank 0: progress, the first time once `first_progress` has passed (so that a long run says
  // how it goes within seconds), then at most every `progress_interval`.
  std::function<void(std::size_t units_done, std::size_t units_total, std::size_t targets_done,
                     std::size_t targets_total)>
      on_progress;
  std::chrono::duration<double> first_progress{2.0};
  std::chrono::duration<double> progress_interval{30.0};
};

class SweepRun {
 public:
  SweepRun(std::vector<SweepTarget> targets, std::vector<std::int64_t> n_gpus, std::size_t top_n);

  // Resume: targets already computed (from a journal); their units are not run again. Ranks other
  // than 0 may pass empty results: only rank 0 assembles the output.
  void preload(std::map<std::size_t, TargetResult> done);

  // The units still to run, group by group, largest GPU counts first.
  const std::vector<WorkUnit>& units() const { return units_; }
  // The targets still to run, grouped by everything but HBM capacity.
  const std::vector<std::vector<std::size_t>>& groups() const { return groups_; }
  // How many targets preload() supplied.
  std::size_t preloaded() const { return static_cast<std::size_t>(std::count(preloaded_.begin(), preloaded_.end(), true)); }
  const std::vector<SweepTarget>& targets() const { return targets_; }
  const std::vector<std::int64_t>& n_gpus() const { return n_gpus_; }

  // Collective over comm. On return, rank 0's results() hold every target.
  void run(MPI_Comm comm, int thread_level, const SweepCallbacks& callbacks);
  const std::vector<TargetResult>& results() const { return results_; }
  SearchCounters total_counters() const;

  // The CPU seconds the units still to run would take on one rank, estimated by running a sample
  // of them spread over the whole list (every capacity group and GPU count alike) for about
  // `budget` (at least one unit): the sample's mean times the units. `sampled` receives how many
  // ran; all of them make the estimate their measured sum. Runs on the calling rank alone.
  double estimate_cpu_seconds(std::chrono::duration<double> budget, std::size_t& sampled) const;

 private:
  void plan_units();
  void absorb(const char* data, std::size_t size, const SweepCallbacks& callbacks);

  std::vector<SweepTarget> targets_;
  std::vector<std::int64_t> n_gpus_;
  std::size_t top_n_;
  std::vector<TargetResult> results_;
  std::vector<bool> preloaded_;
  std::vector<std::vector<std::size_t>> groups_;
  std::vector<WorkUnit> units_;
  std::size_t units_done_ = 0;
  std::size_t targets_done_ = 0;
  std::chrono::steady_clock::time_point last_progress_;
  bool progress_reported_ = false;
};

}  // namespace perfsweep
