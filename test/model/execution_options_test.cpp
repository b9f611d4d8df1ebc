// The execution options' table (model/execution_options.hpp): every name and bound parses back,
// and an option the table marks as the step's
// only (block_cost false: it is no part of the search's block cache key) leaves a block's cost as
// it was, so the search cannot reuse a block costed for another value of an option that changes it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/round_system.hpp"
#include "model/execution_options.hpp"
#include "model/plan.hpp"
#include "model/step.hpp"

namespace perfsweep {
namespace {

TEST(ExecutionOptions, EveryNameAndBoundParsesBack) {
  for (const ExecutionOption& o : kExecutionOptions) {
    SCOPED_TRACE(o.key);
    const std::string flag = o.flag;
    if (o.values == OptionValues::Integer) {
      EXPECT_EQ(parse_option_value(o, std::to_string(o.lo), flag), o.lo);
      EXPECT_EQ(parse_option_value(o, std::to_string(o.hi), flag), o.hi);
      EXPECT_THROW(parse_option_value(o, std::to_string(o.lo - 1), flag), InputError);
      EXPECT_THROW(parse_option_value(o, "two", flag), InputError);
      continue;
    }
    ASSERT_GE(o.names.size(), o.accepted);
    for (std::size_t i = 0; i < o.accepted; ++i) {
      EXPECT_EQ(parse_option_value(o, o.names[i], flag), static_cast<std::int64_t>(i));
      EXPECT_EQ(option_value_name(o, static_cast<std::int64_t>(i)), o.names[i]);
    }
    try {
      parse_option_value(o, "nonsense", flag);
      ADD_FAILURE() << "nonsense parsed";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(flag + " must be "), std::string::npos) << e.what();
    }
  }
  // every data type is a flag's value (mxfp8 and nvfp4 run their own recipes), nothing else
  const ExecutionOption& precision = *find_execution_option("precision");
  EXPECT_EQ(parse_option_value(precision, "nvfp4", "--precision"), static_cast<std::int64_t>(Precision::Nvfp4));
  EXPECT_THROW(parse_option_value(precision, "fp16", "--precision"), InputError);
}

TEST(ExecutionOptions, ReferenceExecutionText) {
  // every option execution_text shows at the reference's values, in the table's order
  EXPECT_EQ(execution_text(Execution{}), "recompute=none sp=on zero=1 interleave=1 layout=reference ep=1");
}

bool same(const ModuleSums& a, const ModuleSums& b) {
  return a.flops_fwd == b.flops_fwd && a.flops_bwd == b.flops_bwd && a.t_fwd == b.t_fwd && a.t_bwd == b.t_bwd &&
         a.t_fwd_comm == b.t_fwd_comm && a.t_bwd_comm == b.t_bwd_comm && a.weights_mem == b.weights_mem &&
         a.activation_buffer == b.activation_buffer && a.gemm_weights_mem == b.gemm_weights_mem &&
         a.calls == b.calls && a.fp8_weights_mem == b.fp8_weights_mem && a.t_bwd_weight == b.t_bwd_weight;
}

void expect_same_block(const BlockSummary& a, const BlockSummary& b) {
  EXPECT_TRUE(same(a.mlp, b.mlp));
  EXPECT_TRUE(same(a.sa, b.sa));
  EXPECT_EQ(a.p2p_volume_gb, b.p2p_volume_gb);
  EXPECT_EQ(a.expert_weights_gb, b.expert_weights_gb);
}

// f(model, layout, cost) for a dense and a mixture-of-experts model, each with and without context
// parallelism: tp 2, dp 4, pp 2 (ep 2 with experts); cost(x) is x's block on the round system.
template <typename F>
void for_each_block_case(F&& f) {
  const System s = test::round_system();
  Transformer dense = test::small_model();
  Transformer moe = dense;
  moe.moe.experts = 8;
  moe.moe.top_k = 2;
  for (const Transformer& m : {dense, moe}) {
    for (const std::int64_t cp : {1, 2}) {
      Layout c;
      c.dp = 4;
      c.pp = 2;
      c.mbs = 1;
      c.tensor.tp1 = 2;
      c.tensor.cp = cp;
      c.exec.ep = m.is_moe() ? 2 : 1;
      const std::vector<BlockLayer> block = describe_block(m, c.attention);
      const std::vector<BlockLayer> dense_block = describe_dense_block(m, c.attention);
      Module mlp, sa;
      f(m, c, [&](const Layout& x) { return cost_block(s, m, x, {}, block, dense_block, mlp, sa); });
    }
  }
}

// For each option the table marks as the step's only, every value it can take (its names, or
// its lower bound and the next values) gives the block of the reference's execution, on a dense
// and a mixture-of-experts model, with and without context parallelism.
TEST(ExecutionOptions, StepOnlyOptionsLeaveTheBlockAlone) {
  for_each_block_case([](const Transformer&, const Layout& c, auto&& cost) {
    const BlockSummary base = cost(c);
    std::size_t step_only = 0;
    for (const ExecutionOption& o : kExecutionOptions) {
      if (o.block_cost) continue;
      ++step_only;
      const std::int64_t n = o.values == OptionValues::Integer ? 3 : static_cast<std::int64_t>(o.accepted);
      for (std::int64_t i = 0; i < n; ++i) {
        Layout x = c;
        o.set(x.exec, o.values == OptionValues::Integer ? std::max<std::int64_t>(o.lo, 1) + i : i);
        SCOPED_TRACE(std::string(o.key) + " = " + option_value_name(o, o.get(x.exec)));
        expect_same_block(cost(x), base);
      }
    }
    // zero, interleave, layout, the stages' blocks, schedule, offload, offload_percent, rank_order
    EXPECT_GE(step_only, 9u);
  });
}

// The options the table marks as the block's change it for some value: the key must hold them.
TEST(ExecutionOptions, BlockOptionsChangeTheBlock) {
  const System s = test::round_system();
  Layout c;
  c.dp = 4;
  c.mbs = 1;
  c.tensor.tp1 = 2;
  const Transformer m = test::small_model();
  const std::vector<BlockLayer> block = describe_block(m, c.attention);
  const std::vector<BlockLayer> dense_block = describe_dense_block(m, c.attention);
  Module mlp, sa;
  const BlockSummary base = cost_block(s, m, c, {}, block, dense_block, mlp, sa);
  Layout full = c;
  full.exec.recompute = Recompute::Full;
  const BlockSummary recomputed = cost_block(s, m, full, {}, block, dense_block, mlp, sa);
  EXPECT_FALSE(same(recomputed.mlp, base.mlp));  // full recomputation keeps only the block's input
  Layout plain = c;
  plain.exec.sequence_parallel = false;
  EXPECT_FALSE(same(cost_block(s, m, plain, {}, block, dense_block, mlp, sa).mlp, base.mlp));  // all-reduces
  for (const char* key : {"recompute", "sp", "ep", "precision", "cp_comm"}) {
    const ExecutionOption* o = find_execution_option(key);
    ASSERT_NE(o, nullptr) << key;
    EXPECT_TRUE(o->block_cost) << key;
  }
}

}  // namespace
}  // namespace perfsweep

