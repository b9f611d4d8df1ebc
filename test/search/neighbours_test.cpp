// Searches beside the one asked for (lib/search/neighbours): the GPU counts and batch sizes they
// name are checked by searching them again, and the partial NVLink placements of a count that is
// no multiple of the domain by their definition.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "config/inputs.hpp"
#include "config/runtime_file.hpp"
#include "model/axes.hpp"
#include "search/neighbours.hpp"

namespace perfsweep {
namespace {

SearchProblem problem(const char* model, const char* system, const Runtime& runtime, std::int64_t batch) {
  SearchProblem p;
  p.model = load_model(PERFSWEEP_SOURCE_DIR "/models/" + std::string(model) + ".yaml");
  p.system = load_system(PERFSWEEP_SOURCE_DIR "/systems/" + std::string(system) + ".yaml");
  p.runtime = runtime;
  p.global_batch = batch;
  p.top_n = 1;
  fill_runtime_defaults(p.runtime, p.exec);
  check_runtime_choices(p.system, p.runtime, p.strategy, p.exec);
  return p;
}

// 200 GPUs of NVL72 racks (no multiple of 72): every placement each share of which divides its
// group, at most 72 GPUs a domain, none of which can grow to its group's next divisor within it;
// the rank order's among them. A multiple of the domain keeps the reference's placements alone.
TEST(neighbours, PartialDomainPlacements) {
  const std::vector<std::int64_t> degrees{2, 1, 50, 2};  // tp, cp, dp, pp
  const std::int64_t nvs = 72;
  int placements = 0;
  bool rank_order_seen = false;
  Layout c;
  c.tensor.tp1 = 2;
  c.dp = 50;
  c.pp = 2;
  const std::array<std::int64_t, kMaxPlacedAxes> rank_order = rank_order_shares(c, nvs);
  for_each_nv_split(degrees, nvs, [&](std::span<const std::int64_t> nv) {
    ++placements;
    std::int64_t used = 1;
    for (std::size_t i = 0; i < nv.size(); ++i) {
      EXPECT_EQ(degrees[i] % nv[i], 0);
      used *= nv[i];
    }
    EXPECT_LE(used, nvs);
    for (std::size_t i = 0; i < nv.size(); ++i) {
      for (std::int64_t k = nv[i] + 1; k <= degrees[i]; ++k) {
        if (degrees[i] % k == 0) {
          EXPECT_GT(used / nv[i] * k, nvs) << "share " << i << " could grow to " << k;
          break;
        }
      }
    }
    rank_order_seen = rank_order_seen || std::equal(nv.begin(), nv.end(), rank_order.begin());
  });
  EXPECT_GT(placements, 1);
  EXPECT_TRUE(rank_order_seen);
  const std::vector<std::int64_t> multiple{8, 1, 18, 2};  // 288 GPUs: 4 racks
  for_each_nv_split(multiple, nvs, [&](std::span<const std::int64_t> nv) {
    std::int64_t used = 1;
    for (const std::int64_t n : nv) used *= n;
    EXPECT_EQ(used, nvs);
  });
}

// Where no configuration fits, the counts named below and above have one, and none between does.
TEST(neighbours, NearestCountsWork) {
  const SearchProblem p = problem("llama3_70b", "GB200", reference_runtime(), 1000);
  const std::vector<SearchProblem> problems{p};
  const std::int64_t n = 199;
  ASSERT_FALSE(best_configuration(problems, n, p.global_batch));
  const NearestCounts near = nearest_feasible_counts(problems, n, p.global_batch, 64);
  ASSERT_TRUE(near.below && near.above);
  EXPECT_TRUE(best_configuration(problems, *near.below, p.global_batch));
  EXPECT_TRUE(best_configuration(problems, *near.above, p.global_batch));
  for (std::int64_t k = *near.below + 1; k < *near.above; ++k) {
    EXPECT_FALSE(best_configuration(problems, k, p.global_batch)) << k << " GPUs";
  }
  EXPECT_FALSE(infeasible_reason(p, n).empty());
  EXPECT_TRUE(infeasible_reason(p, *near.above).empty());
}

// 288 GPUs (4 NVL72 racks) at batch 1024: each batch named gives the stated gain, at least 10%,
// searched again on its own; the batches tried are the nearest multiples of the count's divisors.
TEST(neighbours, BetterBatchesGiveTheGain) {
  const SearchProblem p = problem("llama3_70b", "GB200-calibrated", load_runtime_named("nemo"), 1024);
  const std::vector<SearchProblem> problems{p};
  const BatchAdviceResult advice = better_batches(problems, 288, 1024, 0.10, 6);
  ASSERT_TRUE(advice.asked);
  ASSERT_TRUE(advice.below || advice.above);
  const std::optional<BestFound> asked = best_configuration(problems, 288, 1024);
  ASSERT_TRUE(asked);
  EXPECT_EQ(asked->best.throughput, advice.asked->best.throughput);
  for (const std::optional<BatchAdvice>* side : {&advice.below, &advice.above}) {
    if (!*side) continue;
    const BatchAdvice& a = **side;
    const std::optional<BestFound> again = best_configuration(problems, 288, a.global_batch);
    ASSERT_TRUE(again) << a.global_batch;
    EXPECT_EQ(again->best.throughput, a.found.best.throughput) << a.global_batch;
    EXPECT_GE(again->best.throughput / asked->best.throughput, 1.10) << a.global_batch;
    EXPECT_NEAR(again->best.throughput / asked->best.throughput - 1, a.gain, 1e-12) << a.global_batch;
    EXPECT_NE(batch_advice_text(advice, 288, 1024, 0.10).find("batch " + std::to_string(a.global_batch)),
              std::string::npos);
  }
  // a batch every layout's data-parallel degree divides leaves nothing to name
  EXPECT_TRUE(batch_advice_text(better_batches(problems, 288, 1152, 0.10, 6), 288, 1152, 0.10).empty());
  const std::vector<std::int64_t> tried = neighbour_batches(288, 1024);
  ASSERT_FALSE(tried.empty());
  for (const std::int64_t b : tried) {
    EXPECT_GE(b, 768);
    EXPECT_LE(b, 1280);
    bool multiple = false;
    for (std::int64_t d = 5; d <= 288; ++d) multiple = multiple || (288 % d == 0 && b % d == 0);
    EXPECT_TRUE(multiple) << b;
  }
}

}  // namespace
}  // namespace perfsweep
