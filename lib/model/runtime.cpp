#include "model/runtime.hpp"

#include <cstdio>
#include <string_view>
#include <utility>

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

Execution runtime_defaults(const Runtime& rt) {
  Execution x;
  x.rank_order = rt.rank_order;
  x.moe_dispatcher = rt.moe_dispatcher;
  x.fp8_params = rt.mechanisms.fp8.weight_gather;
  x.tp_comm_overlap = rt.tp_comm_overlap > 0 && rt.tp_comm_overlap_default;
  return x;
}

void fill_runtime_defaults(const Runtime& rt, ExecutionChoices& choices) {
  const Execution given = runtime_defaults(rt);
  for (const ExecutionOption& o : kExecutionOptions) {
    if (!o.runtime_default || o.count(choices) != 0) continue;
    const std::int64_t code = o.get(given);
    o.assign(choices, std::span<const std::int64_t>(&code, 1));
  }
}

StateBytes runtime_state_bytes(const Runtime& rt, const Execution& exec) {
  return rt.has_states ? rt.states : state_bytes(exec.params);
}

std::string param_layout_text(const Runtime& rt, ParamLayout chosen) {
  if (!rt.has_states) return execution_option_detail::kParamLayoutNames[static_cast<std::size_t>(chosen)];
  std::string out = rt.name + " (B/parameter:";
  const StateBytes& b = rt.states;
  const std::pair<const char*, double> parts[] = {
      {"weights", b.weights},   {"gradients", b.gradients}, {"accumulator", b.accumulator},
      {"master", b.master},     {"moments", b.moments},     {"casts", b.casts},
      {"zero gradient shard", b.zero_gradient_shard},       {"zero gather buffer", b.zero_gather_buffer}};
  bool first = true;
  for (const auto& [what, bytes] : parts) {
    const bool always = std::string_view(what) == "weights" || std::string_view(what) == "gradients";
    if (bytes == 0 && !always) continue;
    char value[32];
    std::snprintf(value, sizeof value, "%g", bytes);
    out += first ? " " : ", ";
    out += what;
    out += ' ';
    out += value;
    first = false;
  }
  out += ')';
  return out;
}

}  // namespace perfsweep

