#include "config/execution_flags.hpp"

#include <algorithm>
#include <charconv>

#include "core/csv.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"

namespace perfsweep {
namespace {

std::int64_t integer(const std::string& item, const std::string& flag, std::int64_t lo, std::int64_t hi) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
  if (ec != std::errc() || end != item.data() + item.size() || v < lo || v > hi) {
    throw InputError(flag + " must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got '" +
                     item + "'");
  }
  return v;
}

bool on_off(const std::string& item, const std::string& flag) {
  if (item == "on") return true;
  if (item == "off") return false;
  throw InputError(flag + " must be on or off, got '" + item + "'");
}

}  // namespace

ExecutionChoices parse_execution_choices(const ExecutionFlags& f) {
  ExecutionChoices c;
  c.recompute.clear();
  for (const std::string& v : split_flag_list(f.recompute, "--recompute")) c.recompute.push_back(parse_recompute(v, "--recompute"));
  c.sequence_parallel.clear();
  for (const std::string& v : split_flag_list(f.sp, "--sp")) c.sequence_parallel.push_back(on_off(v, "--sp"));
  c.zero.clear();
  for (const std::string& v : split_flag_list(f.zero, "--zero")) c.zero.push_back(integer(v, "--zero", 0, 3));
  c.interleave.clear();
  for (const std::string& v : split_flag_list(f.interleave, "--interleave")) {
    c.interleave.push_back(integer(v, "--interleave", 1, 1024));
  }
  c.params.clear();
  for (const std::string& v : split_flag_list(f.layout, "--layout")) c.params.push_back(parse_param_layout(v, "--layout"));
  c.ep.clear();
  for (const std::string& v : split_flag_list(f.ep, "--ep")) c.ep.push_back(integer(v, "--ep", 1, 1 << 20));
  c.precision.clear();
  for (const std::string& v : split_flag_list(f.precision, "--precision")) c.precision.push_back(parse_precision(v, "--precision"));
  c.schedule.clear();
  for (const std::string& v : split_flag_list(f.schedule, "--schedule")) c.schedule.push_back(parse_schedule(v, "--schedule"));
  c.cp.clear();
  for (const std::string& v : split_flag_list(f.cp, "--cp")) c.cp.push_back(integer(v, "--cp", 1, kMaxGpuCount));
  c.cp_comm.clear();
  for (const std::string& v : split_flag_list(f.cp_comm, "--cp-comm")) c.cp_comm.push_back(parse_cp_comm(v, "--cp-comm"));
  c.offload.clear();
  for (const std::string& v : split_flag_list(f.offload, "--offload")) c.offload.push_back(parse_offload(v, "--offload"));
  return c;
}

void check_execution_for_model(const ExecutionChoices& c, const Transformer& m) {
  for (std::int64_t ep : c.ep) {
    if (ep == 1) continue;
    if (!m.is_moe()) throw InputError("--ep " + std::to_string(ep) + ": model '" + m.name + "' has no experts");
    if (m.moe.experts % ep) {
      throw InputError("--ep " + std::to_string(ep) + " does not divide the " + std::to_string(m.moe.experts) +
                       " experts of model '" + m.name + "'");
    }
  }
  for (std::int64_t cp : c.cp) {
    if (cp > 1 && !cp_splits_sequence(m.l, cp)) {
      throw InputError("--cp " + std::to_string(cp) + ": seq_len " + std::to_string(m.l) + " of model '" + m.name +
                       "' does not split into 2 cp = " + std::to_string(2 * cp) +
                       " chunks (each rank holds two chunks of the load-balanced split)");
    }
  }
}

Execution parse_execution(const ExecutionFlags& f) {
  const ExecutionChoices c = parse_execution_choices(f);
  auto one = [](std::size_t n, const char* flag, const std::string& text) {
    if (n != 1) throw InputError(std::string(flag) + " takes one value here, got '" + text + "'");
  };
  one(c.recompute.size(), "--recompute", f.recompute);
  one(c.sequence_parallel.size(), "--sp", f.sp);
  one(c.zero.size(), "--zero", f.zero);
  one(c.interleave.size(), "--interleave", f.interleave);
  one(c.params.size(), "--layout", f.layout);
  one(c.ep.size(), "--ep", f.ep);
  one(c.precision.size(), "--precision", f.precision);
  one(c.schedule.size(), "--schedule", f.schedule);
  one(c.cp_comm.size(), "--cp-comm", f.cp_comm);
  one(c.offload.size(), "--offload", f.offload);
  Execution x = parse_stage_blocks(f);
  x.recompute = c.recompute.front();
  x.sequence_parallel = c.sequence_parallel.front();
  x.zero = c.zero.front();
  x.interleave = c.interleave.front();
  x.params = c.params.front();
  x.ep = c.ep.front();
  x.precision = c.precision.front();
  x.schedule = c.schedule.front();
  x.cp_comm = c.cp_comm.front();
  x.offload = c.offload.front();
  return x;
}

std::int64_t parse_context_parallel(const ExecutionFlags& f) {
  const ExecutionChoices c = parse_execution_choices(f);
  if (c.cp.size() != 1) throw InputError("--cp takes one value here, got '" + f.cp + "'");
  return c.cp.front();
}

