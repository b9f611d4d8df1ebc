#pragma once
// The pipeline schedules' bubbles and activations in flight, and what a search's bound knows of
// a step before it is costed.
#include <cstdint>

#include "model/plan.hpp"

namespace perfsweep {

// One pipeline schedule (PipelineSchedule, model/block.hpp) in one place: its costs (the bubble
// and the activations in flight, the copies of a stage's parameter states a GPU holds) and what
// it needs of a layout (the layout rules and the search's values read the same fields).
struct ScheduleKind {
  PipelineSchedule id;
  const char* name;  // kScheduleNames'
  // The bubble (s) from pp, a micro-batch's slot on the stage (F + B + W), its backward (B + W)
  // and its weight gradients (W).
  double (*bubble)(std::int64_t pp, double slot_s, double backward_s, double weight_s);
  // The activations in flight on the first stage relative to 1F1B's pp micro-batches.
  double (*activation_factor)(std::int64_t pp);
  std::int64_t state_copies;  // stages' parameter states a GPU holds (DualPipe: k and pp - 1 - k)
  bool needs_stages;          // pp > 1
  bool one_chunk;             // no interleaving (one chunk a stage)
  bool paired_stages;         // pp even, and an even count of at least 2 pp micro-batches
};
// The descriptor of `schedule`.
const ScheduleKind& schedule_kind(PipelineSchedule schedule);
// Whether a layout of pp stages, V chunks a stage and `micro_batches` runs the schedule (the
// layout rule pipeline_schedule says why not).
bool schedule_runs(const ScheduleKind& kind, std::int64_t pp, std::int64_t interleave, std::int64_t micro_batches);

// The pipeline schedule's bubble (seconds) from a micro-batch's slot on the stage (F + B + W, with
// its transfers and host floor), its backward (B + W) and weight gradients (W): the formulas of
// PipelineSchedule (model/block.hpp), interleaving aside (1F1B's (p - 1) slots), never below 0.
double schedule_bubble(PipelineSchedule schedule, std::int64_t pp, double slot_s, double backward_s, double weight_s);
// The schedule's activations in flight on the first stage relative to 1F1B's pp micro-batches:
// 1 (1F1B, ZB-H1), (2 pp - 1) / pp (ZB-H2), (pp + 1) / pp (DualPipe).
double schedule_activation_factor(PipelineSchedule schedule, std::int64_t pp);

// What the search's bound (search/search.cpp) knows of compose_step before a layout is costed.
// stage_totals times a stage of b blocks and m micro-batches as b m block_pass_seconds plus terms
// that are never negative (transfers, host floor, bubble, data-parallel communication, optimizer,
// offload), 1F1B's bubble being (pp - 1) / V of a micro-batch's slot; compose_step's step is its
// slowest costed stage, and the stage holding the most blocks is always among those it costs. So
// no layout with that block, micro-batches and pipeline steps faster than step_seconds_lower_bound
// (block_pass_seconds, a block's pass as the step composes it: model/stage_runtime.hpp).

// The fewest blocks the fullest of pp stages may hold under the partition: depth / pp for an even
// split, the nanotron partition's most, else (the balanced or slotted partition the search's leaf
// chooses) ceil(groups / pp) groups of moe.every, since the stages hold every block.
std::int64_t fullest_stage_blocks(const Transformer& m, std::int64_t pp, StagePartition partition);
// The bound (s) for a block pass of block_s, micro_batches, fullest_blocks and pp stages;
// one_f_one_b: the schedule is 1F1B with `interleave` virtual stages (else its bubble counts 0);
// less a relative 1e-9, so that the rounding of the sums it stands for never puts a step below it.
double step_seconds_lower_bound(double block_s, std::int64_t micro_batches, std::int64_t fullest_blocks,
                                std::int64_t pp, std::int64_t interleave, bool one_f_one_b);

}  // namespace perfsweep
