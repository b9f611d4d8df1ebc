#include "search/search.hpp"

#include <algorithm>
#include <functional>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
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
  pruned_subtrees += o.pruned_subtrees;
  pruned_candidates += o.pruned_candidates;
  bound_exceeded += o.bound_exceeded;
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
// entries) and the execution options the block's cost reads (ExecutionOption::block_cost).
struct BlockKey {
  std::array<std::int64_t, kBlockCostAxes> axes{};  // block_axis_codes: mbs, nb and the tensor and expert shares
  bool ends_share_a_stage = false;  // a tied LM head on the embedding's stage (pp = 1)
  std::array<std::int64_t, kBlockCostOptions> options{};  // block_cost_codes
  bool operator==(const BlockKey&) const = default;
};

// FNV-1a over a key's integers.
class KeyHash {
 public:
  void mix(std::int64_t v) { h_ = (h_ ^ static_cast<std::uint64_t>(v)) * 0x100000001b3ull; }
  std::uint64_t value() const { return h_; }

 private:
  std::uint64_t h_ = 0xcbf29ce484222325ull;
};

std::uint64_t key_hash(const BlockKey& k) {
  KeyHash h;
  for (std::int64_t v : k.axes) h.mix(v);
  h.mix(std::int64_t{k.ends_share_a_stage});
  for (std::int64_t v : k.options) h.mix(v);
  return h.value();
}

// A subtree of the nest by its depth and the values of the outer dimensions that the dimensions at
// and below it depend on, directly or through each other (Searcher::run's leaf counts): every
// such subtree has as many leaves. A value is its index in its dimension's list, which the
// dimensions it depends on decide, all of them in the key.
struct SubtreeKey {
  static constexpr std::size_t kMaxOuter = 32;
  std::uint32_t depth = 0;
  std::uint32_t size = 0;  // indices used
  std::array<std::uint32_t, kMaxOuter> index{};
  bool operator==(const SubtreeKey& o) const {
    return depth == o.depth && size == o.size && std::equal(index.begin(), index.begin() + size, o.index.begin());
  }
};

std::uint64_t key_hash(const SubtreeKey& k) {
  KeyHash h;
  h.mix(k.depth);
  for (std::uint32_t i = 0; i < k.size; ++i) h.mix(k.index[i]);
  return h.value();
}

// An open-addressing table whose entries are invalidated by bumping a generation number.
template <typename Key, typename Value>
class KeyedCache {
 public:
  void reset() {
    ++generation_;
    used_ = 0;
  }

  // The value stored for key, computing it with make() on a miss (which may use this table: the
  // value is stored after it returns).
  template <typename Make>
  const Value& get(const Key& key, Make&& make) {
    if (auto [slot, found] = find(key); found) return slot->value;
    Value value = make();
    auto [slot, found] = find(key);
    slot->value = std::move(value);
    slot->key = key;
    slot->generation = generation_;
    ++used_;
    return slot->value;
  }

 private:
  struct Entry {
    Key key;
    std::uint32_t generation = 0;
    Value value;
  };
  std::vector<Entry> table_ = std::vector<Entry>(1 << 10);
  std::uint32_t generation_ = 1;
  std::size_t used_ = 0;

  static std::size_t slot_of(const Key& k, std::size_t mask) {
    return static_cast<std::size_t>((key_hash(k) * 0x9E3779B97F4A7C15ull) >> 32) & mask;
  }

