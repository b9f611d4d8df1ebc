#include "config/inputs.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string_view>
#include <system_error>
#include <vector>

#include "config/calibration_file.hpp"
#include "config/hf_config.hpp"
#include "config/kernels_file.hpp"
#include "config/model_checks.hpp"
#include "config/yaml_file.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/human.hpp"
#include "core/limits.hpp"
#include "core/text.hpp"
#include "core/units.hpp"

#ifndef PERFSWEEP_SOURCE_DIR
#error "PERFSWEEP_SOURCE_DIR must be defined by CMake (the project root)"
#endif

namespace perfsweep {

namespace fs = std::filesystem;

namespace {

// One top-level mapping of one file. Keys are checked against an allowed list once, so a typo
// ("embed_dimm") is an error rather than a silently ignored line.
class Mapping {
 public:
  Mapping(const fs::path& file, std::initializer_list<std::string_view> allowed_keys)
      : file_(file.string()), root_(load_yaml_file(file)) {
    if (!root_.IsMap()) throw InputError(file_ + ": expected a mapping of keys to values");
    for (const auto& kv : root_) {
      const std::string& key = kv.first.Scalar();
      if (std::find(allowed_keys.begin(), allowed_keys.end(), key) == allowed_keys.end()) {
        throw InputError(file_ + ": unknown key '" + shown_text(key) + "'");
      }
    }
  }

  const std::string& file() const { return file_; }

  // The key's value, or nothing when the key is absent.
  std::optional<YAML::Node> find(const std::string& key) const {
    for (const auto& kv : root_) {
      if (kv.first.Scalar() == key) return kv.second;
    }
    return std::nullopt;
  }

  YAML::Node require(const std::string& key) const {
    std::optional<YAML::Node> n = find(key);
    if (!n) throw InputError(file_ + ": missing key '" + key + "'");
    return *n;
  }

  // A scalar's text for messages: plain scalars as written, quoted ones (strings) in quotes.
  static std::string shown(const YAML::Node& n) {
    if (n.IsSequence()) return "a list";
    if (n.IsMap()) return "a mapping";
    if (n.IsNull()) return "nothing";
    return n.Tag() == "!" ? quoted_text(n.Scalar(), '"') : shown_text(n.Scalar());
  }

  // The text of a plain (unquoted) scalar, less one leading '+' (which from_chars refuses), or
  // nothing when the node cannot be a number.
  static std::optional<std::string_view> numeric_text(const YAML::Node& n) {
    if (!n.IsScalar() || n.Tag() == "!") return std::nullopt;
    std::string_view s = n.Scalar();
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);
    if (s.empty() || s.front() == '+' || (s.front() == '-' && s.size() != n.Scalar().size())) return std::nullopt;
    return s;
  }

  // Numbers must be plain scalars in full (no quotes, no trailing text) and finite.
  double number(const std::string& key, const YAML::Node& n) const {
    if (const std::optional<std::string_view> s = numeric_text(n)) {
      double v = 0;
      const char* end = s->data() + s->size();
      const auto [ptr, ec] = std::from_chars(s->data(), end, v);
      if (ec == std::errc() && ptr == end && std::isfinite(v)) return v;
    }
    throw InputError(file_ + ": " + key + " must be a finite number, got " + shown(n));
  }

  // A number, or one written with a unit of `units` ("400 Gb/s"), in the units' base; InputError
  // naming the file, the key and the value for a unit not among them.
  double quantity(const std::string& key, const YAML::Node& n, std::span<const UnitFactor> units,
                  bool& unit_given) const {
    unit_given = false;
    if (units.empty() || !n.IsScalar() || n.Tag() == "!") return number(key, n);
    const std::optional<WrittenQuantity> q = split_quantity(n.Scalar());
    if (!q) return number(key, n);
    for (const UnitFactor& u : units) {
      if (q->unit == u.name) {
        unit_given = true;
        return q->number * u.factor;
      }
    }
    throw InputError(file_ + ": " + key + ": unknown unit " + quoted_text(q->unit) + " in " + quoted_text(n.Scalar()) +
                     " (known: " +
                     unit_names(units) + "; a bare number is " + units.front().name + ")");
  }

  std::int64_t positive_integer(const std::string& key, const YAML::Node& n) const {
    if (const std::optional<std::string_view> s = numeric_text(n)) {
      std::int64_t v = 0;
      const char* end = s->data() + s->size();
      const auto [ptr, ec] = std::from_chars(s->data(), end, v, 10);
      if (ec == std::errc() && ptr == end && v > 0) return v;
    }
    throw InputError(file_ + ": " + key + " must be a positive integer, got " + shown(n));
  }

  std::int64_t non_negative_integer(const std::string& key, const YAML::Node& n) const {
    if (const std::optional<std::string_view> s = numeric_text(n)) {
      std::int64_t v = 0;
      const char* end = s->data() + s->size();
      const auto [ptr, ec] = std::from_chars(s->data(), end, v, 10);
      if (ec == std::errc() && ptr == end && v >= 0) return v;
    }
    throw InputError(file_ + ": " + key + " must be a non-negative integer, got " + shown(n));
  }

