#include "config/runtime_file.hpp"

#include <yaml-cpp/yaml.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <span>
#include <string_view>

#include "config/inputs.hpp"
#include "config/yaml_file.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/hash.hpp"
#include "core/text.hpp"

namespace perfsweep {
namespace {

// A numeric key: the member it sets, its unit and range.
struct NumberKey {
  const char* name;
  double Runtime::*member;
  const char* unit;
  double min, max;
};
inline constexpr NumberKey kNumberKeys[] = {
    {"tp_comm_overlap", &Runtime::tp_comm_overlap, "1", 0, 1},
    {"optimizer_bytes", &Runtime::optimizer_bytes, "B/parameter", 0, 1024},
    {"cast_bytes", &Runtime::cast_bytes, "B/parameter", 0, 1024},
    {"accumulate_bytes", &Runtime::accumulate_bytes, "B/parameter", 0, 1024},
    {"zero_grad_bytes", &Runtime::zero_grad_bytes, "B/parameter", 0, 1024},
    {"host_block_s", &Runtime::host_block_s, "s", 0, 10},
    {"host_block_per_tp_s", &Runtime::host_block_per_tp_s, "s", 0, 10},
    {"host_block_per_tp_domain_s", &Runtime::host_block_per_tp_domain_s, "s", 0, 10},
    {"host_slot_pipelined_multinode_s", &Runtime::host_slot_pipelined_multinode_s, "s", 0, 100},
    {"driver_reserve_gib", &Runtime::driver_reserve_gib, "GiB", 0, 64},
    {"allocator_reserve", &Runtime::allocator_reserve, "1", 0, 10},
    {"loss_transient_logits", &Runtime::loss_transient_logits, "logit buffers", 0, 16},
    {"optimizer_transient_bytes", &Runtime::optimizer_transient_bytes, "B/parameter", 0, 1024},
};
// A key that sets one member of `Owner` as it is written.
template <typename Owner, typename T>
struct MemberKey {
  const char* name;
  T Owner::*member;
};
using BoolKey = MemberKey<Runtime, bool>;
using Fp8BoolKey = MemberKey<Fp8Policy, bool>;  // how the runtime runs FP8, beside fp8_recipe
// A state's bytes per parameter; the required ones are what every training step keeps (an
// optimizer without moments states 0), the others are 0 unless given (docs/runtimes.md).
struct StateKey {
  const char* name;
  double StateBytes::*member;
  bool required;
};
// The runtime's other on-off keys, after its mechanisms' (kMechanismFlags).
inline constexpr BoolKey kBoolKeys[] = {
    {"flash_attention", &Runtime::flash_attention},       {"capacity_in_gib", &Runtime::capacity_in_gib},
    {"host_kernel_calls", &Runtime::host_kernel_calls},   {"batch_resident", &Runtime::batch_resident},
    {"allocator_reserve_from_kernels", &Runtime::allocator_reserve_from_kernels},
    {"tp_comm_overlap_default", &Runtime::tp_comm_overlap_default},
};
inline constexpr Fp8BoolKey kFp8BoolKeys[] = {
    {"fp8_fused_casts", &Fp8Policy::fused_casts},   {"fp8_weight_cache", &Fp8Policy::weight_cache},
    {"fp8_weight_gather", &Fp8Policy::weight_gather}, {"fp8_lm_head", &Fp8Policy::lm_head},
    {"fp8_saved_inputs", &Fp8Policy::saved_inputs}, {"fp8_quantized_gather", &Fp8Policy::quantized_gather},
};
inline constexpr StateKey kStateKeys[] = {
    {"weights", &StateBytes::weights, true},           {"gradients", &StateBytes::gradients, true},
    {"accumulator", &StateBytes::accumulator, false},  {"master", &StateBytes::master, true},
    {"moments", &StateBytes::moments, true},           {"casts", &StateBytes::casts, false},
    {"zero_gradient_shard", &StateBytes::zero_gradient_shard, false},
    {"zero_gather_buffer", &StateBytes::zero_gather_buffer, false},
};
// The values of the keys that name one of a few, in the order of their masks' bits and enums.
constexpr std::string_view kStrategyNames[] = {"1d", "2d", "2d-seqp"};        // Strategy
constexpr std::string_view kZeroStageNames[] = {"0", "1", "2", "3"};
constexpr std::string_view kCadenceNames[] = {"step", "micro_batch"};         // Cadence
constexpr std::string_view kDpOverlapNames[] = {"layer", "chunk"};             // DpOverlap
constexpr std::string_view kActivationNames[] = {"reference", "megatron", "autocast"};  // ActivationAccounting
// An enum's names (model/) as the keys' values, every one of them.
template <std::size_t N>
constexpr std::array<std::string_view, N> key_names(const char* const (&names)[N]) {
  std::array<std::string_view, N> out{};
  for (std::size_t i = 0; i < N; ++i) out[i] = names[i];
  return out;
}
constexpr auto kFp8RecipeNames = [] {  // Fp8Recipe: its descriptors' names
  std::array<std::string_view, std::size(kLowPrecisionRecipes)> out{};
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = kLowPrecisionRecipes[i].name;
  return out;
}();
constexpr auto kCpCommKeyNames = key_names(kCpCommNames);                  // CpComm
constexpr auto kOffloadKeyNames = key_names(kOffloadNames);                // Offload
constexpr auto kStagePartitionKeyNames = key_names(kStagePartitionNames);  // StagePartition
constexpr auto kRankOrderKeyNames = key_names(kRankOrderNames);            // RankOrder
constexpr auto kMoePermutationKeyNames = key_names(kMoePermutationNames);  // MoePermutation
constexpr auto kMoeDispatcherKeyNames = key_names(kMoeDispatcherNames);    // MoeDispatcher
constexpr auto kLaunchKeyNames = key_names(kLaunchFrameworkNames);         // LaunchFramework
constexpr const char* kOtherKeys[] = {"name",        "description", "states",     "strategies",
                                      "zero_stages", "zero_gather", "zero_reduce", "dp_overlap", "activations",
                                      "fp8_recipe",  "context_parallel", "offload", "stage_partition",
                                      "rank_order",  "launch",      "moe_permutation", "moe_dispatcher"};

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw InputError(file_ + ": " + key + ": " + what);
  }
  std::string scalar(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) fail(key, "expected a single value, got " + yaml_shown(n) + yaml_line(n));
    return n.Scalar();
  }
  // A number as written (plain, not quoted: "0.5" in quotes is text) within [min, max].
  double number(const YAML::Node& n, const std::string& key, double min, double max) const {
    scalar(n, key);
    double v = 0;
    if (yaml_is_text(n) || !YAML::convert<double>::decode(n, v)) {
      fail(key, "expected a number, got " + yaml_shown(n) + yaml_line(n));
    }
    if (!std::isfinite(v) || v < min || v > max) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "must be in [%g, %g], got ", min, max);
      fail(key, buf + shown_text(n.Scalar()));
    }
    return v;
  }
  bool boolean(const YAML::Node& n, const std::string& key) const {
    const std::string text = scalar(n, key);
    if (!yaml_is_text(n) && text == "true") return true;
    if (!yaml_is_text(n) && text == "false") return false;
    fail(key, "expected true or false, got " + yaml_shown(n) + yaml_line(n));
  }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