  std::pair<Entry*, bool> find(const Key& key) {
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

// A node of the block trie (Searcher::run): a value of one of the nest's block dimensions below a
// micro-batch's node, and the fastest block below it.
struct BlockTrieNode {
  Choice value;
  double block_s = 0;  // the least block_pass_seconds of the blocks below
  std::uint32_t first = 0, count = 0;  // its children: trie[first, first + count)
};

struct Searcher::Cache {
  KeyedCache<BlockKey, CostedBlock> blocks;
  KeyedCache<BlockKey, BlockMemory> memory;
  KeyedCache<SubtreeKey, std::int64_t> leaf_counts;  // leaves of the subtrees skipped (prune)
  std::vector<std::vector<Choice>> choices;  // per dimension, reused
  std::uint32_t listed = 0;                  // bit per dimension: choices hold its values for the outer ones
  std::vector<std::uint32_t> depends;        // per dimension: the outer ones its values depend on (bits)
  std::vector<std::uint32_t> stale;          // per dimension: the inner dimensions whose values depend on it
  std::vector<std::size_t> by_capacity;      // capacity indices, smallest capacity first
  std::vector<double> limits;                // what the runtime can allocate at each capacity (GB)
  std::vector<BlockTrieNode> trie;           // the block trie of the current micro-batch's node
  std::vector<std::vector<Choice>> trie_values;  // per trie level, reused while it is built
  std::vector<std::vector<Choice>> floor_values;  // per depth, reused by the memory bound
  std::size_t mbs_dim = 0, interleave_dim = 0, schedule_dim = 0;  // indices in search_dimensions()

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
    leaf_counts.reset();
    listed = 0;
  }
};

namespace {
// The problem with the runtime's attention (a runtime without flash attention describes its
// blocks with the unfused core) and its values of the options left to it (the rank order).
SearchProblem with_runtime_attention(SearchProblem p) {
  p.attention = runtime_attention(p.runtime, p.attention);
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
  if (!even && p.runtime.mechanisms.stage_partition == StagePartition::Even) [[unlikely]] {
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

namespace {
// The values of one option list that the strategy, runtime and system run (model/layout_rules.hpp
// choice_refusal, a value set on `probe`), the others dropped with a note each; InputError with
// the first value's reason where none is left.
template <typename T, typename Set, typename Name>
void drop_refused(std::vector<T>& values, RuleSubject subject, const char* flag, const RuleInputs& in, Layout& probe,
                  Set set, Name name, const std::string& strat, const std::function<void(const std::string&)>& note) {
  std::vector<T> kept;
  std::string refused, first_reason;
  std::vector<std::string> lines;
  for (const T& v : values) {
    set(probe, v);
    const std::string reason = choice_refusal(subject, in);
    if (reason.empty()) {
      kept.push_back(v);
      continue;
    }
    refused += std::string(refused.empty() ? "" : ",") + name(v);
    if (first_reason.empty()) first_reason = reason;
    lines.push_back(std::string(flag) + " " + name(v) + " dropped for " + strat + ": " + reason);
  }
  if (kept.empty() && !values.empty()) throw InputError(std::string(flag) + " " + refused + " with --strat " + strat + ": " + first_reason);
  for (const std::string& line : lines) note(line);
  values = std::move(kept);
}
}  // namespace

void check_runtime_choices(const System& s, const Runtime& rt, Strategy strategy, ExecutionChoices& choices,
                           std::vector<std::string>* dropped) {
  check_capacity(s, rt);
  const std::string strat = plan_of(strategy).name;
  if (!rt.runs(strategy)) {
    throw StrategyNotRunError("runtime " + rt.name + " does not run strategy " + strat +
                              " (use --runtime reference for the paper's model of it)");
  }
  const std::function<void(const std::string&)> note = [&](const std::string& line) {
    if (dropped != nullptr) dropped->push_back(line);
  };
  fill_runtime_defaults(rt, choices);
  // One option's value at a time on a layout of the strategy with the runtime's mechanisms: the
  // rules of that option (model/layout_rules.cpp) decide it.
  Layout probe;
  probe.strategy = strategy;
  probe.attention = runtime_attention(rt, probe.attention);
  const RuleInputs in{&s, nullptr, &rt, &probe, 0};
  auto number = [](std::int64_t v) { return std::to_string(v); };
  auto enum_name = [](const auto& names) {
    return [&names](auto v) { return std::string(names[static_cast<std::size_t>(v)]); };
  };
  drop_refused(choices.zero, RuleSubject::Zero, "--zero", in, probe, [](Layout& l, std::int64_t z) { l.exec.zero = z; },
               number, strat, note);
  probe.exec.zero = choices.zero.front();
  drop_refused(choices.sequence_parallel, RuleSubject::SequenceParallel, "--sp", in, probe,
               [](Layout& l, bool on) { l.exec.sequence_parallel = on; },
               [](bool on) { return std::string(on ? "on" : "off"); }, strat, note);
  probe.exec.sequence_parallel = choices.sequence_parallel.front();
  drop_refused(choices.recompute, RuleSubject::Recompute, "--recompute", in, probe,
               [](Layout& l, Recompute r) { l.exec.recompute = r; }, [](Recompute r) { return recompute_name(r); },
               strat, note);
  probe.exec.recompute = choices.recompute.front();
  drop_refused(choices.cp, RuleSubject::ContextParallel, "--cp", in, probe,
               [](Layout& l, std::int64_t cp) { l.tensor.cp = cp; }, number, strat, note);
  if (std::any_of(choices.cp.begin(), choices.cp.end(), [](std::int64_t v) { return v > 1; })) {
    probe.tensor.cp = *std::max_element(choices.cp.begin(), choices.cp.end());
    drop_refused(choices.cp_comm, RuleSubject::CpComm, "--cp-comm", in, probe,
                 [](Layout& l, CpComm k) { l.exec.cp_comm = k; }, enum_name(kCpCommNames), strat, note);
  }
  probe.tensor.cp = 1;
  // Offload: what the runtime offloads, on a system with a host link (weights with ZeRO-3 is the
  // search's offload_values); none always stays.
  const std::vector<Offload> offload = choices.offload;
  drop_refused(choices.offload, RuleSubject::Offload, "--offload", in, probe,
               [](Layout& l, Offload k) { l.exec.offload = k; }, enum_name(kOffloadNames), strat, note);
  probe.exec.offload = Offload::None;
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
  drop_refused(choices.precision, RuleSubject::Precision, "--precision", in, probe,
               [](Layout& l, Precision p) { l.exec.precision = p; }, enum_name(kPrecisionNames), strat, note);
  probe.exec.precision = Precision::Bf16;
  drop_refused(choices.tp_comm_overlap, RuleSubject::TpCommOverlap, "--tp-comm-overlap", in, probe,
               [](Layout& l, bool on) { l.exec.tp_comm_overlap = on; },
               [](bool on) { return std::string(on ? "on" : "off"); }, strat, note);
}

Searcher::Searcher(const SearchProblem& problem_in)
    : problem_(with_runtime_attention(problem_in)),
      batch_divisors_(divisors(problem_.global_batch)),
      block_(describe_block(problem_.model, problem_.attention)),
      dense_block_(describe_dense_block(problem_.model, problem_.attention)),
      cache_(new Cache) {
  cache_->choices.resize(search_dimensions().size());
  cache_->trie_values.resize(search_dimensions().size());
  cache_->floor_values.resize(search_dimensions().size());
  cache_->mbs_dim = search_dimension_index("mbs");
  cache_->interleave_dim = search_dimension_index("interleave");
  cache_->schedule_dim = search_dimension_index("schedule");
  cache_->depends = search_dependencies();
  const std::vector<std::uint32_t>& depends = cache_->depends;
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
  const Mechanisms& mech = p.runtime.mechanisms;
  const BlockSummary block = cost_block(sys, p.model, c, mech, block_, dense_block_, mlp_, sa_);
  compose_candidate(sys, p, splits_evenly(p.model, c.pp), block, stage_end_sums(sys, p.model, c, mech), cand);
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
  c.attention = p.attention;  // the runtime's (with_runtime_attention)
  const Mechanisms& mech = p.runtime.mechanisms;  // the framework's, the same for every candidate
  const std::int64_t seqp = parallel_grid(c).group(without(plan_of(p.strategy).replicas, grid_axes("dp"))).size;

  // The dimensions the nest walks: a dimension of one listed value (SearchDimension::listed) is set
  // here once and left out. Memory is checked after the last walked dimension that changes it.
  constexpr std::size_t kNotWalked = ~std::size_t{0};
  std::array<std::size_t, 32> walked{};
  std::array<std::size_t, 32> position{};  // per dimension: its depth in the nest, or kNotWalked
  position.fill(kNotWalked);
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
    position[d] = n_walked;
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

  // The value each depth of the walk holds now.
  std::array<const Choice*, 32> chosen{};
  // Per depth, the outer depths whose values the dimensions at and below it depend on, directly
  // or through each other (bits): a subtree's leaves depend on those alone, so the pruned search
  // counts each kind once (SubtreeKey) and a skipped subtree still counts in `candidates` without
  // being walked. The count of each depth is kept until one of those outer depths changes.
  std::array<std::uint32_t, 33> outer_of{};
  std::array<std::uint64_t, 32> recount{};  // per depth: the depths whose count its value changes
  for (std::size_t depth = 0; depth <= n_walked; ++depth) {
    for (std::size_t j = depth; j < n_walked; ++j) {
      for (std::size_t k = 0; k < depth; ++k) {
        if (cache_->depends[walked[j]] >> walked[k] & 1u) outer_of[depth] |= 1u << k;
      }
    }
    for (std::size_t k = depth; k-- > 0;) {  // what decides their lists, innermost first
      if (!(outer_of[depth] >> k & 1u)) continue;
      for (std::size_t j = 0; j < k; ++j) {
        if (cache_->depends[walked[k]] >> walked[j] & 1u) outer_of[depth] |= 1u << j;
      }
    }
    for (std::size_t k = 0; k < depth; ++k) {
      if (outer_of[depth] >> k & 1u) recount[k] |= std::uint64_t{1} << depth;
    }
  }
  std::array<std::int64_t, 33> counts{};
  std::uint64_t counted = 0;  // bit per depth: counts[depth] holds for the walk's values now
  auto counted_leaves = [&](auto& self, std::size_t depth) -> std::int64_t {
    if (depth == n_walked) return 1;
    if (counted >> depth & 1u) return counts[depth];
    const std::size_t d = walked[depth];
    if (!(recount[depth] >> (depth + 1))) {
      // nothing below depends on this dimension's value: each of its values has as many below
      const auto here = static_cast<std::int64_t>(cache_->values(d, context, c).size());
      counts[depth] = here == 0 ? 0 : here * self(self, depth + 1);
      counted |= std::uint64_t{1} << depth;
      return counts[depth];
    }
    SubtreeKey key;
    key.depth = static_cast<std::uint32_t>(depth);
    for (std::size_t k = 0; k < depth; ++k) {
      if (!(outer_of[depth] >> k & 1u)) continue;
      key.index[key.size++] = static_cast<std::uint32_t>(chosen[k] - cache_->choices[walked[k]].data());
    }
    counts[depth] = cache_->leaf_counts.get(key, [&] {
      const std::vector<Choice>& values = cache_->values(d, context, c);
      std::int64_t leaves = 0;
      for (std::size_t i = 0; i < values.size(); ++i) {
        dims[d].set(c, values[i]);
        cache_->changed(d);
        chosen[depth] = &values[i];
        counted &= ~recount[depth];
        leaves += self(self, depth + 1);
      }
      return leaves;
    });
    counted |= std::uint64_t{1} << depth;
    return counts[depth];
  };
  // The exhaustive search walks them (as it always has).
  auto leaves_below = [&](std::size_t depth) {
    return p.prune ? counted_leaves(counted_leaves, depth) : count_leaves(count_leaves, depth);
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
  auto block_memory_of = [&](const Layout& l) -> const BlockMemory& {
    return cache_->memory.get({block_axis_codes(l, false), false, block_cost_codes(l.exec)},
                              [&] { return cost_block_memory(sys, p.model, l, mech, block_, dense_block_); });
  };
  // A block's saved activations (GB) as the runtime accounts them.
  auto block_activations = [&](const Layout& l, const BlockMemory& mem) {
    if (!reference) [[unlikely]] {
      if (const std::optional<BlockActivations> a = runtime_block_activations(p.model, p.runtime, l)) {
        return a->sa + (p.model.is_moe() ? mem.mlp_activations : a->mlp);
      }
    }
    return mem.activations();
  };
  // The stage's blocks it checks.
  auto blocks_alone = [&]() {
    const std::int64_t groups = p.model.depth / every;
    return splits_evenly_now() ? p.model.depth / c.pp : (groups + c.pp - 1) / c.pp * every;
  };
  auto fits_largest = [&]() {
    const BlockMemory mem = least_stage_memory(block_memory_of(c), blocks_alone());
    const std::int64_t micro_batches = p.global_batch / c.dp / c.mbs;
    const std::int64_t in_flight = splits_evenly_now() ? std::min(micro_batches, c.pp) : 1;
    return !(step_memory(mem.weights(), block_activations(c, mem), blocks_alone(), c.pp, c.dp, seqp, in_flight, c.exec,
                         0, 0, mem.expert_weights, mem.whole_block_weights, runtime_bytes, expert_tensor_replicas(c))
                 .total > largest_capacity);
  };

  // The block of a layout, costed once per key.
  auto costed_block = [&](const Layout& l) -> const CostedBlock& {
    const BlockKey key{block_axis_codes(l), p.model.vocab_size > 0 && p.model.tie_embeddings && l.pp == 1,
                       block_cost_codes(l.exec)};
    return cache_->blocks.get(key, [&] {
      ++shared.module_evaluations;
      return CostedBlock{cost_block(sys, p.model, l, mech, block_, dense_block_, mlp_, sa_),
                         stage_end_sums(sys, p.model, l, mech)};
    });
  };

  // The step-time bound (model/step.hpp step_seconds_lower_bound): below a node, no step is faster
  // than the fastest block any of its leaves can have, for every micro-batch on the fullest stage
  // (and 1F1B's bubble where no other schedule is left). Where that cannot reach the throughput
  // every top-N turns away below, the subtree is skipped. The fastest block comes from the block
  // trie: the nest's dimensions below the micro-batch that change the block (and those their
  // values depend on), walked once per micro-batch's node with the search's own values, each node
  // keeping the least block_pass_seconds below it.
  //
  // Why the top-N lists come out as the exhaustive walk's, bit for bit. Take a leaf L below a
  // node N that the bound skips, with N's bound B (s), the global batch G and admission A (the
  // least admission_throughput of the lists when N is skipped), so G / B < A.
  //  1. L's block is one the trie holds below N's path: the trie walks every value of every
  //     dimension that changes the block (BlockKey: SearchDimension::changes_block) below N, with
  //     the lists the nest itself lists (the dimensions those lists depend on are in the trie or
  //     set above N); the other dimensions leave the block as it is. So b = N's block_s is at most
  //     L's block pass p, the sum (mlp.t_fwd + sa.t_fwd) + (mlp.t_bwd + sa.t_bwd) of the block
  //     compose_step composes (runtime_view: the tensor-parallel overlap, as block_pass_seconds).
  //  2. L's step t is its slowest costed stage's time, and compose_step costs the stage with the
  //     most blocks k (even split: the first; uneven: first, a middle one and the last). k is at
  //     least K = fullest_stage_blocks: depth / pp where pp splits evenly; else the balanced
  //     partition's whole groups of moe.every (pigeonhole: one stage has ceil(groups / pp)), the
  //     slotted partition's ceil(depth / pp) (interleave_values allows it for moe.every = 1 only,
  //     where the two agree), or the nanotron partition's largest stage, fixed by pp.
  //  3. stage_totals gives that stage t_s = p k m + (end layers, transfers, offload, host floor,
  //     bubble, data-parallel communication, optimizer), every term >= 0, m the micro-batches;
  //     1F1B's bubble is (pp - 1) / V of t_s / m >= p k each. Where the schedule is not chosen at
  //     N, the bubble counts only if no other schedule can come below N: schedule_values gives
  //     others only with pp > 1 and V = 1, and V = 1 may come below a node above the
  //     interleaving's; where V is not chosen, the most listed V gives the least 1F1B bubble.
  //     So t >= t_s >= b K (m + slots) >= B: step_seconds_lower_bound less 1e-9 relative, far
  //     above the few roundings by which the sums differ from this product.
  //  4. L's throughput G / t (compose_candidate) <= G / B < A, division being monotone under
  //     rounding. Every list i turns away a candidate of throughput below its own
  //     admission_throughput >= A (below its floor's or its full list's last: ranks_before orders
  //     by throughput first), and a list that turns one away is unchanged. A only grows as the
  //     lists fill (a full list's last and the floor only rise), so A when L would have come is
  //     >= A at N. Skipping L therefore leaves every list as pushing it would, and the leaves
  //     after it see the same lists.
  // The counters differ only in what a skipped subtree is counted as: `candidates` the same (its
  // leaves counted), `pruned_candidates` instead of feasible or over the memory (never checked).
  // The leaf checks step 3 on every step it costs (bound_exceeded).
  // The fullest stage's blocks, worked out again when pp changes.
  std::int64_t fullest_blocks = 0;
  // the tensor-parallel overlap of the listed layouts' fastest block (a bound over both values)
  const double tp_hidden = least_tp_comm_hidden(p.runtime, p.exec);
  std::array<bool, 32> in_trie{};
  std::array<std::size_t, 32> trie_depths{};  // the trie's levels: depths of the nest
  std::size_t trie_levels = 0;
  const std::size_t mbs_depth = position[cache_->mbs_dim];
  for (std::size_t k = n_walked; k-- > mbs_depth + 1;) {
    if (dims[walked[k]].changes_block) in_trie[k] = true;
    if (!in_trie[k]) continue;
    for (std::size_t j = mbs_depth + 1; j < k; ++j) {
      if (cache_->depends[walked[k]] >> walked[j] & 1u) in_trie[j] = true;
    }
  }
  for (std::size_t k = mbs_depth + 1; k < n_walked; ++k) {
    if (in_trie[k]) trie_depths[trie_levels++] = k;
  }
  std::vector<BlockTrieNode>& trie = cache_->trie;
  constexpr std::uint32_t kNoNode = ~std::uint32_t{0};
  std::array<std::uint32_t, 32> cursor{};  // per depth from mbs_depth: the trie node of the walk's path
  bool trie_built = false;
  auto fill_trie = [&](auto& self, std::uint32_t node, std::size_t level, Layout& s) -> double {
    if (level == trie_levels) return block_pass_seconds(tp_hidden, costed_block(s).block, fullest_blocks);
    const std::size_t d = walked[trie_depths[level]];
    std::vector<Choice>& values = cache_->trie_values[level];
    values.clear();
    dims[d].values(context, s, values);
    const auto first = static_cast<std::uint32_t>(trie.size());
    trie.resize(trie.size() + values.size());
    trie[node].first = first;
    trie[node].count = static_cast<std::uint32_t>(values.size());
    double least = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < values.size(); ++i) {
      dims[d].set(s, values[i]);
      const std::uint32_t child = first + static_cast<std::uint32_t>(i);
      const double block_s = self(self, child, level + 1, s);
      trie[child].value = values[i];
      trie[child].block_s = block_s;
      least = std::min(least, block_s);
    }
    return least;
  };
  // The trie node below `parent` of the value the walk holds at `depth` (kNoNode where the trie
  // has none: the bound is then left out below).
  auto trie_step = [&](std::uint32_t parent, std::size_t depth) -> std::uint32_t {
    if (parent == kNoNode || !in_trie[depth]) return parent;
    const BlockTrieNode& node = trie[parent];
    for (std::uint32_t i = node.first; i < node.first + node.count; ++i) {
      if (trie[i].value.v == chosen[depth]->v) return i;
    }
    return kNoNode;
  };
  // Built where a bound can first prune below a micro-batch's node, its path replayed to `depth`.
  auto build_trie = [&](std::size_t depth) {
    trie.clear();
    trie.emplace_back();
    Layout scratch = c;
    trie[0].block_s = fill_trie(fill_trie, 0, 0, scratch);
    cursor[mbs_depth] = 0;
    for (std::size_t k = mbs_depth + 1; k <= depth; ++k) cursor[k] = trie_step(cursor[k - 1], k);
    trie_built = true;
  };
  const std::size_t interleave_depth = position[cache_->interleave_dim];
  const std::size_t schedule_depth = position[cache_->schedule_dim];
  const std::int64_t most_interleave = *std::max_element(p.exec.interleave.begin(), p.exec.interleave.end());
  const bool other_schedules = std::any_of(p.exec.schedule.begin(), p.exec.schedule.end(),
                                           [](PipelineSchedule s) { return s != PipelineSchedule::OneFOneB; });
  // The bound (s) at `depth`: the interleaving and schedule chosen there or, not yet, the most
  // virtual stages and no bubble where a schedule other than 1F1B may still come (schedule_values:
  // with pp > 1 and no interleaving, which a node above the interleaving's still has below it).
  auto step_bound = [&](std::size_t depth) {
    const bool interleave_set = interleave_depth == kNotWalked || interleave_depth <= depth;
    const bool schedule_set = schedule_depth == kNotWalked || schedule_depth <= depth;
    const std::int64_t interleave = interleave_set ? c.exec.interleave : most_interleave;
    const bool one_interleave_below = !interleave_set || c.exec.interleave == 1;
    const bool one_f_one_b = schedule_set ? c.exec.schedule == PipelineSchedule::OneFOneB
                                          : !(other_schedules && c.pp > 1 && one_interleave_below);
    return step_seconds_lower_bound(trie[cursor[depth]].block_s, p.global_batch / c.dp / c.mbs, fullest_blocks, c.pp,
                                    interleave, one_f_one_b);
  };
  // The memory bound, below the pipeline's node and the micro-batch's: the least blocks-alone
  // memory fits_largest can find there. Each block quantity it reads (weights, saved activations,
  // the experts' weights, ZeRO-3's whole block) at its least over the blocks below (the nest's
  // dimensions from the micro-batch on that change both the block and memory, and those their
  // values depend on, walked with their own values), every listed ZeRO stage, parameter layout,
  // offload and ep tried with the largest offload share, the experts' most replicas over the
  // tensor group (tp1 / etp at the least listed etp), and interleaving, the schedule and the
  // micro-batches in flight at their least (1, 1F1B, 1; each only multiplies memory, DualPipe's
  // states by 2 and zero-bubble activations by factors >= 1). Of the execution, step_memory reads
  // only those (zero, params, ep, offload, offload_percent, interleave, schedule), and grows with
  // each block quantity (the experts' weights too: per_gpu = w / shards + experts (ep - 1) /
  // shards), the in-flight count, and falls with the offload share; the saved activations under
  // a runtime read the micro-batch, recomputation, sp and precision, floor dimensions all. So where
  // even that exceeds the largest capacity, fits_largest turns away every configuration below,
  // and the subtree counts as over the memory, as the exhaustive walk counts it.
  std::array<bool, 32> in_floor{};
  for (std::size_t k = n_walked; k-- > mbs_depth;) {
    const SearchDimension& dim = dims[walked[k]];
    if (k == mbs_depth || (dim.changes_block && dim.changes_memory)) in_floor[k] = true;
    if (!in_floor[k]) continue;
    for (std::size_t j = mbs_depth; j < k; ++j) {
      if (cache_->depends[walked[k]] >> walked[j] & 1u) in_floor[j] = true;
    }
  }
  struct BlockFloors {
    double weights = std::numeric_limits<double>::infinity(), activations = weights, experts = weights,
           whole = weights;
  };
  auto floor_blocks = [&](auto& self, std::size_t depth, Layout& s, BlockFloors& f) -> void {
    while (depth < n_walked && !in_floor[depth]) ++depth;
    if (depth == n_walked) {
      const BlockMemory mem = least_stage_memory(block_memory_of(s), blocks_alone());
      f.weights = std::min(f.weights, mem.weights());
      f.activations = std::min(f.activations, block_activations(s, mem));
      f.experts = std::min(f.experts, mem.expert_weights);
      f.whole = std::min(f.whole, mem.whole_block_weights > 0 ? mem.whole_block_weights : mem.weights());
      return;
    }
    const std::size_t d = walked[depth];
    std::vector<Choice>& values = cache_->floor_values[depth];
    values.clear();
    dims[d].values(context, s, values);
    for (std::size_t i = 0; i < values.size(); ++i) {
      dims[d].set(s, values[i]);
      self(self, depth + 1, s, f);
    }
  };
  const std::int64_t most_offload_percent =
      *std::max_element(p.exec.offload_percent.begin(), p.exec.offload_percent.end());
  std::int64_t most_expert_replicas = 1;
  for (const std::int64_t etp : p.exec.etp) {
    if (etp > 0 && c.tensor.tp1 % etp == 0) most_expert_replicas = std::max(most_expert_replicas, c.tensor.tp1 / etp);
  }
  const std::vector<ParamLayout> own_layout{c.exec.params};
  const std::vector<ParamLayout>& layouts = runtime_bytes != nullptr ? own_layout : p.exec.params;
  // GB at the node at `depth` (the pipeline's, 0, or the micro-batch's); 0 where nothing lies below.
  auto memory_floor = [&](std::size_t depth) {
    BlockFloors f;
    Layout scratch = c;
    floor_blocks(floor_blocks, depth + 1, scratch, f);
    if (!(f.weights < std::numeric_limits<double>::infinity())) return 0.0;
    const std::int64_t in_flight =
        depth == mbs_depth && splits_evenly_now() ? std::min(p.global_batch / c.dp / c.mbs, c.pp) : 1;
    Execution x = c.exec;
    x.interleave = 1;
    x.schedule = PipelineSchedule::OneFOneB;
    x.offload_percent = most_offload_percent;
    double least = std::numeric_limits<double>::infinity();
    for (const std::int64_t zero : p.exec.zero) {
      for (const ParamLayout params : layouts) {
        for (const Offload offload : p.exec.offload) {
          for (const std::int64_t ep : p.exec.ep) {
            x.zero = zero;
            x.params = params;
            x.offload = offload;
            x.ep = ep;
            least = std::min(least, step_memory(f.weights, f.activations, blocks_alone(), c.pp, c.dp, seqp, in_flight,
                                                x, 0, 0, f.experts, f.whole, runtime_bytes, most_expert_replicas)
                                        .total);
          }
        }
      }
    }
    return least;
  };
  // The least throughput every top-N keeps (0 while any keeps all): updated as they fill.
  auto least_admitted = [&]() {
    double t = std::numeric_limits<double>::infinity();
    for (const TopN& top : tops) t = std::min(t, top.admission_throughput());
    return t;
  };
  double admission = least_admitted();
  const auto global_batch = static_cast<double>(p.global_batch);
  auto skip = [&](std::int64_t leaves, bool pruned) {
    for (SearchCounters& k : counters) {
      k.candidates += leaves;
      if (pruned) {
        ++k.pruned_subtrees;
        k.pruned_candidates += leaves;
      } else {
        k.infeasible_memory += leaves;
      }
    }
  };
  // Whether the bound turns away the subtree at `depth` (the trie built or followed first).
  auto bound_prunes = [&](std::size_t depth) {
    if (depth < mbs_depth) return false;
    if (depth == mbs_depth) trie_built = false;  // another micro-batch's node
    if (trie_built) {
      if (depth > mbs_depth) cursor[depth] = trie_step(cursor[depth - 1], depth);
    } else if (admission > 0) {
      build_trie(depth);
    }
    if (!(admission > 0) || cursor[depth] == kNoNode) return false;
    const double bound = step_bound(depth);
    // an empty subtree's bound is infinite: nothing to skip
    return bound < std::numeric_limits<double>::infinity() && global_batch / bound < admission;
  };

  auto leaf = [&]() {
    const CostedBlock& costed = costed_block(c);
    compose_candidate(sys, p, splits_evenly_now(), costed.block, costed.ends, cand);
    for (SearchCounters& k : counters) ++k.candidates;
    // the bound checked against every step it lets through
    if (cand.totals.t < step_seconds_lower_bound(block_pass_seconds(tp_hidden, costed.block, fullest_blocks),
                                                 p.global_batch / c.dp / c.mbs, fullest_blocks, c.pp,
                                                 c.exec.interleave,
                                                 c.exec.schedule == PipelineSchedule::OneFOneB)) [[unlikely]] {
      for (SearchCounters& k : counters) ++k.bound_exceeded;
    }
    if (!fits_host(sys, cand.totals)) [[unlikely]] {
      for (SearchCounters& k : counters) ++k.infeasible_memory;  // the host's memory, at every capacity
      return;
    }
    bool kept = false;
    for (const std::size_t i : by_capacity) {
      if (cand.mem > limits[i]) {
        ++counters[i].infeasible_memory;
        continue;
      }
      // the one totals field a capacity changes: each capacity's configuration carries its own
      // limit, as evaluating it on that capacity's system gives (and --resume checks)
      cand.totals.mem_limit = limits[i];
      if (!tops[i].push(cand)) break;
      kept = true;
    }
    if (kept && p.prune) admission = least_admitted();
  };

  WalkPolicy policy{[&](std::size_t d, const Layout& layout) -> const std::vector<Choice>& {
                      return cache_->values(d, context, layout);
                    },
                    [&](std::size_t depth, std::size_t d, const Choice& value, const Layout&) {
                      cache_->changed(d);
                      chosen[depth] = &value;
                      counted &= ~recount[depth];
                      if (depth == 0) fullest_blocks = fullest_stage_blocks(p.model, c.pp, mech.stage_partition);
                      if (p.prune && (depth == 0 || depth == mbs_depth) && memory_floor(depth) > largest_capacity) {
                        skip(leaves_below(depth + 1), false);
                        return false;
                      }
                      if (p.prune && bound_prunes(depth)) {
                        skip(leaves_below(depth + 1), true);
                        return false;
                      }
                      if (depth != memory_checked_after || fits_largest()) return true;
                      skip(leaves_below(depth + 1), false);
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

double least_tp_comm_hidden(const Runtime& rt, const ExecutionChoices& choices) {
  const bool any_on = std::find(choices.tp_comm_overlap.begin(), choices.tp_comm_overlap.end(), true) !=
                      choices.tp_comm_overlap.end();
  return tp_comm_hidden(rt, any_on);
}

}  // namespace perfsweep
