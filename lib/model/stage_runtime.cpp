#include "model/stage_runtime.hpp"

#include <algorithm>

#include "model/autocast.hpp"
#include "model/precision.hpp"
#include "model/roofline.hpp"
#include "model/step_memory.hpp"

namespace perfsweep {
namespace {
using I = std::int64_t;
constexpr double D(I v) { return static_cast<double>(v); }

// Tensor-parallel collectives overlapped with the GEMMs of their pass (userbuffers): of each
// pass's communication, what the compute cannot hide, and at least (1 - overlap) of it.
void hide_tp_comm(ModuleSums& x, double overlap) {
  auto pass = [&](double& t, double& comm, double comp) {
    const double exposed = std::max(comm - overlap * comp, (1 - overlap) * comm);
    t -= comm - exposed;
    comm = exposed;
  };
  pass(x.t_fwd, x.t_fwd_comm, x.t_fwd_comp);
  pass(x.t_bwd, x.t_bwd_comm, x.t_bwd_comp);
}

// The share of the optimizer's parameters the GPU updates: all of them without offload (and with
// activations offload), none with weights offload, 1 - offload_percent / 100 with optimizer offload.
double optimizer_share_on_gpu(const Execution& x) {
  if (x.offload == Offload::Weights) return 0;
  if (x.offload == Offload::Optimizer) return 1 - D(x.offload_percent) / 100;
  return 1;
}

// Bytes of host memory the host optimizer streams per parameter (CPU Adam, memory-bound: DeepSpeed's
// DeepSpeedCPUAdam, Ren et al. 2021 sec. 5.1): the fp32 weights it updates (the master copy, or
// the weights where they are fp32) and the moments read and written, the fp32 gradient read, and
// the low-precision weights written where a master copy exists.
double host_optimizer_bytes(const StateBytes& b) {
  const bool master = b.master > 0;
  return 2 * ((master ? b.master : b.weights) + b.moments) + kHostGradientBytes + (master ? b.weights : 0.0);
}

// Offload's host-link transfers and the host's optimizer step (docs/offload.md): each block's
// transfer behind the compute of the block before it, exposed by what it exceeds that compute.
// `opt_params`: the parameters of the GPU's optimizer shard; `shards`: the ZeRO-3 weight shards.
void offload_runtime(const System& s, const Layout& c, const BlockSummary& block, const StateBytes& b, double layers,
                     double opt_params, double shards, double t_gpu_optimizer, StageRuntime& r) {
  constexpr double kGB = 1e-9;
  const double link = s.host_bandwidth;  // GB/s each direction
  const double t_fwd = block.mlp.t_fwd + block.sa.t_fwd, t_bwd = block.mlp.t_bwd + block.sa.t_bwd;
  const auto exposed = [](double transfer_s, double compute_s) { return std::max(0.0, transfer_s - compute_s); };
  // the host's share of the optimizer's parameters (all with weights offload)
  const double host_params = opt_params * (1 - optimizer_share_on_gpu(c.exec));
  if (c.exec.offload == Offload::Optimizer || c.exec.offload == Offload::Weights) {
    // the host's step runs while the GPU updates its share (HybridDeviceOptimizer steps both at
    // once), exposed by what it exceeds that
    r.t_host_optimizer = exposed(host_params * host_optimizer_bytes(b) * kGB / s.host_cpu_bandwidth, t_gpu_optimizer);
  }
  switch (c.exec.offload) {
    case Offload::Optimizer: {
      // the reduced gradients go down behind the last micro-batch's backward; the updated weights
      // come back before the next forward, with nothing to hide them
      const double down = host_params * b.gradients * kGB / link, up = host_params * b.weights * kGB / link;
      r.offload_step_s = exposed(down, layers * t_bwd) + up;
      break;
    }
    case Offload::Weights: {
      // every micro-batch: a block's shard in for its forward, in again for its backward while
      // its gradients go out (the link's two directions at once)
      const double shard = (block.mlp.weights_mem + block.sa.weights_mem) / s.element_size / shards;
      const double in = shard * b.weights * kGB / link;
      const double back = std::max(in, shard * b.gradients * kGB / link);
      r.offload_per_micro_batch_s = layers * (exposed(in, t_fwd) + exposed(back, t_bwd));
      break;
    }
    case Offload::Activations: {
      // every micro-batch: a block's saved activations out after its forward, in before its backward
      const double moved = (block.mlp.activation_buffer + block.sa.activation_buffer) / link;
      r.offload_per_micro_batch_s = layers * (exposed(moved, t_fwd) + exposed(moved, t_bwd));
      break;
    }
    case Offload::None: break;
  }
}
}  // namespace

double host_floor_per_block_s(const System& s, const Runtime& rt, const Layout& c) {
  const I tp = c.tensor.tp1 * c.tensor.tp2;
  const I domain = std::max<I>(1, s.nvlink_size);
  const I tp_domains = (tp + domain - 1) / domain;
  return rt.host_block_s + (c.pp > 1 ? D(tp) * rt.host_block_per_tp_s : 0.0) +
         D(tp_domains - 1) * rt.host_block_per_tp_domain_s;
}

StageRuntime stage_runtime(const System& s, const Transformer& m, const Runtime& rt, const Layout& c,
                           const BlockSummary& block, I blocks, const ModuleSums& extra, double logits_gb,
                           I micro_batches, bool first_stage, bool last_stage) {
  StageRuntime r;
  r.bytes = rt.has_states ? &rt.states : nullptr;
  const double layers = D(blocks);
  const bool full = c.exec.recompute == Recompute::Full;
  const I domain = std::max<I>(1, s.nvlink_size);
  r.floor_per_micro_batch_s = layers * host_floor_per_block_s(s, rt, c);
  const kernels::Calibration* cal = s.kernel_calibration.get();
  if (rt.host_kernel_calls && cal != nullptr) {
    // every layer pass issued alone, and with full recomputation each block's forward again
    const double block_calls = layers * (block.mlp.calls + block.sa.calls);
    r.floor_per_micro_batch_s += (block_calls + extra.calls) * (cal->isolated_call_s[kernels::kFwd] +
                                                                cal->isolated_call_s[kernels::kBwd]);
    if (full) r.floor_per_micro_batch_s += block_calls * cal->isolated_call_s[kernels::kFwd];
  }
  // Parameters of the stage on this GPU, of its GEMMs, and of its optimizer shard.
  const double block_gemm_gb = block.mlp.gemm_weights_mem + block.sa.gemm_weights_mem;
  const double params = (layers * (block.mlp.weights_mem + block.sa.weights_mem) + extra.weights_mem) / s.element_size;
  const double gemm_gb = layers * block_gemm_gb + extra.gemm_weights_mem;
  const double gemm = gemm_gb / s.element_size;
  const double shards = D(parallel_grid(c).group(plan_of(c.strategy).replicas).size);
  const double opt_params = c.exec.zero >= 1 ? params / shards : params;
  const double grad_params = c.exec.zero >= 2 ? params / shards : params;
  const double nmb = D(micro_batches);
  constexpr double kGB = 1e-9;
  using kernels::StreamKind;
  double step = 0, micro_batch = 0, fp8_cache_gb = 0;
  // the optimizer on the host runs no kernel on the GPU; with offload_percent below 100 the GPU
  // updates the rest of its parameters
  const double gpu_optimizer_share = optimizer_share_on_gpu(c.exec);
  double t_gpu_optimizer = 0;
  if (rt.optimizer_bytes > 0 && gpu_optimizer_share > 0) {
    t_gpu_optimizer = stream_seconds(s, StreamKind::Optimizer, KernelClass::Optimizer,
                                     rt.optimizer_bytes * gpu_optimizer_share * opt_params * kGB);
    step += t_gpu_optimizer;
  }
  if (rt.cast_bytes > 0) {
    const double recast = full ? layers * block_gemm_gb / s.element_size : 0.0;
    micro_batch += stream_seconds(s, StreamKind::Cast, KernelClass::Elementwise, rt.cast_bytes * (gemm + recast) * kGB);
  }
  if (rt.accumulate_bytes > 0 || rt.cast_bytes > 0) {
    // the GEMM weights' gradients cast back to the parameters' type, then every gradient accumulated
    const double bytes = rt.accumulate_bytes * grad_params + rt.cast_bytes * gemm;
    micro_batch += stream_seconds(s, StreamKind::Cast, KernelClass::Elementwise, bytes * kGB);
  }
  if (c.exec.precision != Precision::Bf16) {
    const Fp8Policy fp8 = layout_fp8(rt, c.exec);
    // the FP8 GEMMs' weights quantized once per step (weight caching) or for every micro-batch,
    // and with caching both FP8 copies kept
    const double fp8_params = (layers * (block.mlp.fp8_weights_mem + block.sa.fp8_weights_mem) + extra.fp8_weights_mem) /
                              s.element_size;
    const double fp8_gemms = layers * (block.mlp.fp8_gemms + block.sa.fp8_gemms) + extra.fp8_gemms;
    QuantWork weights;
    add_quantization(weights, recipe_of(fp8.recipe).input, fp8_params * kGB);
    for (double& k : weights.kernels) k *= fp8_gemms;  // a kernel per GEMM's weight
    const double t = quantization_seconds(s, weights);
    (fp8.weight_cache ? step : micro_batch) += t;
    if (fp8.weight_cache) fp8_cache_gb = recipe_of(fp8.recipe).cached_weight_bytes * fp8_params * kGB;
    // FP8 parameters (Megatron-LM's --fp8-param-gather, which needs the distributed optimizer's
    // gathers): the FP8 value and its transposed copy are the FP8 GEMMs' weights, whole on each
    // GPU below ZeRO 3, and their bf16 weights are not kept.
    if (c.exec.fp8_params && c.exec.zero >= 1 && c.exec.zero < 3) {
      const double bf16_weight_bytes = (r.bytes != nullptr ? *r.bytes : state_bytes(c.exec.params)).weights;
      fp8_cache_gb = (recipe_of(fp8.recipe).cached_weight_bytes - bf16_weight_bytes) * fp8_params * kGB;
    }
  }
  if (rt.zero_grad_bytes > 0) {
    step += stream_seconds(s, StreamKind::Cast, KernelClass::Elementwise, rt.zero_grad_bytes * grad_params * kGB);
  }
  // A run before nanotron's pipeline fix: per micro-batch slot of a pipelined multi-node job,
  // counted beside the optimizer (it does not stretch the bubble's slots, as the fit has it).
  if (rt.host_slot_pipelined_multinode_s > 0 && c.pp > 1 && c.n_gpus() > domain) {
    step += rt.host_slot_pipelined_multinode_s * (nmb + D(c.pp - 1) / D(std::max<I>(1, c.exec.interleave)));
  }
  r.per_micro_batch_s = micro_batch;
  r.t_optimizer = step + nmb * micro_batch;
  r.transient_gb =
      rt.loss_transient_logits * logits_gb + rt.optimizer_transient_bytes * gpu_optimizer_share * opt_params * kGB;
  if (c.exec.offload != Offload::None) [[unlikely]] {
    offload_runtime(s, c, block, r.bytes != nullptr ? *r.bytes : state_bytes(c.exec.params), layers, opt_params,
                    shards, t_gpu_optimizer, r);
  }
  if (fp8_cache_gb != 0) r.transient_gb += fp8_cache_gb;
  if (rt.activations == ActivationAccounting::Autocast) {
    r.transient_gb += autocast_peak_transient_gb(m, c, gemm_gb, block_gemm_gb, extra.gemm_weights_mem, last_stage);
  }
  if (rt.batch_resident && first_stage) r.transient_gb += resident_batch_gb(m, c, micro_batches);
  return r;
}

BlockSummary runtime_view(const Transformer& m, const Runtime& rt, const Layout& c, const BlockSummary& costed) {
  BlockSummary adjusted = costed;
  if (const double hidden = tp_comm_hidden(rt, c.exec.tp_comm_overlap); hidden > 0) {
    hide_tp_comm(adjusted.mlp, hidden);
    hide_tp_comm(adjusted.sa, hidden);
    if (adjusted.first_dense > 0) hide_tp_comm(adjusted.dense_mlp, hidden);
  }
  if (const std::optional<BlockActivations> a = runtime_block_activations(m, rt, c)) {
    adjusted.sa.activation_buffer = a->sa;
    if (!m.is_moe()) adjusted.mlp.activation_buffer = a->mlp;
  }
  return adjusted;
}

namespace {
double pass_seconds(double tp_hidden, const ModuleSums& block_mlp, const ModuleSums& block_sa) {
  // the sums stage_totals starts from, of the block compose_step composes (runtime_view's times)
  if (!(tp_hidden > 0)) return (block_mlp.t_fwd + block_sa.t_fwd) + (block_mlp.t_bwd + block_sa.t_bwd);
  ModuleSums mlp = block_mlp, sa = block_sa;
  hide_tp_comm(mlp, tp_hidden);
  hide_tp_comm(sa, tp_hidden);
  return (mlp.t_fwd + sa.t_fwd) + (mlp.t_bwd + sa.t_bwd);
}
}  // namespace

double block_pass_seconds(double tp_hidden, const BlockSummary& costed, I stage_blocks) {
  const double moe = pass_seconds(tp_hidden, costed.mlp, costed.sa);
  if (costed.first_dense == 0) return moe;
  // a stage of at least stage_blocks blocks holds at most min(stage_blocks, first_dense) dense ones:
  // per block, at least this mean (stage_block mixes the kinds' runtime views so)
  const I blocks = std::max<I>(stage_blocks, 1), dense = std::min(blocks, costed.first_dense);
  const double least = std::min(moe, pass_seconds(tp_hidden, costed.dense_mlp, costed.sa));
  return (D(blocks - dense) * moe + D(dense) * least) / D(blocks);
}

}  // namespace perfsweep
