#include "search/search.hpp"

#include <algorithm>
#include <array>

#include "core/error.hpp"
#include "search/candidates.hpp"

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
  std::vector<TensorSplit> out;
  SearchCounters local;
  for (std::int64_t tp1 : divisors(n)) {
    if (m.h % tp1 || m.e % tp1) continue;
    if (p.strategy == Strategy::OneD) {
      if ((3 * m.e) / tp1 < 128) {
        ++local.tensor_splits_too_thin;
        continue;
      }
      out.push_back({tp1, 1, 1, 1, 1});
      continue;
    }
    for (std::int64_t tp2 : divisors(n / tp1)) {
      if (p.strategy == Strategy::TwoD && m.e % tp2) continue;
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

// Block summaries of one tensor split, keyed by every input of the block that varies inside the
// split: micro-batch, SUMMA nb and the tensor groups' NVLink placement. An open-addressing table
// whose entries are invalidated by bumping a generation number.
struct Searcher::Cache {
  struct Key {
    std::int64_t mbs = 0, nb = 0, nv1 = 0, nv2 = 0;
    bool operator==(const Key&) const = default;
  };
  struct Entry {
    Key key;
    std::uint32_t generation = 0;
    BlockSummary block;
  };
  std::vector<Entry> table = std::vector<Entry>(1 << 12);
  std::uint32_t generation = 1;
  std::size_t used = 0;

  void reset() {
    ++generation;
    used = 0;
  }

  static std::uint64_t hash(const Key& k) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (std::int64_t v : {k.mbs, k.nb, k.nv1, k.nv2}) h = (h ^ static_cast<std::uint64_t>(v)) * 0x100000001b3ull;
    return h * 0x9E3779B97F4A7C15ull;
  }

  // Returns the slot for key and whether it holds a valid block.
  std::pair<Entry*, bool> find(const Key& key) {
    if (2 * (used + 1) > table.size()) grow();
    const std::size_t mask = table.size() - 1;
    std::size_t i = static_cast<std::size_t>(hash(key) >> 32) & mask;
    while (true) {
      Entry& e = table[i];
      if (e.generation != generation) return {&e, false};
      if (e.key == key) return {&e, true};
      i = (i + 1) & mask;
    }
  }

  void insert(Entry* e, const Key& key, const BlockSummary& block) {
    e->key = key;
    e->generation = generation;
    e->block = block;
    ++used;
  }

  void grow() {
    std::vector<Entry> old;
    old.swap(table);
    table.assign(old.size() * 2, Entry{});
    const std::uint32_t gen = generation;
    used = 0;
    for (const Entry& e : old) {
      if (e.generation != gen) continue;
      auto [slot, found] = find(e.key);
      if (!found) insert(slot, e.key, e.block);
    }
  }
};

Searcher::Searcher(const SearchProblem& problem)
    : problem_(problem),
      batch_divisors_(divisors(problem.global_batch)),
      block_(describe_block(problem.model, problem.attention)),
      cache_(new Cache) {}

Searcher::~Searcher() { delete cache_; }

void Searcher::set_problem(const SearchProblem& problem) {
  if (problem.global_batch != problem_.global_batch) batch_divisors_ = divisors(problem.global_batch);
  problem_ = problem;
  block_ = describe_block(problem.model, problem.attention);
}

void Searcher::run(std::int64_t n, const TensorSplit& split, TopN& top, SearchCounters& counters) {
  const SearchProblem& p = problem_;
  const Transformer& m = p.model;
  const System& sys = p.system;
  const std::int64_t G = p.global_batch;
  const std::int64_t nvs = sys.nvlink_size;
  const std::int64_t tp1 = split.tp1, tp2 = split.tp2, tp = tp1 * tp2;
  const bool one_d = p.strategy == Strategy::OneD;
  const std::int64_t tokens_over = token_split(plan_of(p.strategy), split);

  std::array<std::int64_t, 64> nbs{};
  std::size_t n_nb = 0;
  if (p.strategy == Strategy::TwoD) {
    for_each_summa_nb(tp1, tp2, m.e, [&](std::int64_t nb) {
      if (n_nb == nbs.size()) throw ConfigError("more than 64 SUMMA block counts");
      nbs[n_nb++] = nb;
    });
  } else {
    nbs[n_nb++] = 1;
  }
  cache_->reset();

  Candidate cand;
  cand.layout.strategy = p.strategy;
  cand.layout.tensor.tp1 = tp1;
  cand.layout.tensor.tp2 = tp2;
  cand.layout.attention = p.attention;

  const std::int64_t max_pp = std::min(n / tp, m.depth);
  for (std::int64_t pp = 1; pp <= max_pp; ++pp) {
    if (max_pp % pp || n % (tp * pp) || m.depth % pp) continue;
    const std::int64_t dp = n / (tp * pp);
    if (dp > G || G % dp) {
      ++counters.pipelines_rejected_dp;
      continue;
    }
    const std::int64_t local_batch = G / dp;
    for (std::size_t mi = 0; mi < batch_divisors_.size(); ++mi) {
      const std::int64_t mbs = batch_divisors_[mi];
      if (mbs > local_batch) break;
      if (local_batch % mbs || (mbs * m.l) % tokens_over) continue;
      for (std::size_t ni = 0; ni < n_nb; ++ni) {
        auto visit = [&](std::int64_t nv1, std::int64_t nv2, std::int64_t nv_dp, std::int64_t nv_pp) {
          ++counters.candidates;
          const Cache::Key key{mbs, nbs[ni], nv1, nv2};
          auto [slot, found] = cache_->find(key);
          if (!found) {
            const double p2p = build_block(sys, p.strategy, block_, mbs, m, {tp1, tp2, nv1, nv2, nbs[ni]}, p.attention,
                                           mlp_, sa_);
            cache_->insert(slot, key, summarize(mlp_, sa_, p2p));
            ++counters.module_evaluations;
          }
          Layout& l = cand.layout;
          l.dp = dp;
          l.pp = pp;
          l.mbs = mbs;
          l.tensor.nb = nbs[ni];
          l.tensor.nv1 = nv1;
          l.tensor.nv2 = nv2;
          l.nv_dp = nv_dp;
          l.nv_pp = nv_pp;
          const Totals totals = compose_step(sys, m, l, slot->block, G).totals;
          if (totals.mem > sys.hbm_capacity) {
            ++counters.infeasible_memory;
            return;
          }
          const double throughput = static_cast<double>(G) / totals.t;
          if (!top.admits(throughput)) return;
          cand.throughput = throughput;
          cand.mem = totals.mem;
          cand.totals = totals;
          top.push(cand);
        };
        if (one_d) {
          for_each_nv_1d(tp1, dp, pp, nvs,
                         [&](std::int64_t a, std::int64_t b, std::int64_t c) { visit(a, 1, b, c); });
        } else {
          for_each_nv_2d(tp1, tp2, dp, pp, nvs, visit);
        }
      }
    }
  }
}

TopN Searcher::run_all(std::int64_t n, SearchCounters& counters) {
  TopN top(problem_.top_n);
  for (const TensorSplit& s : tensor_splits(problem_, n, &counters)) run(n, s, top, counters);
  return top;
}

}  // namespace perfsweep
