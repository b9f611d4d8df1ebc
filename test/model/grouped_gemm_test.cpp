// The experts' grouped GEMM (model/kernel_calibration.hpp: grouped_gemm_seconds; model/layer.hpp:
// grouped_experts) against numbers worked out by hand on the made-up system of
// common/round_system.hpp (tensor cores 100 TFLOP/s, HBM 1000 GB/s, 2-byte elements) with a
// made-up kernel calibration: 4 SMs, every GEMM pass at efficiency 0.5 with 128 x 128 tiles, no
// depth factor (k_half 0) and 10 us a launch.
//
// 3 experts of 200 tokens, fc1 1024 -> 512 (one grouped GEMM):
//   forward: each expert's 200 tokens padded to ceil(200 / 128) = 2 tiles of rows, by
//     512 / 128 = 4 tiles of columns: 8 tiles an expert, 24 in all, 6 full waves on 4 SMs;
//     2 x 3 x 256 x 1024 x 512 = 805,306,368 flops at 100 x 0.5 TFLOP/s = 16.10612736 us,
//     one launch of 10 us: 26.10612736 us (HBM: 3 x (200 x 1024 + 200 x 512 + 1024 x 512) x 2
//     bytes = 4.99 us, hidden). Each expert a GEMM of its own 200 rows (no padding) would be
//     2 x 3 x 200 x 1024 x 512 = 629,145,600 flops: 12.582912 us.
//   backward: dgrad (3 x 200 x 1024 out, depth 512) padded as the forward: 16.10612736 us;
//     wgrad (3 x 1024 x 512 out, 96 tiles, 24 full waves, depth the 200 tokens, nothing padded):
//     2 x 3 x 1024 x 200 x 512 = 629,145,600 flops = 12.582912 us; two launches: 48.68903936 us
//     (HBM 9.98 us, hidden).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/layouts.hpp"
#include "common/round_system.hpp"
#include "common/small_models.hpp"
#include "model/layer.hpp"
#include "model/roofline.hpp"
#include "model/step.hpp"

