#pragma once
// A parallel plan: how a step is laid out on n = dp x tp1 x tp2 x pp GPUs, and what each strategy
// makes of the degrees (the reference's execute_1d, execute_2d, execute_seqp): which GPUs share a
// micro-batch's tokens, which join the data-parallel reduction, which share the optimizer
// states, and where the NVLink domain may sit.
#include <cstdint>
#include <numeric>

#include "model/block.hpp"

namespace perfsweep {

// How a step is laid out, and which GPUs of each group share an NVLink domain (nv_* of the
// reference's search).
struct Layout {
  Strategy strategy = Strategy::OneD;
  std::int64_t dp = 1, pp = 1, mbs = 1;
  TensorSplit tensor;  // tp1, tp2, nv1 (nv_tp / nv_tp1), nv2 (nv_tp2), nb
  std::int64_t nv_dp = 1, nv_pp = 1;
  // Expert parallelism (MoE models): the experts split over ep GPUs of the data-parallel group
  // (Megatron-Core draws the expert-parallel group from the data-parallel ranks).
  std::int64_t ep = 1;
  AttentionMode attention;
  std::int64_t n_gpus() const { return dp * pp * tensor.tp1 * tensor.tp2; }
};

// The tensor split a block is built with: the layout's, with its expert-parallel group, whose
// NVLink share is the part of the data-parallel group's (expert-parallel ranks are consecutive
// data-parallel ranks).
inline TensorSplit block_split(const Layout& c) {
  TensorSplit t = c.tensor;
  t.ep = c.ep;
  t.nv_ep = std::gcd(c.ep, c.nv_dp);
  return t;
}

// What distinguishes a strategy in the step (its sharding rules are in model/block.cpp).
struct StrategyPlan {
  Strategy strategy;
  const char* name;        // "1d", "2d", "2d-seqp"
  const char* tp1_name;    // the first tensor degree: "tp" (1d) or "tp1"
  const char* nv1_name;    // its NVLink share: "nv_tp" or "nv_tp1"
  bool has_tp2;            // a second tensor degree (tp2, nv_tp2)
  bool has_nb;             // SUMMA block count (2d)
  bool tp2_splits_tokens_only;  // 2d: a micro-batch's tokens split over tp2 alone (else tp1 x tp2)
  bool tp2_replicates_weights;  // context parallelism: tp2 holds weight replicas, so it joins the
                                // data-parallel reduction and shares the optimizer states
};

const StrategyPlan& plan_of(Strategy strategy);

// GPUs a micro-batch's tokens are split over: mbs x l must divide by it
// (micro_batch_size_candidates in execution.py).
inline std::int64_t token_split(const StrategyPlan& p, const TensorSplit& t) {
  return p.tp2_splits_tokens_only ? t.tp2 : t.tp1 * t.tp2;
}
// The data-parallel gradient reduction's group, its NVLink share, and the optimizer's shards.
inline std::int64_t dp_group(const StrategyPlan& p, const Layout& c) {
  return p.tp2_replicates_weights ? c.dp * c.tensor.tp2 : c.dp;
}
inline std::int64_t dp_group_fast(const StrategyPlan& p, const Layout& c) {
  return p.tp2_replicates_weights ? c.nv_dp * c.tensor.nv2 : c.nv_dp;
}
inline std::int64_t optimizer_shards_beyond_dp(const StrategyPlan& p, const Layout& c) {
  return p.tp2_replicates_weights ? c.tensor.tp2 : 1;
}

// Placements of the NVLink domain over the groups (tp, dp, pp): every (n1, n2, n3) with
// n1 n2 n3 = nvs dividing their groups, or the whole job when it fits in one domain.
template <typename F>
void for_each_nv_1d(std::int64_t tp, std::int64_t dp, std::int64_t pp, std::int64_t nvs, F&& f) {
  if (tp * dp * pp <= nvs) {
    f(tp, dp, pp);
    return;
  }
  for (std::int64_t n1 = 1; n1 <= nvs; ++n1) {
    if (nvs % n1) continue;
    const std::int64_t rem = nvs / n1;
    for (std::int64_t n2 = 1; n2 <= rem; ++n2) {
      if (rem % n2) continue;
      const std::int64_t n3 = rem / n2;
      if (tp % n1 == 0 && dp % n2 == 0 && pp % n3 == 0) f(n1, n2, n3);
    }
  }
}

// The same over (tp1, tp2, dp, pp).
template <typename F>
void for_each_nv_2d(std::int64_t tp1, std::int64_t tp2, std::int64_t dp, std::int64_t pp, std::int64_t nvs, F&& f) {
  if (tp1 * tp2 * dp * pp <= nvs) {
    f(tp1, tp2, dp, pp);
    return;
  }
  for (std::int64_t n1 = 1; n1 <= nvs; ++n1) {
    if (nvs % n1) continue;
    const std::int64_t rem = nvs / n1;
    for (std::int64_t n2 = 1; n2 <= rem; ++n2) {
      if (rem % n2) continue;
      const std::int64_t rem2 = rem / n2;
      for (std::int64_t n3 = 1; n3 <= rem2; ++n3) {
        if (rem2 % n3) continue;
        const std::int64_t n4 = rem2 / n3;
        if (tp1 % n1 == 0 && tp2 % n2 == 0 && dp % n3 == 0 && pp % n4 == 0) f(n1, n2, n3, n4);
      }
    }
  }
}

// Every NVLink placement (nv1, nv2, nv_dp, nv_pp) of the layout's degrees on domains of nvs
// GPUs that the strategy allows (1d: nv2 = 1).
template <typename F>
void for_each_placement(const StrategyPlan& p, const Layout& c, std::int64_t nvs, F&& f) {
  if (!p.has_tp2) {
    for_each_nv_1d(c.tensor.tp1, c.dp, c.pp, nvs,
                   [&](std::int64_t a, std::int64_t b, std::int64_t d) { f(a, std::int64_t{1}, b, d); });
  } else {
    for_each_nv_2d(c.tensor.tp1, c.tensor.tp2, c.dp, c.pp, nvs, f);
  }
}

}  // namespace perfsweep
