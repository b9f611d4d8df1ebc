#include "model/block.hpp"

#include <array>
#include <cmath>
#include <iterator>
#include <string>

#include "core/error.hpp"
#include "model/moe_dispatch.hpp"
#include "model/precision.hpp"

namespace perfsweep {
namespace {
using I = std::int64_t;

[[noreturn]] void unsupported(const BlockLayer& layer, const char* strategy) {
  throw ConfigError(std::string(layer.name) + ": the " + strategy + " strategy has no sharding rule for this layer");
}

// The tensor split's groups by what they split: tp1 the features and heads (every strategy),
// tp2 the sequence (2d and 2d-seqp).
Group feature_split(const TensorSplit& t) { return {t.tp1, t.nv1}; }
Group seq_split(const TensorSplit& t) { return {t.tp2, t.nv2}; }
constexpr Group kOneGpu{};

// A 1D-split GEMM (the reference's Linear and LinearSeqp, Megatron's projections) on `rows`
// local rows: a column projection splits its out features over `group` (the input gradient
// reduce-scattered over it), a row projection its in features (the output reduce-scattered).
LayerCost column_projection(const System& s, const char* name, I rows, I in, I out, Group group) {
  return gemm(s, name, {rows, in, out / group.gpus, in, out}, {kOneGpu, group, 0});
}
LayerCost row_projection(const System& s, const char* name, I rows, I in, I out, Group group) {
  return gemm(s, name, {rows, in / group.gpus, out, in, out}, {group, kOneGpu, 0});
}

// Attention of b sequences on `heads` query heads and `kv_heads` key/value heads: every query
// token of the sequence against every key (1d without context parallelism).
AttentionShape local_attention(I b, I heads, I kv_heads, I head_dim, I l) { return {b, heads, kv_heads, head_dim, l, l}; }

NormOptions norm_of(const Transformer& m) { return {m.norm, m.bias}; }

AttentionCoreOptions core_of(const Transformer& m, const BlockLayer& y) {
  return {m.causal, m.has_dropout(), y.window, m.attention_sinks};
}

// Per-GPU heads of a QK-norm layer over `heads` heads (the queries' or the keys').
I head_norm_heads(const Transformer& m, I heads, I tp) { return heads == m.h ? m.h / tp : kv_heads_per_gpu(m, tp); }

// A QK-norm (RMSNorm of head_dim features, a scale of head_dim) on `rows` tokens' local heads:
// no collective.
LayerCost head_norm(const System& s, const BlockLayer& y, I rows) {
  return layer_norm(s, y.name, {rows, y.out, rows, y.out}, {NormPlan::GatherRows, kOneGpu, kOneGpu},
                    {NormKind::RmsNorm, false});
}

// The norms beyond a block's two (post-norms, MLA's latent norms) carry no residual-stream
// kernels of a calibration: the block's two residual adds stay with its two pre-norms.
bool carries_residual(const Transformer& m, const BlockLayer& y) {
  return y.out == m.e && !(y.local_rows && !y.stage_input);
}

// A norm's gather of `y.in` features where it gathers more than it normalizes (MLA's key/value
// latent with the key's rotary part).
void widen_gather(LayerCost& c, const BlockLayer& y) {
  if (y.in <= y.out) return;
  const double wider = static_cast<double>(y.in) / static_cast<double>(y.out);
  for (CommSet* set : {&c.comm_fwd, &c.comm_bwd}) {
    for (std::uint8_t i = 0; i < set->count; ++i) set->items[i].volume_gb *= wider;
  }
}

// A norm whose gathered rows are the input of the next layer's GEMM, of role `next`.
BlockLayer gathering_norm(BlockLayer norm, Role next) {
  norm.gathered_for = next;
  return norm;
}

// The tensor-parallel gathers of `set` (a low-precision GEMM's input) at `share` of their bf16
// bytes (gather_share); its reduce-scatters (gradients, in bf16) as they are.
void scale_gathers(CommSet& set, double share) {
  for (std::uint8_t i = 0; i < set.count; ++i) {
    if (set.items[i].type == CommType::AllGather) set.items[i].volume_gb *= share;
  }
}

// Megatron pads the vocabulary to a multiple of the tensor-parallel size
// (--make-vocab-size-divisible-by): each GPU holds ceil(V / tp) rows or columns.
I vocab_per_gpu(I vocab, I tp) { return (vocab + tp - 1) / tp; }

// Per-GPU output columns of a column projection, times tp.
I column_width(const BlockLayer& y, const Transformer& m, I tp) {
  if (y.role == Role::QkvProjection) return qkv_columns(m, tp);
  if (y.role == Role::VocabProjection) return vocab_per_gpu(y.out, tp) * tp;
  return y.out;
}

// MoE (GShard, Lepikhin et al. 2021; Switch, Fedus et al. 2022): `tokens` tokens on a GPU each
// go to top_k experts, each expert taking at most capacity_factor x its even share. The ep GPUs
// of an expert-parallel group send their tokens to the experts' GPUs, so each of a GPU's
// experts / ep experts computes on ep x tokens x top_k x capacity / experts tokens.
I routed_tokens(const Transformer& m, I tokens) {
  return static_cast<I>(std::ceil(static_cast<double>(tokens * m.moe.top_k) * m.moe.capacity_factor));
}
I tokens_per_expert(const Transformer& m, I tokens, I ep) {
  return static_cast<I>(
      std::ceil(static_cast<double>(ep * tokens * m.moe.top_k) * m.moe.capacity_factor / static_cast<double>(m.moe.experts)));
}

// The group each routed expert's weights split over: etp GPUs of the tensor group (their NVLink
// share nv_etp), or the tensor group itself (t.etp 0, Megatron-Core's default).
Group expert_split(const TensorSplit& t) { return t.etp > 0 ? Group{t.etp, t.nv_etp} : feature_split(t); }
// The tokens one expert tensor-parallel group computes on, of `tokens` on each tensor-parallel rank:
// the tensor group's tokens split over its tp1 / etp expert groups (Megatron-Core's dispatcher:
// each rank's sequence-parallel share, all-gathered over etp), `tokens` where etp = tp1.
I expert_group_tokens(const TensorSplit& t, I tokens) { return tokens * expert_split(t).gpus / t.tp1; }

// An expert's layer on one GPU, weights split over the expert tensor-parallel group as a dense
// layer's over tp (expert_split), for the GPU's experts / ep experts: its GEMMs one grouped GEMM
// (grouped_experts), its elementwise kernels repeated. Its input holds
// every token its expert group routes to it on every rank of the group (the dispatch sends them
// whole), its output is reduce-scattered over the group as a row projection's.
LayerCost shard_expert(const System& s, const BlockLayer& y, I tokens, const Transformer& m, const TensorSplit& t) {
  const Group split = expert_split(t);
  const I per_expert = tokens_per_expert(m, expert_group_tokens(t, tokens), t.ep);
  const I local_experts = m.moe.experts / t.ep;
  switch (y.role) {
    case Role::ColumnProjection:
      return grouped_experts(column_projection(s, y.name, per_expert, y.in, y.out, split), local_experts);
    case Role::RowProjection:
      return grouped_experts(row_projection(s, y.name, per_expert, y.in, y.out, split), local_experts);
    case Role::Activation: return repeated(activation(s, y.name, per_expert * (y.out / split.gpus)), local_experts);
    case Role::GatedActivation:
      return repeated(gated_activation(s, y.name, per_expert * (y.out / split.gpus)), local_experts);
    default: break;
  }
  unsupported(y, "expert");
}

// Kernels a pass of each step of the MoE layer's permutation launches (Mechanisms::moe_permutation),
// [forward, backward], and whether the scatters write into a zeroed tensor first.
// Unfused, Megatron-Core's moe_utils.py: permute = routing_map.bool().T.contiguous(), the argsort
// (sort and gather), `% num_tokens`, the probabilities' transpose and gather, index_select (7); its
// backward index_select's (zeros, index_add_), the probabilities' gather's (zeros, index_put_) and
// the transpose's (5). sort_chunks_by_idxs = torch.cat of the tokens' and of the probabilities'
// chunks (2), backward their split's cat (2); without probabilities (the unsort) 1 and 1.
// unpermute = torch.zeros and scatter_add_ (2), backward the gather (1).
// Fused, Transformer Engine's transformer_engine/pytorch/triton/permutation.py: permute =
// make_row_id_map's three passes and _permute_kernel (4), backward _unpermute_kernel (1);
// sort_chunks = _make_chunk_sort_map_kernel and _sort_chunks_by_map_kernel (2), backward the
// latter (1); unpermute = _unpermute_kernel (1), backward _permute_kernel (1).
struct PermutationKernels {
  std::array<double, 2> permute, sort, unsort, unpermute;
  bool zero_fill;
};
constexpr PermutationKernels kPermutationKernels[] = {
    {{0, 0}, {0, 0}, {0, 0}, {0, 0}, false},  // None
    {{7, 5}, {2, 2}, {1, 1}, {2, 1}, true},   // Unfused
    {{4, 1}, {2, 1}, {2, 1}, {1, 1}, false},  // Fused
};
static_assert(std::size(kPermutationKernels) == std::size(kMoePermutationNames), "kernels for every MoePermutation");

// The router's elementwise kernels on its T x E scores, Megatron-Core's unfused path
// (--moe-router-fusion off, its default; Megatron Bridge's MoE recipes leave it off): forward
// topk_routing_with_score_function's score function (read, write: 2 TE), torch.topk (read: 1), the
// top-k probabilities' normalization, and the zeros and scatter of routing_probs and of routing_map
// (4); compute_routing_scores_for_aux_loss's score function, top-k and map (5) and the loss's sum
// over the tokens (1): 13 TE elements in 15 kernels. Backward: the scatter's gather (1), the top-k's
// zeros and scatter (2), the score function's backward (read y and dy, write dx: 3), the aux
// branch's expand (1) and score backward (3), the two logits' gradients summed (3): 13 TE in 10.
constexpr std::array<double, 2> kRouterElements{13, 13};
constexpr std::array<double, 2> kRouterKernels{15, 10};

// The bytes and kernels of a MoE layer's router, dispatch or combine beyond their GEMM or all-to-all
// (Mechanisms::moe_permutation; Megatron-Core's MoEAlltoAllTokenDispatcher, token_dispatcher.py),
// per pass, for `tokens` tokens on the GPU (the layer's, as shard_moe takes them). With T the
// rank's own tokens, R_c = T top_k (capacity included) the rows it permutes and R_g the rows its
// expert group's dispatch delivers to it (R_c x etp), e the hidden size, in elements of
// element_size (bf16 tokens and probabilities):
//  dispatch  dispatch_preprocess's permute: R_c rows of e gathered and written, and their R_c
//            probabilities (2 R_c e + 2 R_c); with several local experts, dispatch_postprocess's
//            sort_chunks_by_idxs of the received rows and probabilities (2 R_g e + 2 R_g). Backward
//            the mirror: the sort's inverse (2 R_g e + 2 R_g) and the permute's scatter of R_c
//            rows into T (R_c e + T e, and T e zeroed first unfused) with the probabilities' (2 R_c).
//  combine   combine_preprocess's unsort of the experts' R_g rows (2 R_g e, several local experts),
//            combine_postprocess's unpermute: R_c rows read, T written (R_c e + T e, and T e zeroed
//            first unfused; the probabilities were applied inside the experts). Backward: the
//            unpermute's gather of R_c rows (2 R_c e) and the unsort's inverse (2 R_g e).
//  router    kRouterElements x T E on all `tokens` (the router layer's rows).
// The index maps (int32 and bool, T E or R_c elements) are left out: under 1% of the rows' bytes.
// Nothing more is kept for the backward: the saved maps are indices, and the permuted rows the
// experts keep are their fc1's input, counted there.
std::array<StreamWork, 2> moe_routing_work(const System& s, const BlockLayer& y, I tokens, const Transformer& m,
                                           const TensorSplit& t, MoePermutation permutation) {
  const PermutationKernels& k = kPermutationKernels[static_cast<std::size_t>(permutation)];
  const double elem = s.element_size, e = static_cast<double>(m.e);
  const double etp = static_cast<double>(expert_split(t).gpus);
  const double group_tokens = static_cast<double>(expert_group_tokens(t, tokens));
  const double own = group_tokens / etp;                                                      // T
  const double group_rows = static_cast<double>(routed_tokens(m, expert_group_tokens(t, tokens)));  // R_g
  const double own_rows = group_rows / etp;                                                   // R_c
  const bool sorts = m.moe.experts / t.ep > 1;
  const double fill = k.zero_fill ? own * e : 0.0;
  std::array<StreamWork, 2> w{};
  switch (y.role) {
    case Role::Router: {
      const double scores = static_cast<double>(tokens) * static_cast<double>(m.moe.experts);
      for (std::size_t p = 0; p < 2; ++p) w[p] = {kRouterElements[p] * scores * elem, kRouterKernels[p]};
      return w;
    }
    case Role::Dispatch:
      w[0] = {(2 * own_rows * e + 2 * own_rows) * elem, k.permute[0]};
      w[1] = {(own_rows * e + own * e + fill + 2 * own_rows) * elem, k.permute[1]};
      if (sorts) {
        for (std::size_t p = 0; p < 2; ++p) {
          w[p].gb += (2 * group_rows * e + 2 * group_rows) * elem;
          w[p].kernels += k.sort[p];
        }
      }
      return w;
    case Role::Combine:
      w[0] = {(own_rows * e + own * e + fill) * elem, k.unpermute[0]};
      w[1] = {2 * own_rows * e * elem, k.unpermute[1]};
      if (sorts) {
        for (std::size_t p = 0; p < 2; ++p) {
          w[p].gb += 2 * group_rows * e * elem;
          w[p].kernels += k.unsort[p];
        }
      }
      return w;
    default: return w;
  }
}

// The MoE layers outside the experts, for `tokens` tokens per GPU: the router on all of them
// (replicated over tp), the dispatch of every token the GPU's expert group routes, the combine of
// the 1/etp of them each rank of the group holds after the experts' reduce-scatter. With a
// permutation (Mechanisms::moe_permutation) its kernels and the router's ride on these layers
// (moe_routing_work), and they replace the all-to-all's own read and write of the rows. A
// deduplicating dispatcher (Execution::moe_dispatcher) sends the share of the rows a token's
// reach over the expert-parallel group gives (model/moe_dispatch.hpp), on the all-to-all's legs.
LayerCost shard_moe(const System& s, const BlockLayer& y, I tokens, const Transformer& m, const TensorSplit& t,
                    const char* strategy, MoePermutation permutation = MoePermutation::None,
                    MoeDispatcher dispatcher = MoeDispatcher::AllToAll) {
  LayerCost c;
  switch (y.role) {
    case Role::Router: c = column_projection(s, y.name, tokens, y.in, y.out, kOneGpu); break;
    case Role::Dispatch:
    case Role::Combine: {
      const I rows = routed_tokens(m, expert_group_tokens(t, tokens)) * y.out;
      c = all_to_all(s, y.name, y.role == Role::Dispatch ? rows : rows / expert_split(t).gpus, t.ep, t.nv_ep,
                     tensor_domains(t));
      if (dispatcher == MoeDispatcher::DeepEp) [[unlikely]] {
        const double share = dedup_dispatch_share(m.moe, t.ep, t.nv_ep);
        c.comm_fwd.items[0].volume_gb *= share;
        c.comm_bwd.items[0].volume_gb *= share;
      }
      break;
    }
    default: unsupported(y, strategy);
  }
  if (permutation != MoePermutation::None) [[unlikely]] {
    c.routing = moe_routing_work(s, y, tokens, m, t, permutation);
    if (y.role != Role::Router) c.mem_fwd = c.mem_bwd = 0;
  }
  return c;
}

// Plain tensor parallelism: a projection's reduce-scatter of full activations becomes an
// all-reduce (Megatron's f and g operators), timed as the ring runs it, a reduce-scatter and an
// all-gather; the sequence-parallel norm's gather and scatter then go away.
void all_reduce_instead(CommSet& set) {
  const std::uint8_t n = set.count;
  for (std::uint8_t i = 0; i < n; ++i) {
    const Collective c = set.items[i];
    if (c.type != CommType::ReduceScatter || c.volume_gb == 0) continue;
    if (set.count == set.items.size()) throw ConfigError("a layer pass issues at most 4 collectives");
    set.items[set.count++] = {c.volume_gb, CommType::AllGather, c.stride, c.group, c.fast_domain};
    set.is_list = true;
  }
}

// 1d (modules.py mlp_1d, sa_1d): weights split over tp; with sequence parallelism (the
// reference's) the residual stream (row projections' reduce-scatter output, dropout, norm) is
// split over the sequence and gathered before the next projection. Context parallelism (cp > 1)
// gives every layer l / cp tokens of each sequence, and the attention core its keys and values
// from the other cp - 1 ranks (attention_core's Ring or Gathered exchange over the cp group).
LayerCost shard_1d(const System& s, const BlockLayer& y, I b, const Transformer& m, const TensorSplit& t,
                   const AttentionMode& a, const Execution& x, const Mechanisms& mech) {
  const I l = m.l / t.cp, h = m.h, q = m.qk_head_dim(), tp = t.tp1, nv = t.nv1;
  const bool rc = a.recompute;
  const bool sp = x.sequence_parallel;
  const I l_residual = sp ? l / tp : l;  // rows of the residual stream on one GPU
  if (y.operand == Operand::Routed) return shard_expert(s, y, b * l, m, t);
  switch (y.role) {
    case Role::ColumnProjection:
    case Role::QkvProjection:
    case Role::VocabProjection: {
      LayerCost c = column_projection(s, y.name, b * l, y.in, column_width(y, m, tp), {tp, nv});
      // Without sequence parallelism the input gradient's reduce-scatter + all-gather is an
      // all-reduce; with Megatron's re-gather the same pair is the input gradient's
      // reduce-scatter and the input's all-gather.
      if (!sp || mech.sp_backward_gather) all_reduce_instead(c.comm_bwd);
      // the backward's re-gather of the input in the GEMM's data type
      if (sp && mech.sp_backward_gather && x.precision != Precision::Bf16 && mech.fp8.quantized_gather) [[unlikely]] {
        scale_gathers(c.comm_bwd, gather_share(x.precision, layout_fp8(mech, x.precision), y.role));
      }
      return c;
    }
    case Role::RowProjection: {
      LayerCost c = row_projection(s, y.name, b * l, y.in, y.out, {tp, nv});
      if (!sp) all_reduce_instead(c.comm_fwd);
      return c;
    }
    case Role::Bias: {
      // Megatron's fused kernels add a bias inside the next layer's kernel (mech.fused_elementwise).
      LayerCost c = bias(s, y.name, b * l, y.operand == Operand::Hidden ? y.out / tp : y.out);
      // fc1's bias goes into the bias-GeLU kernel; the qkv bias has no kernel to go into.
      c.fused_away = mech.fused_elementwise && (y.operand == Operand::Residual
                                                    ? m.has_dropout()
                                                    : y.sublayer == Sublayer::Mlp && m.mlp != MlpKind::SwiGlu);
      return c;
    }
    case Role::Activation:
      if (mech.fused_elementwise && m.bias) return bias_gelu(s, y.name, b * l, y.out / tp);
      return activation(s, y.name, b * l * (y.out / tp));
    case Role::GatedActivation: return gated_activation(s, y.name, b * l * (y.out / tp));
    case Role::Dropout:
      switch (y.operand) {
        case Operand::Hidden: {
          LayerCost c = dropout(s, y.name, b * l * (y.out / tp));
          if (mech.fused_elementwise) {
            c.fused_away = true;  // Megatron's MLP has no dropout on its hidden features
            c.activation_buffer = 0;
          }
          return c;
        }
        case Operand::Residual:
          if (mech.fused_elementwise) return bias_dropout_add(s, y.name, b * l_residual, y.out, m.bias);
          return dropout(s, y.name, b * l_residual * y.out);
        case Operand::Scores: return dropout(s, y.name, b * (h / tp) * l * l, rc, rc);
        case Operand::Routed: break;
      }
      break;
    case Role::Norm: {
      // the residual stream's rows over tp (sequence parallelism), gathered for the next GEMM
      // unless the next works on the rows the GPU holds
      const Group gather = sp && !y.local_rows ? Group{tp, nv} : kOneGpu;
      LayerCost c = layer_norm(s, y.name, {b * l_residual, y.out, b * l, y.out}, {NormPlan::GatherRows, gather, kOneGpu},
                               norm_of(m));
      widen_gather(c, y);
      if (sp && x.precision != Precision::Bf16 && mech.fp8.quantized_gather) [[unlikely]] {
        scale_gathers(c.comm_fwd, gather_share(x.precision, layout_fp8(mech, x.precision), y.gathered_for));
      }
      if (!carries_residual(m, y)) c.glue = Glue::None;
      // With fused bias-dropout-add kernels a block's norm carries only the residual fork's
      // gradient sum; the final norm (last stage), whose input forks nowhere, nothing.
      if (mech.fused_elementwise && m.has_dropout()) {
        c.glue = y.sublayer == Sublayer::LastStage ? Glue::None : Glue::ResidualFork;
      }
      return c;
    }
    case Role::AttentionCore: {
      AttentionShape local = local_attention(b, h / tp, kv_heads_per_gpu(m, tp), q, l);
      local.value_dim = m.value_head_dim();
      if (t.cp > 1) {
        // the rank's l / cp queries, after the exchange's split of the heads over `ranks` of the
        // cp group (Ulysses) ranks x l / cp of them, against all m.l keys, exchanged over the cp
        // group, whose domains sit a tensor group's domains apart
        const I ranks = cp_head_ranks(m, t, x.cp_comm);
        return attention_core(
            s, y.name, {b, local.heads / ranks, local.kv_heads / ranks, q, l * ranks, m.l, local.value_dim},
            {cp_exchange(x.cp_comm).kv_source, {t.cp, t.nv_cp}, t.tp1 / t.nv1, ranks}, core_of(m, y));
      }
      return attention_core(s, y.name, local, {}, core_of(m, y));
    }
    case Role::HeadNorm: return head_norm(s, y, b * l * head_norm_heads(m, y.in, tp));
    case Role::LatentProjection:
      // on the rows of the residual stream the GPU holds, its weights whole: nothing communicated
      return gemm(s, y.name, {b * l_residual, y.in, y.out, y.in, y.out}, {kOneGpu, kOneGpu, 0});
    case Role::AttentionScores: return attention_scores(s, y.name, local_attention(b, h / tp, h / tp, q, l), {}, rc);
    case Role::AttentionSoftmax: return softmax(s, y.name, b * (h / tp) * l, l, rc, rc);
    case Role::AttentionValues: return attention_values(s, y.name, local_attention(b, h / tp, h / tp, q, l), {}, rc);
    case Role::Embedding:
      return embedding(s, y.name, b * l, m.e, vocab_per_gpu(y.out, tp), {tp, nv}, m.learned_positions ? m.l : 0);
    case Role::CrossEntropy:
      return cross_entropy(s, y.name, b * l, vocab_per_gpu(y.out, tp), {tp, nv}, m.logits_dtype);
    case Role::Router:
    case Role::Dispatch:
    case Role::Combine: return shard_moe(s, y, b * l, m, t, "1d", mech.moe_permutation, x.moe_dispatcher);
  }
  unsupported(y, "1d");
}

// Context-parallel attention core (modules.py sa_2d_seqp and sa_seqp): heads over tp1, queries
// over tp2, keys and values gathered over tp2.
LayerCost shard_context_parallel_attention(const System& s, const BlockLayer& y, I b, const Transformer& m,
                                           const TensorSplit& t, const char* strategy) {
  const I l = m.l, h = m.h, q = m.head_dim(), m1 = t.tp1, m2 = t.tp2;
  // the local queries (l / tp2) against every key, gathered over the sequence split
  const KvExchange gathered{KvSource::Gathered, seq_split(t)};
  switch (y.role) {
    case Role::AttentionCore:
      return attention_core(s, y.name, {b, h / m1, kv_heads_per_gpu(m, m1), q, l / m2, l}, gathered, core_of(m, y));
    case Role::HeadNorm: return head_norm(s, y, b * (l / m2) * head_norm_heads(m, y.in, m1));
    case Role::AttentionScores: return attention_scores(s, y.name, {b, h / m1, h / m1, q, l / m2, l}, gathered);
    case Role::AttentionSoftmax: return softmax(s, y.name, b * (h / m1) * (l / m2), l);
    case Role::AttentionValues: return attention_values(s, y.name, {b, h / m1, h / m1, q, l / m2, l}, gathered);
    case Role::Dropout:
      if (y.operand == Operand::Scores) return dropout(s, y.name, b * (h / m1) * (l / m2) * l);
      break;
    // The vocabulary split over tp1 (heads/features), tokens over tp2.
    case Role::Embedding:
      return embedding(s, y.name, b * (l / m2), m.e, vocab_per_gpu(y.out, m1), feature_split(t),
                       m.learned_positions ? l : 0);
    case Role::CrossEntropy:
      return cross_entropy(s, y.name, b * (l / m2), vocab_per_gpu(y.out, m1), feature_split(t), m.logits_dtype);
    default: break;
  }
  unsupported(y, strategy);
}

// 2d (modules.py mlp_2d, sa_2d_seqp): SUMMA GEMMs on the (tp2 sequence) x (tp1 feature) grid,
// elementwise layers on (l/tp2, features/tp1) blocks.
LayerCost shard_2d(const System& s, const BlockLayer& y, I b, const Transformer& m, const TensorSplit& t,
                   const AttentionMode& /*attention*/) {
  const I l = m.l, m1 = t.tp1, m2 = t.tp2;
  switch (y.role) {
    case Role::ColumnProjection:
    case Role::QkvProjection:
    case Role::VocabProjection:
    case Role::RowProjection: {
      // the local rows (l / tp2) and output columns (n / tp1) over the whole k, in nb rounds
      const I n = column_width(y, m, m1);
      return gemm(s, y.name, {b * (l / m2), y.in, n / m1, y.in, n}, {seq_split(t), feature_split(t), t.nb});
    }
    case Role::Bias: return bias(s, y.name, b * (l / m2), y.out / m1);
    case Role::Activation: return activation(s, y.name, b * (l / m2) * (y.out / m1));
    case Role::GatedActivation: return gated_activation(s, y.name, b * (l / m2) * (y.out / m1));
    case Role::Dropout:
      if (y.operand != Operand::Scores) return dropout(s, y.name, b * (l / m2) * (y.out / m1));
      break;
    case Role::Norm:
      // (l / tp2, e / tp1) blocks, the row statistics all-reduced over the feature split. The
      // counts' width is the reference's l / tp1 (its LayerNorm2D takes the local embedding as
      // l / tp1, not e / tp1); kept, since its published numbers depend on it.
      {
        LayerCost c = layer_norm(s, y.name, {b * (l / m2), l / m1, b * l, y.out},
                                 {NormPlan::ReduceStatistics, seq_split(t), feature_split(t)}, norm_of(m));
        if (!carries_residual(m, y)) c.glue = Glue::None;
        return c;
      }
    default: break;
  }
  return shard_context_parallel_attention(s, y, b, m, t, "2d");
}

// 2d-seqp (modules.py mlp_seqp, sa_seqp): 1d weight splits over tp1, the sequence over tp2.
LayerCost shard_seqp(const System& s, const BlockLayer& y, I b, const Transformer& m, const TensorSplit& t,
                     const AttentionMode& /*attention*/) {
  const I l = m.l, m1 = t.tp1, m2 = t.tp2;
  // rows on one GPU: b (l / tp2), the sequence split over tp2 (computed where used: the hot path)
  // Experts: tokens split over the sequence (tp2), weights over tp1.
  if (y.operand == Operand::Routed) return shard_expert(s, y, b * (l / m2), m, t);
  switch (y.role) {
    case Role::ColumnProjection:
    case Role::QkvProjection:
    case Role::VocabProjection:
      return column_projection(s, y.name, b * (l / m2), y.in, column_width(y, m, m1), feature_split(t));
    case Role::RowProjection: return row_projection(s, y.name, b * (l / m2), y.in, y.out, feature_split(t));
    case Role::Bias:
      // The reference shards the MLP's output bias over the sequence (l/tp2/tp1 rows, e wide) and
      // the attention's over the grid (l/tp2 rows, e/tp1 wide): its weights differ, kept.
      if (y.operand == Operand::Residual && y.sublayer == Sublayer::Mlp) {
        return bias(s, y.name, b * ((l / m2) / m1), y.out);
      }
      return bias(s, y.name, b * (l / m2), y.out / m1);
    case Role::Activation: return activation(s, y.name, b * (l / m2) * (y.out / m1));
    case Role::GatedActivation: return gated_activation(s, y.name, b * (l / m2) * (y.out / m1));
    case Role::Dropout:
      if (y.operand == Operand::Hidden) return dropout(s, y.name, b * (l / m2) * (y.out / m1));
      if (y.operand == Operand::Residual) return dropout(s, y.name, b * (l / (m1 * m2)) * y.out);
      break;
    case Role::Norm: {
      // the b (l / tp2) rows of the sequence split further over tp1 and gathered for the next GEMM
      LayerCost c = layer_norm(s, y.name, {b * ((l / m2) / m1), y.out, b * (l / m2), y.out},
                               {NormPlan::GatherRows, y.local_rows ? kOneGpu : feature_split(t), kOneGpu}, norm_of(m));
      if (!carries_residual(m, y)) c.glue = Glue::None;
      return c;
    }
    case Role::Router:
    case Role::Dispatch:
    case Role::Combine: return shard_moe(s, y, b * (l / m2), m, t, "2d-seqp");
    default: break;
  }
  return shard_context_parallel_attention(s, y, b, m, t, "2d-seqp");
}

}  // namespace

I kv_heads_per_gpu(const Transformer& m, I tp) { return m.kv() >= tp ? m.kv() / tp : 1; }

I cp_head_ranks(const Transformer& m, const TensorSplit& t, CpComm k) {
  return cp_exchange(k).head_ranks(t.cp, t.nv_cp, m.h / t.tp1, kv_heads_per_gpu(m, t.tp1));
}

I qkv_columns(const Transformer& m, I tp) { return tp * (m.h / tp + 2 * kv_heads_per_gpu(m, tp)) * m.head_dim(); }

std::vector<BlockLayer> describe_block(const Transformer& m, AttentionMode attention) {
  const I e = m.e, f = m.f;
  const bool gated = m.mlp == MlpKind::SwiGlu;
  using enum Role;
  using enum Sublayer;
  std::vector<BlockLayer> out;
  // Dropout and bias layers exist only when the model has them.
  auto add = [&](const BlockLayer& y) {
    if ((y.role == Dropout && !m.has_dropout()) || (y.role == Bias && !m.bias)) return;
    out.push_back(y);
  };
  // A norm on a sub-layer's output before its residual add (Gemma 2 and 3), on the rows the GPU
  // holds after the row projection's reduce-scatter.
  auto post_norm = [&](const char* name, Sublayer sublayer) {
    if (!m.post_norms) return;
    BlockLayer y{name, sublayer, Norm, Operand::Residual, 0, e};
    y.local_rows = true;
    out.push_back(y);
  };
  // An MLP of `width` hidden features on `operand` (Hidden: a dense MLP; Routed: each expert's).
  auto mlp = [&](const char* up, const char* act, const char* down, I width, Operand operand) {
    const Operand down_operand = operand == Operand::Routed ? operand : Operand::Residual;
    add({up, Mlp, ColumnProjection, operand, e, gated ? 2 * width : width});
    add(gated ? BlockLayer{act, Mlp, GatedActivation, operand, 0, width}
              : BlockLayer{act, Mlp, Activation, operand, 0, width});
    add({down, Mlp, RowProjection, down_operand, width, e});
  };
  if (m.is_moe()) {
    // Experts without biases or dropout (as Mixtral's); the router's top-k and the weighted sum
    // of the experts' outputs are elementwise work on e x top_k values per token, left out.
    add({"router", Mlp, Router, Operand::Residual, e, m.moe.experts});
    add({"dispatch", Mlp, Dispatch, Operand::Residual, 0, e});
    mlp("fc1", "act1", "fc2", m.moe.ffn_dim, Operand::Routed);
    add({"combine", Mlp, Combine, Operand::Residual, 0, e});
    if (m.moe.shared_experts > 0) {
      mlp("shared-fc1", "shared-act", "shared-fc2", m.moe.shared_experts * m.moe.ffn_dim, Operand::Hidden);
    }
  } else {
    add({"fc1", Mlp, ColumnProjection, Operand::Hidden, e, gated ? 2 * f : f});
    add({"fc1-bias", Mlp, Bias, Operand::Hidden, 0, gated ? 2 * f : f});
    add(gated ? BlockLayer{"act1", Mlp, GatedActivation, Operand::Hidden, 0, f}
              : BlockLayer{"act1", Mlp, Activation, Operand::Hidden, 0, f});
    add({"dpr1", Mlp, Dropout, Operand::Hidden, 0, f});
    add({"fc2", Mlp, RowProjection, Operand::Residual, f, e});
    add({"fc2-bias", Mlp, Bias, Operand::Residual, 0, e});
  }
  post_norm("post-mlp-norm", Mlp);
  add({"dpr2", Mlp, Dropout, Operand::Residual, 0, e});
  BlockLayer ln1{"ln1", Mlp, Norm, Operand::Residual, 0, e, true};
  // MLA's down-projections take the rows the GPU holds: nothing to gather for them (without a
  // query latent the query projection takes the gathered rows, as any column projection).
  ln1.local_rows = m.is_mla() && m.mla.q_lora_rank > 0;
  if (!ln1.local_rows) ln1.gathered_for = m.is_mla() ? ColumnProjection : QkvProjection;
  add(ln1);
  if (m.is_mla()) {
    // Megatron-Core's MLASelfAttention (multi_latent_attention.py) with sequence parallelism:
    // the down-projections replicated ("duplicated") on the GPU's rows, the latents' norms
    // gathering them for the column-parallel up-projections (the key's rotary part gathered with
    // the key/value latent), every head's query, key and value split over tp.
    const LatentAttention& a = m.mla;
    const I queries = m.h * m.qk_head_dim();
    if (a.q_lora_rank > 0) {
      add({"q-down", Attention, LatentProjection, Operand::Residual, e, a.q_lora_rank});
      add(gathering_norm({"q-norm", Attention, Norm, Operand::Residual, 0, a.q_lora_rank}, ColumnProjection));
      add({"q-up", Attention, ColumnProjection, Operand::Hidden, a.q_lora_rank, queries});
    } else {
      add({"q-proj", Attention, ColumnProjection, Operand::Hidden, e, queries});
    }
    add({"kv-down", Attention, LatentProjection, Operand::Residual, e, a.kv_lora_rank + a.qk_rope_head_dim});
    // `in`: the width its gather moves, the latent and the key's rotary part
    add(gathering_norm({"kv-norm", Attention, Norm, Operand::Residual, a.kv_lora_rank + a.qk_rope_head_dim, a.kv_lora_rank},
                       ColumnProjection));
    add({"kv-up", Attention, ColumnProjection, Operand::Hidden, a.kv_lora_rank, m.h * (a.qk_nope_head_dim + a.v_head_dim)});
  } else {
    const I qkv = (m.h + 2 * m.kv()) * m.head_dim();
    add({"qkv", Attention, QkvProjection, Operand::Hidden, e, qkv});
    // Qwen2's bias on q, k and v alone, added after the GEMM as Megatron's ColumnParallelLinear
    // adds it (output + bias). A model with `bias: true` keeps the reference's block, whose qkv
    // has no bias layer (its parameters are counted all the same).
    if (m.qkv_bias && !m.bias) out.push_back({"qkv-bias", Attention, Bias, Operand::Hidden, 0, qkv});
    if (m.qk_norm) {
      add({"q-norm", Attention, HeadNorm, Operand::Hidden, m.h, m.head_dim()});
      add({"k-norm", Attention, HeadNorm, Operand::Hidden, m.kv(), m.head_dim()});
    }
  }
  if (attention.flash) {
    // Alternating local and global blocks: the windowed and the global core, each over its share
    // of the blocks; every block windowed: one core with the window.
    const I windowed = m.windowed_blocks();
    if (windowed > 0 && windowed < m.depth) {
      BlockLayer global{"fusedla", Attention, AttentionCore, Operand::Scores, 0, 0};
      global.share = static_cast<double>(m.depth - windowed) / static_cast<double>(m.depth);
      BlockLayer local{"fusedla-local", Attention, AttentionCore, Operand::Scores, 0, 0};
      local.window = m.window;
      local.share = static_cast<double>(windowed) / static_cast<double>(m.depth);
      add(local);
      add(global);
    } else {
      BlockLayer core{"fusedla", Attention, AttentionCore, Operand::Scores, 0, 0};
      core.window = windowed > 0 ? m.window : 0;
      add(core);
    }
  } else {
    // Unfused attention expands K and V to every query head (Megatron's legacy path,
    // repeat_interleave of the key/value groups), so its layers keep the multi-head shapes; it
    // computes and masks the whole score matrix, a window's as causal attention's.
    add({"logits", Attention, AttentionScores, Operand::Scores, 0, 0});
    add({"softmax", Attention, AttentionSoftmax, Operand::Scores, 0, 0});
    add({"dpr_at", Attention, Dropout, Operand::Scores, 0, 0});
    add({"attend", Attention, AttentionValues, Operand::Scores, 0, 0});
  }
  add({"vproj", Attention, RowProjection, Operand::Residual, m.attention_width(), e});
  add({"vproj-bias", Attention, Bias, Operand::Residual, 0, e});
  if (m.out_bias && !m.bias) out.push_back({"vproj-bias", Attention, Bias, Operand::Residual, 0, e});
  post_norm("post-sa-norm", Attention);
  add({"dpr_v", Attention, Dropout, Operand::Residual, 0, e});
  // an MoE layer's rows go to its router and token dispatcher, which gather them in bf16
  add(gathering_norm({"ln2", Attention, Norm, Operand::Residual, 0, e}, m.is_moe() ? Norm : ColumnProjection));
  return out;
}

std::vector<BlockLayer> describe_dense_block(const Transformer& m, AttentionMode attention) {
  Transformer dense = m;
  dense.moe = MoeOptions{};
  return describe_block(dense, attention);
}

StageEnds describe_stage_ends(const Transformer& m, I pp) {
  StageEnds ends;
  if (m.vocab_size == 0) return ends;
  const I v = m.vocab_size, e = m.e;
  using enum Role;
  using enum Sublayer;
  ends.first.layers[0] = {"embed", FirstStage, Embedding, Operand::Residual, 0, v};
  ends.first.count = 1;
  ends.last.layers[0] = gathering_norm({"ln_f", LastStage, Norm, Operand::Residual, 0, e}, Role::VocabProjection);
  ends.last.layers[1] = {"lm_head", LastStage, VocabProjection, Operand::Hidden, e, v};
  // Tied weights on one stage are the embedding's; on several the last keeps a copy (Megatron's
  // shared embedding), its gradient all-reduced with the first stage's (compose_step).
  ends.last.layers[1].shares_weights = m.tie_embeddings && pp == 1;
  ends.last.layers[2] = {"loss", LastStage, CrossEntropy, Operand::Hidden, 0, v};
  ends.last.count = 3;
  if (m.mtp_layers > 0) {
    // Megatron-Core's MultiTokenPredictionLayer at each depth: the shifted tokens' embedding
    // (the model's table: on several stages without tied weights, a copy on the last whose
    // gradient the first and last stage all-reduce, as a tied head's), enorm and hnorm, eh_proj of
    // their concatenation (a column-parallel 2e -> e), the block, the final norm, the shared LM
    // head and a loss.
    const BlockLayer mtp[] = {{"mtp-embed", LastStage, Embedding, Operand::Residual, 0, v},
                              {"mtp-enorm", LastStage, Norm, Operand::Residual, 0, e},
                              {"mtp-hnorm", LastStage, Norm, Operand::Residual, 0, e},
                              {"mtp-proj", LastStage, ColumnProjection, Operand::Hidden, 2 * e, e},
                              {"mtp-norm", LastStage, Norm, Operand::Residual, 0, e},
                              {"mtp-head", LastStage, VocabProjection, Operand::Hidden, e, v},
                              {"mtp-loss", LastStage, CrossEntropy, Operand::Hidden, 0, v}};
    for (BlockLayer layer : mtp) {
      layer.share = static_cast<double>(m.mtp_layers);
      layer.shares_weights = layer.role == VocabProjection || (layer.role == Embedding && (pp == 1 || m.tie_embeddings));
      ends.last.layers[static_cast<std::size_t>(ends.last.count++)] = layer;
    }
  }
  return ends;
}

namespace {
LayerCost shard_for_strategy(const System& s, Strategy strategy, const BlockLayer& layer, I b, const Transformer& m,
                             const TensorSplit& split, const AttentionMode& attention, const Execution& exec,
                             const Mechanisms& mech) {
  switch (strategy) {
    case Strategy::OneD: return shard_1d(s, layer, b, m, split, attention, exec, mech);
    case Strategy::TwoD: return shard_2d(s, layer, b, m, split, attention);
    case Strategy::TwoDSeqp: return shard_seqp(s, layer, b, m, split, attention);
  }
  unsupported(layer, "unknown");
}
}  // namespace

LayerCost shard_layer(const System& s, Strategy strategy, const BlockLayer& layer, I b, const Transformer& m,
                      const TensorSplit& split, const AttentionMode& attention, const Execution& exec,
                      const Mechanisms& mech) {
  // The layout keeps to model/layout_rules.cpp's rules (validate_layout, validate_runtime_layout,
  // or a search's lists filtered by them): nothing is checked here, in the search's hottest path.
  AttentionMode a = attention;
  // Selective recomputation: unfused attention re-runs its core (the reference's
  // attention_recompute); flash attention already recomputes inside its kernel.
  if (exec.recompute == Recompute::Selective && !a.flash) a.recompute = true;
  LayerCost c = shard_for_strategy(s, strategy, layer, b, m, split, a, exec, mech);
  if (exec.precision != Precision::Bf16) [[unlikely]] {
    const Fp8Policy fp8 = layout_fp8(mech, exec.precision);
    if (runs_fp8(layer, fp8)) to_fp8(s, layer, fp8, c);
  }
  if (exec.recompute == Recompute::Full && layer.sublayer != Sublayer::FirstStage &&
      layer.sublayer != Sublayer::LastStage) {
    // The block keeps only its input (the residual stream a stage also sends on) and runs its
    // forward again in the backward.
    c.recompute = true;
    if (!layer.stage_input) c.activation_buffer = 0;
  }
  return c;
}

BlockMemory block_memory(const System& s, Strategy strategy, const std::vector<BlockLayer>& block, I b,
                         const Transformer& m, const TensorSplit& split, const AttentionMode& attention,
                         const Execution& exec, const Mechanisms& mech) {
  std::array<double, kMaxModuleLayers> weights[2]{}, activations[2]{};
  std::size_t n[2] = {0, 0};
  double expert_weights = 0;
  for (const BlockLayer& layer : block) {
    const std::size_t module = layer.sublayer == Sublayer::Mlp ? 0 : 1;
    if (n[module] == weights[module].size()) throw ConfigError("a module holds at most 12 layers");
    const LayerCost cost = shard_layer(s, strategy, layer, b, m, split, attention, exec, mech);
    weights[module][n[module]] = cost.weights_mem * layer.share;
    activations[module][n[module]++] = cost.activation_buffer * layer.share;
    if (layer.operand == Operand::Routed) expert_weights += cost.weights_mem;
  }
  BlockMemory out;
  out.expert_weights = expert_weights;
  out.mlp_weights = pandas_sum(weights[0].data(), n[0]);
  out.mlp_activations = pandas_sum(activations[0].data(), n[0]);
  out.sa_weights = pandas_sum(weights[1].data(), n[1]);
  out.sa_activations = pandas_sum(activations[1].data(), n[1]);
  return out;
}

BuiltBlock build_block(const System& s, Strategy strategy, const std::vector<BlockLayer>& block, I b,
                       const Transformer& m, const TensorSplit& split, const AttentionMode& attention, Module& mlp,
                       Module& sa, const Execution& exec, const Mechanisms& mech) {
  mlp.count = 0;
  sa.count = 0;
  BuiltBlock out;
  for (const BlockLayer& layer : block) {
    const LayerCost cost = shard_layer(s, strategy, layer, b, m, split, attention, exec, mech);
    if (layer.stage_input) out.p2p_volume_gb = cost.activation_buffer;
    if (layer.operand == Operand::Routed) out.expert_weights_gb += cost.weights_mem;
    (layer.sublayer == Sublayer::Mlp ? mlp : sa).add(s, cost, layer.share);
  }
  return out;
}

void build_stage(const System& s, Strategy strategy, const StageLayers& layers, I b, const Transformer& m,
                 const TensorSplit& split, const AttentionMode& attention, Module& out, const Execution& exec,
                 const Mechanisms& mech) {
  out.count = 0;
  for (int i = 0; i < layers.count; ++i) {
    const BlockLayer& layer = layers.layers[static_cast<std::size_t>(i)];
    LayerCost cost = shard_layer(s, strategy, layer, b, m, split, attention, exec, mech);
    if (layer.shares_weights) {
      cost.weights_mem = 0;
      cost.weights_grad_mem = 0;
    } else if (layer.role == Role::Embedding) {
      // one table, however many depths look it up (its share)
      cost.weights_mem /= layer.share;
      cost.weights_grad_mem /= layer.share;
    }
    out.add(s, cost, layer.share);
  }
}

}  // namespace perfsweep
