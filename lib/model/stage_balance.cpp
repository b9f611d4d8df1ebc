#include "model/stage_balance.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "model/layout_rules.hpp"
#include "model/stage_runtime.hpp"

namespace perfsweep {
namespace {
using I = std::int64_t;
constexpr double D(I v) { return static_cast<double>(v); }
}  // namespace

StageBlocks balanced_stages(I depth, I pp, I every, double block_s, double block_floor_s, double first_extra_s,
                            double last_extra_s, I dense_blocks, double dense_block_s) {
  if (pp < 2 || every < 1 || depth % every != 0 || depth / every < pp) {
    throw ConfigError("no partition of depth " + std::to_string(depth) + " over pp=" + std::to_string(pp) +
                      " stages gives each stage at least one block" +
                      (every > 1 ? " in whole groups of moe.every=" + std::to_string(every) : std::string()));
  }
  // A stage's time per micro-batch: its blocks' (the first dense_blocks of the model at
  // dense_block_s each) and end layers', at least the host's floor for its blocks. `start`: the
  // stage's first block.
  auto stage_s = [&](I start, I groups, double extra_s) {
    const double b = D(groups * every);
    double blocks_s = b * block_s;
    if (start < dense_blocks) [[unlikely]] {
      blocks_s += D(std::min(dense_blocks - start, groups * every)) * (dense_block_s - block_s);
    }
    return std::max(blocks_s + extra_s, b * block_floor_s);
  };
  const I groups = depth / every, middles = pp - 2;
  StageBlocks best;
  double best_s = 0;
  for (I middle = middles > 0 ? 1 : 0;; ++middle) {
    const I end_groups = groups - middles * middle;  // the first and last stages' together
    if (end_groups < 2) break;
    // the slowest middle stage after a first stage of `first` groups: the first middle holds the
    // most dense blocks, the last the fewest
    auto middle_s = [&](I first) {
      if (middles == 0) return 0.0;
      const I start = first * every;
      return std::max(stage_s(start, middle, 0), stage_s(start + (middles - 1) * middle * every, middle, 0));
    };
    auto first_s = [&](I first) { return stage_s(0, first, first_extra_s); };
    auto last_s = [&](I first) { return stage_s((first + middles * middle) * every, end_groups - first, last_extra_s); };
    auto slowest_s = [&](I first) { return std::max({first_s(first), middle_s(first), last_s(first)}); };
    I fewest = 1;
    double t = 0;
    if (dense_blocks > 0) [[unlikely]] {
      // the middle stages' times move with the first's share (their dense blocks move onto it),
      // either way as the dense block is cheaper or dearer: every share is tried, the fewest
      // groups on the first stage winning a tie
      t = slowest_s(1);
      for (I first = 2; first < end_groups; ++first) {
        const double x = slowest_s(first);
        if (x < t) {
          t = x;
          fewest = first;
        }
      }
    } else {
      // The first stage's time grows with its share and the last's shrinks: the slowest stage is
      // least where the first overtakes the last, or one group before.
      I lo = 1, hi = end_groups - 1;
      while (lo < hi) {
        const I first = lo + (hi - lo) / 2;
        if (first_s(first) >= last_s(first)) {
          hi = first;
        } else {
          lo = first + 1;
        }
      }
      if (lo > 1 && slowest_s(lo - 1) <= slowest_s(lo)) --lo;
      t = slowest_s(lo);
      // the fewest groups on the first stage that keep that time: the last stage's is then at most t
      for (I hi_first = lo; fewest < hi_first;) {
        const I first = fewest + (hi_first - fewest) / 2;
        if (last_s(first) <= t) {
          hi_first = first;
        } else {
          fewest = first + 1;
        }
      }
    }
    const I first = fewest * every, last = (end_groups - fewest) * every;
    const bool fewer_on_ends = first < best.first || (first == best.first && last < best.last);
    if (best.first == 0 || t < best_s || (t == best_s && fewer_on_ends)) {
      best = {first, (middles > 0 ? middle * every : first), last};
      best_s = t;
    }
    if (middles == 0) break;
  }
  return best;
}

StageBlocks balanced_stages(const System& s, const Transformer& m, const Runtime& rt, const Layout& c,
                            const BlockSummary& block, const StageEndSums& ends) {
  // interleaved chunks: the one partition Megatron-LM cuts into chunks, the ends taking a slot
  if (c.exec.interleave > 1) return slotted_stages(m.depth, c.pp, c.exec.interleave);
  const bool reference = rt.is_reference();
  const BlockSummary view = reference ? block : runtime_view(m, rt, c, block);
  const double floor_s = reference ? 0 : host_floor_per_block_s(s, rt, c);
  const double block_s = view.mlp.t_fwd + view.mlp.t_bwd + view.sa.t_fwd + view.sa.t_bwd;
  // multi-token prediction's blocks on the last stage beside its layers (and the host's floor for them)
  const double mtp_blocks = static_cast<double>(m.mtp_layers);
  const double last_s = ends.last.t_fwd + ends.last.t_bwd + mtp_blocks * std::max(block_s, floor_s);
  return balanced_stages(m.depth, c.pp, m.is_moe() ? m.moe.every : 1, block_s, floor_s,
                         ends.first.t_fwd + ends.first.t_bwd, last_s, view.first_dense,
                         view.dense_mlp.t_fwd + view.dense_mlp.t_bwd + view.sa.t_fwd + view.sa.t_bwd);
}

Layout with_balanced_stages(const System& s, const Transformer& m, const Runtime& rt, const Layout& layout,
                            I global_batch) {
  return with_balanced_stages(s, m, rt, layout, global_batch, [&](const Layout& c) {
    Module mlp, sa;
    return CostedLayout{
        cost_block(s, m, c, rt.mechanisms, describe_block(m, c.attention), describe_dense_block(m, c.attention), mlp,
                   sa),
        stage_end_sums(s, m, c, rt.mechanisms)};
  });
}

Layout with_balanced_stages(const System& s, const Transformer& m, const Runtime& rt, const Layout& layout,
                            I global_batch, const std::function<CostedLayout(const Layout&)>& costed) {
  Layout out = layout;
  out.exec.first_stage_blocks = 0;
  out.exec.last_stage_blocks = 0;
  if (layout.pp < 2 || rt.mechanisms.stage_partition != StagePartition::Even) return out;  // else the runtime's own
  if (layout.exec.interleave > 1) {
    // the slotted partition where the depth does not split evenly (there is no other to balance)
    if (m.depth % layout.pp != 0) {
      const StageBlocks slotted = slotted_stages(m.depth, layout.pp, layout.exec.interleave);
      out.exec.first_stage_blocks = slotted.first;
      out.exec.last_stage_blocks = slotted.last;
    }
    return out;
  }
  // A partition of the blocks alone lets the rest of the layout be checked and its block costed.
  const I every = m.is_moe() ? m.moe.every : 1;
  const StageBlocks by_count = balanced_stages(m.depth, layout.pp, every, 1, 0, 0, 0);
  Layout c = out;
  c.exec.first_stage_blocks = by_count.first;
  c.exec.last_stage_blocks = by_count.last;
  c.attention = runtime_attention(rt, c.attention);
  validate_layout(s, m, c, global_batch, rt.mechanisms);
  validate_runtime_layout(rt, c);
  const CostedLayout block = costed(c);
  const StageBlocks balanced = balanced_stages(s, m, rt, c, block.block, block.ends);
  out.exec.first_stage_blocks = balanced.first;
  out.exec.last_stage_blocks = balanced.last;
  return out;
}

}  // namespace perfsweep
