// Context parallelism (1d, --cp): the key/value exchange's volumes worked out by hand, attention
// FLOPs per rank, activations and the data-parallel group, cp = 1 leaving every number as it was,
// the search agreeing with evaluate, refused inputs, and Llama 3's 128K-context layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>

#include "common/layouts.hpp"
#include "config/inputs.hpp"
#include "config/runtime_file.hpp"
#include "core/error.hpp"
#include "model/block.hpp"
#include "model/step.hpp"
#include "search/search.hpp"

namespace perfsweep {
namespace {

using test::one_d;
const std::filesystem::path kRoot = PERFSWEEP_SOURCE_DIR;

// Llama 3 8B: e 4096, 32 heads of 128, 8 key/value heads (GQA), sequence 8192, no dropout.
Transformer llama8b() { return load_model(kRoot / "models" / "llama3_8b.yaml"); }
System h100() { return load_system(kRoot / "systems" / "H100.yaml"); }

BlockLayer layer_of(const Transformer& m, Role role) {
  for (const BlockLayer& y : describe_block(m, AttentionMode{})) {
    if (y.role == role) return y;
  }
  throw ConfigError("no such layer");
}

TensorSplit split(std::int64_t tp, std::int64_t cp, std::int64_t nv_cp) {
  TensorSplit t;
  t.tp1 = tp;
  t.nv1 = tp;
  t.cp = cp;
  t.nv_cp = nv_cp;
  return t;
}

// The pass's two all-to-alls from item `first` on, over `group` GPUs of one domain: forward Q, K, V
// (`qkv` GB) then the output (`out`), backward the output's gradient then dQ, dK, dV.
void expect_all_to_alls(const LayerCost& c, std::uint8_t first, std::int64_t group, double qkv, double out) {
  for (const CommSet* set : {&c.comm_fwd, &c.comm_bwd}) {
    ASSERT_EQ(set->count, first + 2);
    for (std::uint8_t i = first; i < set->count; ++i) {
      EXPECT_EQ(set->items[i].type, CommType::AllToAll);
      EXPECT_EQ(set->items[i].group, group);
      EXPECT_EQ(set->items[i].fast_domain, group);
    }
  }
  EXPECT_DOUBLE_EQ(c.comm_fwd.items[first].volume_gb, qkv);
  EXPECT_DOUBLE_EQ(c.comm_fwd.items[first + 1].volume_gb, out);
  EXPECT_DOUBLE_EQ(c.comm_bwd.items[first].volume_gb, out);
  EXPECT_DOUBLE_EQ(c.comm_bwd.items[first + 1].volume_gb, qkv);
}

// tp 2, cp 4, one sample: each rank holds kv / tp = 4 key/value heads of l / cp = 2048 tokens.
// One ring step moves K and V: 2 x 4 x 2048 x 128 x 2 bytes = 4,194,304 B = 0.004194304 GB,
// three steps forward (cp - 1 = 3 transfers, 12,582,912 B in all); the backward moves K, V, dK and
// dV: 8,388,608 B a step. The whole ring in one NVLink domain (nv_cp = cp) is an NVLink pair.
TEST(ContextParallel, RingVolumesByHand) {
  const System s = h100();
  const Transformer m = llama8b();
  const BlockLayer core = layer_of(m, Role::AttentionCore);
  Execution x;
  const LayerCost c = shard_layer(s, Strategy::OneD, core, 1, m, split(2, 4, 4), AttentionMode{}, x);
  ASSERT_EQ(c.comm_fwd.count, 1);
  EXPECT_EQ(c.comm_fwd.items[0].type, CommType::P2P);
  EXPECT_DOUBLE_EQ(c.comm_fwd.items[0].volume_gb, 4194304e-9);
  EXPECT_DOUBLE_EQ(c.comm_bwd.items[0].volume_gb, 8388608e-9);
  EXPECT_EQ(c.comm_fwd.items[0].group, 2);
  EXPECT_EQ(c.comm_fwd.items[0].fast_domain, 2);
  EXPECT_EQ(c.overlap, Overlap::ContextRing);
  EXPECT_EQ(c.ring_steps, 4);
  EXPECT_DOUBLE_EQ(static_cast<double>(c.ring_steps - 1) * c.comm_fwd.items[0].volume_gb, 12582912e-9);

  // The ring across domains (nv_cp = 2 of 4): its slowest link, the network, bounds every step.
  const LayerCost across = shard_layer(s, Strategy::OneD, core, 1, m, split(2, 4, 2), AttentionMode{}, x);
  EXPECT_EQ(across.comm_fwd.items[0].fast_domain, 1);

  // Exposed: the first transfer's latency and, of each of the other 3, what one step's compute
  // (a quarter of the pass) does not hide; the rest is hidden.
  for (const LayerCost* k : {&c, &across}) {
    const LayerResult r = time_layer(s, *k);
    const Collective& f = k->comm_fwd.items[0];
    const double transfer = analytical_collective_seconds(s, CommType::P2P, f.volume_gb, 2, f.fast_domain);
    const double latency = f.fast_domain > 1 ? s.nvlink_latency : s.ib_latency;
    const double step = (r.fwd.t - r.fwd.comm) / 4;
    EXPECT_NEAR(r.fwd.comm, latency + 3 * std::max(0.0, transfer - step), 1e-15);
    EXPECT_NEAR(r.fwd.hidden + (r.fwd.comm - latency), 3 * transfer, 1e-15);
  }
}

// All-gather (Llama 3's): K and V of the whole sequence gathered, 2 x 4 heads x 8192 x 128 x 2 B =
// 16,777,216 B, over the cp = 4 ranks; the backward gathers them again and reduce-scatters dK, dV.
// In one domain a ring all-gather takes 3 NVLink latencies and 3/4 of the volume over NVLink.
TEST(ContextParallel, AllGatherVolumesByHand) {
  const System s = h100();
  const Transformer m = llama8b();
  Execution x;
  x.cp_comm = CpComm::AllGather;
  const LayerCost c =
      shard_layer(s, Strategy::OneD, layer_of(m, Role::AttentionCore), 1, m, split(2, 4, 4), AttentionMode{}, x);
  EXPECT_EQ(c.overlap, Overlap::Serial);
  ASSERT_EQ(c.comm_fwd.count, 1);
  EXPECT_EQ(c.comm_fwd.items[0].type, CommType::AllGather);
  EXPECT_DOUBLE_EQ(c.comm_fwd.items[0].volume_gb, 16777216e-9);
  EXPECT_EQ(c.comm_fwd.items[0].group, 4);
  ASSERT_EQ(c.comm_bwd.count, 2);
  EXPECT_EQ(c.comm_bwd.items[0].type, CommType::AllGather);
  EXPECT_EQ(c.comm_bwd.items[1].type, CommType::ReduceScatter);
  EXPECT_DOUBLE_EQ(c.comm_bwd.items[1].volume_gb, 16777216e-9);
  const LayerResult r = time_layer(s, c);
  const double expected = 3 * s.nvlink_latency + 0.75 * 16777216e-9 / (s.nvlink_bandwidth * s.nvlink_eff);
  EXPECT_NEAR(r.fwd.comm, expected, 1e-15);
}

// All-to-all (DeepSpeed-Ulysses's, Megatron-Core's a2a): after the exchange a rank holds 16 / 4 = 4
// query heads and 4 / 4 = 1 key/value head of every one of the 8192 tokens. Q: 4 x 8192 x 128 x 2 B =
// 8,388,608 B, K and V 2 x 1 x 8192 x 128 x 2 B = 4,194,304 B: one exchange of 12,582,912 B
// forward and one of the output's 8,388,608 B; backward the output's gradient, then dQ, dK, dV.
// Every head's attention is whole on one rank: exactly 1/cp of the whole layer's FLOPs both ways.
TEST(ContextParallel, AllToAllVolumesByHand) {
  const System s = h100();
  const Transformer m = llama8b();
  const BlockLayer core = layer_of(m, Role::AttentionCore);
  Execution x;
  x.cp_comm = CpComm::AllToAll;
  const LayerCost c = shard_layer(s, Strategy::OneD, core, 1, m, split(2, 4, 4), AttentionMode{}, x);
  EXPECT_EQ(c.overlap, Overlap::Serial);
  ASSERT_EQ(c.comm_fwd.count, 2);
  ASSERT_EQ(c.comm_bwd.count, 2);
  expect_all_to_alls(c, 0, 4, 12582912e-9, 8388608e-9);
  const LayerCost whole = shard_layer(s, Strategy::OneD, core, 1, m, split(2, 1, 1), AttentionMode{}, Execution{});
  EXPECT_EQ(c.flops_fwd, whole.flops_fwd / 4);
  EXPECT_EQ(c.flops_bwd, whole.flops_bwd / 4);
  EXPECT_EQ(c.activation_buffer, whole.activation_buffer / 4);
}

// Hierarchical (Megatron-Core's a2a+p2p): tp 2 leaves a rank 16 query and 4 key/value heads; cp 8
// with 4 of the group in a domain splits them over gcd(4, 16, 4) = 4 GPUs of one domain by
// all-to-alls, and the ring runs over the 8 / 4 = 2 groups of those, across domains. After the
// all-to-all a rank holds 4 query heads and 1 key/value head of 4 x 8192 / 8 = 4096 tokens:
// Q 4 x 4096 x 128 x 2 B = 4,194,304 B, K and V 2 x 4096 x 128 x 2 B = 2,097,152 B (one exchange
// of 6,291,456 B), the output 4,194,304 B; one ring step passes K and V, 2,097,152 B (backward
// with dK, dV: twice that). Each rank computes 4 heads x 4096 queries of 32 x 8192: 1/8 of the
// layer's forward FLOPs. a2a alone cannot split 4 key/value heads over cp 8: it is refused there.
TEST(ContextParallel, HierarchicalVolumesByHand) {
  const System s = h100();
  const Transformer m = llama8b();
  const BlockLayer core = layer_of(m, Role::AttentionCore);
  Execution x;
  x.cp_comm = CpComm::AllToAllP2P;
  EXPECT_EQ(cp_head_ranks(m, split(2, 8, 4), x.cp_comm), 4);
  const LayerCost c = shard_layer(s, Strategy::OneD, core, 1, m, split(2, 8, 4), AttentionMode{}, x);
  EXPECT_EQ(c.overlap, Overlap::ContextRing);
  EXPECT_EQ(c.ring_steps, 2);
  ASSERT_EQ(c.comm_fwd.count, 3);
  ASSERT_EQ(c.comm_bwd.count, 3);
  EXPECT_EQ(c.comm_fwd.items[0].type, CommType::P2P);
  EXPECT_EQ(c.comm_fwd.items[0].fast_domain, 1);  // the ring's two groups sit in two domains
  EXPECT_DOUBLE_EQ(c.comm_fwd.items[0].volume_gb, 2097152e-9);
  EXPECT_DOUBLE_EQ(c.comm_bwd.items[0].volume_gb, 4194304e-9);
  expect_all_to_alls(c, 1, 4, 6291456e-9, 4194304e-9);
  const LayerCost whole = shard_layer(s, Strategy::OneD, core, 1, m, split(2, 1, 1), AttentionMode{}, Execution{});
  EXPECT_EQ(c.flops_fwd, whole.flops_fwd / 8);
  // the all-to-alls are exposed beside the ring: the pass's communication is more than the ring's
  LayerCost ring_only = c;
  ring_only.comm_fwd = c.comm_fwd.first(1);
  EXPECT_GT(time_layer(s, c).fwd.comm, time_layer(s, ring_only).fwd.comm);

  Layout a2a = one_d(2, 1, 1);
  a2a.tensor.cp = 8;
  a2a.tensor.nv_cp = 4;
  a2a.exec.cp_comm = CpComm::AllToAll;
  EXPECT_THROW(validate_layout(s, m, a2a, 64), ConfigError);
  a2a.exec.cp_comm = CpComm::AllToAllP2P;
  EXPECT_NO_THROW(validate_layout(s, m, a2a, 64));
  // without NVLink peers in the cp group nothing splits the heads: the ring alone, as p2p
  a2a.tensor.nv_cp = 1;
  EXPECT_EQ(cp_head_ranks(m, a2a.tensor, CpComm::AllToAllP2P), 1);
  Execution p2p;
  const LayerCost ring = shard_layer(s, Strategy::OneD, core, 1, m, split(2, 8, 1), AttentionMode{}, p2p);
  const LayerCost hier = shard_layer(s, Strategy::OneD, core, 1, m, split(2, 8, 1), AttentionMode{}, x);
  EXPECT_EQ(time_layer(s, hier).t, time_layer(s, ring).t);
}

// Each rank computes 1/cp of the causal attention: its l / cp queries against all l keys, half of
// them masked. Forward: every term is linear in the query rows, so exactly a quarter of the whole
// attention's (cp = 4, a power of two). Backward: dK and dV are dot products of length l / cp per
// rank (l with one GPU), so each has (l - 1) / cp - (l / cp - 1) = 1 - 1/cp fewer adds per output
// element than a quarter of the whole: 2 b h_local l q (1 - 1/cp) adds, halved by the causal mask.
TEST(ContextParallel, AttentionFlopsPerRank) {
  const System s = h100();
  const Transformer m = llama8b();
  const BlockLayer core = layer_of(m, Role::AttentionCore);
  const LayerCost whole = shard_layer(s, Strategy::OneD, core, 1, m, split(2, 1, 1), AttentionMode{}, Execution{});
  const LayerCost rank = shard_layer(s, Strategy::OneD, core, 1, m, split(2, 4, 4), AttentionMode{}, Execution{});
  EXPECT_EQ(rank.flops_fwd, whole.flops_fwd / 4);
  const double bh = 16, l = 8192, q = 128;  // 32 heads over tp 2
  const double fewer_adds = 0.5 * 2 * bh * l * q * (1 - 1.0 / 4) * s.flops_units;
  EXPECT_NEAR(rank.flops_bwd, whole.flops_bwd / 4 - fewer_adds, 1e-12 * whole.flops_bwd);
  // The other layers see l / cp tokens: fc1's FLOPs are a quarter of the whole sequence's.
  const BlockLayer fc1 = layer_of(m, Role::ColumnProjection);
  EXPECT_EQ(shard_layer(s, Strategy::OneD, fc1, 1, m, split(2, 4, 4), AttentionMode{}, Execution{}).flops_fwd,
            shard_layer(s, Strategy::OneD, fc1, 1, m, split(2, 1, 1), AttentionMode{}, Execution{}).flops_fwd / 4);
}

// Activations per rank are 1/cp of the whole sequence's (Megatron's accounting: tokens l / cp),
// and the data-parallel reduction runs over dp x cp GPUs (cp's weight replicas join it), nv_dp x
// nv_cp of them in a domain; the distributed optimizer shards over them too.
TEST(ContextParallel, ActivationsAndDataParallelGroup) {
  const System s = h100();
  const Transformer m = llama8b();
  const Runtime rt = load_runtime_named("megatron");
  Layout c = one_d(2, 2, 1);
  c.tensor.nv1 = 2;
  const BlockActivations whole = megatron_block_activations(m, c);
  c.tensor.cp = 4;
  c.tensor.nv_cp = 4;
  const BlockActivations rank = megatron_block_activations(m, c);
  EXPECT_EQ(rank.sa, whole.sa / 4);
  EXPECT_EQ(rank.mlp, whole.mlp / 4);
  const Evaluation ev = evaluate(s, m, rt, c, 64);
  EXPECT_EQ(ev.dp_row.cost.comm_bwd.items[0].group, 8);
  EXPECT_EQ(ev.dp_row.cost.comm_bwd.items[0].fast_domain, 4);
  EXPECT_EQ(c.n_gpus(), 16);
}

// cp = 1 changes nothing: the exchange choice is not read without context parallelism, and a
// search whose choices hold cp = 1 alone (with both exchanges) keeps the same configurations with
// the same bits as the default search.
TEST(ContextParallel, OneChangesNothing) {
  const System s = h100();
  const Transformer m = llama8b();
  const Runtime rt = load_runtime_named("megatron");
  Layout c = one_d(8, 4, 2);
  c.tensor.nv1 = 8;
  const Evaluation base = evaluate(s, m, rt, c, 256);
  c.exec.cp_comm = CpComm::AllGather;
  const Evaluation gathered = evaluate(s, m, rt, c, 256);
  for (const TotalsField& f : kTotalsFields) EXPECT_EQ(base.totals.*f.member, gathered.totals.*f.member) << f.name;

  SearchProblem p;
  p.model = m;
  p.system = s;
  p.global_batch = 256;
  p.runtime = rt;
  SearchCounters k1, k2;
  const TopN plain = Searcher(p).run_all(64, k1);
  p.exec.cp = {1};
  p.exec.cp_comm = {CpComm::AllGather, CpComm::P2P};
  const TopN with_choice = Searcher(p).run_all(64, k2);
  ASSERT_EQ(plain.items().size(), with_choice.items().size());
  EXPECT_EQ(k1.candidates, k2.candidates);
  for (std::size_t i = 0; i < plain.items().size(); ++i) {
    EXPECT_EQ(plain.items()[i].throughput, with_choice.items()[i].throughput);
    EXPECT_EQ(plain.items()[i].mem, with_choice.items()[i].mem);
  }
}

// The search over cp and both exchanges ranks what evaluate gives, bit for bit; at a 64K context
// it keeps context-parallel layouts of both kinds.
TEST(ContextParallel, SearchAgreesWithEvaluate) {
  SearchProblem p;
  p.model = llama8b();
  p.model.l = 65536;
  p.system = h100();
  p.global_batch = 32;
  p.top_n = 40;
  p.runtime = load_runtime_named("megatron");
  p.exec.cp = {1, 2, 4, 8};
  p.exec.cp_comm = {CpComm::P2P, CpComm::AllGather, CpComm::AllToAll, CpComm::AllToAllP2P};
  p.exec.recompute = {Recompute::None, Recompute::Full};
  check_runtime_choices(p.system, p.runtime, p.strategy, p.exec);
  Searcher searcher(p);
  SearchCounters counters;
  const TopN top = searcher.run_all(64, counters);
  ASSERT_FALSE(top.items().empty());
  bool ring = false, gathered = false, all_to_all = false;
  for (const Candidate& c : top.items()) {
    const Evaluation ev = evaluate(p.system, p.model, p.runtime, c.layout, p.global_batch);
    EXPECT_EQ(ev.throughput, c.throughput) << "cp=" << c.layout.tensor.cp;
    for (const TotalsField& f : kTotalsFields) EXPECT_EQ(ev.totals.*f.member, c.totals.*f.member) << f.name;
    EXPECT_EQ(c.layout.n_gpus(), 64);
    if (c.layout.tensor.cp > 1) {
      (c.layout.exec.cp_comm == CpComm::P2P ? ring : c.layout.exec.cp_comm == CpComm::AllGather ? gathered : all_to_all) =
          true;
    }
  }
  EXPECT_TRUE(ring);
  EXPECT_TRUE(gathered);
  EXPECT_TRUE(all_to_all);
}

// With experts: Mixtral 8x7B (8 experts, 32k tokens) over cp 1, 2 and ep 1, 2, 4 at 64 GPUs: the
// search keeps configurations with both cp > 1 and ep > 1, each equal to evaluate's bit for bit.
TEST(ContextParallel, WithExpertParallelism) {
  SearchProblem p;
  p.model = load_model(kRoot / "models" / "mixtral_8x7b.yaml");
  p.model.l = 32768;
  p.system = h100();
  p.global_batch = 64;
  p.top_n = 200;
  p.runtime = load_runtime_named("megatron");
  p.exec.cp = {1, 2};
  p.exec.ep = {1, 2, 4};
  p.exec.recompute = {Recompute::Full};
  check_runtime_choices(p.system, p.runtime, p.strategy, p.exec);
  Searcher searcher(p);
  SearchCounters counters;
  const TopN top = searcher.run_all(64, counters);
  ASSERT_FALSE(top.items().empty());
  bool both = false;
  for (const Candidate& c : top.items()) {
    const Evaluation ev = evaluate(p.system, p.model, p.runtime, c.layout, p.global_batch);
    EXPECT_EQ(ev.throughput, c.throughput) << "cp=" << c.layout.tensor.cp << " ep=" << c.layout.exec.ep;
    for (const TotalsField& f : kTotalsFields) EXPECT_EQ(ev.totals.*f.member, c.totals.*f.member) << f.name;
    both = both || (c.layout.tensor.cp > 1 && c.layout.exec.ep > 1);
  }
  EXPECT_TRUE(both);
}

TEST(ContextParallel, RefusedInputs) {
  const System s = h100();
  const Transformer m = llama8b();
  auto refused = [&](Layout c, const std::string& expected) {
    try {
      validate_layout(s, m, c, 64);
      ADD_FAILURE() << "accepted; expected: " << expected;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  Layout two_d;
  two_d.strategy = Strategy::TwoDSeqp;
  two_d.tensor.cp = 2;
  refused(two_d, "cp=2: context parallelism is modelled for 1d tensor parallelism only");
  Layout odd = one_d(1, 1, 1);
  odd.tensor.cp = 3;  // 8192 is not a multiple of 6
  refused(odd, "seq_len 8192 does not split into 2 cp = 6 chunks");
  Layout unfused = one_d(1, 1, 1);
  unfused.tensor.cp = 2;
  unfused.attention.flash = false;
  refused(unfused, "needs flash attention");
  Layout ulysses = one_d(8, 1, 1);  // 8 key/value heads over tp 8: one a rank, not split over cp 2
  ulysses.tensor.cp = 2;
  ulysses.exec.cp_comm = CpComm::AllToAll;
  refused(ulysses, "the 4 query heads and 1 key/value heads of a tensor-parallel rank must be multiples of it");
  Layout placed = one_d(1, 1, 1);
  placed.tensor.cp = 4;
  placed.tensor.nv_cp = 3;
  refused(placed, "nv_cp=3 does not divide cp=4");

  // The reference runtime runs no context parallelism: refused by evaluate and by the choices.
  Layout c = one_d(1, 1, 1);
  c.tensor.cp = 2;
  EXPECT_THROW(evaluate(s, m, reference_runtime(), c, 64), ConfigError);
  ExecutionChoices only_cp;
  only_cp.cp = {2};
  EXPECT_THROW(check_runtime_choices(s, reference_runtime(), Strategy::OneD, only_cp), InputError);
  ExecutionChoices with_one;
  with_one.cp = {1, 2};
  std::vector<std::string> dropped;
  check_runtime_choices(s, reference_runtime(), Strategy::OneD, with_one, &dropped);
  EXPECT_EQ(with_one.cp, (std::vector<std::int64_t>{1}));
  EXPECT_EQ(dropped.size(), 1u);
  ExecutionChoices two_d_cp;
  two_d_cp.cp = {4};
  EXPECT_THROW(check_runtime_choices(s, reference_runtime(), Strategy::TwoDSeqp, two_d_cp), InputError);
}

// Llama 3 405B at a 131,072-token context on 16,384 H100s in the layout of Llama 3's long-context
// stage (Dubey et al. 2024, Table 4: TP 8, CP 16, PP 16, DP 8, 16M tokens a step = 128 sequences),
// with full recomputation and the pipeline partition that balances its stages: it fits, and its
// prediction is printed (the paper reports 380 TFLOP/s per GPU, 38% BF16 MFU; not a target).
TEST(ContextParallel, Llama3LongContext) {
  const System s = load_system(kRoot / "systems" / "H100-calibrated.yaml");
  Transformer m = load_model(kRoot / "models" / "llama3_405b.yaml");
  m.l = 131072;
  const Runtime rt = load_runtime_named("megatron");
  Layout c = one_d(8, 8, 16);
  c.tensor.cp = 16;
  c.tensor.nv1 = 8;
  c.exec.recompute = Recompute::Full;
  c = with_balanced_stages(s, m, rt, c, 128);
  EXPECT_EQ(c.n_gpus(), 16384);
  const Evaluation ev = evaluate(s, m, rt, c, 128);
  EXPECT_TRUE(ev.fits);
  EXPECT_GT(ev.throughput, 0);
  std::printf("llama3_405b l=131072 tp8 cp16 pp16 dp8 (recompute full, stages %lld/%lld): step %.3f s, %.1f "
              "model TFLOP/s per GPU, MFU %.1f%%, memory %.1f of %.1f GB\n",
              static_cast<long long>(c.exec.first_stage_blocks), static_cast<long long>(c.exec.last_stage_blocks),
              ev.totals.t, ev.efficiency.model_tflops_per_gpu, 100 * ev.efficiency.mfu, ev.totals.mem,
              ev.totals.mem_limit);
}

}  // namespace
}  // namespace perfsweep
