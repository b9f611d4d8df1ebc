#include "model/train_step.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "model/parameters.hpp"
#include "model/roofline.hpp"
#include "model/step.hpp"

namespace perfsweep {
namespace {
using I = std::int64_t;
constexpr double D(I v) { return static_cast<double>(v); }
constexpr double kGB = 1e-9;

// Bytes per element of what the step moves besides the layers: an fp32 -> bf16 copy reads 4 and
// writes 2; a bf16 gradient cast back to fp32 reads 2 and writes 4, and adding it into the
// existing fp32 .grad reads 4 + 4 and writes 4 (18 per GEMM weight); an fp32 parameter's
// gradient is only added (12); zeroing writes 4.
constexpr double kCastBytes = 6, kLinearGradBytes = 18, kFp32GradBytes = 12, kZeroBytes = 4;

// Bytes one token keeps for the backward in one block of the eager autocast stack: the block's
// fp32 residual input (kept by the first norm), the bf16 casts of both norms' outputs (the
// projections' inputs), the qkv projection's output (the attention's Q, K and V are views of
// it), the attention's output and its log-sum-exp (fp32 per head), the fp32 residual after the
// attention (kept by the second norm), the MLP's up-projection output and the activation's
// output (SwiGLU: the gate and up halves, silu(gate), the product), two norms' statistics, and
// with dropout a one-byte mask for each of the two residual branches.
double block_bytes_per_token(const Transformer& m) {
  const double e = D(m.e), f = D(m.f);
  const double qkv = D((m.h + 2 * m.kv()) * m.head_dim());
  double bytes = 4 * e + 2 * e + 2 * qkv + 2 * e + 4 * D(m.h) + 4 * e + 2 * e;
  bytes += m.mlp == MlpKind::SwiGlu ? 2 * (2 * f) + 2 * f + 2 * f : 2 * f + 2 * f;
  bytes += 2 * (m.norm == NormKind::LayerNorm ? 8 : 4);
  if (m.has_dropout()) bytes += 2 * e;
  return bytes;
}
}  // namespace

TrainParameters train_parameters(const Transformer& m) {
  const ParameterCount p = count_parameters(m);
  const I norm = (m.norm == NormKind::LayerNorm && m.bias ? 2 : 1) * m.e;
  TrainParameters out;
  out.total = D(p.total);
  out.block_linear = D(m.depth * (p.per_block - 2 * norm));
  out.linear = out.block_linear + D(p.head);
  return out;
}

double usable_capacity_gb(const System& s) {
  constexpr double kGBPerGib = 1.073741824;
  return (s.hbm_capacity - kDriverReserveGib) * kGBPerGib;
}

TrainStep train_step(const System& s, const Transformer& m, I b, I micro_batches, Recompute recompute) {
  if (m.is_moe()) throw ConfigError("train_step: mixture-of-experts blocks are not modelled");
  if (recompute == Recompute::Selective) throw ConfigError("train_step: recompute is none or full");
  Layout c;
  c.mbs = b;
  c.exec.recompute = recompute;
  c.exec.params = ParamLayout::Amp;
  const Evaluation ev = evaluate(s, m, c, b * micro_batches);
  const TrainParameters p = train_parameters(m);
  const bool full = recompute == Recompute::Full;
  const double mb = D(micro_batches);
  using kernels::StreamKind;

  TrainStep out;
  TrainStepTime& t = out.time;
  t.layers = ev.totals.t;
  const double cast_elements = p.linear + (full ? p.block_linear : 0.0);
  t.weight_casts = mb * stream_seconds(s, StreamKind::Cast, KernelClass::Elementwise, kCastBytes * cast_elements * kGB);
  t.grad_accumulate = mb * stream_seconds(s, StreamKind::Cast, KernelClass::Elementwise,
                                       (kLinearGradBytes * p.linear + kFp32GradBytes * (p.total - p.linear)) * kGB);
  t.optimizer =
      stream_seconds(s, StreamKind::Optimizer, KernelClass::Optimizer, kernels::kAdamwBytesPerParameter * p.total * kGB);
  t.zero_grad = stream_seconds(s, StreamKind::Cast, KernelClass::Elementwise, kZeroBytes * p.total * kGB);
  if (const kernels::Calibration* cal = s.kernel_calibration.get()) {
    const double calls = D(m.depth * (ev.mlp.count + ev.sa.count) + ev.first_stage.count + ev.last_stage.count);
    const double rerun = full ? D(m.depth * (ev.mlp.count + ev.sa.count)) * cal->isolated_call_s[kernels::kFwd] : 0.0;
    t.host = mb * (calls * (cal->isolated_call_s[kernels::kFwd] + cal->isolated_call_s[kernels::kBwd]) + rerun);
  }

  // Memory: the states and the input batches always; then the largest of three phases of one
  // micro-batch (later micro-batches only add into the same gradients):
  //   forward end: every weight cast (autocast caches them until the forward's context exits),
  //     the saved activations, and the fp32 logits with the log-softmax output (2 b l V x 4 B);
  //   loss backward: the casts the backward still holds (all of them, or with full recompute
  //     only the LM head's), the activations, and three fp32 logit-sized buffers (the saved
  //     log-softmax output, its gradient, the gradient of the logits: h100_kernels.json's
  //     lm_head_loss peak_extra_bytes is 3.0 b l V x 4 B);
  //   a checkpointed block's backward (full recompute): the block inputs, one block's
  //     activations and weight casts re-made, and its input and output gradients (fp32).
  // Without a vocabulary the loss is an MSE on the fp32 output: its input and gradient.
  TrainStepMemory& mem = out.memory;
  const double tokens = D(b * m.l);
  const double e = D(m.e);
  const double per_block = block_bytes_per_token(m);
  // The final norm's fp32 input, and its output's bf16 cast for the head, or without a
  // vocabulary its fp32 output (kept by the MSE loss).
  const double ends = (m.vocab_size > 0 ? 6 : 8) * e;
  const double logits = m.vocab_size > 0 ? tokens * D(m.vocab_size) * 4 * kGB : 0.0;
  const double output = tokens * 4 * e * kGB;  // an fp32 residual-stream tensor
  const double head_casts = 2 * (p.linear - p.block_linear) * kGB;
  const double all_casts = 2 * p.linear * kGB;
  struct Phase {
    double casts, transient;
  };
  const Phase forward_end{all_casts, m.vocab_size > 0 ? 2 * logits : output};
  const Phase loss_backward{full ? head_casts : all_casts, m.vocab_size > 0 ? 3 * logits : 2 * output};
  const Phase block_rerun{full ? head_casts + 2 * p.block_linear / D(m.depth) * kGB : 0.0,
                          full ? tokens * per_block * kGB + 2 * output : 0.0};
  Phase peak = loss_backward;
  for (const Phase& x : {forward_end, block_rerun}) {
    if (x.casts + x.transient > peak.casts + peak.transient) peak = x;
  }
  mem.states = 16 * p.total * kGB;
  // token ids and targets, int64 (with a vocabulary), or fp32 inputs and targets of e features
  mem.inputs = 2 * D(micro_batches) * tokens * (m.vocab_size > 0 ? 8 : 4 * e) * kGB;
  mem.activations = tokens * ((full ? 4 * e : per_block) * D(m.depth) + ends) * kGB;
  mem.weight_casts = peak.casts;
  mem.transient = peak.transient;
  mem.peak = mem.states + mem.inputs + mem.activations + mem.weight_casts + mem.transient;
  const kernels::Calibration* cal = s.kernel_calibration.get();
  mem.reserved = mem.peak * (1 + (cal != nullptr ? cal->allocator_reserve : 0.0));
  mem.usable = usable_capacity_gb(s);
  mem.fits = !(mem.reserved > mem.usable);
  return out;
}

}  // namespace perfsweep
