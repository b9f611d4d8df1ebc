#pragma once
// Transformer sub-blocks (the reference's modules.py): the MLP and self-attention layers of one
// block for one micro-batch on one GPU, for each tensor-parallel strategy.
#include <array>
#include <cstdint>

#include "model/layer.hpp"
#include "model/transformer.hpp"

namespace perfsweep {

inline constexpr int kMaxModuleLayers = 9;

struct Module {
  std::array<LayerResult, kMaxModuleLayers> layers{};
  int count = 0;
  void add(const System& system, const LayerCost& cost) { layers[static_cast<std::size_t>(count++)] = time_layer(system, cost); }
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
};

ModuleSums sum_module(const Module& module);

// pandas Series.sum of n doubles (numpy add.reduce: sequential below 8 values, eight-way
// unrolled pairwise blocks from 8 to 128 values, recursive halves above).
double pandas_sum(const double* values, std::size_t n);

enum class Strategy : std::uint8_t { OneD, TwoD, TwoDSeqp };

// Tensor-parallel layout of one block: tp1 x tp2 GPUs (1d: tp1 = tp, tp2 = 1), of which
// nv1 x nv2 sit in the NVLink domain; nb SUMMA blocks (2d only).
struct TensorSplit {
  std::int64_t tp1 = 1, tp2 = 1;
  std::int64_t nv1 = 1, nv2 = 1;
  std::int64_t nb = 1;
};

// MLP: fc1, fc1-bias, act1, dpr1, fc2, fc2-bias, dpr2, ln1.
Module mlp_1d(const System& s, std::int64_t b, const Transformer& m, std::int64_t tp, std::int64_t nv);
Module mlp_2d(const System& s, std::int64_t b, const Transformer& m, const TensorSplit& split);
Module mlp_seqp(const System& s, std::int64_t b, const Transformer& m, const TensorSplit& split);

// Self-attention: qkv, attention (fusedla with flash attention, else logits, softmax, dpr_at,
// attend), vproj, vproj-bias, dpr_v, ln2.
Module sa_1d(const System& s, std::int64_t b, const Transformer& m, std::int64_t tp, std::int64_t nv, bool flash,
             bool attention_recompute = false);
Module sa_2d(const System& s, std::int64_t b, const Transformer& m, const TensorSplit& split);  // SUMMA attention
Module sa_2d_seqp(const System& s, std::int64_t b, const Transformer& m, const TensorSplit& split, bool flash);
Module sa_seqp(const System& s, std::int64_t b, const Transformer& m, const TensorSplit& split, bool flash);

// The module pair a strategy uses (execute_1d: mlp_1d + sa_1d; execute_2d: mlp_2d + sa_2d_seqp;
// execute_seqp: mlp_seqp + sa_seqp), always with flash attention as the reference's search does.
void build_block(const System& s, Strategy strategy, std::int64_t b, const Transformer& m, const TensorSplit& split,
                 Module& mlp, Module& sa);

}  // namespace perfsweep
