#pragma once
// The parallel grid of a layout, as Megatron-Core's RankGenerator and HyperCommGrid number ranks:
// each grid axis's degree and NVLink share in arrays indexed by RankAxis (model/layout.hpp), in
// the layout's rank order, and any set of axes as a group: its GPUs, its share of an NVLink
// domain, and how far apart its domains sit (network tiers). Strategies state their groups as
// sets of axes (StrategyPlan::tokens, StrategyPlan::replicas); the step asks the grid for them.
#include <algorithm>
#include <array>
#include <cstdint>

#include "model/layout.hpp"

namespace perfsweep {

struct GroupShape {
  std::int64_t size = 1;    // GPUs of one group
  std::int64_t fast = 1;    // of them in one NVLink domain
  std::int64_t stride = 1;  // NVLink domains between consecutive domains of the group
  std::int64_t domains() const { return std::max<std::int64_t>(1, size / fast); }
};

struct ParallelGrid {
  std::array<std::int64_t, kRankAxes> degree{1, 1, 1, 1, 1, 1, 1};
  std::array<std::int64_t, kRankAxes> nv{1, 1, 1, 1, 1, 1, 1};
  // Innermost first: etp etr tp2 cp ep edp pp (tp-cp-ep-dp-pp), or etp etr tp2 cp ep pp edp
  // (tp-cp-ep-pp-dp: a pipeline's stages inside, the data-parallel replicas outermost).
  std::array<RankAxis, kRankAxes> order{RankAxis::Etp, RankAxis::Etr, RankAxis::Tp2, RankAxis::Cp,
                                        RankAxis::Ep,  RankAxis::Edp, RankAxis::Pp};
  std::int64_t operator[](RankAxis a) const { return degree[static_cast<std::size_t>(a)]; }

  // The group of `axes`: GPUs, their share of a domain, and its stride in domains. Where the
  // group's axes sit together in the rank order (axes of degree 1 aside), its consecutive domains
  // are the domains of the axes inside it apart; where another axis splits it in two (the
  // data-parallel group in the order tp-cp-ep-pp-dp: its context and expert ranks inside a
  // pipeline replica, its replicas outside), the uniform stride whose ring spans as many domains
  // (ring_equivalent_stride).
  GroupShape group(AxisSet axes) const;
};

// The layout's grid: tp1 (as etp consecutive ranks, their share gcd(etp, nv1), and tp1 / etp
// groups of them), tp2 and cp as its tensor split, dp as ep consecutive ranks (their share
// gcd(ep, nv_dp), model/layout.hpp expert_share) and dp / ep replicas of them, pp; in the layout's
// rank order (Execution::rank_order).
ParallelGrid parallel_grid(const Layout& c);

// The set without the axes of `remove`.
constexpr AxisSet without(AxisSet set, AxisSet remove) { return static_cast<AxisSet>(set & ~remove); }

// A group of `domains` domains made of chunks of `chunk` domains `inner` apart, the chunks `outer`
// apart: not uniformly strided. The uniform stride whose ring spans as many domains, (domains - 1)
// stride + 1 = (domains / chunk - 1) outer + (chunk - 1) inner + 1, rounded to the nearest integer
// >= 1 (an approximation, docs/network.md). Exact where a chunk is one domain: `outer`.
std::int64_t ring_equivalent_stride(std::int64_t domains, std::int64_t chunk, std::int64_t inner, std::int64_t outer);

}  // namespace perfsweep
