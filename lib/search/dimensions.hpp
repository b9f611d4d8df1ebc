#pragma once
// The search's loop nest as declared dimensions, in the style of timeloop's mapspace: each
// dimension lists the values it can take once the outer ones are fixed, and writes a chosen value
// into the layout. The search walks them in order (search.cpp), checks memory once after the
// last dimension that changes it (the rest cannot make a configuration fit or not), and costs the
// leaves. The tensor split (tp1, tp2) is the unit of work, outside the nest. An execution option
// (model/execution_options.hpp) is one entry here; one with no rule beyond its list is
// option_dimension.
#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "model/plan.hpp"
#include "search/search.hpp"

namespace perfsweep {

// One value of a dimension: up to kMaxPlacedAxes integers (a placement sets one NVLink share per
// placed axis at once).
struct Choice {
  std::array<std::int64_t, kMaxPlacedAxes> v{};
};

// What the values of a dimension may depend on besides the outer dimensions' values.
struct SearchContext {
  const SearchProblem& problem;
  std::int64_t n_gpus;
  std::span<const std::int64_t> batch_divisors;  // ascending divisors of the global batch
  SearchCounters& counters;
};

struct SearchDimension {
  const char* name;
  bool changes_memory;  // weights, gradients, optimizer states or activations depend on it
  // The block's cost reads it (a field of the search's block cache key): the search's step-time
  // bound takes the fastest block over the values of such dimensions not chosen yet.
  bool changes_block;
  // The outer dimensions whose values the values depend on, by name ("pp interleave"; "" none), so
  // the search lists them again only when one of those changes (the tensor split and the problem
  // are fixed in a run). search_dependencies resolves them.
  const char* depends_on;
  // Appends the values this dimension takes for the layout's outer dimensions, in the
  // reference's order.
  void (*values)(const SearchContext& context, const Layout& layout, std::vector<Choice>& out);
  void (*set)(Layout& layout, const Choice& choice);
  // The execution option whose list alone the values are (option_dimension; nullptr for the
  // others): with one value listed, the search sets it once and leaves the dimension out of its nest.
  const ExecutionOption* listed = nullptr;
};

// pp (with dp = n / (tp cp pp)), mbs, nb (2d SUMMA blocks), the execution options, NVLink
// placement.
std::span<const SearchDimension> search_dimensions();
// Per dimension, bit i set where its values depend on dimension i (depends_on's names, each an
// outer dimension's; std::logic_error otherwise).
std::vector<std::uint32_t> search_dependencies();

// The one walk of the nest, the search's (search.cpp: cached values, memory pruning, costed leaves)
// and configs' (configs.cpp: the user's lists, each leaf evaluated in full): for each value
// policy.values(d, layout) lists for the walked dimension d = walked[depth], in order, the value
// set into the layout and, unless policy.enter(depth, d, value, layout) says to skip what lies
// below, the next walked dimension; policy.leaf(layout) below the last. `walked`: indices into `dims`, in
// order (a dimension left out is set beforehand or by the leaf).
template <typename Policy>
void walk_dimensions(std::span<const SearchDimension> dims, std::span<const std::size_t> walked, Layout& c,
                     Policy& policy, std::size_t depth = 0) {
  if (depth == walked.size()) {
    policy.leaf(c);
    return;
  }
  const std::size_t d = walked[depth];
  const std::vector<Choice>& values = policy.values(d, c);
  for (std::size_t i = 0; i < values.size(); ++i) {
    dims[d].set(c, values[i]);
    if (policy.enter(depth, d, values[i], c)) walk_dimensions(dims, walked, c, policy, depth + 1);
  }
}
// A policy of three callables: values(d, layout) -> const std::vector<Choice>&,
// enter(depth, d, value, layout) -> bool, leaf(layout).
template <typename Values, typename Enter, typename Leaf>
struct WalkPolicy {
  Values values;
  Enter enter;
  Leaf leaf;
};
template <typename Values, typename Enter, typename Leaf>
WalkPolicy(Values, Enter, Leaf) -> WalkPolicy<Values, Enter, Leaf>;

// The index in search_dimensions() of the dimension `name`; std::logic_error where there is none.
std::size_t search_dimension_index(std::string_view name);

// Whether pp stages split the model's blocks evenly (with MoE every `every` > 1 blocks, in whole
// groups of every blocks), as the reference's search requires. Under a runtime beyond the
// reference the search also tries the other pipeline depths, with the partition balanced_stages
// chooses at each leaf.
inline bool splits_evenly(const Transformer& m, std::int64_t pp) {
  const std::int64_t every = m.is_moe() ? m.moe.every : 1;
  return m.depth % pp == 0 && (m.depth / pp) % every == 0;
}

// Whether a layout whose end stages' blocks were not given takes the balanced partition
// (with_balanced_stages), as the search's leaf does: under a runtime that runs uneven stages (any
// but the reference's, partitioning them as Megatron-LM's given counts do) where pp does not split
// the blocks evenly.
inline bool balances_where_uneven(const Runtime& rt, const Transformer& m, const Layout& c) {
  return !rt.is_reference() && rt.mechanisms.stage_partition == StagePartition::Even && c.pp > 1 &&
         !splits_evenly(m, c.pp);
}

}  // namespace perfsweep
