// search/candidates.hpp: divisors, NVLink placements and SUMMA block counts, against lists
// enumerated by hand (the reference's execution.py generators, in its order).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "search/candidates.hpp"

namespace perfsweep {
namespace {

using V = std::vector<std::int64_t>;

TEST(Divisors, AscendingIncludingOneAndN) {
  EXPECT_EQ(divisors(1), V{1});
  EXPECT_EQ(divisors(12), (V{1, 2, 3, 4, 6, 12}));
  EXPECT_EQ(divisors(36), (V{1, 2, 3, 4, 6, 9, 12, 18, 36}));  // a square: 6 once
  EXPECT_EQ(divisors(97), (V{1, 97}));
}

// 1441440 = 2^5 x 3^2 x 5 x 7 x 11 x 13: (5+1)(2+1)(1+1)^4 = 288 divisors, more than 8 bits count.
TEST(Divisors, ManyDivisors) {
  const V d = divisors(1441440);
  ASSERT_EQ(d.size(), 288u);
  EXPECT_EQ(d.front(), 1);
  EXPECT_EQ(d[1], 2);
  // index 255, the last an 8-bit index holds, is the 33rd largest divisor: 1441440 / 45, 45 being
  // the 33rd smallest (1 to 16, then 18 20 21 22 24 26 28 30 32 33 35 36 39 40 42 44 45)
  EXPECT_EQ(d[255], 32032);
  EXPECT_EQ(d.back(), 1441440);
  for (std::size_t i = 0; i < d.size(); ++i) {
    EXPECT_EQ(1441440 % d[i], 0);
    if (i > 0) {
      EXPECT_LT(d[i - 1], d[i]);
    }
  }
}

// The placements for_each_nv_split enumerates, each one share per degree.
std::vector<V> nv_splits(const V& degrees, std::int64_t nvs) {
  std::vector<V> out;
  for_each_nv_split(degrees, nvs, [&](std::span<const std::int64_t> n) { out.emplace_back(n.begin(), n.end()); });
  return out;
}
using P = std::vector<V>;

// nvs = 4 over (tp 2, dp 4, pp 2): the factorizations n1 n2 n3 = 4 with n1 | 2, n2 | 4, n3 | 2,
// n1 then n2 ascending: (1,1,4) no (4 does not divide pp), (1,2,2), (1,4,1), (2,1,2), (2,2,1),
// (4,1,1) no (4 does not divide tp).
TEST(NvlinkPlacement, OneDFactorizations) {
  EXPECT_EQ(nv_splits({2, 4, 2}, 4), (P{{1, 2, 2}, {1, 4, 1}, {2, 1, 2}, {2, 2, 1}}));
  // the whole job fits in one domain: one placement, everything inside
  EXPECT_EQ(nv_splits({2, 1, 2}, 4), (P{{2, 1, 2}}));
  EXPECT_EQ(nv_splits({1, 1, 1}, 8), (P{{1, 1, 1}}));
  // 9 GPUs of degrees 3 and 3 on domains of 4: 9 is no multiple of 4, so no placement fills every
  // domain; those that fill it as far as whole groups allow: shares dividing 3 with a product of
  // at most 4, none of which can grow to 3 within it: (1,3,1) and (3,1,1), not (1,1,1)
  EXPECT_EQ(nv_splits({3, 3, 1}, 4), (P{{1, 3, 1}, {3, 1, 1}}));
  // 200 GPUs (tp 2, dp 50, pp 2) on NVL72: 40 or 50 GPUs of each domain (2 x 10 x 2, 1 x 50 x 1, ...)
  for (const V& nv : nv_splits({2, 50, 2}, 72)) EXPECT_LE(nv[0] * nv[1] * nv[2], 72);
}

// nvs = 4 over (tp1 2, tp2 2, dp 4, pp 2): n1 n2 n3 n4 = 4 with n1 | 2, n2 | 2, n3 | 4, n4 | 2:
//   n1=1 n2=1: (n3,n4) = (1,4) no, (2,2), (4,1);  n1=1 n2=2: (1,2), (2,1);  n1=1 n2=4: no;
//   n1=2 n2=1: (1,2), (2,1);  n1=2 n2=2: (1,1);  n1=4: no.
TEST(NvlinkPlacement, TwoDFactorizations) {
  EXPECT_EQ(nv_splits({2, 2, 4, 2}, 4),
            (P{{1, 1, 2, 2}, {1, 1, 4, 1}, {1, 2, 1, 2}, {1, 2, 2, 1}, {2, 1, 1, 2}, {2, 1, 2, 1}, {2, 2, 1, 1}}));
  EXPECT_EQ(nv_splits({2, 2, 1, 1}, 8), (P{{2, 2, 1, 1}}));  // 4 GPUs in a domain of 8
}

// Five axes of degree 2 on domains of 4: two of them inside a domain, the first outermost:
// n1 = 1 then 2, and within each the later axes ascending.
TEST(NvlinkPlacement, FiveAxes) {
  EXPECT_EQ(nv_splits({2, 2, 2, 2, 2}, 4), (P{{1, 1, 1, 2, 2},
                                              {1, 1, 2, 1, 2},
                                              {1, 1, 2, 2, 1},
                                              {1, 2, 1, 1, 2},
                                              {1, 2, 1, 2, 1},
                                              {1, 2, 2, 1, 1},
                                              {2, 1, 1, 1, 2},
                                              {2, 1, 1, 2, 1},
                                              {2, 1, 2, 1, 1},
                                              {2, 2, 1, 1, 1}}));
}

// An NVL72 domain over (tp 8, cp 1, dp 18, pp 2): n1 n3 n4 = 72 with n1 | 8, n3 | 18, n4 | 2:
// n1 = 1 leaves 72 > 18 x 2; n1 = 2: (18, 2); n1 = 4: (9, 2), (18, 1); n1 = 8: (9, 1).
TEST(NvlinkPlacement, Nvl72Domain) {
  EXPECT_EQ(nv_splits({8, 1, 18, 2}, 72), (P{{2, 1, 18, 2}, {4, 1, 9, 2}, {4, 1, 18, 1}, {8, 1, 9, 1}}));
}

// A layout's placements are its strategy's placed axes' (model/axes.hpp): 1d's tp, cp, dp, pp, the
// 2d strategies' tp1, tp2, dp, pp; set_placement writes them back.
TEST(NvlinkPlacement, StrategiesPlaceTheirAxes) {
  Layout c;
  c.tensor.tp1 = 2;
  c.tensor.cp = 2;
  c.dp = 4;
  c.pp = 2;
  P got;
  for_each_placement(c, 4, [&](std::span<const std::int64_t> n) { got.emplace_back(n.begin(), n.end()); });
  EXPECT_EQ(got, nv_splits({2, 2, 4, 2}, 4));
  Layout placed = c;
  set_placement(placed, placed_axes(c.strategy), got.front());  // (1, 1, 2, 2)
  EXPECT_EQ(placed.tensor.nv1, 1);
  EXPECT_EQ(placed.tensor.nv_cp, 1);
  EXPECT_EQ(placed.nv_dp, 2);
  EXPECT_EQ(placed.nv_pp, 2);
  Layout two = c;
  two.strategy = Strategy::TwoDSeqp;
  two.tensor.cp = 1;
  two.tensor.tp2 = 2;
  got.clear();
  for_each_placement(two, 4, [&](std::span<const std::int64_t> n) { got.emplace_back(n.begin(), n.end()); });
  EXPECT_EQ(got, nv_splits({2, 2, 4, 2}, 4));
  set_placement(two, placed_axes(two.strategy), got[2]);  // (1, 2, 1, 2)
  EXPECT_EQ(two.tensor.nv2, 2);
  EXPECT_EQ(two.tensor.nv_cp, 1);
  EXPECT_EQ(two.nv_pp, 2);
}

V summa_nb(std::int64_t tp1, std::int64_t tp2, std::int64_t e) {
  V out;
  for_each_summa_nb(tp1, tp2, e, [&](std::int64_t nb) { out.push_back(nb); });
  return out;
}

// start = max(tp1, tp2); candidates start x 2^k for k < log2(e / start) that divide e and leave
// blocks of at least 512.
TEST(SummaBlocks, PowersOfTwoTimesTheLargerDegree) {
  // e 4096, start 4: 4 (1024 wide), 8 (512); 16 leaves 256
  EXPECT_EQ(summa_nb(2, 4, 4096), (V{4, 8}));
  // e 12288 = 3 x 4096, start 2: 2, 4, 8, 16 (768 wide); 32 leaves 384
  EXPECT_EQ(summa_nb(2, 2, 12288), (V{2, 4, 8, 16}));
  // e 3000, start 2: 2 (1500), 4 (750); 8 leaves 375
  EXPECT_EQ(summa_nb(2, 1, 3000), (V{2, 4}));
}

TEST(SummaBlocks, NarrowEmbeddingGetsTheSmallestOnly) {
  EXPECT_EQ(summa_nb(4, 2, 1024), (V{4}));  // 1024 / 4 = 256 < 512
}

TEST(SummaBlocks, NoCandidateWhenEachGpuHoldsOneColumnOrLess) {
  EXPECT_TRUE(summa_nb(8, 1, 8).empty());  // log2(8 / 8) = 0: numpy's arange(0, 0) is empty
  EXPECT_TRUE(summa_nb(8, 8, 4).empty());  // e / start = 0
}

}  // namespace
}  // namespace perfsweep
