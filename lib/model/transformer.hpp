#pragma once
// Shape of the transformer being trained. The short names are the reference's symbols:
// l = sequence length, e = embedding dim, h = heads, f = MLP hidden dim, depth = layers.
// Every option beyond the reference's shape defaults to the reference's block (GELU MLP,
// LayerNorm, biases, dropout, full multi-head non-causal attention, no vocabulary), so a model
// that leaves them out is costed exactly as the reference costs it.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>

namespace perfsweep {

enum class MlpKind : std::uint8_t {
  Gelu,    // fc1 e -> f, GELU, fc2 f -> e (the reference)
  SwiGlu,  // gated: fc1 e -> 2f (gate and up), silu(gate) x up, fc2 f -> e (Shazeer 2020)
};
enum class NormKind : std::uint8_t {
  LayerNorm,  // mean and variance, scale and shift (the reference)
  RmsNorm,    // root mean square, scale only (Zhang and Sennrich 2019)
};
enum class LogitsDtype : std::uint8_t { Fp32, Bf16 };

// Mixture of experts in the MLP of every `every`-th block (Switch/GShard/Mixtral style; the last
// block of each group of `every`, the others dense with the model's f): a router GEMM
// e -> experts, top_k experts per token, each expert an MLP of ffn_dim hidden features (of the
// model's `mlp` kind), plus `shared_experts` always-active experts. experts = 0: a dense model.
struct MoeOptions {
  std::int64_t experts = 0;
  std::int64_t top_k = 0;
  std::int64_t ffn_dim = 0;
  double capacity_factor = 1.0;
  std::int64_t every = 1;
  std::int64_t shared_experts = 0;
  // The first `first_dense` blocks are dense (DeepSeek's first_k_dense_replace); 0: none.
  std::int64_t first_dense = 0;
  bool router_bias = false;  // a bias per expert on the router's logits (gpt-oss; DeepSeek-V3's correction bias)
  bool expert_bias = false;  // biases on each expert's projections (gpt-oss)
  // Group-limited routing (DeepSeek-V2/V3's n_group and topk_group; Megatron-Core's
  // --moe-router-num-groups and --moe-router-group-topk): the experts in `groups` equal groups,
  // each token's top_k drawn from the `group_top_k` groups it scores highest. 0: no limit. It
  // changes no FLOP; a dispatcher that sends a token once per NVLink domain sends it to fewer.
  std::int64_t groups = 0;
  std::int64_t group_top_k = 0;
};

// Multi-head latent attention (DeepSeek-V2, arXiv 2405.04434 section 2.1; Megatron-Core's
// MLASelfAttention): queries through a q_lora_rank latent (or projected directly when 0), keys
// and values through a kv_lora_rank latent shared by every head, each head's query and key
// qk_nope_head_dim features from the latents plus qk_rope_head_dim rotary features (the key's
// shared by every head, from the down-projection), values v_head_dim. kv_lora_rank = 0: none.
struct LatentAttention {
  std::int64_t q_lora_rank = 0;
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  bool operator==(const LatentAttention&) const = default;
};

struct Transformer {
  std::string name;
  std::int64_t l = 0;      // seq_len: tokens per sample
  std::int64_t e = 0;      // embed_dim
  std::int64_t h = 0;      // num_heads
  std::int64_t depth = 0;  // number of transformer blocks
  std::int64_t f = 0;      // ffn_dim (4 e unless given)
  // Optional, for plots: samples per training run (tokens / l for LLMs, samples x epochs for ViT).
  double dataset_samples = 0;

  std::int64_t kv_heads = 0;  // num_kv_heads: key/value heads (GQA, MQA); 0 = h (multi-head)
  MlpKind mlp = MlpKind::Gelu;
  NormKind norm = NormKind::LayerNorm;
  bool bias = true;        // projections' bias adds (and a LayerNorm's shift)
  // With bias false: a bias on the q, k and v projections only (Qwen2's attention, as
  // transformers' modeling_qwen2.py builds q_proj/k_proj/v_proj with bias=True and o_proj without).
  bool qkv_bias = false;
  double dropout = 0.1;    // probability; only 0 versus > 0 changes costs (0: no dropout layers)
  bool causal = false;     // causal flash attention skips the masked half of the score matrix

  std::int64_t vocab_size = 0;  // 0: no embedding, LM head or loss (the reference)
  bool tie_embeddings = false;  // the LM head reuses the input embedding's weights
  bool learned_positions = false;  // a learned position table (seq_len x e) beside the token embedding
  LogitsDtype logits_dtype = LogitsDtype::Fp32;  // the dtype the cross-entropy reads the logits in
  MoeOptions moe;
  // Multi-token prediction (DeepSeek-V3's num_nextn_predict_layers, Megatron-Core's
  // --mtp-num-layers): depths of the module run on the last pipeline stage after the LM head, each
  // the embedding of the shifted tokens, two norms, a 2e -> e projection, one block (the model's
  // MoE block where it has experts), a norm, the shared LM head and a loss. 0: none.
  std::int64_t mtp_layers = 0;

