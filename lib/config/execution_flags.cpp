#include "config/execution_flags.hpp"

#include <algorithm>

#include "core/csv.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"

namespace perfsweep {
ExecutionFlags::ExecutionFlags() {
  const Execution defaults;
  for (std::size_t i = 0; i < kExecutionOptions.size(); ++i) {
    const ExecutionOption& o = kExecutionOptions[i];
    if (o.searched() && !o.runtime_default) lists[i] = option_value_name(o, o.get(defaults));
  }
}

std::string* ExecutionFlags::list(std::string_view flag) {
  for (std::size_t i = 0; i < kExecutionOptions.size(); ++i) {
    if (kExecutionOptions[i].searched() && flag == kExecutionOptions[i].flag) return &lists[i];
  }
  return nullptr;
}

ExecutionChoices parse_execution_choices(const ExecutionFlags& f) {
  ExecutionChoices c;
  std::vector<std::int64_t> codes;
  for (std::size_t i = 0; i < kExecutionOptions.size(); ++i) {
    const ExecutionOption& o = kExecutionOptions[i];
    if (!o.searched()) continue;
    codes.clear();
    // not given: the runtime's (fill_runtime_defaults fills the empty list)
    if (o.runtime_default && f.lists[i].empty()) {
      o.assign(c, codes);
      continue;
    }
    for (const std::string& v : split_flag_list(f.lists[i], o.flag)) codes.push_back(parse_option_value(o, v, o.flag));
    o.assign(c, codes);
  }
  c.cp.clear();
  for (const std::string& v : split_flag_list(f.cp, "--cp")) c.cp.push_back(parse_integer_value(v, "--cp", 1, kMaxGpuCount));
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
  for (std::int64_t etp : c.etp) {
    if (etp > 0 && !m.is_moe()) {
      throw InputError("--etp " + std::to_string(etp) + ": model '" + m.name + "' has no experts");
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

Execution parse_execution(const ExecutionFlags& f, const Runtime& rt) {
  ExecutionChoices c = parse_execution_choices(f);
  fill_runtime_defaults(rt, c);
  Execution x = parse_stage_blocks(f);
  for (std::size_t i = 0; i < kExecutionOptions.size(); ++i) {
    const ExecutionOption& o = kExecutionOptions[i];
    if (!o.searched()) continue;
    if (o.count(c) != 1) throw InputError(std::string(o.flag) + " takes one value here, got '" + f.lists[i] + "'");
    o.set(x, o.at(c, 0));
  }
  return x;
}

std::int64_t parse_context_parallel(const ExecutionFlags& f) {
  const ExecutionChoices c = parse_execution_choices(f);
  if (c.cp.size() != 1) throw InputError("--cp takes one value here, got '" + f.cp + "'");
  return c.cp.front();
}

bool stage_blocks_given(const ExecutionFlags& f) { return !f.first_stage_blocks.empty() || !f.last_stage_blocks.empty(); }

Execution parse_stage_blocks(const ExecutionFlags& f) {
  Execution x;
  if (!balances_stages(f)) {
    if (!f.first_stage_blocks.empty()) {
      x.first_stage_blocks = parse_integer_value(f.first_stage_blocks, "--first-stage-blocks", 0, kMaxGpuCount);
    }
    if (!f.last_stage_blocks.empty()) {
      x.last_stage_blocks = parse_integer_value(f.last_stage_blocks, "--last-stage-blocks", 0, kMaxGpuCount);
    }
  }
  return x;
}

std::vector<Execution> parse_stage_block_choices(const ExecutionFlags& f) {
  if (balances_stages(f)) return {Execution{}};
  const auto values = [](const std::string& text, const char* flag) {
    std::vector<std::int64_t> out;
    if (text.empty()) return std::vector<std::int64_t>{0};  // not given: an even share
    for (const std::string& v : split_flag_list(text, flag)) {
      const std::int64_t n = parse_integer_value(v, flag, 0, kMaxGpuCount);
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
  std::string out;
  for (const ExecutionOption& o : kExecutionOptions) {
    const std::int64_t code = o.get(x);
    // the stages' blocks each where given; the others where texts show them
    if (o.searched() ? !option_shown(o, x) : code == 0) continue;
    // a value only a runtime sets (mxfp8) as the flag's value it comes from (fp8)
    const std::int64_t flag_code =
        o.values == OptionValues::Named ? std::min<std::int64_t>(code, static_cast<std::int64_t>(o.accepted) - 1) : code;
    if (!out.empty()) out += ' ';
    out += o.flag;
    out += ' ';
    out += option_value_name(o, flag_code);
  }
  return out;
}

bool balances_stages(const ExecutionFlags& f) {
  const bool first = f.first_stage_blocks == "auto", last = f.last_stage_blocks == "auto";
  const std::string& other = first ? f.last_stage_blocks : f.first_stage_blocks;
  if (first != last && !other.empty() && other != "0") {
    throw InputError(std::string(first ? "--first-stage-blocks" : "--last-stage-blocks") +
                     " auto chooses both end stages' blocks, so " +
                     (first ? "--last-stage-blocks " : "--first-stage-blocks ") + other + " cannot be given with it");
  }
  return first || last;
}

std::string execution_choices_text(const ExecutionChoices& c) {
  std::string out;
  const auto list = [&out](const char* key, std::size_t n, auto name) {
    if (!out.empty()) out += ' ';
    out += key;
    out += '=';
    for (std::size_t i = 0; i < n; ++i) {
      if (i) out += ',';
      out += name(i);
    }
  };
  // an option left at its default alone is left out unless texts always show it
  const Execution defaults;
  for (const ExecutionOption& o : kExecutionOptions) {
    if (!o.searched()) continue;
    const std::size_t n = o.count(c);
    if (n == 0) continue;  // the runtime's (runtime_default, not given)
    if (o.shown != OptionShown::Always && n == 1 && o.at(c, 0) == o.get(defaults)) continue;
    list(o.key, n, [&](std::size_t i) { return option_value_name(o, o.at(c, i)); });
  }
  // cp=1 alone (no context parallelism) is left out
  if (c.cp != std::vector<std::int64_t>{1}) list("cp", c.cp.size(), [&](std::size_t i) { return std::to_string(c.cp[i]); });
  return out;
}

}  // namespace perfsweep
