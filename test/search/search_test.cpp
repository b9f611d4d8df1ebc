// search/search.hpp: the tensor splits the search tries and its thin-shard filter, counted by
// hand for small models.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "search/search.hpp"

namespace perfsweep {
namespace {

SearchProblem problem(Strategy strategy, std::int64_t l, std::int64_t e, std::int64_t h) {
  SearchProblem p;
  p.strategy = strategy;
  p.model.name = "small";
  p.model.l = l;
  p.model.e = e;
  p.model.h = h;
  p.model.depth = 8;
  p.model.f = 4 * e;
  return p;
}

std::vector<std::pair<std::int64_t, std::int64_t>> pairs(const std::vector<TensorSplit>& splits) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (const TensorSplit& s : splits) out.emplace_back(s.tp1, s.tp2);
  return out;
}

using Pairs = std::vector<std::pair<std::int64_t, std::int64_t>>;

// 1d, e = 512, 64 heads, 64 GPUs: tp in {1, 2, ..., 64} all divide heads and e; 3e / tp =
// 1536 / tp is under 128 for tp = 16 (96), 32 (48), 64 (24): 3 too thin, 4 kept.
TEST(TensorSplits, OneDThinShards) {
  SearchCounters counters;
  const auto splits = tensor_splits(problem(Strategy::OneD, 256, 512, 64), 64, &counters);
  EXPECT_EQ(pairs(splits), (Pairs{{1, 1}, {2, 1}, {4, 1}, {8, 1}}));
  EXPECT_EQ(counters.tensor_splits, 4);
  EXPECT_EQ(counters.tensor_splits_too_thin, 3);
}

// 16 heads: tp = 32 and 64 do not divide them, which is not a thin shard (not counted).
// 3 x 1024 / 16 = 192 >= 128.
TEST(TensorSplits, OneDHeadsFilterIsNotCountedAsThin) {
  SearchCounters counters;
  const auto splits = tensor_splits(problem(Strategy::OneD, 256, 1024, 16), 64, &counters);
  EXPECT_EQ(pairs(splits), (Pairs{{1, 1}, {2, 1}, {4, 1}, {8, 1}, {16, 1}}));
  EXPECT_EQ(counters.tensor_splits_too_thin, 0);
}

// 2d, e = 512, l = 256, 16 GPUs: thin when e / tp1 < 128 (tp1 >= 8) or l / tp2 < 128 (tp2 >= 4).
//   tp1 1: tp2 1 2 kept, 4 8 16 thin;  tp1 2: 1 2 kept, 4 8 thin;  tp1 4: 1 2 kept, 4 thin;
//   tp1 8: tp2 1 2 thin;  tp1 16: tp2 1 thin.  6 kept, 3 + 2 + 1 + 2 + 1 = 9 thin.
TEST(TensorSplits, TwoDThinShards) {
  SearchCounters counters;
  const auto splits = tensor_splits(problem(Strategy::TwoD, 256, 512, 64), 16, &counters);
  EXPECT_EQ(pairs(splits), (Pairs{{1, 1}, {1, 2}, {2, 1}, {2, 2}, {4, 1}, {4, 2}}));
  EXPECT_EQ(counters.tensor_splits, 6);
  EXPECT_EQ(counters.tensor_splits_too_thin, 9);
}

// 6 GPUs, e = 512, 64 heads, l = 768: tp1 3 and 6 do not divide the heads. 2d also needs tp2 | e,
// which 3 and 6 do not; context parallelism (2d-seqp) splits l instead: 768 / 6 = 128 is not thin.
TEST(TensorSplits, TwoDNeedsTp2ToDivideTheEmbedding) {
  EXPECT_EQ(pairs(tensor_splits(problem(Strategy::TwoD, 768, 512, 64), 6)), (Pairs{{1, 1}, {1, 2}, {2, 1}}));
  EXPECT_EQ(pairs(tensor_splits(problem(Strategy::TwoDSeqp, 768, 512, 64), 6)),
            (Pairs{{1, 1}, {1, 2}, {1, 3}, {1, 6}, {2, 1}, {2, 3}}));
}

TEST(TensorSplits, CountersAccumulate) {
  SearchCounters counters;
  const SearchProblem p = problem(Strategy::OneD, 256, 512, 64);
  tensor_splits(p, 64, &counters);
  tensor_splits(p, 64, &counters);
  EXPECT_EQ(counters.tensor_splits, 8);
  EXPECT_EQ(counters.tensor_splits_too_thin, 6);
}

}  // namespace
}  // namespace perfsweep
