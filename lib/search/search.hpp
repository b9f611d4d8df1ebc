#pragma once
// Brute-force search of the reference's parallel-configuration space (execute_1d, execute_2d,
// execute_seqp in execution.py) for one system and GPU count, cut into units by tensor split.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "model/step.hpp"
#include "search/top_n.hpp"

namespace perfsweep {

struct SearchProblem {
  Strategy strategy = Strategy::OneD;
  Transformer model;
  System system;  // nvlink_size is the NVLink domain searched
  std::int64_t global_batch = 4096;
  std::size_t top_n = 10;
  AttentionMode attention;  // the reference's search: flash attention
  ExecutionChoices exec;  // execution options searched (the reference's alone by default)
  Runtime runtime;        // how the framework executes each configuration (the reference's by default)
  // Skip the subtrees of the nest whose step-time lower bound cannot enter the top-N
  // (model/step.hpp step_seconds_lower_bound; docs/architecture.md): the same top-N, bit for bit,
  // as the exhaustive walk (false), which costs every configuration that fits.
  bool prune = true;
};

// A runtime that does not run the strategy at all: with a list of strategies (--strat all), the
// tools drop the strategy (and refuse when none is left).
class StrategyNotRunError : public InputError {
 public:
  using InputError::InputError;
};

// InputError naming the system, its capacity and the runtime unless the runtime can allocate some
// of the system's HBM (model/step.hpp memory_limit_gb > 0): a capacity below the driver's reserve
// is refused where the inputs meet, before any search (check_runtime_choices calls it).
void check_capacity(const System& system, const Runtime& rt);

// The choices the runtime runs on the system: the strategy (StrategyNotRunError otherwise), the ZeRO stages of `choices` it has,
// sequence parallelism off only for 1d, and fp8 only where the runtime has an fp8_recipe, the
// strategy is 1d and the system has the recipe's tensor cores. The others are dropped from the
// lists, each with a line in `dropped` (for the log) saying which value and why; InputError naming
// what is missing where an option has nothing left (docs/runtimes.md). An option whose list the
// flags left empty takes the runtime's value (ExecutionOption::runtime_default: rank_order).
void check_runtime_choices(const System& system, const Runtime& rt, Strategy strategy, ExecutionChoices& choices,
                           std::vector<std::string>* dropped = nullptr);

// How many candidates each check took out (the reference's "#possible candidates" is
// `candidates`; memory-infeasible ones are among them). With pruning (SearchProblem::prune) the
// configurations in pruned subtrees count in `candidates` and `pruned_candidates`, never costed
// nor checked for memory, so that `candidates` is the size of the space either way.
struct SearchCounters {
  std::int64_t tensor_splits = 0;           // tensor splits searched
  std::int64_t tensor_splits_too_thin = 0;  // rejected: shards under 128 wide (3e/tp, e/tp1, l/tp2)
  std::int64_t pipelines_rejected_dp = 0;   // (tp, pp) pairs whose dp exceeds or does not divide the batch
  std::int64_t candidates = 0;              // configurations evaluated
  std::int64_t infeasible_memory = 0;       // of those, over hbm_capacity
  std::int64_t module_evaluations = 0;      // distinct (mbs, nb, NVLink tensor placement) blocks costed
  std::int64_t pruned_subtrees = 0;         // subtrees the step-time bound skipped (a configuration is one)
  std::int64_t pruned_candidates = 0;       // the configurations in them
  // Costed configurations whose step came out below the bound: 0 unless the bound is wrong (then
  // pruning may have lost one: `sweep` warns, tests fail).
  std::int64_t bound_exceeded = 0;
  void add(const SearchCounters& o);
};

// The tensor splits (tp1, tp2) the reference tries for n GPUs, in its order, with the thin-shard
// filter applied (1d: tp2 = 1).
std::vector<TensorSplit> tensor_splits(const SearchProblem& p, std::int64_t n_gpus, SearchCounters* counters = nullptr);

// Evaluates candidates; owns its scratch space so that repeated runs do not allocate.
class Searcher {
 public:
  explicit Searcher(const SearchProblem& problem);
  ~Searcher();
  Searcher(const Searcher&) = delete;
  Searcher& operator=(const Searcher&) = delete;

  // Every configuration of n GPUs with this tensor split (tp1, tp2) into `top`.
  void run(std::int64_t n_gpus, const TensorSplit& split, TopN& top, SearchCounters& counters);
  // The same configurations evaluated once and judged against several HBM capacities (GB), which
  // decide feasibility only: tops[i] and counters[i] receive what run() gives for a system with
  // hbm_capacity = capacities[i] (search/capacity_sweep.hpp groups such systems).
  void run(std::int64_t n_gpus, const TensorSplit& split, std::span<const double> capacities, std::span<TopN> tops,
           std::span<SearchCounters> counters);
  // Every configuration of n GPUs.
  TopN run_all(std::int64_t n_gpus, SearchCounters& counters);

  // The candidate the search makes of `layout` at n GPUs: its step costed as run() costs it (an
  // uneven pipeline's stages balanced as run() balances them), so a kept candidate comes out the
  // same to the last bit. `fits`: whether it is within the problem's HBM capacity. Not for the
  // hot loop (nothing is cached); exceptions of the model propagate.
  Candidate evaluate(std::int64_t n_gpus, const Layout& layout, bool& fits);

  const SearchProblem& problem() const { return problem_; }
  // Re-targets the searcher (another system or sweep point), keeping its scratch space.
  void set_problem(const SearchProblem& problem);

 private:
  struct Cache;
  SearchProblem problem_;
  std::vector<std::int64_t> batch_divisors_;
  std::vector<BlockLayer> block_;        // the model's block description
  std::vector<BlockLayer> dense_block_;  // its dense blocks' (MoE every moe.every > 1 blocks)
  Module mlp_, sa_;                // scratch for building a block
  Cache* cache_;
};

// The share of the tensor-parallel collectives the overlap hides in the listed layouts' fastest
// (tp_comm_hidden of the runtime with the overlap on where any listed value is on): the search's
// and configs' bounds on a block's pass.
double least_tp_comm_hidden(const Runtime& rt, const ExecutionChoices& choices);

}  // namespace perfsweep
