// model/step.hpp: data- and pipeline-parallel communication, the step totals (pipeline bubble,
// memory) and the layout checks, with numbers worked out by hand. The network is the made-up
// one of common/round_system.hpp: NVLink 50 GB/s achieved and 1e-6 s per step, IB 5 GB/s and
// 1e-5 s per step, 4 GPUs per domain. EXPECT_DOUBLE_EQ (4 ulp) where a decimal latency has no exact
// binary form; EXPECT_EQ where the block's numbers are chosen as binary fractions (0.125,
// 0.0625, ...) so that every sum and product is exact.
#include <gtest/gtest.h>

#include <string>

#include "common/round_system.hpp"
#include "model/step.hpp"

namespace perfsweep {
namespace {

using test::config_error;
using test::round_system;
using test::small_model;

// One layer: MLP weights 6 GB, attention 2 GB; forward compute 0.06 + 0.04 = 0.1 s, backward
// 0.15 + 0.05 = 0.2 s; 10 GB sent between pipeline stages.
BlockSummary comm_block() {
  BlockSummary b;
  b.mlp.weights_mem = 6;
  b.sa.weights_mem = 2;
  b.mlp.t_fwd = 0.06;
  b.sa.t_fwd = 0.04;
  b.mlp.t_bwd = 0.15;
  b.sa.t_bwd = 0.05;
  b.p2p_volume_gb = 10;
  return b;
}

// 8 GB of weights over dp = 4 in one domain: 3 x 1e-6 + (3/4 x 8) / 50 = 0.120003 s per layer,
// for the all-gather (forward) and the reduce-scatter (backward) alike. 5 layers per stage.
TEST(DataParallel, OneCollectiveExposedAndTheExcessOfTheOthers) {
  const LayerResult r = data_parallel(round_system(), comm_block(), 5, 4, 4);
  // forward: 0.120003 exceeds the 0.1 s of compute by 0.020003 on each of the other 4 layers
  EXPECT_DOUBLE_EQ(r.fwd.t, 0.200015);  // 0.120003 + 4 x 0.020003
  // backward: 0.2 s of compute hides the other 4
  EXPECT_DOUBLE_EQ(r.bwd.t, 0.120003);
  EXPECT_DOUBLE_EQ(r.t, 0.320018);
  EXPECT_EQ(r.fwd.comm, r.fwd.t);  // a communication-only row
  EXPECT_EQ(r.fwd.comp, 0.0);
}

// Megatron-Core's interleaved schedule (DpOverlap::Chunk), worked by hand. 8 layers in 4 chunks of
// 2, one layer's compute 0.5 s, so one micro-batch step of a chunk 1 s, and chunk_steps 2 (pp):
// consecutive chunks' last backwards (and first forwards) 2 s apart.
TEST(DataParallel, InterleavedChunksQueueBehindTheSchedule) {
  DataParallelTraffic chunked;
  chunked.chunks = 4;
  chunked.chunk_steps = 2;
  // reductions of 0.2 s a layer: chunk k launched whole k x 2 s before the end plus the last
  // rank's delay of pp - 1 = 1 step (no later than the end): chunks 3, 2, 1 at -5, -3, -1 s, each
  // done 0.4 s later; chunk 0 at the end, 0.4 s exposed (the reference's window: 0.2)
  EXPECT_DOUBLE_EQ(exposed_dp_seconds(CommType::ReduceScatter, 0.2, 0.5, 8, chunked), 0.4);
  EXPECT_DOUBLE_EQ(exposed_dp_seconds(CommType::ReduceScatter, 0.2, 0.5, 8, {}), 0.2);
  // gathers of 0.2 s: chunk 0's first layer waits 0.2 s, its second is ready; chunks 1 (launched
  // at the start) and 2, 3 (at the first forward of the chunk before, 2.2 and 4.2 s) are ready
  // before their first forwards (4.2 and 6.2 s): 0.2 s, as the reference's window
  EXPECT_DOUBLE_EQ(exposed_dp_seconds(CommType::AllGather, 0.2, 0.5, 8, chunked), 0.2);
  // 1 s a layer, 4 layers in 2 chunks (one step 1 s, 2 s apart): reductions chunk 1 at -1 s done
  // at 1 s, chunk 0 from 1 s to 3 s; gathers chunk 0 stalls 1 + 0.5 s, chunk 1 (from 2 s, needed
  // 2 + 1.5 s) 0. The reference's window: 1 + 3 x 0.5 = 2.5 s each.
  DataParallelTraffic two = chunked;
  two.chunks = 2;
  EXPECT_DOUBLE_EQ(exposed_dp_seconds(CommType::ReduceScatter, 1, 0.5, 4, two), 3.0);
  EXPECT_DOUBLE_EQ(exposed_dp_seconds(CommType::AllGather, 1, 0.5, 4, two), 1.5);
  EXPECT_DOUBLE_EQ(exposed_dp_seconds(CommType::AllGather, 1, 0.5, 4, {}), 2.5);
}

TEST(DataParallel, WithoutOverlapEveryLayerPays) {
  const LayerResult r = data_parallel(round_system(), comm_block(), 5, 4, 4, /*overlap=*/false);
  EXPECT_DOUBLE_EQ(r.fwd.t, 0.600015);  // 5 x 0.120003
  EXPECT_DOUBLE_EQ(r.bwd.t, 0.600015);
}

TEST(DataParallel, OneReplicaCommunicatesNothing) {
  const LayerResult r = data_parallel(round_system(), comm_block(), 5, 1, 1);
  EXPECT_EQ(r.t, 0.0);
}

// 4 of the block's 8 GB are routed experts' weights, replicated over an expert-data-parallel
// group of dp / ep = 2 GPUs in one domain: per layer, the other 4 GB over the 4 GPUs, 3 x 1e-6 +
// (3/4 x 4) / 50 = 0.060003 s, then the experts' 4 GB over 2, 1e-6 + (1/2 x 4) / 50 = 0.040001 s:
// 0.100004 s, 4e-6 s more than a layer's forward compute.
TEST(DataParallel, ExpertWeightsMoveOverTheExpertDataParallelGroup) {
  BlockSummary b = comm_block();
  b.expert_weights_gb = 4;
  DataParallelTraffic traffic;
  traffic.expert_group = 2;
  traffic.expert_fast = 2;
  const LayerResult r = data_parallel(round_system(), b, 5, 4, 4, true, traffic);
  EXPECT_DOUBLE_EQ(r.fwd.t, 0.10002);  // 0.100004 + 4 x 4e-6
  EXPECT_DOUBLE_EQ(r.bwd.t, 0.100004);
  ASSERT_EQ(r.cost.comm_bwd.count, 2);
  EXPECT_EQ(r.cost.comm_bwd.items[0].group, 4);
  EXPECT_EQ(r.cost.comm_bwd.items[1].group, 2);
  EXPECT_EQ(r.cost.comm_bwd.items[1].volume_gb, 4.0);
  // Without the group (ep = 1) the experts' weights move with the others: 0.120003 s.
  EXPECT_DOUBLE_EQ(data_parallel(round_system(), b, 5, 4, 4).bwd.t, 0.120003);
}

// The expert-data-parallel group: dp / ep GPUs, ep ranks apart. nv_dp = 4 consecutive
// data-parallel ranks hold 2 of a group when ep = 2, 1 when ep = 4 or 8; 2d-seqp adds tp2.
TEST(DataParallel, ExpertDataParallelGroupAndItsNvlinkShare) {
  Layout c;
  c.dp = 8;
  c.nv_dp = 4;
  c.exec.ep = 2;
  // the weights' replicas (StrategyPlan::replicas) less the expert-parallel ranks, on the grid
  auto experts = [&] {
    return parallel_grid(c).group(without(plan_of(c.strategy).replicas, axis_bit(RankAxis::Ep)));
  };
  EXPECT_EQ(experts().size, 4);
  EXPECT_EQ(experts().fast, 2);
  c.exec.ep = 8;
  EXPECT_EQ(experts().size, 1);
  EXPECT_EQ(experts().fast, 1);
  c.strategy = Strategy::TwoDSeqp;
  c.tensor.tp2 = 2;
  c.tensor.nv2 = 2;
  c.exec.ep = 4;
  EXPECT_EQ(experts().size, 4);
  EXPECT_EQ(experts().fast, 2);
}

// 10 GB per transfer; 4 micro-batches; fwd and bwd each send every micro-batch once.
//   NVLink link: 1e-6 + 10 / 50 = 0.200001 s;  network link: 1e-5 + 10 / 5 = 2.00001 s
TEST(PipelineParallel, AllLinksSlowWhenNoStagesShareADomain) {
  const LayerResult r = pipeline_parallel(round_system(), comm_block(), 4, 4, 1);
  EXPECT_DOUBLE_EQ(r.fwd.t, 8.00004);  // 4 x 2.00001
  EXPECT_DOUBLE_EQ(r.bwd.t, 8.00004);
  EXPECT_DOUBLE_EQ(r.t, 16.00008);
}

// pp = 4 with 2 stages per domain: 3 links, 4/2 - 1 = 1 crossing domains (timed as free, the
// reference's quirk), 2 on NVLink: 2/3 x 0.200001 + 1/3 x 0 = 0.133334 per micro-batch.
TEST(PipelineParallel, FastAndSlowLinksMix) {
  const LayerResult r = pipeline_parallel(round_system(), comm_block(), 4, 4, 2);
  EXPECT_DOUBLE_EQ(r.fwd.t, 0.533336);  // 4 x 0.133334
  EXPECT_DOUBLE_EQ(r.t, 1.066672);
  // every stage in one domain: 3/3 fast links
  EXPECT_DOUBLE_EQ(pipeline_parallel(round_system(), comm_block(), 4, 4, 4).fwd.t, 0.800004);
}

// Under a framework's runtime the link between the two domains crosses the network:
// 2/3 x 0.200001 + 1/3 x 2.00001 = 0.800004 per micro-batch; with 2 virtual stages each
// micro-batch crosses every boundary twice.
TEST(PipelineParallel, FrameworkTimesSlowLinksOverTheNetwork) {
  const LayerResult r = pipeline_parallel(round_system(), comm_block(), 4, 4, 2, /*slow_links_free=*/false);
  EXPECT_DOUBLE_EQ(r.fwd.t, 4 * (2 * 0.200001 + 2.00001) / 3);
  EXPECT_DOUBLE_EQ(pipeline_parallel(round_system(), comm_block(), 4, 4, 2, false, 2).bwd.t,
                   2 * 4 * (2 * 0.200001 + 2.00001) / 3);
}

TEST(PipelineParallel, NoPipelineCostsNothing) {
  EXPECT_EQ(pipeline_parallel(round_system(), comm_block(), 4, 1, 1).t, 0.0);
  EXPECT_EQ(pipeline_parallel(round_system(), comm_block(), 4, 1, 1, false).t, 0.0);
}

TEST(PipelineParallel, NonPositivePlacementIsAnError) {
  EXPECT_EQ(config_error([] { pipeline_parallel(round_system(), comm_block(), 4, 4, 0); }),
            "pipeline NVLink placement must be positive, got 0");
}

// A block whose every number is a binary fraction, so the totals are exact:
//   MLP: 1 + 2 TFLOP, t 0.25 + 0.5 s (comm 0.0625 + 0.125, comp 0.125 + 0.25, mem 0.03125 + 0.0625),
//        weights 2 GB, activations 1 GB
//   SA:  0.5 + 1 TFLOP, t 0.125 + 0.25 s (comm 0 + 0.0625, comp 0.0625 + 0.125, mem 0 + 0.03125),
//        weights 1 GB, activations 0.5 GB
BlockSummary exact_block() {
  BlockSummary b;
  ModuleSums& m = b.mlp;
  m.flops_fwd = 1, m.flops_bwd = 2, m.t_fwd = 0.25, m.t_bwd = 0.5;
  m.t_fwd_comm = 0.0625, m.t_bwd_comm = 0.125, m.t_fwd_comp = 0.125, m.t_bwd_comp = 0.25;
  m.t_fwd_mem = 0.03125, m.t_bwd_mem = 0.0625, m.weights_mem = 2, m.activation_buffer = 1;
  ModuleSums& a = b.sa;
  a.flops_fwd = 0.5, a.flops_bwd = 1, a.t_fwd = 0.125, a.t_bwd = 0.25;
  a.t_fwd_comm = 0, a.t_bwd_comm = 0.0625, a.t_fwd_comp = 0.0625, a.t_bwd_comp = 0.125;
  a.t_fwd_mem = 0, a.t_bwd_mem = 0.03125, a.weights_mem = 1, a.activation_buffer = 0.5;
  return b;
}

// depth 16 over pp = 4: 4 layers per stage; 8 micro-batches; dp = 2; dp comm 1.5 s, pp comm 2 s.
TEST(StepTotals, TimeWithBubble) {
  const Totals x = step_totals(exact_block(), 1.5, 2, 16, 4, 2, 1, 8);
  // (0.375 + 0.75) s per layer and micro-batch x 8 micro-batches x 4 layers = 36 s, + pp 2 = 38
  // bubble: (pp - 1) x 38 / 8 = 3 x 4.75 = 14.25 (the pp comm is inside the per-micro-batch time)
  EXPECT_EQ(x.t_bubble, 14.25);
  EXPECT_EQ(x.t_pp_comm, 2.0);
  EXPECT_EQ(x.t_dp_comm, 1.5);
  EXPECT_EQ(x.t, 53.75);                    // 38 + 14.25 + 1.5
  EXPECT_EQ(x.flops_per_gpu, 144.0);        // (1 + 2 + 0.5 + 1) x 4 layers x 8
  EXPECT_EQ(x.t_tp_comm, 8.0);              // 0.25 x 8 x 4
  EXPECT_EQ(x.t_comp, 18.0);                // 0.5625 x 8 x 4
  EXPECT_EQ(x.t_mem, 4.0);                  // 0.125 x 8 x 4
  // fractions of t: each one correctly rounded division
  EXPECT_EQ(x.comp_frac, 18.0 / 53.75);
  EXPECT_EQ(x.tp_comm_frac, 8.0 / 53.75);
  EXPECT_EQ(x.dp_comm_frac, 1.5 / 53.75);
  EXPECT_EQ(x.pp_comm_frac, 2.0 / 53.75);
  EXPECT_EQ(x.bubble_frac, 14.25 / 53.75);
  EXPECT_EQ(x.mem_frac, 4.0 / 53.75);
}

TEST(StepTotals, MemoryWithOptimizerStatesAndInFlightActivations) {
  const Totals x = step_totals(exact_block(), 1.5, 2, 16, 4, 2, 1, 8);
  EXPECT_EQ(x.wts_mem, 12.0);                   // (2 + 1) GB x 4 layers
  EXPECT_EQ(x.wts_grad_mem, 12.0);              // one gradient per weight
  EXPECT_EQ(x.wts_optimizer_states_mem, 36.0);  // 6 x 12 / (dp 2 x seqp 1)
  EXPECT_EQ(x.acts_mem, 24.0);                  // 1.5 GB x 4 layers x min(8 micro-batches, pp 4)
  EXPECT_EQ(x.mem, 84.0);                       // 12 + 12 + 36 + 24
}

// Fewer micro-batches than stages, and optimizer states shared over dp x seqp = 2 x 2.
TEST(StepTotals, FewMicroBatchesAndSequenceSharding) {
  const Totals x = step_totals(exact_block(), 1.5, 2, 16, 4, 2, 2, 2);
  // 1.125 x 2 x 4 = 9, + 2 = 11; bubble 3 x 11 / 2 = 16.5; + 1.5
  EXPECT_EQ(x.t_bubble, 16.5);
  EXPECT_EQ(x.t, 29.0);
  EXPECT_EQ(x.wts_optimizer_states_mem, 18.0);  // 6 x 12 / 4
  EXPECT_EQ(x.acts_mem, 12.0);                  // 1.5 x 4 x min(2, 4)
  EXPECT_EQ(x.mem, 54.0);                       // 12 + 12 + 18 + 12
}

TEST(StepTotals, NoPipelineNoBubble) {
  const Totals x = step_totals(exact_block(), 0, 0, 16, 1, 1, 1, 8);
  EXPECT_EQ(x.t_bubble, 0.0);
  EXPECT_EQ(x.t, 144.0);       // 1.125 x 8 x 16 layers
  EXPECT_EQ(x.acts_mem, 24.0);  // 1.5 x 16 x min(8, 1)
}

// A small model whose every degree check can be hit: 16 heads, e = 1024, 8 blocks.
std::string layout_error(const Layout& l, std::int64_t global_batch = 64, const Transformer& m = small_model()) {
  return config_error([&] { validate_layout(round_system(), m, l, global_batch); });
}

Layout one_d(std::int64_t dp, std::int64_t tp, std::int64_t pp, std::int64_t mbs) {
  Layout l;
  l.dp = dp;
  l.pp = pp;
  l.mbs = mbs;
  l.tensor.tp1 = tp;
  return l;
}

TEST(ValidateLayout, AcceptsAnExpressibleLayout) {
  Layout l = one_d(2, 4, 2, 4);
  l.tensor.nv1 = 2;
  l.nv_dp = 2;
  EXPECT_EQ(layout_error(l), "");
}

TEST(ValidateLayout, NamesTheBadDegree) {
  EXPECT_EQ(layout_error(one_d(0, 1, 1, 1)), "dp must be a positive integer, got 0");
  Layout nb = one_d(1, 1, 1, 1);
  nb.tensor.nb = -1;
  EXPECT_EQ(layout_error(nb), "nb must be a positive integer, got -1");
  EXPECT_EQ(layout_error(one_d(1, 3, 1, 1)), "tp=3 does not divide the 16 heads");
  Transformer odd_e = small_model();
  odd_e.e = 1000;
  EXPECT_EQ(layout_error(one_d(1, 16, 1, 1), 64, odd_e), "tp=16 does not divide embed_dim 1000");
  EXPECT_EQ(layout_error(one_d(1, 1, 3, 1)),
            "pp=3 does not divide depth 8: give the end stages' blocks (--first-stage-blocks and "
            "--last-stage-blocks: numbers, or auto to balance the stages) under a runtime that runs uneven stages, "
            "or a pp dividing 8 (1, 2, 4, 8)");
  EXPECT_EQ(layout_error(one_d(3, 1, 1, 1)), "dp=3 does not divide the global batch size 64");
  EXPECT_EQ(layout_error(one_d(2, 1, 1, 3)), "mbs=3 does not divide the local batch size 32");
}

TEST(ValidateLayout, OneDHasNoSecondDimension) {
  Layout l = one_d(1, 2, 1, 1);
  l.tensor.tp2 = 2;
  EXPECT_EQ(layout_error(l), "1d tensor parallelism has no second dimension");
}

TEST(ValidateLayout, TwoDNamesTp1AndTp2) {
  Layout l = one_d(1, 3, 1, 1);
  l.strategy = Strategy::TwoD;
  EXPECT_EQ(layout_error(l), "tp1=3 does not divide the 16 heads");
  l.tensor.tp1 = 2;
  l.tensor.tp2 = 3;
  EXPECT_EQ(layout_error(l), "tp2=3 does not divide embed_dim 1024");
  l.tensor.tp2 = 2;
  l.tensor.nv1 = 4;
  EXPECT_EQ(layout_error(l), "nv_tp1=4 does not divide tp1=2");
  l.tensor.nv1 = 1;
  l.tensor.nv2 = 4;
  EXPECT_EQ(layout_error(l), "nv_tp2=4 does not divide tp2=2");
}

TEST(ValidateLayout, NvlinkPlacement) {
  Layout l = one_d(2, 2, 2, 1);
  l.tensor.nv1 = 4;
  EXPECT_EQ(layout_error(l), "nv_tp=4 does not divide tp=2");
  l.tensor.nv1 = 1;
  l.nv_dp = 4;
  EXPECT_EQ(layout_error(l), "nv_dp=4 does not divide dp=2");
  l.nv_dp = 1;
  l.nv_pp = 4;
  EXPECT_EQ(layout_error(l), "nv_pp=4 does not divide pp=2");
  // 2 x 2 x 2 = 8 GPUs per domain on a system of 4
  l.tensor.nv1 = 2;
  l.nv_dp = 2;
  l.nv_pp = 2;
  EXPECT_EQ(layout_error(l), "the NVLink placement uses 8 GPUs per domain, more than nvs=4");
}

}  // namespace
}  // namespace perfsweep

