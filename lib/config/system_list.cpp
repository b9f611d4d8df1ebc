#include "config/system_list.hpp"

#include <yaml-cpp/yaml.h>

#include "config/yaml_file.hpp"

#include <charconv>

#include "core/error.hpp"
#include "core/limits.hpp"

namespace perfsweep {

namespace {
std::int64_t positive_integer(const std::string& text, const std::string& where) {
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || v < 1) {
    throw InputError(where + " must be a positive integer, got '" + text + "'");
  }
  return v;
}

std::int64_t nvlink_domain(const std::string& text, const std::string& where) {
  const std::int64_t v = positive_integer(text, where);
  if (v > kMaxNvlinkDomain) {
    throw InputError(where + " must be at most " + std::to_string(kMaxNvlinkDomain) + ", got " + text);
  }
  return v;
}

}  // namespace

namespace {

std::vector<SystemChoice> read_system_list(const std::filesystem::path& file) {
  const std::string f = file.string();
  const YAML::Node root = load_yaml_file(file);
  if (!root.IsMap()) throw InputError(f + ": expected a mapping with key 'systems'");
  for (const auto& kv : root) {
    const std::string k = yaml_scalar(kv.first, f + ": a key", "a plain name");
    if (k != "systems" && k != "description") throw InputError(f + ": unknown key '" + k + "'");
  }
  const YAML::Node list = root["systems"];
  if (!list || !list.IsSequence() || list.size() == 0) throw InputError(f + ": 'systems' must be a non-empty list");
  std::vector<SystemChoice> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YAML::Node e = list[i];
    const std::string where = f + ": systems[" + std::to_string(i) + "]";
    if (!e.IsMap()) throw InputError(where + ": expected {system: NAME, nvs: [..]}");
    for (const auto& kv : e) {
      const std::string k = yaml_scalar(kv.first, where + ": a key", "a plain name");
      if (k != "system" && k != "nvs") throw InputError(where + ": unknown key '" + k + "'");
    }
    if (!e["system"]) throw InputError(where + ": missing key 'system'");
    if (!e["nvs"]) throw InputError(where + ": missing key 'nvs'");
    SystemChoice c;
    c.system = yaml_scalar(e["system"], where + ".system", "a system name or path");
    const YAML::Node nvs = e["nvs"];
    // a number as written: "8" in quotes is text
    const auto count = [&](const YAML::Node& v) {
      if (yaml_is_text(v)) throw InputError(where + ".nvs must be a positive integer, got text " + yaml_shown(v));
      return nvlink_domain(yaml_scalar(v, where + ".nvs", "a positive integer"), where + ".nvs");
    };
    if (nvs.IsScalar()) {
      c.nvs.push_back(count(nvs));
    } else if (nvs.IsSequence() && nvs.size() > 0) {
      for (const YAML::Node& v : nvs) c.nvs.push_back(count(v));
    } else {
      throw InputError(where + ".nvs must be a positive integer or a list of them");
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

std::vector<SystemChoice> load_system_list(const std::filesystem::path& file) {
  return with_yaml_errors(file.string(), [&] { return read_system_list(file); });
}

std::vector<std::int64_t> parse_gpu_counts(const std::string& text, const std::string& flag, std::int64_t max_value) {
  std::vector<std::int64_t> out;
  auto bounded = [&](const std::string& item, const std::string& where) {
    const std::int64_t v = positive_integer(item, where);
    if (v > max_value) {
      throw InputError(where + " must be at most " + std::to_string(max_value) + ", got " + std::to_string(v));
    }
    return v;
  };
  const auto colon = text.find(':');
  if (colon != std::string::npos) {
    const std::int64_t lo = bounded(text.substr(0, colon), flag + " (range start)");
    const std::int64_t hi = bounded(text.substr(colon + 1), flag + " (range end)");
    if (lo & (lo - 1) || hi & (hi - 1) || lo > hi) {
      throw InputError(flag + ": a range must run between powers of two, low to high, got '" + text + "'");
    }
    // hi <= max_value < 2^62, so doubling up to hi cannot overflow.
    for (std::int64_t n = lo;; n *= 2) {
      out.push_back(n);
      if (n >= hi) break;
    }
    return out;
  }
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const auto comma = text.find(',', pos);
    const std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    out.push_back(bounded(item, flag));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

}  // namespace perfsweep
