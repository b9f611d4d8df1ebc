#pragma once
// The execution-option flags of `estimate`, `configs` and `sweep` (parsed by
// config/execution_flags.hpp; `sweep` and `configs` take lists, `estimate` one value each).
#include <CLI/CLI.hpp>
#include <string>

#include "config/execution_flags.hpp"

namespace perfsweep {

inline void add_execution_options(CLI::App& app, ExecutionFlags& f, bool lists) {
  const std::string each = lists ? " (a comma-separated list: each is tried)" : "";
  app.add_option("--recompute", f.recompute,
                 "activation recomputation: none, selective (the attention core) or full (every block keeps only "
                 "its input)" + each)
      ->capture_default_str();
  app.add_option("--sp", f.sp,
                 "1d sequence parallelism: on (the reference's: reduce-scatter + all-gather, norm and dropout on "
                 "l/tp) or off (all-reduces)" + each)
      ->capture_default_str();
  app.add_option("--zero", f.zero,
                 "ZeRO stage over data parallelism: 0 none, 1 optimizer states (the reference), 2 + gradients, "
                 "3 + weights" + each)
      ->capture_default_str();
  app.add_option("--interleave", f.interleave, "virtual pipeline stages per GPU (interleaved 1F1B)" + each)
      ->capture_default_str();
  app.add_option("--layout", f.layout,
                 "bytes per parameter: reference (2+2+12), megatron (bf16 weights, fp32 grads, master and moments), "
                 "amp (fp32 weights, grads and moments, bf16 copies)" + each)
      ->capture_default_str();
  app.add_option("--ep", f.ep,
                 "expert-parallel degree of a mixture-of-experts model: GPUs of the data-parallel group its "
                 "experts are split over" + each)
      ->capture_default_str();
  app.add_option("--precision", f.precision,
                 "data type of the linear layers' GEMMs: bf16, or fp8 as the runtime runs it (its fp8_recipe: "
                 "Transformer Engine's delayed or current scaling, MXFP8 block scaling; 1d only; docs/fp8.md)" + each)
      ->capture_default_str();
  app.add_option("--schedule", f.schedule,
                 "pipeline schedule: 1f1b (interleaved with --interleave > 1), zb-h1 or zb-h2 (zero bubble: the "
                 "backward split into input and weight gradients), dualpipe (DeepSeek-V3's, fed from both ends); "
                 "docs/models.md" + each)
      ->capture_default_str();
  app.add_option("--cp", f.cp,
                 "context-parallel degree (1d): GPUs each sequence is split over (Megatron-Core's load-balanced "
                 "causal split; weights replicated, joining the data-parallel reduction; docs/context_parallel.md)" +
                     each)
      ->capture_default_str();
  app.add_option("--cp-comm", f.cp_comm,
                 "how context-parallel attention exchanges keys and values: p2p (ring attention, overlapped), "
                 "all-gather (Llama 3's) or a2a (DeepSpeed-Ulysses's all-to-all, the heads split over the cp group)" +
                     each)
      ->capture_default_str();
  app.add_option("--offload", f.offload,
                 "what the step keeps in host memory, over the system's host link: none, optimizer (master weights "
                 "and Adam moments, the optimizer step on the CPU), weights (also ZeRO-3's weight shards, streamed "
                 "per block), activations (saved activations, copied out and back per block); where the runtime "
                 "offloads it (docs/offload.md)" + each)
      ->capture_default_str();
  app.add_option("--runtime", f.runtime,
                 "how a training framework executes each configuration: reference (the paper's model), megatron, "
                 "megatron_tp_overlap, nemo, deepspeed, fsdp, nanotron, llama3, pytorch_amp (runtimes/) or a runtime "
                 "file; default: the system file's runtime, else megatron for a model with options beyond the "
                 "paper's, else reference (docs/runtimes.md)");
}

// The pipeline's partition (`estimate`, `configs`: one layout's, not a search dimension).
inline void add_stage_options(CLI::App& app, ExecutionFlags& f) {
  app.add_option("--first-stage-blocks", f.first_stage_blocks,
                 "blocks on the first pipeline stage (Megatron-LM's --decoder-first-pipeline-num-layers; the "
                 "stages not given share the rest evenly), or auto: the partition that balances the slowest "
                 "stage (docs/models.md); 0: not given; configs: a list (each value with every other option)")
      ->capture_default_str();
  app.add_option("--last-stage-blocks", f.last_stage_blocks,
                 "blocks on the last pipeline stage (--decoder-last-pipeline-num-layers), or auto; 0: not given; "
                 "configs: a list")
      ->capture_default_str();
}

}  // namespace perfsweep
