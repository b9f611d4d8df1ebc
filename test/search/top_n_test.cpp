// search/top_n.hpp: the strict total order (throughput, then the configuration tuple), a full
// list's admission rule, and merge results independent of how the candidates were split.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "search/top_n.hpp"

namespace perfsweep {
namespace {

Candidate make(double throughput, std::int64_t dp, std::int64_t tp1 = 1, std::int64_t pp = 1, std::int64_t mbs = 1,
               std::int64_t nv_dp = 1) {
  Candidate c;
  c.throughput = throughput;
  c.mem = throughput;  // any value: not part of the order
  c.layout.dp = dp;
  c.layout.tensor.tp1 = tp1;
  c.layout.pp = pp;
  c.layout.mbs = mbs;
  c.layout.nv_dp = nv_dp;
  return c;
}

// The documented order, written out independently of top_n.cpp: descending throughput, then the
// tuple (dp, tp1, tp2, pp, mbs, nb, nv_tp1, nv_tp2, nv_dp, nv_pp) ascending.
auto sort_key(const Candidate& c) {
  const Layout& l = c.layout;
  return std::tuple(-c.throughput, l.dp, l.tensor.tp1, l.tensor.tp2, l.pp, l.mbs, l.tensor.nb, l.tensor.nv1,
                    l.tensor.nv2, l.nv_dp, l.nv_pp);
}

TEST(TopN, HigherThroughputFirst) {
  EXPECT_TRUE(ranks_before(make(2, 8), make(1, 1)));
  EXPECT_FALSE(ranks_before(make(1, 1), make(2, 8)));
}

TEST(TopN, TiesBrokenByTheConfigurationTuple) {
  EXPECT_TRUE(ranks_before(make(1, 1, 8), make(1, 2, 1)));        // dp before tp1
  EXPECT_TRUE(ranks_before(make(1, 2, 1, 8), make(1, 2, 2, 1)));  // tp1 before pp
  EXPECT_TRUE(ranks_before(make(1, 2, 2, 4, 8), make(1, 2, 2, 8, 1)));
  EXPECT_TRUE(ranks_before(make(1, 2, 2, 4, 8, 1), make(1, 2, 2, 4, 8, 2)));  // nv_dp last of these
  Candidate a = make(1, 2), b = make(1, 2);
  b.layout.nv_pp = 2;  // the last key decides when all else is equal
  EXPECT_TRUE(ranks_before(a, b));
  EXPECT_FALSE(ranks_before(b, a));
  // irreflexive: equal candidates rank neither way
  EXPECT_FALSE(ranks_before(a, a));
}

TEST(TopN, KeepsTheBestUpToCapacity) {
  TopN top(3);
  for (double t : {2.0, 5.0, 1.0, 4.0, 3.0}) top.push(make(t, 1));
  ASSERT_EQ(top.items().size(), 3u);
  EXPECT_EQ(top.items()[0].throughput, 5.0);
  EXPECT_EQ(top.items()[1].throughput, 4.0);
  EXPECT_EQ(top.items()[2].throughput, 3.0);
  EXPECT_FALSE(top.push(make(2.5, 1)));  // worse than the last kept: rejected
  EXPECT_TRUE(top.push(make(4.5, 1)));
  EXPECT_EQ(top.items()[2].throughput, 4.0);
  EXPECT_EQ(top.capacity(), 3u);
}

TEST(TopN, FullListAdmitsTiesOnlyByTheTuple) {
  TopN top(2);
  top.push(make(9, 1));
  top.push(make(3, 2));  // last: throughput 3, dp 2
  EXPECT_FALSE(top.push(make(2.9, 1)));  // slower: not kept, whatever its tuple
  EXPECT_FALSE(top.push(make(3, 3)));  // same throughput, dp 3 > 2
  EXPECT_FALSE(top.push(make(3, 2)));  // equal: not before the last
  EXPECT_TRUE(top.push(make(3, 1)));   // dp 1 < 2
  ASSERT_EQ(top.items().size(), 2u);
  EXPECT_EQ(top.items()[1].layout.dp, 1);
}

TEST(TopN, ZeroCapacityKeepsNothing) {
  TopN top(0);
  EXPECT_FALSE(top.push(make(1, 1)));
  EXPECT_TRUE(top.items().empty());
}

// 400 candidates from few throughputs and few degrees (so ties abound), pushed into one list and
// into lists of random disjoint parts merged in random order: every way gives the first 10 of
// the candidates sorted by the documented order.
TEST(TopN, MergeOfAnySplitEqualsOneList) {
  std::mt19937_64 rng(20261123);
  std::uniform_int_distribution<int> throughput(1, 6), degree(0, 3);
  std::vector<Candidate> all;
  for (int i = 0; i < 400; ++i) {
    Candidate c = make(throughput(rng) * 0.5, std::int64_t{1} << degree(rng), std::int64_t{1} << degree(rng),
                       std::int64_t{1} << degree(rng), std::int64_t{1} << degree(rng), std::int64_t{1} << degree(rng));
    c.layout.tensor.nv1 = std::int64_t{1} << degree(rng);
    all.push_back(c);
  }
  std::vector<Candidate> sorted = all;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Candidate& a, const Candidate& b) { return sort_key(a) < sort_key(b); });
  const std::size_t n = 10;

