// Expert tensor parallelism (Execution::etp, Megatron-Core's --expert-tensor-parallel-size) against
// numbers worked out by hand on the made-up system of common/round_system.hpp (2-byte elements,
// GB = 1e-9 bytes, NVLink domains of 4).
//
// The model: e = 16, 2 heads, no biases or dropout, 16 tokens a sequence, 2 blocks, each an MoE
// block of 4 experts, top 2, capacity factor 1, expert f = 32 (fc1 16 x 32 and fc2 32 x 16: 1024
// weights an expert). The layout: 1d, tp = 2 (one domain's 2), dp = 4 (2 in a domain), ep = 2,
// one sequence a micro-batch, so each tensor-parallel rank holds b l = 16 tokens.
//
//   etp = tp = 2 (the default): the expert group's tokens are the tensor group's 16; each of a
//     GPU's 4 / ep = 2 experts takes ceil(ep x 16 x top 2 / 4) = 16 of them; fc1 is 16 rows by 16
//     of its 32 columns: 2 x 16 x 16 x 31 flops = 15872, weights 2 x 16 x 16 = 512 elements.
//   etp = 1: the tensor group's 16 tokens split over tp / etp = 2 expert groups, 8 each; an expert
//     takes ceil(2 x 8 x 2 / 4) = 8; fc1 is 8 rows by all 32 columns: 2 x 8 x 32 x 31 = 15872
//     flops (the same), weights 2 x 16 x 32 = 1024 elements: experts x params / (ep x etp), and no
//     collective (a group of one GPU).
//   The dispatch sends the routed tokens of the GPU's expert group: 16 x 2 = 32 tokens of 16
//     (512 elements, 1024e-9 GB) at etp = 2, 8 x 2 = 16 tokens (256 elements, 512e-9 GB) at
//     etp = 1; the combine returns 1/etp of them: 256 elements (512e-9 GB) either way.
#include <gtest/gtest.h>

#include <string>

#include "common/layouts.hpp"
#include "common/round_system.hpp"
#include "common/small_models.hpp"
#include "model/grid.hpp"
#include "model/step.hpp"