namespace perfsweep {
namespace {

using kernels::GemmPass;

kernels::Calibration round_calibration() {
  kernels::Calibration c;
  c.sm_count = 4;
  const kernels::GemmModel g{.efficiency = 0.5, .tile_m = 128, .tile_n = 128, .k_half = 0, .launch_s = 10e-6};
  c.gemm[0] = {g, g, g};
  return c;
}

System calibrated(kernels::Calibration c) {
  System s = test::round_system();
  s.kernel_calibration = std::make_shared<const kernels::Calibration>(c);
  return s;
}

LayerCost fc1(const System& s, std::int64_t tokens) { return gemm(s, "fc1", {tokens, 1024, 512, 1024, 512}, {}); }

TEST(GroupedGemm, TilesWavesAndOneLaunchByHand) {
  const System s = calibrated(round_calibration());
  const LayerResult grouped = time_layer(s, grouped_experts(fc1(s, 200), 3));
  EXPECT_NEAR(grouped.fwd.t, 10e-6 + 16.10612736e-6, 1e-15);
  EXPECT_NEAR(grouped.bwd.t, 20e-6 + 16.10612736e-6 + 12.582912e-6, 1e-15);
  // one launch per GEMM pass for the three experts
  EXPECT_DOUBLE_EQ(calibrated_seconds(s, *s.kernel_calibration, KernelOp::Gemm, grouped.cost.shape, kernels::kFwd, 0, 0)
                       .launch,
                   10e-6);
  // the counts are the three experts' (repeated): the padding costs time, not flops or bytes
  const LayerResult apart = time_layer(s, repeated(fc1(s, 200), 3));
  EXPECT_EQ(grouped.cost.flops_fwd, apart.cost.flops_fwd);
  EXPECT_EQ(grouped.cost.mem_bwd, apart.cost.mem_bwd);
  EXPECT_NEAR(apart.fwd.t, 10e-6 + 12.582912e-6, 1e-15);
}

// One expert whose tokens fill whole tiles is the dense GEMM, bit for bit, in every pass (here
// with a depth factor and a last wave part empty: 2 x 4 = 8 tiles on 3 SMs).
TEST(GroupedGemm, OneExpertOfWholeTilesIsTheDenseGemm) {
  kernels::Calibration c = round_calibration();
  c.sm_count = 3;
  c.gemm[0][1].k_half = 96;
  c.gemm[0][2].efficiency = 0.6;
  const System s = calibrated(c);
  const LayerResult dense = time_layer(s, fc1(s, 256));
  const LayerResult grouped = time_layer(s, grouped_experts(fc1(s, 256), 1));
  EXPECT_EQ(grouped.fwd.t, dense.fwd.t);
  EXPECT_EQ(grouped.bwd.t, dense.bwd.t);
  // 200 tokens are padded to 256: the forward's and the input gradient's arithmetic as 256's
  const LayerResult part = time_layer(s, grouped_experts(fc1(s, 200), 1));
  EXPECT_EQ(part.fwd.t, dense.fwd.t);
  const double wgrad_200 = kernels::gemm_pass_seconds(c, c.gemm[0][2], GemmPass::Wgrad, 100, 1e-12,
                                                      {.batch = 1, .rows = 200, .depth = 1024, .cols = 512});
  const double wgrad_256 = kernels::gemm_pass_seconds(c, c.gemm[0][2], GemmPass::Wgrad, 100, 1e-12,
                                                      {.batch = 1, .rows = 256, .depth = 1024, .cols = 512});
  EXPECT_NEAR(dense.bwd.t - part.bwd.t, wgrad_256 - wgrad_200, 1e-15);
}

// 128 experts of 16 tokens against the dense GEMM of their 2048 tokens (k 4096, m 4224 = 33 tiles
// of columns, 132 SMs, 128-row tiles): each expert's 16 tokens take a whole 128-row tile, so
// 128 x 33 = 4224 tiles run in 32 waves where the dense GEMM's 16 x 33 = 528 run in 4: 8 times
// as long. Timed as separate GEMMs without padding (repeated) they took the dense GEMM's time.
TEST(GroupedGemm, PerExpertPaddingSlowsSmallExperts) {
  kernels::Calibration c = round_calibration();
  c.sm_count = 132;
  const kernels::GemmModel& g = c.gemm[0][0];
  const KernelShape dense{.batch = 1, .rows = 2048, .depth = 4096, .cols = 4224};
  const KernelShape grouped{.batch = 128, .rows = 16, .depth = 4096, .cols = 4224, .grouped = true};
  KernelShape apart = grouped;
  apart.grouped = false;
  const double t_dense = kernels::gemm_pass_seconds(c, g, GemmPass::Fprop, 100, 1e-12, dense);
  EXPECT_NEAR(kernels::gemm_pass_seconds(c, g, GemmPass::Fprop, 100, 1e-12, grouped) / t_dense, 8.0, 1e-12);
  EXPECT_NEAR(kernels::gemm_pass_seconds(c, g, GemmPass::Dgrad, 100, 1e-12, grouped) /
                  kernels::gemm_pass_seconds(c, g, GemmPass::Dgrad, 100, 1e-12, dense),
              8.0, 1e-12);
  EXPECT_NEAR(kernels::gemm_pass_seconds(c, g, GemmPass::Fprop, 100, 1e-12, apart) / t_dense, 1.0, 1e-12);
  // 32 waves of a 128 x 128 x 4096 tile on one of 132 SMs: 32 x 2 x 128 x 128 x 4096 x 132 / 50e12
  EXPECT_NEAR(kernels::gemm_pass_seconds(c, g, GemmPass::Fprop, 100, 1e-12, grouped),
              32 * 2.0 * 128 * 128 * 4096 * 132 / 50e12, 1e-15);
}

// In an MoE model's step only the experts' GEMMs are grouped: the router, the token exchange,
// the experts' activation and every attention layer cost as before, and the experts' fc1 and fc2
// differ from their `repeated` cost by the padding's arithmetic alone (small_moe: 4 experts of
// ceil(16 x 2 / 4) = 8 tokens each, padded to 128-row tiles; fc1 16 -> 32, fc2 32 -> 16).
TEST(GroupedGemm, MoeStepChangesOnlyInTheExpertGemms) {
  const System s = calibrated(round_calibration());
  const Evaluation ev = evaluate(s, test::small_moe(2, 1), test::one_d(1, 1, 1), 4);
  int grouped = 0;
  for (const Module* m : {&ev.mlp, &ev.sa}) {
    for (int i = 0; i < m->count; ++i) {
      const LayerResult& r = m->layers[static_cast<std::size_t>(i)];
      const std::string name = r.cost.name;
      const bool expert_gemm = m == &ev.mlp && (name == "fc1" || name == "fc2");
      EXPECT_EQ(r.cost.shape.grouped, expert_gemm) << name;
      if (!expert_gemm) continue;
      ++grouped;
      EXPECT_EQ(r.cost.shape.batch, 4) << name;
      EXPECT_EQ(r.cost.shape.rows, 8) << name;
      LayerCost before = r.cost;
      before.shape.grouped = false;
      const LayerResult apart = time_layer(s, before);
      // arithmetic (launch + compute): 2 x 4 x 128 x 16 x 32 flops padded, 2 x 4 x 8 x 16 x 32
      // as separate GEMMs, at 50 TFLOP/s (4 tiles, one full wave); the backward's wgrad (16 x 32
      // an expert, reduced over its 8 tokens) is not padded
      EXPECT_NEAR(r.fwd.comp, 10e-6 + 1.048576e-8, 1e-18) << name;
      EXPECT_NEAR(apart.fwd.comp, 10e-6 + 6.5536e-10, 1e-18) << name;
      EXPECT_NEAR(r.bwd.comp, 20e-6 + 1.048576e-8 + 6.5536e-10, 1e-18) << name;
      EXPECT_NEAR(apart.bwd.comp, 20e-6 + 2 * 6.5536e-10, 1e-18) << name;
      EXPECT_EQ(r.fwd.comm, apart.fwd.comm) << name;
      EXPECT_EQ(r.bwd.comm, apart.bwd.comm) << name;
    }
  }
  EXPECT_EQ(grouped, 2);
}

}  // namespace
}  // namespace perfsweep
