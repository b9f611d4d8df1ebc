#include "search/search.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>

#include "core/error.hpp"
#include "search/candidates.hpp"
#include "search/dimensions.hpp"

namespace perfsweep {

void SearchCounters::add(const SearchCounters& o) {
  tensor_splits += o.tensor_splits;
  tensor_splits_too_thin += o.tensor_splits_too_thin;
  pipelines_rejected_dp += o.pipelines_rejected_dp;
  candidates += o.candidates;
  infeasible_memory += o.infeasible_memory;
  module_evaluations += o.module_evaluations;
}

std::vector<TensorSplit> tensor_splits(const SearchProblem& p, std::int64_t n, SearchCounters* counters) {
  const Transformer& m = p.model;
  const StrategyPlan& plan = plan_of(p.strategy);
  std::vector<TensorSplit> out;
  SearchCounters local;
  for (std::int64_t tp1 : divisors(n)) {
    if (m.h % tp1 || m.e % tp1) continue;
    if (m.kv() % tp1 && tp1 % m.kv()) continue;  // key/value heads split over tp, or replicated over it
    if (!has_tp2(plan)) {
      if ((3 * m.e) / tp1 < 128) {  // qkv's output shard
        ++local.tensor_splits_too_thin;
        continue;
      }
      // Context-parallel degrees in the order given (cp = 1 alone: the reference's splits): each
      // rank's two load-balanced chunks of l / (2 cp) tokens (validate_layout's rule), tp x cp
      // dividing the GPUs.
      for (const std::int64_t cp : p.exec.cp) {
        if (cp > 1 && ((n / tp1) % cp || !cp_splits_sequence(m.l, cp))) continue;
        TensorSplit t{tp1, 1, 1, 1, 1};
        t.cp = cp;
        out.push_back(t);
      }
      continue;
    }
    for (std::int64_t tp2 : divisors(n / tp1)) {
      if (has_summa_blocks(plan) && m.e % tp2) continue;  // SUMMA splits the embedding over tp2 too
      if (m.e / tp1 < 128 || m.l / tp2 < 128) {
        ++local.tensor_splits_too_thin;
        continue;
      }
      out.push_back({tp1, tp2, 1, 1, 1});
    }
  }
  local.tensor_splits = static_cast<std::int64_t>(out.size());
  if (counters) counters->add(local);
  return out;
}

// Costs of one tensor split, keyed by every input of the block that varies inside the split:
// micro-batch, SUMMA nb, the tensor groups' NVLink placement (zero for the placement-free memory
// entries) and the execution options the block's cost reads (ExecutionOption::block_cost). An
// open-addressing table whose entries are invalidated by bumping a generation number.
struct BlockKey {
  std::array<std::int64_t, kBlockCostAxes> axes{};  // block_axis_codes: mbs, nb and the tensor and expert shares
  bool ends_share_a_stage = false;  // a tied LM head on the embedding's stage (pp = 1)
  std::array<std::int64_t, kBlockCostOptions> options{};  // block_cost_codes
  bool operator==(const BlockKey&) const = default;
};

template <typename Value>
class KeyedCache {
 public:
  void reset() {
    ++generation_;
    used_ = 0;
  }

  // The value stored for key, computing it with make() on a miss.
  template <typename Make>
  const Value& get(const BlockKey& key, Make&& make) {
    auto [slot, found] = find(key);
    if (!found) {
      slot->value = make();
      slot->key = key;
      slot->generation = generation_;
      ++used_;
    }
    return slot->value;
  }

 private:
  struct Entry {
    BlockKey key;
    std::uint32_t generation = 0;
    Value value;
  };
  std::vector<Entry> table_ = std::vector<Entry>(1 << 10);
  std::uint32_t generation_ = 1;
  std::size_t used_ = 0;

  static std::size_t slot_of(const BlockKey& k, std::size_t mask) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    const auto mix = [&h](std::int64_t v) { h = (h ^ static_cast<std::uint64_t>(v)) * 0x100000001b3ull; };
    for (std::int64_t v : k.axes) mix(v);
    mix(std::int64_t{k.ends_share_a_stage});
    for (std::int64_t v : k.options) mix(v);
    return static_cast<std::size_t>((h * 0x9E3779B97F4A7C15ull) >> 32) & mask;
  }

