#pragma once
// A parallel plan: how a step is laid out on n = dp x tp1 x tp2 x cp x pp GPUs, and what each strategy
// makes of the degrees (the reference's execute_1d, execute_2d, execute_seqp): which GPUs share a
// micro-batch's tokens, which join the data-parallel reduction, which share the optimizer
// states, and where the NVLink domain may sit.
#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/axes.hpp"
#include "model/block.hpp"
#include "model/execution_options.hpp"
#include "model/grid.hpp"
#include "model/layout.hpp"

namespace perfsweep {


// Megatron-Core's load-balanced causal split for context parallelism: the sequence in 2 cp
// chunks, two on each rank.
inline bool cp_splits_sequence(std::int64_t seq_len, std::int64_t cp) { return seq_len % (2 * cp) == 0; }
// Whether a layout can keep `k` on the host as the frameworks run it: weights offload streams
// ZeRO-3's shards (DeepSpeed's offload_param; FSDP shards fully); activations offload runs without
// pipeline parallelism and recomputation (Megatron-Core's cpu_offloading).
inline bool offload_runs_with(Offload k, const Layout& c) {
  if (k == Offload::Weights) return c.exec.zero == 3;
  if (k == Offload::Activations) return c.pp == 1 && c.exec.recompute == Recompute::None;
  return true;
}
// The keys that name a configuration, in the reference's order: the one list that reports,
// HDF5 columns (and their `config_keys` attribute), journal fingerprints and the search's
// tie-break read. The degrees and NVLink shares are the axes' (model/axes.hpp kAxes), the rest the
// execution options' (kExecutionOptions).
enum class KeyKind : std::uint8_t {
  Degree,     // the reference's "config" keys: degrees, micro-batch size, SUMMA blocks
  Placement,  // NVLink placement (nv_*), reported with the stats as the reference does
  Execution,  // execution options beyond the reference (recompute, sp, zero, interleave, layout, ep,
              // the first and last pipeline stages' blocks)
};
struct ConfigKey {
  const char* name;
  KeyKind kind;
  std::int64_t (*value)(const Layout&);
  std::uint32_t axis_bit;  // the strategies with this axis (StrategyPlan::axes) have the key; 0: every one
  bool orders_ties;        // part of the tie-break tuple; a derived key (tp = tp1 x tp2) is not
  // A key beyond the reference's degrees and placements (cp, nv_cp) that reports leave out at
  // this value, its reference value, so the reference's outputs keep their keys; HDF5 columns and
  // fingerprints carry it always. kAlwaysReported: never left out.
  std::int64_t omitted_at = kAlwaysReported;
  static constexpr std::int64_t kAlwaysReported = -1;
  bool applies(const StrategyPlan& p) const { return axis_bit == 0 || (p.axes & axis_bit) != 0; }
};
namespace config_key_detail {
// The reference's orders of the axes' keys (its reports' and its tie-break's); an axis named in
// neither comes after them, in kAxes' order.
inline constexpr std::string_view kDegreeOrder = "dp tp tp1 tp2 pp mbs nb cp";
inline constexpr std::string_view kPlacementOrder = "tp tp1 tp2 dp pp cp";
// The axes in `order`, then the others, each once: their indices in kAxes.
consteval std::array<std::size_t, kAxisCount> axis_order(std::string_view order) {
  std::array<std::size_t, kAxisCount> out{};
  std::size_t n = 0;
  for (std::string_view names = order; !names.empty();) out[n++] = axis_index(next_name(names));
  const std::uint32_t named = axis_mask(order);
  for (std::size_t i = 0; i < kAxisCount; ++i) {
    if ((named >> i & 1u) == 0) out[n++] = i;
  }
  return out;
}
consteval std::size_t layout_key_count() {
  std::size_t n = 0;
  for (const LayoutAxis& a : kAxes) n += (a.layout_key ? 1u : 0u) + (a.placed() ? 1u : 0u);
  return n;
}
consteval std::array<ConfigKey, layout_key_count()> layout_keys() {
  std::array<ConfigKey, layout_key_count()> out{};
  std::size_t n = 0;
  for (const std::size_t i : axis_order(kDegreeOrder)) {
    const LayoutAxis& a = kAxes[i];
    if (a.layout_key) {
      out[n++] = {a.name, KeyKind::Degree, a.degree, a.key_in_every_strategy ? 0u : 1u << i, a.orders_ties,
                  a.omitted_at};
    }
  }
  for (const std::size_t i : axis_order(kPlacementOrder)) {
    const LayoutAxis& a = kAxes[i];
    if (a.placed()) out[n++] = {a.nv_key, KeyKind::Placement, a.nv, 1u << i, a.nv_orders_ties, a.omitted_at};
  }
  return out;
}
}  // namespace config_key_detail
// The axes' degree keys (dp, tp, tp1, tp2, pp, mbs, nb, cp), then their NVLink shares (nv_tp,
// nv_tp1, nv_tp2, nv_dp, nv_pp, nv_cp).
inline constexpr auto kLayoutKeys = config_key_detail::layout_keys();
namespace config_key_detail {
template <std::size_t I>
constexpr ConfigKey execution_key() {
  return {kExecutionOptions[I].key, KeyKind::Execution,
          [](const Layout& c) { return kExecutionOptions[I].get(c.exec); }, 0u, true};
}
template <std::size_t... I>
constexpr auto config_keys(std::index_sequence<I...>) {
  std::array<ConfigKey, std::size(kLayoutKeys) + sizeof...(I)> out{};
  std::size_t n = 0;
  for (const ConfigKey& k : kLayoutKeys) out[n++] = k;
  ((out[n++] = execution_key<I>()), ...);
  return out;
}
}  // namespace config_key_detail
// The degrees and placements above, then every execution option (model/execution_options.hpp
// kExecutionOptions) in its declared order.
inline constexpr auto kConfigKeys = config_key_detail::config_keys(std::make_index_sequence<kExecutionOptions.size()>{});

// The blocks of each pipeline stage: the first's, each of the pp - 2 middle stages', the last's
// (with pp = 1 the one stage's, in all three).
struct StageBlocks {
  std::int64_t first = 0, middle = 0, last = 0;
  // The middle stage costed for all of them: where the middle stages' counts differ (nanotron's
  // partition) the first holding the most blocks, `middle` of them; its index sets the
  // micro-batches in flight there.
  std::int64_t middle_index = 1;
  // Execution::layout_chunk_blocks: a pipeline layout's chunk, every one but the first stage's
  // first and the last stage's last (0: the chunks interleaved_chunks cuts).
  std::int64_t chunk = 0;
  // Every stage holds as many blocks (the reference's depth / pp): one stage stands for them all.
  bool even() const { return first == middle && last == middle; }
};
// nanotron's partition (StagePartition::Nanotron; nanotron/models/base.py, build_model and
// LlamaModel.get_block_compute_costs): the blocks in order, each to the current stage, which closes
// once the cumulative cost (4 e^2 + 3 f e a block) passes its share of the total (the LM head's V e
// counted in the total); with pp = 1 every block on the one stage. The stages the blocks do not
// reach (pp near or beyond the depth) hold none; the last still holds the LM head. Without
// allocating.
StageBlocks nanotron_stage_blocks(const Transformer& m, std::int64_t pp);
// The stages' blocks of the runtime's partition (`partition`, Mechanisms::stage_partition; the
// reference's: even) where the execution gives no count; Megatron-LM's otherwise (its
// get_num_layers_to_build): the first and last stages hold the blocks the execution gives them
// (Execution::first_stage_blocks, last_stage_blocks), the other stages the rest in equal shares;
// nothing given is depth / pp each. It assumes a partition validate_layout accepts.
inline StageBlocks stage_blocks(const Transformer& m, std::int64_t pp, const Execution& x,
                                StagePartition partition = StagePartition::Even) {
  if (partition == StagePartition::Nanotron && x.first_stage_blocks == 0 && x.last_stage_blocks == 0 &&
      pp > 1) [[unlikely]] {
    return nanotron_stage_blocks(m, pp);
  }
  const std::int64_t depth = m.depth;
  const std::int64_t given = (x.first_stage_blocks > 0 ? 1 : 0) + (x.last_stage_blocks > 0 ? 1 : 0);
  const std::int64_t others = pp - given;
  const std::int64_t share = others > 0 ? (depth - x.first_stage_blocks - x.last_stage_blocks) / others : 0;
  StageBlocks b;
  b.first = x.first_stage_blocks > 0 ? x.first_stage_blocks : share;
  b.last = x.last_stage_blocks > 0 ? x.last_stage_blocks : share;
  // pp <= 2 has no middle stage: it takes the first's count, so that an even split reads even
  b.middle = pp > 2 ? share : b.first;
  if (pp == 1) b.last = b.first;
  b.chunk = x.layout_chunk_blocks;
  return b;
}
// Whether the stages hold different numbers of blocks: counts given, or the runtime's partition
// (`partition`; what reports show as "blocks first/middle/last").
inline bool stages_partitioned(const Layout& c, StagePartition partition) {
  return c.exec.first_stage_blocks != 0 || c.exec.last_stage_blocks != 0 ||
         (c.pp > 1 && partition != StagePartition::Even);
}

// How an interleaved schedule (V virtual stages a GPU) cuts each stage's blocks into V chunks, as
// Megatron-LM builds them: either every stage's count is a multiple of V (plain: its
// --decoder-first/last-pipeline-num-layers), or every stage has k slots, k a multiple of V, and
// the embedding (the loss) fills one slot of the first (last) stage, which then holds k - 1 blocks
// (slotted: its --account-for-embedding-in-pipeline-split, --account-for-loss-in-pipeline-split).
struct InterleavedChunks {
  bool valid = false;
  bool embedding_slot = false, loss_slot = false;  // slotted: the first (last) stage's k - 1 blocks
  std::int64_t slots = 0;                           // blocks and end slots a stage: V chunks of slots / V
};
inline InterleavedChunks interleaved_chunks(const StageBlocks& b, std::int64_t pp, std::int64_t v) {
  InterleavedChunks out;
  if (v < 1 || pp < 2) return out;
  const bool middle_ok = pp <= 2 || b.middle % v == 0;
  if (middle_ok && b.first % v == 0 && b.last % v == 0) {
    out.valid = true;
    out.slots = pp > 2 ? b.middle : b.first;
    return out;
  }
  const std::int64_t k = pp > 2 ? b.middle : std::max(b.first, b.last);
  const bool first_ok = b.first == k || b.first == k - 1, last_ok = b.last == k || b.last == k - 1;
  if (k % v != 0 || !first_ok || !last_ok || k < 2) return out;
  out.valid = true;
  out.embedding_slot = b.first == k - 1;
  out.loss_slot = b.last == k - 1;
  out.slots = k;
  return out;
}
// The blocks of chunk v (of V) of stage k: a pipeline layout's (b.chunk > 0), else as `chunks`
// (valid) cuts them.
inline std::int64_t chunk_blocks(const StageBlocks& b, const InterleavedChunks& chunks, std::int64_t pp,
                                 std::int64_t v_count, std::int64_t k, std::int64_t v) {
  if (b.chunk > 0) {
    if (k == 0 && v == 0) return b.first - (v_count - 1) * b.chunk;
    if (k == pp - 1 && v == v_count - 1) return b.last - (v_count - 1) * b.chunk;
    return b.chunk;
  }
  const std::int64_t count = k == 0 ? b.first : k == pp - 1 ? b.last : b.middle;
  std::int64_t size = chunks.embedding_slot || chunks.loss_slot ? chunks.slots / v_count : count / v_count;
  if ((chunks.embedding_slot && k == 0 && v == 0) || (chunks.loss_slot && k == pp - 1 && v == v_count - 1)) --size;
  return size;
}
// The slotted partition of depth blocks over pp stages for V chunks a stage (interleaved_chunks):
// k = ceil(depth / pp) slots a stage, the loss filling one of the last stage's and, with two slots
// over, the embedding one of the first's. None (all zero) where k is not a multiple of V or the
// depth leaves more than two slots over; an even split (depth / pp each) is not slotted.
inline StageBlocks slotted_stages(std::int64_t depth, std::int64_t pp, std::int64_t v) {
  if (pp < 2 || v < 1 || depth < pp) return {};
  const std::int64_t k = (depth + pp - 1) / pp, over = k * pp - depth;
  if (over < 1 || over > 2 || k % v != 0 || k < 2) return {};
  const std::int64_t first = over == 2 ? k - 1 : k;
  return {first, pp > 2 ? k : first, k - 1};
}

// Of the model's first `leading` blocks (moe.first_dense: DeepSeek's dense first blocks), how many
// pipeline stage `stage` holds: the blocks in order over the stages (the first's, each middle
// stage's, the last's), or with V > 1 chunks (interleaved_chunks) over the virtual stages in
// Megatron-LM's order, chunk 0 of every stage first. Nanotron's partition, whose middle stages
// differ, is read as if each held `middle`.
std::int64_t leading_blocks_on_stage(const StageBlocks& b, std::int64_t pp, std::int64_t interleave,
                                     std::int64_t leading, std::int64_t stage);

// Names of the execution options' values, as flags and reports spell them (kExecutionOptions).
const char* recompute_name(Recompute r);         // "none", "selective", "full"
const char* param_layout_name(ParamLayout p);    // "reference", "megatron", "amp"
// Every option of one configuration as flags spell its value, in kExecutionOptions' order:
// {"recompute", "none"}, {"sp", "on"}, {"zero", "1"}, {"interleave", "1"}, {"layout", "reference"},
// {"ep", "1"}, {"first_stage_blocks", "0"}, {"last_stage_blocks", "0"}, {"precision", "bf16"},
// {"schedule", "1f1b"}, {"cp_comm", "p2p"}, {"offload", "none"}.
std::vector<std::pair<const char*, std::string>> execution_values(const Execution& x);
// "recompute=none sp=on zero=1 interleave=1 layout=reference ep=1": one configuration's options
// that option_shown shows, e.g. " first_stage_blocks=7 last_stage_blocks=7" when a stage's blocks
// are given, " precision=fp8" unless bf16, " schedule=zb-h1" unless 1f1b, " cp_comm=all-gather"
// unless p2p, " offload=optimizer" unless none.
std::string execution_text(const Execution& x);
// The same with the layout's value given (`param_layout`, runtime.hpp's param_layout_text: the
// runtime's own bytes per parameter where its file gives them); empty: the --layout choice's name.
std::string execution_text(const Execution& x, std::string_view param_layout);
// "none", "selective" or "full" (kExecutionOptions' names); InputError naming `flag` and the value
// otherwise. The other options parse with parse_option_value.
Recompute parse_recompute(const std::string& text, const std::string& flag);

// f(name, value) for each key of `kind` that the layout's strategy has, in declared order;
// reported_only: without the keys at their omitted_at value (what reports show).
template <typename F>
void for_each_config_key(const Layout& c, KeyKind kind, F&& f, bool reported_only = false) {
  const StrategyPlan& plan = plan_of(c.strategy);
  for (const ConfigKey& k : kConfigKeys) {
    if (k.kind != kind || !k.applies(plan)) continue;
    const std::int64_t v = k.value(c);
    if (reported_only && v == k.omitted_at) continue;
    f(k.name, v);
  }
}

// "dp,tp,pp,mbs" (Degree) or "nv_tp,nv_dp,nv_pp" (Placement): a strategy's key names.
std::string config_key_names(Strategy strategy, KeyKind kind);

}  // namespace perfsweep