  // One of `names` (plain scalars), returned as its index.
  std::size_t choice(const std::string& key, const YAML::Node& n, std::initializer_list<std::string_view> names) const {
    if (n.IsScalar()) {
      std::size_t i = 0;
      for (const std::string_view name : names) {
        if (n.Scalar() == name) return i;
        ++i;
      }
    }
    std::string list;
    for (const std::string_view name : names) list += (list.empty() ? "" : " or ") + std::string(name);
    throw InputError(file_ + ": " + key + " must be " + list + ", got " + shown(n));
  }

  bool boolean(const std::string& key, const YAML::Node& n) const {
    if (n.IsScalar() && n.Tag() != "!") {
      const std::string& s = n.Scalar();
      if (s == "true" || s == "True" || s == "TRUE") return true;
      if (s == "false" || s == "False" || s == "FALSE") return false;
    }
    throw InputError(file_ + ": " + key + " must be true or false, got " + shown(n));
  }

  std::string text(const std::string& key, const YAML::Node& n) const {
    if (!n.IsScalar() || n.Scalar().empty()) {
      throw InputError(file_ + ": " + key + " must be a non-empty string, got " + shown(n));
    }
    return n.Scalar();
  }

 private:
  std::string file_;
  YAML::Node root_;
};

// The name a file stands for: its stem, less the reference's "config-" prefix on .json files.
std::string default_name(const fs::path& file) {
  std::string stem = file.stem().string();
  constexpr std::string_view prefix = "config-";
  if (file.extension() == ".json" && stem.size() > prefix.size() && stem.starts_with(prefix)) {
    stem.erase(0, prefix.size());
  }
  return stem;
}

void check_range(const Mapping& m, const SystemKey& k, const YAML::Node& n, double v) {
  if (in_range(k, v)) return;
  throw InputError(m.file() + ": " + k.name + " must be in " + system_key_range(k) + ", got " + Mapping::shown(n));
}

std::string singular(std::string_view kind) {
  std::string s(kind);
  if (!s.empty() && s.back() == 's') s.pop_back();
  return s;
}

bool has_input_extension(const std::string& s) {
  for (const std::string_view ext : {".yaml", ".yml", ".json"}) {
    if (s.size() > ext.size() && s.ends_with(ext)) return true;
  }
  return false;
}

// The names a directory offers: NAME.yaml, NAME.yml, config-NAME.json.
void add_available_names(const fs::path& dir, std::set<std::string>& names) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file(ec)) continue;
    const fs::path& p = entry.path();
    const std::string ext = p.extension().string();
    if (ext == ".yaml" || ext == ".yml") {
      names.insert(p.stem().string());
    } else if (ext == ".json" && p.stem().string().starts_with("config-")) {
      names.insert(default_name(p));
    }
  }
}

// A system file's key naming another file (relative to the system file's directory, or absolute)
// that `load` reads; `as_written` keeps the value for writing the system back. Errors name the
// system file, the key and the path.
template <class Load>
auto load_sidecar(const Mapping& m, const fs::path& system_file, const char* key, const char* what,
                  const YAML::Node& n, std::string& as_written, Load load) {
  if (!n.IsScalar() || n.Scalar().empty()) {
    throw InputError(m.file() + ": " + key + " must be the path of " + what + ", got " + Mapping::shown(n));
  }
  as_written = n.Scalar();
  fs::path path(as_written);
  if (path.is_relative()) path = (system_file.parent_path() / path).lexically_normal();
  try {
    return std::make_shared<const decltype(load(path))>(load(path));
  } catch (const InputError& e) {
    throw InputError(m.file() + ": " + key + " '" + as_written + "': " + e.what());
  }
}

