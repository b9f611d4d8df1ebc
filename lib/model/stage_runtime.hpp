#pragma once
// What a framework's runtime adds to a stage beside the reference's composition: its bytes per
// parameter, the host's floor, the kernels around the layers, offload's transfers and the host's
// optimizer, its tensor-parallel overlap and its activation accounting.
#include <cstdint>

#include "model/block_summary.hpp"
#include "model/kernel_calibration.hpp"

namespace perfsweep {

// What a runtime adds to a stage: its bytes per parameter, the host's floor per micro-batch, the
// kernels around the layers and the peak's transients (all zero under the reference runtime).
struct StageRuntime {
  const StateBytes* bytes = nullptr;  // null: Execution::params
  double floor_per_micro_batch_s = 0;
  double per_micro_batch_s = 0;  // the runtime's kernels of each micro-batch (casts, accumulation)
  double t_optimizer = 0;        // the runtime's kernels of the step, every micro-batch's included
  // memory beyond states and activations at the peak (less than 0 where FP8 parameters take the
  // place of bf16 weights the states count)
  double transient_gb = 0;
  // Offload: host-link transfers the compute does not hide, of each micro-batch (streamed weights,
  // activations) and of the step (the optimizer's gradients and weights), and the host's
  // optimizer step.
  double offload_per_micro_batch_s = 0;
  double offload_step_s = 0;
  double t_host_optimizer = 0;
};

// What a runtime adds to a stage of `blocks` blocks and `extra` layers (embedding, LM head).
StageRuntime stage_runtime(const System& s, const Transformer& m, const Runtime& rt, const Layout& layout,
                           const BlockSummary& block, std::int64_t blocks, const ModuleSums& extra, double logits_gb,
                           std::int64_t micro_batches, bool first_stage, bool last_stage);

// The host's floor per block and micro-batch (s): the runtime's launches for one block.
double host_floor_per_block_s(const System& s, const Runtime& rt, const Layout& layout);

// The share of each tensor-parallel collective the runtime's overlap hides where it is on
// (Execution::tp_comm_overlap), else 0.
inline double tp_comm_hidden(const Runtime& rt, bool on) { return on ? rt.tp_comm_overlap : 0.0; }

// The runtime's view of a block: its tensor-parallel overlap (where the layout has it on) and its
// activation accounting.
BlockSummary runtime_view(const Transformer& m, const Runtime& rt, const Layout& layout, const BlockSummary& costed);

// One block's forward and backward for one micro-batch as the step composes it: with `tp_hidden`
// of each tensor-parallel collective hidden (tp_comm_hidden; a bound over layouts with and
// without the overlap takes the larger), what the GEMMs leave of its collectives (runtime_view).
// With dense first blocks (BlockSummary::first_dense), the least mean pass of a stage of at least
// `stage_blocks` blocks: its dense blocks at most the model's, each at the lesser of the two kinds.
double block_pass_seconds(double tp_hidden, const BlockSummary& block, std::int64_t stage_blocks = 1);

}  // namespace perfsweep
