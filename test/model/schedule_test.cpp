// Pipeline schedules (model/block.hpp: PipelineSchedule; model/step.hpp: schedule_bubble,
// schedule_activation_factor, stage_totals, step_memory): each schedule's bubble, activations in
// flight and parameter copies against the formulas of its paper, worked by hand on a round
// stage; the weight-gradient part W of a module's backward; the layouts each schedule refuses.
//   1F1B (Narayanan et al. 2021)            bubble (p - 1)(F + B + W)       activations p
//   ZB-H1 (Qi et al., ICLR 2024, Table 1)   (p - 1)(F + B - W)              p
//   ZB-H2 (the same)                        (p - 1)(F + B - 2W), at least 0 2p - 1
//   DualPipe (DeepSeek-V3 report, Table 2)  (p/2 - 1)(F&B + B_full - 3W)    p + 1, parameters 2x
// where B is the input gradients' backward, W the weight gradients', B_full = B + W, and
// F&B = F + B_full (the two chunks' overlap hides communication, not compute).
#include <gtest/gtest.h>

#include <string>

#include "common/round_system.hpp"
#include "model/step.hpp"

namespace perfsweep {
namespace {

using test::config_error;
using test::round_system;

// A stage of 4 blocks, each 1 s forward and 2 s backward (1 s of it weight gradients) per
// micro-batch, 1 GB of weights and 0.5 GB of activations; pp = 4, 8 micro-batches, dp = 1, no
// communication. A micro-batch's slot: F + B + W = 4 x 3 = 12 s, of it W = 4 s and B_full 8 s.
Totals round_stage(PipelineSchedule schedule) {
  BlockSummary b;
  b.mlp = {.t_fwd = 1, .t_bwd = 2, .weights_mem = 1, .activation_buffer = 0.5, .t_bwd_weight = 1};
  Execution x;
  x.schedule = schedule;
  return stage_totals(b, ModuleSums{}, 0, 0, 4, 4, 1, 1, 8, 4, x);
}

TEST(Schedules, BubbleByHand) {
  // 1F1B: 3 x 12 = 36 s; ZB-H1: 3 x (12 - 2 x 4) = 12 s; ZB-H2: 3 x max(0, 12 - 3 x 4) = 0;
  // DualPipe: (4/2 - 1) x (12 + 8 - 3 x 4) = 8 s. The work is 8 x 12 = 96 s under each.
  const std::pair<PipelineSchedule, double> bubbles[] = {{PipelineSchedule::OneFOneB, 36},
                                                         {PipelineSchedule::ZeroBubbleH1, 12},
                                                         {PipelineSchedule::ZeroBubbleH2, 0},
                                                         {PipelineSchedule::DualPipe, 8}};
  for (const auto& [schedule, bubble] : bubbles) {
    const Totals t = round_stage(schedule);
    const std::string name = kScheduleNames[static_cast<std::size_t>(schedule)];
    EXPECT_EQ(t.t_bubble, bubble) << name;
    EXPECT_EQ(t.t, 96 + bubble) << name;
  }
  // W larger than a third of the slot: ZB-H2's bubble stays at 0, not negative; likewise ZB-H1's
  // with W above half the slot (F + B < W) and DualPipe's with 3W above F + 2 B_full
  EXPECT_EQ(schedule_bubble(PipelineSchedule::ZeroBubbleH2, 4, 12, 10, 5), 0.0);
  EXPECT_EQ(schedule_bubble(PipelineSchedule::ZeroBubbleH1, 4, 12, 10, 7), 0.0);
  EXPECT_EQ(schedule_bubble(PipelineSchedule::DualPipe, 8, 12, 11, 11), 0.0);
  // DualPipe on 2 stages: p/2 - 1 = 0
  EXPECT_EQ(schedule_bubble(PipelineSchedule::DualPipe, 2, 12, 8, 4), 0.0);
}

TEST(Schedules, MemoryByHand) {
  // the reference's bytes at dp = 1: weights 4 GB, gradients 4 GB, optimizer states 6 x 4 = 24;
  // activations 4 blocks x 0.5 GB x 4 micro-batches = 8 GB under 1F1B and ZB-H1, x 7/4 = 14 under
  // ZB-H2, x 5/4 = 10 under DualPipe, which holds two stages' parameters (64 GB)
  EXPECT_EQ(round_stage(PipelineSchedule::OneFOneB).mem, 32.0 + 8);
  EXPECT_EQ(round_stage(PipelineSchedule::ZeroBubbleH1).mem, 32.0 + 8);
  EXPECT_EQ(round_stage(PipelineSchedule::ZeroBubbleH2).acts_mem, 14.0);
  EXPECT_EQ(round_stage(PipelineSchedule::ZeroBubbleH2).mem, 32.0 + 14);
  const Totals dual = round_stage(PipelineSchedule::DualPipe);
  EXPECT_EQ(dual.wts_mem, 8.0);
  EXPECT_EQ(dual.wts_grad_mem, 8.0);
  EXPECT_EQ(dual.wts_optimizer_states_mem, 48.0);
  EXPECT_EQ(dual.acts_mem, 10.0);
  EXPECT_EQ(schedule_activation_factor(PipelineSchedule::ZeroBubbleH2, 8), 15.0 / 8);
}

// W of a module: a GEMM with weights spends flops_fwd of its flops_bwd on weight gradients
// (half its backward; a third with its forward recomputed), attention none.
TEST(Schedules, WeightGradientPart) {
  const System s = round_system();
  LayerCost gemm;
  gemm.op = KernelOp::Gemm;
  gemm.flops_fwd = 8;
  gemm.flops_bwd = 16;
  gemm.weights_mem = 1;
  LayerCost recomputed = gemm;
  recomputed.flops_bwd = 24;
  LayerCost attention;
  attention.op = KernelOp::Attention;
  attention.flops_fwd = 8;
  attention.flops_bwd = 20;
  Module m;
  m.add(s, gemm);
  m.add(s, attention);
  const ModuleSums sums = sum_module(m);
  EXPECT_DOUBLE_EQ(sums.t_bwd_weight, m.layers[0].bwd.t / 2);
  EXPECT_GT(sums.t_bwd, sums.t_bwd_weight + m.layers[0].bwd.t / 2);  // the attention's is all B
  Module r;
  r.add(s, recomputed);
  EXPECT_DOUBLE_EQ(sum_module(r).t_bwd_weight, r.layers[0].bwd.t / 3);
}

std::string schedule_error(PipelineSchedule schedule, std::int64_t pp, std::int64_t interleave,
                           std::int64_t global_batch) {
  Transformer m = test::small_model();
  m.depth = 2 * pp;  // two blocks a stage
  Layout c;
  c.pp = pp;
  c.exec.schedule = schedule;
  c.exec.interleave = interleave;
  return config_error([&] { validate_layout(round_system(), m, c, global_batch); });
}

TEST(Schedules, LayoutsTheyRefuse) {
  EXPECT_EQ(schedule_error(PipelineSchedule::ZeroBubbleH1, 4, 1, 16), "");
  EXPECT_EQ(schedule_error(PipelineSchedule::DualPipe, 4, 1, 16), "");
  EXPECT_EQ(schedule_error(PipelineSchedule::DualPipe, 2, 1, 8), "");
  EXPECT_EQ(schedule_error(PipelineSchedule::DualPipe, 3, 1, 12),
            "schedule dualpipe pairs stage k with stage pp - 1 - k: pp must be even, got 3");
  EXPECT_EQ(schedule_error(PipelineSchedule::ZeroBubbleH1, 1, 1, 16), "schedule zb-h1 needs pipeline stages (pp > 1)");
  EXPECT_EQ(schedule_error(PipelineSchedule::ZeroBubbleH2, 4, 2, 16),
            "schedule zb-h2 runs one chunk a stage, got interleave=2");
  EXPECT_EQ(schedule_error(PipelineSchedule::DualPipe, 8, 1, 16), "");
  EXPECT_EQ(schedule_error(PipelineSchedule::DualPipe, 4, 1, 6),
            "schedule dualpipe feeds half the micro-batches from each end: needs an even count of at least 2 pp = 8, "
            "got 6");
  EXPECT_EQ(schedule_error(PipelineSchedule::DualPipe, 4, 1, 10), "");
  EXPECT_EQ(schedule_error(PipelineSchedule::DualPipe, 4, 1, 9),
            "schedule dualpipe feeds half the micro-batches from each end: needs an even count of at least 2 pp = 8, "
            "got 9");
  const ExecutionOption& schedule = *find_execution_option("schedule");
  EXPECT_EQ(parse_option_value(schedule, "zb-h2", "--schedule"), static_cast<std::int64_t>(PipelineSchedule::ZeroBubbleH2));
  EXPECT_THROW(parse_option_value(schedule, "gpipe", "--schedule"), InputError);
}

}  // namespace
}  // namespace perfsweep
