// model/collective.hpp: every tier of the reference's analytical collective model
// (estimates.py get_time_comm) with numbers worked out by hand on the made-up system of
// common/round_system.hpp: NVLink 50 GB/s achieved, 1e-6 s per ring step, 4 GPUs per domain;
// IB 5 GB/s achieved per NIC, 1e-5 s per ring step, 1 NIC per GPU.
// Expected values are written as the decimals the arithmetic gives. EXPECT_DOUBLE_EQ (4 ulp)
// where a latency such as 1e-5 or a quotient such as 0.15 has no exact binary form and the few
// roundings of the formula may land an ulp or two from the literal; EXPECT_EQ where every step
// is exact in binary.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "common/round_system.hpp"
#include "model/collective.hpp"

namespace perfsweep {
namespace {

using test::config_error;
using test::round_system;

double coll(CommType type, double volume_gb, std::int64_t n, std::int64_t fast) {
  return analytical_collective_seconds(round_system(), type, volume_gb, n, fast);
}

TEST(Collective, OneGpuCostsNothing) {
  EXPECT_EQ(coll(CommType::AllReduce, 8, 1, 1), 0.0);
  EXPECT_EQ(coll(CommType::P2P, 8, 1, 1), 0.0);  // how the pipeline times a slow link (step.hpp)
}

TEST(Collective, ZeroAndNaNVolumeCostNothing) {
  EXPECT_EQ(coll(CommType::AllReduce, 0, 8, 4), 0.0);
  EXPECT_EQ(coll(CommType::AllGather, std::numeric_limits<double>::quiet_NaN(), 8, 4), 0.0);
  // The volume test comes first, as in the reference: an empty collective is not checked further.
  EXPECT_EQ(coll(CommType::P2P, 0, 3, 1), 0.0);
}

// fast_domain = 1: a ring over the slow network only.
//   allgather of 10 GB on 4 GPUs: 3 steps x 1e-5 + (3/4 x 10 GB) / 5 GB/s = 3e-5 + 1.5
TEST(Collective, SlowRingWhenNoGpuSharesADomain) {
  EXPECT_DOUBLE_EQ(coll(CommType::AllGather, 10, 4, 1), 1.50003);
  EXPECT_DOUBLE_EQ(coll(CommType::ReduceScatter, 10, 4, 1), 1.50003);
  // A one-tier allreduce is not doubled (only the two-tier path doubles it): the same 1.50003.
  EXPECT_DOUBLE_EQ(coll(CommType::AllReduce, 10, 4, 1), 1.50003);
}

// n = fast_domain: one NVLink domain.
//   reduce-scatter of 10 GB on 4 GPUs: 3 x 1e-6 + (3/4 x 10) / 50 = 3e-6 + 0.15
TEST(Collective, FastRingInsideOneDomain) {
  EXPECT_DOUBLE_EQ(coll(CommType::ReduceScatter, 10, 4, 4), 0.150003);
  EXPECT_DOUBLE_EQ(coll(CommType::AllReduce, 10, 4, 4), 0.150003);
  //   2 GPUs: 1 x 1e-6 + (1/2 x 10) / 50 = 1e-6 + 0.1
  EXPECT_DOUBLE_EQ(coll(CommType::AllGather, 10, 2, 2), 0.100001);
}

// Several domains: 8 GPUs, 4 per domain, so 2 domains. (n-1)/n x 16 GB = 14 GB.
//   slow: 14 / (nic_factor 1 x 4 rings x 5 GB/s) = 0.7;  fast: 14 / 50 = 0.28;  max = 0.7
//   latency: (2 - 1) domains x 1e-5 + (8 - 2) x 1e-6 = 1.6e-5
TEST(Collective, SeveralDomainsTakeTheSlowerTier) {
  EXPECT_DOUBLE_EQ(coll(CommType::AllGather, 16, 8, 4), 0.700016);
  EXPECT_DOUBLE_EQ(coll(CommType::ReduceScatter, 16, 8, 4), 0.700016);
  // 2 per domain, 4 domains: slow 14 / (2 x 5) = 1.4, fast 0.28; latency 3 x 1e-5 + 4 x 1e-6
  EXPECT_DOUBLE_EQ(coll(CommType::AllGather, 16, 8, 2), 1.400034);
}

// With 4 NICs per GPU the slow tier has 16 rings: 14 / (16 x 5) = 0.175 < 0.28, so NVLink bounds it.
TEST(Collective, SeveralDomainsBoundByNvlinkWithManyNics) {
  System s = round_system();
  s.nic_factor = 4;
  EXPECT_DOUBLE_EQ(analytical_collective_seconds(s, CommType::AllGather, 16, 8, 4), 0.280016);
  // allreduce: 2 x 0.28 + 1.6e-5 (latencies are not doubled)
  EXPECT_DOUBLE_EQ(analytical_collective_seconds(s, CommType::AllReduce, 16, 8, 4), 0.560016);
}

// Two tiers: allreduce = reduce-scatter + all-gather, twice the bandwidth term, latencies once:
//   2 x 0.7 + 1.6e-5
TEST(Collective, AllReduceDoublesOnTwoTiers) {
  EXPECT_DOUBLE_EQ(coll(CommType::AllReduce, 16, 8, 4), 1.400016);
}

// Reduce and broadcast are pipelined chains: the whole volume per GPU, no (n-1)/n, never doubled.
TEST(Collective, ReduceAndBroadcastMoveTheWholeVolume) {
  // one domain: 3 x 1e-6 + 10 / 50
  EXPECT_DOUBLE_EQ(coll(CommType::Broadcast, 10, 4, 4), 0.200003);
  EXPECT_DOUBLE_EQ(coll(CommType::Reduce, 10, 4, 4), 0.200003);
  // slow ring: 3 x 1e-5 + 10 / 5
  EXPECT_DOUBLE_EQ(coll(CommType::Broadcast, 10, 4, 1), 2.00003);
  // two domains: max(16 / (4 x 5), 16 / 50) = 0.8, + 1.6e-5
  EXPECT_DOUBLE_EQ(coll(CommType::Reduce, 16, 8, 4), 0.800016);
  EXPECT_DOUBLE_EQ(coll(CommType::Broadcast, 16, 8, 4), 0.800016);
}

// Point to point: one hop, the whole volume. NVLink: 1e-6 + 10 / 50; network: 1e-5 + 10 / 5.
TEST(Collective, PointToPointOnEitherLink) {
  EXPECT_DOUBLE_EQ(coll(CommType::P2P, 10, 2, 2), 0.200001);
  EXPECT_DOUBLE_EQ(coll(CommType::P2P, 10, 2, 1), 2.00001);
}

TEST(Collective, PointToPointIsBetweenTwoGpus) {
  EXPECT_EQ(config_error([] { coll(CommType::P2P, 10, 3, 1); }), "p2p communication is between a pair of GPUs, got 3");
}

TEST(Collective, FastDomainLargerThanTheNvlinkDomainIsAnError) {
  EXPECT_EQ(config_error([] { coll(CommType::AllReduce, 10, 16, 8); }), "collective over 8 GPUs of an NVLink domain of 4");
}

// Without a calibration the cost model's entry point is the analytical model, bit for bit.
TEST(Collective, UncalibratedCollectiveTimeIsAnalytical) {
  const System s = round_system();
  const CollectiveTime t = collective_time(s, CommType::AllReduce, 16, 8, 4);
  EXPECT_EQ(t.model, CommModel::Analytical);
  EXPECT_EQ(t.seconds, analytical_collective_seconds(s, CommType::AllReduce, 16, 8, 4));
  EXPECT_EQ(comm_model_name(t.model), "analytical");
}

TEST(Collective, TypeNamesAreTheReferences) {
  EXPECT_EQ(comm_type_name(CommType::None), "none");
  EXPECT_EQ(comm_type_name(CommType::AllReduce), "allreduce");
  EXPECT_EQ(comm_type_name(CommType::AllGather), "allgather");
  EXPECT_EQ(comm_type_name(CommType::ReduceScatter), "reducescatter");
  EXPECT_EQ(comm_type_name(CommType::Reduce), "reduce");
  EXPECT_EQ(comm_type_name(CommType::Broadcast), "broadcast");
  EXPECT_EQ(comm_type_name(CommType::P2P), "p2p");
}

}  // namespace
}  // namespace perfsweep
