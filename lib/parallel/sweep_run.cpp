#include "parallel/sweep_run.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <type_traits>

#include "parallel/work_queue.hpp"
#include "search/capacity_sweep.hpp"

namespace perfsweep {

static_assert(std::is_trivially_copyable_v<Candidate>, "candidates travel between ranks as bytes");
static_assert(std::is_trivially_copyable_v<SearchCounters>, "counters travel between ranks as bytes");

namespace {
// One target's share of a unit's results, followed by `count` candidates.
struct UnitHeader {
  std::uint64_t unit;
  std::uint64_t target;
  std::uint64_t count;
  std::uint64_t last;  // the unit's last record
  SearchCounters counters;
};

template <typename T>
void append(std::vector<char>& out, const T& v) {
  const char* p = reinterpret_cast<const char*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}
}  // namespace

SweepRun::SweepRun(std::vector<SweepTarget> targets, std::vector<std::int64_t> n_gpus, std::size_t top_n)
    : targets_(std::move(targets)), n_gpus_(std::move(n_gpus)), top_n_(top_n) {
  results_.resize(targets_.size());
  preloaded_.assign(targets_.size(), false);
  for (TargetResult& r : results_) r.tops.assign(n_gpus_.size(), TopN(top_n_));
  plan_units();
}

void SweepRun::preload(std::map<std::size_t, TargetResult> done) {
  for (auto& [target, result] : done) {
    if (result.tops.size() != n_gpus_.size()) result.tops.assign(n_gpus_.size(), TopN(top_n_));
    results_[target] = std::move(result);
    preloaded_[target] = true;
  }
  plan_units();
}

void SweepRun::plan_units() {
  units_.clear();
  for (TargetResult& r : results_) r.units_total = 0;
  std::vector<std::size_t> pending;
  std::vector<const SearchProblem*> problems;
  for (std::size_t t = 0; t < targets_.size(); ++t) {
    if (preloaded_[t]) continue;
    pending.push_back(t);
    problems.push_back(&targets_[t].problem);
  }
  groups_ = capacity_groups(problems);
  for (std::vector<std::size_t>& g : groups_) {
    for (std::size_t& member : g) member = pending[member];
  }
  // Group-major, so that targets complete (and reach the journal) steadily during a long sweep.
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    const std::size_t t = groups_[gi].front();
    for (std::size_t ni = n_gpus_.size(); ni-- > 0;) {
      for (const TensorSplit& s : tensor_splits(targets_[t].problem, n_gpus_[ni])) {
        units_.push_back({static_cast<std::uint32_t>(t), static_cast<std::uint32_t>(gi), static_cast<std::uint32_t>(ni), s});
        for (std::size_t member : groups_[gi]) ++results_[member].units_total;
      }
    }
  }
}

void SweepRun::absorb(const char* data, std::size_t size, const SweepCallbacks& cb) {
  std::size_t pos = 0;
  while (pos < size) {
    UnitHeader h;
    std::memcpy(&h, data + pos, sizeof h);
    pos += sizeof h;
    const WorkUnit& u = units_[h.unit];
    TargetResult& r = results_[h.target];
    for (std::uint64_t i = 0; i < h.count; ++i) {
      Candidate c;
      std::memcpy(&c, data + pos, sizeof c);
      pos += sizeof c;
      r.tops[u.n_index].push(c);
    }
    r.counters.add(h.counters);
    ++r.units_done;
    if (h.last) ++units_done_;
    if (r.complete()) {
      ++targets_done_;
      if (cb.on_target_complete) cb.on_target_complete(h.target, r);
    }
  }
  const auto now = std::chrono::steady_clock::now();
  if (cb.on_progress && now - last_progress_ >= (progress_reported_ ? cb.progress_interval : cb.first_progress)) {
    last_progress_ = now;
    progress_reported_ = true;
    cb.on_progress(units_done_, units_.size(), targets_done_, targets_.size());
  }
}

