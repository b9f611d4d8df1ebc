#include "search/neighbours.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "model/plan.hpp"
#include "search/candidates.hpp"

namespace perfsweep {

std::optional<BestFound> best_configuration(std::span<const SearchProblem> problems, std::int64_t n_gpus,
                                            std::int64_t global_batch) {
  std::optional<BestFound> out;
  for (std::size_t i = 0; i < problems.size(); ++i) {
    SearchProblem p = problems[i];
    p.global_batch = global_batch;
    p.top_n = 1;
    p.prune = true;
    Searcher searcher(p);
    SearchCounters counters;
    const TopN top = searcher.run_all(n_gpus, counters);
    if (top.items().empty()) continue;
    const Candidate& c = top.items().front();
    if (!out || c.throughput > out->best.throughput) out = BestFound{c, i};
  }
  return out;
}

NearestCounts nearest_feasible_counts(std::span<const SearchProblem> problems, std::int64_t n_gpus,
                                      std::int64_t global_batch, std::int64_t reach) {
  NearestCounts out;
  for (std::int64_t k = 1; k <= reach && (!out.below || !out.above); ++k) {
    if (!out.below && n_gpus - k >= 1 && best_configuration(problems, n_gpus - k, global_batch)) {
      out.below = n_gpus - k;
    }
    if (!out.above && best_configuration(problems, n_gpus + k, global_batch)) out.above = n_gpus + k;
  }
  return out;
}

std::vector<std::int64_t> neighbour_batches(std::int64_t n_gpus, std::int64_t global_batch) {
  std::vector<std::int64_t> out;
  const std::int64_t lo = global_batch - global_batch / 4, hi = global_batch + global_batch / 4;
  for (const std::int64_t d : divisors(n_gpus)) {
    if (d * 64 < n_gpus) continue;
    const std::int64_t below = (global_batch - 1) / d * d, above = (global_batch / d + 1) * d;
    for (const std::int64_t b : {below, above}) {
      if (b >= 1 && b >= lo && b <= hi && std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
    }
  }
  std::sort(out.begin(), out.end(), [&](std::int64_t a, std::int64_t b) {
    const std::int64_t da = std::llabs(a - global_batch), db = std::llabs(b - global_batch);
    return da != db ? da < db : a < b;
  });
  return out;
}

BatchAdviceResult better_batches(std::span<const SearchProblem> problems, std::int64_t n_gpus,
                                 std::int64_t global_batch, double min_gain, std::size_t tries) {
  BatchAdviceResult out;
  out.asked = best_configuration(problems, n_gpus, global_batch);
  if (!out.asked) return out;
  std::size_t tried_below = 0, tried_above = 0;
  for (const std::int64_t b : neighbour_batches(n_gpus, global_batch)) {
    const bool below = b < global_batch;
    std::optional<BatchAdvice>& side = below ? out.below : out.above;
    std::size_t& tried = below ? tried_below : tried_above;
    if (side || tried == tries) continue;
    ++tried;
    const std::optional<BestFound> found = best_configuration(problems, n_gpus, b);
    if (!found) continue;
    // samples/s per GPU at the same GPU count: the throughputs' ratio
    const double gain = found->best.throughput / out.asked->best.throughput - 1;
    if (gain >= min_gain) side = BatchAdvice{b, gain, *found};
  }
  return out;
}

std::string infeasible_reason(const SearchProblem& problem, std::int64_t n_gpus) {
  SearchProblem p = problem;
  p.top_n = 1;
  p.prune = true;
  SearchCounters counters;
  const std::vector<TensorSplit> splits = tensor_splits(p, n_gpus, &counters);
  const std::string gpus = std::to_string(n_gpus) + " GPUs";
  if (splits.empty()) {
    return "no tensor split of " + gpus + " divides the model's " + std::to_string(p.model.h) +
           " heads with shards of at least 128 features (" + std::to_string(counters.tensor_splits_too_thin) +
           " too thin)";
  }
  Searcher searcher(p);
  SearchCounters walked;
  const TopN top = searcher.run_all(n_gpus, walked);
  if (!top.items().empty()) return "";
  if (walked.candidates == 0) {
    return "no pipeline of " + gpus + " leaves a data-parallel degree dividing the global batch " +
           std::to_string(p.global_batch) + " (" + std::to_string(walked.pipelines_rejected_dp) +
           " tensor and pipeline pairs rejected)";
  }
  char text[200];
  std::snprintf(text, sizeof text, "all %lld configurations are over the memory limit (%.2f GB per GPU under %s)",
                static_cast<long long>(walked.candidates), memory_limit_gb(p.system, p.runtime),
                p.runtime.name.c_str());
  return text;
}

namespace {
std::string layout_words(const Layout& c) {
  char text[160];
  std::snprintf(text, sizeof text, "tp %lld%s pp %lld dp %lld mbs %lld",
                static_cast<long long>(c.tensor.tp1 * c.tensor.tp2),
                c.tensor.cp > 1 ? (" cp " + std::to_string(c.tensor.cp)).c_str() : "",
                static_cast<long long>(c.pp), static_cast<long long>(c.dp), static_cast<long long>(c.mbs));
  return text;
}
}  // namespace

std::string batch_advice_text(const BatchAdviceResult& advice, std::int64_t n_gpus, std::int64_t global_batch,
                              double min_gain) {
  if (!advice.asked || (!advice.below && !advice.above)) return "";
  const double per_gpu = advice.asked->best.throughput / static_cast<double>(n_gpus);
  char head[256];
  std::snprintf(head, sizeof head,
                "the divisors of batch %lld leave %lld GPUs slower layouts (best %s, %.4g samples/s per GPU); ",
                static_cast<long long>(global_batch), static_cast<long long>(n_gpus),
                layout_words(advice.asked->best.layout).c_str(), per_gpu);
  std::string out = head;
  bool first = true;
  for (const std::optional<BatchAdvice>* side : {&advice.below, &advice.above}) {
    if (!*side) continue;
    const BatchAdvice& a = **side;
    char text[256];
    std::snprintf(text, sizeof text, "%sbatch %lld (%+.1f%% samples) gives %+.1f%% samples/s per GPU (%s)",
                  first ? "" : ", ", static_cast<long long>(a.global_batch),
                  100.0 * (static_cast<double>(a.global_batch) / static_cast<double>(global_batch) - 1),
                  100.0 * a.gain, layout_words(a.found.best.layout).c_str());
    out += text;
    first = false;
  }
  char tail[96];
  std::snprintf(tail, sizeof tail, " (batches within 25%% whose best is at least %.0f%% faster)", 100.0 * min_gain);
  return out + tail;
}

}  // namespace perfsweep
