// The MoE layer's token permutation and router kernels (Mechanisms::moe_permutation, a runtime's
// moe_permutation) against bytes worked out by hand from Megatron-Core's alltoall dispatcher, on the
// made-up system of common/round_system.hpp (2-byte elements, GB = 1e-9 bytes, HBM 1000 GB/s at the
// roofline's full bandwidth, 20 us a kernel without a kernel calibration).
//
// The model: e = 16, 16 tokens a sequence, MoE blocks of 4 experts, top 2, capacity factor 1. The
// layout: 1d, tp = 1, dp = 4, ep = 2, one sequence a micro-batch: T = 16 tokens on a GPU, which
// routes R = T x 2 = 32 rows, and receives 32 (forced balance) for its 4 / 2 = 2 local experts, so
// the rows are sorted by local expert after the all-to-all and unsorted before the one back.
//   dispatch forward   permute 2 R e + 2 R (rows and probabilities), sort 2 R e + 2 R
//   dispatch backward  the permute's scatter R e + T e (+ T e zeroed, unfused) + 2 R, sort 2 R e + 2 R
//   combine forward    unsort 2 R e, unpermute R e + T e (+ T e zeroed, unfused)
//   combine backward   unpermute's gather 2 R e, unsort 2 R e
//   router             13 T E elements each pass
// Kernels (model/block.cpp, kPermutationKernels): fused permute 4/1, sort 2/1, unsort 2/1,
// unpermute 1/1; unfused 7/5, 2/2, 1/1, 2/1; the router 15/10.
#include <gtest/gtest.h>

#include <string>

#include "common/layouts.hpp"
#include "common/round_system.hpp"
#include "common/small_models.hpp"
#include "model/runtime.hpp"
#include "model/step.hpp"

namespace perfsweep {
namespace {

using test::round_system;

constexpr double kElement = 2e-9;  // GB
constexpr double kE = 16, kTokens = 16, kExperts = 4, kTopK = 2;
constexpr double kRows = kTokens * kTopK;
constexpr std::int64_t kBatch = 4;

Layout layout() {
  Layout c = test::one_d(1, 4, 1);
  c.nv_dp = 4;
  c.exec.ep = 2;
  return c;
}

Runtime runtime(MoePermutation p) {
  Runtime rt;
  rt.name = "moe_permutation_test";
  rt.mechanisms.moe_permutation = p;
  return rt;
}

const LayerResult& mlp_layer(const Evaluation& ev, const char* name) {
  for (int i = 0; i < ev.mlp.count; ++i) {
    if (std::string(ev.mlp.layers[static_cast<std::size_t>(i)].cost.name) == name) {
      return ev.mlp.layers[static_cast<std::size_t>(i)];
    }
  }
  throw ConfigError(std::string("no layer ") + name);
}

struct Expected {
  double dispatch[2], combine[2], router[2];  // elements
  double dispatch_kernels[2], combine_kernels[2];
};

Expected by_hand(bool unfused) {
  const double e = kE, t = kTokens, r = kRows;
  const double fill = unfused ? t * e : 0;
  const double sort = 2 * r * e + 2 * r;
  Expected x{};
  x.dispatch[0] = 2 * r * e + 2 * r + sort;
  x.dispatch[1] = r * e + t * e + fill + 2 * r + sort;
  x.combine[0] = 2 * r * e + r * e + t * e + fill;
  x.combine[1] = 2 * r * e + 2 * r * e;
  x.router[0] = x.router[1] = 13 * t * kExperts;
  if (unfused) {
    x.dispatch_kernels[0] = 7 + 2;
    x.dispatch_kernels[1] = 5 + 2;
    x.combine_kernels[0] = 2 + 1;
    x.combine_kernels[1] = 1 + 1;
  } else {
    x.dispatch_kernels[0] = 4 + 2;
    x.dispatch_kernels[1] = 1 + 1;
    x.combine_kernels[0] = 1 + 2;
    x.combine_kernels[1] = 1 + 1;
  }
  return x;
}

TEST(MoePermutation, BytesAndKernelsByHand) {
  const System s = round_system();
  const Transformer m = test::small_moe(2, 1);
  for (const MoePermutation p : {MoePermutation::Fused, MoePermutation::Unfused}) {
    SCOPED_TRACE(kMoePermutationNames[static_cast<std::size_t>(p)]);
    const Expected x = by_hand(p == MoePermutation::Unfused);
    const Evaluation ev = evaluate(s, m, runtime(p), layout(), kBatch);
    const LayerCost& dispatch = mlp_layer(ev, "dispatch").cost;
    const LayerCost& combine = mlp_layer(ev, "combine").cost;
    const LayerCost& router = mlp_layer(ev, "router").cost;
    for (std::size_t pass = 0; pass < 2; ++pass) {
      EXPECT_DOUBLE_EQ(dispatch.routing[pass].gb, x.dispatch[pass] * kElement);
      EXPECT_DOUBLE_EQ(combine.routing[pass].gb, x.combine[pass] * kElement);
      EXPECT_DOUBLE_EQ(router.routing[pass].gb, x.router[pass] * kElement);
      EXPECT_EQ(dispatch.routing[pass].kernels, x.dispatch_kernels[pass]);
      EXPECT_EQ(combine.routing[pass].kernels, x.combine_kernels[pass]);
    }
    EXPECT_EQ(router.routing[0].kernels, 15);
    EXPECT_EQ(router.routing[1].kernels, 10);
    // the permutation's kernels move the rows: the all-to-all moves none of its own
    EXPECT_EQ(dispatch.mem_fwd, 0.0);
    EXPECT_EQ(combine.mem_bwd, 0.0);
    // nothing more kept for the backward
    const Evaluation none = evaluate(s, m, runtime(MoePermutation::None), layout(), kBatch);
    EXPECT_EQ(ev.totals.mem, none.totals.mem);
  }
}

// The time: the all-to-all's launch (the collective class's 20 us) and its collective, then the
// kernels at 20 us each and their bytes at 1000 GB/s.
TEST(MoePermutation, TimedAfterTheCollective) {
  const System s = round_system();
  const Transformer m = test::small_moe(2, 1);
  const Expected x = by_hand(false);
  const Evaluation ev = evaluate(s, m, runtime(MoePermutation::Fused), layout(), kBatch);
  const LayerResult& r = mlp_layer(ev, "dispatch");
  const double launch = 20e-6;
  EXPECT_DOUBLE_EQ(r.fwd.t - r.fwd.comm, launch + x.dispatch_kernels[0] * launch + x.dispatch[0] * kElement / 1000);
  EXPECT_DOUBLE_EQ(r.bwd.t - r.bwd.comm, launch + x.dispatch_kernels[1] * launch + x.dispatch[1] * kElement / 1000);
}

// Off (none, the default of every runtime that does not name it): the all-to-all's own read and
// write of the rows, as before the mechanism, and nothing else.
TEST(MoePermutation, NoneLeavesTheLayersAsTheyWere) {
  const System s = round_system();
  const Transformer m = test::small_moe(2, 1);
  const Evaluation ev = evaluate(s, m, runtime(MoePermutation::None), layout(), kBatch);
  const LayerCost& dispatch = mlp_layer(ev, "dispatch").cost;
  EXPECT_DOUBLE_EQ(dispatch.mem_fwd, 2 * kRows * kE * kElement);
  for (const char* name : {"router", "dispatch", "combine"}) {
    EXPECT_EQ(mlp_layer(ev, name).cost.routing[0].kernels, 0);
    EXPECT_EQ(mlp_layer(ev, name).cost.routing[1].gb, 0);
  }
}

}  // namespace
}  // namespace perfsweep
