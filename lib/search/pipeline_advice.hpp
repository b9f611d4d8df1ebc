#pragma once
// What a layout's pipeline bubble would be under interleaving or another schedule: the same
// layout (placement, partition, every other option) re-evaluated, so that `estimate` can say
// which of Megatron-LM's --num-virtual-stages-per-pipeline-rank or a zero-bubble schedule would
// shrink a bubble that dominates the step.
#include <cstdint>
#include <string>
#include <vector>

#include "model/runtime.hpp"
#include "model/step.hpp"

namespace perfsweep {

struct PipelineAlternative {
  std::string flags;  // what changes: "--interleave 4", "--schedule zb-h1"
  Layout layout;
  Evaluation ev;  // ev.fits: within ev.totals.mem_limit
};

// Where the layout runs plain 1F1B (no interleaving) and its bubble takes at least
// `min_bubble_frac` of the step: the layout interleaved (each V from 2 to 16 that validate_layout
// accepts: chunks that cut every stage, the micro-batches a multiple of pp) and under each other
// schedule it can run, evaluated under the runtime, those that fit first and fastest first within
// each (as configs ranks), at most `limit` of them.
// Empty otherwise.
std::vector<PipelineAlternative> pipeline_alternatives(const System& system, const Transformer& model,
                                                       const Runtime& runtime, const Layout& layout,
                                                       const Evaluation& base, std::int64_t global_batch,
                                                       double min_bubble_frac = 0.15, std::size_t limit = 4);

// "pipeline bubble 46.7% of the step; the same layout with\n  --interleave 8  bubble 9.9%, ..."
// (tokens/s per GPU, MFU, memory and whether it fits); "" for none.
std::string pipeline_alternatives_text(const Evaluation& base, const std::vector<PipelineAlternative>& alternatives);

}  // namespace perfsweep
