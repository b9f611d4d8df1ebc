#include "model/plan.hpp"

#include "core/error.hpp"

namespace perfsweep {

const StrategyPlan& plan_of(Strategy strategy) {
  static constexpr StrategyPlan kPlans[] = {
      {Strategy::OneD, "1d", "tp", "nv_tp", false, false, false, false},
      {Strategy::TwoD, "2d", "tp1", "nv_tp1", true, true, true, false},
      {Strategy::TwoDSeqp, "2d-seqp", "tp1", "nv_tp1", true, false, false, true},
  };
  return kPlans[static_cast<std::size_t>(strategy)];
}

StageBlocks nanotron_stage_blocks(const Transformer& m, std::int64_t pp) {
  StageBlocks b;
  if (pp < 2) {
    b.first = b.middle = b.last = m.depth;
    return b;
  }
  const double e = static_cast<double>(m.e), f = static_cast<double>(m.f);
  const double block = 4 * e * e + 3 * f * e;
  const double total = block * static_cast<double>(m.depth) + static_cast<double>(m.vocab_size) * e;
  const auto record = [&](std::int64_t stage, std::int64_t blocks) {
    if (stage == 0) {
      b.first = blocks;
    } else if (stage == pp - 1) {
      b.last = blocks;
    } else if (blocks > b.middle) {
      b.middle = blocks;
      b.middle_index = stage;
    }
  };
  std::int64_t stage = 0, blocks = 0;
  double cumulative = 0;
  for (std::int64_t i = 0; i < m.depth; ++i) {
    ++blocks;
    cumulative += block;
    if (cumulative > total * static_cast<double>(stage + 1) / static_cast<double>(pp) && stage + 1 < pp) {
      record(stage, blocks);
      ++stage;
      blocks = 0;
    }
  }
  record(stage, blocks);
  for (std::int64_t k = stage + 1; k < pp; ++k) record(k, 0);  // stages the blocks did not reach
  if (pp == 2) b.middle = b.first;                                // no middle stage
  return b;
}

const char* recompute_name(Recompute r) {
  switch (r) {
    case Recompute::None: return "none";
    case Recompute::Selective: return "selective";
    case Recompute::Full: return "full";
  }
  return "none";
}

const char* param_layout_name(ParamLayout p) {
  switch (p) {
    case ParamLayout::Reference: return "reference";
    case ParamLayout::Megatron: return "megatron";
    case ParamLayout::Amp: return "amp";
  }
  return "reference";
}

Recompute parse_recompute(const std::string& text, const std::string& flag) {
  for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full}) {
    if (text == recompute_name(r)) return r;
  }
  throw InputError(flag + " must be none, selective or full, got '" + text + "'");
}

ParamLayout parse_param_layout(const std::string& text, const std::string& flag) {
  for (ParamLayout p : {ParamLayout::Reference, ParamLayout::Megatron, ParamLayout::Amp}) {
    if (text == param_layout_name(p)) return p;
  }
  throw InputError(flag + " must be reference, megatron or amp, got '" + text + "'");
}

Precision parse_precision(const std::string& text, const std::string& flag) {
  for (Precision p : {Precision::Bf16, Precision::Fp8}) {
    if (text == kPrecisionNames[static_cast<std::size_t>(p)]) return p;
  }
  throw InputError(flag + " must be bf16 or fp8, got '" + text + "'");
}

namespace {
// The enum value whose name (in `names`, in the enum's order) is `text`; InputError naming the
// flag and every name otherwise ("must be p2p or all-gather, got 'x'").
template <typename E, std::size_t N>
E parse_named(const char* const (&names)[N], const std::string& text, const std::string& flag) {
  for (std::size_t i = 0; i < N; ++i) {
    if (text == names[i]) return static_cast<E>(i);
  }
  std::string allowed;
  for (std::size_t i = 0; i < N; ++i) {
    allowed += i == 0 ? "" : (i + 1 == N ? " or " : ", ");
    allowed += names[i];
  }
  throw InputError(flag + " must be " + allowed + ", got '" + text + "'");
}
}  // namespace

PipelineSchedule parse_schedule(const std::string& text, const std::string& flag) {
  return parse_named<PipelineSchedule>(kScheduleNames, text, flag);
}

CpComm parse_cp_comm(const std::string& text, const std::string& flag) {
  return parse_named<CpComm>(kCpCommNames, text, flag);
}

Offload parse_offload(const std::string& text, const std::string& flag) {
  return parse_named<Offload>(kOffloadNames, text, flag);
}

std::string config_key_names(Strategy strategy, KeyKind kind) {
  std::string out;
  const StrategyPlan& plan = plan_of(strategy);
  for (const ConfigKey& k : kConfigKeys) {
    if (k.kind != kind || !k.applies(plan)) continue;
    if (!out.empty()) out += ',';
    out += k.name;
  }
  return out;
}

std::vector<Execution> execution_combinations(const ExecutionChoices& c, const Execution& base) {
  std::vector<Execution> out{base};
  // Each option multiplies the combinations so far by its values: the first one expanded is
  // the outermost of the order.
  auto expand = [&out](const auto& values, auto member) {
    std::vector<Execution> next;
    next.reserve(out.size() * values.size());
    for (const Execution& x : out) {
      for (const auto& v : values) {
        next.push_back(x);
        next.back().*member = v;
      }
    }
    out = std::move(next);
  };
  expand(c.recompute, &Execution::recompute);
  expand(c.sequence_parallel, &Execution::sequence_parallel);
  expand(c.interleave, &Execution::interleave);
  expand(c.zero, &Execution::zero);
  expand(c.params, &Execution::params);
  expand(c.ep, &Execution::ep);
  expand(c.precision, &Execution::precision);
  expand(c.schedule, &Execution::schedule);
  expand(c.cp_comm, &Execution::cp_comm);
  expand(c.offload, &Execution::offload);
  return out;
}

std::vector<std::pair<const char*, std::string>> execution_values(const Execution& x) {
  return {{"recompute", recompute_name(x.recompute)},
          {"sp", x.sequence_parallel ? "on" : "off"},
          {"zero", std::to_string(x.zero)},
          {"interleave", std::to_string(x.interleave)},
          {"layout", param_layout_name(x.params)},
          {"ep", std::to_string(x.ep)},
          {"precision", kPrecisionNames[static_cast<std::size_t>(x.precision)]},
          {"schedule", kScheduleNames[static_cast<std::size_t>(x.schedule)]},
          {"first_stage_blocks", std::to_string(x.first_stage_blocks)},
          {"last_stage_blocks", std::to_string(x.last_stage_blocks)},
          {"cp_comm", kCpCommNames[static_cast<std::size_t>(x.cp_comm)]},
          {"offload", kOffloadNames[static_cast<std::size_t>(x.offload)]}};
}

std::string execution_text(const Execution& x) {
  const bool stages = x.first_stage_blocks != 0 || x.last_stage_blocks != 0;
  std::string out;
  for (const auto& [key, value] : execution_values(x)) {
    const std::string_view k = key;
    if (k == "precision" && x.precision == Precision::Bf16) continue;
    if (k == "schedule" && x.schedule == PipelineSchedule::OneFOneB) continue;
    if (k == "cp_comm" && x.cp_comm == CpComm::P2P) continue;
    if (k == "offload" && x.offload == Offload::None) continue;
    if (k.ends_with("_stage_blocks") && !stages) continue;
    if (!out.empty()) out += ' ';
    out += k;
    out += '=';
    out += value;
  }
  return out;
}

}  // namespace perfsweep
