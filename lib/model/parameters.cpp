#include "model/parameters.hpp"

#include <cstdio>

namespace perfsweep {
namespace {
using I = std::int64_t;

I norm_parameters(const Transformer& m) {
  return (m.norm == NormKind::LayerNorm && m.bias ? 2 : 1) * m.e;
}

// An MLP of f hidden features; `biased`: its projections' biases.
I mlp_parameters(const Transformer& m, I f, bool biased) {
  const I up = m.mlp == MlpKind::SwiGlu ? 2 * f : f;
  return m.e * up + f * m.e + (biased ? up + m.e : 0);
}

// Megatron-Core's MLASelfAttention: the query's down-projection e -> q_lora_rank, its norm and
// up-projection to every head's qk_head_dim (or e -> heads x qk_head_dim directly), the keys' and
// values' down-projection e -> kv_lora_rank + the shared rotary key, its norm (of the latent) and
// up-projection to every head's key (without the rotary part) and value, and the output
// projection of heads x v_head_dim.
I latent_attention_parameters(const Transformer& m) {
  const LatentAttention& a = m.mla;
  const I queries = m.h * m.qk_head_dim();
  const I q = a.q_lora_rank > 0 ? m.e * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * queries : m.e * queries;
  const I kv = m.e * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank +
               a.kv_lora_rank * m.h * (a.qk_nope_head_dim + a.v_head_dim);
  return q + kv + m.attention_width() * m.e;
}

I attention_parameters(const Transformer& m) {
  I p = 0;
  if (m.is_mla()) {
    p = latent_attention_parameters(m);
  } else {
    const I qkv = (m.h + 2 * m.kv()) * m.head_dim();
    p = m.e * qkv + m.attention_width() * m.e + (m.bias ? qkv + m.e : 0) + (m.qkv_bias ? qkv : 0) +
        (m.out_bias ? m.e : 0);
  }
  if (m.qk_norm) p += 2 * m.qk_head_dim();  // one scale of head_dim for the queries, one for the keys
  if (m.attention_sinks) p += m.h;
  return p;
}
}  // namespace

ParameterCount count_parameters(const Transformer& m) {
  ParameterCount p;
  const I norms = (m.post_norms ? 4 : 2) * norm_parameters(m);
  const I shared = attention_parameters(m) + norms;
  p.per_block = shared + mlp_parameters(m, m.f, m.bias);
  const I moe_blocks = m.moe_blocks();
  const I dense_blocks = m.depth - moe_blocks;
  p.total = dense_blocks * p.per_block;
  p.active = p.total;
  // the block of a multi-token prediction depth: the MoE block where the model has experts
  I mtp_block = p.per_block, mtp_block_active = p.per_block;
  if (m.is_moe()) {
    const I expert = mlp_parameters(m, m.moe.ffn_dim, m.moe.expert_bias);
    const I router = m.e * m.moe.experts + (m.moe.router_bias ? m.moe.experts : 0);
    mtp_block = shared + router + (m.moe.experts + m.moe.shared_experts) * expert;
    mtp_block_active = shared + router + (m.moe.top_k + m.moe.shared_experts) * expert;
    p.total += moe_blocks * mtp_block;
    p.active += moe_blocks * mtp_block_active;
  }
  if (m.mtp_layers > 0) {
    // enorm, hnorm and the final norm, eh_proj (2e -> e, no bias), one block
    const I module = 3 * norm_parameters(m) + 2 * m.e * m.e;
    p.mtp = m.mtp_layers * (module + mtp_block);
    p.mtp_active = m.mtp_layers * (module + mtp_block_active);
    p.total += p.mtp;
  }
  if (m.vocab_size > 0) {
    p.embedding = m.vocab_size * m.e + (m.learned_positions ? m.l * m.e : 0);
    p.head = m.tie_embeddings ? 0 : m.vocab_size * m.e;
    const I ends = p.embedding + norm_parameters(m) + p.head;
    p.total += ends;
    p.active += ends;
  }
  return p;
}

std::string parameters_text(const ParameterCount& count, bool moe) {
  const auto billions = [](I n) {
    char b[48];
    std::snprintf(b, sizeof b, "%lld (%.2f B)", static_cast<long long>(n), static_cast<double>(n) / 1e9);
    return std::string(b);
  };
  std::string out = billions(count.total) + " parameters";
  if (moe) out += ", " + billions(count.active) + " active per token";
  if (count.mtp > 0) out += ", " + billions(count.mtp) + " of them in the multi-token prediction modules";
  return out;
}

}  // namespace perfsweep
