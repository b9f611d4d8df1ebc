#include "model/autocast.hpp"

#include <algorithm>

namespace perfsweep {
namespace {
using I = std::int64_t;
constexpr double D(I v) { return static_cast<double>(v); }
constexpr double kGB = 1e-9;

double tokens(const Transformer& m, const Layout& c) { return D(c.mbs * m.l); }
double tensor_degree(const Layout& c) { return D(c.tensor.tp1 * c.tensor.tp2); }
}  // namespace

BlockActivations autocast_block_activations(const Transformer& m, const Layout& c) {
  BlockActivations a;
  const double e = D(m.e), f = D(m.f) / tensor_degree(c);
  if (c.exec.recompute == Recompute::Full) {
    a.sa = tokens(m, c) * 4 * e * kGB;  // the checkpointed block's fp32 input
    return a;
  }
  // Bytes per token. Attention: the block's fp32 residual input (kept by the first norm), the
  // bf16 cast of the norm's output (the qkv projection's input), the qkv projection's output (Q,
  // K and V are views of it), the attention's output and its fp32 log-sum-exp per head, the norm's
  // statistics (LayerNorm: mean and rstd; RMSNorm: rstd), a one-byte dropout mask.
  const double t = tensor_degree(c);
  const double qkv = D((m.h + 2 * m.kv()) * m.head_dim()) / t;
  const double norm_stats = m.norm == NormKind::LayerNorm ? 8 : 4;
  const double mask = m.has_dropout() ? e : 0.0;
  a.sa = 4 * e + 2 * e + 2 * qkv + 2 * D(m.attention_width()) / t + 4 * D(m.h) / t + norm_stats + mask;
  // MLP: the fp32 residual after the attention (kept by the second norm), its norm's bf16 cast,
  // the up-projection's output and the activation's (SwiGLU: gate and up halves, silu(gate), the
  // product), the norm's statistics, the dropout mask.
  const double up = m.mlp == MlpKind::SwiGlu ? 2 * (2 * f) + 2 * f + 2 * f : 2 * f + 2 * f;
  a.mlp = 4 * e + 2 * e + up + norm_stats + mask;
  a.sa *= tokens(m, c) * kGB;
  a.mlp *= tokens(m, c) * kGB;
  return a;
}

double autocast_ends_activations(const Transformer& m, const Layout& c) {
  return tokens(m, c) * (m.vocab_size > 0 ? 6 : 8) * D(m.e) * kGB;
}

double autocast_peak_transient_gb(const Transformer& m, const Layout& c, double stage_casts_gb, double block_casts_gb,
                                  double end_casts_gb, bool last_stage) {
  const bool full = c.exec.recompute == Recompute::Full;
  const double n = tokens(m, c);
  const double output = n * 4 * D(m.e) * kGB;  // an fp32 residual-stream tensor
  const double logits = m.vocab_size > 0 ? n * D(m.vocab_size) / tensor_degree(c) * 4 * kGB : 0.0;
  const double loss_buffers = !last_stage ? 0.0 : m.vocab_size > 0 ? logits : output;
  const double forward_end = stage_casts_gb + (m.vocab_size > 0 ? 2 : 1) * loss_buffers;
  const double loss_backward = (full ? end_casts_gb : stage_casts_gb) + (m.vocab_size > 0 ? 3 : 2) * loss_buffers;
  double peak = std::max(forward_end, loss_backward);
  if (full) {
    const BlockActivations saved = [&] {
      Layout kept = c;
      kept.exec.recompute = Recompute::None;
      return autocast_block_activations(m, kept);
    }();
    peak = std::max(peak, end_casts_gb + block_casts_gb + saved.sa + saved.mlp + 2 * output);
  }
  return peak;
}

double resident_batch_gb(const Transformer& m, const Layout& c, I micro_batches) {
  return 2 * D(micro_batches) * tokens(m, c) * (m.vocab_size > 0 ? 8 : 4 * D(m.e)) * kGB;
}

}  // namespace perfsweep
