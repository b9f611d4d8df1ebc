// The model options of model/transformer.hpp, each against numbers worked out by hand on the
// made-up system of common/round_system.hpp (tensor cores 100 TFLOP/s, vector units 10, so
// flash attention's softmax and dropout flops count 10x; 2-byte elements). Counts are in TFLOP
// (1e-12 per flop) and GB (1e-9 per byte).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/round_system.hpp"
#include "common/small_models.hpp"
#include "model/block.hpp"
#include "model/collective.hpp"
#include "model/layer.hpp"
#include "model/roofline.hpp"
#include "model/step.hpp"

namespace perfsweep {
namespace {

using test::config_error;
using test::round_system;
using test::small;
using test::small_moe;

const BlockLayer& layer_named(const std::vector<BlockLayer>& block, const std::string& name) {
  for (const BlockLayer& y : block) {
    if (name == y.name) return y;
  }
  throw ConfigError("no layer " + name);
}

std::vector<std::string> names(const std::vector<BlockLayer>& block) {
  std::vector<std::string> out;
  for (const BlockLayer& y : block) out.emplace_back(y.name);
  return out;
}

LayerCost shard_1d(const Transformer& m, const std::string& name, std::int64_t b, std::int64_t tp) {
  const std::vector<BlockLayer> block = describe_block(m, {});
  return shard_layer(round_system(), Strategy::OneD, layer_named(block, name), b, m, {tp, 1, 1, 1, 1}, {});
}

// GQA: e = 1024, 16 heads of 64, 4 key/value heads: qkv is 1024 -> (16 + 2 x 4) x 64 = 1536.
TEST(GroupedQueryAttention, QkvWidthAndReplicatedKeyValueHeads) {
  Transformer m = small(1024, 16, 4096, 128);
  m.kv_heads = 4;
  EXPECT_EQ(layer_named(describe_block(m, {}), "qkv").out, 1536);
  // tp = 2: 8 query heads and 2 key/value heads per GPU, (8 + 4) x 64 = 768 columns.
  EXPECT_EQ(kv_heads_per_gpu(m, 2), 2);
  EXPECT_EQ(qkv_columns(m, 2), 2 * 768);
  // tp = 8 > 4 key/value heads: each GPU keeps one whole group, (2 + 2) x 64 = 256 columns.
  EXPECT_EQ(kv_heads_per_gpu(m, 8), 1);
  EXPECT_EQ(qkv_columns(m, 8), 8 * 256);
  EXPECT_DOUBLE_EQ(shard_1d(m, "qkv", 1, 8).weights_mem, 1024 * 256 * 2e-9);
  // Multi-head attention is 3e wide at any tp.
  m.kv_heads = 0;
  EXPECT_EQ(qkv_columns(m, 8), 3 * 1024);
}

// Key/value heads and tensor parallelism: one divides the other, or the layout is refused.
TEST(GroupedQueryAttention, TensorParallelismMustDivideOrReplicateKeyValueHeads) {
  Transformer m = small(1536, 24, 6144, 128);
  m.kv_heads = 6;
  Layout c;
  c.tensor.tp1 = 2;  // 3 key/value heads per GPU
  EXPECT_EQ(config_error([&] { validate_layout(round_system(), m, c, 1); }), "");
  c.tensor.tp1 = 12;  // 2 replicas of each of the 6
  EXPECT_EQ(config_error([&] { validate_layout(round_system(), m, c, 1); }), "");
  c.tensor.tp1 = 4;
  EXPECT_EQ(config_error([&] { validate_layout(round_system(), m, c, 1); }),
            "tp=4 neither divides nor is a multiple of the 6 key/value heads (replicated key/value heads need tp "
            "to be a multiple of them)");
}

// Flash attention, b = 1, l = 128, 16 query heads of 64, 4 key/value heads, no dropout:
//   kept: Q 16 x 128 x 64 = 131072, K and V 2 x 4 x 128 x 64 = 65536, statistics 16 x 128 = 2048,
//   output 131072: 329728 elements (multi-head: K and V 262144, 526336 in all).
TEST(GroupedQueryAttention, KeyValueMemory) {
  const System s = round_system();
  const LayerCost gqa = attention_core(s, "fa", {1, 16, 4, 64, 128, 128}, {}, {false, false});
  EXPECT_DOUBLE_EQ(gqa.activation_buffer, 329728 * 2e-9);
  EXPECT_DOUBLE_EQ(gqa.mem_fwd, 329728 * 2e-9);  // reads Q, K, V, statistics; writes the output
  const LayerCost mha = attention_core(s, "fa", {1, 16, 16, 64, 128, 128}, {}, {false, false});
  EXPECT_DOUBLE_EQ(mha.activation_buffer, 526336 * 2e-9);
  EXPECT_EQ(gqa.flops_fwd, mha.flops_fwd);  // every query head still attends over all keys
}

// One head of 2, l = 4, with dropout. Forward flops: QK^T 16 dot products of 2 (3 flops each) = 48;
// softmax 16 x (exp + multiply) + 4 x 3 adds = 44, x 10 = 440; dropout 16 x 10 = 160; PV 8 dot
// products of 4 (7 flops) = 56: 704. Causal attention skips the masked half of every one of these
// score-matrix terms, forward (QK^T, softmax, dropout, PV) and backward (dQ, dK, dA, dV, the
// softmax and dropout gradients, the recomputed QK^T, softmax and dropout): 352 forward, and
// the backward halves too. The memory traffic and kept tensors do not change.
TEST(CausalAttention, HalfTheFlopsOfFullAttention) {
  const System s = round_system();
  const LayerCost full = attention_core(s, "fa", {1, 1, 1, 2, 4, 4}, {}, {false, true});
  const LayerCost causal = attention_core(s, "fa", {1, 1, 1, 2, 4, 4}, {}, {true, true});
  EXPECT_DOUBLE_EQ(full.flops_fwd, 704e-12);
  EXPECT_DOUBLE_EQ(causal.flops_fwd, 352e-12);
  EXPECT_EQ(causal.flops_bwd, full.flops_bwd / 2);
  EXPECT_EQ(causal.mem_fwd, full.mem_fwd);
  EXPECT_EQ(causal.mem_bwd, full.mem_bwd);
  EXPECT_EQ(causal.activation_buffer, full.activation_buffer);
  // Context-parallel flash attention over 2 sequence shards, load-balanced: half as well.
  const LayerCost cp_full = attention_core(s, "fa", {1, 2, 2, 2, 4, 8}, {KvSource::Gathered, {2, 1}}, {false, true});
  const LayerCost cp_causal = attention_core(s, "fa", {1, 2, 2, 2, 4, 8}, {KvSource::Gathered, {2, 1}}, {true, true});
  EXPECT_EQ(cp_causal.flops_fwd, cp_full.flops_fwd / 2);
  EXPECT_EQ(cp_causal.flops_bwd, cp_full.flops_bwd / 2);
  // The model's `causal` reaches the block's attention core.
  Transformer m = small(64, 2, 256, 8);
  const double block_full = shard_1d(m, "fusedla", 1, 1).flops_fwd;
  m.causal = true;
  EXPECT_EQ(shard_1d(m, "fusedla", 1, 1).flops_fwd, block_full / 2);
}

// SwiGLU, e = 16, f = 32, b = 1, l = 8, tp = 2. fc1 is 16 -> 64, 32 columns per GPU:
// 8 x 32 dot products of 16 (31 flops) = 7936 forward; backward dX 8 x 16 of 32 (63) = 8064 and
// dW 16 x 32 of 8 (15) = 7680. The gate: 8 x 16 outputs, 5 flops forward, 11 backward.
TEST(SwiGlu, GatedUpProjectionAndGate) {
  Transformer m = small(16, 2, 32, 8);
  m.mlp = MlpKind::SwiGlu;
  EXPECT_EQ(layer_named(describe_block(m, {}), "fc1").out, 64);
  const LayerCost fc1 = shard_1d(m, "fc1", 1, 2);
  EXPECT_DOUBLE_EQ(fc1.flops_fwd, 7936e-12);
  EXPECT_DOUBLE_EQ(fc1.flops_bwd, (8064 + 7680) * 1e-12);
  EXPECT_DOUBLE_EQ(fc1.weights_mem, 16 * 32 * 2e-9);
  const LayerCost act = shard_1d(m, "act1", 1, 2);
  EXPECT_DOUBLE_EQ(act.flops_fwd, 640e-12);
  EXPECT_DOUBLE_EQ(act.flops_bwd, 1408e-12);
  EXPECT_DOUBLE_EQ(act.activation_buffer, 256 * 2e-9);  // gate and up halves
  // fc2 stays f -> e: 8 x 16 dot products of 16 (31 flops).
  EXPECT_DOUBLE_EQ(shard_1d(m, "fc2", 1, 2).flops_fwd, 3968e-12);
  // The GELU MLP's fc1 has half the columns, half the flops.
  m.mlp = MlpKind::Gelu;
  EXPECT_DOUBLE_EQ(shard_1d(m, "fc1", 1, 2).flops_fwd, 3968e-12);
}

TEST(Dropout, ZeroRemovesTheLayersAndMasks) {
  Transformer m = small(64, 2, 256, 8);
  m.dropout = 0;
  for (const bool flash : {true, false}) {
    const std::vector<std::string> n = names(describe_block(m, {flash, false}));
    for (const char* gone : {"dpr1", "dpr2", "dpr_v", "dpr_at"}) {
      EXPECT_EQ(std::count(n.begin(), n.end(), gone), 0) << gone;
    }
  }
  // Flash attention without dropout keeps no RNG state (b h l = 1 x 1 x 4 elements: Q 8, K and V
  // 16, statistics 4, output 8, and the RNG state 4 with dropout) and skips the 16 dropout
  // multiplies forward (x 10 on vector units) and twice that backward.
  const System s = round_system();
  const LayerCost with = attention_core(s, "fa", {1, 1, 1, 2, 4, 4}, {}, {false, true});
  const LayerCost without = attention_core(s, "fa", {1, 1, 1, 2, 4, 4}, {}, {false, false});
  EXPECT_DOUBLE_EQ(with.activation_buffer, 40 * 2e-9);
  EXPECT_DOUBLE_EQ(without.activation_buffer, 36 * 2e-9);
  EXPECT_DOUBLE_EQ(with.flops_fwd - without.flops_fwd, 160e-12);
  EXPECT_DOUBLE_EQ(with.flops_bwd - without.flops_bwd, 320e-12);
  // No biases: no bias layers.
  m.bias = false;
  const std::vector<std::string> n = names(describe_block(m, {}));
  for (const char* gone : {"fc1-bias", "fc2-bias", "vproj-bias"}) EXPECT_EQ(std::count(n.begin(), n.end(), gone), 0);
}

// RMSNorm of b = 1, l = 4, e = 8 (n = 32): 3n multiplies and n adds forward (128 flops), 5n and
// 3n backward (256); one statistic per row; a scale of e weights, no shift.
TEST(RmsNorm, FlopsStatisticsAndWeights) {
  const LayerCost c = layer_norm(round_system(), "n", {4, 8, 4, 8}, {}, {NormKind::RmsNorm, false});
  EXPECT_DOUBLE_EQ(c.flops_fwd, 128e-12);
  EXPECT_DOUBLE_EQ(c.flops_bwd, 256e-12);
  EXPECT_DOUBLE_EQ(c.weights_mem, 8 * 2e-9);
  EXPECT_DOUBLE_EQ(c.mem_fwd, (32 + 4 + 32 + 8) * 2e-9);  // x and the statistics in, y out, weights
  // LayerNorm without biases keeps its two statistics but loses the shift.
  const LayerCost ln = layer_norm(round_system(), "n", {4, 8, 4, 8}, {}, {NormKind::LayerNorm, false});
  EXPECT_DOUBLE_EQ(ln.weights_mem, 8 * 2e-9);
}

// A norm's two collective plans by hand (LayerNorm with a shift: 2 statistics, 2 weights per
// feature; 2-byte elements).
//   GatherRows: 2 local rows of 8 of the 4 rows split over 2 GPUs: 4 x 8 = 32 elements (64 bytes)
//   all-gathered forward and reduce-scattered backward.
//   ReduceStatistics: 1 local row of 2 (the count width block.cpp chooses), 5 rows over 3 GPUs,
//   9 features over 2: forward the row's 2 statistics (4 bytes); backward the weight gradients
//   2 x 9 / 2 = 9 and the statistics' 2 x 5 / 3 = 3 (the reference's division after the
//   product, not 2 x (9 / 2) = 8 and 2 x (5 / 3) = 2): 12 elements, 24 bytes. The kernel's shape
//   is the row by the 9 / 2 = 4 features the GPU holds; the counts take the width 2.
TEST(Norm, GatherRowsAndReduceStatisticsPlans) {
  const System s = round_system();
  const auto expect = [](const CommSet& set, double gb, CommType type, std::int64_t group) {
    EXPECT_EQ(set.count, 1);
    EXPECT_DOUBLE_EQ(set.items[0].volume_gb, gb);
    EXPECT_EQ(set.items[0].type, type);
    EXPECT_EQ(set.items[0].group, group);
  };
  const LayerCost sp = layer_norm(s, "n", {2, 8, 4, 8}, {NormPlan::GatherRows, {2, 2}, {}});
  expect(sp.comm_fwd, 64e-9, CommType::AllGather, 2);
  expect(sp.comm_bwd, 64e-9, CommType::ReduceScatter, 2);
  EXPECT_EQ(sp.shape.depth, 8);

  const LayerCost f = layer_norm(s, "n", {1, 2, 5, 9}, {NormPlan::ReduceStatistics, {3, 1}, {2, 2}});
  expect(f.comm_fwd, 4e-9, CommType::AllReduce, 2);
  expect(f.comm_bwd, 24e-9, CommType::AllReduce, 2);
  EXPECT_EQ(f.shape.rows, 1);
  EXPECT_EQ(f.shape.depth, 4);
  EXPECT_DOUBLE_EQ(f.weights_mem, 2 * 2 * 2e-9);
  // On one GPU each plan keeps its one collective, moving nothing.
  const LayerCost one = layer_norm(s, "n", {1, 2, 5, 9}, {NormPlan::ReduceStatistics, {3, 1}, {}});
  EXPECT_EQ(one.comm_bwd.items[0].type, CommType::AllReduce);
  EXPECT_EQ(one.comm_bwd.items[0].volume_gb, 0.0);
}

// Vocabulary V = 1000 on tp = 2, micro-batch 2 of 16 tokens: the fp32 logits the loss keeps are
// b l V 4 / tp = 2 x 16 x 1000 x 4 / 2 = 64000 bytes per GPU; bf16 half of it.
TEST(Vocabulary, LogitsPeakIsBLVBytesOverTp) {
  Transformer m = small(64, 4, 256, 16);
  m.vocab_size = 1000;
  Layout c;
  c.tensor.tp1 = 2;
  c.tensor.nv1 = 2;
  c.mbs = 2;
  const Evaluation fp32 = evaluate(round_system(), m, c, 2);
  EXPECT_DOUBLE_EQ(fp32.model.logits_mem, 64000e-9);
  m.logits_dtype = LogitsDtype::Bf16;
  EXPECT_DOUBLE_EQ(evaluate(round_system(), m, c, 2).model.logits_mem, 32000e-9);
  // One stage: the embedding (500 rows of 64 per GPU) and the head (64 x 500) sit beside the blocks.
  Transformer bare = small(64, 4, 256, 16);
  const Evaluation none = evaluate(round_system(), bare, c, 2);
  EXPECT_DOUBLE_EQ(fp32.totals.wts_mem - none.totals.wts_mem, 2 * 500 * 64 * 2e-9 + 2 * 64 * 2e-9);  // + ln_f
  EXPECT_EQ(fp32.last_stage.count, 3);
  EXPECT_EQ(none.last_stage.count, 0);
  // Tied on one stage: the head's weights are the embedding's.
  m.tie_embeddings = true;
  const Evaluation tied = evaluate(round_system(), m, c, 2);
  EXPECT_DOUBLE_EQ(fp32.totals.wts_mem - tied.totals.wts_mem, 500 * 64 * 2e-9);
}

// The vocabulary's layers by hand: 8 tokens, e = 4, 10 vocabulary rows per GPU of 2.
//   embedding: weights 10 x 4; forward reads the 8 x 4 / 2 = 16 local row elements and writes
//   the 32-element partial output, reduce-scattered over the 2 GPUs (64 bytes); backward adds
//   16 elements into the local rows and writes the dense 40-element table gradient.
//   cross-entropy, fp32: n = 80 logits; an exp and 3 adds each forward (320 flops); exp kept
//   (80 x 4 bytes); 3 fp32 values per token all-reduced (96 bytes); backward 80 multiplies and 8
//   adds, reading the kept 320 bytes and writing 80 bf16 gradients.
TEST(Vocabulary, EmbeddingAndLossLayers) {
  const System s = round_system();
  const LayerCost emb = embedding(s, "embed", 8, 4, 10, {2, 2}, 0);
  EXPECT_DOUBLE_EQ(emb.weights_mem, 40 * 2e-9);
  EXPECT_DOUBLE_EQ(emb.mem_fwd, 48 * 2e-9);
  EXPECT_EQ(emb.flops_fwd, 0.0);
  EXPECT_DOUBLE_EQ(emb.comm_fwd.items[0].volume_gb, 64e-9);
  EXPECT_EQ(emb.comm_fwd.items[0].type, CommType::ReduceScatter);
  EXPECT_EQ(emb.comm_bwd.items[0].type, CommType::AllGather);
  EXPECT_DOUBLE_EQ(emb.flops_bwd, 16e-12);
  EXPECT_DOUBLE_EQ(emb.mem_bwd, (32 + 40) * 2e-9);
  const LayerCost loss = cross_entropy(s, "loss", 8, 10, {2, 2}, LogitsDtype::Fp32);
  EXPECT_DOUBLE_EQ(loss.flops_fwd, 320e-12);
  EXPECT_DOUBLE_EQ(loss.activation_buffer, 320e-9);
  EXPECT_DOUBLE_EQ(loss.comm_fwd.items[0].volume_gb, 96e-9);
  EXPECT_EQ(loss.comm_fwd.items[0].type, CommType::AllReduce);
  EXPECT_DOUBLE_EQ(loss.flops_bwd, 88e-12);
  EXPECT_DOUBLE_EQ(loss.mem_bwd, 320e-9 + 160e-9);
  EXPECT_DOUBLE_EQ(cross_entropy(s, "loss", 8, 10, {2, 2}, LogitsDtype::Bf16).activation_buffer, 160e-9);
}

// The embedding's states per GPU (ModelTotals::embedding_mem) as the step counts a stage's: its
// weights w (2 bytes each, the reference's layout), fp16 gradients and 12 bytes of fp32 master
// weights and Adam moments, over dp = 4 as the ZeRO stage shards them: ZeRO-0 w + w + 6w = 8w,
// ZeRO-1 w + w + 6w / 4 = 3.5w, ZeRO-2 w + w / 4 + 6w / 4 = 2.75w, ZeRO-3 (w + w + 6w) / 4 = 2w.
TEST(Vocabulary, EmbeddingMemoryShardsAsTheZeroStageSays) {
  Transformer m = small(64, 4, 256, 16);
  m.vocab_size = 1000;
  Layout c;
  c.dp = 4;
  c.nv_dp = 4;
  const double expected[] = {8, 3.5, 2.75, 2};
  for (int zero = 0; zero <= 3; ++zero) {
    c.exec.zero = zero;
    const Evaluation ev = evaluate(round_system(), m, c, 4);
    double w = 0;
    for (const LayerResult& y : ev.first_stage.layers) w += y.cost.weights_mem;
    ASSERT_GT(w, 0);
    EXPECT_NEAR(ev.model.embedding_mem, expected[zero] * w, 1e-12 * w) << "zero " << zero;
  }
}

// Two stages: the embedding on stage 0, the head and loss on stage 1. A 100000-word head on a
// 64-wide model costs more than a block, so stage 1 bounds the time; stage 0 keeps two
// micro-batches of activations (1F1B) and stage 1 one plus the logits.
TEST(Vocabulary, EndStagesAreUnequal) {
  Transformer m = small(64, 4, 256, 16);
  m.vocab_size = 100000;
  Layout c;
  c.pp = 2;
  c.nv_pp = 2;
  const Evaluation ev = evaluate(round_system(), m, c, 4);
  EXPECT_EQ(ev.model.time_stage, 1);
  EXPECT_EQ(ev.model.memory_stage, 1);
  // The logits of one micro-batch: 1 x 16 x 100000 x 4 bytes = 6.4 MB.
  EXPECT_DOUBLE_EQ(ev.model.logits_mem, 16 * 100000 * 4e-9);
  m.vocab_size = 0;
  const Evaluation bare = evaluate(round_system(), m, c, 4);
  EXPECT_GT(ev.totals.t, bare.totals.t);
  EXPECT_EQ(bare.model.time_stage, 0);
}

// Megatron's sequence parallelism all-gathers a column projection's input again in the
// backward: the backward's collectives become the input gradient's reduce-scatter and an
// all-gather of the same volume; row projections and runs without the option are unchanged.
TEST(MegatronExecution, SequenceParallelBackwardGather) {
  const Transformer m = small(64, 4, 256, 16);
  const std::vector<BlockLayer> block = describe_block(m, {});
  Mechanisms gather;
  gather.sp_backward_gather = true;
  const TensorSplit split{4, 1, 4, 1, 1};
  const LayerCost plain = shard_layer(round_system(), Strategy::OneD, layer_named(block, "fc1"), 2, m, split, {});
  const LayerCost again =
      shard_layer(round_system(), Strategy::OneD, layer_named(block, "fc1"), 2, m, split, {}, {}, gather);
  ASSERT_EQ(plain.comm_bwd.count, 1);
  ASSERT_EQ(again.comm_bwd.count, 2);
  EXPECT_EQ(again.comm_bwd.items[0].type, CommType::ReduceScatter);
  EXPECT_EQ(again.comm_bwd.items[1].type, CommType::AllGather);
  EXPECT_DOUBLE_EQ(again.comm_bwd.items[1].volume_gb, plain.comm_bwd.items[0].volume_gb);
  const LayerCost row =
      shard_layer(round_system(), Strategy::OneD, layer_named(block, "fc2"), 2, m, split, {}, {}, gather);
  const LayerCost row_plain = shard_layer(round_system(), Strategy::OneD, layer_named(block, "fc2"), 2, m, split, {});
  EXPECT_EQ(row.comm_bwd.count, row_plain.comm_bwd.count);
  EXPECT_DOUBLE_EQ(row.comm_bwd.items[0].volume_gb, row_plain.comm_bwd.items[0].volume_gb);
}

// Megatron's fused elementwise kernels on b = 2, l = 16, e = 64, f = 256, tp = 4 with sequence
// parallelism (2-byte elements, 1-byte masks). The MLP's hidden rows: 32 x f/tp = 64, m = 2048;
// the residual stream's: 2 x 16/4 = 8 rows of 64, m = 512.
TEST(MegatronExecution, FusedElementwiseBytes) {
  const System s = round_system();
  const Transformer m = small(64, 4, 256, 16);
  const std::vector<BlockLayer> block = describe_block(m, {});
  const std::vector<BlockLayer> block_unfused = describe_block(m, {false, false});
  Mechanisms fused;
  fused.fused_elementwise = true;
  const TensorSplit split{4, 1, 4, 1, 1};
  const auto shard = [&](const char* name, const Mechanisms& mech) {
    return shard_layer(s, Strategy::OneD, layer_named(block, name), 2, m, split, {}, {}, mech);
  };
  // The biases run inside the next kernel, the hidden dropout does not exist: no time, no buffer.
  for (const char* name : {"fc1-bias", "dpr1", "fc2-bias", "vproj-bias"}) {
    const LayerCost c = shard(name, fused);
    EXPECT_TRUE(c.fused_away) << name;
    EXPECT_FALSE(shard(name, {}).fused_away) << name;
    EXPECT_EQ(time_layer(s, c).t, 0) << name;
  }
  EXPECT_EQ(shard("dpr1", fused).activation_buffer, 0);
  EXPECT_DOUBLE_EQ(shard("fc1-bias", fused).weights_mem, 64 * 2e-9);  // the bias is still a weight
  // bias + GeLU: read 2048 + 64 biases, write 2048; backward dy, the saved input and dx (3 x 2048)
  // and the bias gradient's read of dx (2048 + 64).
  const LayerCost act = shard("act1", fused);
  EXPECT_DOUBLE_EQ(act.mem_fwd, (2 * 2048 + 64) * 2e-9);
  EXPECT_DOUBLE_EQ(act.mem_bwd, (3 * 2048 + 2048 + 64) * 2e-9);
  EXPECT_DOUBLE_EQ(act.flops_fwd, 9 * 2048 * 1e-12);
  EXPECT_DOUBLE_EQ(act.flops_bwd, 14 * 2048 * 1e-12);
  EXPECT_DOUBLE_EQ(act.activation_buffer, 2048 * 2e-9);
  // bias + dropout + residual add: read the output, the residual and 64 biases, write the sum
  // (3 x 512 + 64 elements) and the mask (512 bytes); backward dy and dx (2 x 512), the mask, and
  // the bias gradient's read of dx (512 + 64).
  for (const char* name : {"dpr2", "dpr_v"}) {
    const LayerCost add = shard(name, fused);
    EXPECT_DOUBLE_EQ(add.mem_fwd, (3 * 512 + 64) * 2e-9 + 512 * 1e-9) << name;
    EXPECT_DOUBLE_EQ(add.mem_bwd, (2 * 512 + 512 + 64) * 2e-9 + 512 * 1e-9) << name;
    EXPECT_DOUBLE_EQ(add.activation_buffer, 512 * 1e-9) << name;
  }
  // The norms carry no calibrated glue: a block's the residual fork's gradient sum in the
  // backward (read 2, write 1: 3 x 512 x 2 bytes at 1000 GB/s), the final norm's nothing.
  EXPECT_EQ(shard("ln1", fused).glue, Glue::ResidualFork);
  EXPECT_EQ(shard("ln1", {}).glue, Glue::Calibrated);
  EXPECT_DOUBLE_EQ(fused_glue_seconds(s, shard("ln1", fused).shape, kernels::kBwd), 3 * 512 * 2e-9 / 1000);
  EXPECT_EQ(fused_glue_seconds(s, shard("ln1", fused).shape, kernels::kFwd), 0);
  Transformer with_vocab = m;
  with_vocab.vocab_size = 1000;
  const StageEnds ends = describe_stage_ends(with_vocab, 1);
  EXPECT_EQ(shard_layer(s, Strategy::OneD, ends.last.layers[0], 2, with_vocab, split, {}, {}, fused).glue, Glue::None);
  // Unchanged: the attention's softmax (one kernel already), and every layer without the option.
  const BlockLayer& softmax_layer = layer_named(block_unfused, "softmax");
  EXPECT_DOUBLE_EQ(shard_layer(s, Strategy::OneD, softmax_layer, 2, m, split, {false, false}, {}, fused).mem_fwd,
                   shard_layer(s, Strategy::OneD, softmax_layer, 2, m, split, {false, false}).mem_fwd);
  EXPECT_DOUBLE_EQ(shard("dpr2", {}).mem_fwd, (2 * 512) * 2e-9 + 512 * 1e-9);
  // 1d only: a runtime with the fused kernels refuses another strategy (model/layout_rules.cpp).
  Runtime fusing;
  fusing.name = "fusing";
  fusing.mechanisms.fused_elementwise = true;
  fusing.strategies = 0x7;
  fusing.zero_stages = 0xF;
  Layout seqp;
  seqp.strategy = Strategy::TwoDSeqp;
  EXPECT_NE(config_error([&] { validate_runtime_layout(fusing, seqp); }).find("fused elementwise kernels"),
            std::string::npos);
  seqp.strategy = Strategy::OneD;
  EXPECT_EQ(config_error([&] { validate_runtime_layout(fusing, seqp); }), "");
}

// Gradients reduced after the backward expose every layer's reduction; overlapped, all but the
// last layer's hide behind the next layer's backward.
TEST(MegatronExecution, DataParallelAfterBackward) {
  const Transformer m = small(64, 4, 256, 16);
  Layout c;
  c.dp = 4;
  c.nv_dp = 4;
  const Evaluation overlapped = evaluate(round_system(), m, c, 8);
  Runtime local_ddp = reference_runtime();  // the reference's step with Megatron's local DDP
  local_ddp.mechanisms.dp_after_backward = true;
  const Evaluation after = evaluate(round_system(), m, local_ddp, c, 8);
  EXPECT_GT(after.dp_row.t, overlapped.dp_row.t);
  EXPECT_GT(after.totals.t, overlapped.totals.t);
}

// All-to-all of 8 GB per GPU on the round network (NVLink 50 GB/s, 1e-6 s per step; network
// 5 GB/s per NIC, 1e-5 s per step; one NIC per GPU).
TEST(AllToAll, TwoTierHandDerived) {
  const System s = round_system();
  // 8 GPUs, 4 per domain: 4/8 of 8 GB leaves the domain over the GPU's NIC, 4 / 5 = 0.8 s;
  // 3/8 of it stays on NVLink, 3 / 50 = 0.06 s; latency 1e-5 x (2 - 1) + 1e-6 x (8 - 2).
  EXPECT_DOUBLE_EQ(analytical_collective_seconds(s, CommType::AllToAll, 8, 8, 4), 0.8 + 1.6e-5);
  // One domain: 3/4 of 8 GB over NVLink, 6 / 50 = 0.12 s, 3 steps of 1e-6.
  EXPECT_DOUBLE_EQ(analytical_collective_seconds(s, CommType::AllToAll, 8, 4, 4), 0.120003);
  // No NVLink: 6 GB over the network, 1.2 s, 3 steps of 1e-5.
  EXPECT_DOUBLE_EQ(analytical_collective_seconds(s, CommType::AllToAll, 8, 4, 1), 1.20003);
  // 16 GPUs in 4 domains of 4: 12/16 of 8 GB leave (6 / 5 = 1.2 s); 3/16 stay (1.5 / 50).
  EXPECT_DOUBLE_EQ(analytical_collective_seconds(s, CommType::AllToAll, 8, 16, 4), 1.2 + 3e-5 + 12e-6);
}

// 4 experts, top 2, capacity 1, b = 1 of 16 tokens, e = 16, expert f = 32, tp = 1. ep = 2:
// each GPU holds 2 experts, each taking 2 x 16 x 2 / 4 = 16 tokens; fc1 is 2 experts x 16 x 32
// dot products of 16 (31 flops) = 31744; its weights 2 x 16 x 32. ep = 1: 4 experts of 8 tokens,
// the same flops and twice the weights. The dispatch sends 16 x 2 x 16 elements (1024 bytes) over
// the 2 expert-parallel GPUs.
TEST(MixtureOfExperts, ExpertsSplitOverEp) {
  Transformer m = small(16, 2, 32, 16);
  m.moe = {4, 2, 32, 1.0, 1, 0};
  Layout c;
  c.dp = 2;
  c.nv_dp = 2;
  c.exec.ep = 2;
  const Evaluation ev2 = evaluate(round_system(), m, c, 2);
  auto layer = [](const Evaluation& ev, const char* name) {
    for (int i = 0; i < ev.mlp.count; ++i) {
      if (std::string(ev.mlp.layers[static_cast<std::size_t>(i)].cost.name) == name) {
        return ev.mlp.layers[static_cast<std::size_t>(i)].cost;
      }
    }
    throw ConfigError(std::string("no layer ") + name);
  };
  EXPECT_DOUBLE_EQ(layer(ev2, "fc1").flops_fwd, 31744e-12);
  EXPECT_DOUBLE_EQ(layer(ev2, "fc1").weights_mem, 2 * 16 * 32 * 2e-9);
  const LayerCost dispatch = layer(ev2, "dispatch");
  EXPECT_DOUBLE_EQ(dispatch.comm_fwd.items[0].volume_gb, 1024e-9);
  EXPECT_EQ(dispatch.comm_fwd.items[0].type, CommType::AllToAll);
  EXPECT_EQ(dispatch.comm_fwd.items[0].group, 2);
  c.exec.ep = 1;
  const Evaluation ev1 = evaluate(round_system(), m, c, 2);
  EXPECT_DOUBLE_EQ(layer(ev1, "fc1").flops_fwd, 31744e-12);
  EXPECT_DOUBLE_EQ(layer(ev1, "fc1").weights_mem, 4 * 16 * 32 * 2e-9);
  c.exec.ep = 3;
  EXPECT_NE(config_error([&] { validate_layout(round_system(), m, c, 2); }).find("ep=3 does not divide the 4 experts"),
            std::string::npos);
}


// moe.every = 2 on 4 blocks: blocks 1 and 3 MoE (1056 + 64 + 4096 = 5216 elements each), 0 and 2
// dense (1056 + 1024 = 2080), 14592 in all, which is what one GPU holds with tp = pp = dp = 1.
// The step's flops, time and activations are those of the 2 MoE blocks plus the 2 dense blocks:
// the sums of a 2-block MoE model's and a 2-block dense model's steps.
TEST(MixtureOfExperts, EveryOtherBlockMixesMoeAndDenseBlocks) {
  const System s = round_system();
  Layout c;
  const Evaluation mixed = evaluate(s, small_moe(4, 2), c, 1);
  EXPECT_DOUBLE_EQ(mixed.totals.wts_mem, 14592 * 2e-9);
  EXPECT_DOUBLE_EQ(mixed.model.params_per_gpu, 14592);
  EXPECT_DOUBLE_EQ(mixed.model.params, 14592);
  Transformer dense = small_moe(2, 1);
  dense.moe = {};
  const Evaluation moe_only = evaluate(s, small_moe(2, 1), c, 1);
  const Evaluation dense_only = evaluate(s, dense, c, 1);
  for (double Totals::*f : {&Totals::flops_per_gpu, &Totals::t, &Totals::t_comp, &Totals::t_mem, &Totals::t_tp_comm,
                            &Totals::acts_mem, &Totals::wts_mem, &Totals::wts_optimizer_states_mem}) {
    EXPECT_DOUBLE_EQ(mixed.totals.*f, moe_only.totals.*f + dense_only.totals.*f);
  }
  // The per-layer table shows the MoE block.
  EXPECT_STREQ(mixed.mlp.layers[0].cost.name, "router");
}

// Each pipeline stage holds whole groups of `every` blocks: 4 blocks with every = 2 split over 2
// stages, not 4.
TEST(MixtureOfExperts, StagesHoldWholeGroupsOfEveryBlocks) {
  const Transformer m = small_moe(4, 2);
  Layout c;
  c.pp = 2;
  EXPECT_EQ(config_error([&] { validate_layout(round_system(), m, c, 2); }), "");
  c.pp = 4;
  EXPECT_EQ(config_error([&] { validate_layout(round_system(), m, c, 4); }),
            "moe.every=2 does not divide the 1 blocks of a stage (each stage holds whole groups of one MoE and "
            "every - 1 dense blocks)");
}

// Expert weights are replicated over dp / ep GPUs (the expert-data-parallel group), the others
// over dp. 2 MoE blocks, dp = 4, ZeRO-1:
//   ep = 2: 2 x 1120 other weights over 4 GPUs (560) and 2 x 2048 expert weights over 2 (2048):
//           optimizer states 6 x 2608 = 15648 elements;
//   ep = 1: 2 x 5216 weights over 4: 6 x 2608 = 15648 as well, since each GPU holds all the
//           experts, sharded 4 ways, instead of half of them sharded 2 ways.
// ZeRO-2 shards the gradients the same way (2608), ZeRO-3 the weights too, plus one whole block
// gathered (ep = 2: 1056 + 64 + 2048 = 3168).
TEST(MixtureOfExperts, ExpertWeightsShardOverTheExpertDataParallelGroup) {
  const System s = round_system();
  const Transformer m = small_moe(2, 1);
  Layout c;
  c.dp = 4;
  c.nv_dp = 4;
  c.exec.ep = 2;
  EXPECT_DOUBLE_EQ(evaluate(s, m, c, 4).totals.wts_optimizer_states_mem, 15648 * 2e-9);
  c.exec.zero = 2;
  EXPECT_DOUBLE_EQ(evaluate(s, m, c, 4).totals.wts_grad_mem, 2608 * 2e-9);
  c.exec.zero = 3;
  EXPECT_DOUBLE_EQ(evaluate(s, m, c, 4).totals.wts_mem, (2608 + 3168) * 2e-9);
  c.exec.zero = 1;
  c.exec.ep = 1;
  EXPECT_DOUBLE_EQ(evaluate(s, m, c, 4).totals.wts_optimizer_states_mem, 15648 * 2e-9);
  // The data-parallel row reduces the other weights (1120 x 2 bytes) over the 4 GPUs and the
  // experts' (2048 x 2 bytes) over dp / ep = 2, both in the NVLink domain (nv_dp = 4 holds 2 of
  // each group).
  c.exec.ep = 2;
  const CommSet& reduce = evaluate(s, m, c, 4).dp_row.cost.comm_bwd;
  ASSERT_EQ(reduce.count, 2);
  EXPECT_DOUBLE_EQ(reduce.items[0].volume_gb, 1120 * 2e-9);
  EXPECT_EQ(reduce.items[0].group, 4);
  EXPECT_DOUBLE_EQ(reduce.items[1].volume_gb, 2048 * 2e-9);
  EXPECT_EQ(reduce.items[1].group, 2);
  EXPECT_EQ(reduce.items[1].fast_domain, 2);
}

// Tied embeddings on 2 stages: the last stage keeps a copy of the embedding (V = 1000 rows of 64,
// 128000 bytes), so its memory is the untied model's, and the two stages all-reduce its gradient
// after the backward. With dp = 1 that is all of t_dp_comm: over the network (nv_pp = 1), a
// reduce-scatter and an all-gather over 2 GPUs of 1e-5 + (1/2) 1.28e-4 / 5 = 2.28e-5 s each;
// over NVLink (both stages in one domain), 1e-6 + (1/2) 1.28e-4 / 50 = 2.28e-6 s each. Megatron's
// fp32 gradients double the volume: 2 x (1e-5 + (1/2) 2.56e-4 / 5) = 7.12e-5 s.
TEST(Vocabulary, TiedEmbeddingGradientAllReducedBetweenEndStages) {
  const System s = round_system();
  Transformer m = small(64, 4, 256, 16);
  m.vocab_size = 1000;
  Layout c;
  c.pp = 2;
  const Evaluation untied = evaluate(s, m, c, 2);
  m.tie_embeddings = true;
  const Evaluation tied = evaluate(s, m, c, 2);
  EXPECT_EQ(untied.totals.t_dp_comm, 0.0);
  EXPECT_DOUBLE_EQ(tied.totals.t_dp_comm, 4.56e-5);
  EXPECT_EQ(tied.totals.mem, untied.totals.mem);
  EXPECT_NEAR(tied.totals.t - untied.totals.t, 4.56e-5, 1e-15);
  c.nv_pp = 2;
  EXPECT_DOUBLE_EQ(evaluate(s, m, c, 2).totals.t_dp_comm, 4.56e-6);
  c.nv_pp = 1;
  c.exec.params = ParamLayout::Megatron;
  EXPECT_DOUBLE_EQ(evaluate(s, m, c, 2).totals.t_dp_comm, 7.12e-5);
  // One stage: the head's weights are the embedding's, nothing to all-reduce.
  c.exec.params = ParamLayout::Reference;
  c.pp = 1;
  EXPECT_EQ(evaluate(s, m, c, 2).totals.t_dp_comm, 0.0);
}

}  // namespace
}  // namespace perfsweep
