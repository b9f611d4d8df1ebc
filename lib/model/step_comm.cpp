#include "model/step_comm.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "model/roofline.hpp"

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

double exposed_dp_seconds(CommType type, double comm_s, double compute_s, I layers, const DataParallelTraffic& traffic) {
  const double t = comm_s, c = compute_s;
  if (traffic.chunks <= 1) [[likely]] return t + std::max(t - c, 0.0) * D(layers - 1);
  // the stage's layers over its chunks as evenly as they go (the first chunks one more)
  const I chunks = traffic.chunks;
  auto chunk_layers = [&](I k) { return layers / chunks + (k < layers % chunks ? 1 : 0); };
  // one micro-batch step of a chunk: its mean layers' compute
  const double step = D(layers) / D(chunks) * c;
  const double spacing = D(traffic.chunk_steps) * step;
  if (type == CommType::ReduceScatter) {
    // Megatron-Core's grad_sync_func (align_grad_reduce, its default): chunk k's reductions all
    // launched once its last micro-batch's backward ends, on the last pipeline rank (the stage
    // that waits longest) pp - 1 backward steps later, and no later than the step's last
    // backward; chunk k's last backward ends k x chunk_steps steps before the stage's last. One
    // queue, the chunks in the order they finish; seconds from the end of the backward.
    double free = -std::numeric_limits<double>::infinity();
    const double delay = D(traffic.chunk_steps - 1) * step;
    for (I k = chunks; k-- > 0;) {
      const double n = D(chunk_layers(k));
      if (n == 0) continue;
      const double launch = std::min(-D(k) * spacing + delay, 0.0);
      free = std::max(free, launch) + n * t;
    }
    return std::max(free, 0.0);
  }
  // Gathers: the first two chunks launched at the step's start, chunk k >= 2 as chunk k - 1
  // runs its first forward; chunk k's first forward k x chunk_steps steps after the start, its
  // layers one compute apart, each waiting for its weights. What the forward waits, summed.
  double free = 0, stall = 0;
  for (I k = 0; k < chunks; ++k) {
    const double n = D(chunk_layers(k));
    if (n == 0) continue;
    const double launch = k < 2 ? 0.0 : D(k - 1) * spacing + stall;
    const double needed = D(k) * spacing + stall;
    const double begin = std::max(free, launch);
    stall += std::max(0.0, begin - needed + t + (n - 1) * std::max(t - c, 0.0));
    free = begin + n * t;
  }
  return stall;
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
      t = exposed_dp_seconds(type, t, overlap_compute, layers_per_stage, traffic);
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

double extra_dp_seconds(const System& s, double weights_gb, I group, I fast, const DataParallelTraffic& traffic) {
  if (weights_gb <= 0 || group <= 1) return 0;
  const double gather = collective_seconds(s, CommType::AllGather, weights_gb, group, fast, traffic.stride);
  const double reduce = collective_seconds(s, CommType::ReduceScatter, weights_gb, group, fast, traffic.stride);
  if (traffic.gather_repeats == 1 && traffic.reduce_repeats == 1) [[likely]] return gather + reduce;
  // the runtime's cadence: FSDP and ZeRO-3 gather and reduce the end stages' layers every micro-batch
  return gather * D(traffic.gather_repeats) + reduce * D(traffic.reduce_repeats);
}

double embedding_group_seconds(const System& s, double gradient_gb, I pp, I nv_pp, I stage_stride) {
  if (gradient_gb <= 0) return 0;
  const I fast = nv_pp == pp ? 2 : 1;
  const I apart = (pp - 1) * stage_stride;  // domains between the first stage and the last
  return collective_seconds(s, CommType::ReduceScatter, gradient_gb, 2, fast, apart) +
         collective_seconds(s, CommType::AllGather, gradient_gb, 2, fast, apart);
}

}  // namespace perfsweep
