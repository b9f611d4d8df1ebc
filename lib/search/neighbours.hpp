#pragma once
// Searches beside the one asked for, run as the search runs (top 1, pruned): the nearest GPU
// counts at which a configuration fits where none does at the count asked for, and batch sizes
// near the one asked for whose best configuration is clearly faster per GPU, where the batch's
// divisors leave only degraded layouts (288 GPUs at batch 1024: no data-parallel degree with the
// factor 3 that the fastest layouts need).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "search/search.hpp"
#include "search/top_n.hpp"

namespace perfsweep {

// The fastest configuration that fits of any of the problems (systems, strategies, attention
// modes) at n GPUs and its problem's index, each problem searched for its best alone; nullopt
// where none fits. The problems' global_batch is replaced by `global_batch`.
struct BestFound {
  Candidate best;
  std::size_t problem = 0;
};
std::optional<BestFound> best_configuration(std::span<const SearchProblem> problems, std::int64_t n_gpus,
                                            std::int64_t global_batch);

// The nearest GPU counts below and above n_gpus, each at most `reach` away, at which a
// configuration of the problems fits (best_configuration finds one).
struct NearestCounts {
  std::optional<std::int64_t> below, above;
};
NearestCounts nearest_feasible_counts(std::span<const SearchProblem> problems, std::int64_t n_gpus,
                                      std::int64_t global_batch, std::int64_t reach);

// The batch sizes tried beside `global_batch`: the nearest multiples below and above it of each
// divisor d of the GPU count with d >= n_gpus / 64 (the data-parallel degrees of layouts whose
// tensor, context and pipeline groups hold at most 64 GPUs), within a quarter of the batch, the
// nearest first (ties: the smaller first).
std::vector<std::int64_t> neighbour_batches(std::int64_t n_gpus, std::int64_t global_batch);

// A batch size whose best configuration is at least min_gain (0.1: 10%) faster in samples/s per
// GPU than the best at the batch asked for, the nearest below and the nearest above (each of the
// first `tries` neighbour_batches on its side), with the best found at each.
struct BatchAdvice {
  std::int64_t global_batch = 0;
  double gain = 0;  // its best throughput over the asked batch's best, less 1
  BestFound found;
};
struct BatchAdviceResult {
  std::optional<BestFound> asked;  // the best at the batch asked for (none: no advice)
  std::optional<BatchAdvice> below, above;
};
BatchAdviceResult better_batches(std::span<const SearchProblem> problems, std::int64_t n_gpus,
                                 std::int64_t global_batch, double min_gain, std::size_t tries);

// Why the problem's search finds no configuration that fits at n GPUs, in words: no tensor split
// (the thin-shard and head rules), no pipeline whose data-parallel degree divides the global batch,
// or every configuration over the runtime's memory limit; empty where one fits. It runs the search
// again at that count (top 1, pruned).
std::string infeasible_reason(const SearchProblem& problem, std::int64_t n_gpus);

// One line naming the better batches (empty where there are none), for tools' output: "batch 1024
// leaves 288 GPUs degraded layouts: batch 1008 (-1.6%) gives +57.1% samples/s per GPU (...)".
std::string batch_advice_text(const BatchAdviceResult& advice, std::int64_t n_gpus, std::int64_t global_batch,
                              double min_gain);

}  // namespace perfsweep