// network_scaling: {nodes: [N, ...], allreduce_bus_GBps: [GB/s, ...], source: TEXT}
std::shared_ptr<const NetworkScaling> load_network_scaling(const Mapping& m, const YAML::Node& n) {
  const std::string at = m.file() + ": network_scaling";
  if (!n.IsMap()) throw InputError(at + ": expected a mapping with nodes, allreduce_bus_GBps and source");
  for (const auto& kv : n) {
    const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
    if (k != "nodes" && k != "allreduce_bus_GBps" && k != "source") throw InputError(at + ": unknown key '" + k + "'");
  }
  auto net = std::make_shared<NetworkScaling>();
  const YAML::Node nodes = n["nodes"], bus = n["allreduce_bus_GBps"];
  if (!nodes || !nodes.IsSequence() || nodes.size() == 0) throw InputError(at + ".nodes: expected a non-empty list");
  if (!bus || !bus.IsSequence() || bus.size() != nodes.size()) {
    throw InputError(at + ".allreduce_bus_GBps: expected a list as long as nodes (" + std::to_string(nodes.size()) + ")");
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    std::int64_t v = 0;
    double b = 0;
    if (yaml_is_text(nodes[i]) || yaml_is_text(bus[i]) || !YAML::convert<std::int64_t>::decode(nodes[i], v) ||
        !YAML::convert<double>::decode(bus[i], b)) {
      throw InputError(at + ": entry " + std::to_string(i + 1) + ": expected a node count and a bandwidth, got " +
                       Mapping::shown(nodes[i]) + ", " + Mapping::shown(bus[i]));
    }
    if (v < 2 || v > kMaxGpuCount) throw InputError(at + ".nodes: must be in [2, " + std::to_string(kMaxGpuCount) + "], got " + std::to_string(v));
    if (!net->nodes.empty() && v <= net->nodes.back()) throw InputError(at + ".nodes: must ascend, got " + std::to_string(v) + " after " + std::to_string(net->nodes.back()));
    if (!(b >= 1e-3 && b <= 1e9)) {
      throw InputError(at + ".allreduce_bus_GBps: must be in [0.001, 1e+09] GB/s, got " + Mapping::shown(bus[i]));
    }
    net->nodes.push_back(v);
    net->allreduce_bus_GBps.push_back(b);
  }
  if (const YAML::Node src = n["source"]) {
    if (!src.IsScalar()) throw InputError(at + ".source: expected text, got " + Mapping::shown(src));
    net->source = src.Scalar();
  }
  return net;
}

// network_tiers: [{name: TEXT, domains: N, latency: S, oversubscription: X}, ...], innermost
// first; every tier but the outermost names the NVLink domains one unit joins, each a multiple of
// the one below (units nest); the outermost joins all and gives no domains.
std::shared_ptr<const std::vector<NetworkTier>> load_network_tiers(const Mapping& m, const YAML::Node& n,
                                                                  double ib_latency) {
  const std::string at = m.file() + ": network_tiers";
  if (!n.IsSequence() || n.size() == 0) {
    throw InputError(at + ": expected a list of tiers ({name, domains, latency, oversubscription}), innermost first");
  }
  auto tiers = std::make_shared<std::vector<NetworkTier>>();
  for (std::size_t i = 0; i < n.size(); ++i) {
    const YAML::Node t = n[i];
    const bool outermost = i + 1 == n.size();
    if (!t.IsMap()) throw InputError(at + ": tier " + std::to_string(i + 1) + ": expected a mapping, got " + Mapping::shown(t));
    NetworkTier tier;
    tier.latency = ib_latency;
    std::string key = "network_tiers[" + std::to_string(i + 1) + "]";
    for (const auto& kv : t) {
      const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
      if (k != "name" && k != "domains" && k != "latency" && k != "oversubscription") {
        throw InputError(m.file() + ": " + key + ": unknown key '" + k +
                         "' (known: name, domains, latency, oversubscription)");
      }
    }
    const YAML::Node name = t["name"];
    if (!name) throw InputError(m.file() + ": " + key + ": missing key 'name'");
    tier.name = m.text(key + ".name", name);
    check_name(m.file() + ": " + key + ".name", tier.name, NameUse::kLabel);
    key = "network_tiers[" + tier.name + "]";
    const std::string where = m.file() + ": " + key;
    if (const YAML::Node v = t["domains"]) {
      if (outermost) {
        throw InputError(where + ".domains: the outermost tier joins every NVLink domain and gives no domains, got " +
                         Mapping::shown(v));
      }
      tier.domains = m.positive_integer(key + ".domains", v);
      const std::int64_t below = tiers->empty() ? 1 : tiers->back().domains;
      if (tier.domains <= below || tier.domains % below != 0) {
        throw InputError(where + ".domains: must be a multiple of the tier below's " + std::to_string(below) +
                         " domains and larger, got " + Mapping::shown(v));
      }
    } else if (!outermost) {
      throw InputError(where + ": missing key 'domains' (NVLink domains one unit of the tier joins)");
    }
    if (const YAML::Node v = t["latency"]) {
      tier.latency = m.number(key + ".latency", v);
      if (!(tier.latency >= 0 && tier.latency <= 1)) {
        throw InputError(where + ".latency: must be in [0, 1] s, got " + Mapping::shown(v));
      }
    }
    if (const YAML::Node v = t["oversubscription"]) {
      tier.oversubscription = m.number(key + ".oversubscription", v);
      if (!(tier.oversubscription >= 1 && tier.oversubscription <= 1e3)) {
        throw InputError(where + ".oversubscription: must be in [1, 1000], got " + Mapping::shown(v));
      }
    }
    tiers->push_back(tier);
  }
  return tiers;
}

}  // namespace

