#include "model/transformer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>

namespace perfsweep {

namespace {

std::string out_of_range(const char* key, std::int64_t min, std::int64_t max, std::int64_t v) {
  return std::string(key) + " must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
         std::to_string(v);
}

}  // namespace

std::string model_limits_error(const Transformer& m) {
  for (const ModelKeyLimit& k : kModelKeyLimits) {
    const std::int64_t v = m.*(k.member);
    if (v < k.min || v > k.max) return out_of_range(k.name, k.min, k.max, v);
  }
  if (m.kv_heads < 0 || m.kv_heads > m.h) return out_of_range("num_kv_heads", 1, m.h, m.kv_heads);
  // head_dim, a window and MLA's ranks and head dims: at most embed_dim's maximum each.
  const std::int64_t widest = kModelKeyLimits[1].max;
  for (const auto& [key, v, min] : {std::tuple{"head_dim", m.head_dim_given, std::int64_t{0}},
                                    std::tuple{"mla.q_lora_rank", m.mla.q_lora_rank, std::int64_t{0}},
                                    std::tuple{"mla.kv_lora_rank", m.mla.kv_lora_rank, std::int64_t{0}},
                                    std::tuple{"mla.qk_nope_head_dim", m.mla.qk_nope_head_dim, std::int64_t{0}},
                                    std::tuple{"mla.qk_rope_head_dim", m.mla.qk_rope_head_dim, std::int64_t{0}},
                                    std::tuple{"mla.v_head_dim", m.mla.v_head_dim, std::int64_t{0}}}) {
    if (v < min || v > widest) return out_of_range(key, min, widest, v);
  }
  if (m.is_mla() && (m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim < 1 || m.mla.v_head_dim < 1)) {
    return "mla needs qk_nope_head_dim + qk_rope_head_dim >= 1 and v_head_dim >= 1, got " +
           std::to_string(m.mla.qk_nope_head_dim) + " + " + std::to_string(m.mla.qk_rope_head_dim) + " and " +
           std::to_string(m.mla.v_head_dim);
  }
  if (m.window < 0 || m.window > kModelKeyLimits[0].max) return out_of_range("sliding_window", 0, kModelKeyLimits[0].max, m.window);
  if (m.global_every < 0 || m.global_every > kModelKeyLimits[3].max) {
    return out_of_range("global_every", 0, kModelKeyLimits[3].max, m.global_every);
  }
  if (m.mtp_layers < 0 || m.mtp_layers > kMaxMtpLayers) return out_of_range("mtp_layers", 0, kMaxMtpLayers, m.mtp_layers);
  if (m.mtp_layers > 0 && m.vocab_size == 0) {
    return "mtp_layers=" + std::to_string(m.mtp_layers) +
           " needs a vocabulary (vocab_size > 0): each depth runs the LM head and a loss";
  }
  const MoeOptions& o = m.moe;
  if (m.is_moe()) {
    if (o.first_dense < 0 || o.first_dense > m.depth) return out_of_range("moe.first_dense", 0, m.depth, o.first_dense);
    if (o.experts > kMaxExperts) return out_of_range("moe.experts", 1, kMaxExperts, o.experts);
    if (o.top_k < 1 || o.top_k > o.experts) return out_of_range("moe.top_k", 1, o.experts, o.top_k);
    if (o.ffn_dim < 1 || o.ffn_dim > kModelKeyLimits[4].max) {
      return out_of_range("moe.ffn_dim", 1, kModelKeyLimits[4].max, o.ffn_dim);
    }
    if (o.every < 1 || o.every > kMaxExperts) return out_of_range("moe.every", 1, kMaxExperts, o.every);
    if (o.shared_experts < 0 || o.shared_experts > kMaxExperts) {
      return out_of_range("moe.shared_experts", 0, kMaxExperts, o.shared_experts);
    }
    if (o.groups != 0 || o.group_top_k != 0) {
      if (o.groups < 2 || o.groups > o.experts || o.experts % o.groups != 0) {
        return "moe.groups must divide moe.experts=" + std::to_string(o.experts) + " into 2 or more groups, got " +
               std::to_string(o.groups);
      }
      if (o.group_top_k < 1 || o.group_top_k >= o.groups) {
        return out_of_range("moe.group_top_k", 1, o.groups - 1, o.group_top_k);
      }
      if (o.group_top_k * (o.experts / o.groups) < o.top_k) {
        return "moe.group_top_k=" + std::to_string(o.group_top_k) + " groups of " +
               std::to_string(o.experts / o.groups) + " experts hold fewer than moe.top_k=" + std::to_string(o.top_k);
      }
    }
    if (!(o.capacity_factor >= kMinCapacityFactor && o.capacity_factor <= static_cast<double>(o.experts))) {
      char text[160];
      std::snprintf(text, sizeof text, "moe.capacity_factor must be in [%g, %lld] (moe.experts), got %.17g",
                    kMinCapacityFactor, static_cast<long long>(o.experts), o.capacity_factor);
      return text;
    }
  }
  // An upper bound on the parameters (a block holding both the routed and shared experts and a
  // dense MLP as wide as the widest MLP, all gated) and on one block's largest activation per
  // sample, in double so the bound itself cannot overflow. With
  // 2^20 of headroom (micro-batch, bytes per element, experts routed, SUMMA blocks) each must stay
  // below 2^63; a bound is not a count, so this refuses nothing near a real model.
  const double e = static_cast<double>(m.e);
  // the attention's widest projection: q, k, v and o of every head, or MLA's up-projections
  const double heads = static_cast<double>(m.h) * static_cast<double>(std::max(m.head_dim(), m.qk_head_dim() + m.value_head_dim()));
  const double lora = static_cast<double>(m.mla.q_lora_rank + m.mla.kv_lora_rank + m.mla.qk_rope_head_dim);
  const double attention = 4.0 * e * std::max(e, heads) + lora * (e + heads);
  const double widest_mlp = 3.0 * e * static_cast<double>(std::max(m.f, o.ffn_dim));
  const double expert_mlp = 3.0 * e * static_cast<double>(o.ffn_dim);
  const double experts = static_cast<double>(o.experts + o.shared_experts);
  const double per_block = attention + e * static_cast<double>(o.experts) + experts * expert_mlp + widest_mlp + 8.0 * e;
  const double parameters = static_cast<double>(m.depth + m.mtp_layers) * per_block +
                            2.0 * e * static_cast<double>(m.vocab_size + m.l);
  const double l = static_cast<double>(m.l);
  // Routing multiplies the experts' tokens only, not the attention scores or the logits.
  const double routed = std::max(2.0 * static_cast<double>(m.f), 2.0 * static_cast<double>(o.ffn_dim)) *
                        std::max(1.0, static_cast<double>(o.top_k) * o.capacity_factor);
  const double activations =
      l * std::max({l * static_cast<double>(m.h), 3.0 * e, 3.0 * heads, routed, static_cast<double>(m.vocab_size)});
  constexpr double kHeadroom = 1048576.0;
  constexpr double kLimit = 9.223372036854775808e18;  // 2^63
  if (parameters * kHeadroom >= kLimit || activations * kHeadroom >= kLimit) {
    return "the model is too large for exact integer arithmetic (seq_len=" + std::to_string(m.l) +
           ", embed_dim=" + std::to_string(m.e) + ", num_heads=" + std::to_string(m.h) + ", depth=" +
           std::to_string(m.depth) + ", ffn_dim=" + std::to_string(m.f) +
           (m.is_moe() ? ", moe.experts=" + std::to_string(o.experts) : std::string()) + ")";
  }
  return {};
}

}  // namespace perfsweep
