#pragma once
// Parameter counts of a model, from its shape alone (no parallelism): what a model card
// publishes, and what the cost model's weights add up to on one GPU of a parallel layout.
#include <cstdint>
#include <string>

#include "model/transformer.hpp"

namespace perfsweep {

struct ParameterCount {
  std::int64_t total = 0;      // every weight of the model
  std::int64_t active = 0;     // the weights one token passes through (MoE: top_k of the routed experts)
  std::int64_t embedding = 0;  // input embedding (and learned positions)
  std::int64_t head = 0;       // LM head, 0 when tied to the embedding
  std::int64_t per_block = 0;  // one dense block (MoE blocks are counted in total and active)
  // The multi-token prediction modules (mtp_layers depths), in total: training's only, so not in
  // active (the model's inference path); mtp_active, what one token passes through in them.
  std::int64_t mtp = 0;
  std::int64_t mtp_active = 0;
};

// Blocks: qkv e x (h + 2 kv) head_dim and the output projection h head_dim x e (MLA: its down-
// and up-projections, latent norms and output projection); per-head query and key norms and
// attention sinks when the model has them; the MLP e x f and f x e (gated: e x 2f); biases of
// those when the model has them; two norms (four with post_norms; scale, and a LayerNorm's shift
// with biases). MoE blocks (every `every`-th past the first moe.first_dense, the last of each
// group): a router e x experts (and its bias), the routed and shared experts, each an MLP of
// moe.ffn_dim (with biases under moe.expert_bias). With a vocabulary: the embedding V x e (plus
// seq_len x e learned positions), a final norm, and an LM head V x e unless tied. Each depth of
// multi-token prediction (Megatron-Core's MultiTokenPredictionLayer): its enorm, hnorm and final
// norm, the eh_proj 2e x e and one block (the MoE block where the model has experts); the
// embedding and the LM head are the model's.
ParameterCount count_parameters(const Transformer& model);

// "N parameters (X B), A active per token (Y B)" (active only for a MoE model), and with
// multi-token prediction "..., M of them (Z B) in the multi-token prediction modules", as the
// tools' headers print it.
std::string parameters_text(const ParameterCount& count, bool moe);

}  // namespace perfsweep