  auto same_as_sorted = [&](const TopN& top) {
    if (top.items().size() != n) return false;
    for (std::size_t i = 0; i < n; ++i) {
      if (sort_key(top.items()[i]) != sort_key(sorted[i])) return false;
    }
    return true;
  };

  TopN one(n);
  for (const Candidate& c : all) one.push(c);
  EXPECT_TRUE(same_as_sorted(one));

  for (int trial = 0; trial < 50; ++trial) {
    std::vector<Candidate> shuffled = all;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    const std::size_t parts = std::uniform_int_distribution<std::size_t>(1, 9)(rng);
    std::vector<TopN> tops(parts, TopN(n));
    for (const Candidate& c : shuffled) tops[std::uniform_int_distribution<std::size_t>(0, parts - 1)(rng)].push(c);
    std::shuffle(tops.begin(), tops.end(), rng);
    TopN merged(n);
    for (const TopN& t : tops) merged.merge(t);
    EXPECT_TRUE(same_as_sorted(merged)) << "trial " << trial << ", " << parts << " parts";
  }

  // Parts searched one after another, each with the last of the best full list before it as its
  // floor (as a rank's tensor splits are): the merge is still the first 10, and the parts keep
  // fewer candidates in all.
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<Candidate> shuffled = all;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    const std::size_t parts = std::uniform_int_distribution<std::size_t>(2, 9)(rng);
    std::vector<TopN> tops(parts, TopN(n));
    std::vector<std::vector<Candidate>> part_of(parts);
    for (const Candidate& c : shuffled) part_of[std::uniform_int_distribution<std::size_t>(0, parts - 1)(rng)].push_back(c);
    bool has_floor = false;
    Candidate floor;
    std::size_t kept = 0, kept_without_floors = 0;
    for (std::size_t p = 0; p < parts; ++p) {
      if (has_floor) tops[p].set_floor(floor);
      TopN plain(n);
      for (const Candidate& c : part_of[p]) {
        tops[p].push(c);
        plain.push(c);
      }
      kept += tops[p].items().size();
      kept_without_floors += plain.items().size();
      if (tops[p].items().size() == n && (!has_floor || ranks_before(tops[p].items().back(), floor))) {
        floor = tops[p].items().back();
        has_floor = true;
      }
    }
    TopN merged(n);
    for (const TopN& t : tops) merged.merge(t);
    EXPECT_TRUE(same_as_sorted(merged)) << "trial " << trial << ", " << parts << " parts with floors";
    EXPECT_LE(kept, kept_without_floors);
  }
}

}  // namespace
}  // namespace perfsweep
