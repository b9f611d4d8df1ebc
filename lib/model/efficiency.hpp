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
// peak (matrix_flops_fp16), the convention of published runs whatever their precision; mfu_precision
// by the peak of the precision the linear layers' GEMMs run in (FP8 or MXFP8 under --precision fp8),
// which an FP8 run can exceed 100% of only where the system's peaks or the model are wrong.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/block.hpp"
#include "model/system.hpp"
#include "model/transformer.hpp"

namespace perfsweep {

double model_flops_per_token(const Transformer& model);

// The data type whose dense tensor peak a layout's linear GEMMs are measured against: bf16 for a
// bf16 layout (`precision`), else the one `recipe` runs the GEMMs in (FP8, MXFP8, NVFP4:
// model/data_type.hpp); bf16 where the system gives no peak for it.
Precision peak_precision(const System& system, Precision precision, Fp8Recipe recipe);

struct Efficiency {
  double model_flops_per_token = 0;  // FLOP
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double model_tflops_per_gpu = 0;   // TFLOP/s
  double mfu = 0;                    // fraction of matrix_flops_fp16
  double mfu_precision = 0;          // fraction of peak_type's peak (mfu under bf16)
  Precision peak_type = Precision::Bf16;  // the data type whose peak mfu_precision is of (peak_precision)
};
// peak: the data type whose peak mfu_precision is of (peak_precision; bf16: mfu).
Efficiency efficiency(const Transformer& model, const System& system, std::int64_t n_gpus, std::int64_t global_batch,
                      double step_s, Precision peak = Precision::Bf16);

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

// Prices of a GPU-hour (any one currency) by system: --gpu-hour-cost PRICE for every system,
// SYSTEM=PRICE for one (by its name), over a system file's gpu_hour_cost.
struct GpuHourPrices {
  double all = 0;                                          // 0: none given for every system
  std::vector<std::pair<std::string, double>> by_system;   // name, price
  // The system's price: given by its name, else for every system, else its file's; 0: none.
  double for_system(const System& system) const;
  bool any() const { return all > 0 || !by_system.empty(); }
  // InputError for a price given by the name of a system not among `names` (the run's systems):
  // a misspelt name would otherwise price nothing, silently.
  void check_systems(const std::vector<std::string>& names) const;
};

}  // namespace perfsweep