template <typename T, std::size_t N>
bool names_key(const T (&keys)[N], const std::string& k) {
  for (const T& x : keys) {
    if (k == x.name) return true;
  }
  return false;
}

}  // namespace

Runtime load_runtime(const std::filesystem::path& path) {
  // The text read once: what is hashed (outputs record it) is what is read.
  const std::string text = read_input_file(path.string(), kMaxInputBytes);
  const YAML::Node root = load_yaml_text(text, path.string());
  const Reader r(path.string());
  if (!root.IsMap()) throw InputError(r.file() + ": expected a mapping of keys to values");
  Runtime rt;
  rt.name = path.stem().string();
  rt.file = path.string();
  rt.content_hash = fnv1a(text);
  for (const auto& kv : root) {
    const std::string& k = kv.first.Scalar();
    bool known = names_key(kNumberKeys, k) || names_key(kMechanismFlags, k) || names_key(kBoolKeys, k) ||
                 names_key(kFp8BoolKeys, k);
    for (const char* o : kOtherKeys) known = known || k == o;
    if (!known) throw InputError(r.file() + ": unknown key '" + shown_text(k) + "'");
  }
  for (const NumberKey& k : kNumberKeys) {
    if (root[k.name]) rt.*k.member = r.number(root[k.name], k.name, k.min, k.max);
  }
  Mechanisms& mech = rt.mechanisms;
  for (const MechanismFlag& k : kMechanismFlags) {
    if (root[k.name]) mech.*k.member = r.boolean(root[k.name], k.name);
  }
  for (const BoolKey& k : kBoolKeys) {
    if (root[k.name]) rt.*k.member = r.boolean(root[k.name], k.name);
  }
  for (const Fp8BoolKey& k : kFp8BoolKeys) {
    if (root[k.name]) mech.fp8.*k.member = r.boolean(root[k.name], k.name);
  }
  if (root["name"]) rt.name = r.scalar(root["name"], "name");
  check_name(r.file() + ": name", rt.name, NameUse::kLabel);
  if (root["description"]) r.scalar(root["description"], "description");
  if (const YAML::Node states = root["states"]) {
    if (!states.IsMap()) r.fail("states", "expected a mapping of bytes per parameter, got " + yaml_shown(states));
    rt.has_states = true;
    rt.states = StateBytes{0, 0, 0, 0, 0, 0, 0, 0};
    for (const auto& kv : states) {
      const std::string& k = kv.first.Scalar();
      if (!names_key(kStateKeys, k)) r.fail("states", "unknown key '" + shown_text(k) + "'");
    }
    for (const StateKey& k : kStateKeys) {
      if (states[k.name]) {
        rt.states.*k.member = r.number(states[k.name], std::string("states.") + k.name, 0, 64);
      } else if (k.required) {
        // a state left out would be costed at 0 bytes: an optimizer without moments is written 0
        r.fail("states", std::string("missing key '") + k.name + "' (bytes per parameter; write 0 where the " +
                             "framework keeps none)");
      }
    }
    if (!(rt.states.weights > 0)) r.fail("states.weights", "must be > 0");
  }
  auto list = [&](const char* key, std::span<const std::string_view> names) -> std::uint8_t {
    const YAML::Node n = root[key];
    if (!n) return 0xFF;
    if (!n.IsSequence() || n.size() == 0) r.fail(key, "expected a non-empty list");
    std::uint8_t mask = 0;
    for (const YAML::Node& item : n) {
      const std::string v = r.scalar(item, key);
      int i = 0;
      bool found = false;
      for (std::string_view name : names) {
        if (v == name) {
          mask = static_cast<std::uint8_t>(mask | (1u << i));
          found = true;
        }
        ++i;
      }
      if (!found) r.fail(key, "unknown value '" + shown_text(v) + "'");
    }
    return mask;
  };
  if (const std::uint8_t m = list("strategies", kStrategyNames); m != 0xFF) rt.strategies = m;
  if (const std::uint8_t m = list("zero_stages", kZeroStageNames); m != 0xFF) rt.zero_stages = m;
  if (const std::uint8_t m = list("context_parallel", kCpCommKeyNames); m != 0xFF) rt.context_parallel = m;
  // none is always run, listed or not
  if (const std::uint8_t m = list("offload", kOffloadKeyNames); m != 0xFF) rt.offload = static_cast<std::uint8_t>(m | 1u);
  auto choice = [&](const char* key, std::span<const std::string_view> names, int fallback) {
    if (!root[key]) return fallback;
    const std::string v = r.scalar(root[key], key);
    int i = 0;
    for (std::string_view name : names) {
      if (v == name) return i;
      ++i;
    }
    std::string allowed;
    for (std::string_view name : names) allowed += (allowed.empty() ? "" : ", ") + std::string(name);
    r.fail(key, "expected one of " + allowed + ", got '" + v + "'");
  };
  rt.zero_gather = static_cast<Cadence>(choice("zero_gather", kCadenceNames, 0));
  rt.zero_reduce = static_cast<Cadence>(choice("zero_reduce", kCadenceNames, 0));
  rt.dp_overlap = static_cast<DpOverlap>(choice("dp_overlap", kDpOverlapNames, 0));
  rt.activations = static_cast<ActivationAccounting>(choice("activations", kActivationNames, 0));
  mech.fp8.recipe = static_cast<Fp8Recipe>(choice("fp8_recipe", kFp8RecipeNames, 0));
  mech.stage_partition = static_cast<StagePartition>(choice("stage_partition", kStagePartitionKeyNames, 0));
  rt.rank_order = static_cast<RankOrder>(choice("rank_order", kRankOrderKeyNames, 0));
  rt.launch = static_cast<std::int8_t>(choice("launch", kLaunchKeyNames, -1));
  mech.moe_permutation = static_cast<MoePermutation>(choice("moe_permutation", kMoePermutationKeyNames, 0));
  rt.moe_dispatcher = static_cast<MoeDispatcher>(choice("moe_dispatcher", kMoeDispatcherKeyNames, 0));
  if (mech.fp8.recipe == Fp8Recipe::None) {
    for (const Fp8BoolKey& k : kFp8BoolKeys) {
      if (root[k.name] && mech.fp8.*k.member != Fp8Policy{}.*k.member) {
        std::string recipes;
        for (std::size_t i = 1; i < kFp8RecipeNames.size(); ++i) {
          recipes += std::string(i == 1 ? "" : i + 1 == kFp8RecipeNames.size() ? " or " : ", ") +
                     std::string(kFp8RecipeNames[i]);
        }
        r.fail(k.name, "says how FP8 runs, but the runtime gives no fp8_recipe (" + recipes + ")");
      }
    }
  }
  if (root["tp_comm_overlap_default"] && rt.tp_comm_overlap_default && !(rt.tp_comm_overlap > 0)) {
    r.fail("tp_comm_overlap_default", "puts the tensor-parallel overlap on, but the runtime gives no tp_comm_overlap "
                                      "(the share of each collective it hides)");
  }
  if (rt.name == "reference") {
    // runtimes/reference.yaml documents the built-in; a file of that name states nothing else.
    Runtime plain;
    plain.name = rt.name;
    plain.file = rt.file;
    plain.content_hash = rt.content_hash;
    const Mechanisms& given = rt.mechanisms;
    if (rt.has_states || given.fp8 != plain.mechanisms.fp8 || rt.activations != plain.activations || rt.zero_gather != plain.zero_gather ||
        rt.zero_reduce != plain.zero_reduce || rt.dp_overlap != plain.dp_overlap || rt.strategies != plain.strategies || rt.zero_stages != plain.zero_stages ||
        rt.context_parallel != plain.context_parallel || rt.offload != plain.offload || rt.launch != plain.launch ||
        given.stage_partition != plain.mechanisms.stage_partition || rt.rank_order != plain.rank_order ||
        given.moe_permutation != plain.mechanisms.moe_permutation || rt.moe_dispatcher != plain.moe_dispatcher) {
      r.fail("name", "'reference' is the paper's model; a runtime that changes it needs another name");
    }
    for (const NumberKey& k : kNumberKeys) {
      if (rt.*k.member != 0) r.fail(k.name, "'reference' is the paper's model; a runtime that changes it needs another name");
    }
    for (const MechanismFlag& k : kMechanismFlags) {
      if (given.*k.member != plain.mechanisms.*k.member) {
        r.fail(k.name, "'reference' is the paper's model; a runtime that changes it needs another name");
      }
    }
    for (const BoolKey& k : kBoolKeys) {
      if (rt.*k.member != plain.*k.member) {
        r.fail(k.name, "'reference' is the paper's model; a runtime that changes it needs another name");
      }
    }
    return reference_runtime();
  }
  return rt;
}

