#include "model/runtime.hpp"

namespace perfsweep {

StateBytes state_bytes(ParamLayout layout) {
  StateBytes b;
  switch (layout) {
    case ParamLayout::Reference:  // fp16 weights and gradients, optimizer states 6x the weights
      b.gradients = 2;
      break;
    case ParamLayout::Megatron:  // bf16 weights, fp32 gradient buffer, fp32 master and moments
      b.gradients = 4;
      break;
    case ParamLayout::Amp:  // fp32 weights and gradients, two fp32 moments, bf16 casts
      b.weights = 4;
      b.gradients = 4;
      b.master = 0;
      b.casts = 2;
      break;
  }
  return b;
}

const Runtime& reference_runtime() {
  static const Runtime r;
  return r;
}

void apply_runtime(const Runtime& rt, Execution& exec, AttentionMode& attention) {
  exec.p2p_scatter_gather = exec.p2p_scatter_gather || rt.p2p_scatter_gather;
  exec.sp_backward_gather = exec.sp_backward_gather || rt.sp_backward_gather;
  exec.fused_elementwise = exec.fused_elementwise || rt.fused_elementwise;
  exec.dp_after_backward = exec.dp_after_backward || rt.dp_after_backward;
  if (!rt.flash_attention) attention.flash = false;
}

StateBytes runtime_state_bytes(const Runtime& rt, const Execution& exec) {
  return rt.has_states ? rt.states : state_bytes(exec.params);
}

const char* cadence_name(Cadence c) { return c == Cadence::PerStep ? "step" : "micro_batch"; }
const char* activation_accounting_name(ActivationAccounting a) {
  return a == ActivationAccounting::Reference ? "reference" : "megatron";
}
const char* stage_partition_name(StagePartition p) {
  switch (p) {
    case StagePartition::Even: return "even";
    case StagePartition::Balanced: return "balanced";
    case StagePartition::Nanotron: return "nanotron";
  }
  return "?";
}

}  // namespace perfsweep

#include <cmath>

namespace perfsweep {

double NetworkScaling::bus_GBps(std::int64_t job_nodes) const {
  const std::size_t n = nodes.size();
  if (n == 0) return std::nan("");
  if (n == 1 || job_nodes <= nodes.front()) return allreduce_bus_GBps.front();
  std::size_t hi = 1;
  while (hi + 1 < n && nodes[hi] < job_nodes) ++hi;
  const double x0 = std::log(static_cast<double>(nodes[hi - 1])), x1 = std::log(static_cast<double>(nodes[hi]));
  const double y0 = std::log(allreduce_bus_GBps[hi - 1]), y1 = std::log(allreduce_bus_GBps[hi]);
  return std::exp(y0 + (y1 - y0) * (std::log(static_cast<double>(job_nodes)) - x0) / (x1 - x0));
}

System at_scale(const System& s, std::int64_t n_gpus) {
  System out = s;
  const std::int64_t domain = s.nvlink_size > 0 ? s.nvlink_size : 1;
  const std::int64_t job_nodes = n_gpus / domain;
  if (s.network_scaling && !s.network_scaling->nodes.empty() && job_nodes > 1 && s.ib_eff > 0) {
    out.ib_bandwidth = s.network_scaling->bus_GBps(job_nodes) / static_cast<double>(domain) / s.ib_eff;
  }
  return out;
}

}  // namespace perfsweep