  std::pair<Entry*, bool> find(const BlockKey& key) {
    if (2 * (used_ + 1) > table_.size()) grow();
    const std::size_t mask = table_.size() - 1;
    for (std::size_t i = slot_of(key, mask);; i = (i + 1) & mask) {
      Entry& e = table_[i];
      if (e.generation != generation_) return {&e, false};
      if (e.key == key) return {&e, true};
    }
  }

  void grow() {
    std::vector<Entry> old(table_.size() * 2);
    old.swap(table_);
    used_ = 0;
    for (Entry& e : old) {
      if (e.generation != generation_) continue;
      auto [slot, found] = find(e.key);
      *slot = e;
      ++used_;
    }
  }
};

// A block's summary and, with a vocabulary, its end stages' layers: both depend on the same
// inputs, so both are costed once per key.
struct CostedBlock {
  BlockSummary block;
  StageEndSums ends;
};

struct Searcher::Cache {
  KeyedCache<CostedBlock> blocks;
  KeyedCache<BlockMemory> memory;
  std::vector<std::vector<Choice>> choices;  // per dimension, reused
  std::uint32_t listed = 0;                  // bit per dimension: choices hold its values for the outer ones
  std::vector<std::uint32_t> stale;          // per dimension: the inner dimensions whose values depend on it
  std::vector<std::size_t> by_capacity;      // capacity indices, smallest capacity first
  std::vector<double> limits;                // what the runtime can allocate at each capacity (GB)

  // The values of dimension `depth` for the layout's outer dimensions, listed only when stale.
  const std::vector<Choice>& values(std::size_t depth, const SearchContext& context, const Layout& c) {
    if (!(listed >> depth & 1u)) {
      choices[depth].clear();
      search_dimensions()[depth].values(context, c, choices[depth]);
      listed |= 1u << depth;
    }
    return choices[depth];
  }
  // Dimension `depth` took another value: the inner ones that depend on it are stale.
  void changed(std::size_t depth) { listed &= ~stale[depth]; }

  void reset() {
    blocks.reset();
    memory.reset();
    listed = 0;
  }
};

namespace {
// The problem with the runtime's attention (a runtime without flash attention describes its
// blocks with the unfused core) and its values of the options left to it (the rank order).
SearchProblem with_runtime_attention(SearchProblem p) {
  Execution unused;
  apply_runtime(p.runtime, unused, p.attention);
  fill_runtime_defaults(p.runtime, p.exec);
  return p;
}

// The candidate's step from its costed block (and end layers): an uneven pipeline's stages
// balanced (`even` false), the step composed, its throughput, memory and totals set. The
// search's leaf and Searcher::evaluate both go through it, so a kept candidate re-evaluates to
// the last bit.
void compose_candidate(const System& sys, const SearchProblem& p, bool even, const BlockSummary& block,
                       const StageEndSums& ends, Candidate& cand) {
  Layout& c = cand.layout;
  // the balanced partition where the runtime's is Megatron-LM's (given counts); its own otherwise
  if (!even && c.exec.stage_partition == StagePartition::Even) [[unlikely]] {
    const StageBlocks stages = balanced_stages(sys, p.model, p.runtime, c, block, ends);
    c.exec.first_stage_blocks = stages.first;
    c.exec.last_stage_blocks = stages.last;
  }
  cand.totals = compose_step(sys, p.model, p.runtime, c, block, p.global_batch, ends).totals;
  cand.throughput = static_cast<double>(p.global_batch) / cand.totals.t;
  cand.mem = cand.totals.mem;
}
}  // namespace

void check_capacity(const System& s, const Runtime& rt) {
  const double limit = memory_limit_gb(s, rt);
  if (limit > 0 && std::isfinite(limit)) return;
  char text[320];
  std::snprintf(text, sizeof text,
                "hbm_capacity %.6g GB%s leaves the runtime %s nothing to allocate (its driver_reserve_gib %.6g GiB "
                "comes off the capacity; what is left: %.6g GB)",
                s.hbm_capacity, s.hbm_capacity_exact || !rt.capacity_in_gib ? "" : " (read as GiB)", rt.name.c_str(),
                rt.driver_reserve_gib, limit);
  std::string message = "system '";
  message += s.name;
  message += "': ";
  message += text;
  throw InputError(message);
}