Execution parse_stage_blocks(const ExecutionFlags& f) {
  Execution x;
  if (!balances_stages(f)) {
    x.first_stage_blocks = integer(f.first_stage_blocks, "--first-stage-blocks", 0, kMaxGpuCount);
    x.last_stage_blocks = integer(f.last_stage_blocks, "--last-stage-blocks", 0, kMaxGpuCount);
  }
  return x;
}

std::vector<Execution> parse_stage_block_choices(const ExecutionFlags& f) {
  if (balances_stages(f)) return {Execution{}};
  const auto values = [](const std::string& text, const char* flag) {
    std::vector<std::int64_t> out;
    for (const std::string& v : split_flag_list(text, flag)) {
      const std::int64_t n = integer(v, flag, 0, kMaxGpuCount);
      if (std::find(out.begin(), out.end(), n) != out.end()) {
        throw InputError(std::string(flag) + " lists " + v + " twice in '" + text + "'");
      }
      out.push_back(n);
    }
    return out;
  };
  std::vector<Execution> out;
  for (const std::int64_t first : values(f.first_stage_blocks, "--first-stage-blocks")) {
    for (const std::int64_t last : values(f.last_stage_blocks, "--last-stage-blocks")) {
      Execution x;
      x.first_stage_blocks = first;
      x.last_stage_blocks = last;
      out.push_back(x);
    }
  }
  return out;
}

std::string execution_arguments(const Execution& x) {
  return std::string("--recompute ") + recompute_name(x.recompute) + " --sp " + (x.sequence_parallel ? "on" : "off") +
         " --zero " + std::to_string(x.zero) + " --interleave " + std::to_string(x.interleave) + " --layout " +
         param_layout_name(x.params) + " --ep " + std::to_string(x.ep) +
         (x.first_stage_blocks > 0 ? " --first-stage-blocks " + std::to_string(x.first_stage_blocks) : "") +
         (x.last_stage_blocks > 0 ? " --last-stage-blocks " + std::to_string(x.last_stage_blocks) : "") +
         (x.precision != Precision::Bf16 ? " --precision fp8" : "") +
         (x.schedule != PipelineSchedule::OneFOneB
              ? std::string(" --schedule ") + kScheduleNames[static_cast<std::size_t>(x.schedule)]
              : std::string()) +
         (x.cp_comm != CpComm::P2P ? std::string(" --cp-comm ") + kCpCommNames[static_cast<std::size_t>(x.cp_comm)]
                                   : std::string()) +
         (x.offload != Offload::None ? std::string(" --offload ") + kOffloadNames[static_cast<std::size_t>(x.offload)]
                                     : std::string());
}

bool balances_stages(const ExecutionFlags& f) {
  const bool first = f.first_stage_blocks == "auto", last = f.last_stage_blocks == "auto";
  const std::string& other = first ? f.last_stage_blocks : f.first_stage_blocks;
  if (first != last && other != "0") {
    throw InputError(std::string(first ? "--first-stage-blocks" : "--last-stage-blocks") +
                     " auto chooses both end stages' blocks, so " +
                     (first ? "--last-stage-blocks " : "--first-stage-blocks ") + other + " cannot be given with it");
  }
  return first || last;
}

std::string execution_choices_text(const ExecutionChoices& c) {
  std::string out;
  auto list = [&out](const char* key, const auto& values, auto name) {
    if (!out.empty()) out += ' ';
    out += key;
    out += '=';
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (i) out += ',';
      out += name(values[i]);
    }
  };
  list("recompute", c.recompute, [](Recompute r) { return std::string(recompute_name(r)); });
  list("sp", c.sequence_parallel, [](bool v) { return std::string(v ? "on" : "off"); });
  list("zero", c.zero, [](std::int64_t v) { return std::to_string(v); });
  list("interleave", c.interleave, [](std::int64_t v) { return std::to_string(v); });
  list("layout", c.params, [](ParamLayout p) { return std::string(param_layout_name(p)); });
  // ep=1 alone (every dense model) is left out, so the text of a search without experts stays as
  // it was
  if (c.ep != std::vector<std::int64_t>{1}) list("ep", c.ep, [](std::int64_t v) { return std::to_string(v); });
  if (c.precision != std::vector<Precision>{Precision::Bf16}) {
    list("precision", c.precision, [](Precision p) { return std::string(kPrecisionNames[static_cast<std::size_t>(p)]); });
  }
  if (c.schedule != std::vector<PipelineSchedule>{PipelineSchedule::OneFOneB}) {
    list("schedule", c.schedule,
         [](PipelineSchedule p) { return std::string(kScheduleNames[static_cast<std::size_t>(p)]); });
  }
  // cp=1 alone (no context parallelism) is left out, as ep=1 is
  if (c.cp != std::vector<std::int64_t>{1} || c.cp_comm != std::vector<CpComm>{CpComm::P2P}) {
    list("cp", c.cp, [](std::int64_t v) { return std::to_string(v); });
    list("cp_comm", c.cp_comm, [](CpComm k) { return std::string(kCpCommNames[static_cast<std::size_t>(k)]); });
  }
  if (c.offload != std::vector<Offload>{Offload::None}) {
    list("offload", c.offload, [](Offload k) { return std::string(kOffloadNames[static_cast<std::size_t>(k)]); });
  }
  return out;
}

}  // namespace perfsweep
