// Uneven pipeline stages (model/plan.hpp: stage_blocks, interleaved_chunks, slotted_stages;
// model/step.hpp: compose_step, balanced_stages): Megatron-LM's partition, hand-derived stage
// times and memory of a Llama 3 405B-like split (126 blocks on 16 stages, 7 on each end, 8 in the
// middle) with and without interleaving, the balanced partition, Megatron-LM's rules for cutting
// uneven stages into interleaved chunks, and the errors that name a bad partition.
#include <gtest/gtest.h>

#include <string>

#include "common/round_system.hpp"
#include "model/parameters.hpp"
#include "model/step.hpp"

namespace perfsweep {
namespace {

using test::config_error;
using test::round_system;

Execution stages(std::int64_t first, std::int64_t last) {
  Execution x;
  x.first_stage_blocks = first;
  x.last_stage_blocks = last;
  return x;
}

// A model of `depth` blocks (what Megatron-LM's partition reads).
Transformer deep(std::int64_t depth) {
  Transformer m;
  m.depth = depth;
  return m;
}

// "first/middle/last"
std::string text(const StageBlocks& b) {
  return std::to_string(b.first) + "/" + std::to_string(b.middle) + "/" + std::to_string(b.last);
}

TEST(StageBlocks, MegatronPartition) {
  const StageBlocks llama = stage_blocks(deep(126), 16, stages(7, 7));
  EXPECT_EQ(text(llama), "7/8/7");
  EXPECT_FALSE(llama.even());
  // the stages not given share the rest: 126 - 6 = 120 over 15 stages
  EXPECT_EQ(text(stage_blocks(deep(126), 16, stages(6, 0))), "6/8/8");
  EXPECT_EQ(text(stage_blocks(deep(126), 16, stages(0, 6))), "8/8/6");
  EXPECT_EQ(text(stage_blocks(deep(30), 2, stages(14, 16))), "14/14/16");
  EXPECT_FALSE(stage_blocks(deep(30), 2, stages(14, 16)).even());
  EXPECT_TRUE(stage_blocks(deep(128), 16, {}).even());
  EXPECT_TRUE(stage_blocks(deep(128), 16, stages(8, 8)).even());
  EXPECT_TRUE(stage_blocks(deep(30), 2, stages(15, 0)).even());
  EXPECT_TRUE(stage_blocks(deep(30), 1, {}).even());
}

// A block of 1 s forward and 2 s backward per micro-batch, 1 GB of weights and 0.5 GB of
// activations; the embedding 0.5 s and 0.5 GB, the LM head and loss 4 s and 0.5 GB. No
// communication (dp = 1, no pipeline transfers), 32 micro-batches, the reference's bytes
// (weights 1x, gradients 1x, optimizer states 6x of the 2-byte weights).
BlockSummary round_block() {
  BlockSummary b;
  b.mlp = {.t_fwd = 1, .t_bwd = 2, .weights_mem = 1, .activation_buffer = 0.5};
  return b;
}

StageEndSums round_ends() {
  StageEndSums e;
  e.first = {.t_fwd = 0.25, .t_bwd = 0.25, .weights_mem = 0.5};
  e.last = {.t_fwd = 1, .t_bwd = 3, .weights_mem = 0.5};
  return e;
}

Transformer llama_like() {
  Transformer m;
  m.depth = 126;
  m.vocab_size = 1;  // the ends' sums are given
  return m;
}

Layout llama_layout() {
  Layout c;
  c.pp = 16;
  c.exec = stages(7, 7);
  return c;
}

// Per micro-batch: the first stage 7 x 3 + 0.5 = 21.5 s, a middle one 8 x 3 = 24 s, the last
// 7 x 3 + 4 = 25 s. The step is the last's: 32 x 25 + 15 x 25 (its bubble) = 1175 s.
// Memory: the first (7 + 0.5) x 8 + 7 x 0.5 x 16 in flight = 116 GB, a middle one 8 x 8 +
// 8 x 0.5 x 15 = 124 GB, the last (7 + 0.5) x 8 + 7 x 0.5 x 1 = 63.5 GB: the middle is fullest.
// The llama-like step of the round block under `c` (its stages' time and memory fields).
struct StepByHand {
  double t, bubble;
  std::int64_t time_stage;
  double mem, acts;
  std::int64_t memory_stage;
};
void expect_step(const Layout& c, const StepByHand& x) {
  const StepCosts step = compose_step(round_system(), llama_like(), c, round_block(), 32, round_ends());
  EXPECT_EQ(step.totals.t, x.t);
  EXPECT_EQ(step.totals.t_bubble, x.bubble);
  EXPECT_EQ(step.model.time_stage, x.time_stage);
  EXPECT_EQ(step.totals.mem, x.mem);
  EXPECT_EQ(step.totals.acts_mem, x.acts);
  EXPECT_EQ(step.totals.wts_mem, 8.0);
  EXPECT_EQ(step.model.memory_stage, x.memory_stage);
}

TEST(UnevenStages, SlowestTimeFullestMemory) { expect_step(llama_layout(), {1175.0, 375.0, 15, 124.0, 60.0, 1}); }

// Each stage as stage_totals costs it alone: the composition takes the time fields of the
// slowest and the memory fields of the fullest, bit for bit.
TEST(UnevenStages, EachStageAsStageTotals) {
  const BlockSummary b = round_block();
  const StageEndSums e = round_ends();
  const Totals first = stage_totals(b, e.first, 0, 0, 7, 16, 1, 1, 32, 16);
  const Totals middle = stage_totals(b, ModuleSums{}, 0, 0, 8, 16, 1, 1, 32, 15);
  const Totals last = stage_totals(b, e.last, 0, 0, 7, 16, 1, 1, 32, 1);
  EXPECT_EQ(first.t, 1010.5);
  EXPECT_EQ(middle.t, 1128.0);
  EXPECT_EQ(first.mem, 116.0);
  EXPECT_EQ(last.mem, 63.5);
  const Totals x = compose_step(round_system(), llama_like(), llama_layout(), b, 32, e).totals;
  for (const TotalsField& f : kTotalsFields) {
    const bool memory = f.member == &Totals::mem || f.member == &Totals::wts_mem ||
                        f.member == &Totals::wts_grad_mem || f.member == &Totals::wts_optimizer_states_mem ||
                        f.member == &Totals::acts_mem;
    EXPECT_EQ(x.*f.member, (memory ? middle : last).*f.member) << f.name;
  }
}

// The step of `block` on a model of `depth` blocks without a vocabulary, pp stages partitioned by
// `x`, 32 micro-batches.
StepCosts plain_step(std::int64_t depth, std::int64_t pp, const Execution& x, const BlockSummary& block) {
  Transformer m;
  m.depth = depth;
  Layout c;
  c.pp = pp;
  c.exec = x;
  return compose_step(round_system(), m, c, block, 32);
}

// Without a vocabulary the last stage of an uneven split can still bound the step: 10 blocks
// there, 8 on the first (in flight 16) and 9 on the others.
TEST(UnevenStages, WithoutVocabularyTheLastCounts) {
  const StepCosts step = plain_step(144, 16, stages(8, 10), round_block());
  EXPECT_EQ(step.model.time_stage, 15);
  EXPECT_EQ(step.totals.t, (32 + 15) * 30.0);
  EXPECT_EQ(step.model.memory_stage, 1);  // 9 x 8 + 9 x 0.5 x 15 = 139.5 against 8 x 8 + 64 = 128
  EXPECT_EQ(step.totals.mem, 139.5);
}

// Given explicitly, the even split is the default to the last bit.
TEST(UnevenStages, ExplicitEvenSplitIsTheDefault) {
  Transformer m = llama_like();
  m.depth = 128;
  Layout even;
  even.pp = 16;
  Layout given = even;
  given.exec = stages(8, 8);
  const StepCosts a = compose_step(round_system(), m, even, round_block(), 32, round_ends());
  const StepCosts b = compose_step(round_system(), m, given, round_block(), 32, round_ends());
  for (const TotalsField& f : kTotalsFields) EXPECT_EQ(a.totals.*f.member, b.totals.*f.member) << f.name;
  EXPECT_EQ(a.model.time_stage, b.model.time_stage);
  EXPECT_EQ(a.model.memory_stage, b.model.memory_stage);
}

// 126 blocks of 1 s on 16 stages, 0.9 s of embedding and 1.6 s of LM head: 7 + 14 x 8 + 7, the
// slowest stage the last at 8.6 s (8 on the first would make it 8.9 s).
TEST(BalancedStages, LlamaPartition) {
  EXPECT_EQ(text(balanced_stages(126, 16, 1, 1.0, 0, 0.9, 1.6)), "7/8/7");
  // no end layers: 30 on 4 stages takes 8 blocks on the slowest at best (6 + 8 + 8 + 8,
  // 7 + 8 + 8 + 7, 8 + 7 + 7 + 8); the fewest on the first stage win
  EXPECT_EQ(text(balanced_stages(30, 4, 1, 1.0, 0, 0, 0)), "6/8/8");
  // the host's floor (2 s a block) over the blocks' 1 s: 8 in the middle take 16 s, and the first
  // stage may hold 6 (12 s) with 8 on the last (16 s)
  EXPECT_EQ(text(balanced_stages(126, 16, 1, 1.0, 2.0, 0.9, 1.6)), "6/8/8");
  // a heavy LM head moves blocks to the first stage: 10 blocks on 2 stages, 3.5 s of head (7 + 3:
  // 7 s and 6.5 s; 6 + 4 would take 7.5 s); with pp = 2 the middle reads as the first
  EXPECT_EQ(text(balanced_stages(10, 2, 1, 1.0, 0, 0, 3.5)), "7/7/3");
  // MoE every 2 blocks: stages in whole pairs. 24 on 5 stages with a head of 2 s: 3 x 6 in the
  // middle bound it at 6 s, and of 2 + 4 and 4 + 2 on the ends (6 s each) fewer on the first wins.
  EXPECT_EQ(text(balanced_stages(24, 5, 2, 1.0, 0, 0, 2.0)), "2/6/4");
  EXPECT_EQ(config_error([] { balanced_stages(10, 11, 1, 1.0, 0, 0, 0); }),
            "no partition of depth 10 over pp=11 stages gives each stage at least one block");
  EXPECT_EQ(config_error([] { balanced_stages(10, 4, 4, 1.0, 0, 0, 0); }),
            "no partition of depth 10 over pp=4 stages gives each stage at least one block in whole groups of "
            "moe.every=4");
}

// `partition`: the runtime's (Mechanisms::stage_partition).
std::string partition_error(std::int64_t depth, std::int64_t pp, const Execution& x,
                            StagePartition partition = StagePartition::Even) {
  Transformer m = test::small_model();
  m.depth = depth;
  Layout c;
  c.pp = pp;
  c.exec = x;
  Mechanisms mech;
  mech.stage_partition = partition;
  return config_error([&] { validate_layout(round_system(), m, c, 64, mech); });
}

TEST(UnevenStages, ErrorsNameThePartition) {
  EXPECT_EQ(partition_error(126, 16, stages(7, 7)), "");
  EXPECT_EQ(partition_error(126, 16, stages(-1, 7)), "first_stage_blocks must be >= 0 (0: an even share), got -1");
  EXPECT_EQ(partition_error(126, 1, stages(7, 0)), "first_stage_blocks=7 needs pipeline stages (pp > 1)");
  EXPECT_EQ(partition_error(126, 16, stages(7, 6)),
            "first_stage_blocks=7 and last_stage_blocks=6 leave 113 of depth 126 blocks, which the other 14 "
            "stages of pp=16 cannot share evenly");
  EXPECT_EQ(partition_error(126, 16, stages(100, 20)),
            "first_stage_blocks=100 and last_stage_blocks=20 leave 6 of depth 126 blocks for the other 14 stages "
            "of pp=16, fewer than one each");
  EXPECT_EQ(partition_error(126, 16, stages(0, 7)),
            "last_stage_blocks=7 leaves 119 of depth 126 blocks, which the other 15 stages of pp=16 cannot share "
            "evenly");
  EXPECT_EQ(partition_error(30, 2, stages(14, 15)), "first_stage_blocks=14 and last_stage_blocks=15 must add up to "
                                                     "depth 30 with pp=2");
  EXPECT_EQ(partition_error(126, 16, {}),
            "pp=16 does not divide depth 126: give the end stages' blocks (--first-stage-blocks and "
            "--last-stage-blocks: numbers, or auto to balance the stages) under a runtime that runs uneven stages, "
            "or a pp dividing 126 (1, 2, 3, 6, 7, 9, 14, 18, 21, 42, 63, 126)");
  // interleaved: Llama 3's 7 + 14 x 8 + 7 is Megatron-LM's slotted split (the embedding and the
  // loss each taking a slot of the ends) for V = 2, 4, 8; V = 3 divides no stage's 8 slots
  Execution interleaved = stages(7, 7);
  for (const std::int64_t v : {2, 4, 8}) {
    interleaved.interleave = v;
    EXPECT_EQ(partition_error(126, 16, interleaved), "") << "V=" << v;
  }
  interleaved.interleave = 3;
  EXPECT_EQ(partition_error(126, 16, interleaved),
            "interleave=3 cannot cut the stages' blocks (7 on the first stage, 8 on a middle one, 7 on the last) "
            "into chunks as Megatron-LM does: each a multiple of 3, or k a stage (a multiple of 3) with the first "
            "and last holding k or k - 1, the embedding and the loss taking a slot");
}

// Megatron-LM's rules for cutting uneven stages into V chunks (its TransformerConfig checks of
// --decoder-first/last-pipeline-num-layers with --num-virtual-stages-per-pipeline-rank, and
// --account-for-embedding/loss-in-pipeline-split), worked by hand.
std::string chunks(const StageBlocks& b, std::int64_t pp, std::int64_t v) {
  const InterleavedChunks c = interleaved_chunks(b, pp, v);
  if (!c.valid) return "no";
  return std::to_string(c.slots) + (c.embedding_slot ? " embedding" : "") + (c.loss_slot ? " loss" : "");
}

TEST(InterleavedStages, MegatronChunks) {
  // 7 + 14 x 8 + 7: slots of 8, the embedding and the loss in one each of the ends'
  EXPECT_EQ(chunks({7, 8, 7}, 16, 2), "8 embedding loss");
  EXPECT_EQ(chunks({7, 8, 7}, 16, 8), "8 embedding loss");
  EXPECT_EQ(chunks({7, 8, 7}, 16, 3), "no");
  // every stage a multiple of V: Megatron-LM's first/last stage counts, no slot
  EXPECT_EQ(chunks({8, 8, 6}, 16, 2), "8");
  EXPECT_EQ(chunks({6, 8, 8}, 16, 4), "no");  // 6 is neither a multiple of 4 nor 8 - 1
  EXPECT_EQ(chunks({8, 8, 7}, 16, 4), "8 loss");
  EXPECT_EQ(chunks({7, 8, 8}, 16, 4), "8 embedding");
  EXPECT_EQ(chunks({6, 8, 7}, 16, 4), "no");
  // pp = 2 has no middle stage: k is the larger end's count
  EXPECT_EQ(chunks({15, 15, 14}, 2, 5), "15 loss");
  EXPECT_EQ(chunks({15, 15, 14}, 2, 3), "15 loss");
  EXPECT_EQ(chunks({15, 15, 14}, 2, 2), "no");
  EXPECT_EQ(chunks({8, 8, 7}, 1, 2), "no");  // no pipeline
}

// The slotted partition: ceil(depth / pp) slots a stage, the loss filling the last stage's
// spare slot and, with two over, the embedding the first's.
TEST(InterleavedStages, SlottedPartition) {
  EXPECT_EQ(text(slotted_stages(126, 16, 2)), "7/8/7");  // 128 slots, 2 over
  EXPECT_EQ(text(slotted_stages(126, 16, 8)), "7/8/7");
  EXPECT_EQ(text(slotted_stages(127, 16, 4)), "8/8/7");  // 1 over: the loss's
  EXPECT_EQ(text(slotted_stages(29, 2, 5)), "15/15/14");
  EXPECT_EQ(text(slotted_stages(126, 16, 3)), "0/0/0");  // 8 slots do not cut in 3
  EXPECT_EQ(text(slotted_stages(125, 16, 2)), "0/0/0");  // 3 over
  EXPECT_EQ(text(slotted_stages(128, 16, 2)), "0/0/0");  // even: not slotted
  EXPECT_EQ(text(slotted_stages(10, 16, 2)), "0/0/0");   // fewer blocks than stages
}

// Interleaved 1F1B over the 7 + 14 x 8 + 7 split (V = 2, 32 micro-batches): each stage's bubble
// is (p - 1) / V of its micro-batch, and its activations pp (1 + (p - 1) / (p V)) micro-batches'
// worth (Korthikanti et al. 2022, section 4.2.3). Per micro-batch the first stage takes 21.5 s,
// a middle one 24 s, the last 25 s: the step is the last's, 32 x 25 + 15 x 25 / 2 = 987.5 s.
// Memory: (1 + 15 / 32) = 1.46875 times the 1F1B activations, the middle's 8 x 8 + 8 x 0.5 x 15
// x 1.46875 = 152.125 GB the fullest (the first's 60 + 82.25, the last's 60 + 5.140625).
TEST(InterleavedStages, UnevenStepByHand) {
  Layout c = llama_layout();
  c.exec.interleave = 2;
  expect_step(c, {987.5, 187.5, 15, 152.125, 88.125, 1});
}

// nanotron's partition (StagePartition::Nanotron), worked by hand. A block costs 4 e^2 + 3 f e,
// the LM head V e; a stage closes once the cumulative cost passes k / pp of the total.
Transformer nanotron_model(std::int64_t depth, std::int64_t e, std::int64_t f, std::int64_t vocab) {
  Transformer m = test::small_model();
  m.depth = depth;
  m.e = e;
  m.f = f;
  m.vocab_size = vocab;
  return m;
}

constexpr StagePartition kNanotron = StagePartition::Nanotron;

TEST(NanotronStages, PartitionByHand) {
  // Llama 2 7B's shape: a block 4 x 4096^2 + 3 x 11008 x 4096 = 202,375,168, the head 32000 x
  // 4096 = 131,072,000, the total 6,607,077,376 and a quarter 1,651,769,344: 8 blocks
  // (1,619,001,344) do not pass it, 9 do; half is passed at 17 blocks (3,440,377,856 against
  // 3,303,538,688 > 16 blocks' 3,238,002,688), three quarters at 25 (5,059,379,200 > 4,955,308,032
  // > 24 blocks' 4,857,004,032): 9, 8, 8 and 7 blocks.
  const StageBlocks llama = stage_blocks(nanotron_model(32, 4096, 11008, 32000), 4, {}, kNanotron);
  EXPECT_EQ(text(llama), "9/8/7");
  EXPECT_EQ(llama.middle_index, 1);
  // e = f = 10: a block 700, the head 112 x 10 = 1120 (1.6 blocks); total 12,320, a quarter 3,080
  // (4.4 blocks): stages close after 5, 9 and 14 blocks: 5, 4, 5 and 2. The middle costed is the
  // fuller one, the third stage.
  const StageBlocks uneven = stage_blocks(nanotron_model(16, 10, 10, 112), 4, {}, kNanotron);
  EXPECT_EQ(text(uneven), "5/5/2");
  EXPECT_EQ(uneven.middle_index, 2);
  // More stages than blocks: a block passes each share (350 of 2,800), so the four blocks fill the
  // first four stages and the other four hold none.
  const StageBlocks sparse = stage_blocks(nanotron_model(4, 10, 10, 0), 8, {}, kNanotron);
  EXPECT_EQ(text(sparse), "1/1/0");
  // One stage: every block; counts given: Megatron-LM's partition as before.
  EXPECT_EQ(text(stage_blocks(nanotron_model(16, 10, 10, 112), 1, {}, kNanotron)), "16/16/16");
  Execution given;
  given.first_stage_blocks = 3;
  given.last_stage_blocks = 5;
  EXPECT_EQ(text(stage_blocks(nanotron_model(16, 10, 10, 112), 4, given, kNanotron)), "3/4/5");
}

// A partition Megatron-LM's counts can express (9, 8, 8, 7) costs the same through either, bit for
// bit; nanotron's of 5, 4, 5, 2 blocks is costed stage by stage: the first (5 x 3 + 0.5 = 15.5 s
// a micro-batch) bounds the step at (32 + 3) x 15.5 = 542.5 s and holds the most, (5 + 0.5) x 8
// GB of states and 5 x 0.5 x 4 in flight: 54 GB.
TEST(NanotronStages, ComposedStageByStage) {
  const Transformer llama = nanotron_model(32, 4096, 11008, 32000);
  Runtime by_cost_runtime = reference_runtime();  // the reference's step with nanotron's partition
  by_cost_runtime.mechanisms.stage_partition = kNanotron;
  Layout by_cost;
  by_cost.pp = 4;
  Layout by_count;
  by_count.pp = 4;
  by_count.exec = stages(9, 7);
  const Totals a =
      compose_step(round_system(), llama, by_cost_runtime, by_cost, round_block(), 32, round_ends()).totals;
  const Totals b = compose_step(round_system(), llama, by_count, round_block(), 32, round_ends()).totals;
  for (const TotalsField& f : kTotalsFields) EXPECT_EQ(a.*f.member, b.*f.member) << f.name;

  const StepCosts step = compose_step(round_system(), nanotron_model(16, 10, 10, 112), by_cost_runtime, by_cost,
                                     round_block(), 32, round_ends());
  EXPECT_EQ(step.totals.t, 542.5);
  EXPECT_EQ(step.model.time_stage, 0);
  EXPECT_EQ(step.totals.mem, 54.0);
  EXPECT_EQ(step.model.memory_stage, 0);
}

// The runtime's partition takes any depth but no given counts and no interleaving.
TEST(NanotronStages, ErrorsNameTheRuntimesPartition) {
  EXPECT_EQ(partition_error(126, 16, {}, kNanotron), "");
  EXPECT_EQ(partition_error(28, 32, {}, kNanotron), "");
  Execution x;
  x.first_stage_blocks = 7;
  EXPECT_EQ(partition_error(126, 16, x, kNanotron),
            "first_stage_blocks=7: the runtime partitions the stages itself (stage_partition nanotron)");
  x = Execution{};
  x.interleave = 2;
  EXPECT_EQ(partition_error(126, 16, x, kNanotron),
            "the nanotron stage partition has no interleaved schedule (interleave=2)");
}


// Dense first blocks (moe.first_dense, DeepSeek's first_k_dense_replace): the MoE block of
// round_block beside a dense block of half its time and a quarter of its weights and half its
// activations, the model's first three blocks dense.
BlockSummary dense_first_block(double dense_time_scale = 0.5) {
  BlockSummary b = round_block();
  b.first_dense = 3;
  b.dense_mlp = {.t_fwd = dense_time_scale, .t_bwd = 2 * dense_time_scale, .weights_mem = 0.25,
                 .activation_buffer = 0.25};
  return b;
}

TEST(DenseFirstBlocks, StageBlockIsItsOwnBlocksMean) {
  BlockSummary b = dense_first_block();
  b.expert_weights_gb = 0.75;
  b.whole_block_weights_gb = 1;
  const BlockSummary moe = stage_block(b, 0, 4), dense = stage_block(b, 4, 4), half = stage_block(b, 2, 4);
  EXPECT_EQ(moe.mlp.t_fwd, 1.0);
  EXPECT_EQ(moe.expert_weights_gb, 0.75);
  EXPECT_EQ(moe.whole_block_weights_gb, 0.0);  // one kind: the block's own
  EXPECT_EQ(dense.mlp.t_fwd, 0.5);
  EXPECT_EQ(dense.mlp.weights_mem, 0.25);
  EXPECT_EQ(dense.expert_weights_gb, 0.0);
  // two of each: the mean, the experts of the two MoE blocks, ZeRO-3's larger block
  EXPECT_EQ(half.mlp.t_fwd, 0.75);
  EXPECT_EQ(half.mlp.t_bwd, 1.5);
  EXPECT_EQ(half.mlp.weights_mem, 0.625);
  EXPECT_EQ(half.expert_weights_gb, 0.375);
  EXPECT_EQ(half.whole_block_weights_gb, 1.0);
  // without dense first blocks a stage's block is the block, whatever it is told
  const BlockSummary plain = stage_block(round_block(), 2, 4);
  EXPECT_EQ(plain.mlp.t_fwd, 1.0);
}

// Of the first 3 blocks, those each stage holds: in order over 2 + 14 x 4 + 3 (DeepSeek-V3's 61 on
// 16 stages), and over interleaved chunks in Megatron-LM's order (chunk 0 of every stage first).
TEST(DenseFirstBlocks, LeadingBlocksOnEachStage) {
  const StageBlocks v3{2, 4, 3};
  EXPECT_EQ(leading_blocks_on_stage(v3, 16, 1, 3, 0), 2);
  EXPECT_EQ(leading_blocks_on_stage(v3, 16, 1, 3, 1), 1);
  EXPECT_EQ(leading_blocks_on_stage(v3, 16, 1, 3, 2), 0);
  EXPECT_EQ(leading_blocks_on_stage(v3, 16, 1, 3, 15), 0);
  EXPECT_EQ(leading_blocks_on_stage(StageBlocks{61, 61, 61}, 1, 1, 3, 0), 3);
  // 4 blocks a stage in 2 chunks of 2: blocks 0-1 on stage 0, 2-3 on stage 1
  EXPECT_EQ(leading_blocks_on_stage(StageBlocks{4, 4, 4}, 4, 2, 3, 0), 2);
  EXPECT_EQ(leading_blocks_on_stage(StageBlocks{4, 4, 4}, 4, 2, 3, 1), 1);
  EXPECT_EQ(leading_blocks_on_stage(StageBlocks{4, 4, 4}, 4, 2, 3, 2), 0);
  // slotted 7 + 14 x 8 + 7 in 8 chunks of one slot: the first chunk of stage 0 holds the embedding
  // alone, so blocks 0, 1, 2 sit on stages 1, 2, 3
  const StageBlocks slotted{7, 8, 7};
  EXPECT_EQ(leading_blocks_on_stage(slotted, 16, 8, 3, 0), 0);
  EXPECT_EQ(leading_blocks_on_stage(slotted, 16, 8, 3, 1), 1);
  EXPECT_EQ(leading_blocks_on_stage(slotted, 16, 8, 3, 3), 1);
  EXPECT_EQ(leading_blocks_on_stage(slotted, 16, 8, 3, 4), 0);
  // a pipeline layout's chunks (Megatron Bridge's "Et|(tt|)*30mL" on pp 8 x 4: 7 + 6 x 8 + 6, chunks
  // of 2 but the first, 1): block 0 on stage 0, blocks 1-2 in stage 1's first chunk
  StageBlocks layout{7, 8, 6};
  layout.chunk = 2;
  EXPECT_EQ(leading_blocks_on_stage(layout, 8, 4, 3, 0), 1);
  EXPECT_EQ(leading_blocks_on_stage(layout, 8, 4, 3, 1), 2);
  EXPECT_EQ(leading_blocks_on_stage(layout, 8, 4, 3, 2), 0);
  // "Et*4|(t*4|)*14tmL" on pp 4 x 4 (16 + 2 x 16 + 13, chunks of 4): the 3 in stage 0's first chunk
  StageBlocks four{16, 16, 13};
  four.chunk = 4;
  EXPECT_EQ(leading_blocks_on_stage(four, 4, 4, 3, 0), 3);
  EXPECT_EQ(leading_blocks_on_stage(four, 4, 4, 3, 1), 0);
  const InterleavedChunks none;
  EXPECT_EQ(chunk_blocks(four, none, 4, 4, 3, 3), 1);
  EXPECT_EQ(chunk_blocks(four, none, 4, 4, 0, 0), 4);
  EXPECT_EQ(chunk_blocks(layout, none, 8, 4, 0, 0), 1);
  EXPECT_EQ(chunk_blocks(layout, none, 8, 4, 7, 3), 0);
}

// 12 blocks on 4 stages, 32 micro-batches, no vocabulary. Stage 0 holds the 3 dense blocks:
// 3 x 1.5 = 4.5 s a micro-batch, the others 3 x 3 = 9 s. The step is a MoE stage's, the first of
// them (stage 1): 32 x 9 + 3 x 9 = 315 s, as a model of MoE blocks alone. Memory: stage 0
// 3 x 0.25 x 8 + 3 x 0.25 x 4 in flight = 9 GB, stage 1 3 x 8 + 3 x 0.5 x 3 = 28.5 GB, the last
// 24 + 1.5; all MoE, stage 0 would hold 24 + 6 = 30 GB.
TEST(DenseFirstBlocks, SlowestAndFullestStageOfItsOwnBlocks) {
  const StepCosts mixed = plain_step(12, 4, {}, dense_first_block());
  const StepCosts moe = plain_step(12, 4, {}, round_block());
  EXPECT_EQ(mixed.totals.t, 315.0);
  EXPECT_EQ(mixed.totals.t, moe.totals.t);
  EXPECT_EQ(mixed.model.time_stage, 1);
  EXPECT_EQ(mixed.totals.mem, 28.5);
  EXPECT_EQ(mixed.model.memory_stage, 1);
  EXPECT_EQ(moe.totals.mem, 30.0);
  EXPECT_LT(mixed.totals.mem, moe.totals.mem);
  // each stage as stage_totals costs it with its own blocks
  const Totals first = stage_totals(stage_block(dense_first_block(), 3, 3), ModuleSums{}, 0, 0, 3, 4, 1, 1, 32, 4);
  const Totals middle = stage_totals(stage_block(dense_first_block(), 0, 3), ModuleSums{}, 0, 0, 3, 4, 1, 1, 32, 3);
  EXPECT_LT(first.t, middle.t);  // a stage of dense blocks costs less than one of MoE blocks
  EXPECT_EQ(mixed.totals.t, middle.t);
  EXPECT_EQ(first.mem, 9.0);
  // dense blocks dearer than the MoE ones (2 x 3 s): the first stage bounds the step, 18 s a micro-batch
  const StepCosts dear = plain_step(12, 4, {}, dense_first_block(2.0));
  EXPECT_EQ(dear.model.time_stage, 0);
  EXPECT_EQ(dear.totals.t, (32 + 3) * 18.0);
}

// With 6 blocks a stage the dense ones spill onto stage 1 of 16 (DeepSeek-V3's 61 blocks, 2 on the
// first stage): each stage holding dense blocks is costed, and the MoE stages bound the step.
TEST(DenseFirstBlocks, SpilledDenseBlocksAreCostedWhereTheySit) {
  const StepCosts mixed = plain_step(61, 16, stages(2, 3), dense_first_block(0.1));
  const StepCosts moe = plain_step(61, 16, stages(2, 3), round_block());
  EXPECT_EQ(mixed.totals.t, moe.totals.t);  // a stage of 4 MoE blocks bounds both
  EXPECT_EQ(mixed.model.time_stage, 2);      // the first without dense blocks
  // dearer dense blocks: stage 1's one dense and three MoE blocks take 6 + 9 = 15 s against 12 s
  const StepCosts dear = plain_step(61, 16, stages(2, 3), dense_first_block(2.0));
  EXPECT_EQ(dear.model.time_stage, 1);
  EXPECT_EQ(dear.totals.t, (32 + 15) * 15.0);
}

// The balanced partition with cheaper or dearer dense first blocks.
TEST(DenseFirstBlocks, BalancedPartitionCostsThem) {
  // 10 blocks of 1 s on 2 stages: 5 + 5. The first 4 at 0.25 s: 6 + 4 (first 1 + 2 s, last 4 s;
  // 7 + 3 takes 4 s too and has more on the first)
  EXPECT_EQ(text(balanced_stages(10, 2, 1, 1.0, 0, 0, 0)), "5/5/5");
  EXPECT_EQ(text(balanced_stages(10, 2, 1, 1.0, 0, 0, 0, 4, 0.25)), "6/6/4");
  // at 2 s: 3 + 7 (6 s; the last 2 + 6 = 8 s), as 4 + 6 (8 s and 6 s) with fewer on the first
  EXPECT_EQ(text(balanced_stages(10, 2, 1, 1.0, 0, 0, 0, 4, 2.0)), "3/3/7");
  // 12 on 3 stages, the first 4 at 0.25 s: 6 + 3 + 3 takes 3 s on each (the first's 4 dense
  // blocks 1 s), where 4 + 4 + 4 takes 4 s on the middle one
  EXPECT_EQ(text(balanced_stages(12, 3, 1, 1.0, 0, 0, 0)), "4/4/4");
  EXPECT_EQ(text(balanced_stages(12, 3, 1, 1.0, 0, 0, 0, 4, 0.25)), "6/3/3");
}

// The search's bound per block (block_pass_seconds) times a stage's blocks is at most the time of
// any stage of that many: 3 dense and 1 MoE block take 3 x 1.5 + 3 = 7.5 s, 1.875 s a block.
TEST(DenseFirstBlocks, BlockPassBoundsEveryStage) {
  const BlockSummary b = dense_first_block();
  EXPECT_EQ(block_pass_seconds(0.0, b, 4), 1.875);
  EXPECT_EQ(block_pass_seconds(0.0, b, 4) * 4,
            stage_totals(stage_block(b, 3, 4), ModuleSums{}, 0, 0, 4, 1, 1, 1, 1, 1).t);
  EXPECT_LE(block_pass_seconds(0.0, b, 4) * 4,
            stage_totals(stage_block(b, 1, 4), ModuleSums{}, 0, 0, 4, 1, 1, 1, 1, 1).t);
  EXPECT_EQ(block_pass_seconds(0.0, round_block(), 4), 3.0);
}


// Multi-token prediction (mtp_layers): a depth on the last stage of two stages is one more block
// there and its layers beside the LM head; the last stage (4 blocks and the head against 4 and
// the embedding) bounds the step with or without it.
Transformer mtp_model(std::int64_t mtp_layers) {
  Transformer m = test::small_model();
  m.vocab_size = 1000;
  m.mtp_layers = mtp_layers;
  return m;
}

double flops(const ModuleSums& x) { return x.flops_fwd + x.flops_bwd; }

TEST(MultiTokenPrediction, OneMoreBlockAndItsLayersOnTheLastStage) {
  Layout c;
  c.pp = 2;
  const Evaluation plain = evaluate(round_system(), mtp_model(0), c, 8);
  const Evaluation mtp = evaluate(round_system(), mtp_model(1), c, 8);
  EXPECT_EQ(plain.model.time_stage, 1);
  EXPECT_EQ(mtp.model.time_stage, 1);
  EXPECT_GT(mtp.totals.t, plain.totals.t);
  // the last stage's work grows by one block and the module's layers, for each of 8 micro-batches
  ModuleSums module;
  for (int i = 0; i < mtp.last_stage.count; ++i) {
    const LayerResult& r = mtp.last_stage.layers[static_cast<std::size_t>(i)];
    if (std::string(r.cost.name).starts_with("mtp-")) {
      module.flops_fwd += r.cost.flops_fwd;
      module.flops_bwd += r.cost.flops_bwd;
    }
  }
  EXPECT_EQ(mtp.last_stage.count, 10);
  const double block = flops(sum_module(mtp.mlp)) + flops(sum_module(mtp.sa));
  EXPECT_NEAR(mtp.totals.flops_per_gpu - plain.totals.flops_per_gpu, 8 * (block + flops(module)),
              1e-12 * mtp.totals.flops_per_gpu);
  EXPECT_GT(flops(module), 0);
  // its weights: the projection's 2e x e and three norms' (LayerNorm: scale and shift), the block's,
  // and on a stage apart from the embedding a copy of the table (V x e), whose gradient the two
  // stages all-reduce; the head is the model's
  const ParameterCount p = count_parameters(mtp_model(1));
  EXPECT_EQ(p.mtp, count_parameters(mtp_model(0)).per_block + 2 * 1024LL * 1024 + 3 * 2 * 1024);
  EXPECT_EQ(p.total - p.mtp, count_parameters(mtp_model(0)).total);
  EXPECT_EQ(p.active, count_parameters(mtp_model(0)).active);
  const double bytes = 2e-9;  // GB per bf16 weight
  EXPECT_DOUBLE_EQ(stage_end_sums(round_system(), mtp_model(1), c, {}).tied_head_gb, 1000 * 1024 * bytes);
  EXPECT_EQ(stage_end_sums(round_system(), mtp_model(0), c, {}).tied_head_gb, 0.0);
  Layout one = c;
  one.pp = 1;
  EXPECT_EQ(stage_end_sums(round_system(), mtp_model(1), one, {}).tied_head_gb, 0.0);  // the embedding's own table
  // MFU's model FLOPs count the module and its head
  EXPECT_GT(mtp.efficiency.model_flops_per_token, plain.efficiency.model_flops_per_token);
}

}  // namespace
}  // namespace perfsweep
