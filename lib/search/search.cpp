#include "search/search.hpp"

#include <algorithm>
#include <array>

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

// Block summaries of one tensor split, keyed by (micro-batch, SUMMA nb, NVLink tensor placement):
// an open-addressing table whose entries are invalidated by bumping a generation number.
struct Searcher::Cache {
  struct Entry {
    std::uint64_t key = 0;
    std::uint32_t generation = 0;
    BlockSummary block;
  };
  std::vector<Entry> table = std::vector<Entry>(1 << 12);
  std::uint32_t generation = 1;
  std::size_t used = 0;
  // Scratch of the multi-capacity run: capacity order, sorted capacities, and how many candidates
  // have each (sorted) capacity as their smallest fitting one (last: none fits).
  std::vector<std::size_t> order;
  std::vector<double> sorted_capacities;
  std::vector<std::int64_t> first_fit;

  void reset() {
    ++generation;
    used = 0;
  }

  // Returns the slot for key and whether it holds a valid block.
  std::pair<Entry*, bool> find(std::uint64_t key) {
    if (2 * (used + 1) > table.size()) grow();
    const std::size_t mask = table.size() - 1;
    std::size_t i = (key * 0x9E3779B97F4A7C15ull) >> 40 & mask;
    while (true) {
      Entry& e = table[i];
      if (e.generation != generation) return {&e, false};
      if (e.key == key) return {&e, true};
      i = (i + 1) & mask;
    }
  }

  void insert(Entry* e, std::uint64_t key, const BlockSummary& block) {
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
    : problem_(problem), batch_divisors_(divisors(problem.global_batch)), cache_(new Cache) {}

Searcher::~Searcher() { delete cache_; }

void Searcher::set_problem(const SearchProblem& problem) {
  if (problem.global_batch != problem_.global_batch) batch_divisors_ = divisors(problem.global_batch);
  problem_ = problem;
}

void Searcher::run(std::int64_t n, const TensorSplit& split, TopN& top, SearchCounters& counters) {
  const double capacity = problem_.system.hbm_capacity;
  run(n, split, std::span<const double>(&capacity, 1), std::span<TopN>(&top, 1),
      std::span<SearchCounters>(&counters, 1));
}

void Searcher::run(std::int64_t n, const TensorSplit& split, std::span<const double> capacities, std::span<TopN> tops,
                   std::span<SearchCounters> capacity_counters) {
  const SearchProblem& p = problem_;
  SearchCounters counters;  // what every capacity counts alike; infeasible_memory goes to each
  const Transformer& m = p.model;
  const System& sys = p.system;
  const std::int64_t G = p.global_batch;
  const std::int64_t nvs = sys.nvlink_size;
  const std::int64_t tp1 = split.tp1, tp2 = split.tp2, tp = tp1 * tp2;
  const bool one_d = p.strategy == Strategy::OneD;
  const bool seqp = p.strategy == Strategy::TwoDSeqp;
  // GPUs the micro-batch's tokens are split over (micro_batch_size_candidates' divisibility test)
  const std::int64_t token_split = p.strategy == Strategy::TwoD ? tp2 : tp;

  std::array<std::int64_t, 64> nbs{};
  std::size_t n_nb = 0;
  if (p.strategy == Strategy::TwoD) {
    for_each_summa_nb(tp1, tp2, m.e, [&](std::int64_t nb) { nbs[n_nb++] = nb; });
  } else {
    nbs[n_nb++] = 1;
  }
  cache_->reset();
  // Capacities ascending: a configuration that fits one fits every larger one, and a larger
  // capacity's top-N refuses whatever a smaller one's refuses (it ranks a superset of the
  // smaller's candidates, so its N-th best is at least as fast). A candidate is judged from its
  // smallest fitting capacity upwards until one refuses it.
  std::vector<std::size_t>& order = cache_->order;
  std::vector<double>& sorted_capacities = cache_->sorted_capacities;
  std::vector<std::int64_t>& first_fit = cache_->first_fit;
  order.resize(capacities.size());
  for (std::size_t c = 0; c < order.size(); ++c) order[c] = c;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return capacities[a] < capacities[b]; });
  sorted_capacities.resize(order.size());
  for (std::size_t c = 0; c < order.size(); ++c) sorted_capacities[c] = capacities[order[c]];
  first_fit.assign(order.size() + 1, 0);

