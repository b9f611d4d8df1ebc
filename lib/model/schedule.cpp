#include "model/schedule.hpp"

#include <algorithm>

namespace perfsweep {
namespace {
using I = std::int64_t;
constexpr double D(I v) { return static_cast<double>(v); }
}  // namespace

double schedule_bubble(PipelineSchedule schedule, I pp, double slot_s, double backward_s, double weight_s) {
  // each at least 0: the weight gradients fill the idle slots, never more than all of them
  const double p = D(pp - 1);
  switch (schedule) {
    case PipelineSchedule::OneFOneB: return p * slot_s;
    case PipelineSchedule::ZeroBubbleH1: return p * std::max(0.0, slot_s - 2 * weight_s);  // (p - 1)(F + B - W)
    case PipelineSchedule::ZeroBubbleH2: return p * std::max(0.0, slot_s - 3 * weight_s);
    case PipelineSchedule::DualPipe:  // (p/2 - 1)(F&B + B_full - 3W), F&B = F + B_full = the slot
      return std::max(0.0, D(pp) / 2 - 1) * std::max(0.0, slot_s + backward_s - 3 * weight_s);
  }
  return p * slot_s;
}

double schedule_activation_factor(PipelineSchedule schedule, I pp) {
  switch (schedule) {
    case PipelineSchedule::OneFOneB:
    case PipelineSchedule::ZeroBubbleH1: return 1;
    case PipelineSchedule::ZeroBubbleH2: return D(2 * pp - 1) / D(pp);
    case PipelineSchedule::DualPipe: return D(pp + 1) / D(pp);
  }
  return 1;
}

I fullest_stage_blocks(const Transformer& m, I pp, StagePartition partition) {
  if (pp <= 1) return m.depth;
  if (partition == StagePartition::Nanotron) {
    const StageBlocks b = nanotron_stage_blocks(m, pp);
    return std::max({b.first, pp > 2 ? b.middle : b.first, b.last});
  }
  const I every = m.is_moe() ? m.moe.every : 1;
  if (m.depth % pp == 0 && (m.depth / pp) % every == 0) return m.depth / pp;
  // the balanced (or slotted) partition holds whole groups of `every` blocks on every stage, all
  // of them: one stage holds at least ceil(groups / pp) groups
  const I groups = m.depth / every;
  return (groups + pp - 1) / pp * every;
}

double step_seconds_lower_bound(double block_s, I micro_batches, I fullest_blocks, I pp, I interleave,
                                bool one_f_one_b) {
  // stage_totals: the stage's blocks for every micro-batch, then only non-negative terms
  // (transfers, host floor, bubble, data-parallel communication, optimizer, offload); 1F1B's bubble
  // is pp - 1 of its micro-batch slots over V, each slot at least the blocks' pass
  const double slots = one_f_one_b && pp > 1 ? D(pp - 1) / D(std::max<I>(interleave, 1)) : 0.0;
  const double seconds = block_s * D(fullest_blocks) * (D(micro_batches) + slots);
  // the sums it stands for round differently: a margin far above their rounding (~1e-15)
  constexpr double kRoundingMargin = 1e-9;
  return seconds * (1 - kRoundingMargin);
}

}  // namespace perfsweep
