// The kernel-class roofline (model/roofline.hpp: compute_seconds, memory_seconds) and the timing of one
// layer (model/layer.hpp: time_layer), serial and SUMMA-overlapped, with numbers worked out by
// hand on the made-up system of common/round_system.hpp: tensor cores 100 TFLOP/s, vector units
// 10 TFLOP/s, both at the reference's 80% (80 and 8 TFLOP/s achieved) after a 20 us launch; HBM
// 1000 GB/s; NVLink 50 GB/s achieved and 1e-6 s per step, IB 5 GB/s and 1e-5 s per step, 4 GPUs
// per NVLink domain.
// EXPECT_DOUBLE_EQ (4 ulp) where the decimals (20e-6, 0.15, ...) have no exact binary form and
// the formula rounds a few times; EXPECT_EQ where every step is exact.
#include <gtest/gtest.h>

#include "common/round_system.hpp"
#include "model/collective.hpp"
#include "model/layer.hpp"
#include "model/roofline.hpp"

namespace perfsweep {
namespace {

using test::round_system;

// 20 us + 8 TFLOP / (0.8 x 100 TFLOP/s) = 2e-5 + 0.1; on the vector units 8 / (0.8 x 10) = 1.
TEST(Roofline, ComputeIsLaunchPlusWorkAtEightyPercentOfPeak) {
  const System s = round_system();
  EXPECT_DOUBLE_EQ(compute_seconds(s, KernelClass::Gemm, 8), 0.10002);
  EXPECT_DOUBLE_EQ(compute_seconds(s, KernelClass::Elementwise, 8), 1.00002);
  EXPECT_DOUBLE_EQ(compute_seconds(s, KernelClass::Attention, 0), 20e-6);  // the launch alone
}

// 500 GB / 1000 GB/s: one exact division.
TEST(Roofline, MemoryIsBytesOverBandwidth) {
  const System s = round_system();
  EXPECT_EQ(memory_seconds(s, KernelClass::Gemm, 500), 0.5);
  EXPECT_EQ(memory_seconds(s, KernelClass::Norm, 0), 0.0);
}

// A kernel class's own efficiencies: norms at half the vector peak after 5 us, at a quarter of
// the HBM bandwidth: 5e-6 + 8 / (0.5 x 10) = 1.600005 s; 500 GB / (0.25 x 1000 GB/s) = 2 s. The
// other classes keep the reference's 80% and 20 us.
TEST(Roofline, EachKernelClassHasItsOwnEfficiencies) {
  System s = round_system();
  s.kernels[static_cast<std::size_t>(KernelClass::Norm)] = {0.5, 0.25, 5e-6};
  EXPECT_DOUBLE_EQ(compute_seconds(s, KernelClass::Norm, 8), 1.600005);
  EXPECT_EQ(memory_seconds(s, KernelClass::Norm, 500), 2.0);
  EXPECT_DOUBLE_EQ(compute_seconds(s, KernelClass::Elementwise, 8), 1.00002);
  EXPECT_EQ(memory_seconds(s, KernelClass::Elementwise, 500), 0.5);
}

// One collective per pass, timed serially after max(compute, memory).
LayerCost serial_layer() {
  LayerCost c;
  c.name = "hand";
  c.flops_fwd = 8;    // 2e-5 + 0.1 = 0.10002 s
  c.mem_fwd = 200;    // 0.2 s: memory-bound
  c.flops_bwd = 16;   // 2e-5 + 0.2 = 0.20002 s: compute-bound
  c.mem_bwd = 100;    // 0.1 s
  // allreduce of 10 GB inside one domain of 4: 3 x 1e-6 + (3/4 x 10) / 50 = 0.150003 s
  c.comm_fwd.items[0] = {10, CommType::AllReduce, 1, 4, 4};
  // reduce-scatter of 10 GB over 8 GPUs, 2 domains: max(8.75 / 20, 8.75 / 50) + 1e-5 + 6 x 1e-6
  //   = 0.4375 + 1.6e-5 = 0.437516 s
  c.comm_bwd.items[0] = {10, CommType::ReduceScatter, 1, 8, 4};
  return c;
}

TEST(TimeLayer, SerialPassIsRooflinePlusCollectives) {
  const LayerResult r = time_layer(round_system(), serial_layer());
  // forward: memory-bound, max(0.10002, 0.2) + 0.150003
  EXPECT_DOUBLE_EQ(r.fwd.comp, 0.10002);
  EXPECT_DOUBLE_EQ(r.fwd.mem, 0.09998);  // memory time beyond compute: 0.2 - 0.10002
  EXPECT_DOUBLE_EQ(r.fwd.comm, 0.150003);
  EXPECT_DOUBLE_EQ(r.fwd.t, 0.350003);
  EXPECT_DOUBLE_EQ(r.fwd.intensity, 0.5001);  // 0.10002 / 0.2
  // backward: compute-bound, nothing of memory exposed; 0.20002 + 0.437516
  EXPECT_DOUBLE_EQ(r.bwd.comp, 0.20002);
  EXPECT_EQ(r.bwd.mem, 0.0);
  EXPECT_DOUBLE_EQ(r.bwd.comm, 0.437516);
  EXPECT_DOUBLE_EQ(r.bwd.t, 0.637536);
  EXPECT_DOUBLE_EQ(r.t, 0.987539);
}

// Recomputation runs the forward again inside the backward: bwd 0.637536 + 0.350003.
TEST(TimeLayer, RecomputeAddsTheForwardToTheBackward) {
  LayerCost c = serial_layer();
  c.recompute = true;
  const LayerResult r = time_layer(round_system(), c);
  EXPECT_DOUBLE_EQ(r.fwd.t, 0.350003);
  EXPECT_DOUBLE_EQ(r.bwd.t, 0.987539);
  EXPECT_DOUBLE_EQ(r.t, 1.337542);
  // the parts keep the backward's own values
  EXPECT_DOUBLE_EQ(r.bwd.comm, 0.437516);
  EXPECT_DOUBLE_EQ(r.bwd.comp, 0.20002);
}

// A layer without collectives: the default pass has one empty collective, which costs nothing.
TEST(TimeLayer, NoCollectiveNoCommunication) {
  LayerCost c;
  c.op = KernelOp::Bias;  // an elementwise kernel
  c.flops_fwd = 8;  // vector units: 2e-5 + 1
  c.mem_fwd = 1;    // 0.001 s
  const LayerResult r = time_layer(round_system(), c);
  EXPECT_EQ(r.fwd.comm, 0.0);
  EXPECT_EQ(r.fwd.mem, 0.0);
  EXPECT_DOUBLE_EQ(r.fwd.t, 1.00002);
}

// SUMMA with nb = 4 blocks, forward broadcasts of 40 GB and 20 GB over 4 GPUs of one domain.
// One block moves a quarter: 10 / 50 + 3e-6 = 0.200003 and 5 / 50 + 3e-6 = 0.100003, so one
// block's collectives take 0.300006 s and all four 1.200024 s. Exposed: one block, plus what the
// four exceed max(compute, memory).
LayerCost summa_layer(double flops_fwd, double mem_fwd) {
  LayerCost c;
  c.name = "summa";
  c.overlap = Overlap::Summa;
  c.summa_nb = 4;
  c.flops_fwd = flops_fwd;
  c.mem_fwd = mem_fwd;
  c.comm_fwd.count = 2;
  c.comm_fwd.is_list = true;
  c.comm_fwd.items[0] = {40, CommType::Broadcast, 1, 4, 4};
  c.comm_fwd.items[1] = {20, CommType::Broadcast, 1, 4, 4};
  return c;
}

TEST(TimeLayer, SummaComputeHidesTheOtherBlocks) {
  // compute 2e-5 + 160 / 80 = 2.00002 s >= 1.200024: only one block exposed
  const LayerResult r = time_layer(round_system(), summa_layer(160, 10));
  EXPECT_DOUBLE_EQ(r.fwd.comm, 0.300006);
  EXPECT_DOUBLE_EQ(r.fwd.t, 2.300026);
}

TEST(TimeLayer, SummaBlocksBeyondComputeAreExposed) {
  // compute 2e-5 + 40 / 80 = 0.50002 s: 0.300006 + (1.200024 - 0.50002) = 1.00001
  const LayerResult r = time_layer(round_system(), summa_layer(40, 10));
  EXPECT_DOUBLE_EQ(r.fwd.comm, 1.00001);
  EXPECT_DOUBLE_EQ(r.fwd.t, 1.50003);  // 0.50002 + 1.00001
}

TEST(TimeLayer, SummaOverlapsWithMemoryTimeToo) {
  // compute 0.10002 s, memory 1000 GB / 1000 GB/s = 1 s: the blocks hide behind the 1 s,
  // 0.300006 + (1.200024 - 1) = 0.50003
  const LayerResult r = time_layer(round_system(), summa_layer(8, 1000));
  EXPECT_DOUBLE_EQ(r.fwd.comm, 0.50003);
  EXPECT_DOUBLE_EQ(r.fwd.mem, 0.89998);
  EXPECT_DOUBLE_EQ(r.fwd.t, 1.50003);
}

}  // namespace
}  // namespace perfsweep