namespace {
// The names of a mask's set bits as a YAML flow list: "[1d, 2d]".
std::string mask_list(std::uint8_t mask, std::span<const std::string_view> names) {
  std::string out = "[";
  unsigned i = 0;
  for (std::string_view name : names) {
    if ((static_cast<unsigned>(mask) >> i) & 1u) out += (out.size() > 1 ? ", " : "") + std::string(name);
    ++i;
  }
  return out + "]";
}
}  // namespace

std::string runtime_to_yaml(const Runtime& rt) {
  std::string out = "name: " + yaml_quoted(rt.name) + "\n";
  if (rt.has_states) {
    out += "states: {";
    for (const StateKey& k : kStateKeys) {
      out += std::string(&k == kStateKeys ? "" : ", ") + k.name + ": " + yaml_double(rt.states.*k.member);
    }
    out += "}\n";
  }
  out += "strategies: " + mask_list(rt.strategies, kStrategyNames) + "\n";
  out += "zero_stages: " + mask_list(rt.zero_stages, kZeroStageNames) + "\n";
  if (rt.context_parallel != 0) out += "context_parallel: " + mask_list(rt.context_parallel, kCpCommKeyNames) + "\n";
  if (rt.offload != 1) out += "offload: " + mask_list(rt.offload, kOffloadKeyNames) + "\n";
  const Mechanisms& mech = rt.mechanisms;
  for (const MechanismFlag& k : kMechanismFlags) {
    out += std::string(k.name) + ": " + (mech.*k.member ? "true" : "false") + "\n";
  }
  for (const BoolKey& k : kBoolKeys) {
    // the overlap's default only where the runtime has the overlap (a file refuses it otherwise)
    if (k.member == &Runtime::tp_comm_overlap_default && !(rt.tp_comm_overlap > 0)) continue;
    out += std::string(k.name) + ": " + (rt.*k.member ? "true" : "false") + "\n";
  }
  const auto named = [](std::span<const std::string_view> names, auto value) {
    return std::string(names[static_cast<std::size_t>(value)]);
  };
  out += "zero_gather: " + named(kCadenceNames, rt.zero_gather) + "\n";
  out += "zero_reduce: " + named(kCadenceNames, rt.zero_reduce) + "\n";
  out += "dp_overlap: " + named(kDpOverlapNames, rt.dp_overlap) + "\n";
  out += "activations: " + named(kActivationNames, rt.activations) + "\n";
  out += "fp8_recipe: " + named(kFp8RecipeNames, mech.fp8.recipe) + "\n";
  out += "stage_partition: " + named(kStagePartitionKeyNames, mech.stage_partition) + "\n";
  out += "rank_order: " + named(kRankOrderKeyNames, rt.rank_order) + "\n";
  if (rt.launch >= 0) out += "launch: " + named(kLaunchKeyNames, rt.launch) + "\n";
  if (mech.moe_permutation != MoePermutation::None) {
    out += "moe_permutation: " + named(kMoePermutationKeyNames, mech.moe_permutation) + "\n";
  }
  if (rt.moe_dispatcher != MoeDispatcher::AllToAll) {
    out += "moe_dispatcher: " + named(kMoeDispatcherKeyNames, rt.moe_dispatcher) + "\n";
  }
  if (mech.fp8.recipe != Fp8Recipe::None) {
    for (const Fp8BoolKey& k : kFp8BoolKeys) out += std::string(k.name) + ": " + (mech.fp8.*k.member ? "true" : "false") + "\n";
  }
  for (const NumberKey& k : kNumberKeys) {
    out += std::string(k.name) + ": " + yaml_double(rt.*k.member);
    if (std::string_view(k.unit) != "1") out += std::string("  # ") + k.unit;
    out += "\n";
  }
  return out;
}