System load_system(const fs::path& file) {
  std::initializer_list<std::string_view> allowed = {
      "name",           "matrix_flops_fp16", "vector_flops_fp32", "vector_flops_fp16", "hbm_bandwidth",
      "hbm_capacity",   "nvlink_bandwidth",  "nvlink_eff",        "nvlink_latency",    "ib_bandwidth",
      "ib_eff",         "ib_latency",        "nvlink_size",       "nic_factor",        "empirical",
      "summa_nb",       "element_size",      "mask_element_size", "flops_units",       "calibration",
      "kernels",        "runtime",           "network_scaling",   "matrix_flops_fp8",  "matrix_flops_mxfp8",
      "matrix_flops_fp4", "network_tiers",     "host_bandwidth",    "host_memory",       "host_cpu_bandwidth",
      "gpu_hour_cost",  "caveat"};
  const Mapping m(file, allowed);
  System s;
  s.name = default_name(file);
  if (auto n = m.find("name")) s.name = m.text("name", *n);
  check_name(m.file() + ": name", s.name, NameUse::kGroup);
  for (const SystemKey& k : kSystemKeys) {
    const std::optional<YAML::Node> n = k.required ? m.require(k.name) : m.find(k.name);
    if (!n) continue;
    bool unit_given = false;
    const double v = m.quantity(k.name, *n, units_for(k.unit), unit_given);
    check_range(m, k, *n, v);
    s.*(k.member) = v;
    if (std::string_view(k.name) == "hbm_capacity") s.hbm_capacity_exact = unit_given;
  }
  if (auto n = m.find("nvlink_size")) {
    s.nvlink_size = m.positive_integer("nvlink_size", *n);
    if (s.nvlink_size > kMaxNvlinkDomain) {
      throw InputError(m.file() + ": nvlink_size must be at most " + std::to_string(kMaxNvlinkDomain) + ", got " +
                       Mapping::shown(*n));
    }
  }
  if (auto n = m.find("summa_nb")) s.summa_nb = m.positive_integer("summa_nb", *n);
  if (auto n = m.find("empirical")) s.empirical = m.boolean("empirical", *n);
  if (s.empirical) {
    throw InputError(m.file() +
                     ": empirical=true is not supported: the reference's empirical mode (measured collective "
                     "times) is not ported; the calibration feature replaces it (`comm fit`, then "
                     "`calibration: FILE` in the system file)");
  }
  if (auto n = m.find("calibration")) {
    s.calibration = load_sidecar(m, file, "calibration", "a calibration file (written by `comm fit`)", *n,
                                 s.calibration_file, comm::load_calibration);
  }
  if (auto n = m.find("kernels")) {
    s.kernel_calibration = load_sidecar(m, file, "kernels", "a kernel calibration (written by `validate fit-kernels`)",
                                        *n, s.kernels_file, kernels::load_calibration);
  }
  if (auto n = m.find("runtime")) s.runtime = m.text("runtime", *n);
  if (auto n = m.find("gpu_hour_cost")) {
    s.gpu_hour_cost = m.number("gpu_hour_cost", *n);
    if (!(s.gpu_hour_cost >= 0 && s.gpu_hour_cost <= kMaxGpuHourCost)) {
      throw InputError(m.file() + ": gpu_hour_cost must be a price per GPU-hour from 0 to " +
                       yaml_double(kMaxGpuHourCost) + ", got " + Mapping::shown(*n));
    }
  }
  if (auto n = m.find("caveat")) {
    s.caveat = m.text("caveat", *n);
    check_name(m.file() + ": caveat", s.caveat, NameUse::kLabel);
  }
  if (auto n = m.find("network_scaling")) s.network_scaling = load_network_scaling(m, *n);
  if (auto n = m.find("network_tiers")) s.network_tiers = load_network_tiers(m, *n, s.ib_latency);
  return s;
}