void check_runtime_choices(const System& s, const Runtime& rt, Strategy strategy, ExecutionChoices& choices,
                           std::vector<std::string>* dropped) {
  check_capacity(s, rt);
  const std::string strat = plan_of(strategy).name;
  if (!rt.runs(strategy)) {
    throw StrategyNotRunError("runtime " + rt.name + " does not run strategy " + strat +
                     " (use --runtime reference for the paper's model of it)");
  }
  auto note = [&](const std::string& line) {
    if (dropped != nullptr) dropped->push_back(line);
  };
  fill_runtime_defaults(rt, choices);
  std::vector<std::int64_t> zero;
  std::string refused;
  for (std::int64_t z : choices.zero) {
    if (rt.runs_zero(z)) {
      zero.push_back(z);
    } else {
      if (!refused.empty()) refused += ',';
      refused += std::to_string(z);
    }
  }
  if (zero.empty()) {
    std::string runs;
    for (std::int64_t z = 0; z <= 3; ++z) {
      if (!rt.runs_zero(z)) continue;
      if (!runs.empty()) runs += ',';
      runs += std::to_string(z);
    }
    throw InputError("runtime " + rt.name + " does not run --zero " + refused + " (it runs " + runs + ")");
  }
  if (!refused.empty()) note("--zero " + refused + " dropped for " + strat + ": runtime " + rt.name + " does not run it");
  choices.zero = zero;
  if (strategy != Strategy::OneD && std::find(choices.sequence_parallel.begin(), choices.sequence_parallel.end(),
                                              false) != choices.sequence_parallel.end()) {
    const std::string why = "sequence parallelism off is modelled for 1d tensor parallelism only";
    std::erase(choices.sequence_parallel, false);
    if (choices.sequence_parallel.empty()) throw InputError("--sp off with --strat " + strat + ": " + why);
    note("--sp off dropped for " + strat + ": " + why);
  }
  // Context parallelism: 1d only, under a runtime that runs it, with the exchanges it runs.
  const bool wants_cp = std::any_of(choices.cp.begin(), choices.cp.end(), [](std::int64_t v) { return v > 1; });
  if (wants_cp) {
    std::string no_cp;
    if (strategy != Strategy::OneD) {
      no_cp = "context parallelism is modelled for 1d tensor parallelism only";
    } else if (rt.context_parallel == 0) {
      no_cp = "runtime " + rt.name + " does not run context parallelism (its file lists no context_parallel)";
    }
    if (!no_cp.empty()) {
      std::erase_if(choices.cp, [](std::int64_t v) { return v > 1; });
      if (choices.cp.empty()) throw InputError("--cp with --strat " + strat + ": " + no_cp);
      note("--cp above 1 dropped for " + strat + ": " + no_cp);
    } else {
      std::string refused_comm;
      for (CpComm k : choices.cp_comm) {
        if (!rt.runs_cp(k)) refused_comm += std::string(refused_comm.empty() ? "" : ",") + kCpCommNames[static_cast<std::size_t>(k)];
      }
      std::erase_if(choices.cp_comm, [&](CpComm k) { return !rt.runs_cp(k); });
      if (choices.cp_comm.empty()) {
        throw InputError("runtime " + rt.name + " does not run --cp-comm " + refused_comm);
      }
      if (!refused_comm.empty()) note("--cp-comm " + refused_comm + " dropped: runtime " + rt.name + " does not run it");
    }
  }
  // Offload: what the runtime offloads, on a system with a host link (weights with ZeRO-3 is the
  // search's offload_values); none always stays.
  const std::vector<Offload> offload = choices.offload;
  for (Offload k : offload) {
    if (k == Offload::None) continue;
    std::string why;
    if (!rt.runs_offload(k)) {
      why = "runtime " + rt.name + " does not offload it (its offload key lists what it does)";
    } else if (!(s.host_bandwidth > 0) || !(s.host_memory > 0)) {
      why = "system " + s.name + " gives no host link (host_bandwidth, host_memory)";
    } else if (k != Offload::Activations && !(s.host_cpu_bandwidth > 0)) {
      why = "system " + s.name + " gives no host_cpu_bandwidth (the host's optimizer step)";
    }
    if (why.empty()) continue;
    const std::string name = kOffloadNames[static_cast<std::size_t>(k)];
    std::erase(choices.offload, k);
    if (choices.offload.empty()) throw InputError("--offload " + name + ": " + why);
    note("--offload " + name + " dropped for " + strat + ": " + why);
  }
  // The optimizer's share on the host goes with offload optimizer (the layouts without it take the
  // first value, offload_percent_values); where the runtime or system dropped that, the whole list goes.
  if (choices.offload_percent != std::vector<std::int64_t>{100} &&
      std::find(choices.offload.begin(), choices.offload.end(), Offload::Optimizer) == choices.offload.end()) {
    if (std::find(offload.begin(), offload.end(), Offload::Optimizer) == offload.end()) {
      throw InputError("--offload-percent below 100 goes with --offload optimizer (the share of the optimizer on the host)");
    }
    choices.offload_percent = {100};
    note("--offload-percent dropped for " + strat + ": --offload optimizer was");
  }
  const bool block_scaled = rt.fp8.recipe == Fp8Recipe::Mxfp8;
  std::string no_fp8;
  if (rt.fp8.recipe == Fp8Recipe::None) {
    no_fp8 = "runtime " + rt.name + " runs no FP8 (its file gives no fp8_recipe)";
  } else if (strategy != Strategy::OneD) {
    no_fp8 = "fp8 is modelled for 1d tensor parallelism only";
  } else if (!((block_scaled ? s.matrix_flops_mxfp8 : s.matrix_flops_fp8) > 0)) {
    no_fp8 = "system " + s.name + " gives no " + (block_scaled ? "matrix_flops_mxfp8" : "matrix_flops_fp8");
  }
  if (!no_fp8.empty()) {
    const std::size_t before = choices.precision.size();
    std::erase_if(choices.precision, [](Precision p) { return p != Precision::Bf16; });
    if (choices.precision.empty()) {
      throw InputError("--precision fp8" + (strategy != Strategy::OneD ? " with --strat " + strat : "") + ": " + no_fp8);
    }
    if (choices.precision.size() != before) note("--precision fp8 dropped for " + strat + ": " + no_fp8);
  }
}

