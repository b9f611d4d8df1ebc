#pragma once
// Where a MoE layer's tokens go: how many of the GPUs and NVLink domains of the expert-parallel
// group a token's top_k experts reach, for a dispatcher that sends a token once to each GPU
// (within one domain) or once to each domain (across domains) instead of once per expert.
#include <cstdint>

#include "model/transformer.hpp"

namespace perfsweep {

// The expected number of `units` (equal, consecutive shares of the experts: the GPUs or the
// NVLink domains of the expert-parallel group, each holding experts / units of them) that hold
// at least one of a token's top_k experts, the experts drawn uniformly without repetition (the
// force-balanced routing published MoE benchmarks run) and, with group-limited routing
// (MoeOptions::groups), from the token's group_top_k groups, each group drawn uniformly. A unit
// that neither lies inside one group nor holds whole groups is counted as without the limit.
double expected_units_reached(const MoeOptions& moe, std::int64_t units);

// The share of the all-to-all's rows (one a token and routed expert to every other GPU, as
// Megatron-Core's alltoall dispatcher sends them) that a deduplicating dispatcher sends over the
// group's slowest leg: within one NVLink domain (`ep` GPUs, `nv_ep` of them a domain, ep ==
// nv_ep) a token once to each other GPU holding one of its experts; across domains once to each
// other domain holding one (DeepEP's normal kernels and HybridEP: one RDMA copy a node, forwarded
// over NVLink there). At most 1.
double dedup_dispatch_share(const MoeOptions& moe, std::int64_t ep, std::int64_t nv_ep);

}  // namespace perfsweep