namespace {
// The model options beyond the reference's shape (model/transformer.hpp), each checked here.
void load_model_options(const Mapping& m, Transformer& t) {
  if (auto n = m.find("num_kv_heads")) t.kv_heads = m.positive_integer("num_kv_heads", *n);
  if (auto n = m.find("mlp")) t.mlp = static_cast<MlpKind>(m.choice("mlp", *n, {"gelu", "swiglu"}));
  if (auto n = m.find("norm")) t.norm = static_cast<NormKind>(m.choice("norm", *n, {"layernorm", "rmsnorm"}));
  if (auto n = m.find("bias")) t.bias = m.boolean("bias", *n);
  if (auto n = m.find("qkv_bias")) t.qkv_bias = m.boolean("qkv_bias", *n);
  if (auto n = m.find("causal")) t.causal = m.boolean("causal", *n);
  if (auto n = m.find("dropout")) {
    t.dropout = m.number("dropout", *n);
    if (!(t.dropout >= 0 && t.dropout < 1)) {
      throw InputError(m.file() + ": dropout must be in [0, 1), got " + Mapping::shown(*n));
    }
  }
  if (auto n = m.find("vocab_size")) t.vocab_size = m.non_negative_integer("vocab_size", *n);
  if (auto n = m.find("tie_embeddings")) t.tie_embeddings = m.boolean("tie_embeddings", *n);
  if (auto n = m.find("learned_positions")) t.learned_positions = m.boolean("learned_positions", *n);
  if (auto n = m.find("mtp_layers")) t.mtp_layers = m.non_negative_integer("mtp_layers", *n);
  if (auto n = m.find("logits_dtype")) {
    t.logits_dtype = static_cast<LogitsDtype>(m.choice("logits_dtype", *n, {"fp32", "bf16"}));
  }
  // Without a vocabulary there is no embedding table, LM head or logits: these keys may only
  // state what that means (false, the default dtype), as a written model file does.
  if (t.vocab_size == 0) {
    const Transformer plain;
    for (const auto& [key, set] : {std::pair{"tie_embeddings", t.tie_embeddings},
                                   std::pair{"learned_positions", t.learned_positions},
                                   std::pair{"logits_dtype", t.logits_dtype != plain.logits_dtype}}) {
      if (set) {
        throw InputError(m.file() + ": " + key + ": " + Mapping::shown(*m.find(key)) +
                         " needs a vocabulary (vocab_size > 0); without one it can only be absent" +
                         (std::string_view(key) == "logits_dtype" ? " or fp32" : " or false"));
      }
    }
  }
  // Launch-line numerics (model/transformer.hpp), no cost: each a positive number in its range.
  if (auto n = m.find("rope_theta")) {
    t.rope_theta = m.number("rope_theta", *n);
    if (!(t.rope_theta > 0 && t.rope_theta < 1e12)) {
      throw InputError(m.file() + ": rope_theta must be > 0 and < 1e12, got " + Mapping::shown(*n));
    }
  }
  if (auto n = m.find("rope_scaling_factor")) {
    t.rope_scaling_factor = m.number("rope_scaling_factor", *n);
    if (!(t.rope_scaling_factor >= 1 && t.rope_scaling_factor <= 1024)) {
      throw InputError(m.file() + ": rope_scaling_factor must be in [1, 1024], got " + Mapping::shown(*n));
    }
  }
  if (auto n = m.find("norm_epsilon")) {
    t.norm_epsilon = m.number("norm_epsilon", *n);
    if (!(t.norm_epsilon > 0 && t.norm_epsilon < 1)) {
      throw InputError(m.file() + ": norm_epsilon must be in (0, 1), got " + Mapping::shown(*n));
    }
  }
  if (auto n = m.find("moe")) {
    if (!n->IsMap()) throw InputError(m.file() + ": moe must be a mapping (experts, top_k, ffn_dim, ...), got " +
                                      Mapping::shown(*n));
    MoeOptions& o = t.moe;
    o.ffn_dim = t.f;
    for (const auto& kv : *n) {
      const std::string key = kv.first.Scalar();
      const std::string field = "moe." + key;
      if (key == "experts") o.experts = m.positive_integer(field, kv.second);
      else if (key == "top_k") o.top_k = m.positive_integer(field, kv.second);
      else if (key == "ffn_dim") o.ffn_dim = m.positive_integer(field, kv.second);
      else if (key == "every") o.every = m.positive_integer(field, kv.second);
      else if (key == "shared_experts") o.shared_experts = m.non_negative_integer(field, kv.second);
      else if (key == "first_dense") o.first_dense = m.non_negative_integer(field, kv.second);
      else if (key == "router_bias") o.router_bias = m.boolean(field, kv.second);
      else if (key == "expert_bias") o.expert_bias = m.boolean(field, kv.second);
      else if (key == "groups") o.groups = m.positive_integer(field, kv.second);
      else if (key == "group_top_k") o.group_top_k = m.positive_integer(field, kv.second);
      else if (key == "capacity_factor") {
        o.capacity_factor = m.number(field, kv.second);
        if (!(o.capacity_factor > 0)) throw InputError(m.file() + ": " + field + " must be > 0, got " +
                                                       Mapping::shown(kv.second));
      } else {
        throw InputError(m.file() + ": unknown key '" + field + "'");
      }
    }
    if (o.experts == 0) throw InputError(m.file() + ": missing key 'moe.experts'");
    if (o.top_k == 0) throw InputError(m.file() + ": missing key 'moe.top_k'");
  }
  // Attention variants (docs/models.md, Attention variants).
  if (auto n = m.find("head_dim")) t.head_dim_given = m.positive_integer("head_dim", *n);
  if (auto n = m.find("out_bias")) t.out_bias = m.boolean("out_bias", *n);
  if (auto n = m.find("sliding_window")) t.window = m.positive_integer("sliding_window", *n);
  if (auto n = m.find("global_every")) t.global_every = m.positive_integer("global_every", *n);
  if (auto n = m.find("attention_sinks")) t.attention_sinks = m.boolean("attention_sinks", *n);
  if (auto n = m.find("qk_norm")) t.qk_norm = m.boolean("qk_norm", *n);
  if (auto n = m.find("post_norms")) t.post_norms = m.boolean("post_norms", *n);
  if (auto n = m.find("mla")) {
    if (!n->IsMap()) {
      throw InputError(m.file() + ": mla must be a mapping (q_lora_rank, kv_lora_rank, qk_nope_head_dim, "
                                  "qk_rope_head_dim, v_head_dim), got " + Mapping::shown(*n));
    }
    LatentAttention& a = t.mla;
    for (const auto& kv : *n) {
      const std::string key = kv.first.Scalar();
      const std::string field = "mla." + key;
      if (key == "q_lora_rank") a.q_lora_rank = m.non_negative_integer(field, kv.second);
      else if (key == "kv_lora_rank") a.kv_lora_rank = m.positive_integer(field, kv.second);
      else if (key == "qk_nope_head_dim") a.qk_nope_head_dim = m.non_negative_integer(field, kv.second);
      else if (key == "qk_rope_head_dim") a.qk_rope_head_dim = m.non_negative_integer(field, kv.second);
      else if (key == "v_head_dim") a.v_head_dim = m.positive_integer(field, kv.second);
      else throw InputError(m.file() + ": unknown key '" + field + "'");
    }
    for (const auto& [key, v] : {std::pair{"kv_lora_rank", a.kv_lora_rank}, {"v_head_dim", a.v_head_dim}}) {
      if (v == 0) throw InputError(m.file() + ": missing key 'mla." + key + "'");
    }
  }
}
}  // namespace

