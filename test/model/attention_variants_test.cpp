// The attention variants of model/transformer.hpp (head_dim, multi-head latent attention, sliding
// windows with global blocks, sinks, QK-norm, post-norms), each against numbers worked out by
// hand on the made-up system of common/round_system.hpp (2-byte elements; counts in TFLOP, 1e-12
// per flop, and GB, 1e-9 per byte).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/round_system.hpp"
#include "model/block.hpp"
#include "model/efficiency.hpp"
#include "model/kernel_calibration.hpp"
#include "model/layer.hpp"
#include "model/parameters.hpp"
#include "model/step.hpp"

namespace perfsweep {
namespace {

using test::config_error;
using test::round_system;

// e = 16, 2 heads, SwiGLU of 32, RMSNorm, no biases or dropout, one block, no vocabulary.
Transformer tiny() {
  return {.name = "tiny", .l = 8, .e = 16, .h = 2, .depth = 1, .f = 32, .mlp = MlpKind::SwiGlu,
          .norm = NormKind::RmsNorm, .bias = false, .dropout = 0, .causal = true, .moe = {}};
}

const BlockLayer& layer_named(const std::vector<BlockLayer>& block, const std::string& name) {
  for (const BlockLayer& y : block) {
    if (name == y.name) return y;
  }
  throw ConfigError("no layer " + name);
}

// A window of w keys per query leaves 1 - (1 - w / l)^2 of causal attention's score work: at 32K
// tokens a 4K window 1 - (7/8)^2 = 0.234375; a window covering the sequence all of it.
TEST(SlidingWindow, ShareOfCausalWork) {
  EXPECT_DOUBLE_EQ(window_share_of_causal(32768, 4096), 0.234375);
  EXPECT_DOUBLE_EQ(window_share_of_causal(4096, 4096), 1.0);
  EXPECT_DOUBLE_EQ(window_share_of_causal(4096, 0), 1.0);
}

// One head of 2, l = 4, no dropout: causal forward 16 x 3 / 2 (QK^T) + 44 x 10 / 2 (softmax)
// + 8 x 7 / 2 (PV) = 24 + 220 + 28 = 272; a window of 2 of the 4 keys, 1 - (1/2)^2 = 3/4 of it:
// 204. Memory traffic and kept tensors stay.
TEST(SlidingWindow, FlashAttentionFlops) {
  const System s = round_system();
  const LayerCost causal = attention_core(s, "fa", {1, 1, 1, 2, 4, 4}, {}, {true, false});
  const LayerCost windowed = attention_core(s, "fa", {1, 1, 1, 2, 4, 4}, {}, {true, false, 2, false});
  EXPECT_DOUBLE_EQ(causal.flops_fwd, 272e-12);
  EXPECT_DOUBLE_EQ(windowed.flops_fwd, 204e-12);
  EXPECT_DOUBLE_EQ(windowed.flops_bwd, causal.flops_bwd * 0.75);
  EXPECT_EQ(windowed.mem_fwd, causal.mem_fwd);
  EXPECT_EQ(windowed.activation_buffer, causal.activation_buffer);
  EXPECT_EQ(windowed.shape.window, 2);
}

// Six blocks, a window of 4, every third global: four windowed cores and two global ones, each
// costed once and scaled by its share of the blocks.
TEST(SlidingWindow, LocalAndGlobalBlocks) {
  Transformer m = tiny();
  m.depth = 6;
  m.window = 4;
  m.global_every = 3;
  EXPECT_EQ(m.windowed_blocks(), 4);
  const std::vector<BlockLayer> block = describe_block(m, {});
  const BlockLayer& local = layer_named(block, "fusedla-local");
  const BlockLayer& global = layer_named(block, "fusedla");
  EXPECT_EQ(local.window, 4);
  EXPECT_DOUBLE_EQ(local.share, 4.0 / 6.0);
  EXPECT_EQ(global.window, 0);
  EXPECT_DOUBLE_EQ(global.share, 2.0 / 6.0);
  // Every block windowed: one core.
  m.global_every = 0;
  EXPECT_EQ(layer_named(describe_block(m, {}), "fusedla").window, 4);
  // The score term of the model's FLOPs (6 h (qk + v) l per block, PaLM's 12 h head_dim l) of a
  // window of l / 2 in every block: 3/4 of it. h head_dim = 16, l = 8: 6 x 32 x 8 = 1536 a block.
  Transformer full = tiny(), half = tiny();
  half.window = 4;
  EXPECT_DOUBLE_EQ(model_flops_per_token(full) - model_flops_per_token(half), 1536 * 0.25);
}

// Values of 3 features per head against queries and keys of 2 (MLA's v_head_dim), one head,
// l = 4, full attention: QK^T 48 + softmax 440 + PV 12 dot products of 4 (7 flops) = 84: 572.
// Kept: Q 8, K 8, V 12, statistics 4, output 12 = 44 elements.
TEST(LatentAttention, ValueHeadDimInTheCore) {
  const System s = round_system();
  const LayerCost c = attention_core(s, "fa", {1, 1, 1, 2, 4, 4, 3}, {}, {false, false});
  EXPECT_DOUBLE_EQ(c.flops_fwd, 572e-12);
  EXPECT_DOUBLE_EQ(c.activation_buffer, 44 * 2e-9);
  EXPECT_EQ(c.shape.value_depth, 3);
}

// MLA on e = 16, 2 heads: query latent 8, key/value latent 4, heads of 3 + 2 rotary features for
// queries and keys, 5 for values. Parameters: q 16 x 8 + 8 + 8 x 2 x 5 = 216; kv 16 x (4 + 2) + 4
// + 4 x 2 x (3 + 5) = 164; output 2 x 5 x 16 = 160: 540; two norms 32; MLP 16 x 64 + 32 x 16 =
// 1536: 2108.
TEST(LatentAttention, ParametersAndLayers) {
  Transformer m = tiny();
  m.mla = {.q_lora_rank = 8, .kv_lora_rank = 4, .qk_nope_head_dim = 3, .qk_rope_head_dim = 2, .v_head_dim = 5};
  EXPECT_EQ(count_parameters(m).total, 2108);
  const std::vector<BlockLayer> block = describe_block(m, {});
  EXPECT_EQ(layer_named(block, "q-down").out, 8);
  EXPECT_EQ(layer_named(block, "q-up").out, 2 * 5);
  EXPECT_EQ(layer_named(block, "kv-down").out, 4 + 2);
  EXPECT_EQ(layer_named(block, "kv-up").out, 2 * (3 + 5));
  EXPECT_EQ(layer_named(block, "vproj").in, 2 * 5);
  EXPECT_EQ(layer_named(block, "q-down").role, Role::LatentProjection);
  // Without a query latent the queries are projected directly: 16 x 10 in place of 216.
  m.mla.q_lora_rank = 0;
  EXPECT_EQ(count_parameters(m).total, 2108 - 216 + 16 * 10);
  EXPECT_EQ(layer_named(describe_block(m, {}), "q-proj").out, 10);
  // The down-projections run whole on the GPU's rows: b l x 16 x 6 at any tp, no collective.
  m.l = 8;
  const LayerCost down = shard_layer(round_system(), Strategy::OneD, layer_named(describe_block(m, {}), "kv-down"), 1, m,
                                     {2, 1, 1, 1, 1}, {});
  EXPECT_DOUBLE_EQ(down.weights_mem, 16 * 6 * 2e-9);
  EXPECT_EQ(down.comm_fwd.items[0].volume_gb, 0);
  EXPECT_EQ(down.comm_bwd.items[0].volume_gb, 0);
}

TEST(LatentAttention, OneDimensionalTensorParallelismAndFlashOnly) {
  Transformer m = test::small_model();
  m.mla = {.q_lora_rank = 0, .kv_lora_rank = 64, .qk_nope_head_dim = 64, .qk_rope_head_dim = 32, .v_head_dim = 64};
  Layout c;
  c.tensor.tp1 = 2;
  EXPECT_EQ(config_error([&] { validate_layout(round_system(), m, c, 1); }), "");
  c.attention.flash = false;
  EXPECT_NE(config_error([&] { validate_layout(round_system(), m, c, 1); }).find("needs flash attention"),
            std::string::npos);
}

// Heads of 12 features over e = 16 (Gemma 2, Qwen3: head_dim free of e / h), one key/value head,
// QK-norm and post-norms: qkv 16 x (2 + 2) x 12 = 768, output 24 x 16 = 384, the head norms 2 x
// 12, four norms 64, the MLP 1536: 2776. Sinks add a logit per head: 2.
TEST(AttentionOptions, HeadDimQkNormPostNormsSinksParameters) {
  Transformer m = tiny();
  m.head_dim_given = 12;
  m.kv_heads = 1;
  m.qk_norm = true;
  m.post_norms = true;
  EXPECT_EQ(count_parameters(m).total, 2776);
  m.attention_sinks = true;
  EXPECT_EQ(count_parameters(m).total, 2778);
  // q and o biased (gpt-oss's attention_bias): + (2 + 2) x 12 + 16
  m.qkv_bias = true;
  m.out_bias = true;
  EXPECT_EQ(count_parameters(m).total, 2778 + 48 + 16);
  const std::vector<BlockLayer> block = describe_block(m, {});
  EXPECT_EQ(layer_named(block, "qkv").out, 48);
  EXPECT_EQ(layer_named(block, "vproj").in, 24);
  EXPECT_EQ(layer_named(block, "q-norm").role, Role::HeadNorm);
  EXPECT_EQ(layer_named(block, "post-sa-norm").out, 16);
  EXPECT_EQ(layer_named(block, "post-mlp-norm").out, 16);
  // The sinks' weights: one element per local head (2 / tp 2 = 1).
  const LayerCost core = shard_layer(round_system(), Strategy::OneD, layer_named(block, "fusedla"), 1, m,
                                     {2, 1, 1, 1, 1}, {});
  EXPECT_DOUBLE_EQ(core.weights_mem, 1 * 2e-9);
}

// DeepSeek's first dense blocks: 61 blocks, the first 3 dense, 58 MoE.
TEST(AttentionOptions, FirstDenseBlocks) {
  Transformer m = tiny();
  m.depth = 61;
  m.moe = {.experts = 4, .top_k = 2, .ffn_dim = 8, .first_dense = 3};
  EXPECT_EQ(m.moe_blocks(), 58);
  // each dense block's MLP 1536, each MoE block's router 16 x 4 and 4 experts of 16 x 16 + 8 x 16
  const std::int64_t attention = 16 * 16 * 3 + 16 * 16 + 32;
  EXPECT_EQ(count_parameters(m).total, 61 * attention + 3 * 1536 + 58 * (64 + 4 * 384));
}

}  // namespace
}  // namespace perfsweep
