// Network tiers (System::network_tiers; docs/network.md): the path a group's collective takes
// over the tiers, worked by hand on the round system of test/common/round_system.hpp (IB 10 GB/s
// x eff 0.5 = 5 GB/s per NIC, 1e-5 s per ring step; NVLink 50 GB/s, 1e-6 s; 4 GPUs per domain),
// with three tiers: a rack of 2 domains (latency 2e-5 s), a pod of 8 racks, 16 domains (3e-5 s,
// oversubscribed 2:1), the rest (4e-5 s, 1:4).
#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <vector>

#include "common/layouts.hpp"
#include "common/round_system.hpp"
#include "model/collective.hpp"
#include "model/layer.hpp"
#include "model/plan.hpp"
#include "model/runtime.hpp"
#include "model/step.hpp"

namespace perfsweep {
// The strides of the data-parallel group (the weights' replicas), the expert-data-parallel group
// (those less the expert-parallel ranks) and the pipeline on a layout's grid (model/grid.hpp).
struct DomainStrides {
  std::int64_t data = 1, expert = 1, pipeline = 1;
  bool operator==(const DomainStrides&) const = default;
};
DomainStrides domain_strides(const StrategyPlan& p, const Layout& c) {
  const ParallelGrid g = parallel_grid(c);
  return {g.group(p.replicas).stride, g.group(without(p.replicas, axis_bit(RankAxis::Ep))).stride,
          g.group(axis_bit(RankAxis::Pp)).stride};
}
// How gtest prints the strides a check compares (found by argument-dependent lookup).
void PrintTo(const DomainStrides& d, std::ostream* os) {
  *os << "{data " << d.data << ", expert " << d.expert << ", pipeline " << d.pipeline << "}";
}
namespace {

using test::round_system;

System tiered() {
  System s = round_system();
  s.network_tiers = std::make_shared<const std::vector<NetworkTier>>(std::vector<NetworkTier>{
      {"rack", 2, 2e-5, 1}, {"pod", 16, 3e-5, 2}, {"hall", 0, 4e-5, 4}});
  return s;
}

TEST(NetworkTiers, WithoutTiersTheNicAlone) {
  const NetworkPath p = network_path(round_system(), CommType::AllReduce, 64, 16);
  EXPECT_EQ(p.latency, 1e-5);
  EXPECT_EQ(p.bandwidth_divisor, 1.0);
  const NetworkPath l = link_path(round_system(), 0, 1000);
  EXPECT_EQ(l.latency, 1e-5);
  EXPECT_EQ(l.bandwidth_divisor, 1.0);
}

// A ring's latency per step is the outermost crossed tier's; a tier's oversubscription o over m
// of the group's consecutive domains in one unit of the tier below divides the bandwidth by
// max(1, o / m).
TEST(NetworkTiers, RingPathByHand) {
  const System s = tiered();
  // 2 adjacent domains: one rack (span 2 <= 2): rack latency, o = 1
  NetworkPath p = network_path(s, CommType::AllReduce, 2, 1);
  EXPECT_EQ(p.latency, 2e-5);
  EXPECT_EQ(p.bandwidth_divisor, 1.0);
  // 8 adjacent domains: span 8 crosses racks into the pod; 2 of them per rack: max(1, 2 / 2) = 1
  p = network_path(s, CommType::AllReduce, 8, 1);
  EXPECT_EQ(p.latency, 3e-5);
  EXPECT_EQ(p.bandwidth_divisor, 1.0);
  // 8 domains 2 apart: span 15 <= 16, one per rack: 2 / 1 = 2
  p = network_path(s, CommType::AllReduce, 8, 2);
  EXPECT_EQ(p.latency, 3e-5);
  EXPECT_EQ(p.bandwidth_divisor, 2.0);
  // 32 adjacent domains: span 32 > 16 crosses pods; 16 per pod: max(1, 4 / 16) = 1, racks 2 / 2
  p = network_path(s, CommType::ReduceScatter, 32, 1);
  EXPECT_EQ(p.latency, 4e-5);
  EXPECT_EQ(p.bandwidth_divisor, 1.0);
  // 4 domains 16 apart (one per pod): pods 4 / 1 = 4, racks 2 / 1 = 2: the largest, 4
  p = network_path(s, CommType::AllGather, 4, 16);
  EXPECT_EQ(p.latency, 4e-5);
  EXPECT_EQ(p.bandwidth_divisor, 4.0);
  // 8 domains 4 apart (4 per pod, one per rack): racks 2, pods 4 / 4 = 1: 2
  p = network_path(s, CommType::AllGather, 8, 4);
  EXPECT_EQ(p.latency, 4e-5);
  EXPECT_EQ(p.bandwidth_divisor, 2.0);
}

// An all-to-all sends the share 1 - m / domains of every NIC's data out of a unit: max(1, o (1 -
// m / domains)).
TEST(NetworkTiers, AllToAllPathByHand) {
  const System s = tiered();
  // 8 adjacent domains in one pod: racks 1 x (1 - 1/8) < 1, pod 2 x (1 - 2/8) = 1.5
  NetworkPath p = network_path(s, CommType::AllToAll, 8, 1);
  EXPECT_EQ(p.latency, 3e-5);
  EXPECT_DOUBLE_EQ(p.bandwidth_divisor, 1.5);
  // 4 domains 16 apart: pods 4 x (1 - 1/4) = 3
  p = network_path(s, CommType::AllToAll, 4, 16);
  EXPECT_DOUBLE_EQ(p.bandwidth_divisor, 3.0);
}

// One link: the tiers whose units below hold its two domains apart.
TEST(NetworkTiers, LinkPathByHand) {
  const System s = tiered();
  NetworkPath l = link_path(s, 0, 1);  // one rack
  EXPECT_EQ(l.latency, 2e-5);
  EXPECT_EQ(l.bandwidth_divisor, 1.0);
  l = link_path(s, 1, 2);  // two racks of a pod: 2:1
  EXPECT_EQ(l.latency, 3e-5);
  EXPECT_EQ(l.bandwidth_divisor, 2.0);
  l = link_path(s, 15, 16);  // two pods: 1:4
  EXPECT_EQ(l.latency, 4e-5);
  EXPECT_EQ(l.bandwidth_divisor, 4.0);
}

// An all-reduce of 8 GB over 8 GPUs in 2 domains (4 each) 16 domains apart: the slow part over
// the hall at 5 / 4 = 1.25 GB/s per NIC, 4 rings (one per NIC of a domain):
//   slow 7/8 x 8 / (4 x 1.25) = 1.4 s, fast 7/8 x 8 / 50 = 0.14 s; x 2 (reduce-scatter and
//   all-gather) = 2.8 s; latency 4e-5 x (2 - 1) + 1e-6 x (8 - 2) = 4.6e-5 s.
// Adjacent (one rack): 5 GB/s, 0.35 s x 2 = 0.7 s, latency 2e-5 + 6e-6.
TEST(NetworkTiers, AllReduceByHand) {
  const System s = tiered();
  EXPECT_DOUBLE_EQ(analytical_collective_seconds(s, CommType::AllReduce, 8, 8, 4, 16), 2.8 + 4.6e-5);
  EXPECT_DOUBLE_EQ(analytical_collective_seconds(s, CommType::AllReduce, 8, 8, 4, 1), 0.7 + 2.6e-5);
  // without tiers, the stride changes nothing: 0.7 + 1e-5 + 6e-6
  EXPECT_DOUBLE_EQ(analytical_collective_seconds(round_system(), CommType::AllReduce, 8, 8, 4, 16), 0.7 + 1.6e-5);
}

// A pipeline of 4 stages, 8 domains apart (0, 8, 16, 24), every stage in its own domains: the
// links 0-8 and 16-24 stay in a pod (racks crossed at 2:1: 3e-5 + 10 x 2 / 5 = 4.00003 s), 8-16
// crosses pods (4e-5 + 10 x 4 / 5 = 8.00004 s); their mean 16.0001 / 3 per micro-batch, 4
// micro-batches. Without tiers every link is 2.00001 s (step_test.cpp).
TEST(NetworkTiers, PipelineLinksByHand) {
  BlockSummary b;
  b.p2p_volume_gb = 10;
  const LayerResult r = pipeline_parallel(tiered(), b, 4, 4, 1, false, 1, 8);
  EXPECT_DOUBLE_EQ(r.fwd.t, 4 * (4.00003 + 8.00004 + 4.00003) / 3);
  EXPECT_DOUBLE_EQ(pipeline_parallel(round_system(), b, 4, 4, 1, false, 1, 8).fwd.t, 8.00004);
}

// Tiers that neither oversubscribe nor add latency are the network without tiers, bit for bit.
TEST(NetworkTiers, PlainTiersChangeNothing) {
  System s = round_system();
  s.network_tiers = std::make_shared<const std::vector<NetworkTier>>(
      std::vector<NetworkTier>{{"rack", 2, 1e-5, 1}, {"rest", 0, 1e-5, 1}});
  for (const CommType type : {CommType::AllReduce, CommType::AllGather, CommType::ReduceScatter, CommType::AllToAll}) {
    for (const std::int64_t stride : {1, 2, 8}) {
      EXPECT_EQ(analytical_collective_seconds(s, type, 3, 16, 4, stride),
                analytical_collective_seconds(round_system(), type, 3, 16, 4, stride));
      EXPECT_EQ(analytical_collective_seconds(s, type, 3, 16, 1, stride),
                analytical_collective_seconds(round_system(), type, 3, 16, 1, stride));
    }
  }
}

// Context parallelism's ring over 4 domains, adjacent (a tensor group of 8 fills each): a ring
// step waits for its slowest link, first domain to last, 3 apart: the pair crosses racks into
// the pod (latency 3e-5 s, 2:1). The all-gather variant's group sits 1 domain apart.
TEST(NetworkTiers, ContextParallelRingSpansItsGroup) {
  const System s = tiered();
  const LayerCost ring = attention_core(s, "fusedla", {1, 4, 4, 128, 1024, 4096}, {KvSource::Ring, {4, 1}, 1});
  ASSERT_EQ(ring.comm_fwd.items[0].type, CommType::P2P);
  EXPECT_EQ(ring.comm_fwd.items[0].stride, 3);
  const NetworkPath p = network_path(s, CommType::P2P, 2, ring.comm_fwd.items[0].stride);
  EXPECT_EQ(p.latency, 3e-5);
  EXPECT_EQ(p.bandwidth_divisor, 2.0);
  const LayerCost gathered = attention_core(s, "fusedla", {1, 4, 4, 128, 1024, 4096}, {KvSource::Gathered, {4, 1}, 1});
  EXPECT_EQ(gathered.comm_fwd.items[0].type, CommType::AllGather);
  EXPECT_EQ(gathered.comm_fwd.items[0].stride, 1);
}

// The strides of the rank orders (model/grid.hpp: ParallelGrid::group), worked by hand on 8-GPU domains.
// Megatron's tp-cp-ep-dp-pp numbers rank = t + tp (c + cp (d + dp p)); tp-cp-ep-pp-dp numbers
// rank = t + tp (c + cp (e + ep (p + pp d'))) with d' the outer data-parallel rank. A domain holds
// 8 consecutive ranks.
Layout placed(std::int64_t tp, std::int64_t dp, std::int64_t pp, std::int64_t nv_tp, std::int64_t nv_dp,
              std::int64_t nv_pp, RankOrder order) {
  Layout c = test::one_d(tp, dp, pp);
  c.tensor.nv1 = nv_tp;
  c.nv_dp = nv_dp;
  c.nv_pp = nv_pp;
  c.exec.rank_order = order;
  return c;
}
constexpr RankOrder kDataInner = RankOrder::DataInnerPipelineOuter;
constexpr RankOrder kPipelineInner = RankOrder::PipelineInnerDataOuter;

// TP 8, PP 16, DP 64 (Llama 3 405B at 8K GPUs): a tensor group fills a domain. Megatron's order: a
// data-parallel group's members in consecutive domains (1), a stage 64 domains (dp tp / 8 = 64);
// the pipeline inside: consecutive stages in consecutive domains (tp / 8 = 1), a data-parallel
// group's members a pipeline replica apart (tp pp / 8 = 16).
TEST(NetworkTiers, RankOrderStridesByHand) {
  const StrategyPlan& oned = plan_of(Strategy::OneD);
  DomainStrides d = domain_strides(oned, placed(8, 64, 16, 8, 1, 1, kDataInner));
  EXPECT_EQ(d, (DomainStrides{1, 1, 64}));
  d = domain_strides(oned, placed(8, 64, 16, 8, 1, 1, kPipelineInner));
  EXPECT_EQ(d, (DomainStrides{16, 16, 1}));
  // TP 4, DP 8, PP 4 with two stages of a tensor group in a domain (nv_tp 4, nv_pp 2, nv_dp 1): the
  // pipeline inside, stage k at ranks 4k..4k+3, so stages 0-1 share domain 0 and 2-3 domain 1: the
  // stride between the pipeline's domains 1; a replica of 16 ranks spans 2 domains, so a
  // data-parallel group's members sit 2 domains apart. Megatron's order with the same placement: a
  // stage is dp tp = 32 ranks, 32 / (nv_dp nv_tp = 4) = 8 domains between stages, members of a
  // data-parallel group in consecutive domains.
  d = domain_strides(oned, placed(4, 8, 4, 4, 1, 2, kPipelineInner));
  EXPECT_EQ(d.pipeline, 1);
  EXPECT_EQ(d.data, 2);
  d = domain_strides(oned, placed(4, 8, 4, 4, 1, 2, kDataInner));
  EXPECT_EQ(d.pipeline, 8);
  EXPECT_EQ(d.data, 1);
}

// MoE, TP 8, DP 16 with EP 4, PP 4, one tensor group a domain. Megatron's order: the data-parallel
// group in consecutive domains (1), its expert-data-parallel group every ep = 4th, a stage dp tp =
// 128 ranks, 16 domains. The pipeline inside (tp-cp-ep-pp-dp): rank = t + 8 (e + 4 (p + 4 d')), so
// consecutive stages are tp ep = 32 ranks, 4 domains, apart; the data-parallel group (e, d') sits in
// domains e + 16 d': 0-3, 16-19, 32-35, 48-51, 16 domains spanning 52, so the ring's uniform stride
// is 51 / 15 = 3.4, rounded 3; the expert-data-parallel group (e fixed) every 16th domain, exactly.
TEST(NetworkTiers, RankOrderExpertStridesByHand) {
  const StrategyPlan& oned = plan_of(Strategy::OneD);
  Layout c = placed(8, 16, 4, 8, 1, 1, kDataInner);
  c.exec.ep = 4;
  DomainStrides d = domain_strides(oned, c);
  EXPECT_EQ(d, (DomainStrides{1, 4, 16}));
  c.exec.rank_order = kPipelineInner;
  d = domain_strides(oned, c);
  EXPECT_EQ(d, (DomainStrides{3, 16, 4}));
}

// Context parallelism with the pipeline inside: the data-parallel group (dp x cp) is a replica's cp
// ranks close together, then a jump of a replica, not uniformly strided; its ring's stride is the
// uniform one of the same span. TP 8, CP 2, PP 16, DP 4 (nv_tp 8, nv_cp 1): rank = t + 8 (c + 2 (p
// + 16 d)), so a member (c, d) sits in domain c + 32 d: 0, 1, 32, 33, 64, 65, 96, 97, 8 domains
// spanning 98: (8 - 1) s + 1 = 98 gives s = 97 / 7 = 13.86, rounded 14. Stages tp cp = 16 ranks, 2
// domains, apart. Megatron's order: the group in consecutive domains (a tensor group each), a stage
// dp cp tp = 64 ranks, 8 domains. With the whole cp group inside a domain (TP 4, CP 2, nv_tp 4,
// nv_cp 2) the stride is exact: a replica of tp cp pp = 32 ranks is 4 domains.
TEST(NetworkTiers, RankOrderContextParallelApproximation) {
  const StrategyPlan& oned = plan_of(Strategy::OneD);
  Layout c = placed(8, 4, 16, 8, 1, 1, kPipelineInner);
  c.tensor.cp = 2;
  DomainStrides d = domain_strides(oned, c);
  EXPECT_EQ(d, (DomainStrides{14, 14, 2}));  // data and expert alike: ep = 1, the same group
  EXPECT_EQ(ring_equivalent_stride(8, 2, 1, 32), 14);
  c.exec.rank_order = kDataInner;
  d = domain_strides(oned, c);
  EXPECT_EQ(d.data, 1);
  EXPECT_EQ(d.pipeline, 8);

  Layout inside = placed(4, 4, 4, 4, 1, 1, kPipelineInner);
  inside.tensor.cp = 2;
  inside.tensor.nv_cp = 2;
  d = domain_strides(oned, inside);
  EXPECT_EQ(d.data, 4);
  EXPECT_EQ(d.pipeline, 1);
}

// Without network tiers the rank order changes nothing; with them the pipeline inside moves traffic
// from the pipeline to the data-parallel group. TP 4 (a 4-GPU domain each), DP 4, PP 2: Megatron's
// order puts the two stages 4 domains apart (racks of 2 crossed at 2:1) and a data-parallel group
// in 4 consecutive domains (2 a rack: max(1, 2 / 2) = 1); the pipeline inside puts them in
// adjacent domains of one rack and the group's members 2 domains apart (one a rack: 2 / 1 = 2).
// The order is the layout's (its runtime's unless chosen): two layouts alike but for it.
TEST(NetworkTiers, RankOrderMovesTrafficOnlyWithTiers) {
  const Transformer m = test::small_model();
  const Layout c = placed(4, 4, 2, 4, 1, 1, kDataInner);
  const Layout c_inner = placed(4, 4, 2, 4, 1, 1, kPipelineInner);
  Runtime plain;
  plain.name = "plain";
  plain.file = "plain.yaml";
  const Evaluation megatron_plain = evaluate(round_system(), m, plain, c, 8);
  const Evaluation megatron_tiered = evaluate(tiered(), m, plain, c, 8);
  const Evaluation inner_plain = evaluate(round_system(), m, plain, c_inner, 8);
  const Evaluation inner_tiered = evaluate(tiered(), m, plain, c_inner, 8);
  EXPECT_EQ(inner_plain.totals.t, megatron_plain.totals.t);
  EXPECT_EQ(inner_plain.totals.t_dp_comm, megatron_plain.totals.t_dp_comm);
  EXPECT_EQ(inner_plain.totals.t_pp_comm, megatron_plain.totals.t_pp_comm);
  EXPECT_LT(inner_tiered.totals.t_pp_comm, megatron_tiered.totals.t_pp_comm);
  EXPECT_GT(inner_tiered.totals.t_dp_comm, megatron_tiered.totals.t_dp_comm);
}

}  // namespace
}  // namespace perfsweep
