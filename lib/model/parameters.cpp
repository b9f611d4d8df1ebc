#include "model/parameters.hpp"

namespace perfsweep {
namespace {
using I = std::int64_t;

I norm_parameters(const Transformer& m) {
  return (m.norm == NormKind::LayerNorm && m.bias ? 2 : 1) * m.e;
}

I mlp_parameters(const Transformer& m, I f) {
  const I up = m.mlp == MlpKind::SwiGlu ? 2 * f : f;
  return m.e * up + f * m.e + (m.bias ? up + m.e : 0);
}

I attention_parameters(const Transformer& m) {
  const I qkv = (m.h + 2 * m.kv()) * m.head_dim();
  return m.e * qkv + m.e * m.e + (m.bias ? qkv + m.e : 0) + (m.qkv_bias ? qkv : 0);
}
}  // namespace

ParameterCount count_parameters(const Transformer& m) {
  ParameterCount p;
  const I shared = attention_parameters(m) + 2 * norm_parameters(m);
  p.per_block = shared + mlp_parameters(m, m.f);
  I moe_blocks = 0;
  if (m.is_moe()) moe_blocks = m.depth / m.moe.every;
  const I dense_blocks = m.depth - moe_blocks;
  p.total = dense_blocks * p.per_block;
  p.active = p.total;
  if (moe_blocks > 0) {
    const I expert = mlp_parameters(m, m.moe.ffn_dim);
    const I router = m.e * m.moe.experts;
    p.total += moe_blocks * (shared + router + (m.moe.experts + m.moe.shared_experts) * expert);
    p.active += moe_blocks * (shared + router + (m.moe.top_k + m.moe.shared_experts) * expert);
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

}  // namespace perfsweep