Searcher::Searcher(const SearchProblem& problem_in)
    : problem_(with_runtime_attention(problem_in)),
      batch_divisors_(divisors(problem_.global_batch)),
      block_(describe_block(problem_.model, problem_.attention)),
      dense_block_(describe_dense_block(problem_.model, problem_.attention)),
      cache_(new Cache) {
  cache_->choices.resize(search_dimensions().size());
  const std::vector<std::uint32_t> depends = search_dependencies();
  cache_->stale.assign(depends.size(), 0);
  for (std::size_t d = 0; d < depends.size(); ++d) {
    for (std::size_t j = d + 1; j < depends.size(); ++j) {
      if (depends[j] >> d & 1u) cache_->stale[d] |= 1u << j;
    }
  }
}

Searcher::~Searcher() { delete cache_; }

void Searcher::set_problem(const SearchProblem& problem) {
  if (problem.global_batch != problem_.global_batch) batch_divisors_ = divisors(problem.global_batch);
  problem_ = with_runtime_attention(problem);
  block_ = describe_block(problem_.model, problem_.attention);
  dense_block_ = describe_dense_block(problem_.model, problem_.attention);
}

Candidate Searcher::evaluate(std::int64_t n, const Layout& layout, bool& fits) {
  const SearchProblem& p = problem_;
  const System sys = at_scale(p.system, n);
  Candidate cand;
  cand.layout = layout;
  Layout& c = cand.layout;
  const BlockSummary block = cost_block(sys, p.model, c, block_, dense_block_, mlp_, sa_);
  compose_candidate(sys, p, splits_evenly(p.model, c.pp), block, stage_end_sums(sys, p.model, c), cand);
  // the capacity itself under the reference; with offload the host's memory too
  fits = !(cand.mem > memory_limit_gb(sys, p.runtime)) && fits_host(sys, cand.totals);
  return cand;
}

