#pragma once
// A timed module (the reference's modules.py DataFrames): the layers of the MLP or the
// self-attention of one block for one micro-batch on one GPU, and their column sums.
#include <array>
#include <cstdint>

#include "model/layer.hpp"
#include "model/transformer.hpp"

namespace perfsweep {

inline constexpr int kMaxModuleLayers = 12;

struct Module {
  std::array<LayerResult, kMaxModuleLayers> layers{};
  int count = 0;
  // Appends the timed layer; throws ConfigError when the module is full. A layer of `share` of the
  // blocks (BlockLayer::share) is timed whole, then its counts and times scaled by the share.
  void add(const System& system, const LayerCost& cost, double share = 1.0);
};

// Column sums of a module, summed the way pandas' DataFrame.sum does (numpy's pairwise
// reduction), so totals carry the reference's last digits.
struct ModuleSums {
  double flops_fwd = 0, flops_bwd = 0;
  double t_fwd = 0, t_bwd = 0;
  double t_fwd_comm = 0, t_bwd_comm = 0;
  double t_fwd_comp = 0, t_bwd_comp = 0;
  double t_fwd_mem = 0, t_bwd_mem = 0;
  double weights_mem = 0;
  double activation_buffer = 0;
  double gemm_weights_mem = 0;  // of weights_mem, the GEMMs' and their biases' (what autocast casts)
  double calls = 0;             // layer passes the host issues, per pass (forward or backward)
  double fp8_weights_mem = 0;   // of gemm_weights_mem, the FP8 GEMMs' (quantized once per step or micro-batch)
  double fp8_gemms = 0;         // FP8 GEMM layers (a weight quantization kernel each)
  // Of t_bwd, the weight gradients' part (W of the zero-bubble schedules): a GEMM with weights
  // spends flops_fwd of its flops_bwd on them (its wgrad GEMM, as large as the forward's), and
  // that share of its backward's time beside communication; every other layer's backward and
  // every collective belong to the input gradient.
  double t_bwd_weight = 0;
};

ModuleSums sum_module(const Module& module);

// pandas Series.sum of n doubles (numpy add.reduce: sequential below 8 values, eight-way
// unrolled pairwise blocks from 8 to 128 values, recursive halves above).
double pandas_sum(const double* values, std::size_t n);

}  // namespace perfsweep