void SweepRun::run(MPI_Comm comm, int thread_level, const SweepCallbacks& cb) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  last_progress_ = std::chrono::steady_clock::now();
  progress_reported_ = false;
  units_done_ = 0;
  targets_done_ = 0;
  for (std::size_t t = 0; t < targets_.size(); ++t) {
    if (preloaded_[t]) ++targets_done_;
  }
  // Targets without any unit (nothing to search at any GPU count) are complete from the start.
  if (rank == 0) {
    for (std::size_t t = 0; t < targets_.size(); ++t) {
      if (!preloaded_[t] && results_[t].units_total == 0) {
        ++targets_done_;
        if (cb.on_target_complete) cb.on_target_complete(t, results_[t]);
      }
    }
  }

  WorkQueue queue(comm, units_.size(), thread_level,
                  [&](std::span<const char> bytes) { absorb(bytes.data(), bytes.size(), cb); });
  std::vector<char> out;
  if (targets_.empty()) {
    queue.finish();
    return;
  }
  Searcher searcher(targets_.front().problem);
  std::size_t current_target = 0;
  std::vector<double> capacities;
  std::vector<TopN> tops;
  std::vector<SearchCounters> counters;
  // Per (capacity group, GPU count, capacity): the last of the fullest top-N this rank has found
  // over other tensor splits, a floor for the next split's list (TopN::set_floor). Results are
  // the same; most configurations are then turned away by one comparison.
  std::vector<std::size_t> floor_base(groups_.size());
  std::size_t floor_count = 0;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    floor_base[g] = floor_count;
    floor_count += groups_[g].size() * n_gpus_.size();
  }
  std::vector<Candidate> floors(floor_count);
  std::vector<char> has_floor(floor_count, 0);
  while (true) {
    const auto [first, last] = queue.next(out);
    out.clear();
    if (first == last) break;
    for (std::size_t i = first; i < last; ++i) {
      const WorkUnit& u = units_[i];
      if (u.target != current_target) {
        current_target = u.target;
        searcher.set_problem(targets_[current_target].problem);
      }
      const std::vector<std::size_t>& group = groups_[u.group];
      capacities.clear();
      for (std::size_t t : group) capacities.push_back(targets_[t].problem.system.hbm_capacity);
      if (tops.size() != group.size()) tops.assign(group.size(), TopN(top_n_));
      const std::size_t floor_at = floor_base[u.group] + u.n_index * group.size();
      for (std::size_t k = 0; k < group.size(); ++k) {
        tops[k].clear();
        if (has_floor[floor_at + k]) tops[k].set_floor(floors[floor_at + k]);
      }
      counters.assign(group.size(), SearchCounters{});
      searcher.run(n_gpus_[u.n_index], u.split, capacities, tops, counters);
      for (std::size_t k = 0; k < group.size(); ++k) {
        const std::vector<Candidate>& kept = tops[k].items();
        if (kept.size() < top_n_ || kept.empty()) continue;
        if (!has_floor[floor_at + k] || ranks_before(kept.back(), floors[floor_at + k])) {
          floors[floor_at + k] = kept.back();
          has_floor[floor_at + k] = 1;
        }
      }
      for (std::size_t k = 0; k < group.size(); ++k) {
        append(out, UnitHeader{i, group[k], tops[k].items().size(), k + 1 == group.size(), counters[k]});
        for (const Candidate& c : tops[k].items()) append(out, c);
      }
    }
  }
  queue.finish();
}

double SweepRun::estimate_cpu_seconds(std::chrono::duration<double> budget, std::size_t& sampled) const {
  sampled = 0;
  const std::size_t n = units_.size();
  if (n == 0) return 0;
  // A spread order: the golden ratio's multiples modulo 1 visit the list evenly at any length.
  std::vector<char> seen(n, 0);
  const auto start = std::chrono::steady_clock::now();
  double seconds = 0;
  std::unique_ptr<Searcher> searcher;
  std::vector<double> capacities;
  std::vector<TopN> tops;
  std::vector<SearchCounters> counters;
  constexpr double kGolden = 0.6180339887498949;
  for (std::size_t k = 0; sampled < n; ++k) {
    std::size_t i = static_cast<std::size_t>(std::fmod(static_cast<double>(k) * kGolden, 1.0) * static_cast<double>(n));
    while (seen[i]) i = (i + 1) % n;
    seen[i] = 1;
    const WorkUnit& u = units_[i];
    const auto t0 = std::chrono::steady_clock::now();
    if (!searcher) {
      searcher = std::make_unique<Searcher>(targets_[u.target].problem);
    } else {
      searcher->set_problem(targets_[u.target].problem);
    }
    const std::vector<std::size_t>& group = groups_[u.group];
    capacities.clear();
    for (std::size_t t : group) capacities.push_back(targets_[t].problem.system.hbm_capacity);
    tops.assign(group.size(), TopN(top_n_));
    counters.assign(group.size(), SearchCounters{});
    searcher->run(n_gpus_[u.n_index], u.split, capacities, tops, counters);
    const auto t1 = std::chrono::steady_clock::now();
    seconds += std::chrono::duration<double>(t1 - t0).count();
    ++sampled;
    if (t1 - start >= budget) break;
  }
  return seconds / static_cast<double>(sampled) * static_cast<double>(n);
}

SearchCounters SweepRun::total_counters() const {
  SearchCounters c;
  for (const TargetResult& r : results_) c.add(r.counters);
  return c;
}

}  // namespace perfsweep
