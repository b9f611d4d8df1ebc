#include "model/block.hpp"

#include <array>
#include <string>

#include "core/error.hpp"

namespace perfsweep {
namespace {
using I = std::int64_t;

[[noreturn]] void unsupported(const BlockLayer& layer, const char* strategy) {
  throw ConfigError(std::string(layer.name) + ": the " + strategy + " strategy has no sharding rule for this layer");
}

// The reference passes parallelism {'dim1': m2, 'dim2': m1} and topology {'t1': t2, 't2': t1}
// to 2D layers: dim1 is the sequence (tp2) split, dim2 the feature/head (tp1) split.
Split2 grid(const TensorSplit& t) { return {t.tp2, t.tp1, t.nv2, t.nv1}; }

// Plain tensor parallelism in place of the reduce-scatter / all-gather pairs: a pass's
// reduce-scatters of full activations become all-reduces (Megatron's f and g operators).
void all_reduce_instead(CommSet& set) {
  for (std::uint8_t i = 0; i < set.count; ++i) {
    if (set.items[i].type == CommType::ReduceScatter) set.items[i].type = CommType::AllReduce;
  }
}

// 1d (modules.py mlp_1d, sa_1d): weights split over tp; with sequence parallelism (the
// reference's) the residual stream (row projections' reduce-scatter output, dropout, norm) is
// split over the sequence and gathered before the next projection.
LayerCost shard_1d(const System& s, const BlockLayer& y, I b, const Transformer& m, const TensorSplit& t,
                   const AttentionMode& a, const Execution& x) {
  const I l = m.l, h = m.h, q = m.e / m.h, tp = t.tp1, nv = t.nv1;
  const bool rc = a.recompute;
  const bool sp = x.sequence_parallel;
  const I l_residual = sp ? l / tp : l;  // rows of the residual stream on one GPU
  switch (y.role) {
    case Role::ColumnProjection: {
      LayerCost c = linear(s, y.name, b, l, y.in, y.out, {1, tp, 1, nv});
      if (!sp) all_reduce_instead(c.comm_bwd);
      return c;
    }
    case Role::RowProjection: {
      LayerCost c = linear(s, y.name, b, l, y.in, y.out, {tp, 1, nv, 1});
      if (!sp) all_reduce_instead(c.comm_fwd);
      return c;
    }
    case Role::Bias:
      return y.operand == Operand::Hidden ? bias(s, y.name, b, l, y.out, {1, tp, 1, nv})
                                          : bias(s, y.name, b, l, y.out, {1, 1, 1, 1});
    case Role::Activation: return activation(s, y.name, b * l * (y.out / tp));
    case Role::Dropout:
      switch (y.operand) {
        case Operand::Hidden: return dropout(s, y.name, b * l * (y.out / tp));
        case Operand::Residual: return dropout(s, y.name, b * l_residual * y.out);
        case Operand::Scores: return dropout(s, y.name, b * (h / tp) * l * l, rc, rc);
      }
      break;
    case Role::Norm: return sp ? layer_norm(s, y.name, b, l, y.out, tp, nv) : layer_norm(s, y.name, b, l, y.out, 1, 1);
    case Role::AttentionCore: return fused_la(s, y.name, b, l, q, h, tp);
    case Role::AttentionScores: return logits(s, y.name, b, l, q, h, tp, rc);
    case Role::AttentionSoftmax: return softmax(s, y.name, b, h, l, l, tp, rc, rc);
    case Role::AttentionValues: return attend(s, y.name, b, l, q, h, tp, rc);
  }
  unsupported(y, "1d");
}

// Context-parallel attention core (modules.py sa_2d_seqp and sa_seqp): heads over tp1, queries
// over tp2, keys and values gathered over tp2.
LayerCost shard_context_parallel_attention(const System& s, const BlockLayer& y, I b, const Transformer& m,
                                           const TensorSplit& t, const char* strategy) {
  const I l = m.l, h = m.h, q = m.e / m.h, m1 = t.tp1, m2 = t.tp2;
  switch (y.role) {
    case Role::AttentionCore: return fused_la_seqp(s, y.name, b, l, q, h, grid(t));
    case Role::AttentionScores: return logits_seqp(s, y.name, b, l, q, h, grid(t));
    case Role::AttentionSoftmax: return softmax(s, y.name, b, h, l / m2, l, m1);
    case Role::AttentionValues: return attend_seqp(s, y.name, b, l, q, h, grid(t));
    case Role::Dropout:
      if (y.operand == Operand::Scores) return dropout(s, y.name, b * (h / m1) * (l / m2) * l);
      break;
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
    case Role::RowProjection: return linear_summa(s, y.name, b, l, y.in, y.out, grid(t), t.nb);
    case Role::Bias: return bias(s, y.name, b, l, y.out, grid(t));
    case Role::Activation: return activation(s, y.name, b * (l / m2) * (y.out / m1));
    case Role::Dropout:
      if (y.operand != Operand::Scores) return dropout(s, y.name, b * (l / m2) * (y.out / m1));
      break;
    case Role::Norm: return layer_norm_2d(s, y.name, b, l, y.out, grid(t));
    default: break;
  }
  return shard_context_parallel_attention(s, y, b, m, t, "2d");
}

// 2d-seqp (modules.py mlp_seqp, sa_seqp): 1d weight splits over tp1, the sequence over tp2.
LayerCost shard_seqp(const System& s, const BlockLayer& y, I b, const Transformer& m, const TensorSplit& t,
                     const AttentionMode& /*attention*/) {
  const I l = m.l, m1 = t.tp1, m2 = t.tp2, t1 = t.nv1, t2 = t.nv2;
  switch (y.role) {
    case Role::ColumnProjection: return linear_seqp(s, y.name, b, l, y.in, y.out, {1, m1, 1, t1}, m2, t2);
    case Role::RowProjection: return linear_seqp(s, y.name, b, l, y.in, y.out, {m1, 1, t1, 1}, m2, t2);
    case Role::Bias:
      // The reference shards the MLP's output bias over the sequence (l/tp2/tp1 rows, e wide) and
      // the attention's over the grid (l/tp2 rows, e/tp1 wide): its weights differ, kept.
      if (y.operand == Operand::Residual && y.sublayer == Sublayer::Mlp) {
        return bias(s, y.name, b, l / m2, y.out, {m1, 1, t1, 1});
      }
      return bias(s, y.name, b, l, y.out, grid(t));
    case Role::Activation: return activation(s, y.name, b * (l / m2) * (y.out / m1));
    case Role::Dropout:
      if (y.operand == Operand::Hidden) return dropout(s, y.name, b * (l / m2) * (y.out / m1));
      if (y.operand == Operand::Residual) return dropout(s, y.name, b * (l / (m1 * m2)) * y.out);
      break;
    case Role::Norm: return layer_norm(s, y.name, b, l / m2, y.out, m1, t1);
    default: break;
  }
  return shard_context_parallel_attention(s, y, b, m, t, "2d-seqp");
}

}  // namespace

std::vector<BlockLayer> describe_block(const Transformer& m, AttentionMode attention) {
  const I e = m.e, f = m.f;
  using enum Role;
  using enum Sublayer;
  std::vector<BlockLayer> out = {
      {"fc1", Mlp, ColumnProjection, Operand::Hidden, e, f},
      {"fc1-bias", Mlp, Bias, Operand::Hidden, 0, f},
      {"act1", Mlp, Activation, Operand::Hidden, 0, f},
      {"dpr1", Mlp, Dropout, Operand::Hidden, 0, f},
      {"fc2", Mlp, RowProjection, Operand::Residual, f, e},
      {"fc2-bias", Mlp, Bias, Operand::Residual, 0, e},
      {"dpr2", Mlp, Dropout, Operand::Residual, 0, e},
      {"ln1", Mlp, Norm, Operand::Residual, 0, e, true},
      {"qkv", Attention, ColumnProjection, Operand::Hidden, e, 3 * e},
  };
  if (attention.flash) {
    out.push_back({"fusedla", Attention, AttentionCore, Operand::Scores, 0, 0});
  } else {
    out.push_back({"logits", Attention, AttentionScores, Operand::Scores, 0, 0});
    out.push_back({"softmax", Attention, AttentionSoftmax, Operand::Scores, 0, 0});
    out.push_back({"dpr_at", Attention, Dropout, Operand::Scores, 0, 0});
    out.push_back({"attend", Attention, AttentionValues, Operand::Scores, 0, 0});
  }
  out.push_back({"vproj", Attention, RowProjection, Operand::Residual, e, e});
  out.push_back({"vproj-bias", Attention, Bias, Operand::Residual, 0, e});
  out.push_back({"dpr_v", Attention, Dropout, Operand::Residual, 0, e});
  out.push_back({"ln2", Attention, Norm, Operand::Residual, 0, e});
  return out;
}

namespace {
LayerCost shard_for_strategy(const System& s, Strategy strategy, const BlockLayer& layer, I b, const Transformer& m,
                             const TensorSplit& split, const AttentionMode& attention, const Execution& exec) {
  switch (strategy) {
    case Strategy::OneD: return shard_1d(s, layer, b, m, split, attention, exec);
    case Strategy::TwoD: return shard_2d(s, layer, b, m, split, attention);
    case Strategy::TwoDSeqp: return shard_seqp(s, layer, b, m, split, attention);
  }
  unsupported(layer, "unknown");
}
}  // namespace

LayerCost shard_layer(const System& s, Strategy strategy, const BlockLayer& layer, I b, const Transformer& m,
                      const TensorSplit& split, const AttentionMode& attention, const Execution& exec) {
  if (!exec.sequence_parallel && strategy != Strategy::OneD) {
    throw ConfigError("sequence parallelism off is modeled for 1d tensor parallelism only");
  }
  AttentionMode a = attention;
  // Selective recomputation: unfused attention re-runs its core (the reference's
  // attention_recompute); flash attention already recomputes inside its kernel.
  if (exec.recompute == Recompute::Selective && !a.flash) a.recompute = true;
  LayerCost c = shard_for_strategy(s, strategy, layer, b, m, split, a, exec);
  if (exec.recompute == Recompute::Full) {
    // The block keeps only its input (the residual stream a stage also sends on) and runs its
    // forward again in the backward.
    c.recompute = true;
    if (!layer.stage_input) c.activation_buffer = 0;
  }
  return c;
}

BlockMemory block_memory(const System& s, Strategy strategy, const std::vector<BlockLayer>& block, I b,
                         const Transformer& m, const TensorSplit& split, const AttentionMode& attention,
                         const Execution& exec) {
  std::array<double, kMaxModuleLayers> weights[2]{}, activations[2]{};
  std::size_t n[2] = {0, 0};
  for (const BlockLayer& layer : block) {
    const std::size_t module = layer.sublayer == Sublayer::Mlp ? 0 : 1;
    if (n[module] == weights[module].size()) throw ConfigError("a module holds at most 12 layers");
    const LayerCost cost = shard_layer(s, strategy, layer, b, m, split, attention, exec);
    weights[module][n[module]] = cost.weights_mem;
    activations[module][n[module]++] = cost.activation_buffer;
  }
  BlockMemory out;
  out.mlp_weights = pandas_sum(weights[0].data(), n[0]);
  out.mlp_activations = pandas_sum(activations[0].data(), n[0]);
  out.sa_weights = pandas_sum(weights[1].data(), n[1]);
  out.sa_activations = pandas_sum(activations[1].data(), n[1]);
  return out;
}

double build_block(const System& s, Strategy strategy, const std::vector<BlockLayer>& block, I b, const Transformer& m,
                   const TensorSplit& split, const AttentionMode& attention, Module& mlp, Module& sa,
                   const Execution& exec) {
  mlp.count = 0;
  sa.count = 0;
  double p2p_volume_gb = 0;
  for (const BlockLayer& layer : block) {
    const LayerCost cost = shard_layer(s, strategy, layer, b, m, split, attention, exec);
    if (layer.stage_input) p2p_volume_gb = cost.activation_buffer;
    (layer.sublayer == Sublayer::Mlp ? mlp : sa).add(s, cost);
  }
  return p2p_volume_gb;
}

}  // namespace perfsweep