  Candidate cand;
  cand.layout.strategy = p.strategy;
  cand.layout.tensor.tp1 = tp1;
  cand.layout.tensor.tp2 = tp2;

  const std::int64_t max_pp = std::min(n / tp, m.depth);
  for (std::int64_t pp = 1; pp <= max_pp; ++pp) {
    if (max_pp % pp || n % (tp * pp) || m.depth % pp) continue;
    const std::int64_t dp = n / (tp * pp);
    if (dp > G || G % dp) {
      ++counters.pipelines_rejected_dp;
      continue;
    }
    const std::int64_t local_batch = G / dp;
    const std::int64_t layers = m.depth / pp;
    for (std::size_t mi = 0; mi < batch_divisors_.size(); ++mi) {
      const std::int64_t mbs = batch_divisors_[mi];
      if (mbs > local_batch) break;
      if (local_batch % mbs || (mbs * m.l) % token_split) continue;
      const std::int64_t micro_batches = local_batch / mbs;
      for (std::size_t ni = 0; ni < n_nb; ++ni) {
        auto visit = [&](std::int64_t nv1, std::int64_t nv2, std::int64_t nv_dp, std::int64_t nv_pp) {
          ++counters.candidates;
          const std::uint64_t key = static_cast<std::uint64_t>(mi) | static_cast<std::uint64_t>(ni) << 8 |
                                    static_cast<std::uint64_t>(nv1) << 16 | static_cast<std::uint64_t>(nv2) << 40;
          auto [slot, found] = cache_->find(key);
          if (!found) {
            Module mlp, sa;
            build_block(sys, p.strategy, mbs, m, {tp1, tp2, nv1, nv2, nbs[ni]}, mlp, sa);
            cache_->insert(slot, key, summarize(mlp, sa));
            ++counters.module_evaluations;
          }
          const BlockSummary& block = slot->block;
          const double t_dp = data_parallel(sys, block, layers, seqp ? dp * tp2 : dp, seqp ? nv_dp * nv2 : nv_dp).t;
          const double t_pp = pipeline_parallel(sys, block, micro_batches, pp, nv_pp).t;
          const Totals totals = step_totals(block, t_dp, t_pp, m.depth, pp, dp, seqp ? tp2 : 1, micro_batches);
          const double throughput = static_cast<double>(G) / totals.t;
          bool filled = false;  // the candidate is built once, for the first capacity that keeps it
          // The first capacity >= mem, as `mem > capacity` rejects (a NaN mem fits, as there).
          std::size_t c = static_cast<std::size_t>(
              std::lower_bound(sorted_capacities.begin(), sorted_capacities.end(), totals.mem) -
              sorted_capacities.begin());
          ++first_fit[c];
          for (; c < order.size(); ++c) {
            TopN& top = tops[order[c]];
            if (!top.admits(throughput)) break;
            if (!filled) {
              filled = true;
              cand.throughput = throughput;
              cand.mem = totals.mem;
              cand.totals = totals;
              Layout& l = cand.layout;
              l.dp = dp;
              l.pp = pp;
              l.mbs = mbs;
              l.tensor.nb = nbs[ni];
              l.tensor.nv1 = nv1;
              l.tensor.nv2 = nv2;
              l.nv_dp = nv_dp;
              l.nv_pp = nv_pp;
            }
            top.push(cand);
          }
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
  std::int64_t too_small = 0;  // candidates over the capacity at hand: those fitting only larger ones
  for (std::size_t c = order.size(); c-- > 0;) {
    too_small += first_fit[c + 1];
    SearchCounters& out = capacity_counters[order[c]];
    out.add(counters);
    out.infeasible_memory += too_small;
  }
}

TopN Searcher::run_all(std::int64_t n, SearchCounters& counters) {
  TopN top(problem_.top_n);
  for (const TensorSplit& s : tensor_splits(problem_, n, &counters)) run(n, s, top, counters);
  return top;
}

}  // namespace perfsweep
