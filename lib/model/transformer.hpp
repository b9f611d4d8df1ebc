#pragma once
// Shape of the transformer being trained. The short names are the reference's symbols:
// l = sequence length, e = embedding dim, h = heads, f = MLP hidden dim, depth = layers.
// Every option beyond the reference's shape defaults to the reference's block (GELU MLP,
// LayerNorm, biases, dropout, full multi-head non-causal attention, no vocabulary), so a model
// that leaves them out is costed exactly as the reference costs it.
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

  // Numerics that change no cost but that a framework must be given to train this model (the
  // launch lines, io/launch.hpp); 0: not given (the framework's default applies). rope_theta: the
  // rotary positions' base; rope_scaling_factor: Llama 3.1's rotary frequency scaling ("llama3"
  // rope_scaling: low and high frequency factors 1 and 4 over 8192 original positions, as
  // Megatron-Core's --use-rope-scaling applies it); norm_epsilon: the LayerNorm's or RMSNorm's.
  double rope_theta = 0;
  double rope_scaling_factor = 0;
  double norm_epsilon = 0;

  std::int64_t kv() const { return kv_heads > 0 ? kv_heads : h; }
  std::int64_t head_dim() const { return e / h; }
  bool has_dropout() const { return dropout > 0; }
  bool is_moe() const { return moe.experts > 0; }
  // Whether any option departs from the reference's block (reports add the model's section then).
  bool extends_reference() const {
    const Transformer r;
    return kv_heads > 0 || mlp != r.mlp || norm != r.norm || bias != r.bias || qkv_bias || dropout != r.dropout ||
           causal != r.causal || vocab_size > 0 || is_moe();
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
