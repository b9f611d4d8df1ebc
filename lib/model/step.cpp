#include "model/step.hpp"

#include <algorithm>
#include <string>

#include "model/autocast.hpp"
#include "model/parameters.hpp"

namespace perfsweep {
namespace {
using I = std::int64_t;
constexpr double D(I v) { return static_cast<double>(v); }

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

// A pipeline stage to cost: its index, its blocks (their mean: stage_block), the micro-batches
// whose activations it holds, the layers beside its blocks (embedding, LM head), their
// data-parallel seconds and the tied embedding's all-reduce, and the loss's logits it keeps.
struct StagePlan {
  I index = 0, blocks = 0, in_flight = 1;
  BlockSummary block;
  const ModuleSums* extra = nullptr;
  double extra_dp_s = 0, tied_s = 0, logits_gb = 0;
};
}  // namespace

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

Totals step_totals(const BlockSummary& b, double t_dp_comm, double t_pp_comm, I depth, I pp, I dp, I seqp,
                   I micro_batches, const Execution& exec) {
  return stage_totals(b, ModuleSums{}, t_dp_comm, t_pp_comm, depth / pp, pp, dp, seqp, micro_batches,
                      micro_batches >= pp ? pp : micro_batches, exec);
}

// The extra layers' terms are added after the reference's products, so that with none (zeros)
// every field keeps the reference's last digit.
Totals stage_totals(const BlockSummary& b, const ModuleSums& e, double t_dp_comm, double t_pp_comm, I blocks, I pp,
                    I dp, I seqp, I micro_batches, I in_flight, const Execution& exec, const StageRuntime& rt,
                    I expert_tensor_replicas) {
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
                  rt.bytes, expert_tensor_replicas);
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

StepCosts compose_step(const System& s, const Transformer& m, const Runtime& rt, const Layout& c,
                       const BlockSummary& costed, I global_batch, const StageEndSums& ends) {
  const StrategyPlan& plan = plan_of(c.strategy);
  const I micro_batches = global_batch / c.dp / c.mbs;
  // The groups on the layout's grid (model/grid.hpp): the weights' replicas reduce the gradients
  // and share the optimizer states (seqp: beyond dp, cp's and 2d-seqp's tp2); the experts'
  // replicas are those over ep, and the tensor group's tp1 / etp expert groups (etr). Where they
  // sit (network tiers) follows the runtime's rank order.
  const ParallelGrid grid = parallel_grid(c);
  const GroupShape replicas = grid.group(plan.replicas);
  const I seqp = grid.group(without(plan.replicas, grid_axes("dp"))).size;
  const I group = replicas.size, group_fast = replicas.fast;
  const bool reference = rt.is_reference();
  BlockSummary adjusted;
  if (!reference) [[unlikely]] adjusted = runtime_view(m, rt, c, costed);
  const BlockSummary& block = reference ? costed : adjusted;
  DataParallelTraffic traffic =
      reference ? data_parallel_traffic(c.exec) : data_parallel_traffic(rt, c.exec, micro_batches);
  // Megatron-Core's interleaved schedule: each chunk's collectives behind the others' passes
  // (once per step: a reduction or gather every micro-batch runs behind its own)
  if (!reference && rt.dp_overlap == DpOverlap::Chunk && c.exec.interleave > 1 && traffic.reduce_repeats == 1 &&
      traffic.gather_repeats == 1 && !traffic.gather_in_backward) [[unlikely]] {
    traffic.chunks = c.exec.interleave;
    traffic.chunk_steps = c.pp;
  }
  GroupShape experts;
  if (c.exec.ep > 1 || grid[RankAxis::Etr] > 1) {
    experts = grid.group(static_cast<AxisSet>(without(plan.replicas, axis_bit(RankAxis::Ep)) | axis_bit(RankAxis::Etr)));
    traffic.expert_group = experts.size;
    traffic.expert_fast = experts.fast;
  }
  I stage_stride = 1;
  if (s.network_tiers != nullptr) [[unlikely]] {
    stage_stride = grid.group(axis_bit(RankAxis::Pp)).stride;
    traffic.stride = replicas.stride;
    traffic.expert_stride = experts.stride;
  }
  const Mechanisms& mech = rt.mechanisms;
  const StageBlocks partition = stage_blocks(m, c.pp, c.exec, mech.stage_partition);
  // multi-token prediction's blocks (model/block.hpp describe_stage_ends) are the last stage's
  // beside its own (with pp = 1 the one stage's)
  StageBlocks blocks = partition;
  blocks.last += m.mtp_layers;
  if (c.pp == 1) blocks.first = blocks.last;
  // dense first blocks (block.first_dense): each stage costed with its own, the slowest and the
  // fullest of them bounding the step as an uneven split's stages do
  const bool mixed = block.first_dense > 0;
  const bool even = blocks.even() && !mixed;
  auto dense_on = [&](I stage) {
    return mixed ? leading_blocks_on_stage(partition, c.pp, c.exec.interleave, block.first_dense, stage) : 0;
  };
  auto block_of = [&](I stage, I stage_blocks_count) {
    return stage_block(block, dense_on(stage), stage_blocks_count);
  };
  StepCosts out;
  const BlockSummary head_block = block_of(0, blocks.first);
  out.dp_row = data_parallel(s, head_block, blocks.first, group, group_fast, !mech.dp_after_backward, traffic);
  if (mech.p2p_scatter_gather && !c.exec.sequence_parallel && c.tensor.tp1 > 1) [[unlikely]] {
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
    // the embedding's states as the stage's own are counted (step_memory: the runtime's bytes per
    // parameter, the ZeRO stage, the schedule and offload), without its activations
    const StepMemory embedding = step_memory(0, 0, 0, c.pp, c.dp, seqp, 1, c.exec, ends.first.weights_mem, 0, 0, 0,
                                             reference || !rt.has_states ? nullptr : &rt.states);
    out.model.embedding_mem = embedding.weights + embedding.weight_grads + embedding.optimizer_states;
    out.model.logits_mem = ends.logits_gb;
  }
  auto plan_stage = [&](I index, const BlockSummary& stage_block_sums, I stage_blocks_count, I in_flight,
                        const ModuleSums& extra, double tied_s, double logits_gb) {
    const double extra_dp_s = vocab ? extra_dp_seconds(s, extra.weights_mem, group, group_fast, traffic) : 0.0;
    return StagePlan{index, stage_blocks_count, in_flight, stage_block_sums, &extra, extra_dp_s, tied_s, logits_gb};
  };
  auto cost_stage = [&](const StagePlan& x, const LayerResult& dp_row) {
    const double t_dp = dp_row.t + x.extra_dp_s + x.tied_s;
    const StageRuntime stage_rt =
        reference ? StageRuntime{}
                  : stage_runtime(s, m, rt, c, x.block, x.blocks, *x.extra, x.logits_gb, micro_batches, x.index == 0,
                                  x.index == c.pp - 1);
    return stage_totals(x.block, *x.extra, t_dp, out.pp_row.t, x.blocks, c.pp, c.dp, seqp, micro_batches, x.in_flight,
                        c.exec, stage_rt, grid[RankAxis::Etr]);
  };
  const StagePlan head = c.pp == 1
                             ? plan_stage(0, head_block, blocks.first, 1, first_sums, 0, ends.logits_gb)
                             : plan_stage(0, head_block, blocks.first, std::min(micro_batches, c.pp), first_sums, t_tied, 0);
  if (c.pp == 1 || (even && !vocab)) {
    out.totals = cost_stage(head, out.dp_row);
  } else if (even) {
    const Totals first = cost_stage(head, out.dp_row);
    const Totals last =
        cost_stage(plan_stage(c.pp - 1, block, blocks.last, 1, last_sums, t_tied, ends.logits_gb), out.dp_row);
    const bool last_slower = last.t > first.t, last_fuller = last.mem > first.mem;
    out.totals = merge_stages(last_slower ? last : first, last_fuller ? last : first);
    out.totals.host_mem = std::max(first.host_mem, last.host_mem);
    out.model.time_stage = last_slower ? c.pp - 1 : 0;
    out.model.memory_stage = last_fuller ? c.pp - 1 : 0;
  } else {
    // Each stage with the data-parallel reduction over its own blocks' weights: the first, the
    // middle stages holding dense first blocks, one middle stage of MoE blocks alone (the first
    // such, or the uneven partition's fullest: StageBlocks::middle_index; with one kind of block
    // every middle stage is alike) and the last.
    const ModuleSums none;
    Totals slowest, fullest;
    I slowest_index = 0, fullest_index = 0;
    bool any_costed = false;
    auto visit = [&](const StagePlan& x, const LayerResult& row) {
      const Totals t = cost_stage(x, row);
      if (!any_costed || t.t > slowest.t) {
        slowest = t;
        slowest_index = x.index;
        out.dp_row = row;
      }
      if (!any_costed || t.mem > fullest.mem) {
        fullest = t;
        fullest_index = x.index;
      }
      out.totals.host_mem = std::max(out.totals.host_mem, t.host_mem);
      any_costed = true;
    };
    auto dp_of = [&](const BlockSummary& stage_block_sums, I stage_blocks_count) {
      return data_parallel(s, stage_block_sums, stage_blocks_count, group, group_fast, !mech.dp_after_backward,
                           traffic);
    };
    const LayerResult head_row = out.dp_row;
    visit(head, head_row);
    if (c.pp > 2) {
      auto middle = [&](I k) {
        const BlockSummary b = block_of(k, blocks.middle);
        visit(plan_stage(k, b, blocks.middle, std::min(micro_batches, c.pp - k), none, 0, 0), dp_of(b, blocks.middle));
      };
      I k = 1;
      for (; k < c.pp - 1 && dense_on(k) > 0; ++k) middle(k);
      if (k < c.pp - 1) middle(std::max(k, blocks.middle_index));
    }
    const BlockSummary tail = block_of(c.pp - 1, blocks.last);
    visit(plan_stage(c.pp - 1, tail, blocks.last, 1, last_sums, t_tied, ends.logits_gb), dp_of(tail, blocks.last));
    const double host_mem = out.totals.host_mem;
    out.totals = merge_stages(slowest, fullest);
    out.totals.host_mem = host_mem;
    out.model.time_stage = slowest_index;
    out.model.memory_stage = fullest_index;
  }
  out.totals.mem_limit = memory_limit_gb(s, rt);
  out.model.params_per_gpu = out.totals.wts_mem / s.element_size;
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
  c.attention = runtime_attention(rt, c.attention);
  const Mechanisms& mech = rt.mechanisms;
  validate_layout(s, m, c, global_batch, mech);
  validate_runtime_layout(rt, c);
  Evaluation ev;
  const BlockSummary block = cost_block(s, m, c, mech, describe_block(m, c.attention),
                                        describe_dense_block(m, c.attention), ev.mlp, ev.sa);
  const StageEndSums ends = stage_end_sums(s, m, c, mech, &ev.first_stage, &ev.last_stage);
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
  const Precision peak = peak_precision(s, c.exec.precision, layout_fp8(rt, c.exec).recipe);
  ev.efficiency = efficiency(m, s, c.n_gpus(), global_batch, ev.totals.t, peak);
  ev.fits = !(ev.totals.mem > ev.totals.mem_limit) && fits_host(s, ev.totals);
  ev.runtime = rt.name;
  ev.runtime_hash = rt.content_hash;
  ev.stage_partition = mech.stage_partition;
  ev.param_layout = param_layout_text(rt, c.exec.params);
  ev.capacity_in_gib = rt.capacity_in_gib && !s.hbm_capacity_exact;
  ev.capacity_gb = ev.capacity_in_gib ? s.hbm_capacity * kGbPerGib : s.hbm_capacity;
  return ev;
}

}  // namespace perfsweep