Transformer load_model(const fs::path& file) {
  const Mapping m(file, {"name", "seq_len", "embed_dim", "num_heads", "depth", "ffn_dim", "dataset_samples",
                         "num_kv_heads", "mlp", "norm", "bias", "qkv_bias", "dropout", "causal", "vocab_size", "tie_embeddings",
                         "learned_positions", "logits_dtype", "moe", "rope_theta", "rope_scaling_factor",
                         "norm_epsilon", "head_dim", "out_bias", "sliding_window", "global_every", "attention_sinks",
                         "qk_norm", "post_norms", "mla", "mtp_layers"});
  Transformer t;
  t.name = default_name(file);
  if (auto n = m.find("name")) t.name = m.text("name", *n);
  check_name(m.file() + ": name", t.name, NameUse::kLabel);
  t.l = m.positive_integer("seq_len", m.require("seq_len"));
  t.e = m.positive_integer("embed_dim", m.require("embed_dim"));
  t.h = m.positive_integer("num_heads", m.require("num_heads"));
  t.depth = m.positive_integer("depth", m.require("depth"));
  if (auto n = m.find("ffn_dim")) {
    t.f = m.positive_integer("ffn_dim", *n);
  } else if (__builtin_mul_overflow(t.e, std::int64_t{4}, &t.f)) {
    throw InputError(m.file() + ": embed_dim=" + std::to_string(t.e) + " is too large (4 * embed_dim overflows)");
  }
  if (auto n = m.find("dataset_samples")) {
    t.dataset_samples = m.number("dataset_samples", *n);
    if (!(t.dataset_samples > 0)) throw InputError(m.file() + ": dataset_samples must be > 0, got " + Mapping::shown(*n));
  }
  load_model_options(m, t);
  check_model(t, m.file());
  return t;
}

fs::path resolve_input(const std::string& name_or_path, std::string_view kind) {
  if (name_or_path.empty()) throw InputError("empty " + singular(kind) + " name");
  std::error_code ec;
  const fs::path as_path(name_or_path);
  const fs::file_status status = fs::status(as_path, ec);
  if (fs::is_regular_file(status)) return as_path;
  if (name_or_path.find('/') != std::string::npos || has_input_extension(name_or_path)) {
    // a FIFO, a device or a folder is read as given, and its reader names what it is
    if (fs::exists(status)) return as_path;
    throw InputError(shown_text(name_or_path) + ": no such file");
  }
  std::vector<fs::path> dirs;
  if (const char* data_dir = std::getenv("PERFSWEEP_DATA_DIR"); data_dir && *data_dir) {
    dirs.push_back(fs::path(data_dir) / kind);
  }
  dirs.push_back(fs::path(".") / kind);
  dirs.push_back(fs::path(PERFSWEEP_SOURCE_DIR) / kind);
  for (const fs::path& dir : dirs) {
    for (const std::string& file : {name_or_path + ".yaml", name_or_path + ".yml", "config-" + name_or_path + ".json"}) {
      const fs::path candidate = dir / file;
      if (fs::is_regular_file(candidate, ec)) return candidate;
    }
  }
  std::set<std::string> names;
  for (const fs::path& dir : dirs) add_available_names(dir, names);
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  const std::string near = nearest_name(name_or_path, std::vector<std::string>(names.begin(), names.end()));
  throw InputError("unknown " + singular(kind) + " " + quoted_text(name_or_path) +
                   (near.empty() ? "" : "; did you mean " + quoted_text(near) + "?") + "; available: " +
                   (list.empty() ? std::string("(none)") : list));
}