Runtime load_runtime_named(const std::string& name_or_path) {
  if (name_or_path == "reference") return reference_runtime();
  Runtime rt = load_runtime(resolve_input(name_or_path, "runtimes"));
  return rt;
}

std::string default_runtime_name(const std::string& given, const System& system, const Transformer& model) {
  if (!given.empty()) return given;
  if (!system.runtime.empty()) return system.runtime;
  return model.extends_reference() ? "megatron" : "reference";
}

Runtime choose_runtime(const std::string& given, const System& system, const Transformer& model) {
  if (given.empty() && !system.runtime.empty()) {
    // The name came from the system file: the message says which, since no flag named it.
    try {
      return load_runtime_named(system.runtime);
    } catch (const InputError& e) {
      std::string message = "system '";
      message += system.name;
      message += "', key runtime: ";
      message += e.what();
      throw InputError(message);
    }
  }
  return load_runtime_named(default_runtime_name(given, system, model));
}

std::string runtime_hash_hex(const Runtime& rt) { return rt.content_hash == 0 ? "" : hex64(rt.content_hash); }

std::string runtime_label(const Runtime& rt) {
  if (rt.is_reference()) return "reference (built-in)";
  return rt.name + " (" + rt.file + ", fnv1a " + runtime_hash_hex(rt) + ")";
}

}  // namespace perfsweep
