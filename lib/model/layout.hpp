#pragma once
// A layout: the degrees of a step's parallel axes, their NVLink shares and the execution options;
// and a strategy, the preset of axes it has (model/axes.hpp declares the axes).
#include <cstdint>
#include <numeric>

#include "model/block.hpp"

namespace perfsweep {

// How a step is laid out, and which GPUs of each group share an NVLink domain (nv_* of the
// reference's search). The fields are read and written through the axes (model/axes.hpp kAxes).
struct Layout {
  Strategy strategy = Strategy::OneD;
  std::int64_t dp = 1, pp = 1, mbs = 1;
  TensorSplit tensor;  // tp1, tp2, nv1 (nv_tp / nv_tp1), nv2 (nv_tp2), nb, cp, nv_cp
  std::int64_t nv_dp = 1, nv_pp = 1;
  AttentionMode attention;
  Execution exec;
  std::int64_t n_gpus() const { return dp * pp * tensor.tp1 * tensor.tp2 * tensor.cp; }
};

// The expert-parallel group's NVLink share: the part of the data-parallel group's (expert-parallel
// ranks are consecutive data-parallel ranks).
inline std::int64_t expert_share(const Layout& c) { return std::gcd(c.exec.ep, c.nv_dp); }
// The tensor split a block is built with: the layout's, with its expert-parallel group.
inline TensorSplit block_split(const Layout& c) {
  TensorSplit t = c.tensor;
  t.ep = c.exec.ep;
  t.nv_ep = expert_share(c);
  return t;
}

// A strategy: the preset of axes it has (model/axes.hpp), and what distinguishes its sharding in
// the step (its rules are in model/block.cpp).
struct StrategyPlan {
  Strategy strategy;
  const char* name;             // "1d", "2d", "2d-seqp"
  std::uint32_t axes;           // bit i: it has kAxes[i] (plan.cpp names them)
  bool tp2_splits_tokens_only;  // 2d: a micro-batch's tokens split over tp2 alone (else tp1 x tp2)
  bool tp2_replicates_weights;  // context parallelism: tp2 holds weight replicas, so it joins the
                                // data-parallel reduction and shares the optimizer states
};

const StrategyPlan& plan_of(Strategy strategy);

}  // namespace perfsweep
