#include "model/schedule.hpp"

#include <algorithm>
#include <iterator>

namespace perfsweep {
namespace {
using I = std::int64_t;
constexpr double D(I v) { return static_cast<double>(v); }

// each bubble at least 0: the weight gradients fill the idle slots, never more than all of them
double one_f_one_b_bubble(I pp, double slot_s, double, double) { return D(pp - 1) * slot_s; }
double zb_h1_bubble(I pp, double slot_s, double, double weight_s) {
  return D(pp - 1) * std::max(0.0, slot_s - 2 * weight_s);  // (p - 1)(F + B - W)
}
double zb_h2_bubble(I pp, double slot_s, double, double weight_s) {
  return D(pp - 1) * std::max(0.0, slot_s - 3 * weight_s);
}
double dualpipe_bubble(I pp, double slot_s, double backward_s, double weight_s) {
  // (p/2 - 1)(F&B + B_full - 3W), F&B = F + B_full = the slot
  return std::max(0.0, D(pp) / 2 - 1) * std::max(0.0, slot_s + backward_s - 3 * weight_s);
}
double pp_in_flight(I) { return 1; }
double zb_h2_in_flight(I pp) { return D(2 * pp - 1) / D(pp); }
double dualpipe_in_flight(I pp) { return D(pp + 1) / D(pp); }

constexpr ScheduleKind kSchedules[] = {
    {PipelineSchedule::OneFOneB, kScheduleNames[0], one_f_one_b_bubble, pp_in_flight, 1, false, false, false},
    {PipelineSchedule::ZeroBubbleH1, kScheduleNames[1], zb_h1_bubble, pp_in_flight, 1, true, true, false},
    {PipelineSchedule::ZeroBubbleH2, kScheduleNames[2], zb_h2_bubble, zb_h2_in_flight, 1, true, true, false},
    {PipelineSchedule::DualPipe, kScheduleNames[3], dualpipe_bubble, dualpipe_in_flight, 2, true, true, true},
};
static_assert(std::size(kSchedules) == std::size(kScheduleNames), "a descriptor for every PipelineSchedule");
}  // namespace

const ScheduleKind& schedule_kind(PipelineSchedule schedule) { return kSchedules[static_cast<std::size_t>(schedule)]; }

bool schedule_runs(const ScheduleKind& kind, I pp, I interleave, I micro_batches) {
  if (kind.needs_stages && pp < 2) return false;
  if (kind.one_chunk && interleave > 1) return false;
  return !kind.paired_stages || (pp % 2 == 0 && micro_batches % 2 == 0 && micro_batches >= 2 * pp);
}

double schedule_bubble(PipelineSchedule schedule, I pp, double slot_s, double backward_s, double weight_s) {
  return schedule_kind(schedule).bubble(pp, slot_s, backward_s, weight_s);
}

double schedule_activation_factor(PipelineSchedule schedule, I pp) {
  return schedule_kind(schedule).activation_factor(pp);
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
