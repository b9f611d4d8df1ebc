#pragma once
// The partition of a model's blocks over uneven pipeline stages: balanced by the stages' times.
#include <cstdint>
#include <functional>

#include "model/block_summary.hpp"

namespace perfsweep {

// The partition of the model's blocks over the layout's pp > 1 stages that a search or
// `estimate --first-stage-blocks auto` takes: the first and last stages hold at least one block,
// the pp - 2 middle ones equally many, each a multiple of moe.every, and the slowest stage takes
// the least time per micro-batch. A stage's time is estimated from its blocks (`block`, with the
// runtime's tensor-parallel overlap and host floor per block) and its end layers (`ends`), so no
// block is costed again. Ties go to fewer blocks on the first stage (which holds the most
// micro-batches' activations), then on the last. Dense first blocks (moe.first_dense) are costed
// as such on the stages that hold them. ConfigError when no such partition exists
// (depth < pp, or moe.every not dividing the depth). With interleaving (V > 1) the one partition
// Megatron-LM cuts into V chunks a stage where the depth does not split evenly: slotted_stages's.
StageBlocks balanced_stages(const System& s, const Transformer& m, const Runtime& rt, const Layout& layout,
                            const BlockSummary& block, const StageEndSums& ends);
// The same from the times alone (seconds per micro-batch): a block's, its host floor, and the end
// layers' on the first and last stage; `every`: a stage's blocks come in groups of that many;
// the model's first `dense_blocks` blocks take dense_block_s each (the dense first blocks of
// BlockSummary::first_dense), wherever the partition puts them.
StageBlocks balanced_stages(std::int64_t depth, std::int64_t pp, std::int64_t every, double block_s,
                            double block_floor_s, double first_extra_s, double last_extra_s,
                            std::int64_t dense_blocks = 0, double dense_block_s = 0);

// The layout with the partition balanced_stages chooses for its block under the runtime (with
// pp = 1, the even split; with interleaving, the even split or slotted_stages's where the depth
// does not split evenly); ConfigError as validate_layout gives it.
Layout with_balanced_stages(const System& s, const Transformer& m, const Runtime& rt, const Layout& layout,
                            std::int64_t global_batch);
// The same with the block and end layers of the layout it balances (the runtime applied) from
// `costed` (configs' cache; cost_block and stage_end_sums of that layout, as they would give them).
struct CostedLayout {
  BlockSummary block;
  StageEndSums ends;
};
Layout with_balanced_stages(const System& s, const Transformer& m, const Runtime& rt, const Layout& layout,
                            std::int64_t global_batch, const std::function<CostedLayout(const Layout&)>& costed);

}  // namespace perfsweep
