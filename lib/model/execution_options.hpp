#pragma once
// The execution options a configuration takes beyond its degrees (recompute, sp, zero, ...),
// declared once. Each entry says the option's key, its flag and help, how its values are spelt,
// which field of Execution holds it and which list of ExecutionChoices a search tries. From the
// table come the flags of estimate, configs and sweep (apps/common/execution_options.hpp), their
// parsing and errors (config/execution_flags.cpp), the configuration keys of reports, HDF5
// columns, journal fingerprints and the tie-break (model/plan.hpp kConfigKeys), the search's block
// cache key (block_cost_codes), the values the search and configs walk (search/dimensions.cpp,
// search/configs.cpp), the texts of reports and logs (execution_text, execution_values) and the
// launch arguments (execution_arguments). A new option is a field of
// Execution, a list of ExecutionChoices, one entry here, and its dimension in
// search/dimensions.cpp (docs/architecture.md).
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/limits.hpp"
#include "model/block.hpp"
#include "model/layout.hpp"

namespace perfsweep {

// The execution options a search tries (each list the reference's value alone by default).
struct ExecutionChoices {
  std::vector<Recompute> recompute{Recompute::None};
  std::vector<bool> sequence_parallel{true};
  std::vector<std::int64_t> zero{1};
  std::vector<std::int64_t> interleave{1};
  std::vector<ParamLayout> params{ParamLayout::Reference};
  std::vector<std::int64_t> ep{1};
  std::vector<std::int64_t> etp{0};  // 0: the tensor-parallel degree
  std::vector<Precision> precision{Precision::Bf16};
  std::vector<PipelineSchedule> schedule{PipelineSchedule::OneFOneB};
  // Context-parallel degrees (1d; each a degree of the tensor split, n = dp tp cp pp) and how
  // their attention exchanges keys and values (cp > 1 only: a layout with cp = 1 takes the first).
  std::vector<std::int64_t> cp{1};
  std::vector<CpComm> cp_comm{CpComm::P2P};
  std::vector<Offload> offload{Offload::None};  // what each layout keeps in host memory
  std::vector<std::int64_t> offload_percent{100};  // of the optimizer's parameters, with offload optimizer
  // How ranks are numbered (tp-cp-ep-dp-pp or tp-cp-ep-pp-dp); empty: the runtime's order
  // (ExecutionOption::runtime_default; fill_runtime_defaults, which the search and configs call).
  std::vector<RankOrder> rank_order{};
  // FP8 parameters on or off; empty: the runtime's (fp8_weight_gather), as rank_order.
  std::vector<bool> fp8_params{};
  // Tensor-parallel communication overlap on or off; empty: the runtime's, as rank_order.
  std::vector<bool> tp_comm_overlap{};
  // The MoE dispatcher; empty: the runtime's, as rank_order.
  std::vector<MoeDispatcher> moe_dispatcher{};
  bool operator==(const ExecutionChoices&) const = default;
};

// How an option's values are spelt: by name (an enum's, in the enum's order), on/off (a bool),
// or as an integer.
enum class OptionValues : std::uint8_t { Named, OnOff, Integer };
// When texts and launch arguments show an option: always (the reference's options), where its
// value differs from Execution{}'s, or with the stages' blocks (where either end stage is given).
enum class OptionShown : std::uint8_t { Always, NotDefault, WithStages };

struct ExecutionOption {
  const char* key;   // reports, HDF5 columns, texts: "recompute"
  const char* flag;  // "--recompute"
  const char* help;  // the flag's help (apps add " (a comma-separated list: ...)" for lists)
  OptionValues values;
  // Named: the names by code; a flag accepts the first `accepted` (the others are what a runtime
  // sets: mxfp8 is fp8 as a block-scaling runtime runs it, spelt as the last accepted name).
  std::span<const char* const> names;
  std::size_t accepted;
  std::int64_t lo, hi;  // Integer: the values a flag accepts
  OptionShown shown;
  // The block's cost reads it (cost_block, cost_block_memory): a part of the search's block cache
  // key (search.cpp BlockKey). Options that change only the step (zero, schedule, ...) are not.
  bool block_cost;
  // Whether the option means anything for a layout (nullptr: always); where it does not, a layout
  // takes the first value of its list, so searches and configs do not repeat identical layouts
  // (cp_comm without context parallelism, offload_percent without offload optimizer, rank_order
  // with one pipeline stage or one data-parallel rank).
  bool (*applies)(const Layout&);
  std::int64_t (*get)(const Execution&);
  void (*set)(Execution&, std::int64_t);
  // The list a search tries (ExecutionChoices): its size, its i-th value's code, and the list
  // replaced by codes. nullptr: a layout's given option, not searched (the stages' blocks).
  std::size_t (*count)(const ExecutionChoices&);
  std::int64_t (*at)(const ExecutionChoices&, std::size_t);
  void (*assign)(ExecutionChoices&, std::span<const std::int64_t>);
  // Not given, the runtime's value (rank_order: a framework numbers ranks its own way): a flag's
  // default is empty, and so is the list of ExecutionChoices{}, until fill_runtime_defaults
  // (model/runtime.hpp) gives it the runtime's.
  bool runtime_default = false;
  bool searched() const { return count != nullptr; }
};

namespace execution_option_detail {
template <auto Field>
constexpr std::int64_t get(const Execution& x) {
  return static_cast<std::int64_t>(x.*Field);
}
template <auto Field>
constexpr void set(Execution& x, std::int64_t v) {
  x.*Field = static_cast<std::remove_cvref_t<decltype(x.*Field)>>(v);
}
template <auto List>
std::size_t count(const ExecutionChoices& c) {
  return (c.*List).size();
}
template <auto List>
std::int64_t at(const ExecutionChoices& c, std::size_t i) {
  return static_cast<std::int64_t>((c.*List)[i]);
}
template <auto List>
void assign(ExecutionChoices& c, std::span<const std::int64_t> codes) {
  auto& list = c.*List;
  using V = typename std::remove_cvref_t<decltype(list)>::value_type;
  list.clear();
  for (const std::int64_t k : codes) list.push_back(static_cast<V>(k));
}
inline constexpr const char* kRecomputeNames[] = {"none", "selective", "full"};
inline constexpr const char* kParamLayoutNames[] = {"reference", "megatron", "amp"};
inline constexpr const char* kOnOffNames[] = {"off", "on"};

// A searched option: a field of Execution and its list in ExecutionChoices.
template <auto Field, auto List>
constexpr ExecutionOption searched(const char* key, const char* flag, const char* help, OptionValues values,
                                   std::span<const char* const> names, std::size_t accepted, std::int64_t lo,
                                   std::int64_t hi, OptionShown shown, bool block_cost,
                                   bool (*applies)(const Layout&) = nullptr) {
  return {key, flag, help, values, names, accepted, lo, hi, shown, block_cost, applies, get<Field>, set<Field>,
          count<List>, at<List>, assign<List>};
}
template <auto Field, auto List>
constexpr ExecutionOption named(const char* key, const char* flag, const char* help, std::span<const char* const> names,
                                OptionShown shown, bool block_cost, std::size_t accepted = 0,
                                bool (*applies)(const Layout&) = nullptr) {
  return searched<Field, List>(key, flag, help, OptionValues::Named, names, accepted ? accepted : names.size(), 0, 0,
                               shown, block_cost, applies);
}
template <auto Field, auto List>
constexpr ExecutionOption integer(const char* key, const char* flag, const char* help, std::int64_t lo,
                                  std::int64_t hi, OptionShown shown, bool block_cost,
                                  bool (*applies)(const Layout&) = nullptr) {
  return searched<Field, List>(key, flag, help, OptionValues::Integer, {}, 0, lo, hi, shown, block_cost, applies);
}
// A searched on/off option of the step whose default is the runtime's (runtime_defaults), shown
// where it is on.
template <auto Field, auto List>
constexpr ExecutionOption runtime_on_off(const char* key, const char* flag, const char* help,
                                         bool (*applies)(const Layout&)) {
  ExecutionOption o = searched<Field, List>(key, flag, help, OptionValues::OnOff, kOnOffNames, 2, 0, 1,
                                            OptionShown::NotDefault, false, applies);
  o.runtime_default = true;
  return o;
}
// A layout's given option (estimate's and configs' own flags, not a search's list).
template <auto Field>
constexpr ExecutionOption given(const char* key, const char* flag, const char* help) {
  return {key, flag, help, OptionValues::Integer, {}, 0, 0, kMaxGpuCount, OptionShown::WithStages, false, nullptr,
          get<Field>, set<Field>, nullptr, nullptr, nullptr};
}
}  // namespace execution_option_detail

// The options in their declared order: the order of configuration keys, columns, texts and
// arguments, and of configs' combinations (the first outermost).
inline constexpr std::array kExecutionOptions = [] {
  namespace d = execution_option_detail;
  using X = Execution;
  using C = ExecutionChoices;
  constexpr auto always = OptionShown::Always;
  constexpr auto changed = OptionShown::NotDefault;
  constexpr bool block = true, step = false;  // block_cost: the block's cost reads it, or the step's only
  return std::array{
      d::named<&X::recompute, &C::recompute>(
          "recompute", "--recompute",
          "activation recomputation: none, selective (the attention core) or full (every block keeps only its input)",
          d::kRecomputeNames, always, block),
      d::searched<&X::sequence_parallel, &C::sequence_parallel>(
          "sp", "--sp",
          "1d sequence parallelism: on (the reference's: reduce-scatter + all-gather, norm and dropout on l/tp) or "
          "off (all-reduces)",
          OptionValues::OnOff, d::kOnOffNames, 2, 0, 1, always, block),
      d::integer<&X::zero, &C::zero>(
          "zero", "--zero",
          "ZeRO stage over data parallelism: 0 none, 1 optimizer states (the reference), 2 + gradients, 3 + weights",
          0, 3, always, step),
      d::integer<&X::interleave, &C::interleave>("interleave", "--interleave",
                                                 "virtual pipeline stages per GPU (interleaved 1F1B)", 1, 1024, always,
                                                 step),
      d::named<&X::params, &C::params>(
          "layout", "--layout",
          "bytes per parameter: reference (2+2+12), megatron (bf16 weights, fp32 grads, master and moments), amp "
          "(fp32 weights, grads and moments, bf16 copies)",
          d::kParamLayoutNames, always, step),
      d::integer<&X::ep, &C::ep>("ep", "--ep",
                                 "expert-parallel degree of a mixture-of-experts model: GPUs of the data-parallel "
                                 "group its experts are split over",
                                 1, std::int64_t{1} << 20, always, block),
      d::integer<&X::etp, &C::etp>("etp", "--etp",
                                   "expert tensor-parallel degree of a mixture-of-experts model (Megatron-Core's "
                                   "--expert-tensor-parallel-size): GPUs of the tensor-parallel group each routed "
                                   "expert is split over, dividing tp; 0: tp (the default)",
                                   0, std::int64_t{1} << 20, changed, block),
      d::given<&X::first_stage_blocks>(
          "first_stage_blocks", "--first-stage-blocks",
          "blocks on the first pipeline stage (Megatron-LM's --decoder-first-pipeline-num-layers; the stages not "
          "given share the rest evenly), or auto: the partition that balances the slowest stage (docs/models.md); "
          "0: an even share; not given: even, or under a framework's runtime balanced where pp does not divide the "
          "depth; configs: a list (each value with every other option)"),
      d::given<&X::last_stage_blocks>(
          "last_stage_blocks", "--last-stage-blocks",
          "blocks on the last pipeline stage (--decoder-last-pipeline-num-layers), or auto; 0: an even share; "
          "configs: a list"),
      d::named<&X::precision, &C::precision>(
          "precision", "--precision",
          "data type of the linear layers' GEMMs: bf16; fp8 as the runtime runs it (its fp8_recipe: Transformer "
          "Engine's delayed or current scaling, MXFP8 block scaling); mxfp8 (MXFP8 block scaling) or nvfp4 "
          "(NVFP4, Transformer Engine's NVFP4BlockScaling) under the runtime's other FP8 settings, on the "
          "system's MXFP8 or FP4 tensor cores; 1d only; docs/fp8.md",
          kPrecisionNames, changed, block),
      d::named<&X::schedule, &C::schedule>(
          "schedule", "--schedule",
          "pipeline schedule: 1f1b (interleaved with --interleave > 1), zb-h1 or zb-h2 (zero bubble: the backward "
          "split into input and weight gradients), dualpipe (DeepSeek-V3's, fed from both ends); docs/models.md",
          kScheduleNames, changed, step),
      d::named<&X::cp_comm, &C::cp_comm>(
          "cp_comm", "--cp-comm",
          "how context-parallel attention exchanges keys and values: p2p is ring attention, overlapped; the others "
          "gather them (Llama 3's) or split the heads over the cp group or part of it (DeepSpeed-Ulysses's "
          "all-to-all; docs/context_parallel.md)",
          kCpCommNames, changed, block, std::size(kCpCommNames), [](const Layout& c) { return c.tensor.cp > 1; }),
      d::named<&X::offload, &C::offload>(
          "offload", "--offload",
          "what the step keeps in host memory, over the system's host link: none, optimizer (master weights and "
          "Adam moments, the optimizer step on the CPU), weights (also ZeRO-3's weight shards, streamed per block), "
          "activations (saved activations, copied out and back per block); where the runtime offloads it "
          "(docs/offload.md)",
          kOffloadNames, changed, step),
      d::integer<&X::offload_percent, &C::offload_percent>(
          "offload_percent", "--offload-percent",
          "with --offload optimizer: the percentage of the optimizer's parameters whose states and step are on the "
          "host, the rest updated on the GPU (Megatron-Core's --optimizer-offload-fraction x 100; the first value "
          "for layouts that keep the optimizer on the GPU; docs/offload.md)",
          1, 100, changed, step, [](const Layout& c) { return c.exec.offload == Offload::Optimizer; }),
      [] {
        // the two orders coincide with one pipeline stage or one data-parallel rank
        ExecutionOption o = d::named<&X::rank_order, &C::rank_order>(
            "rank_order", "--rank-order",
            "how ranks are numbered: tp-cp-ep-dp-pp (Megatron-Core's: pipeline stages outermost) or tp-cp-ep-pp-dp "
            "(Llama 3's: a pipeline's stages inside, data-parallel replicas outermost); which groups cross the "
            "network's upper tiers (docs/network.md); default: the runtime's rank_order",
            kRankOrderNames, changed, step, 0, [](const Layout& c) { return c.pp > 1 && c.dp > 1; });
        o.runtime_default = true;
        return o;
      }(),
      d::runtime_on_off<&X::fp8_params, &C::fp8_params>(
          "fp8_params", "--fp8-params",
          "with --precision fp8: the FP8 GEMMs' weights kept in FP8 in place of bf16 weights and their FP8 "
          "copies, gathered in FP8 (Megatron-LM's --fp8-param-gather, NeMo's fp8_params; docs/fp8.md); default: "
          "the runtime's fp8_weight_gather",
          [](const Layout& c) { return c.exec.precision != Precision::Bf16; }),
      d::runtime_on_off<&X::tp_comm_overlap, &C::tp_comm_overlap>(
          "tp_comm_overlap", "--tp-comm-overlap",
          "tensor-parallel collectives overlapped with the GEMMs they feed or follow (Megatron-LM's "
          "--tp-comm-overlap, Transformer Engine's userbuffers; NeMo's tp_comm_overlap): on hides the runtime's "
          "tp_comm_overlap share of each; default: the runtime's (tp_comm_overlap_default; docs/runtimes.md)",
          [](const Layout& c) { return c.tensor.tp1 * c.tensor.tp2 > 1; }),
      [] {
        ExecutionOption o = d::named<&X::moe_dispatcher, &C::moe_dispatcher>(
            "moe_dispatcher", "--moe-dispatcher",
            "how a mixture-of-experts layer's dispatch and combine move the routed tokens: alltoall (a copy a "
            "token and routed expert, Megatron-Core's alltoall dispatcher) or deepep (a copy a token and GPU "
            "holding one of its experts, one a NVLink domain across domains: DeepEP, HybridEP; Megatron-Core's "
            "flex dispatcher; docs/models.md); default: the runtime's moe_dispatcher",
            kMoeDispatcherNames, changed, block, 0, [](const Layout& c) { return c.exec.ep > 1; });
        o.runtime_default = true;
        return o;
      }(),
  };
}();

// How many options the block's cost reads (block_cost), and their codes in a layout's execution,
// in kExecutionOptions' order (inlined: the getters are constants).
inline constexpr std::size_t kBlockCostOptions = [] {
  std::size_t n = 0;
  for (const ExecutionOption& o : kExecutionOptions) n += o.block_cost ? 1 : 0;
  return n;
}();
namespace execution_option_detail {
template <std::size_t... I>
constexpr std::array<std::int64_t, kBlockCostOptions> block_cost_codes(const Execution& x, std::index_sequence<I...>) {
  std::array<std::int64_t, kBlockCostOptions> out{};
  std::size_t n = 0;
  ((kExecutionOptions[I].block_cost ? (out[n++] = kExecutionOptions[I].get(x), 0) : 0), ...);
  return out;
}
}  // namespace execution_option_detail
constexpr std::array<std::int64_t, kBlockCostOptions> block_cost_codes(const Execution& x) {
  return execution_option_detail::block_cost_codes(x, std::make_index_sequence<kExecutionOptions.size()>{});
}

// The choices of one configuration: every searched option's list its one value (cp: the split's).
ExecutionChoices choices_of(const Execution& x, std::int64_t cp);
// Whether a layout (its execution and split) is one that choices list: each searched option's value
// in its list, and the first where the option does not apply (ExecutionOption::applies); cp the
// split's.
bool listed_in(const ExecutionChoices& c, const Layout& layout);

// The option of `key` ("zero"), or nullptr.
const ExecutionOption* find_execution_option(std::string_view key);

// A value as flags and texts spell it: the name of a code, "on"/"off", or the integer.
std::string option_value_name(const ExecutionOption& o, std::int64_t code);
// The code of a name a named or on/off option spells a value with (option_value_name's inverse,
// every name including those a runtime sets: mxfp8), or nullopt.
std::optional<std::int64_t> option_code_of(const ExecutionOption& o, std::string_view name);
// Whether `code` is one the option can have (a flag's range, on/off, one of its names): what a
// journal record or a sweep's file may hold.
bool option_code_possible(const ExecutionOption& o, std::int64_t code);
// The code of a flag's value; InputError naming `flag` and the value otherwise ("--zero must be an
// integer from 0 to 3, got '5'"; "--recompute must be none, selective or full, got 'x'").
std::int64_t parse_option_value(const ExecutionOption& o, const std::string& text, const std::string& flag);
// An integer flag value from lo to hi; InputError naming the flag and the value otherwise.
std::int64_t parse_integer_value(const std::string& text, const std::string& flag, std::int64_t lo, std::int64_t hi);
// Whether texts and arguments show the option at this execution's value (OptionShown).
bool option_shown(const ExecutionOption& o, const Execution& x);

}  // namespace perfsweep
