#pragma once
// A layout: the degrees of a step's parallel axes, their NVLink shares and the execution options;
// and a strategy, the preset of axes it has (model/axes.hpp declares the axes).
#include <array>
#include <cstdint>
#include <numeric>
#include <string_view>

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
// The expert tensor-parallel degree (Execution::etp, 0 the tensor-parallel degree), and its
// group's NVLink share: the innermost etp ranks of the tensor group, gcd(etp, nv1) in a domain.
inline std::int64_t expert_tensor_degree(const Layout& c) { return expert_tensor_degree(c.exec, c.tensor.tp1); }
inline std::int64_t expert_tensor_share(const Layout& c) {
  return c.exec.etp > 0 ? std::gcd(c.exec.etp, c.tensor.nv1) : c.tensor.nv1;
}
// The tensor group's expert groups each routed expert is replicated over: tp1 / etp.
inline std::int64_t expert_tensor_replicas(const Layout& c) { return c.tensor.tp1 / expert_tensor_degree(c); }
// The tensor split a block is built with: the layout's, with its expert-parallel and expert
// tensor-parallel groups.
inline TensorSplit block_split(const Layout& c) {
  TensorSplit t = c.tensor;
  t.ep = c.exec.ep;
  t.nv_ep = expert_share(c);
  if (c.exec.etp > 0) {
    t.etp = c.exec.etp;
    t.nv_etp = expert_tensor_share(c);
  }
  return t;
}

// The axes of the parallel grid (model/grid.hpp), innermost first in Megatron-Core's default rank
// order: the tensor split (tp1 as its expert tensor-parallel part, etp, and the rest, etr: the
// tp1 / etp groups each routed expert is replicated over; tp2), context parallelism (cp), the
// data-parallel ranks as their expert-parallel part (ep, consecutive ranks) and the rest (edp:
// dp / ep), and the pipeline (pp).
enum class RankAxis : std::uint8_t { Etp, Etr, Tp2, Cp, Ep, Edp, Pp };
inline constexpr std::size_t kRankAxes = 7;
inline constexpr std::array<std::string_view, kRankAxes> kRankAxisNames{"etp", "etr", "tp2", "cp", "ep", "edp", "pp"};
// A set of grid axes, bit i for RankAxis i.
using AxisSet = std::uint8_t;
constexpr AxisSet axis_bit(RankAxis a) { return static_cast<AxisSet>(1u << static_cast<unsigned>(a)); }
// "cp dp" as a set: the axes' names, dp standing for its two parts (ep edp), tp1 for its (etp etr).
consteval AxisSet grid_axes(std::string_view names) {
  AxisSet set = 0;
  while (!names.empty()) {
    const std::size_t space = names.find(' ');
    const std::string_view name = names.substr(0, space);
    names = space == std::string_view::npos ? std::string_view() : names.substr(space + 1);
    if (name.empty()) continue;
    if (name == "dp" || name == "tp1") {
      set = static_cast<AxisSet>(set | (name == "dp" ? axis_bit(RankAxis::Ep) | axis_bit(RankAxis::Edp)
                                                     : axis_bit(RankAxis::Etp) | axis_bit(RankAxis::Etr)));
      continue;
    }
    bool found = false;
    for (std::size_t i = 0; i < kRankAxes; ++i) {
      if (kRankAxisNames[i] == name) {
        set = static_cast<AxisSet>(set | (1u << i));
        found = true;
      }
    }
    if (!found) throw "no such rank axis";
  }
  return set;
}

// A strategy: the preset of axes it has (model/axes.hpp), and what distinguishes its sharding in
// the step (its rules are in model/block.cpp).
struct StrategyPlan {
  Strategy strategy;
  const char* name;             // "1d", "2d", "2d-seqp"
  std::uint32_t axes;           // bit i: it has kAxes[i] (plan.cpp names them)
  // Its groups as sets of grid axes: the GPUs a micro-batch's tokens are split over (2d: tp2 alone,
  // else tp1 x tp2; and cp), and the replicas of the same weights, which reduce the gradients and
  // share the optimizer states (the data-parallel ranks, cp's, and 2d-seqp's tp2: context
  // parallelism of its own).
  AxisSet tokens;
  AxisSet replicas;
};

const StrategyPlan& plan_of(Strategy strategy);

}  // namespace perfsweep
