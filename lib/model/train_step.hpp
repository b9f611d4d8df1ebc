#pragma once
// A whole training step of one GPU under PyTorch eager with bf16 autocast (the `amp` parameter
// layout: fp32 weights, gradients and two AdamW moments, bf16 copies of the GEMM weights made in
// each forward): the layers of every micro-batch as `evaluate` costs them, the costs around the
// layers, and the peak memory of the step. It is its own composition beside `evaluate`, so no
// result of `estimate`, `configs` or the search changes; validation/gpu/h100_train.json measures
// exactly this stack (docs/validation.md, "Whole training steps").
#include <cstdint>

#include "model/plan.hpp"

namespace perfsweep {

// Parameters of the model by how the step treats them.
struct TrainParameters {
  double total = 0;   // every parameter (fp32, with an fp32 gradient and two moments)
  double linear = 0;  // the projections' weights and biases: cast to bf16 for each forward
  double block_linear = 0;  // of those, the blocks' (cast again when a checkpointed block re-runs)
};
TrainParameters train_parameters(const Transformer& model);

// The step's time, s, of one GPU.
struct TrainStepTime {
  double layers = 0;          // every micro-batch's blocks and end-stage layers (evaluate's totals.t)
  double weight_casts = 0;    // fp32 -> bf16 casts of the GEMM weights, per micro-batch (and re-run)
  double grad_accumulate = 0; // per micro-batch: bf16 weight gradients cast back, added into the fp32 .grad
  double optimizer = 0;       // one fused AdamW step over every parameter
  double zero_grad = 0;       // the fp32 gradients zeroed (set_to_none=False)
  double gpu() const { return layers + weight_casts + grad_accumulate + optimizer + zero_grad; }
  // What the host takes to launch it: each layer pass's isolated_call_s (one eager call's
  // dispatch, what a pass timed alone pays), every micro-batch. The GPU cannot run ahead of its
  // launches, so a step with small kernels is the host's. 0 without a kernel calibration.
  double host = 0;
  double total() const { return gpu() > host ? gpu() : host; }
};

// The step's memory, GB (1e9 bytes), of one GPU, and where its peak lies.
struct TrainStepMemory {
  double states = 0;         // 16 bytes per parameter: fp32 weight, gradient, two moments
  double inputs = 0;         // every micro-batch's inputs and targets, allocated before the step
  double weight_casts = 0;   // bf16 weight copies alive at the peak
  double activations = 0;    // saved for the backward at the peak (one micro-batch)
  double transient = 0;      // the peak's short-lived buffers: logits and the loss's, or a re-run block's
  double peak = 0;           // allocated: states + inputs + casts + activations + transient, largest phase
  double reserved = 0;       // peak x (1 + allocator_reserve): what the caching allocator holds
  double usable = 0;         // of hbm_capacity, what the framework can allocate
  bool fits = false;         // reserved <= usable
};

struct TrainStep {
  TrainStepTime time;
  TrainStepMemory memory;
};

// One GPU (dp = pp = tp = 1) running `micro_batches` micro-batches of `micro_batch` samples per
// optimizer step with `recompute` none or full, in the amp layout. The kernel calibration's
// optimizer and cast kinds time the costs around the layers when fitted, else the kernel-class
// roofline (Optimizer, Elementwise) does; the calibration's allocator_reserve sets `reserved`.
TrainStep train_step(const System& system, const Transformer& model, std::int64_t micro_batch,
                     std::int64_t micro_batches, Recompute recompute);

// hbm_capacity is the vendor's GB, which for HBM parts is GiB (H100: 80 GiB); of it the CUDA
// context and driver keep about 0.82 GiB (an H100 80GB shows PyTorch 79.18 GiB).
inline constexpr double kDriverReserveGib = 0.82;
double usable_capacity_gb(const System& system);

}  // namespace perfsweep
