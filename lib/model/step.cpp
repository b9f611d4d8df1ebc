#include "model/step.hpp"

#include <algorithm>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "model/autocast.hpp"
#include "model/kernel_calibration.hpp"
#include "model/roofline.hpp"
#include "model/parameters.hpp"
#include "model/precision.hpp"

namespace perfsweep {
namespace {
using I = std::int64_t;
constexpr double D(I v) { return static_cast<double>(v); }

// DP and PP rows carry only communication; their compute and memory fields are zero.
LayerResult comm_row(const char* name, double volume, CommType fwd_type, CommType bwd_type, I group, I fast) {
  LayerResult r;
  r.cost.name = name;
  r.cost.op = KernelOp::Collective;
  r.cost.comm_fwd.items[0] = {volume, fwd_type, 1, group, fast};
  r.cost.comm_bwd.items[0] = {volume, bwd_type, 1, group, fast};
  return r;
}

PassTime comm_only(double seconds) {
  PassTime p;
  p.t = seconds;
  p.comm = seconds;
  return p;
}
}  // namespace

BlockSummary summarize(const Module& mlp, const Module& sa, const BuiltBlock& built) {
  BlockSummary b;
  b.mlp = sum_module(mlp);
  b.sa = sum_module(sa);
  b.p2p_volume_gb = built.p2p_volume_gb;
  b.expert_weights_gb = built.expert_weights_gb;
  return b;
}

namespace {
// The mean of `blocks` blocks, `moe_blocks` of them MoE and the others dense.
double mix(double moe, double dense, I moe_blocks, I blocks) {
  return (D(moe_blocks) * moe + D(blocks - moe_blocks) * dense) / D(blocks);
}

constexpr double ModuleSums::*kSumFields[] = {
    &ModuleSums::flops_fwd,  &ModuleSums::flops_bwd,  &ModuleSums::t_fwd,      &ModuleSums::t_bwd,
    &ModuleSums::t_fwd_comm, &ModuleSums::t_bwd_comm, &ModuleSums::t_fwd_comp, &ModuleSums::t_bwd_comp,
    &ModuleSums::t_fwd_mem,  &ModuleSums::t_bwd_mem,  &ModuleSums::weights_mem, &ModuleSums::activation_buffer,
    &ModuleSums::gemm_weights_mem, &ModuleSums::calls, &ModuleSums::fp8_weights_mem, &ModuleSums::fp8_gemms,
    &ModuleSums::t_bwd_weight};

// The blocks a model's mean block is taken over: a group of `every` with one MoE block, or with
// first dense blocks the whole depth.
struct BlockMix {
  I moe_blocks = 1, blocks = 1;
};
BlockMix block_mix(const Transformer& m) {
  if (m.moe.first_dense > 0) return {m.moe_blocks(), m.depth};
  return {1, m.moe.every};
}
bool mixes_blocks(const Transformer& m) { return m.is_moe() && (m.moe.every > 1 || m.moe.first_dense > 0); }
}  // namespace

BlockSummary mix_blocks(const BlockSummary& moe, const BlockSummary& dense, I moe_blocks, I blocks) {
  BlockSummary b = moe;
  for (double ModuleSums::*f : kSumFields) b.mlp.*f = mix(moe.mlp.*f, dense.mlp.*f, moe_blocks, blocks);
  b.expert_weights_gb = moe.expert_weights_gb * D(moe_blocks) / D(blocks);
  b.whole_block_weights_gb =
      std::max(moe.mlp.weights_mem + moe.sa.weights_mem, dense.mlp.weights_mem + dense.sa.weights_mem);
  return b;
}

BlockMemory mix_block_memory(const BlockMemory& moe, const BlockMemory& dense, I moe_blocks, I blocks) {
  BlockMemory b = moe;
  b.mlp_weights = mix(moe.mlp_weights, dense.mlp_weights, moe_blocks, blocks);
  b.mlp_activations = mix(moe.mlp_activations, dense.mlp_activations, moe_blocks, blocks);
  b.expert_weights = moe.expert_weights * D(moe_blocks) / D(blocks);
  b.whole_block_weights = std::max(moe.weights(), dense.weights());
  return b;
}

BlockSummary cost_block(const System& s, const Transformer& m, const Layout& c, const std::vector<BlockLayer>& block,
                        const std::vector<BlockLayer>& dense_block, Module& mlp, Module& sa) {
  const TensorSplit split = block_split(c);
  const BuiltBlock built = build_block(s, c.strategy, block, c.mbs, m, split, c.attention, mlp, sa, c.exec);
  const BlockSummary summary = summarize(mlp, sa, built);
  if (!mixes_blocks(m)) return summary;
  Module dense_mlp, dense_sa;
  const BuiltBlock dense =
      build_block(s, c.strategy, dense_block, c.mbs, m, split, c.attention, dense_mlp, dense_sa, c.exec);
  const BlockMix mix_of = block_mix(m);
  return mix_blocks(summary, summarize(dense_mlp, dense_sa, dense), mix_of.moe_blocks, mix_of.blocks);
}

BlockMemory cost_block_memory(const System& s, const Transformer& m, const Layout& c,
                              const std::vector<BlockLayer>& block, const std::vector<BlockLayer>& dense_block) {
  const TensorSplit split = block_split(c);
  const BlockMemory mem = block_memory(s, c.strategy, block, c.mbs, m, split, c.attention, c.exec);
  if (!mixes_blocks(m)) return mem;
  const BlockMix mix_of = block_mix(m);
  return mix_block_memory(mem, block_memory(s, c.strategy, dense_block, c.mbs, m, split, c.attention, c.exec),
                          mix_of.moe_blocks, mix_of.blocks);
}

DataParallelTraffic data_parallel_traffic(const Execution& x) {
  DataParallelTraffic t;
  switch (x.params) {
    case ParamLayout::Reference: break;
    case ParamLayout::Megatron: t.reduce_scale = 2; break;  // fp32 gradient buffer reduced; bf16 weights gathered
    case ParamLayout::Amp:  // fp32 weights and gradients
      t.gather_scale = 2;
      t.reduce_scale = 2;
      break;
  }
  t.gather_in_backward = x.zero >= 3;
  return t;
}

DataParallelTraffic data_parallel_traffic(const Runtime& rt, const Execution& x, I micro_batches) {
  DataParallelTraffic t = data_parallel_traffic(x);
  if (rt.has_states) {
    constexpr double kReferenceBytes = 2;  // the element the block's weights are counted in
    t.gather_scale = rt.states.weights / kReferenceBytes;
    t.reduce_scale = rt.states.gradients / kReferenceBytes;
  }
  // FP8 weights gathered in FP8 (torchao's float8 all-gather with FSDP2, Megatron's
  // --fp8-param-gather): 1 byte per parameter
  if (x.precision != Precision::Bf16 && x.fp8_params) t.gather_scale = 0.5;
  if (x.zero >= 3 && rt.zero_gather == Cadence::PerMicroBatch) t.gather_repeats = micro_batches;
  if (x.zero >= 2 && rt.zero_reduce == Cadence::PerMicroBatch) t.reduce_repeats = micro_batches;
  return t;
}

LayerResult data_parallel(const System& s, const BlockSummary& block, I layers_per_stage, I group, I fast_domain,
                          bool overlap, const DataParallelTraffic& traffic) {
  const double weights = block.mlp.weights_mem + block.sa.weights_mem;  // one layer's weights
  // With an expert-data-parallel group, the routed experts' weights move over it, the rest over dp.
  const double experts = traffic.expert_group > 0 ? block.expert_weights_gb : 0;
  LayerResult r = comm_row("dp_comms", weights, CommType::AllGather, CommType::ReduceScatter, group, fast_domain);
  auto collective = [&](CommType type, double volume, I n, I fast, I stride, std::uint8_t& calibrated) {
    if (s.calibration == nullptr) [[likely]] return analytical_collective_seconds(s, type, volume, n, fast, stride);
    const CollectiveTime ct = collective_time(s, s.calibration.get(), type, volume, n, fast, stride);
    if (ct.model == CommModel::Calibrated) ++calibrated;
    return ct.seconds;
  };
  auto pass = [&](CommType type, double volume, double overlap_compute, std::uint8_t& calibrated) {
    double t = 0;
    if (experts == 0) [[likely]] {
      std::uint8_t any = 0;
      t = collective(type, volume, group, fast_domain, traffic.stride, any);
      if (any) calibrated = 1;
    } else {
      const double expert_volume = volume * (experts / weights);
      t = collective(type, volume - expert_volume, group, fast_domain, traffic.stride, calibrated) +
          collective(type, expert_volume, traffic.expert_group, traffic.expert_fast, traffic.expert_stride, calibrated);
    }
    if (overlap) {
      t += std::max(t - overlap_compute, 0.0) * D(layers_per_stage - 1);
    } else {
      t *= D(layers_per_stage);
    }
    const I repeats = type == CommType::ReduceScatter ? traffic.reduce_repeats : traffic.gather_repeats;
    if (repeats > 1) [[unlikely]] t *= D(repeats);
    return comm_only(t);
  };
  const double gathered = traffic.gather_scale == 1 ? weights : weights * traffic.gather_scale;
  const double reduced = traffic.reduce_scale == 1 ? weights : weights * traffic.reduce_scale;
  r.cost.comm_fwd.items[0].volume_gb = gathered;
  r.cost.comm_bwd.items[0].volume_gb = reduced;
  r.fwd = pass(CommType::AllGather, gathered, block.mlp.t_fwd + block.sa.t_fwd, r.calibrated_fwd);
  r.bwd = pass(CommType::ReduceScatter, reduced, block.mlp.t_bwd + block.sa.t_bwd, r.calibrated_bwd);
  // The row lists each collective: the other weights' over dp, then the experts' over their group.
  auto list = [&](CommSet& set, CommType type, double volume) {
    if (experts == 0) [[likely]] {
      set.items[set.count++] = {volume, type, static_cast<std::int32_t>(traffic.stride), group, fast_domain};
      return;
    }
    const double expert_volume = volume * (experts / weights);
    set.items[set.count++] = {volume - expert_volume, type, static_cast<std::int32_t>(traffic.stride), group, fast_domain};
    set.items[set.count++] = {expert_volume, type, static_cast<std::int32_t>(traffic.expert_stride), traffic.expert_group,
                              traffic.expert_fast};
    set.is_list = true;
  };
  if (experts > 0) {
    r.cost.comm_fwd.count = 0;
    r.cost.comm_bwd.count = 0;
    list(r.cost.comm_fwd, CommType::AllGather, gathered);
    list(r.cost.comm_bwd, CommType::ReduceScatter, reduced);
  }
  if (traffic.gather_in_backward) {
    // ZeRO-3: the backward gathers each layer's parameters again before its gradients exist.
    std::uint8_t calibrated = 0;
    const PassTime again = pass(CommType::AllGather, gathered, block.mlp.t_bwd + block.sa.t_bwd, calibrated);
    r.bwd.t += again.t;
    r.bwd.comm += again.comm;
    list(r.cost.comm_bwd, CommType::AllGather, gathered);
    r.calibrated_bwd = static_cast<std::uint8_t>(r.calibrated_bwd + calibrated);
  }
  r.t = r.fwd.t + r.bwd.t;
  return r;
}

namespace {
// Every stage boundary at once, each over the tiers between its two domains (link_path): their
// mean seconds for `volume_gb`.
[[gnu::noinline]] double tiered_pipeline_link_seconds(const System& s, double volume_gb, I pp, I stride) {
  const double bandwidth = s.ib_bandwidth * s.ib_eff;
  double t = 0;
  for (I i = 0; i + 1 < pp; ++i) {
    const NetworkPath link = link_path(s, i * stride, (i + 1) * stride);
    t += link.latency + volume_gb * link.bandwidth_divisor / bandwidth;
  }
  return t / D(pp - 1);
}
}  // namespace

LayerResult pipeline_parallel(const System& s, const BlockSummary& block, I micro_batches, I pp, I fast_domain,
                              bool slow_links_free, I interleave, I stride) {
  const double volume = block.p2p_volume_gb;
  LayerResult r = comm_row("pp_comms", volume, CommType::P2P, CommType::P2P, 2, fast_domain);
  double t = 0;
  if (pp > 1) {
    if (fast_domain > 1) {
      const I total_links = pp - 1;
      const I slow_links = static_cast<I>(D(pp) / D(fast_domain) - 1);
      const I fast_links = total_links - slow_links;
      const double t_fast = analytical_collective_seconds(s, CommType::P2P, volume, 2, fast_domain);
      // The reference times a slow link as a "collective" over one GPU, which costs nothing; a
      // framework's crosses the network.
      const double t_slow = slow_links_free ? analytical_collective_seconds(s, CommType::P2P, volume, 1, 1)
                                            : analytical_collective_seconds(s, CommType::P2P, volume, 2, 1);
      t = D(fast_links) / D(total_links) * t_fast + D(slow_links) / D(total_links) * t_slow;
    } else if (fast_domain == 1) {
      t = s.network_tiers == nullptr || volume == 0 ? analytical_collective_seconds(s, CommType::P2P, volume, 2, 1)
                                                    : tiered_pipeline_link_seconds(s, volume, pp, stride);
    } else {
      throw ConfigError("pipeline NVLink placement must be positive, got " + std::to_string(fast_domain));
    }
  }
  t *= D(micro_batches);
  if (interleave > 1) t *= D(interleave);
  r.fwd = comm_only(t);
  r.bwd = comm_only(t);
  r.t = r.fwd.t + r.bwd.t;
  return r;
}

std::string result_schema() {
  std::string out = "config";
  for (const ConfigKey& k : kConfigKeys) {
    out += std::string(" ") + k.name + "[";
    for (Strategy s : {Strategy::OneD, Strategy::TwoD, Strategy::TwoDSeqp}) {
      if (k.applies(plan_of(s))) out += std::string(plan_of(s).name) + ";";
    }
    out += k.orders_ties ? "]t" : "]";
  }
  out += "\ntotals";
  for (const TotalsField& f : kTotalsFields) out += std::string(" ") + f.name + "[" + f.unit + "]";
  return out;
}

double schedule_bubble(PipelineSchedule schedule, I pp, double slot_s, double backward_s, double weight_s) {
  // each at least 0: the weight gradients fill the idle slots, never more than all of them
  const double p = D(pp - 1);
  switch (schedule) {
    case PipelineSchedule::OneFOneB: return p * slot_s;
    case PipelineSchedule::ZeroBubbleH1: return p * std::max(0.0, slot_s - 2 * weight_s);  // (p - 1)(F + B - W)
    case PipelineSchedule::ZeroBubbleH2: return p * std::max(0.0, slot_s - 3 * weight_s);
    case PipelineSchedule::DualPipe:  // (p/2 - 1)(F&B + B_full - 3W), F&B = F + B_full = the slot
      return std::max(0.0, D(pp) / 2 - 1) * std::max(0.0, slot_s + backward_s - 3 * weight_s);
  }
  return p * slot_s;
}

double schedule_activation_factor(PipelineSchedule schedule, I pp) {
  switch (schedule) {
    case PipelineSchedule::OneFOneB:
    case PipelineSchedule::ZeroBubbleH1: return 1;
    case PipelineSchedule::ZeroBubbleH2: return D(2 * pp - 1) / D(pp);
    case PipelineSchedule::DualPipe: return D(pp + 1) / D(pp);
  }
  return 1;
}

namespace {
// Bytes per parameter of the fp32 gradients the host optimizer reads.
constexpr double kHostGradientBytes = 4;
}  // namespace

StepMemory step_memory(double weights_per_block, double activations_per_block, I blocks, I pp, I dp, I seqp,
                       I in_flight, const Execution& exec, double extra_weights, double extra_activations,
                       double expert_weights_per_block, double whole_block_weights, const StateBytes* bytes) {
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
  // The routed experts' weights are replicated over dp x seqp / ep GPUs (expert-data-parallel).
  const double experts = exec.ep > 1 ? expert_weights_per_block * layers : 0;
  const double per_gpu = experts == 0 ? w / shards : (w - experts) / shards + experts / (shards / D(exec.ep));
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
  if (exec.schedule == PipelineSchedule::DualPipe && pp > 1) [[unlikely]] {
    // each GPU holds stages k and pp - 1 - k: two copies of a stage's parameter states
    weights *= 2;
    copies *= 2;
    grads *= 2;
    x.optimizer_states *= 2;
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

Totals step_totals(const BlockSummary& b, double t_dp_comm, double t_pp_comm, I depth, I pp, I dp, I seqp,
                   I micro_batches, const Execution& exec) {
  return stage_totals(b, ModuleSums{}, t_dp_comm, t_pp_comm, depth / pp, pp, dp, seqp, micro_batches,
                      micro_batches >= pp ? pp : micro_batches, exec);
}

// The extra layers' terms are added after the reference's products, so that with none (zeros)
// every field keeps the reference's last digit.
Totals stage_totals(const BlockSummary& b, const ModuleSums& e, double t_dp_comm, double t_pp_comm, I blocks, I pp,
                    I dp, I seqp, I micro_batches, I in_flight, const Execution& exec, const StageRuntime& rt) {
  const ModuleSums& m = b.mlp;
  const ModuleSums& a = b.sa;
  const double layers = D(blocks);
  const double nmb = D(micro_batches);
  Totals x;
  x.flops_per_gpu = (m.flops_fwd + m.flops_bwd + a.flops_fwd + a.flops_bwd) * layers * nmb;
  x.flops_per_gpu += (e.flops_fwd + e.flops_bwd) * nmb;
  const double t_fwd = m.t_fwd + a.t_fwd;  // one layer, one micro-batch
  const double t_bwd = m.t_bwd + a.t_bwd;
  double t = (t_fwd + t_bwd) * nmb;
  t *= layers;
  t += (e.t_fwd + e.t_bwd) * nmb;
  x.t_pp_comm = t_pp_comm;
  t += t_pp_comm;
  if (rt.offload_per_micro_batch_s > 0) [[unlikely]] {
    // streamed weights or activations the blocks' compute does not hide stretch each micro-batch
    x.t_offload = rt.offload_per_micro_batch_s * nmb;
    t += x.t_offload;
  }
  // The host's floor: a micro-batch keeps the stage busy at least this long (the bubble's slots too).
  // The runtime's kernels of each micro-batch (casts, accumulation) are issued by the same host.
  if (rt.floor_per_micro_batch_s > 0) [[unlikely]] {
    const double floor = rt.floor_per_micro_batch_s * nmb;
    const double busy = t + rt.per_micro_batch_s * nmb;
    if (floor > busy) {
      x.t_framework = floor - busy;
      t += x.t_framework;
    }
  }
  x.t_bubble = D(pp - 1) * (t / nmb);
  if (exec.interleave > 1) x.t_bubble /= D(exec.interleave);  // (p - 1) / (V m) of the work
  if (exec.schedule != PipelineSchedule::OneFOneB) [[unlikely]] {
    // a micro-batch's slot F + B + W (with its share of transfers and host floor), W its weight
    // gradients' part and B_full = B + W its backward
    const double w = (m.t_bwd_weight + a.t_bwd_weight) * layers + e.t_bwd_weight;
    const double backward = (m.t_bwd + a.t_bwd) * layers + e.t_bwd;
    x.t_bubble = schedule_bubble(exec.schedule, pp, t / nmb, backward, w);
  }
  t += x.t_bubble;
  x.t_dp_comm = t_dp_comm;
  t += t_dp_comm;
  x.t_optimizer = rt.t_optimizer;
  t += rt.t_optimizer;
  if (rt.offload_step_s > 0 || rt.t_host_optimizer > 0) [[unlikely]] {
    // the host's optimizer step and the transfers around it, after the GPU's step (no delayed
    // parameter update)
    x.t_offload += rt.offload_step_s;
    x.t_host_optimizer = rt.t_host_optimizer;
    t += rt.offload_step_s + rt.t_host_optimizer;
  }
  x.t = t;

  const StepMemory mem =
      step_memory(m.weights_mem + a.weights_mem, m.activation_buffer + a.activation_buffer, blocks, pp, dp, seqp,
                  in_flight, exec, e.weights_mem, e.activation_buffer, b.expert_weights_gb, b.whole_block_weights_gb,
                  rt.bytes);
  x.wts_mem = mem.weights;
  x.wts_grad_mem = mem.weight_grads;
  x.wts_optimizer_states_mem = mem.optimizer_states;
  x.acts_mem = mem.activations;
  x.mem = mem.total + rt.transient_gb;
  x.host_mem = mem.host;

  x.t_tp_comm = (m.t_fwd_comm + m.t_bwd_comm + a.t_fwd_comm + a.t_bwd_comm) * nmb;
  x.t_tp_comm *= layers;
  x.t_tp_comm += (e.t_fwd_comm + e.t_bwd_comm) * nmb;
  x.t_comp = (m.t_fwd_comp + m.t_bwd_comp + a.t_fwd_comp + a.t_bwd_comp) * nmb;
  x.t_comp *= layers;
  x.t_comp += (e.t_fwd_comp + e.t_bwd_comp) * nmb;
  x.t_mem = (m.t_fwd_mem + m.t_bwd_mem + a.t_fwd_mem + a.t_bwd_mem) * nmb;
  x.t_mem *= layers;
  x.t_mem += (e.t_fwd_mem + e.t_bwd_mem) * nmb;

  x.comp_frac = x.t_comp / t;
  x.tp_comm_frac = x.t_tp_comm / t;
  x.dp_comm_frac = x.t_dp_comm / t;
  x.pp_comm_frac = x.t_pp_comm / t;
  x.bubble_frac = x.t_bubble / t;
  x.mem_frac = x.t_mem / t;
  return x;
}

namespace {
// The message is made only where the check fails (a search checks many layouts that pass).
template <typename What>
void require(bool ok, What&& what) {
  if (!ok) [[unlikely]] {
    throw ConfigError(std::string(what()));
  }
}
std::string str(I v) { return std::to_string(v); }

// The stages' blocks of a layout with pp >= 1, or ConfigError naming the values that do not
// partition the depth (Megatron-LM's checks of --decoder-first/last-pipeline-num-layers).
StageBlocks validate_stage_blocks(const Transformer& m, const Layout& c) {
  const I first = c.exec.first_stage_blocks, last = c.exec.last_stage_blocks;
  require(first >= 0, [&] { return "first_stage_blocks must be >= 0 (0: an even share), got " + str(first); });
  require(last >= 0, [&] { return "last_stage_blocks must be >= 0 (0: an even share), got " + str(last); });
  const I pp = std::max<I>(c.pp, 1);
  if (first == 0 && last == 0 && pp > 1 && c.exec.stage_partition == StagePartition::Nanotron) {
    // the framework's own partition: any depth, no interleaving (nanotron has no interleaved schedule)
    require(c.exec.interleave == 1, [&] {
      return "the nanotron stage partition has no interleaved schedule (interleave=" + str(c.exec.interleave) + ")";
    });
    // stages past the blocks hold none (pp may exceed the depth): they pass the activations on
    return nanotron_stage_blocks(m, pp);
  }
  require(first == 0 || c.exec.stage_partition == StagePartition::Even || pp < 2, [&] {
    return "first_stage_blocks=" + str(first) + ": the runtime partitions the stages itself (stage_partition nanotron)";
  });
  require(last == 0 || c.exec.stage_partition == StagePartition::Even || pp < 2, [&] {
    return "last_stage_blocks=" + str(last) + ": the runtime partitions the stages itself (stage_partition nanotron)";
  });
  if (first == 0 && last == 0) {
    if (m.depth % pp != 0) {
      std::string dividing;
      for (I d = 1; d <= m.depth; ++d) {
        if (m.depth % d == 0) dividing += (dividing.empty() ? "" : ", ") + str(d);
      }
      throw ConfigError("pp=" + str(pp) + " does not divide depth " + str(m.depth) +
                        ": give the end stages' blocks (--first-stage-blocks and --last-stage-blocks: numbers, or "
                        "auto to balance the stages) under a runtime that runs uneven stages, or a pp dividing " +
                        str(m.depth) + " (" + dividing + ")");
    }
    return stage_blocks(m, pp, c.exec);
  }
  const std::string given = (first > 0 ? "first_stage_blocks=" + str(first) : std::string()) +
                            (first > 0 && last > 0 ? " and " : "") +
                            (last > 0 ? "last_stage_blocks=" + str(last) : std::string());
  require(pp > 1, [&] { return given + " needs pipeline stages (pp > 1)"; });
  const I others = pp - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
  const I rest = m.depth - first - last;
  const std::string leave = given + (first > 0 && last > 0 ? " leave " : " leaves ") + str(rest) + " of depth " +
                            str(m.depth) + " blocks";
  if (others == 0) {
    require(rest == 0, [&] { return given + " must add up to depth " + str(m.depth) + " with pp=2"; });
  } else {
    require(rest >= others, [&] {
      return leave + " for the other " + str(others) + " stages of pp=" + str(pp) + ", fewer than one each";
    });
    require(rest % others == 0, [&] {
      return leave + ", which the other " + str(others) + " stages of pp=" + str(pp) + " cannot share evenly";
    });
  }
  return stage_blocks(m, pp, c.exec);
}
}  // namespace

namespace {
// f(axis, own) for every axis (model/axes.hpp), the strategy's own first: a check fails under the
// name of the strategy's axis before that of another reading the same field (1d's tp before tp1).
template <typename F>
void for_each_axis_own_first(const StrategyPlan& plan, F&& f) {
  for (const bool own : {true, false}) {
    for (std::size_t i = 0; i < kAxisCount; ++i) {
      if (own == has_axis(plan, i)) f(kAxes[i], own);
    }
  }
}
}  // namespace

void validate_layout(const System& s, const Transformer& m, const Layout& c, I global_batch) {
  const TensorSplit& t = c.tensor;
  const StrategyPlan& plan = plan_of(c.strategy);
  // Every axis's degree and NVLink share positive.
  for_each_axis_own_first(plan, [&](const LayoutAxis& a, bool) {
    if (a.set_degree == nullptr) return;
    require(a.degree(c) >= 1,
            [&] { return std::string(a.name) + " must be a positive integer, got " + str(a.degree(c)); });
    if (a.placed())
      require(a.nv(c) >= 1, [&] { return std::string(a.nv_key) + " must be a positive integer, got " + str(a.nv(c)); });
  });
  const bool one_d = c.strategy == Strategy::OneD;
  if (t.cp > 1) {
    require(one_d, [&] {
      return "cp=" + str(t.cp) + ": context parallelism is modelled for 1d tensor parallelism only (" +
             plan_of(c.strategy).name + " splits the sequence its own way)";
    });
    require(c.attention.flash, [&] {
      return "cp=" + str(t.cp) + ": context parallelism needs flash attention (ring attention's kernels)";
    });
    // Megatron-Core's load-balanced causal split: 2 cp chunks, two on each rank
    require(cp_splits_sequence(m.l, t.cp), [&] {
      return "cp=" + str(t.cp) + ": seq_len " + str(m.l) + " does not split into 2 cp = " + str(2 * t.cp) +
             " chunks (each rank holds two of the load-balanced split)";
    });
    if (c.exec.cp_comm == CpComm::AllToAll) {
      // the exchange splits each rank's heads over the cp group (TE: heads and key/value groups
      // divisible by cp)
      const I heads = m.h / t.tp1, kv = kv_heads_per_gpu(m, t.tp1);
      require(cp_splits_heads(m, t.tp1, t.cp), [&] {
        return "cp=" + str(t.cp) + " with cp_comm a2a splits the heads over the cp group: the " + str(heads) +
               " query heads and " + str(kv) + " key/value heads of a tensor-parallel rank must be multiples of it";
      });
    }
  }
  if (c.exec.offload != Offload::None) {
    const std::string what = std::string("offload ") + kOffloadNames[static_cast<std::size_t>(c.exec.offload)];
    for (auto [key, v] : {std::pair{"host_bandwidth", s.host_bandwidth}, {"host_memory", s.host_memory}}) {
      require(v > 0,
              [&] { return what + ": system " + s.name + " gives no " + key + " (its host link; docs/offload.md)"; });
    }
    require(c.exec.offload == Offload::Activations || s.host_cpu_bandwidth > 0, [&] {
      return what + ": system " + s.name + " gives no host_cpu_bandwidth (for the host's optimizer step)";
    });
    require(offload_runs_with(c.exec.offload, c), [&] {
      return c.exec.offload == Offload::Weights
                 ? what + " streams ZeRO-3's weight shards: zero must be 3, got " + str(c.exec.zero)
                 : what +
                       " runs without pipeline parallelism and recomputation (Megatron-Core's cpu_offloading), got "
                       "pp=" +
                       str(c.pp) + " recompute=" + recompute_name(c.exec.recompute);
    });
  }
  if (c.exec.precision != Precision::Bf16) {
    require(one_d, [&] { return "fp8 precision is modelled for 1d tensor parallelism (Transformer Engine's) only"; });
    const bool block_scaled = c.exec.fp8.recipe == Fp8Recipe::Mxfp8;
    require((block_scaled ? s.matrix_flops_mxfp8 : s.matrix_flops_fp8) > 0, [&] {
      return "fp8 precision: system " + s.name + " gives no " +
             (block_scaled ? "matrix_flops_mxfp8" : "matrix_flops_fp8") + " (no " + (block_scaled ? "MXFP8" : "FP8") +
             " tensor cores)";
    });
  }
  if (m.is_mla()) {
    require(one_d, [&] {
      return "multi-head latent attention (mla) is modelled for 1d tensor parallelism only (Megatron-Core's), not " +
             std::string(plan_of(c.strategy).name);
    });
    require(c.attention.flash, [&] {
      return "multi-head latent attention (mla) needs flash attention (its values are narrower than "
             "its keys)";
    });
  }
  const std::string tp_name = one_d ? "tp" : "tp1";
  require(m.h % t.tp1 == 0, [&] { return tp_name + "=" + str(t.tp1) + " does not divide the " + str(m.h) + " heads"; });
  require(m.e % t.tp1 == 0, [&] { return tp_name + "=" + str(t.tp1) + " does not divide embed_dim " + str(m.e); });
  if (one_d) require(t.tp2 == 1 && t.nv2 == 1, [&] { return "1d tensor parallelism has no second dimension"; });
  if (c.strategy == Strategy::TwoD) {
    require(m.e % t.tp2 == 0, [&] { return "tp2=" + str(t.tp2) + " does not divide embed_dim " + str(m.e); });
    // A SUMMA block is at least one column of e; more blocks than that only overflow the counts.
    require(t.nb <= m.e,
            [&] { return "nb=" + str(t.nb) + " exceeds embed_dim " + str(m.e) + " (SUMMA blocks split e)"; });
  }
  require(c.attention.flash || c.strategy == Strategy::OneD || !c.attention.recompute,
          [&] { return "attention recompute (unfused attention) is modeled for 1d only, as the reference's sa_1d"; });
  require(!(c.attention.flash && c.attention.recompute), [&] {
    return "attention recompute goes with unfused attention; flash attention recomputes inside its kernel";
  });
  require(m.h % m.kv() == 0,
          [&] { return "num_kv_heads=" + str(m.kv()) + " does not divide the " + str(m.h) + " heads"; });
  require(m.kv() % t.tp1 == 0 || t.tp1 % m.kv() == 0, [&] {
    return tp_name + "=" + str(t.tp1) + " neither divides nor is a multiple of the " + str(m.kv()) +
           " key/value heads (replicated key/value heads need tp to be a multiple of them)";
  });
  require(c.exec.ep >= 1, [&] { return "ep must be a positive integer, got " + str(c.exec.ep); });
  const StageBlocks blocks = validate_stage_blocks(m, c);
  if (m.is_moe()) {
    require(m.moe.every >= 1, [&] { return "moe.every must be a positive integer, got " + str(m.moe.every); });
    // Each stage holds whole groups of `every` blocks, so every stage has the same mix of blocks.
    for (const auto& [stage, n] :
         {std::pair{"the first", blocks.first}, {"a middle", blocks.middle}, {"the last", blocks.last}}) {
      require(n % m.moe.every == 0, [&] {
        return "moe.every=" + str(m.moe.every) + " does not divide the " + str(n) + " blocks of " +
               (blocks.even() ? "a" : stage) +
               " stage (each stage holds whole groups of one MoE and every - 1 dense blocks)";
      });
    }
    require(c.strategy != Strategy::TwoD,
            [&] { return "mixture-of-experts blocks have no SUMMA (2d) sharding rule; use 1d or 2d-seqp"; });
    require(m.moe.experts % c.exec.ep == 0,
            [&] { return "ep=" + str(c.exec.ep) + " does not divide the " + str(m.moe.experts) + " experts"; });
    require(c.dp % c.exec.ep == 0, [&] {
      return "ep=" + str(c.exec.ep) + " does not divide dp=" + str(c.dp) +
             " (the expert-parallel group is drawn from the data-parallel ranks)";
    });
  } else {
    require(c.exec.ep == 1, [&] { return "ep=" + str(c.exec.ep) + " needs a mixture-of-experts model"; });
  }
  const Execution& x = c.exec;
  require(x.zero >= 0 && x.zero <= 3, [&] { return "zero must be 0, 1, 2 or 3, got " + str(x.zero); });
  require(x.sequence_parallel || one_d, [&] { return "sequence parallelism off (--sp off) is modeled for 1d only"; });
  require(!(x.recompute == Recompute::Selective && !c.attention.flash && !one_d), [&] {
    return "selective recomputation of unfused attention is modeled for 1d only, as the reference's sa_1d";
  });
  require(x.interleave >= 1, [&] { return "interleave must be a positive integer, got " + str(x.interleave); });
  if (x.interleave > 1) {
    require(c.pp > 1, [&] { return "interleave=" + str(x.interleave) + " needs pipeline stages (pp > 1)"; });
    if (blocks.even()) {
      require(blocks.first % x.interleave == 0, [&] {
        return "interleave=" + str(x.interleave) + " does not divide the " + str(blocks.first) + " blocks of a stage";
      });
    } else {
      require(interleaved_chunks(blocks, c.pp, x.interleave).valid, [&] {
        return "interleave=" + str(x.interleave) + " cannot cut the stages' blocks (" + str(blocks.first) +
               " on the first stage, " + str(blocks.middle) + " on a middle one, " + str(blocks.last) +
               " on the last) into chunks as Megatron-LM does: each a multiple of " + str(x.interleave) +
               ", or k a stage (a multiple of " + str(x.interleave) +
               ") with the first and last holding k or k - 1, the embedding and the loss taking a slot";
      });
    }
  }
  if (x.schedule != PipelineSchedule::OneFOneB) {
    const std::string name = kScheduleNames[static_cast<std::size_t>(x.schedule)];
    require(c.pp > 1, [&] { return "schedule " + name + " needs pipeline stages (pp > 1)"; });
    require(x.interleave == 1,
            [&] { return "schedule " + name + " runs one chunk a stage, got interleave=" + str(x.interleave); });
    if (x.schedule == PipelineSchedule::DualPipe) {
      require(c.pp % 2 == 0, [&] {
        return "schedule dualpipe pairs stage k with stage pp - 1 - k: pp must be even, got " + str(c.pp);
      });
      if (c.dp > 0 && c.mbs > 0 && global_batch % c.dp == 0) {
        const I micro_batches = global_batch / c.dp / c.mbs;
        // DeepSeek's DualPipe: an even count of at least 2 pp micro-batches (its step()'s check)
        require(micro_batches % 2 == 0 && micro_batches >= 2 * c.pp, [&] {
          return "schedule dualpipe feeds half the micro-batches from each end: needs an even count of at least 2 pp "
                 "= " +
                 str(2 * c.pp) + ", got " + str(micro_batches);
        });
      }
    }
  }
  if (x.interleave > 1 && c.dp > 0 && c.mbs > 0 && global_batch % c.dp == 0) {
    const I micro_batches = global_batch / c.dp / c.mbs;
    require(micro_batches % c.pp == 0, [&] {
      return "interleave=" + str(x.interleave) + " needs the micro-batches (" + str(micro_batches) +
             ") to be a multiple of pp=" + str(c.pp);
    });
  }
  require(global_batch % c.dp == 0,
          [&] { return "dp=" + str(c.dp) + " does not divide the global batch size " + str(global_batch); });
  const I local_batch = global_batch / c.dp;
  require(local_batch % c.mbs == 0,
          [&] { return "mbs=" + str(c.mbs) + " does not divide the local batch size " + str(local_batch); });
  // Each share divides its group (an axis the strategy lacks: at 1); the strategy's fill the domain.
  I fast = 1;
  for_each_axis_own_first(plan, [&](const LayoutAxis& a, bool own) {
    if (!a.placed()) return;
    require(a.degree(c) % a.nv(c) == 0, [&] {
      return std::string(a.nv_key) + "=" + str(a.nv(c)) + " does not divide " + a.name + "=" + str(a.degree(c));
    });
    if (own) fast *= a.nv(c);
  });
  require(fast <= s.nvlink_size, [&] {
    return "the NVLink placement uses " + str(fast) + " GPUs per domain, more than nvs=" + str(s.nvlink_size);
  });
}

namespace {
void add_sums(ModuleSums& x, const ModuleSums& y) {
  for (double ModuleSums::*f : kSumFields) x.*f += y.*f;
}

// The data-parallel all-gather and reduce-scatter of a stage's extra weights (embedding, LM
// head). The embedding's gradient is the last of the backward on the first stage, so nothing
// hides it: counted exposed on both stages.
double extra_dp_seconds(const System& s, double weights_gb, I group, I fast, const DataParallelTraffic& traffic) {
  if (weights_gb <= 0 || group <= 1) return 0;
  const double gather = collective_seconds(s, CommType::AllGather, weights_gb, group, fast, traffic.stride);
  const double reduce = collective_seconds(s, CommType::ReduceScatter, weights_gb, group, fast, traffic.stride);
  if (traffic.gather_repeats == 1 && traffic.reduce_repeats == 1) [[likely]] return gather + reduce;
  // the runtime's cadence: FSDP and ZeRO-3 gather and reduce the end stages' layers every micro-batch
  return gather * D(traffic.gather_repeats) + reduce * D(traffic.reduce_repeats);
}

// Megatron's embedding group: with tied embeddings on several stages, the first and last stage
// all-reduce the embedding's gradient (`gradient_gb` per tensor-parallel shard) after the
// backward, over NVLink when the two share a domain (every stage in one, nv_pp = pp), else the
// network. Nothing follows it to hide it. Timed as the ring runs it: a reduce-scatter and an
// all-gather.
double embedding_group_seconds(const System& s, double gradient_gb, I pp, I nv_pp, I stage_stride) {
  if (gradient_gb <= 0) return 0;
  const I fast = nv_pp == pp ? 2 : 1;
  const I apart = (pp - 1) * stage_stride;  // domains between the first stage and the last
  return collective_seconds(s, CommType::ReduceScatter, gradient_gb, 2, fast, apart) +
         collective_seconds(s, CommType::AllGather, gradient_gb, 2, fast, apart);
}

// Timing fields from the stage that bounds time, memory fields from the one that bounds memory
// (the host memory, the most any stage keeps there, is the caller's: it may be a third stage's).
Totals merge_stages(const Totals& slowest, const Totals& fullest) {
  Totals x = slowest;
  x.mem = fullest.mem;
  x.wts_mem = fullest.wts_mem;
  x.wts_grad_mem = fullest.wts_grad_mem;
  x.wts_optimizer_states_mem = fullest.wts_optimizer_states_mem;
  x.acts_mem = fullest.acts_mem;
  return x;
}

}  // namespace

StageEndSums stage_end_sums(const System& s, const Transformer& m, const Layout& c, Module* first_stage,
                            Module* last_stage) {
  StageEndSums out;
  if (m.vocab_size == 0) return out;
  const StageEnds ends = describe_stage_ends(m, c.pp);
  Module first_local, last_local;
  Module& first = first_stage != nullptr ? *first_stage : first_local;
  Module& last = last_stage != nullptr ? *last_stage : last_local;
  build_stage(s, c.strategy, ends.first, c.mbs, m, c.tensor, c.attention, first, c.exec);
  build_stage(s, c.strategy, ends.last, c.mbs, m, c.tensor, c.attention, last, c.exec);
  out.first = sum_module(first);
  out.last = sum_module(last);
  // The loss layer's kept logits: the last stage's transient peak; a tied head's copy of the
  // embedding on another stage.
  for (int i = 0; i < ends.last.count; ++i) {
    const std::size_t k = static_cast<std::size_t>(i);
    if (ends.last.layers[k].role == Role::CrossEntropy) out.logits_gb = last.layers[k].cost.activation_buffer;
    if (ends.last.layers[k].role == Role::VocabProjection && m.tie_embeddings && c.pp > 1) {
      out.tied_head_gb = last.layers[k].cost.weights_mem;
    }
  }
  return out;
}

namespace {
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

// The host's floor per block and micro-batch (s): the runtime's launches for one block.
double host_floor_per_block_s(const System& s, const Runtime& rt, const Layout& c) {
  const I tp = c.tensor.tp1 * c.tensor.tp2;
  const I domain = std::max<I>(1, s.nvlink_size);
  const I tp_domains = (tp + domain - 1) / domain;
  return rt.host_block_s + (c.pp > 1 ? D(tp) * rt.host_block_per_tp_s : 0.0) +
         D(tp_domains - 1) * rt.host_block_per_tp_domain_s;
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

// What a runtime adds to a stage of `blocks` blocks and `extra` layers (embedding, LM head).
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
  const double shards = D(dp_group(plan_of(c.strategy), c));
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
    // the FP8 GEMMs' weights quantized once per step (weight caching) or for every micro-batch,
    // and with caching both FP8 copies kept
    const double fp8_params = (layers * (block.mlp.fp8_weights_mem + block.sa.fp8_weights_mem) + extra.fp8_weights_mem) /
                              s.element_size;
    const double fp8_gemms = layers * (block.mlp.fp8_gemms + block.sa.fp8_gemms) + extra.fp8_gemms;
    QuantWork weights;
    add_quantization(weights, weight_quantization(c.exec.fp8.recipe), fp8_params * kGB);
    for (double& k : weights.kernels) k *= fp8_gemms;  // a kernel per GEMM's weight
    const double t = quantization_seconds(s, weights);
    (c.exec.fp8.weight_cache ? step : micro_batch) += t;
    if (c.exec.fp8.weight_cache) fp8_cache_gb = cached_weight_bytes(c.exec.fp8.recipe) * fp8_params * kGB;
    // FP8 parameters (Megatron-LM's --fp8-param-gather, which needs the distributed optimizer's
    // gathers): the FP8 value and its transposed copy are the FP8 GEMMs' weights, whole on each
    // GPU below ZeRO 3, and their bf16 weights are not kept.
    if (c.exec.fp8_params && c.exec.zero >= 1 && c.exec.zero < 3) {
      const double bf16_weight_bytes = (r.bytes != nullptr ? *r.bytes : state_bytes(c.exec.params)).weights;
      fp8_cache_gb = (cached_weight_bytes(c.exec.fp8.recipe) - bf16_weight_bytes) * fp8_params * kGB;
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
}  // namespace

double memory_limit_gb(const System& s, const Runtime& rt) {
  const kernels::Calibration* cal = s.kernel_calibration.get();
  const double reserve = rt.allocator_reserve_from_kernels && cal != nullptr ? cal->allocator_reserve : rt.allocator_reserve;
  if (!rt.capacity_in_gib) return s.hbm_capacity / (1 + reserve);
  if (s.hbm_capacity_exact) return (s.hbm_capacity / kGbPerGib - rt.driver_reserve_gib) * kGbPerGib / (1 + reserve);
  return (s.hbm_capacity - rt.driver_reserve_gib) * kGbPerGib / (1 + reserve);
}

double stream_seconds(const System& s, kernels::StreamKind kind, KernelClass fallback, double gigabytes) {
  const kernels::Calibration* cal = s.kernel_calibration.get();
  if (cal != nullptr && cal->stream_fitted[static_cast<std::size_t>(kind)]) {
    return kernels::stream_seconds(*cal, kind, kernels::kFwd, gigabytes, s.hbm_bandwidth);
  }
  return memory_seconds(s, fallback, gigabytes);
}

namespace {
// megatron_block_activations's attention bytes per token with the attention options of
// model/transformer.hpp (head_dim, QK-norm, post-norms, MLA), as Megatron-Core with Transformer
// Engine keeps them: each norm's input, each GEMM's input (a column projection with sequence
// parallelism its l / t shard), Q, K, V, the core's output and log-sum-exp.
double megatron_attention_activations(const Transformer& m, const Layout& c, double gemm_in, double replicated) {
  const double t = D(c.tensor.tp1);
  const double e = D(m.e), heads = D(m.h) / t;
  const double kv = m.kv() >= c.tensor.tp1 ? D(m.kv()) / t : 1.0;
  const double qk = D(m.qk_head_dim()), v = D(m.value_head_dim());
  const bool fp8 = c.exec.precision != Precision::Bf16 && c.exec.fp8.saved_inputs;
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

BlockActivations megatron_block_activations(const Transformer& m, const Layout& c) {
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
  const bool fp8 = c.exec.precision != Precision::Bf16 && c.exec.fp8.saved_inputs;
  const double gemm_in = fp8 ? 1.0 : 2.0;
  // attention: the norm's input, the qkv projection's input, Q, K, V, the core's output (the
  // output projection's input) and its fp32 log-sum-exp per head, the dropout mask; with FP8 the
  // output projection keeps its own FP8 copy of the core's output, which the core keeps in bf16.
  double sa = 2 * e * replicated + gemm_in * e * replicated + 2 * heads * hd + 2 * 2 * kv * hd + 2 * heads * hd +
              4 * heads + mask;
  if (fp8) sa += 1 * heads * hd;
  if (m.extends_attention()) [[unlikely]] sa = megatron_attention_activations(m, c, gemm_in, replicated) + mask;
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
    case ActivationAccounting::Megatron: return megatron_block_activations(m, c);
    case ActivationAccounting::Autocast: return autocast_block_activations(m, c);
  }
  return std::nullopt;
}

void validate_runtime_layout(const Runtime& rt, const Layout& c) {
  if (!rt.runs(c.strategy)) {
    throw ConfigError("runtime " + rt.name + " does not run strategy " + plan_of(c.strategy).name);
  }
  if (!rt.runs_zero(c.exec.zero)) {
    throw ConfigError("runtime " + rt.name + " does not run ZeRO stage " + std::to_string(c.exec.zero));
  }
  if (rt.activations == ActivationAccounting::Autocast && c.exec.recompute == Recompute::Selective) {
    throw ConfigError("runtime " + rt.name + "'s autocast accounting models recompute none or full");
  }
  if (c.exec.precision != Precision::Bf16 && rt.fp8.recipe == Fp8Recipe::None) {
    throw ConfigError("runtime " + rt.name + " runs no FP8 (its file gives no fp8_recipe)");
  }
  if (rt.sp_backward_gather && c.exec.sequence_parallel && c.strategy != Strategy::OneD) {
    throw ConfigError("runtime " + rt.name + "'s sequence parallelism is modelled for 1d only");
  }
  if (!rt.runs_offload(c.exec.offload)) {
    throw ConfigError("runtime " + rt.name + " does not offload " + kOffloadNames[static_cast<std::size_t>(c.exec.offload)] +
                      " (its offload key lists what it offloads; docs/offload.md)");
  }
  if (c.tensor.cp > 1 && !rt.runs_cp(c.exec.cp_comm)) {
    throw ConfigError("runtime " + rt.name + " does not run context parallelism" +
                      (rt.context_parallel != 0 ? std::string(" with cp_comm ") +
                                                      kCpCommNames[static_cast<std::size_t>(c.exec.cp_comm)]
                                                : std::string()) +
                      " (cp=" + std::to_string(c.tensor.cp) + "; its context_parallel key lists what it runs; " +
                      "docs/context_parallel.md)");
  }
}

namespace {
// The runtime's view of a block: its tensor-parallel overlap and its activation accounting.
BlockSummary runtime_view(const Transformer& m, const Runtime& rt, const Layout& c, const BlockSummary& costed) {
  BlockSummary adjusted = costed;
  if (rt.tp_comm_overlap > 0) {
    hide_tp_comm(adjusted.mlp, rt.tp_comm_overlap);
    hide_tp_comm(adjusted.sa, rt.tp_comm_overlap);
  }
  if (const std::optional<BlockActivations> a = runtime_block_activations(m, rt, c)) {
    adjusted.sa.activation_buffer = a->sa;
    if (!m.is_moe()) adjusted.mlp.activation_buffer = a->mlp;
  }
  return adjusted;
}

// A pipeline stage to cost: its index, its blocks, the micro-batches whose activations it holds,
// the layers beside its blocks (embedding, LM head), their data-parallel seconds and the tied
// embedding's all-reduce, and the loss's logits it keeps.
struct StagePlan {
  I index = 0, blocks = 0, in_flight = 1;
  const ModuleSums* extra = nullptr;
  double extra_dp_s = 0, tied_s = 0, logits_gb = 0;
};
}  // namespace

double block_pass_seconds(const Runtime& rt, const BlockSummary& costed) {
  // the sums stage_totals starts from, of the block compose_step composes (runtime_view's times)
  if (rt.is_reference() || !(rt.tp_comm_overlap > 0)) {
    return (costed.mlp.t_fwd + costed.sa.t_fwd) + (costed.mlp.t_bwd + costed.sa.t_bwd);
  }
  ModuleSums mlp = costed.mlp, sa = costed.sa;
  hide_tp_comm(mlp, rt.tp_comm_overlap);
  hide_tp_comm(sa, rt.tp_comm_overlap);
  return (mlp.t_fwd + sa.t_fwd) + (mlp.t_bwd + sa.t_bwd);
}

I fullest_stage_blocks(const Transformer& m, I pp, StagePartition partition) {
  if (pp <= 1) return m.depth;
  if (partition == StagePartition::Nanotron) {
    const StageBlocks b = nanotron_stage_blocks(m, pp);
    return std::max({b.first, pp > 2 ? b.middle : b.first, b.last});
  }
  const I every = m.is_moe() ? m.moe.every : 1;
  if (m.depth % pp == 0 && (m.depth / pp) % every == 0) return m.depth / pp;
  // the balanced (or slotted) partition holds whole groups of `every` blocks on every stage, all
  // of them: one stage holds at least ceil(groups / pp) groups
  const I groups = m.depth / every;
  return (groups + pp - 1) / pp * every;
}

double step_seconds_lower_bound(double block_s, I micro_batches, I fullest_blocks, I pp, I interleave,
                                bool one_f_one_b) {
  // stage_totals: the stage's blocks for every micro-batch, then only non-negative terms
  // (transfers, host floor, bubble, data-parallel communication, optimizer, offload); 1F1B's bubble
  // is pp - 1 of its micro-batch slots over V, each slot at least the blocks' pass
  const double slots = one_f_one_b && pp > 1 ? D(pp - 1) / D(std::max<I>(interleave, 1)) : 0.0;
  const double seconds = block_s * D(fullest_blocks) * (D(micro_batches) + slots);
  // the sums it stands for round differently: a margin far above their rounding (~1e-15)
  constexpr double kRoundingMargin = 1e-9;
  return seconds * (1 - kRoundingMargin);
}

StepCosts compose_step(const System& s, const Transformer& m, const Runtime& rt, const Layout& c,
                       const BlockSummary& costed, I global_batch, const StageEndSums& ends) {
  const StrategyPlan& plan = plan_of(c.strategy);
  const I micro_batches = global_batch / c.dp / c.mbs;
  const I seqp = optimizer_shards_beyond_dp(plan, c);
  const I group = dp_group(plan, c), group_fast = dp_group_fast(plan, c);
  const bool reference = rt.is_reference();
  BlockSummary adjusted;
  if (!reference) [[unlikely]] adjusted = runtime_view(m, rt, c, costed);
  const BlockSummary& block = reference ? costed : adjusted;
  DataParallelTraffic traffic =
      reference ? data_parallel_traffic(c.exec) : data_parallel_traffic(rt, c.exec, micro_batches);
  if (c.exec.ep > 1) {
    traffic.expert_group = expert_dp_group(plan, c);
    traffic.expert_fast = expert_dp_group_fast(plan, c);
  }
  // Where the groups sit (network tiers), in the runtime's rank order: tensor ranks innermost, then
  // data, then pipeline (Megatron-Core's default), or the pipeline inside the data-parallel replicas.
  I stage_stride = 1;
  if (s.network_tiers != nullptr) [[unlikely]] {
    const DomainStrides strides = domain_strides(plan, c);
    stage_stride = strides.pipeline;
    traffic.stride = strides.data;
    traffic.expert_stride = strides.expert;
  }
  const StageBlocks blocks = stage_blocks(m, c.pp, c.exec);
  const bool even = blocks.even();
  StepCosts out;
  out.dp_row = data_parallel(s, block, blocks.first, group, group_fast, !c.exec.dp_after_backward, traffic);
  if (c.exec.p2p_scatter_gather && !c.exec.sequence_parallel && c.tensor.tp1 > 1) [[unlikely]] {
    BlockSummary scattered = block;
    scattered.p2p_volume_gb /= D(c.tensor.tp1);
    out.pp_row =
        pipeline_parallel(s, scattered, micro_batches, c.pp, c.nv_pp, reference, c.exec.interleave, stage_stride);
  } else {
    out.pp_row = pipeline_parallel(s, block, micro_batches, c.pp, c.nv_pp, reference, c.exec.interleave, stage_stride);
  }
  // The stages that can bound the step: the first; a middle one when the split is uneven (with an
  // even split it is never slower or fuller than the first); the last with a vocabulary (its LM
  // head) or an uneven split. Without a vocabulary the ends' sums are zero. With pp = 1 the one
  // stage runs both ends.
  const bool vocab = m.vocab_size > 0;
  ModuleSums first_sums = ends.first, last_sums = ends.last;
  if (rt.activations == ActivationAccounting::Autocast) [[unlikely]] {
    first_sums.activation_buffer = 0;  // the embedding's output is the first block's input
    last_sums.activation_buffer = autocast_ends_activations(m, c);  // the final norm's (or the MSE's) tensors
  }
  if (c.pp == 1) add_sums(first_sums, last_sums);
  // the embedding group's all-reduce, in the gradients' dtype (the layout's reduce scale)
  double t_tied = 0;
  if (vocab) {
    t_tied = embedding_group_seconds(s, ends.tied_head_gb * traffic.reduce_scale, c.pp, c.nv_pp, stage_stride);
    out.model.embedding_mem = ends.first.weights_mem * (2 + 6 / D(c.dp * seqp));
    out.model.logits_mem = ends.logits_gb;
  }
  auto plan_stage = [&](I index, I stage_blocks_count, I in_flight, const ModuleSums& extra, double tied_s,
                        double logits_gb) {
    const double extra_dp_s = vocab ? extra_dp_seconds(s, extra.weights_mem, group, group_fast, traffic) : 0.0;
    return StagePlan{index, stage_blocks_count, in_flight, &extra, extra_dp_s, tied_s, logits_gb};
  };
  auto cost_stage = [&](const StagePlan& x, const LayerResult& dp_row) {
    const double t_dp = dp_row.t + x.extra_dp_s + x.tied_s;
    const StageRuntime stage_rt =
        reference ? StageRuntime{}
                  : stage_runtime(s, m, rt, c, block, x.blocks, *x.extra, x.logits_gb, micro_batches, x.index == 0,
                                  x.index == c.pp - 1);
    return stage_totals(block, *x.extra, t_dp, out.pp_row.t, x.blocks, c.pp, c.dp, seqp, micro_batches, x.in_flight,
                        c.exec, stage_rt);
  };
  const StagePlan head = c.pp == 1 ? plan_stage(0, blocks.first, 1, first_sums, 0, ends.logits_gb)
                                   : plan_stage(0, blocks.first, std::min(micro_batches, c.pp), first_sums, t_tied, 0);
  if (c.pp == 1 || (even && !vocab)) {
    out.totals = cost_stage(head, out.dp_row);
  } else if (even) {
    const Totals first = cost_stage(head, out.dp_row);
    const Totals last = cost_stage(plan_stage(c.pp - 1, blocks.last, 1, last_sums, t_tied, ends.logits_gb), out.dp_row);
    const bool last_slower = last.t > first.t, last_fuller = last.mem > first.mem;
    out.totals = merge_stages(last_slower ? last : first, last_fuller ? last : first);
    out.totals.host_mem = std::max(first.host_mem, last.host_mem);
    out.model.time_stage = last_slower ? c.pp - 1 : 0;
    out.model.memory_stage = last_fuller ? c.pp - 1 : 0;
  } else {
    // each stage's data-parallel reduction over its own blocks' weights
    auto dp_of = [&](I stage_blocks_count) {
      return data_parallel(s, block, stage_blocks_count, group, group_fast, !c.exec.dp_after_backward, traffic);
    };
    const ModuleSums none;
    const StagePlan plans[] = {head,
                               plan_stage(blocks.middle_index, blocks.middle,
                                          std::min(micro_batches, c.pp - blocks.middle_index), none, 0, 0),
                               plan_stage(c.pp - 1, blocks.last, 1, last_sums, t_tied, ends.logits_gb)};
    const LayerResult rows[] = {out.dp_row, c.pp > 2 ? dp_of(blocks.middle) : out.dp_row, dp_of(blocks.last)};
    Totals totals[3];
    std::size_t slowest = 0, fullest = 0;
    for (std::size_t k = 0; k < 3; ++k) {
      if (k == 1 && c.pp == 2) continue;  // no middle stage
      totals[k] = cost_stage(plans[k], rows[k]);
      if (totals[k].t > totals[slowest].t) slowest = k;
      if (totals[k].mem > totals[fullest].mem) fullest = k;
    }
    out.totals = merge_stages(totals[slowest], totals[fullest]);
    for (const Totals& k : totals) out.totals.host_mem = std::max(out.totals.host_mem, k.host_mem);
    out.model.time_stage = plans[slowest].index;
    out.model.memory_stage = plans[fullest].index;
    out.dp_row = rows[slowest];
  }
  out.totals.mem_limit = memory_limit_gb(s, rt);
  out.model.params_per_gpu = out.totals.wts_mem / s.element_size;
  return out;
}

StageBlocks balanced_stages(I depth, I pp, I every, double block_s, double block_floor_s, double first_extra_s,
                            double last_extra_s) {
  if (pp < 2 || every < 1 || depth % every != 0 || depth / every < pp) {
    throw ConfigError("no partition of depth " + std::to_string(depth) + " over pp=" + std::to_string(pp) +
                      " stages gives each stage at least one block" +
                      (every > 1 ? " in whole groups of moe.every=" + std::to_string(every) : std::string()));
  }
  // A stage's time per micro-batch: its blocks' and end layers', at least the host's floor for its blocks.
  auto stage_s = [&](I groups, double extra_s) {
    const double b = D(groups * every);
    return std::max(b * block_s + extra_s, b * block_floor_s);
  };
  const I groups = depth / every, middles = pp - 2;
  StageBlocks best;
  double best_s = 0;
  for (I middle = middles > 0 ? 1 : 0;; ++middle) {
    const I end_groups = groups - middles * middle;  // the first and last stages' together
    if (end_groups < 2) break;
    const double middle_s = middles > 0 ? stage_s(middle, 0) : 0.0;
    auto slowest_s = [&](I first) {
      return std::max({stage_s(first, first_extra_s), middle_s, stage_s(end_groups - first, last_extra_s)});
    };
    // The first stage's time grows with its share and the last's shrinks: the slowest stage is
    // least where the first overtakes the last, or one group before.
    I lo = 1, hi = end_groups - 1;
    while (lo < hi) {
      const I first = lo + (hi - lo) / 2;
      if (stage_s(first, first_extra_s) >= stage_s(end_groups - first, last_extra_s)) {
        hi = first;
      } else {
        lo = first + 1;
      }
    }
    if (lo > 1 && slowest_s(lo - 1) <= slowest_s(lo)) --lo;
    const double t = slowest_s(lo);
    // the fewest groups on the first stage that keep that time: the last stage's is then at most t
    I fewest = 1;
    for (I hi_first = lo; fewest < hi_first;) {
      const I first = fewest + (hi_first - fewest) / 2;
      if (stage_s(end_groups - first, last_extra_s) <= t) {
        hi_first = first;
      } else {
        fewest = first + 1;
      }
    }
    const I first = fewest * every, last = (end_groups - fewest) * every;
    const bool fewer_on_ends = first < best.first || (first == best.first && last < best.last);
    if (best.first == 0 || t < best_s || (t == best_s && fewer_on_ends)) {
      best = {first, (middles > 0 ? middle * every : first), last};
      best_s = t;
    }
    if (middles == 0) break;
  }
  return best;
}

StageBlocks balanced_stages(const System& s, const Transformer& m, const Runtime& rt, const Layout& c,
                            const BlockSummary& block, const StageEndSums& ends) {
  // interleaved chunks: the one partition Megatron-LM cuts into chunks, the ends taking a slot
  if (c.exec.interleave > 1) return slotted_stages(m.depth, c.pp, c.exec.interleave);
  const bool reference = rt.is_reference();
  const BlockSummary view = reference ? block : runtime_view(m, rt, c, block);
  const double floor_s = reference ? 0 : host_floor_per_block_s(s, rt, c);
  return balanced_stages(m.depth, c.pp, m.is_moe() ? m.moe.every : 1,
                         view.mlp.t_fwd + view.mlp.t_bwd + view.sa.t_fwd + view.sa.t_bwd, floor_s,
                         ends.first.t_fwd + ends.first.t_bwd, ends.last.t_fwd + ends.last.t_bwd);
}

Layout with_balanced_stages(const System& s, const Transformer& m, const Runtime& rt, const Layout& layout,
                            I global_batch) {
  return with_balanced_stages(s, m, rt, layout, global_batch, [&](const Layout& c) {
    Module mlp, sa;
    return CostedLayout{
        cost_block(s, m, c, describe_block(m, c.attention), describe_dense_block(m, c.attention), mlp, sa),
        stage_end_sums(s, m, c)};
  });
}

Layout with_balanced_stages(const System& s, const Transformer& m, const Runtime& rt, const Layout& layout,
                            I global_batch, const std::function<CostedLayout(const Layout&)>& costed) {
  Layout out = layout;
  out.exec.first_stage_blocks = 0;
  out.exec.last_stage_blocks = 0;
  if (layout.pp < 2 || rt.stage_partition != StagePartition::Even) return out;  // else the runtime's own
  if (layout.exec.interleave > 1) {
    // the slotted partition where the depth does not split evenly (there is no other to balance)
    if (m.depth % layout.pp != 0) {
      const StageBlocks slotted = slotted_stages(m.depth, layout.pp, layout.exec.interleave);
      out.exec.first_stage_blocks = slotted.first;
      out.exec.last_stage_blocks = slotted.last;
    }
    return out;
  }
  // A partition of the blocks alone lets the rest of the layout be checked and its block costed.
  const I every = m.is_moe() ? m.moe.every : 1;
  const StageBlocks by_count = balanced_stages(m.depth, layout.pp, every, 1, 0, 0, 0);
  Layout c = out;
  c.exec.first_stage_blocks = by_count.first;
  c.exec.last_stage_blocks = by_count.last;
  apply_runtime(rt, c.exec, c.attention);
  validate_layout(s, m, c, global_batch);
  validate_runtime_layout(rt, c);
  const CostedLayout block = costed(c);
  const StageBlocks balanced = balanced_stages(s, m, rt, c, block.block, block.ends);
  out.exec.first_stage_blocks = balanced.first;
  out.exec.last_stage_blocks = balanced.last;
  return out;
}

StepCosts compose_step(const System& s, const Transformer& m, const Layout& c, const BlockSummary& block,
                       I global_batch, const StageEndSums& ends) {
  return compose_step(s, m, reference_runtime(), c, block, global_batch, ends);
}

Evaluation evaluate(const System& s, const Transformer& m, const Layout& c, I global_batch) {
  return evaluate(s, m, reference_runtime(), c, global_batch);
}

Evaluation evaluate(const System& s, const Transformer& m, const Runtime& rt, const Layout& layout, I global_batch) {
  Layout c = layout;
  apply_runtime(rt, c.exec, c.attention);
  validate_layout(s, m, c, global_batch);
  validate_runtime_layout(rt, c);
  Evaluation ev;
  const BlockSummary block =
      cost_block(s, m, c, describe_block(m, c.attention), describe_dense_block(m, c.attention), ev.mlp, ev.sa);
  const StageEndSums ends = stage_end_sums(s, m, c, &ev.first_stage, &ev.last_stage);
  StepCosts step = compose_step(s, m, rt, c, block, global_batch, ends);
  ev.dp_row = step.dp_row;
  ev.pp_row = step.pp_row;
  ev.totals = step.totals;
  ev.model = step.model;
  const ParameterCount params = count_parameters(m);
  ev.model.params = D(params.total);
  ev.model.active_params = D(params.active);
  ev.model_section = m.extends_reference();
  ev.throughput = D(global_batch) / ev.totals.t;
  ev.efficiency = efficiency(m, s, c.n_gpus(), global_batch, ev.totals.t, &c.exec);
  ev.fits = !(ev.totals.mem > ev.totals.mem_limit) && fits_host(s, ev.totals);
  ev.runtime = rt.name;
  ev.runtime_hash = rt.content_hash;
  ev.param_layout = param_layout_text(rt, c.exec.params);
  ev.capacity_in_gib = rt.capacity_in_gib && !s.hbm_capacity_exact;
  ev.capacity_gb = ev.capacity_in_gib ? s.hbm_capacity * kGbPerGib : s.hbm_capacity;
  return ev;
}

}  // namespace perfsweep