namespace perfsweep {
namespace {

// Execution options in the step (model/step.hpp step_memory): a stage of 4 blocks of 1 GB of
// weights each, dp = 4, no activations. The reference (ZeRO-1, its layout) keeps 4 GB of weights,
// 4 of gradients and 6 x 4 / 4 = 6 of optimizer states: 14 GB.
Execution exec_of(std::int64_t zero, ParamLayout params) {
  Execution x;
  x.zero = zero;
  x.params = params;
  return x;
}

TEST(ExecutionMemory, ZeroStagesShardWhatTheySay) {
  auto total = [](const Execution& x) { return step_memory(1, 0, 4, 1, 4, 1, 1, x).total; };
  EXPECT_EQ(total({}), 14.0);
  EXPECT_EQ(total(exec_of(0, ParamLayout::Reference)), 4.0 + 4 + 24);  // nothing sharded
  EXPECT_EQ(total(exec_of(1, ParamLayout::Reference)), 14.0);           // the reference's = ZeRO-1
  EXPECT_EQ(total(exec_of(2, ParamLayout::Reference)), 4.0 + 1 + 6);    // + gradients / 4
  // ZeRO-3: weights / 4 plus one block gathered whole: 1 + 1; gradients 1; optimizer 6
  EXPECT_EQ(total(exec_of(3, ParamLayout::Reference)), 2.0 + 1 + 6);
}

// Megatron: bf16 weights (4 GB), fp32 gradients (8), fp32 master + two moments 12 bytes per
// parameter = 6 x the 2-byte weights, / 4: 6. amp: fp32 weights (8) and bf16 copies (4),
// fp32 gradients (8), two fp32 moments = 4 x the weights (16) / 4 = 4.
TEST(ExecutionMemory, ParameterLayouts) {
  EXPECT_EQ(step_memory(1, 0, 4, 1, 4, 1, 1, exec_of(1, ParamLayout::Megatron)).total, 4.0 + 8 + 6);
  const StepMemory amp = step_memory(1, 0, 4, 1, 4, 1, 1, exec_of(1, ParamLayout::Amp));
  EXPECT_EQ(amp.weights, 12.0);
  EXPECT_EQ(amp.weight_grads, 8.0);
  EXPECT_EQ(amp.optimizer_states, 4.0);
}

// Interleaved 1F1B: pp = 4, V = 2: the first stage holds 4 (1 + 3 / 8) = 5.5 micro-batches of
// activations (Korthikanti et al. 2022, sec. 4.2.3) where 1F1B holds 4.
TEST(ExecutionMemory, InterleavedFirstStageActivations) {
  Execution x;
  x.interleave = 2;
  EXPECT_EQ(step_memory(0, 1, 2, 4, 1, 1, 4, x).activations, 2.0 * 4 * 1.375);
  EXPECT_EQ(step_memory(0, 1, 2, 4, 1, 1, 4, {}).activations, 2.0 * 4);
}

// The bubble of interleaved 1F1B is (p - 1) / (V m) of the work: exactly 1/V of 1F1B's.
TEST(ExecutionTime, InterleavedBubbleIsOneOverV) {
  BlockSummary b;
  b.mlp.t_fwd = 0.25;
  b.mlp.t_bwd = 0.5;
  for (std::int64_t v : {2, 4}) {
    Execution x;
    x.interleave = v;
    const Totals one = step_totals(b, 0, 0, 16, 4, 2, 1, 8);
    const Totals interleaved = step_totals(b, 0, 0, 16, 4, 2, 1, 8, x);
    EXPECT_EQ(interleaved.t_bubble * static_cast<double>(v), one.t_bubble) << "V=" << v;
  }
}

// The data-parallel traffic: Megatron reduces fp32 gradients (twice the volume), amp gathers and
// reduces fp32, ZeRO-3 gathers the parameters again in the backward.
TEST(ExecutionTime, DataParallelTraffic) {
  EXPECT_EQ(data_parallel_traffic({}).reduce_scale, 1.0);
  EXPECT_EQ(data_parallel_traffic(exec_of(1, ParamLayout::Megatron)).reduce_scale, 2.0);
  EXPECT_EQ(data_parallel_traffic(exec_of(1, ParamLayout::Megatron)).gather_scale, 1.0);
  EXPECT_EQ(data_parallel_traffic(exec_of(1, ParamLayout::Amp)).gather_scale, 2.0);
  EXPECT_TRUE(data_parallel_traffic(exec_of(3, ParamLayout::Reference)).gather_in_backward);
  EXPECT_FALSE(data_parallel_traffic(exec_of(2, ParamLayout::Reference)).gather_in_backward);
}

}  // namespace
}  // namespace perfsweep
