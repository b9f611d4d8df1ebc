#pragma once
// Configuration sweeps at a fixed GPU count: the reference's plots_sweep_parallel_configs
// notebook as a library. The user picks tensor, pipeline and data-parallel degrees, micro-batch
// sizes, SUMMA blocks and NVLink placements (any of them as lists); every combination that makes
// up the GPU count is evaluated in full, feasible in memory or not.
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/step.hpp"

namespace perfsweep {

// NVLink shares fixed by the user, by axis (model/axes.hpp kAxes); the others are free.
struct PlacementChoice {
  std::array<std::optional<std::int64_t>, kAxisCount> nv;
  bool search_nb = false;  // 2d: also every SUMMA block count the search tries (else layout's nb)
  // The placement the layout's rank order makes (rank_order_shares) instead of every one the
  // reference's search tries: what a framework launches (set under a runtime other than the
  // reference's unless placements are given or asked for one by one).
  bool rank_order = false;
  // Whether a placement (one share per placed axis, in their order) keeps every given share.
  bool admits(const PlacedAxes& placed, std::span<const std::int64_t> shares) const;
};

// Calls f(layout) for every NVLink placement (and, for 2d with choice.search_nb, every SUMMA
// block count) the reference's search tries for this layout's degrees, in its order, skipping
// those `choice` excludes; with choice.rank_order, for the rank order's placement alone (if
// `choice` admits it).
void for_each_placement(const System& sys, const Transformer& model, const Layout& layout,
                        const PlacementChoice& choice, const std::function<void(const Layout&)>& f);

// Why for_each_placement leaves nothing for the layout: the given shares (--nv-tp=8 ...) that no
// placement of its groups on domains of nvs GPUs keeps, in words.
std::string no_placement_reason(const Layout& layout, const PlacementChoice& choice, std::int64_t nvs);

// The fastest of those (ties: the first, as the search keeps it), or nullopt when none is left.
// `layout` receives the chosen placement and block count. balance_stages: each placement with
// the partition of the blocks over the stages that balances its slowest stage
// (with_balanced_stages), as the search chooses it.
std::optional<Evaluation> best_placement(const System& sys, const Transformer& model, Layout& layout,
                                         std::int64_t global_batch, const PlacementChoice& choice,
                                         const Runtime& runtime = reference_runtime(), bool balance_stages = false);

// The micro-batch sizes the reference's search tries (micro_batch_size_candidates in
// execution.py): divisors of the local batch whose tokens (mbs x l) split evenly over the GPUs
// that share a micro-batch (tp2 for 2d SUMMA, tp1 x tp2 otherwise).
std::vector<std::int64_t> search_micro_batch_sizes(Strategy strategy, const Transformer& model,
                                                   const TensorSplit& tensor, std::int64_t local_batch);

struct ConfigRanges {
  // Empty: every value the reference's search would try (tp1, tp2), or derived from the GPU
  // count (one of dp and pp), or all divisors (pp, when dp is free too). mbs when empty: {1}, as
  // the notebook, once any of tp1, tp2, pp, dp is given; else the search's, so that with nothing
  // given the rows are the search's space (its best placement of each).
  std::vector<std::int64_t> tp1, tp2, pp, dp, mbs, nb;
  // The list of an axis with a degree flag (model/axes.hpp: tp's and tp1's is tp1; tp2, dp, pp);
  // std::logic_error for another.
  std::vector<std::int64_t>& degrees_of(std::string_view axis);
  bool all_micro_batch_sizes = false;  // mbs: the search's (search_micro_batch_sizes)
  PlacementChoice placement;
  bool all_placements = false;  // one row per placement (and nb) instead of the fastest
  // Each combination of degrees is evaluated with every combination of the execution options'
  // lists (in the search's dimension order), then every attention mode and every partition of the
  // stages' blocks (innermost; Execution's first_stage_blocks and last_stage_blocks). By default the
  // reference's search: the reference's execution, flash attention, an even partition. Its cp:
  // 1d's context-parallel degrees, each tried with every tensor split.
  ExecutionChoices choices;
  std::vector<AttentionMode> attentions{AttentionMode{}};
  std::vector<Execution> stage_choices{Execution{}};
  bool balance_stages = false;   // each row's partition of the blocks: with_balanced_stages (else exec's)
  // The end stages' blocks given (stage_choices from --first-stage-blocks, --last-stage-blocks):
  // else a row whose pp does not split the depth evenly is balanced where the runtime runs uneven
  // stages (balances_where_uneven), as the search's leaf balances it.
  bool stages_given = false;
  Runtime runtime;               // how the framework executes them (the reference's by default)
  // The rows kept: without those that do not fit (fits_only); with keep > 0 only the first keep in
  // the order they are listed (by_throughput: those that fit first, then the fastest; else the
  // enumeration's), so memory holds keep rows however large the space.
  bool fits_only = false;
  std::size_t keep = 0;
  bool by_throughput = false;
  // With keep > 0 and by_throughput: skip the subtrees and layouts whose step-time bound cannot
  // enter the kept rows (search.cpp's bound on this walk: the same rows bit for bit; the
  // rejections then those of the layouts walked). false: every layout evaluated.
  bool prune = true;
  // Called with each layout's points (count_configs) as it is walked: progress reports.
  std::function<void(std::int64_t)> on_points;
};

struct ConfigRow {
  Layout layout;
  Totals totals;
  double throughput = 0;
  bool fits = false;
  std::int64_t micro_batches = 0;
};

struct ConfigSweep {
  std::vector<ConfigRow> rows;             // in enumeration order: tp1, tp2, pp, dp, mbs, nb, the
                                           // execution options, attention, stages' blocks, placement
  std::size_t combinations = 0;            // degree combinations that make up the GPU count
  std::vector<std::string> rejections;     // why the others could not be evaluated (distinct)
  std::int64_t pruned_subtrees = 0;        // micro-batch nodes the bound skipped (ConfigRanges::prune)
  std::int64_t pruned_layouts = 0;         // layouts the bound skipped at the leaf
  // Layouts each rule of model/layout_rules.hpp refused, by its index in layout_rules() (the
  // walk's own checks before a layout exists, and placements, are in `rejections` only).
  std::vector<std::int64_t> refused_by_rule;
};

// The points sweep_configs would evaluate, counted without evaluating any: each layout's NVLink
// placements (1 for a layout that cannot run). Counting stops once past `limit` (the result is then
// more than limit), so that a space of billions is refused in the time of `limit` points.
std::int64_t count_configs(const System& sys, const Transformer& model, Strategy strategy, std::int64_t n_gpus,
                           std::int64_t global_batch, const ConfigRanges& ranges, std::int64_t limit);

ConfigSweep sweep_configs(const System& sys, const Transformer& model, Strategy strategy, std::int64_t n_gpus,
                          std::int64_t global_batch, const ConfigRanges& ranges);

}  // namespace perfsweep