std::optional<fs::path> find_shipped_file(std::string_view relative) {
  std::vector<fs::path> roots;
  if (const char* data_dir = std::getenv("PERFSWEEP_DATA_DIR"); data_dir && *data_dir) roots.emplace_back(data_dir);
  roots.emplace_back(".");
  roots.emplace_back(PERFSWEEP_SOURCE_DIR);
  std::error_code ec;
  for (const fs::path& root : roots) {
    const fs::path candidate = root / relative;
    if (fs::is_regular_file(candidate, ec)) return candidate;
  }
  return std::nullopt;
}

System load_system_named(const std::string& name_or_path) { return load_system(resolve_input(name_or_path, "systems")); }

Transformer load_model_named(const std::string& name_or_path) { return read_model(name_or_path).model; }

fs::path model_file(const std::string& name_or_path) {
  std::error_code ec;
  fs::path file(name_or_path);
  if (const std::optional<fs::path> hub = hub_config(name_or_path)) return *hub;
  if (!fs::is_directory(file, ec)) return resolve_input(name_or_path, "models");
  file /= "config.json";
  if (!fs::exists(file, ec)) throw InputError(shown_text(name_or_path) + ": a folder without config.json");
  return file;
}

ModelInput read_model(const std::string& name_or_path, std::int64_t seq_len) {
  const fs::path file = model_file(name_or_path);
  ModelInput in;
  if (is_hf_config(file)) {
    HfModel hf = load_hf_config(file);
    in.model = std::move(hf.model);
    in.warnings = std::move(hf.warnings);
  } else {
    in.model = load_model(file);
  }
  if (seq_len > 0) {
    in.model.l = seq_len;
    check_model(in.model, file.string() + " with --seq-len " + std::to_string(seq_len));
  }
  return in;
}

std::string system_key_range(const SystemKey& k) {
  char range[96];
  const bool unitless = std::string_view(k.unit) == "1";
  std::snprintf(range, sizeof range, "%s%s%g, %g]%s%s", k.zero_means_none ? "0 or " : "", k.min_open ? "(" : "[", k.min,
                k.max, unitless ? "" : " ", unitless ? "" : k.unit);
  return range;
}

std::string read_text(const fs::path& file) { return read_input_file(file.string(), kMaxInputBytes); }

std::string system_to_yaml(const System& system) {
  std::string out = "name: " + yaml_quoted(system.name) + "\n";
  const auto line = [&out](const char* key, const std::string& value, std::string_view unit) {
    out += std::string(key) + ": " + value;
    if (!unit.empty() && unit != "1") out += "  # " + std::string(unit);
    out += '\n';
  };
  for (const SystemKey& k : kSystemKeys) {
    // The reference's order puts nvlink_size before nic_factor and empirical, summa_nb after it.
    if (std::string_view(k.name) == "nic_factor") line("nvlink_size", std::to_string(system.nvlink_size), "GPUs");
    // a capacity written with a unit is exact (a runtime reading bare capacities as GiB leaves it)
    const bool exact = std::string_view(k.name) == "hbm_capacity" && system.hbm_capacity_exact;
    line(k.name, yaml_double(system.*(k.member)) + (exact ? " GB" : ""), k.unit);
    if (std::string_view(k.name) == "nic_factor") {
      line("empirical", system.empirical ? "true" : "false", "");
      line("summa_nb", std::to_string(system.summa_nb), "");
    }
  }
  if (!system.calibration_file.empty()) {
    line("calibration", yaml_quoted(system.calibration_file), "measured collective times, relative to this file");
  }
  if (!system.kernels_file.empty()) {
    line("kernels", yaml_quoted(system.kernels_file), "fitted kernel times, relative to this file");
  }
  if (!system.runtime.empty()) line("runtime", yaml_quoted(system.runtime), "the runtime used when none is given");
  if (system.gpu_hour_cost > 0) line("gpu_hour_cost", yaml_double(system.gpu_hour_cost), "price per GPU-hour");
  if (!system.caveat.empty()) line("caveat", yaml_quoted(system.caveat), "");
  if (const NetworkScaling* net = system.network_scaling.get()) {
    std::string nodes, bus;
    for (std::size_t i = 0; i < net->nodes.size(); ++i) {
      if (i > 0) {
        nodes += ", ";
        bus += ", ";
      }
      nodes += std::to_string(net->nodes[i]);
      bus += yaml_double(net->allreduce_bus_GBps[i]);
    }
    out += "network_scaling:\n  nodes: [" + nodes + "]\n  allreduce_bus_GBps: [" + bus + "]\n  source: " +
           yaml_quoted(net->source) + "\n";
  }
  if (system.network_tiers != nullptr) {
    out += "network_tiers:  # innermost first (docs/network.md)\n";
    for (const NetworkTier& t : *system.network_tiers) {
      out += "  - {name: " + yaml_quoted(t.name);
      if (t.domains > 0) out += ", domains: " + std::to_string(t.domains);
      out += ", latency: " + yaml_double(t.latency) + ", oversubscription: " + yaml_double(t.oversubscription) + "}\n";
    }
  }
  return out;
}

