#pragma once
// What a step's time means for training: tokens per second (and per GPU), model FLOP/s per GPU and
// model FLOPs utilization (MFU), and for a token budget the days, GPU-hours and cost.
//
// Model FLOPs per token follow PaLM (Chowdhery et al. 2022, Appendix B): 6 N + 12 L H Q T, with N
// the parameters a token's matrix multiplications use (the active parameters of an MoE model,
// without the input embedding's lookup table but with the LM head, tied or not), L blocks, H Q =
// heads x head dimension, T the sequence: the forward and backward of the projections and of the
// attention's two products, whole (no causal halving, no recomputation), as PaLM, nanoGPT and
// Megatron-LM's reported TFLOP/s count them. MFU divides by the system's dense bf16/fp16 tensor
// peak (matrix_flops_fp16).
#include <cstdint>

#include "model/system.hpp"
#include "model/transformer.hpp"

namespace perfsweep {

double model_flops_per_token(const Transformer& model);

struct Efficiency {
  double model_flops_per_token = 0;  // FLOP
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double model_tflops_per_gpu = 0;   // TFLOP/s
  double mfu = 0;                    // fraction of matrix_flops_fp16
};
Efficiency efficiency(const Transformer& model, const System& system, std::int64_t n_gpus, std::int64_t global_batch,
                      double step_s);

// Training on `tokens` tokens (0: none asked): optimizer steps (the last one partial), time,
// GPU-hours and, with a price per GPU-hour, the cost.
struct TrainingBudget {
  double tokens = 0;
  double steps = 0;
  double seconds = 0;
  double days = 0;
  double gpu_hours = 0;
  double gpu_hour_cost = 0;  // 0: no price given
  double cost = 0;
};
TrainingBudget training_budget(const Efficiency& e, std::int64_t n_gpus, std::int64_t global_batch,
                               std::int64_t seq_len, double tokens, double gpu_hour_cost);

}  // namespace perfsweep
