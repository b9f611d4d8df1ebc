// The reach of a token's experts over the expert-parallel group (model/moe_dispatch.hpp), worked
// by hand as products of the draws' probabilities.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/layouts.hpp"
#include "common/round_system.hpp"
#include "common/small_models.hpp"
#include "model/moe_dispatch.hpp"
#include "model/step.hpp"

namespace perfsweep {
namespace {

// C(pool - held, k) / C(pool, k) as the product of the k draws that each miss the held items.
double misses(int pool, int held, int k) {
  double p = 1;
  for (int i = 0; i < k; ++i) p *= static_cast<double>(pool - held - i) / static_cast<double>(pool - i);
  return p;
}

MoeOptions moe(std::int64_t experts, std::int64_t top_k, std::int64_t groups = 0, std::int64_t group_top_k = 0) {
  return MoeOptions{.experts = experts, .top_k = top_k, .groups = groups, .group_top_k = group_top_k};
}

TEST(MoeDispatch, TokensReachFewerGpusThanExperts) {
  // Qwen3-30B-A3B: 128 experts, top 8, over 8 GPUs of one NVLink domain (16 experts each): a GPU
  // misses all 8 draws with probability C(112, 8) / C(128, 8).
  const double reached = 8 * (1 - misses(128, 16, 8));
  EXPECT_NEAR(expected_units_reached(moe(128, 8), 8), reached, 1e-12);
  EXPECT_NEAR(reached, 5.339, 1e-3);
  // one copy to each other GPU reached, against 8 x 7/8 copies: share 8 (1 - miss) / 8
  EXPECT_NEAR(dedup_dispatch_share(moe(128, 8), 8, 8), reached / 8, 1e-12);
  // across two domains of 4 GPUs each, a copy a domain: 2 (1 - C(64, 8) / C(128, 8)) / 8
  EXPECT_NEAR(dedup_dispatch_share(moe(128, 8), 8, 4), 2 * (1 - misses(128, 64, 8)) / 8, 1e-12);
  // one expert a token: nothing to share
  EXPECT_DOUBLE_EQ(dedup_dispatch_share(moe(128, 1), 8, 8), 1.0);
  EXPECT_DOUBLE_EQ(dedup_dispatch_share(moe(128, 8), 1, 1), 1.0);
}

TEST(MoeDispatch, GroupLimitedRouting) {
  // DeepSeek-V3: 256 experts in 8 groups, top 8 from the best 4 groups. Over EP 64 on 8 domains
  // of 8 GPUs each domain holds one group: reached only where its group is drawn (4 of 8), then
  // unless the 8 draws from the 4 groups' 128 experts all miss its 32.
  const MoeOptions v3 = moe(256, 8, 8, 4);
  const double domain = 0.5 * (1 - misses(128, 32, 8));
  EXPECT_NEAR(expected_units_reached(v3, 8), 8 * domain, 1e-12);
  EXPECT_NEAR(dedup_dispatch_share(v3, 64, 8), 8 * domain / 8, 1e-12);
  // without the limit the same domains are reached more often
  EXPECT_GT(expected_units_reached(moe(256, 8), 8), expected_units_reached(v3, 8));
  // GPUs inside a group (EP 64 in one NVLink domain, 4 experts each)
  EXPECT_NEAR(expected_units_reached(v3, 64), 64 * 0.5 * (1 - misses(128, 4, 8)), 1e-12);
  // units of two groups (4 units of 64 experts): none, one or both of its groups drawn,
  // C(2, j) C(6, 4 - j) / C(8, 4) of the time, then all 8 draws miss its j x 32 experts
  const double none = (15.0 / 70) * 1 + (40.0 / 70) * misses(128, 32, 8) + (15.0 / 70) * misses(128, 64, 8);
  EXPECT_NEAR(expected_units_reached(v3, 4), 4 * (1 - none), 1e-12);
}

// The same reach by drawing: a fixed-seed Monte Carlo of tokens routed as the formula assumes
// (groups drawn uniformly, then experts uniformly from them, without repetition).
double drawn_reach(const MoeOptions& o, int units, int tokens) {
  std::mt19937 rng(12345);
  const int per_unit = static_cast<int>(o.experts) / units;
  const int groups = o.groups > 0 ? static_cast<int>(o.groups) : 1;
  const int chosen = o.groups > 0 ? static_cast<int>(o.group_top_k) : 1;
  const int per_group = static_cast<int>(o.experts) / groups;
  std::vector<int> group_ids(static_cast<std::size_t>(groups));
  std::iota(group_ids.begin(), group_ids.end(), 0);
  long reached = 0;
  for (int t = 0; t < tokens; ++t) {
    std::shuffle(group_ids.begin(), group_ids.end(), rng);
    std::vector<int> pool;
    for (int g = 0; g < chosen; ++g) {
      for (int i = 0; i < per_group; ++i) pool.push_back(group_ids[static_cast<std::size_t>(g)] * per_group + i);
    }
    std::shuffle(pool.begin(), pool.end(), rng);
    std::set<int> units_hit;
    for (int i = 0; i < o.top_k; ++i) units_hit.insert(pool[static_cast<std::size_t>(i)] / per_unit);
    reached += static_cast<long>(units_hit.size());
  }
  return static_cast<double>(reached) / tokens;
}

TEST(MoeDispatch, AgreesWithDrawnTokens) {
  for (const auto& [o, units] : {std::pair{moe(128, 8), 8}, std::pair{moe(256, 8, 8, 4), 8},
                                  std::pair{moe(256, 8, 8, 4), 64}, std::pair{moe(256, 8, 8, 4), 4}}) {
    EXPECT_NEAR(expected_units_reached(o, units), drawn_reach(o, units, 20000), 0.03) << o.experts << " " << units;
  }
}

// The dispatcher in a layer's cost: test::small_moe's blocks of 4 experts, top 2, on 1d with
// dp = 4 in one NVLink domain and ep = 2 (2 experts a GPU): a GPU misses both of a token's draws
// with probability C(2, 2) / C(4, 2) = 1/6, so a token reaches 5/3 GPUs and DeepEP sends 5/6 of
// the all-to-all's 2 rows a token (16 tokens a GPU, e = 16, 2-byte elements), in the dispatch and
// in the combine, forward and backward.
TEST(MoeDispatch, DeepEpSendsTheReachedShare) {
  const System s = test::round_system();
  const Transformer m = test::small_moe(2, 1);
  Layout c = test::one_d(1, 4, 1);
  c.nv_dp = 4;
  c.exec.ep = 2;
  const double alltoall = 16 * 2 * 16 * 2e-9;
  for (const MoeDispatcher d : {MoeDispatcher::AllToAll, MoeDispatcher::DeepEp}) {
    c.exec.moe_dispatcher = d;
    const Evaluation ev = evaluate(s, m, c, 4);
    const double share = d == MoeDispatcher::DeepEp ? 5.0 / 6 : 1.0;
    int seen = 0;
    for (int i = 0; i < ev.mlp.count; ++i) {
      const LayerCost& k = ev.mlp.layers[static_cast<std::size_t>(i)].cost;
      if (std::string(k.name) != "dispatch" && std::string(k.name) != "combine") continue;
      ++seen;
      EXPECT_DOUBLE_EQ(k.comm_fwd.items[0].volume_gb, share * alltoall) << k.name;
      EXPECT_DOUBLE_EQ(k.comm_bwd.items[0].volume_gb, share * alltoall) << k.name;
    }
    EXPECT_EQ(seen, 2);
  }
}

}  // namespace
}  // namespace perfsweep
