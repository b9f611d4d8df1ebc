#include "model/grid.hpp"

#include <numeric>

namespace perfsweep {

ParallelGrid parallel_grid(const Layout& c) {
  ParallelGrid g;
  auto set = [&](RankAxis a, std::int64_t degree, std::int64_t nv) {
    g.degree[static_cast<std::size_t>(a)] = degree;
    g.nv[static_cast<std::size_t>(a)] = nv;
  };
  const std::int64_t ep = std::max<std::int64_t>(1, c.exec.ep), ep_share = std::gcd(ep, c.nv_dp);
  const std::int64_t etp = expert_tensor_degree(c), etp_share = expert_tensor_share(c);
  set(RankAxis::Etp, etp, etp_share);
  set(RankAxis::Etr, expert_tensor_replicas(c), c.tensor.nv1 / etp_share);
  set(RankAxis::Tp2, c.tensor.tp2, c.tensor.nv2);
  set(RankAxis::Cp, c.tensor.cp, c.tensor.nv_cp);
  set(RankAxis::Ep, ep, ep_share);
  set(RankAxis::Edp, c.dp / ep, c.nv_dp / ep_share);
  set(RankAxis::Pp, c.pp, c.nv_pp);
  if (c.exec.rank_order == RankOrder::PipelineInnerDataOuter) std::swap(g.order[5], g.order[6]);
  return g;
}

GroupShape ParallelGrid::group(AxisSet axes) const {
  GroupShape out;
  // the domains of the axes before each position, and the group's runs of consecutive axes
  std::int64_t before = 1, chunk = 1;
  std::int64_t run_inner[2] = {1, 1};
  int runs = 0;
  bool in_run = false;
  for (const RankAxis a : order) {
    const std::size_t i = static_cast<std::size_t>(a);
    const bool member = ((static_cast<unsigned>(axes) >> i) & 1u) != 0;
    if (member) {
      out.size *= degree[i];
      out.fast *= nv[i];
    }
    if (degree[i] == 1) continue;  // an axis of one GPU neither joins nor splits a run
    if (member && !in_run) {
      if (runs < 2) run_inner[runs] = before;
      ++runs;
    }
    if (member && runs == 1) chunk *= degree[i] / nv[i];
    in_run = member;
    before *= degree[i] / nv[i];
  }
  if (runs <= 1) {
    out.stride = std::max<std::int64_t>(1, run_inner[0]);
  } else {
    out.stride = ring_equivalent_stride(out.size / out.fast, chunk, run_inner[0], run_inner[1]);
  }
  return out;
}

std::int64_t ring_equivalent_stride(std::int64_t domains, std::int64_t chunk, std::int64_t inner, std::int64_t outer) {
  if (domains <= 1 || chunk <= 1) return outer;
  const std::int64_t chunks = std::max<std::int64_t>(1, domains / chunk);
  const std::int64_t span = (chunks - 1) * outer + (chunk - 1) * inner;  // first domain to last
  return std::max<std::int64_t>(1, (span + (domains - 1) / 2) / (domains - 1));
}

}  // namespace perfsweep
