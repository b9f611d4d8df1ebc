#include "model/execution_options.hpp"

#include <algorithm>
#include <charconv>
#include <string_view>

#include "core/error.hpp"

namespace perfsweep {

const ExecutionOption* find_execution_option(std::string_view key) {
  for (const ExecutionOption& o : kExecutionOptions) {
    if (key == o.key) return &o;
  }
  return nullptr;
}

std::string option_value_name(const ExecutionOption& o, std::int64_t code) {
  switch (o.values) {
    case OptionValues::OnOff: return code != 0 ? "on" : "off";
    case OptionValues::Named:
      if (code >= 0 && static_cast<std::size_t>(code) < o.names.size()) return o.names[static_cast<std::size_t>(code)];
      break;
    case OptionValues::Integer: break;
  }
  return std::to_string(code);
}

bool option_code_possible(const ExecutionOption& o, std::int64_t code) {
  switch (o.values) {
    case OptionValues::Integer: return code >= o.lo && code <= o.hi;
    case OptionValues::OnOff: return code == 0 || code == 1;
    case OptionValues::Named: return code >= 0 && static_cast<std::size_t>(code) < o.names.size();
  }
  return false;
}

std::int64_t parse_option_value(const ExecutionOption& o, const std::string& text, const std::string& flag) {
  switch (o.values) {
    case OptionValues::OnOff:
      if (text == "on") return 1;
      if (text == "off") return 0;
      throw InputError(flag + " must be on or off, got '" + text + "'");
    case OptionValues::Named: {
      std::string allowed;
      for (std::size_t i = 0; i < o.accepted; ++i) {
        if (text == o.names[i]) return static_cast<std::int64_t>(i);
        allowed += i == 0 ? "" : (i + 1 == o.accepted ? " or " : ", ");
        allowed += o.names[i];
      }
      throw InputError(flag + " must be " + allowed + ", got '" + text + "'");
    }
    case OptionValues::Integer: break;
  }
  return parse_integer_value(text, flag, o.lo, o.hi);
}

std::int64_t parse_integer_value(const std::string& text, const std::string& flag, std::int64_t lo, std::int64_t hi) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi) {
    throw InputError(flag + " must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                     ", got '" + text + "'");
  }
  return v;
}

ExecutionChoices choices_of(const Execution& x, std::int64_t cp) {
  ExecutionChoices c;
  for (const ExecutionOption& o : kExecutionOptions) {
    if (!o.searched()) continue;
    const std::int64_t code = o.get(x);
    o.assign(c, std::span<const std::int64_t>(&code, 1));
  }
  c.cp = {cp};
  return c;
}

bool listed_in(const ExecutionChoices& c, const Layout& layout) {
  const Execution& x = layout.exec;
  for (const ExecutionOption& o : kExecutionOptions) {
    if (!o.searched()) continue;
    const std::int64_t code = o.get(x);
    const std::size_t n = o.count(c);
    if (n == 0) return false;
    if (o.applies != nullptr && !o.applies(layout)) {
      if (code != o.at(c, 0)) return false;
      continue;
    }
    bool found = false;
    for (std::size_t i = 0; i < n && !found; ++i) found = o.at(c, i) == code;
    if (!found) return false;
  }
  return std::find(c.cp.begin(), c.cp.end(), layout.tensor.cp) != c.cp.end();
}

bool option_shown(const ExecutionOption& o, const Execution& x) {
  switch (o.shown) {
    case OptionShown::Always: return true;
    case OptionShown::NotDefault: return o.get(x) != o.get(Execution{});
    case OptionShown::WithStages: return x.first_stage_blocks != 0 || x.last_stage_blocks != 0;
  }
  return true;
}

}  // namespace perfsweep
