#include "model/step_memory.hpp"

#include <algorithm>

#include "model/autocast.hpp"
#include "model/kernel_calibration.hpp"
#include "model/precision.hpp"
#include "model/schedule.hpp"

namespace perfsweep {
namespace {
using I = std::int64_t;
constexpr double D(I v) { return static_cast<double>(v); }
}  // namespace

StepMemory step_memory(double weights_per_block, double activations_per_block, I blocks, I pp, I dp, I seqp,
                       I in_flight, const Execution& exec, double extra_weights, double extra_activations,
                       double expert_weights_per_block, double whole_block_weights, const StateBytes* bytes,
                       I expert_tensor_replicas) {
  const double layers = D(blocks);
  StepMemory x;
  x.weights = weights_per_block * layers;
  x.weights += extra_weights;
  // Bytes per parameter (StateBytes, the layout's or the runtime's) relative to the reference's
  // 2-byte weights the block counts, then the ZeRO stage's sharding over the data-parallel group
  // (dp x seqp, as the reference shards). The reference's default (its layout, ZeRO-1) is its own
  // expression: fp32 master weights, momentum and variance, 6x the fp16 weights, sharded over
  // dp x seqp.
  const StateBytes b = bytes != nullptr ? *bytes : state_bytes(exec.params);
  constexpr double kReferenceBytes = 2;
  const double w = x.weights;
  const double shards = D(dp * seqp);
  const double optimizer_factor = (b.master + b.moments) / kReferenceBytes;
  double weights = w * (b.weights / kReferenceBytes);
  double grads = w * ((b.gradients + b.accumulator) / kReferenceBytes);
  double copies = w * (b.casts / kReferenceBytes);  // casts of the weights, alive from forward to backward
  const double shard_extra = b.zero_gradient_shard / kReferenceBytes;
  // The routed experts' weights are replicated over dp x seqp x (tp1 / etp) / ep GPUs
  // (expert-data-parallel).
  const double experts = exec.ep > 1 || expert_tensor_replicas > 1 ? expert_weights_per_block * layers : 0;
  const double expert_shards = shards / D(exec.ep) * D(expert_tensor_replicas);
  const double per_gpu = experts == 0 ? w / shards : (w - experts) / shards + experts / expert_shards;
  x.optimizer_states = exec.zero >= 1 ? optimizer_factor * per_gpu : optimizer_factor * w;
  if (exec.zero >= 1 && shard_extra > 0) x.optimizer_states += shard_extra * per_gpu;
  if (exec.zero >= 1 && b.zero_gather_buffer > 0) weights += w * (b.zero_gather_buffer / kReferenceBytes);
  if (experts == 0) [[likely]] {
    if (exec.zero >= 2) grads /= shards;
    if (exec.zero >= 3) weights /= shards;
  } else {
    if (exec.zero >= 2) grads *= per_gpu / w;
    if (exec.zero >= 3) weights *= per_gpu / w;
  }
  if (exec.zero >= 3) {
    // only the gathered parameters of the block being computed are whole
    copies = ((b.weights + b.casts) / kReferenceBytes) *
             (whole_block_weights > 0 ? whole_block_weights : weights_per_block);
  }
  if (exec.schedule != PipelineSchedule::OneFOneB && pp > 1) [[unlikely]] {
    // DualPipe: each GPU holds stages k and pp - 1 - k, two copies of a stage's parameter states
    const double stages = D(schedule_kind(exec.schedule).state_copies);
    weights *= stages;
    copies *= stages;
    grads *= stages;
    x.optimizer_states *= stages;
  }
  x.weights = weights + copies;
  x.weight_grads = grads;
  double acts = activations_per_block * layers;
  acts += extra_activations;
  // 1F1B: stage k keeps the activations of min(micro-batches, pp - k) micro-batches
  acts *= D(in_flight);
  // interleaved: the first stage holds pp (1 + (pp - 1) / (pp V)) micro-batches' worth
  if (exec.interleave > 1) acts *= 1 + D(pp - 1) / D(pp * exec.interleave);
  if (exec.schedule != PipelineSchedule::OneFOneB && pp > 1) [[unlikely]] {
    acts *= schedule_activation_factor(exec.schedule, pp);
  }
  x.activations = acts;
  if (exec.offload != Offload::None) [[unlikely]] {
    if (exec.offload == Offload::Optimizer) {
      // master weights and moments (with ZeRO-1 the GPU's shard) move to the host, beside an fp32
      // copy of the shard's gradients (DeepSpeed ZeRO-Offload's CPU gradient partition;
      // Megatron-Core's HybridDeviceOptimizer copies the gradients to fp32 CPU tensors)
      // (offload_percent of them: HybridDeviceOptimizer's offload_fraction; the GPU keeps the rest)
      const double host_share = D(exec.offload_percent) / 100;
      x.host = host_share * (x.optimizer_states + per_gpu * (kHostGradientBytes / kReferenceBytes));
      x.optimizer_states *= 1 - host_share;
    } else if (exec.offload == Offload::Weights) {
      // the optimizer's states and the weights' and gradients' shards (ZeRO-3) live on the host;
      // the GPU holds two blocks gathered whole (the one computing and the next, streamed in) and
      // one block's gradients before they leave
      const double block = whole_block_weights > 0 ? whole_block_weights : weights_per_block;
      x.host = x.optimizer_states + weights + grads;
      x.optimizer_states = 0;
      x.weights = 2 * copies;
      x.weight_grads = block * ((b.gradients + b.accumulator) / kReferenceBytes);
    } else {
      // the GPU keeps two blocks' activations of one micro-batch (the one computing, the one
      // moving) and the end layers'; the rest waits on the host for the backward
      const double kept = std::min(acts, 2 * activations_per_block + extra_activations * D(in_flight));
      x.host = acts - kept;
      x.activations = kept;
    }
  }
  x.total = x.weights + x.weight_grads + x.optimizer_states + x.activations;
  return x;
}

double memory_limit_gb(const System& s, const Runtime& rt) {
  const kernels::Calibration* cal = s.kernel_calibration.get();
  const double reserve = rt.allocator_reserve_from_kernels && cal != nullptr ? cal->allocator_reserve : rt.allocator_reserve;
  if (!rt.capacity_in_gib) return s.hbm_capacity / (1 + reserve);
  if (s.hbm_capacity_exact) return (s.hbm_capacity / kGbPerGib - rt.driver_reserve_gib) * kGbPerGib / (1 + reserve);
  return (s.hbm_capacity - rt.driver_reserve_gib) * kGbPerGib / (1 + reserve);
}

namespace {
// megatron_block_activations's attention bytes per token with the attention options of
// model/transformer.hpp (head_dim, QK-norm, post-norms, MLA), as Megatron-Core with Transformer
// Engine keeps them: each norm's input, each GEMM's input (a column projection with sequence
// parallelism its l / t shard), Q, K, V, the core's output and log-sum-exp.
double megatron_attention_activations(const Transformer& m, const Layout& c, bool fp8, double gemm_in,
                                      double replicated) {
  const double t = D(c.tensor.tp1);
  const double e = D(m.e), heads = D(m.h) / t;
  const double kv = m.kv() >= c.tensor.tp1 ? D(m.kv()) / t : 1.0;
  const double qk = D(m.qk_head_dim()), v = D(m.value_head_dim());
  // the first norm's input and the projections' shared input
  double sa = 2 * e * replicated + gemm_in * e * replicated;
  if (m.is_mla()) {
    // the latents' norms' inputs and the up-projections' inputs (their l / t shards)
    const LatentAttention& a = m.mla;
    if (a.q_lora_rank > 0) sa += (2 + gemm_in) * D(a.q_lora_rank) * replicated;
    sa += (2 + gemm_in) * D(a.kv_lora_rank) * replicated;
  }
  sa += 2 * heads * qk + 2 * kv * qk + 2 * kv * v;  // Q, K, V
  if (m.qk_norm) sa += 2 * heads * qk + 2 * kv * qk;  // the norms' inputs
  sa += 2 * heads * v + 4 * heads;                  // the output, the log-sum-exp
  if (fp8) sa += 1 * heads * v;
  if (m.post_norms) sa += 2 * e * replicated;  // the post-norm's input
  return sa;
}
}  // namespace

BlockActivations megatron_block_activations(const Transformer& m, const Layout& c, const Mechanisms& mech) {
  // Bytes per token of one block, bf16 (2 bytes) unless said: Table 2's terms.
  const double t = D(c.tensor.tp1);
  const bool sp = c.exec.sequence_parallel;
  const double e = D(m.e), f = D(m.f), hd = D(m.head_dim());
  const double heads = D(m.h) / t;
  const double kv = m.kv() >= c.tensor.tp1 ? D(m.kv()) / t : 1.0;  // replicated when tp > kv heads
  const double replicated = sp ? 1 / t : 1.0;  // the sequence-parallel region: l / t tokens
  const double mask = m.has_dropout() ? 1.0 * e * replicated : 0.0;  // residual dropout's 1-byte mask
  const double tokens = D(c.mbs * (m.l / c.tensor.cp));  // context parallelism: l / cp of each sequence
  constexpr double kGB = 1e-9;
  BlockActivations a;
  if (c.exec.recompute == Recompute::Full) {
    // only the block's input (its l / t shard with sequence parallelism), counted with attention
    a.sa = tokens * 2 * e * replicated * kGB;
    return a;
  }
  // A GEMM's input kept in FP8 (1 byte) under fp8 precision with the runtime's saved_inputs.
  const bool fp8 = c.exec.precision != Precision::Bf16 && mech.fp8.saved_inputs;
  const double gemm_in = fp8 ? 1.0 : 2.0;
  // attention: the norm's input, the qkv projection's input, Q, K, V, the core's output (the
  // output projection's input) and its fp32 log-sum-exp per head, the dropout mask; with FP8 the
  // output projection keeps its own FP8 copy of the core's output, which the core keeps in bf16.
  double sa = 2 * e * replicated + gemm_in * e * replicated + 2 * heads * hd + 2 * 2 * kv * hd + 2 * heads * hd +
              4 * heads + mask;
  if (fp8) sa += 1 * heads * hd;
  if (m.extends_attention()) [[unlikely]] sa = megatron_attention_activations(m, c, fp8, gemm_in, replicated) + mask;
  if (!c.attention.flash && c.exec.recompute != Recompute::Selective) {
    // unfused attention keeps the softmax output (2), its dropout mask (1) and output (2) per score
    sa += (2 + (m.has_dropout() ? 3 : 0)) * heads * D(m.l);
  }
  // MLP: the norm's input, fc1's input, the activation's input (gate and up with SwiGLU), fc2's
  // input, the dropout mask (Megatron applies no dropout to the hidden features).
  const double act_in = (m.mlp == MlpKind::SwiGlu ? 2 : 1) * 2 * f / t;
  double mlp = 2 * e * replicated + gemm_in * e * replicated + act_in + gemm_in * f / t + mask;
  if (m.post_norms) mlp += 2 * e * replicated;  // the post-norm's input, the MLP's output
  a.sa = tokens * sa * kGB;
  a.mlp = tokens * mlp * kGB;
  return a;
}

std::optional<BlockActivations> runtime_block_activations(const Transformer& m, const Runtime& rt, const Layout& c) {
  if (c.strategy != Strategy::OneD) return std::nullopt;
  switch (rt.activations) {
    case ActivationAccounting::Reference: return std::nullopt;
    case ActivationAccounting::Megatron: return megatron_block_activations(m, c, rt.mechanisms);
    case ActivationAccounting::Autocast: return autocast_block_activations(m, c);
  }
  return std::nullopt;
}

}  // namespace perfsweep