void Searcher::run(std::int64_t n, const TensorSplit& split, TopN& top, SearchCounters& counters) {
  const double capacity = problem_.system.hbm_capacity;
  run(n, split, std::span<const double>(&capacity, 1), std::span<TopN>(&top, 1),
      std::span<SearchCounters>(&counters, 1));
}

void Searcher::run(std::int64_t n, const TensorSplit& split, std::span<const double> capacities, std::span<TopN> tops,
                   std::span<SearchCounters> counters) {
  const SearchProblem& p = problem_;
  const System sys = at_scale(p.system, n);
  const bool reference = p.runtime.is_reference();
  const StateBytes* runtime_bytes = p.runtime.has_states ? &p.runtime.states : nullptr;
  const auto dims = search_dimensions();
  // What the dimensions count (pipelines rejected) happens once for all capacities.
  SearchCounters shared;
  const SearchContext context{p, n, batch_divisors_, shared};
  cache_->reset();
  // What each capacity lets the runtime allocate (the capacity itself under the reference).
  std::vector<double>& limits = cache_->limits;
  limits.resize(capacities.size());
  for (std::size_t i = 0; i < capacities.size(); ++i) {
    System at_capacity = sys;
    at_capacity.hbm_capacity = capacities[i];
    limits[i] = memory_limit_gb(at_capacity, p.runtime);  // the capacity itself under the reference
  }
  const double largest_capacity = *std::max_element(limits.begin(), limits.end());
  // A configuration that fits a capacity fits every larger one, and one that a full top-N at some
  // capacity turns away is turned away at every larger capacity too (whose top-N is chosen from
  // a superset of configurations, so its last entry ranks at least as high). Offered to the
  // capacities from the smallest up, a configuration stops at the first that turns it away.
  std::vector<std::size_t>& by_capacity = cache_->by_capacity;
  by_capacity.resize(capacities.size());
  std::iota(by_capacity.begin(), by_capacity.end(), std::size_t{0});
  std::stable_sort(by_capacity.begin(), by_capacity.end(),
                   [&](std::size_t a, std::size_t b) { return limits[a] < limits[b]; });

  Candidate cand;
  Layout& c = cand.layout;
  c = Layout{};
  c.strategy = p.strategy;
  c.tensor.tp1 = split.tp1;
  c.tensor.tp2 = split.tp2;
  c.tensor.cp = split.cp;
  c.attention = p.attention;
  apply_runtime(p.runtime, c.exec, c.attention);  // the framework's mechanisms, the same for every candidate
  const std::int64_t seqp = optimizer_shards_beyond_dp(plan_of(p.strategy), c);

  // The dimensions the nest walks: a dimension of one listed value (SearchDimension::listed) is set
  // here once and left out. Memory is checked after the last walked dimension that changes it.
  std::array<std::size_t, 32> walked{};
  std::size_t n_walked = 0, memory_checked_after = 0;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    // one value listed (not: one value here, where the option's rule reads outer dimensions not
    // set yet, as offload_percent's reads offload)
    if (dims[d].listed != nullptr && dims[d].listed->count(p.exec) == 1) {
      const std::vector<Choice>& values = cache_->values(d, context, c);
      dims[d].set(c, values.front());
      continue;
    }
    if (dims[d].changes_memory) memory_checked_after = n_walked;
    walked[n_walked++] = d;
  }

  // Configurations below `depth` of the walked dimensions (all of them infeasible once memory
  // says so).
  auto count_leaves = [&](auto& self, std::size_t depth) -> std::int64_t {
    if (depth == n_walked) return 1;
    const std::size_t d = walked[depth];
    const std::vector<Choice>& values = cache_->values(d, context, c);
    if (depth + 1 == n_walked) return static_cast<std::int64_t>(values.size());
    std::int64_t leaves = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
      dims[d].set(c, values[i]);
      cache_->changed(d);
      leaves += self(self, depth + 1);
    }
    return leaves;
  };

  // Whether the layout's pp splits the blocks evenly, worked out again only when pp changes.
  std::int64_t checked_pp = 0;
  bool even_split = true;
  auto splits_evenly_now = [&]() {
    if (c.pp != checked_pp) {
      checked_pp = c.pp;
      even_split = splits_evenly(p.model, c.pp);
    }
    return even_split;
  };

  // Whether the blocks alone fit the largest capacity (a stage's embedding or LM head only adds
  // memory, so this never drops a configuration that fits). An uneven split, not chosen yet,
  // has a stage of at least its share of the blocks (in whole groups of moe.every), which holds
  // at least one micro-batch's activations.
  const std::int64_t every = p.model.is_moe() ? p.model.moe.every : 1;
  auto fits_largest = [&]() {
    const BlockMemory& mem =
        cache_->memory.get({block_axis_codes(c, false), false, block_cost_codes(c.exec)},
                           [&] { return cost_block_memory(sys, p.model, c, block_, dense_block_); });
    const std::int64_t micro_batches = p.global_batch / c.dp / c.mbs;
    const bool even = splits_evenly_now();
    const std::int64_t groups = p.model.depth / every;
    const std::int64_t blocks = even ? p.model.depth / c.pp : (groups + c.pp - 1) / c.pp * every;
    const std::int64_t in_flight = even ? std::min(micro_batches, c.pp) : 1;
    double activations = mem.activations();
    if (!reference) [[unlikely]] {
      if (const std::optional<BlockActivations> a = runtime_block_activations(p.model, p.runtime, c)) {
        activations = a->sa + (p.model.is_moe() ? mem.mlp_activations : a->mlp);
      }
    }
    return !(step_memory(mem.weights(), activations, blocks, c.pp, c.dp, seqp, in_flight, c.exec, 0, 0,
                         mem.expert_weights, mem.whole_block_weights, runtime_bytes)
                 .total > largest_capacity);
  };

  auto leaf = [&]() {
    const BlockKey key{block_axis_codes(c), p.model.vocab_size > 0 && p.model.tie_embeddings && c.pp == 1,
                       block_cost_codes(c.exec)};
    const CostedBlock& costed = cache_->blocks.get(key, [&] {
      ++shared.module_evaluations;
      return CostedBlock{cost_block(sys, p.model, c, block_, dense_block_, mlp_, sa_), stage_end_sums(sys, p.model, c)};
    });
    compose_candidate(sys, p, splits_evenly_now(), costed.block, costed.ends, cand);
    for (SearchCounters& k : counters) ++k.candidates;
    if (!fits_host(sys, cand.totals)) [[unlikely]] {
      for (SearchCounters& k : counters) ++k.infeasible_memory;  // the host's memory, at every capacity
      return;
    }
    for (const std::size_t i : by_capacity) {
      if (cand.mem > limits[i]) {
        ++counters[i].infeasible_memory;
        continue;
      }
      // the one totals field a capacity changes: each capacity's configuration carries its own
      // limit, as evaluating it on that capacity's system gives (and --resume checks)
      cand.totals.mem_limit = limits[i];
      if (!tops[i].push(cand)) break;
    }
  };

  WalkPolicy policy{[&](std::size_t d, const Layout& layout) -> const std::vector<Choice>& {
                      return cache_->values(d, context, layout);
                    },
                    [&](std::size_t depth, std::size_t d, const Layout&) {
                      cache_->changed(d);
                      if (depth != memory_checked_after || fits_largest()) return true;
                      const std::int64_t skipped = count_leaves(count_leaves, depth + 1);
                      for (SearchCounters& k : counters) {
                        k.candidates += skipped;
                        k.infeasible_memory += skipped;
                      }
                      return false;
                    },
                    [&](const Layout&) { leaf(); }};
  walk_dimensions(dims, std::span<const std::size_t>(walked.data(), n_walked), c, policy);
  for (SearchCounters& k : counters) {
    k.pipelines_rejected_dp += shared.pipelines_rejected_dp;
    k.module_evaluations += shared.module_evaluations;
  }
}

TopN Searcher::run_all(std::int64_t n, SearchCounters& counters) {
  TopN top(problem_.top_n);
  for (const TensorSplit& s : tensor_splits(problem_, n, &counters)) run(n, s, top, counters);
  return top;
}

}  // namespace perfsweep