std::string model_to_yaml(const Transformer& model) {
  std::string out = "name: " + yaml_quoted(model.name) + "\n";
  out += "seq_len: " + std::to_string(model.l) + "  # tokens per sample\n";
  out += "embed_dim: " + std::to_string(model.e) + "\n";
  out += "num_heads: " + std::to_string(model.h) + "\n";
  out += "depth: " + std::to_string(model.depth) + "  # transformer blocks\n";
  out += "ffn_dim: " + std::to_string(model.f) + "\n";
  // 0 means "not given"; the key is optional and must be > 0 when present.
  if (model.dataset_samples > 0) {
    out += "dataset_samples: " + yaml_double(model.dataset_samples) + "  # samples per training run\n";
  }
  // The options beyond the reference's shape, only where they differ from its block, so a
  // reference model's text (and every fingerprint made of it) stays as it was.
  const Transformer reference;
  if (model.kv_heads > 0) out += "num_kv_heads: " + std::to_string(model.kv_heads) + "\n";
  if (model.mlp != reference.mlp) out += "mlp: swiglu\n";
  if (model.norm != reference.norm) out += "norm: rmsnorm\n";
  if (model.bias != reference.bias) out += "bias: false\n";
  if (model.qkv_bias) out += "qkv_bias: true\n";
  if (model.dropout != reference.dropout) out += "dropout: " + yaml_double(model.dropout) + "\n";
  if (model.causal != reference.causal) out += "causal: true\n";
  if (model.vocab_size > 0) {
    out += "vocab_size: " + std::to_string(model.vocab_size) + "\n";
    out += std::string("tie_embeddings: ") + (model.tie_embeddings ? "true" : "false") + "\n";
    out += std::string("learned_positions: ") + (model.learned_positions ? "true" : "false") + "\n";
    out += std::string("logits_dtype: ") + (model.logits_dtype == LogitsDtype::Fp32 ? "fp32" : "bf16") + "\n";
  }
  if (model.rope_theta > 0) out += "rope_theta: " + yaml_double(model.rope_theta) + "\n";
  if (model.rope_scaling_factor > 0) out += "rope_scaling_factor: " + yaml_double(model.rope_scaling_factor) + "\n";
  if (model.norm_epsilon > 0) out += "norm_epsilon: " + yaml_double(model.norm_epsilon) + "\n";
  if (model.is_moe()) {
    const MoeOptions& o = model.moe;
    out += "moe: {experts: " + std::to_string(o.experts) + ", top_k: " + std::to_string(o.top_k) +
           ", ffn_dim: " + std::to_string(o.ffn_dim) + ", capacity_factor: " + yaml_double(o.capacity_factor) +
           ", every: " + std::to_string(o.every) + ", shared_experts: " + std::to_string(o.shared_experts);
    // beyond the keys every MoE model writes, only where set (the fingerprints of older files stay)
    if (o.first_dense > 0) out += ", first_dense: " + std::to_string(o.first_dense);
    if (o.router_bias) out += ", router_bias: true";
    if (o.expert_bias) out += ", expert_bias: true";
    if (o.groups > 0) out += ", groups: " + std::to_string(o.groups) + ", group_top_k: " + std::to_string(o.group_top_k);
    out += "}\n";
  }
  if (model.mtp_layers > 0) out += "mtp_layers: " + std::to_string(model.mtp_layers) + "\n";
  if (model.head_dim_given > 0) out += "head_dim: " + std::to_string(model.head_dim_given) + "\n";
  if (model.out_bias) out += "out_bias: true\n";
  if (model.window > 0) out += "sliding_window: " + std::to_string(model.window) + "\n";
  if (model.global_every > 0) out += "global_every: " + std::to_string(model.global_every) + "\n";
  if (model.attention_sinks) out += "attention_sinks: true\n";
  if (model.qk_norm) out += "qk_norm: true\n";
  if (model.post_norms) out += "post_norms: true\n";
  if (model.is_mla()) {
    const LatentAttention& a = model.mla;
    out += "mla: {q_lora_rank: " + std::to_string(a.q_lora_rank) + ", kv_lora_rank: " + std::to_string(a.kv_lora_rank) +
           ", qk_nope_head_dim: " + std::to_string(a.qk_nope_head_dim) + ", qk_rope_head_dim: " +
           std::to_string(a.qk_rope_head_dim) + ", v_head_dim: " + std::to_string(a.v_head_dim) + "}\n";
  }
  return out;
}


}  // namespace perfsweep
