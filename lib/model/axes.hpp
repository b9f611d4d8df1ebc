#pragma once
// The parallel axes, declared once: what each splits, the collectives it causes, how its GPUs
// share an NVLink domain, the rule it must meet, and the Layout fields it reads and writes. A
// strategy is a preset of them (StrategyPlan::axes, named in plan.cpp). Generated from this table:
// the layout's configuration keys (model/plan.hpp kConfigKeys: reports, HDF5 columns, the journal's
// schema, the tie-break), the NVLink placements of any number of axes (for_each_placement), the
// placement search dimension and configs' placement filter, the degree and --nv-* flags of
// `estimate` and `configs` (apps/common/axis_options.hpp), and validate_layout's checks of degrees
// and shares. The layout's two integers that cut a GPU's work rather than spread it over GPUs (mbs,
// nb) are entries too, without a GPU count or a share; the expert and virtual-pipeline axes are
// execution options (model/execution_options.hpp: ep, interleave) whose entries here describe them.
#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "model/layout.hpp"

namespace perfsweep {

// What an axis splits.
enum class AxisSplits : std::uint8_t {
  Replicas,      // the global batch's samples, over model replicas
  Features,      // heads and hidden features: the weights and each token's activations
  Sequence,      // a sample's tokens
  Layers,        // the blocks, over pipeline stages
  Experts,       // the experts of a mixture-of-experts layer
  MicroBatches,  // a replica's samples, into micro-batches run in turn (one GPU's work, not GPUs)
  Blocks,        // SUMMA's panels of a GEMM (one GPU's work, not GPUs)
};

struct LayoutAxis {
  const char* name;  // its configuration key; `estimate`'s flag is --name with '-' for '_'
  AxisSplits splits;
  const char* what;       // what it splits, in words (the flags' help)
  const char* per_layer;  // the collectives it causes per layer, forward and backward
  const char* per_step;   // per step
  const char* nvlink;     // how its GPUs share an NVLink domain
  const char* rule;       // the constraints it must meet (validate_layout and the search check them)
  bool gpus;              // its degree multiplies the GPU count
  // Its degree; set_degree: nullptr where it is derived or an execution option's.
  std::int64_t (*degree)(const Layout&);
  void (*set_degree)(Layout&, std::int64_t);
  // Its NVLink share, the configuration key nv_key, placed by the search: nullptr where it has none
  // of its own (vp on the pipeline's GPUs, mbs and nb on one GPU). ep's share is derived from the
  // data-parallel group's (nv, no nv_key).
  const char* nv_key = nullptr;
  std::int64_t (*nv)(const Layout&) = nullptr;
  void (*set_nv)(Layout&, std::int64_t) = nullptr;
  // Its degree is a layout key (ep and vp are reported as the execution options ep and interleave).
  bool layout_key = true;
  bool key_in_every_strategy = false;  // tp: reported by the 2d strategies too, as tp1 x tp2
  bool orders_ties = true, nv_orders_ties = true;  // part of the tie-break tuple (kConfigKeys)
  // Reports leave its keys out at this value (its reference value) so the reference's outputs keep
  // their keys; HDF5 columns and fingerprints carry them always. -1: never left out.
  std::int64_t omitted_at = -1;
  // `estimate` and `configs` take --name for its degree (cp's is the execution flags' --cp, a list
  // in `sweep` as well); only an axis that multiplies the GPU count and is set has one.
  bool own_flag = true;
  constexpr bool placed() const { return nv_key != nullptr; }
  // The block's cost reads it: an axis that splits a block's tensors or one GPU's work does, one of
  // replicas or layers (dp, pp, vp) does not. Its share (its degree where it has none) is part of
  // the search's block cache key (block_axis_codes).
  constexpr bool block_cost() const { return splits != AxisSplits::Replicas && splits != AxisSplits::Layers; }
  constexpr bool has_degree_flag() const { return gpus && set_degree != nullptr && own_flag; }
};

// In the order NVLink placements are enumerated (the reference's nested loops: tensor, then data,
// then pipeline; context parallelism in the second tensor degree's place, so that cp = 1 leaves 1d's
// placements and their order as they were).
inline constexpr LayoutAxis kAxes[] = {
    {.name = "tp",
     .splits = AxisSplits::Features,
     .what = "tensor-parallel degree: heads and features (1d, Megatron-LM's)",
     .per_layer = "an all-reduce of the activations after attention and after the MLP, forward and backward (with "
                  "sequence parallelism a reduce-scatter and an all-gather each)",
     .per_step = "none",
     .nvlink = "its group's GPUs first: rank order tp innermost",
     .rule = "divides the heads, embed_dim, and is a multiple or a divisor of the key/value heads",
     .gpus = true,
     .degree = [](const Layout& c) { return c.tensor.tp1 * c.tensor.tp2; },
     .set_degree = [](Layout& c, std::int64_t v) { c.tensor.tp1 = v; },
     .nv_key = "nv_tp",
     .nv = [](const Layout& c) { return c.tensor.nv1; },
     .set_nv = [](Layout& c, std::int64_t v) { c.tensor.nv1 = v; },
     .key_in_every_strategy = true,
     .orders_ties = false,
     .nv_orders_ties = false},
    {.name = "tp1",
     .splits = AxisSplits::Features,
     .what = "first tensor dimension: heads and features (2d, 2d-seqp)",
     .per_layer = "2d: SUMMA's broadcasts of panels over the grid's rows; 2d-seqp: tp's all-reduces",
     .per_step = "none",
     .nvlink = "its group's GPUs first: rank order tp1 innermost",
     .rule = "divides the heads and embed_dim",
     .gpus = true,
     .degree = [](const Layout& c) { return c.tensor.tp1; },
     .set_degree = [](Layout& c, std::int64_t v) { c.tensor.tp1 = v; },
     .nv_key = "nv_tp1",
     .nv = [](const Layout& c) { return c.tensor.nv1; },
     .set_nv = [](Layout& c, std::int64_t v) { c.tensor.nv1 = v; }},
    {.name = "tp2",
     .splits = AxisSplits::Sequence,
     .what = "second dimension: the sequence (2d, 2d-seqp)",
     .per_layer = "2d: SUMMA's broadcasts over the grid's columns; 2d-seqp: the all-gather of keys and values for "
                  "attention",
     .per_step = "2d-seqp: joins the data-parallel gradient reduction (its GPUs hold replicas)",
     .nvlink = "after tp1",
     .rule = "2d: divides embed_dim; each GPU keeps at least 128 tokens",
     .gpus = true,
     .degree = [](const Layout& c) { return c.tensor.tp2; },
     .set_degree = [](Layout& c, std::int64_t v) { c.tensor.tp2 = v; },
     .nv_key = "nv_tp2",
     .nv = [](const Layout& c) { return c.tensor.nv2; },
     .set_nv = [](Layout& c, std::int64_t v) { c.tensor.nv2 = v; }},
    {.name = "cp",
     .splits = AxisSplits::Sequence,
     .what = "context-parallel degree (1d): GPUs each sequence is split over",
     .per_layer = "ring attention's exchange of keys and values (p2p, overlapped with the attention blocks) or their "
                  "all-gather (Llama 3's), forward and backward",
     .per_step = "joins the data-parallel gradient reduction and the optimizer's shards (its GPUs hold replicas)",
     .nvlink = "after the tensor group (Megatron-Core's tp-cp-ep-dp-pp)",
     .rule = "1d with flash attention; the sequence splits into 2 cp chunks (the load-balanced causal split)",
     .gpus = true,
     .degree = [](const Layout& c) { return c.tensor.cp; },
     .set_degree = [](Layout& c, std::int64_t v) { c.tensor.cp = v; },
     .nv_key = "nv_cp",
     .nv = [](const Layout& c) { return c.tensor.nv_cp; },
     .set_nv = [](Layout& c, std::int64_t v) { c.tensor.nv_cp = v; },
     .omitted_at = 1,
     .own_flag = false},
    {.name = "dp",
     .splits = AxisSplits::Replicas,
     .what = "data-parallel degree: model replicas",
     .per_layer = "ZeRO-3: an all-gather of each layer's weights (again in the backward) and a reduce-scatter of its "
                  "gradients",
     .per_step =
         "the gradients' reduction (all-reduce, or ZeRO's reduce-scatter and all-gather of the updated weights)",
     .nvlink = "after the tensor and context groups",
     .rule = "divides the global batch",
     .gpus = true,
     .degree = [](const Layout& c) { return c.dp; },
     .set_degree = [](Layout& c, std::int64_t v) { c.dp = v; },
     .nv_key = "nv_dp",
     .nv = [](const Layout& c) { return c.nv_dp; },
     .set_nv = [](Layout& c, std::int64_t v) { c.nv_dp = v; }},
    {.name = "pp",
     .splits = AxisSplits::Layers,
     .what = "pipeline stages",
     .per_layer = "none",
     .per_step = "each micro-batch's activations to the next stage and gradients back (p2p), and the bubble",
     .nvlink = "outermost (Megatron-Core's order) or inside the data-parallel replicas (rank_order tp-cp-ep-pp-dp)",
     .rule = "a stage holds whole MoE groups; the stages' blocks are the runtime's partition",
     .gpus = true,
     .degree = [](const Layout& c) { return c.pp; },
     .set_degree = [](Layout& c, std::int64_t v) { c.pp = v; },
     .nv_key = "nv_pp",
     .nv = [](const Layout& c) { return c.nv_pp; },
     .set_nv = [](Layout& c, std::int64_t v) { c.nv_pp = v; }},
    {.name = "ep",
     .splits = AxisSplits::Experts,
     .what = "expert-parallel degree: the experts, over data-parallel ranks",
     .per_layer = "two all-to-alls of the routed tokens around each MoE layer, forward and backward",
     .per_step = "the expert weights' gradients reduce over the expert-data-parallel group (dp / ep)",
     .nvlink = "inside the data-parallel group's share (consecutive data-parallel ranks)",
     .rule = "divides the experts and dp; a dense model has ep = 1",
     .gpus = false,
     .degree = [](const Layout& c) { return c.exec.ep; },
     .set_degree = nullptr,
     .nv = expert_share,
     .layout_key = false},
    {.name = "etp",
     .splits = AxisSplits::Experts,
     .what =
         "expert tensor-parallel degree: each routed expert's weights, over the innermost GPUs of the tensor group",
     .per_layer = "the routed tokens of the etp group's tp / etp share in the all-to-alls; each expert's GEMMs "
                  "reduce-scatter and gather over etp, not tp",
     .per_step = "the expert weights' gradients reduce over dp x tp / (etp x ep) GPUs (Megatron-Core's expert data "
                 "parallelism)",
     .nvlink = "inside the tensor group's share: gcd(etp, nv_tp)",
     .rule = "divides tp (default: tp)",
     .gpus = false,
     .degree = expert_tensor_degree,
     .set_degree = nullptr,
     .nv = expert_tensor_share,
     .layout_key = false},
    {.name = "vp",
     .splits = AxisSplits::Layers,
     .what = "virtual pipeline stages a GPU (interleaved 1F1B)",
     .per_layer = "none",
     .per_step = "vp times the pipeline's p2p transfers; the bubble divided by vp",
     .nvlink = "the pipeline's GPUs",
     .rule = "pp > 1, divides a stage's blocks, the micro-batches a multiple of pp",
     .gpus = false,
     .degree = [](const Layout& c) { return c.exec.interleave; },
     .set_degree = nullptr,
     .layout_key = false},
    {.name = "mbs",
     .splits = AxisSplits::MicroBatches,
     .what = "micro-batch size",
     .per_layer = "none",
     .per_step = "none",
     .nvlink = "one GPU's work",
     .rule = "divides the local batch; its tokens split over the GPUs sharing a micro-batch",
     .gpus = false,
     .degree = [](const Layout& c) { return c.mbs; },
     .set_degree = [](Layout& c, std::int64_t v) { c.mbs = v; }},
    {.name = "nb",
     .splits = AxisSplits::Blocks,
     .what = "SUMMA blocks (2d)",
     .per_layer = "one broadcast of a panel a block",
     .per_step = "none",
     .nvlink = "one GPU's work",
     .rule = "divides embed_dim into blocks of at least 512 columns (the search's)",
     .gpus = false,
     .degree = [](const Layout& c) { return c.tensor.nb; },
     .set_degree = [](Layout& c, std::int64_t v) { c.tensor.nb = v; }},
};
inline constexpr std::size_t kAxisCount = std::size(kAxes);
static_assert(kAxisCount <= 32, "StrategyPlan::axes holds 32 axes");

// How many axes the block's cost reads, and what it reads of them in a layout, in kAxes' order: each
// one's NVLink share, or its degree where it has none (mbs, nb); with_shares false: the degrees
// alone, the shares 0 (what the block's memory reads). Inlined: the getters are constants.
inline constexpr std::size_t kBlockCostAxes = [] {
  std::size_t n = 0;
  for (const LayoutAxis& a : kAxes) n += a.block_cost() ? 1u : 0u;
  return n;
}();
namespace axis_detail {
template <std::size_t... I>
constexpr std::array<std::int64_t, kBlockCostAxes> block_axis_codes(const Layout& c, bool with_shares,
                                                                   std::index_sequence<I...>) {
  std::array<std::int64_t, kBlockCostAxes> out{};
  std::size_t n = 0;
  ((kAxes[I].block_cost() ? (out[n++] = kAxes[I].nv != nullptr ? (with_shares ? kAxes[I].nv(c) : 0)
                                                                : kAxes[I].degree(c),
                             0)
                          : 0),
   ...);
  return out;
}
}  // namespace axis_detail
constexpr std::array<std::int64_t, kBlockCostAxes> block_axis_codes(const Layout& c, bool with_shares = true) {
  return axis_detail::block_axis_codes(c, with_shares, std::make_index_sequence<kAxisCount>{});
}

// kAxes' index of `name` (a compile-time error where there is none).
consteval std::size_t axis_index(std::string_view name) {
  for (std::size_t i = 0; i < kAxisCount; ++i) {
    if (name == kAxes[i].name) return i;
  }
  throw "no such axis";
}
// The first name of a list of names ("dp tp pp": "dp"), taken off the list.
consteval std::string_view next_name(std::string_view& names) {
  const std::size_t end = names.find(' ');
  const std::string_view name = names.substr(0, end);
  names = end == std::string_view::npos ? std::string_view{} : names.substr(end + 1);
  return name;
}
// The axes named in `names` ("dp tp pp"), as StrategyPlan::axes' bits.
consteval std::uint32_t axis_mask(std::string_view names) {
  std::uint32_t out = 0;
  while (!names.empty()) {
    if (const std::string_view name = next_name(names); !name.empty()) out |= 1u << axis_index(name);
  }
  return out;
}
inline bool has_axis(const StrategyPlan& p, std::size_t axis) { return (p.axes >> axis & 1u) != 0; }
// A second tensor degree (tp2: 2d, 2d-seqp); SUMMA blocks (nb: 2d).
inline bool has_tp2(const StrategyPlan& p) { return has_axis(p, axis_index("tp2")); }
inline bool has_summa_blocks(const StrategyPlan& p) { return has_axis(p, axis_index("nb")); }

// A configuration key's flag, "--nv-tp" for nv_tp: `estimate`'s flags are the keys with '-' for '_'.
std::string key_flag(std::string_view key);

// "1d", "2d or 2d-seqp", "every strategy": the strategies that have the axis.
std::string axis_strategies(std::size_t axis);

// The axes a strategy places on NVLink domains, in kAxes' order: the 1d strategy's tp, cp, dp, pp;
// the 2d strategies' tp1, tp2, dp, pp.
inline constexpr std::size_t kMaxPlacedAxes = 8;
struct PlacedAxes {
  std::array<std::uint8_t, kMaxPlacedAxes> axis{};
  std::size_t count = 0;
};
const PlacedAxes& placed_axes(Strategy strategy);
// Writes a placement (one NVLink share per placed axis, in their order) into the layout.
inline void set_placement(Layout& c, const PlacedAxes& placed, std::span<const std::int64_t> nv) {
  for (std::size_t i = 0; i < placed.count; ++i) kAxes[placed.axis[i]].set_nv(c, nv[i]);
}

// Every NVLink placement of groups of these degrees on domains of nvs GPUs, as the reference's
// search enumerates them for its fixed (tp1, tp2, dp, pp): every (n_1, ..., n_k) with n_i dividing
// degree i and n_1 ... n_k = nvs, n_1 outermost, each ascending; or the degrees themselves when the
// whole job fits in one domain. Where the GPUs are more than a domain but not a multiple of it
// (200 GPUs on NVL72 racks), no placement fills every domain, and the reference's search finds
// none; then every placement that fills the domain as far as whole groups allow: n_1 ... n_k at
// most nvs, and no n_i can be raised to the next divisor of its degree within the domain (the
// rank order's placement, rank_order_shares, is among them). Where the GPUs are a multiple of the
// domain, as in every paper run, the placements are the reference's alone. Any number of axes up
// to kMaxPlacedAxes, any domain size (NVL72's 72 among them). Without allocating.
namespace placement_detail {
template <typename F>
void split(std::span<const std::int64_t> degrees, std::size_t i, std::int64_t rest,
           std::array<std::int64_t, kMaxPlacedAxes>& n, F& f) {
  if (i + 1 == degrees.size()) {
    if (degrees[i] % rest != 0) return;
    n[i] = rest;
    f(std::span<const std::int64_t>(n.data(), degrees.size()));
    return;
  }
  for (std::int64_t k = 1; k <= rest; ++k) {
    if (rest % k != 0 || degrees[i] % k != 0) continue;
    n[i] = k;
    split(degrees, i + 1, rest / k, n, f);
  }
}
// The next divisor of `degree` above `share` (degree itself when share is degree).
inline std::int64_t next_divisor(std::int64_t degree, std::int64_t share) {
  for (std::int64_t k = share + 1; k < degree; ++k) {
    if (degree % k == 0) return k;
  }
  return degree;
}
// Partial domains: every n_i dividing degree i with the product at most `room` (n_1 outermost,
// each ascending), kept where no share can grow within the domain.
template <typename F>
void split_partial(std::span<const std::int64_t> degrees, std::size_t i, std::int64_t used, std::int64_t nvs,
                   std::array<std::int64_t, kMaxPlacedAxes>& n, F& f) {
  if (i == degrees.size()) {
    for (std::size_t j = 0; j < degrees.size(); ++j) {
      if (n[j] < degrees[j] && used / n[j] * next_divisor(degrees[j], n[j]) <= nvs) return;
    }
    f(std::span<const std::int64_t>(n.data(), degrees.size()));
    return;
  }
  for (std::int64_t k = 1; k <= degrees[i] && used * k <= nvs; ++k) {
    if (degrees[i] % k != 0) continue;
    n[i] = k;
    split_partial(degrees, i + 1, used * k, nvs, n, f);
  }
}
}  // namespace placement_detail
template <typename F>
void for_each_nv_split(std::span<const std::int64_t> degrees, std::int64_t nvs, F&& f) {
  std::int64_t gpus = 1;
  for (const std::int64_t d : degrees) gpus *= d;
  if (gpus <= nvs) {
    f(degrees);
    return;
  }
  if (degrees.empty() || degrees.size() > kMaxPlacedAxes || nvs < 1) return;
  std::array<std::int64_t, kMaxPlacedAxes> n{};
  if (gpus % nvs == 0) {
    placement_detail::split(degrees, 0, nvs, n, f);
  } else {
    placement_detail::split_partial(degrees, 0, 1, nvs, n, f);
  }
}

// The NVLink placement a framework's rank order makes (Megatron-Core's RankGenerator; torchrun's
// local ranks fill a node in order): consecutive ranks share a domain, the innermost axis varying
// fastest, so the domain holds as much of the innermost group as it can, then of the next, in the
// order of the layout's rank order (tp, cp, dp, pp for tp-cp-ep-dp-pp; tp, cp, pp, dp for
// tp-cp-ep-pp-dp; tp1, tp2 first for the 2d strategies; expert parallelism lies inside dp). A share
// is the largest divisor of its group that fits in what the inner shares leave of the domain
// (whole groups, so a domain that no product of them fills is filled in part, as a launcher's
// segments do it: 64 of an NVL72 rack's 72 GPUs for TP 2, CP 4 and a data-parallel group of 64).
// One share per placed_axes(strategy) axis, in their order.
inline std::array<std::int64_t, kMaxPlacedAxes> rank_order_shares(const Layout& c, std::int64_t nvs) {
  const PlacedAxes& placed = placed_axes(c.strategy);
  // placed positions, innermost first: all but dp and pp in their order, then dp and pp by the order
  constexpr std::size_t dp_axis = axis_index("dp"), pp_axis = axis_index("pp");
  std::array<std::size_t, kMaxPlacedAxes> order{};
  std::size_t n = 0, dp = placed.count, pp = placed.count;
  for (std::size_t i = 0; i < placed.count; ++i) {
    if (placed.axis[i] == dp_axis) {
      dp = i;
    } else if (placed.axis[i] == pp_axis) {
      pp = i;
    } else {
      order[n++] = i;
    }
  }
  const bool pipeline_inner = c.exec.rank_order == RankOrder::PipelineInnerDataOuter;
  for (const std::size_t i : pipeline_inner ? std::array{pp, dp} : std::array{dp, pp}) {
    if (i < placed.count) order[n++] = i;
  }
  std::array<std::int64_t, kMaxPlacedAxes> shares{};
  std::int64_t room = std::max<std::int64_t>(nvs, 1);
  for (std::size_t k = 0; k < n; ++k) {
    const std::int64_t degree = kAxes[placed.axis[order[k]]].degree(c);
    std::int64_t share = std::min(degree, room);
    while (share > 1 && degree % share != 0) --share;
    shares[order[k]] = std::max<std::int64_t>(share, 1);
    room /= shares[order[k]];
  }
  return shares;
}

// Whether the layout is placed as its rank order places it.
inline bool is_rank_order_placement(const Layout& c, std::int64_t nvs) {
  const PlacedAxes& placed = placed_axes(c.strategy);
  const std::array<std::int64_t, kMaxPlacedAxes> shares = rank_order_shares(c, nvs);
  for (std::size_t i = 0; i < placed.count; ++i) {
    if (kAxes[placed.axis[i]].nv(c) != shares[i]) return false;
  }
  return true;
}

// Every NVLink placement of the layout's degrees that its strategy allows: f(nv), one share per
// placed_axes(strategy) axis in their order (set_placement writes them).
template <typename F>
void for_each_placement(const Layout& c, std::int64_t nvs, F&& f) {
  const PlacedAxes& placed = placed_axes(c.strategy);
  std::array<std::int64_t, kMaxPlacedAxes> degrees{};
  for (std::size_t i = 0; i < placed.count; ++i) degrees[i] = kAxes[placed.axis[i]].degree(c);
  for_each_nv_split(std::span<const std::int64_t>(degrees.data(), placed.count), nvs, f);
}

}  // namespace perfsweep