namespace perfsweep {
namespace {

using test::config_error;
using test::round_system;

Transformer small_moe() { return test::small_moe(2, 1); }

Layout layout(std::int64_t etp) {
  Layout c = test::one_d(2, 4, 1);
  c.tensor.nv1 = c.nv_dp = 2;
  c.exec.ep = 2;
  c.exec.etp = etp;
  return c;
}

LayerCost mlp_layer(const Evaluation& ev, const char* name) {
  for (int i = 0; i < ev.mlp.count; ++i) {
    if (std::string(ev.mlp.layers[static_cast<std::size_t>(i)].cost.name) == name) {
      return ev.mlp.layers[static_cast<std::size_t>(i)].cost;
    }
  }
  throw ConfigError(std::string("no layer ") + name);
}

constexpr std::int64_t kBatch = 4;

TEST(ExpertTensorParallel, ExpertGemmsByHand) {
  const System s = round_system();
  const Evaluation tp = evaluate(s, small_moe(), layout(0), kBatch);
  const Evaluation one = evaluate(s, small_moe(), layout(1), kBatch);
  EXPECT_DOUBLE_EQ(mlp_layer(tp, "fc1").flops_fwd, 15872e-12);
  EXPECT_DOUBLE_EQ(mlp_layer(one, "fc1").flops_fwd, 15872e-12);
  EXPECT_DOUBLE_EQ(mlp_layer(tp, "fc1").weights_mem, 512 * 2e-9);
  EXPECT_DOUBLE_EQ(mlp_layer(one, "fc1").weights_mem, 1024 * 2e-9);
  EXPECT_DOUBLE_EQ(mlp_layer(one, "fc2").weights_mem, 1024 * 2e-9);
  // etp = 1: the whole expert on one GPU, no tensor-parallel collective around its GEMMs
  EXPECT_EQ(mlp_layer(one, "fc1").comm_bwd.items[0].volume_gb, 0.0);
  EXPECT_EQ(mlp_layer(one, "fc2").comm_fwd.items[0].volume_gb, 0.0);
  EXPECT_GT(mlp_layer(tp, "fc1").comm_bwd.items[0].volume_gb, 0.0);
  EXPECT_GT(mlp_layer(tp, "fc2").comm_fwd.items[0].volume_gb, 0.0);
  EXPECT_EQ(mlp_layer(tp, "fc2").comm_fwd.items[0].group, 2);
  // the token exchange: the dispatch of the expert group's routed tokens, the combine of 1/etp
  EXPECT_DOUBLE_EQ(mlp_layer(tp, "dispatch").comm_fwd.items[0].volume_gb, 1024e-9);
  EXPECT_DOUBLE_EQ(mlp_layer(one, "dispatch").comm_fwd.items[0].volume_gb, 512e-9);
  EXPECT_DOUBLE_EQ(mlp_layer(tp, "combine").comm_fwd.items[0].volume_gb, 512e-9);
  EXPECT_DOUBLE_EQ(mlp_layer(one, "combine").comm_fwd.items[0].volume_gb, 512e-9);
  EXPECT_EQ(mlp_layer(one, "dispatch").comm_fwd.items[0].group, 2);
}

// etp given as tp is the default, bit for bit.
TEST(ExpertTensorParallel, EtpEqualToTpIsTheDefault) {
  const System s = round_system();
  const Evaluation def = evaluate(s, small_moe(), layout(0), kBatch);
  const Evaluation same = evaluate(s, small_moe(), layout(2), kBatch);
  EXPECT_EQ(def.throughput, same.throughput);
  for (const TotalsField& f : kTotalsFields) EXPECT_EQ(def.totals.*f.member, same.totals.*f.member) << f.name;
}

// The grid: tp1 as etp consecutive ranks (their NVLink share gcd(etp, nv1)) and tp1 / etp groups of
// them (etr); the expert-data-parallel group is dp x tp / (etp x ep) = 4 x 2 / 2 = 4 GPUs at
// etp = 1 (etr's 2, both in the domain, and dp / ep = 2 in two domains), dp / ep = 2 at etp = 2.
TEST(ExpertTensorParallel, ExpertDataParallelGroupThroughTheGrid) {
  const ParallelGrid one = parallel_grid(layout(1));
  EXPECT_EQ(one[RankAxis::Etp], 1);
  EXPECT_EQ(one[RankAxis::Etr], 2);
  EXPECT_EQ(one.group(grid_axes("tp1")).size, 2);
  EXPECT_EQ(one.group(grid_axes("tp1")).fast, 2);
  EXPECT_EQ(parallel_grid(layout(0))[RankAxis::Etr], 1);
  // The data-parallel row: the other weights over dp = 4 at either etp, the experts' (1024 elements
  // a block at etp = 2, 2048 at etp = 1) over their group.
  const System s = round_system();
  struct Expected {
    std::int64_t etp;
    double expert_volume_gb;
    std::int64_t group, fast;
  };
  const CommSet other = evaluate(s, small_moe(), layout(0), kBatch).dp_row.cost.comm_bwd;
  for (const Expected& want : {Expected{0, 1024 * 2e-9, 2, 1}, Expected{1, 2048 * 2e-9, 4, 2}}) {
    const CommSet row = evaluate(s, small_moe(), layout(want.etp), kBatch).dp_row.cost.comm_bwd;
    ASSERT_EQ(row.count, 2);
    EXPECT_EQ(row.items[0].group, 4);
    EXPECT_DOUBLE_EQ(row.items[0].volume_gb, other.items[0].volume_gb);
    EXPECT_DOUBLE_EQ(row.items[1].volume_gb, want.expert_volume_gb) << "etp " << want.etp;
    EXPECT_EQ(row.items[1].group, want.group) << "etp " << want.etp;
    EXPECT_EQ(row.items[1].fast_domain, want.fast) << "etp " << want.etp;
  }
}

// Weights per GPU grow by the experts' (2 blocks x (2048 - 1024) elements, 2 bytes each); the
// optimizer states do not: experts x params / (ep x etp) sharded over dp x tp / (etp x ep) is
// experts x params / (dp x tp) at any etp (2048 / 4 = 1024 / 2 = 512 a block).
TEST(ExpertTensorParallel, WeightsPerGpu) {
  const System s = round_system();
  const Totals tp = evaluate(s, small_moe(), layout(0), kBatch).totals;
  const Totals one = evaluate(s, small_moe(), layout(1), kBatch).totals;
  EXPECT_DOUBLE_EQ(one.wts_mem - tp.wts_mem, 2 * 1024 * 2e-9);
  EXPECT_DOUBLE_EQ(one.wts_optimizer_states_mem, tp.wts_optimizer_states_mem);
}

TEST(ExpertTensorParallel, RulesSayWhy) {
  const System s = round_system();
  Layout c = layout(3);
  EXPECT_EQ(config_error([&] { validate_layout(s, small_moe(), c, kBatch); }),
            "etp=3 does not divide tp=2 (each routed expert splits over the innermost etp GPUs of the tensor-parallel "
            "group)");
  Transformer dense = small_moe();
  dense.moe = {};
  c = layout(1);
  c.exec.ep = 1;
  EXPECT_EQ(config_error([&] { validate_layout(s, dense, c, kBatch); }), "etp=1 needs a mixture-of-experts model");
  c.exec.etp = 2;  // tp itself: nothing to refuse
  EXPECT_EQ(config_error([&] { validate_layout(s, dense, c, kBatch); }), "");
}

}  // namespace
}  // namespace perfsweep