  // Attention beyond the reference's (docs/models.md, Attention variants); each 0 or false is off.
  std::int64_t head_dim_given = 0;  // head_dim: features per head; 0 = e / h
  bool out_bias = false;            // with qkv_bias: a bias on the output projection too (gpt-oss)
  // A sliding window of `window` keys per query (causal), in every block, or with global_every > 0
  // in all but every global_every-th block (1-based), which attends to the whole sequence
  // (Gemma 2: 2, Gemma 3: 6, gpt-oss: 2).
  std::int64_t window = 0;
  std::int64_t global_every = 0;
  bool attention_sinks = false;  // a learned sink logit per head in the softmax's denominator (gpt-oss)
  bool qk_norm = false;          // RMSNorm of each query and key head (Qwen3, Gemma 3, OLMo 2)
  bool post_norms = false;       // a norm on each sub-layer's output before the residual add (Gemma 2, 3)
  LatentAttention mla{};

  // Numerics that change no cost but that a framework must be given to train this model (the
  // launch lines, io/launch.hpp); 0: not given (the framework's default applies). rope_theta: the
  // rotary positions' base; rope_scaling_factor: Llama 3.1's rotary frequency scaling ("llama3"
  // rope_scaling: low and high frequency factors 1 and 4 over 8192 original positions, as
  // Megatron-Core's --use-rope-scaling applies it); norm_epsilon: the LayerNorm's or RMSNorm's.
  double rope_theta = 0;
  double rope_scaling_factor = 0;
  double norm_epsilon = 0;

  std::int64_t kv() const { return is_mla() ? h : (kv_heads > 0 ? kv_heads : h); }
  std::int64_t head_dim() const { return head_dim_given > 0 ? head_dim_given : e / h; }
  bool is_mla() const { return mla.kv_lora_rank > 0; }
  // Features per head of the queries and keys (MLA: the latent's and the rotary part) and of the
  // values; h x value_head_dim is the output projection's input.
  std::int64_t qk_head_dim() const { return is_mla() ? mla.qk_nope_head_dim + mla.qk_rope_head_dim : head_dim(); }
  std::int64_t value_head_dim() const { return is_mla() ? mla.v_head_dim : head_dim(); }
  std::int64_t attention_width() const { return h * value_head_dim(); }
  bool has_dropout() const { return dropout > 0; }
  bool is_moe() const { return moe.experts > 0; }
  // Blocks with a sliding window (the others attend globally).
  std::int64_t windowed_blocks() const {
    if (window == 0) return 0;
    return global_every > 0 ? depth - depth / global_every : depth;
  }
  // MoE blocks: block k (1-based) past the first moe.first_dense with k a multiple of moe.every.
  std::int64_t moe_blocks() const {
    if (!is_moe()) return 0;
    return depth / moe.every - std::min(depth, moe.first_dense) / moe.every;
  }
  // Whether any option departs from the reference's block (reports add the model's section then).
  bool extends_reference() const {
    const Transformer r;
    return kv_heads > 0 || mlp != r.mlp || norm != r.norm || bias != r.bias || qkv_bias || dropout != r.dropout ||
           causal != r.causal || vocab_size > 0 || is_moe() || mtp_layers > 0 || extends_attention();
  }
  // Whether any attention option above is on.
  bool extends_attention() const {
    return head_dim_given > 0 || out_bias || window > 0 || attention_sinks || qk_norm || post_norms || is_mla();
  }
};

// The integer keys of a model and their ranges. The maxima are beyond any published model (by two
// orders of magnitude or more) and small enough that every count the cost model forms from them
// fits int64; model_limits_error also checks the products of several keys.
struct ModelKeyLimit {
  const char* name;  // as in a model file
  std::int64_t Transformer::*member;
  std::int64_t min;
  std::int64_t max;
};
inline constexpr std::array<ModelKeyLimit, 6> kModelKeyLimits{{
    {"seq_len", &Transformer::l, 1, std::int64_t{1} << 24},            // tokens per sample
    {"embed_dim", &Transformer::e, 1, std::int64_t{1} << 20},
    {"num_heads", &Transformer::h, 1, std::int64_t{1} << 16},
    {"depth", &Transformer::depth, 1, std::int64_t{1} << 16},           // transformer blocks
    {"ffn_dim", &Transformer::f, 1, std::int64_t{1} << 22},
    {"vocab_size", &Transformer::vocab_size, 0, std::int64_t{1} << 24},  // tokens; 0: none
}};
// mtp_layers at most this (DeepSeek-V3 trains with 1).
inline constexpr std::int64_t kMaxMtpLayers = 64;
// moe.experts, moe.shared_experts and moe.every at most this; moe.ffn_dim as ffn_dim.
inline constexpr std::int64_t kMaxExperts = std::int64_t{1} << 16;
// The smallest capacity factor (the largest is moe.experts: beyond it an expert's capacity
// exceeds every routed token).
inline constexpr double kMinCapacityFactor = 1e-3;

// Empty when every key of `m` is in its range and the model's parameter and activation counts
// fit int64 with headroom for any batch and split; otherwise what is wrong, naming the key
// ("depth must be at most 65536, got 9223372036854775807").
std::string model_limits_error(const Transformer& m);

}  // namespace perfsweep