namespace perfsweep {
namespace {

// The search's block cache key holds what the block reads of the axes (block_axis_codes: mbs, nb,
// the tensor, context and expert shares): layouts that differ only in the axes the block does not
// read (dp, pp, vp: replicas and layers) and agree on the key cost the same block, dense and MoE,
// cp 1 and 2; a tensor share the key holds changes the block.
TEST(Axes, BlockKeyHoldsWhatTheBlockReads) {
  std::size_t compared = 0;
  for_each_block_case([&](const Transformer&, const Layout& c, auto&& cost) {
    const BlockSummary base = cost(c);
    for (const std::int64_t dp : {2, 4, 8}) {
      for (const std::int64_t nv_dp : {1, 2}) {
        for (const std::int64_t pp : {1, 2, 4}) {
          for (const std::int64_t nv_pp : {1, 2}) {
            for (const std::int64_t vp : {1, 2}) {
              Layout x = c;
              x.dp = dp;
              x.nv_dp = nv_dp;
              x.pp = pp;
              x.nv_pp = nv_pp;
              x.exec.interleave = vp;
              if (block_axis_codes(x) != block_axis_codes(c)) continue;  // ep's share follows nv_dp
              ++compared;
              SCOPED_TRACE("dp " + std::to_string(dp) + " nv_dp " + std::to_string(nv_dp) + " pp " +
                           std::to_string(pp) + " nv_pp " + std::to_string(nv_pp) + " vp " + std::to_string(vp));
              expect_same_block(cost(x), base);
            }
          }
        }
      }
    }
    Layout shared = c;
    shared.tensor.nv1 = 2;  // the tensor group inside a domain: its collectives over NVLink
    EXPECT_NE(block_axis_codes(shared), block_axis_codes(c));
    EXPECT_NE(cost(shared).mlp.t_fwd_comm, base.mlp.t_fwd_comm);
  });
  EXPECT_GE(compared, 4u * 30u);  // dense: all 72 a case; MoE: the half with nv_dp 1 (ep's share 1)
}

}  // namespace
}  // namespace perfsweep
