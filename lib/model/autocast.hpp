#pragma once
// Memory of PyTorch eager under bf16 autocast (the `autocast` activation accounting of a runtime,
// runtimes/pytorch_amp.yaml): what its autograd saves per token of a block, what the model's ends
// keep, and the peak's short-lived buffers. validation/gpu/h100_train.json measures this stack
// (docs/validation.md, "Whole training steps"). Units: GB (1e9 bytes).
#include <cstdint>

#include "model/plan.hpp"

namespace perfsweep {

// Saved for the backward by one block of one micro-batch, split as the block's modules (1D tensor
// parallelism shards the heads' and the MLP's features; the residual stream is whole). Full
// recomputation keeps only the block's fp32 input.
BlockActivations autocast_block_activations(const Transformer& m, const Layout& layout);

// What the model's ends keep for the backward (the last stage): the final norm's fp32 input and
// its output's bf16 cast for the head, or without a vocabulary its fp32 output for the MSE loss.
double autocast_ends_activations(const Transformer& m, const Layout& layout);

// The largest of the peak's phases, casts and transient buffers together, of a stage whose GEMM
// weights are `stage_casts_gb` in bf16 (`block_casts_gb` per block, `end_casts_gb` of the
// embedding/head layers):
//   the forward's end: every weight cast (autocast caches them until the forward's context
//     exits) and, on the last stage, the fp32 logits with their log-softmax (2 logit buffers);
//   the loss's backward: the casts still held (all, or with full recomputation the ends') and
//     three fp32 logit-sized buffers (the saved log-softmax, its gradient, the logits' gradient);
//   with full recomputation, a checkpointed block's backward: the ends' casts and the block's
//     re-made, its activations, and its fp32 input and output gradients.
// Without a vocabulary, the loss is an MSE on the fp32 output: its input and gradient.
double autocast_peak_transient_gb(const Transformer& m, const Layout& layout, double stage_casts_gb,
                                  double block_casts_gb, double end_casts_gb, bool last_stage);

// Every micro-batch's inputs and targets (runtime batch_resident): int64 token ids and targets,
// or without a vocabulary fp32 features.
double resident_batch_gb(const Transformer& m, const Layout& layout, std::int64_t micro_batches);

}  // namespace perfsweep
