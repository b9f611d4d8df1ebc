// Runtimes (model/runtime.hpp, runtimes/*.yaml): Megatron's activation accounting against
// Korthikanti et al. 2022 Table 2, the reference runtime file against the built-in, ZeRO-3's
// per-micro-batch gathers, the search against estimate under a runtime, and the loader's errors.
// Uneven pipeline stages through evaluate and the search: an explicit even split is the default
// bit for bit (reference and Megatron runtimes), Llama 3 405B's 7 + 14 x 8 + 7 split costs its
// fullest stage, and under a runtime beyond the reference the search tries the pipeline depths
// that do not divide the model's, each with its balanced partition, whose every ranked
// configuration is what evaluate gives.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "common/layouts.hpp"
#include "config/execution_flags.hpp"
#include "config/inputs.hpp"
#include "config/runtime_file.hpp"
#include "core/error.hpp"
#include "io/launch.hpp"
#include "model/step.hpp"
#include "search/dimensions.hpp"
#include "search/pipeline_advice.hpp"
#include "search/search.hpp"

namespace perfsweep {
namespace {

const std::filesystem::path kRoot = PERFSWEEP_SOURCE_DIR;

using test::one_d;

// Table 2 (Korthikanti et al. 2022, arXiv 2205.05198): bytes per layer sbh (34/t) with tensor and
// sequence parallelism, sbh (10 + 24/t) with tensor parallelism alone, flash attention keeping no
// scores (the 5as/h term gone) but an fp32 log-sum-exp per head and token (4 a/t bytes).
TEST(Runtime, MegatronActivationsAreTable2) {
  const Transformer m = load_model(kRoot / "models" / "gpt3_1T.yaml");
  ASSERT_EQ(m.e, 25600);
  ASSERT_EQ(m.l, 2048);
  Layout c = one_d(4, 1, 1);
  const double sbh = 2048.0 * 25600.0;
  const double lse = 2048.0 * 4.0 * 160.0 / 4.0;
  BlockActivations a = megatron_block_activations(m, c);
  EXPECT_NEAR((a.sa + a.mlp) * 1e9, sbh * 34.0 / 4.0 + lse, 1e-3);
  c.exec.sequence_parallel = false;
  a = megatron_block_activations(m, c);
  EXPECT_NEAR((a.sa + a.mlp) * 1e9, sbh * (10.0 + 24.0 / 4.0) + lse, 1e-3);
  // Full recomputation keeps the block's input alone: 2 sbh / t with sequence parallelism.
  c.exec.sequence_parallel = true;
  c.exec.recompute = Recompute::Full;
  a = megatron_block_activations(m, c);
  EXPECT_NEAR((a.sa + a.mlp) * 1e9, sbh * 2.0 / 4.0, 1e-3);
}

TEST(Runtime, ReferenceFileIsTheBuiltIn) {
  const Runtime rt = load_runtime(kRoot / "runtimes" / "reference.yaml");
  EXPECT_TRUE(rt.is_reference());
  const System s = load_system(kRoot / "systems" / "A100.yaml");
  const Transformer m = load_model(kRoot / "models" / "gpt3_1T.yaml");
  const Layout c = one_d(8, 32, 16);
  const Evaluation a = evaluate(s, m, c, 4096), b = evaluate(s, m, rt, c, 4096);
  for (const TotalsField& f : kTotalsFields) EXPECT_EQ(a.totals.*f.member, b.totals.*f.member) << f.name;
  EXPECT_EQ(a.fits, b.fits);
}

// DeepSpeed's ZeRO-3 gathers and reduces every micro-batch: four times the micro-batches, four
// times the data-parallel communication; Megatron's distributed optimizer (ZeRO-1) once a step.
TEST(Runtime, ZeroThreeGathersPerMicroBatch) {
  const System s = load_system(kRoot / "systems" / "H100.yaml");
  const Transformer m = load_model(kRoot / "models" / "llama3_8b.yaml");
  Layout c = one_d(1, 64, 1);
  c.exec.zero = 3;
  const Runtime ds = load_runtime_named("deepspeed");
  const double t8 = evaluate(s, m, ds, c, 64 * 8).totals.t_dp_comm;
  const double t32 = evaluate(s, m, ds, c, 64 * 32).totals.t_dp_comm;
  EXPECT_NEAR(t32 / t8, 4.0, 1e-12);
  c.exec.zero = 1;
  const Runtime mg = load_runtime_named("megatron");
  EXPECT_EQ(evaluate(s, m, mg, c, 64 * 8).totals.t_dp_comm, evaluate(s, m, mg, c, 64 * 32).totals.t_dp_comm);
}

// Megatron-FSDP under the megatron and nemo runtimes (ZeRO-2 and -3; Megatron-Core's FsdpModule
// hooks): ZeRO-3 gathers the parameters before each micro-batch's forward and backward and
// reduce-scatters its gradients after its backward, so four times the micro-batches is four times
// the data-parallel communication, as DeepSpeed's; ZeRO-2 gathers the weights once a step and
// reduce-scatters every micro-batch; ZeRO-1 (the distributed optimizer) stays once a step.
TEST(Runtime, MegatronFsdpShardsEveryMicroBatch) {
  for (const char* name : {"megatron", "nemo", "megatron_tp_overlap"}) {
    const Runtime rt = load_runtime_named(name);
    for (std::int64_t z = 0; z <= 3; ++z) EXPECT_TRUE(rt.runs_zero(z)) << name << " zero " << z;
    Execution x;
    x.zero = 3;
    DataParallelTraffic t = data_parallel_traffic(rt, x, 8);
    EXPECT_EQ(t.gather_repeats, 8) << name;
    EXPECT_EQ(t.reduce_repeats, 8) << name;
    EXPECT_TRUE(t.gather_in_backward) << name;
    x.zero = 2;
    t = data_parallel_traffic(rt, x, 8);
    EXPECT_EQ(t.gather_repeats, 1) << name;
    EXPECT_EQ(t.reduce_repeats, 8) << name;
    x.zero = 1;
    t = data_parallel_traffic(rt, x, 8);
    EXPECT_EQ(t.gather_repeats, 1) << name;
    EXPECT_EQ(t.reduce_repeats, 1) << name;
  }
  const System s = load_system(kRoot / "systems" / "H100.yaml");
  const Transformer m = load_model(kRoot / "models" / "llama3_8b.yaml");
  Layout c = one_d(1, 64, 1);
  c.exec.zero = 3;
  const Runtime mg = load_runtime_named("megatron");
  const Evaluation e8 = evaluate(s, m, mg, c, 64 * 8), e32 = evaluate(s, m, mg, c, 64 * 32);
  EXPECT_NEAR(e32.totals.t_dp_comm / e8.totals.t_dp_comm, 4.0, 1e-12);
  // every state sharded over the 64 GPUs: the weights' share is 1/64 of ZeRO-1's whole weights,
  // less the one block gathered whole
  c.exec.zero = 1;
  const Evaluation one = evaluate(s, m, mg, c, 64 * 8);
  EXPECT_LT(e8.totals.wts_mem, one.totals.wts_mem / 8);
  EXPECT_NEAR(e8.totals.wts_optimizer_states_mem, one.totals.wts_optimizer_states_mem, 1e-9);
}

// runtimes/llama3.yaml states Meta's framework as the Llama 3 paper's section 3.3.2 describes it:
// FSDP sharding optimizer states and fp32 gradients (ZeRO-2) with the bf16 weights kept whole over
// the step, fp32 gradients reduced once a step, all-gather context parallelism only; the rest as
// megatron.yaml. H100-llama3-cluster runs it by default.
// nemo is megatron_tp_overlap with the performance recipes' differences and nothing else: bf16
// gradient buffers (grad_reduce_in_fp32 = False), zeroed at 2 bytes, FP8 current scaling without
// fused casts, no hierarchical context-parallel exchange (NeMo's strategy creates no hierarchical
// groups), NeMo's launch line, Transformer Engine's fused MoE permutation (Megatron Bridge's MoE
// providers set moe_permute_fusion); the calibrated H100 and H200 systems run it.
TEST(Runtime, NemoIsMegatronWithTheRecipesSettings) {
  const Runtime nemo = load_runtime(kRoot / "runtimes" / "nemo.yaml");
  Runtime expected = load_runtime(kRoot / "runtimes" / "megatron_tp_overlap.yaml");
  expected.name = "nemo";
  expected.states.gradients = 2;
  expected.zero_grad_bytes = 2;
  expected.mechanisms.fp8.recipe = Fp8Recipe::Current;
  expected.mechanisms.fp8.fused_casts = false;
  expected.context_parallel &= static_cast<std::uint8_t>(~(1u << static_cast<unsigned>(CpComm::AllToAllP2P)));
  expected.launch = static_cast<std::int8_t>(LaunchFramework::Nemo);
  expected.mechanisms.moe_permutation = MoePermutation::Fused;
  EXPECT_EQ(runtime_to_yaml(nemo), runtime_to_yaml(expected));
  for (const char* system :
       {"H100-calibrated.yaml", "H200-calibrated.yaml", "B200-calibrated.yaml", "B300-calibrated.yaml",
        "GB200-calibrated.yaml", "GB300-calibrated.yaml"}) {
    EXPECT_EQ(load_system(kRoot / "systems" / system).runtime, "nemo") << system;
  }
}

TEST(Runtime, Llama3FileStatesThePaper) {
  const Runtime rt = load_runtime(kRoot / "runtimes" / "llama3.yaml");
  const Runtime mg = load_runtime(kRoot / "runtimes" / "megatron.yaml");
  EXPECT_EQ(rt.name, "llama3");
  EXPECT_TRUE(rt.has_states);
  EXPECT_EQ(rt.states, (StateBytes{2, 4, 0, 4, 8, 0, 0, 0}));
  EXPECT_EQ(rt.strategies, 0x1);  // 1d
  for (std::int64_t z = 0; z <= 3; ++z) EXPECT_TRUE(rt.runs_zero(z)) << z;
  EXPECT_TRUE(rt.runs_cp(CpComm::AllGather));
  EXPECT_FALSE(rt.runs_cp(CpComm::P2P));
  EXPECT_EQ(rt.offload, 1);  // none only
  EXPECT_EQ(rt.zero_gather, Cadence::PerMicroBatch);  // ZeRO-3 (resharded weights) only
  EXPECT_EQ(rt.zero_reduce, Cadence::PerStep);
  EXPECT_EQ(rt.mechanisms.fp8.recipe, Fp8Recipe::None);
  EXPECT_EQ(rt.activations, ActivationAccounting::Megatron);
  for (const MechanismFlag& k : kMechanismFlags) EXPECT_EQ(rt.mechanisms.*k.member, mg.mechanisms.*k.member) << k.name;
  EXPECT_EQ(rt.flash_attention, mg.flash_attention);
  EXPECT_EQ(rt.tp_comm_overlap, 0);
  EXPECT_EQ(rt.optimizer_bytes, mg.optimizer_bytes);
  EXPECT_EQ(rt.zero_grad_bytes, mg.zero_grad_bytes);
  EXPECT_EQ(rt.capacity_in_gib, mg.capacity_in_gib);
  EXPECT_EQ(rt.driver_reserve_gib, mg.driver_reserve_gib);
  EXPECT_EQ(rt.allocator_reserve, mg.allocator_reserve);
  EXPECT_EQ(rt.loss_transient_logits, mg.loss_transient_logits);
  EXPECT_EQ(load_system(kRoot / "systems" / "H100-llama3-cluster.yaml").runtime, "llama3");
  // [TP, CP, PP, DP] (section 3.3.2); Megatron's runtime keeps Megatron-Core's default order
  EXPECT_EQ(rt.rank_order, RankOrder::PipelineInnerDataOuter);
  EXPECT_EQ(mg.rank_order, RankOrder::DataInnerPipelineOuter);
}

// A search of a shipped model on H100s under Megatron's runtime.
SearchProblem megatron_search(const char* model, std::int64_t global_batch) {
  SearchProblem p;
  p.model = load_model(kRoot / "models" / (std::string(model) + ".yaml"));
  p.system = load_system(kRoot / "systems" / "H100.yaml");
  p.global_batch = global_batch;
  p.runtime = load_runtime_named("megatron");
  return p;
}

std::string text_of(const StageBlocks& b) {
  return std::to_string(b.first) + "/" + std::to_string(b.middle) + "/" + std::to_string(b.last);
}

// What the search ranks for n GPUs is what evaluate gives for each layout, bit for bit.
TopN expect_ranked_as_evaluated(const SearchProblem& p, std::int64_t n_gpus) {
  Searcher searcher(p);
  SearchCounters counters;
  TopN top = searcher.run_all(n_gpus, counters);
  EXPECT_FALSE(top.items().empty());
  for (const Candidate& c : top.items()) {
    // the system at the job's scale, as estimate takes it (network_scaling)
    const Evaluation ev = evaluate(at_scale(p.system, n_gpus), p.model, p.runtime, c.layout, p.global_batch);
    EXPECT_EQ(ev.throughput, c.throughput) << "pp=" << c.layout.pp;
    for (const TotalsField& f : kTotalsFields) EXPECT_EQ(ev.totals.*f.member, c.totals.*f.member) << f.name;
    EXPECT_TRUE(ev.fits);
    EXPECT_GT(ev.totals.t_optimizer, 0);
  }
  return top;
}

// The search's best configuration under a runtime is what estimate composes for its layout.
TEST(Runtime, SearchAgreesWithEstimate) {
  SearchProblem p = megatron_search("llama3_8b", 256);
  p.exec.zero = {0, 1};
  p.exec.recompute = {Recompute::None, Recompute::Full};
  expect_ranked_as_evaluated(p, 64);
}

// Under nanotron's runtime the search tries every pipeline depth up to the model's (its own
// partition, not a balanced one), and what it ranks is what evaluate gives: the depths that do
// not divide llama3_8b's 32 blocks among them.
TEST(Runtime, SearchUnderNanotronsPartition) {
  SearchProblem p = megatron_search("llama3_8b", 240);
  p.system = load_system(kRoot / "systems" / "hf_h100.yaml");
  p.runtime = load_runtime_named("nanotron");
  p.exec.zero = {0, 1};
  p.exec.params = {ParamLayout::Megatron};
  p.top_n = 400;
  const TopN top = expect_ranked_as_evaluated(p, 48);
  std::set<std::int64_t> pps;
  for (const Candidate& c : top.items()) {
    pps.insert(c.layout.pp);
    EXPECT_EQ(c.layout.exec.first_stage_blocks, 0);
  }
  EXPECT_EQ(p.runtime.mechanisms.stage_partition, StagePartition::Nanotron);
  EXPECT_TRUE(pps.contains(3) || pps.contains(6) || pps.contains(12)) << "no pipeline depth that does not divide 32";
}

TEST(Runtime, LoaderErrorsNameFileAndKey) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "perfsweep_runtime_test";
  std::filesystem::create_directories(dir);
  auto fails_with = [&](const std::string& text, const std::string& expected) {
    const auto file = dir / "bad.yaml";
    std::ofstream(file) << text;
    try {
      load_runtime(file);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(file.string()), std::string::npos) << what;
      EXPECT_NE(what.find(expected), std::string::npos) << what;
    }
  };
  fails_with("name: x\nbogus: 1\n", "unknown key 'bogus'");
  fails_with("name: x\ntp_comm_overlap: 2\n", "tp_comm_overlap: must be in [0, 1], got 2");
  fails_with("name: x\noptimizer_bytes: [1, 2]\n", "optimizer_bytes: expected a single value, got a list");
  fails_with("name: x\nzero_stages: [4]\n", "zero_stages: unknown value '4'");
  fails_with("name: x\ndp_overlap: bucket\n", "dp_overlap: expected one of layer, chunk, got 'bucket'");
  fails_with("name: x\ntp_comm_overlap_default: true\n", "tp_comm_overlap_default: puts the tensor-parallel overlap on");
  fails_with("name: x\nstates: {weights: 0, gradients: 2, master: 4, moments: 8}\n", "states.weights");
  // a state every step keeps, left out, would be costed at 0 bytes (Adam's moments: 8 of 12 B/parameter)
  fails_with("name: x\nstates: {weights: 2, gradients: 4, master: 4}\n", "states: missing key 'moments'");
  fails_with("name: x\nstates: {weights: 2, gradients: 4, moments: 8}\n", "states: missing key 'master'");
  // a key twice at any depth, the first or the last value would win silently
  fails_with("name: x\nstates: {weights: 2, gradients: 4, master: 4, moments: 8, moments: 0}\n",
             "states: duplicate key 'moments' (line 2)");
  // text is not a number, nor a boolean
  fails_with("name: x\ntp_comm_overlap: \"0.5\"\n", "tp_comm_overlap: expected a number, got '0.5'");
  fails_with("name: x\nflash_attention: \"false\"\n", "flash_attention: expected true or false, got 'false'");
  fails_with("name: \"\"\n", "name must be a name of 1 to 256 bytes");
  fails_with("name: \"x\\u0007\"\n", "got 'x\\x07': a control character");
  fails_with("name: reference\nallocator_reserve: 0.1\n", "needs another name");
  fails_with("name: x\nrank_order: tp-dp-pp\n",
             "rank_order: expected one of tp-cp-ep-dp-pp, tp-cp-ep-pp-dp, got 'tp-dp-pp'");
  fails_with("name: x\nrank_order: [tp-cp-ep-pp-dp]\n", "rank_order: expected a single value, got a list");
  fails_with("name: x\nmoe_dispatcher: hybrid\n", "moe_dispatcher: expected one of alltoall, deepep, got 'hybrid'");
  fails_with("name: reference\nrank_order: tp-cp-ep-pp-dp\n", "needs another name");
  fails_with("name: x\nlaunch: deepspeed\n", "launch: expected one of megatron, nemo, torchtitan, got 'deepspeed'");
  fails_with("name: reference\nlaunch: megatron\n", "needs another name");
  // a runtime of any name states its framework's launch line (a sweep file's best_launch)
  std::ofstream(dir / "megatron_nvfp4.yaml") << "name: megatron_nvfp4\nlaunch: megatron\nfp8_recipe: nvfp4\n";
  const Runtime own = load_runtime(dir / "megatron_nvfp4.yaml");
  EXPECT_EQ(kLaunchFrameworkNames[own.launch], std::string("megatron"));
  EXPECT_NE(runtime_to_yaml(own).find("launch: megatron\n"), std::string::npos);
  EXPECT_EQ(load_runtime_named("deepspeed").launch, -1);
  EXPECT_EQ(kLaunchFrameworkNames[load_runtime_named("fsdp").launch], std::string("torchtitan"));
  std::filesystem::remove_all(dir);
}

// rank_order: absent or the default (tp-cp-ep-dp-pp) is the same runtime, step for step, bit for
// bit, with network tiers or without; tp-cp-ep-pp-dp moves times only on a system with tiers.
// Llama 3 405B, TP 8 (one server), DP 64, PP 2 on the Llama 3 cluster (racks of 2 servers, pods of
// 384): in Megatron's order the two stages sit dp = 64 servers apart, in another rack; with the
// pipeline inside, in one rack.
TEST(Runtime, RankOrderKey) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "perfsweep_runtime_rank_order_test";
  std::filesystem::create_directories(dir);
  std::ifstream in(kRoot / "runtimes" / "megatron.yaml");
  const std::string megatron((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto write = [&](const char* name, const std::string& text) {
    const auto file = dir / name;
    std::ofstream(file) << text;
    return load_runtime(file);
  };
  const Runtime absent = write("absent.yaml", megatron);
  const Runtime given = write("given.yaml", megatron + "rank_order: tp-cp-ep-dp-pp\n");
  const Runtime inner = write("inner.yaml", megatron + "rank_order: tp-cp-ep-pp-dp\n");
  EXPECT_EQ(absent.rank_order, RankOrder::DataInnerPipelineOuter);
  EXPECT_EQ(given.rank_order, RankOrder::DataInnerPipelineOuter);
  EXPECT_EQ(inner.rank_order, RankOrder::PipelineInnerDataOuter);
  EXPECT_NE(absent.content_hash, given.content_hash);  // results of the two files are never confused
  EXPECT_NE(runtime_to_yaml(given), runtime_to_yaml(inner));

  const Transformer m = load_model(kRoot / "models" / "llama3_405b.yaml");
  Layout c = one_d(8, 64, 2);
  c.tensor.nv1 = 8;
  for (const char* system : {"H100-llama3-cluster", "H100-calibrated"}) {
    SCOPED_TRACE(system);
    const System s = load_system(kRoot / "systems" / (std::string(system) + ".yaml"));
    // each layout in its runtime's order, as estimate, configs and the search give it (runtime_defaults)
    auto in_order = [&](const Runtime& rt) {
      Layout x = c;
      x.exec.rank_order = runtime_defaults(rt).rank_order;
      return evaluate(s, m, rt, x, 1024);
    };
    const Evaluation a = in_order(absent), b = in_order(given), i = in_order(inner);
    for (const auto field : {&Totals::t, &Totals::t_dp_comm, &Totals::t_pp_comm, &Totals::t_tp_comm, &Totals::mem}) {
      EXPECT_EQ(a.totals.*field, b.totals.*field);
    }
    if (s.network_tiers == nullptr) {
      EXPECT_EQ(i.totals.t, a.totals.t);
    } else {
      EXPECT_LT(i.totals.t_pp_comm, a.totals.t_pp_comm);
    }
  }
  std::filesystem::remove_all(dir);
}

// Every field that changes what a runtime costs (all but file and content_hash).
void expect_same_runtime(const Runtime& a, const Runtime& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.has_states, b.has_states);
  EXPECT_EQ(a.states, b.states);
  EXPECT_TRUE(a.mechanisms == b.mechanisms);
  EXPECT_EQ(a.flash_attention, b.flash_attention);
  EXPECT_EQ(a.zero_gather, b.zero_gather);
  EXPECT_EQ(a.dp_overlap, b.dp_overlap);
  EXPECT_EQ(a.zero_reduce, b.zero_reduce);
  EXPECT_EQ(a.tp_comm_overlap, b.tp_comm_overlap);
  EXPECT_EQ(a.tp_comm_overlap_default, b.tp_comm_overlap_default);
  EXPECT_EQ(a.activations, b.activations);
  EXPECT_EQ(a.optimizer_bytes, b.optimizer_bytes);
  EXPECT_EQ(a.cast_bytes, b.cast_bytes);
  EXPECT_EQ(a.accumulate_bytes, b.accumulate_bytes);
  EXPECT_EQ(a.zero_grad_bytes, b.zero_grad_bytes);
  EXPECT_EQ(a.host_block_s, b.host_block_s);
  EXPECT_EQ(a.host_block_per_tp_s, b.host_block_per_tp_s);
  EXPECT_EQ(a.host_block_per_tp_domain_s, b.host_block_per_tp_domain_s);
  EXPECT_EQ(a.capacity_in_gib, b.capacity_in_gib);
  EXPECT_EQ(a.driver_reserve_gib, b.driver_reserve_gib);
  EXPECT_EQ(a.allocator_reserve, b.allocator_reserve);
  EXPECT_EQ(a.loss_transient_logits, b.loss_transient_logits);
  EXPECT_EQ(a.optimizer_transient_bytes, b.optimizer_transient_bytes);
  EXPECT_EQ(a.strategies, b.strategies);
  EXPECT_EQ(a.zero_stages, b.zero_stages);
  EXPECT_EQ(a.host_slot_pipelined_multinode_s, b.host_slot_pipelined_multinode_s);
  EXPECT_EQ(a.rank_order, b.rank_order);
  EXPECT_EQ(a.moe_dispatcher, b.moe_dispatcher);
}

// runtime_to_yaml reads back to the same runtime: every shipped runtime, and one whose every field
// differs from the defaults with numbers that need all 17 digits.
TEST(Runtime, WrittenFileReadsBackTheSame) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "perfsweep_runtime_write_test";
  std::filesystem::create_directories(dir);
  std::vector<Runtime> runtimes;
  for (const char* name : {"megatron", "megatron_tp_overlap", "nemo", "deepspeed", "fsdp", "nanotron", "llama3"}) {
    runtimes.push_back(load_runtime(kRoot / "runtimes" / (std::string(name) + ".yaml")));
  }
  Runtime odd;
  odd.name = "yes";  // a YAML boolean unless quoted
  odd.has_states = true;
  odd.states = StateBytes{4.1, 2.2, 4.3, 0.1, 8.7, 1.9, 4.05, 2.01};
  Mechanisms& mech = odd.mechanisms;
  mech.p2p_scatter_gather = mech.sp_backward_gather = mech.fused_elementwise = mech.dp_after_backward = true;
  odd.flash_attention = false;
  odd.zero_gather = odd.zero_reduce = Cadence::PerMicroBatch;
  odd.dp_overlap = DpOverlap::Chunk;
  odd.tp_comm_overlap = 1.0 / 3.0;
  odd.tp_comm_overlap_default = false;
  odd.activations = ActivationAccounting::Megatron;
  odd.optimizer_bytes = 34.1;
  odd.cast_bytes = 6.2;
  odd.accumulate_bytes = 0.3;
  odd.zero_grad_bytes = 4.4;
  odd.host_block_s = 4.5e-3 / 7;
  odd.host_block_per_tp_s = 2.25e-3 / 3;
  odd.host_block_per_tp_domain_s = 3.25e-3 / 11;
  odd.host_slot_pipelined_multinode_s = 0.1;
  odd.capacity_in_gib = true;
  odd.driver_reserve_gib = 0.82;
  odd.allocator_reserve = 0.049;
  odd.loss_transient_logits = 1.5;
  odd.optimizer_transient_bytes = 12.25;
  mech.fp8 = Fp8Policy{Fp8Recipe::Mxfp8, true, false, true, true, false};
  odd.strategies = 0x5;   // 1d and 2d-seqp
  odd.zero_stages = 0xA;  // 1 and 3
  mech.stage_partition = StagePartition::Nanotron;
  odd.rank_order = RankOrder::PipelineInnerDataOuter;
  mech.moe_permutation = MoePermutation::Unfused;
  odd.moe_dispatcher = MoeDispatcher::DeepEp;
  runtimes.push_back(odd);
  for (const Runtime& rt : runtimes) {
    SCOPED_TRACE(rt.name);
    const auto file = dir / (rt.name + ".yaml");
    std::ofstream(file) << runtime_to_yaml(rt);
    const Runtime back = load_runtime(file);
    expect_same_runtime(back, rt);
    EXPECT_EQ(runtime_to_yaml(back), runtime_to_yaml(rt));
  }
  std::filesystem::remove_all(dir);
}

void expect_same_step(const Evaluation& a, const Evaluation& b) {
  for (const TotalsField& f : kTotalsFields) EXPECT_EQ(a.totals.*f.member, b.totals.*f.member) << f.name;
  for (const TotalsField& f : kRuntimeTotalsFields) EXPECT_EQ(a.totals.*f.member, b.totals.*f.member) << f.name;
  for (const ModelTotalsField& f : kModelTotalsFields) EXPECT_EQ(a.model.*f.member, b.model.*f.member) << f.name;
  EXPECT_EQ(a.model.time_stage, b.model.time_stage);
  EXPECT_EQ(a.model.memory_stage, b.model.memory_stage);
  EXPECT_EQ(a.throughput, b.throughput);
}

TEST(UnevenStages, ExplicitEvenSplitIsTheDefaultBitForBit) {
  const System h100 = load_system(kRoot / "systems" / "H100.yaml");
  const Transformer llama = load_model(kRoot / "models" / "llama3_405b.yaml");
  Layout c = one_d(8, 4, 9);  // 126 = 9 x 14
  c.tensor.nv1 = 8;
  Layout given = c;
  given.exec.first_stage_blocks = 14;
  given.exec.last_stage_blocks = 14;
  for (const char* runtime : {"megatron", "reference"}) {
    const Runtime rt = load_runtime_named(runtime);
    expect_same_step(evaluate(h100, llama, rt, c, 256), evaluate(h100, llama, rt, given, 256));
  }
  // the paper's model without a vocabulary, under the reference
  const System a100 = load_system(kRoot / "systems" / "A100.yaml");
  const Transformer gpt = load_model(kRoot / "models" / "gpt3_1T.yaml");
  Layout paper = one_d(8, 32, 16);
  paper.tensor.nv1 = 4;
  Layout paper_given = paper;
  paper_given.exec.first_stage_blocks = gpt.depth / 16;
  expect_same_step(evaluate(a100, gpt, paper, 4096), evaluate(a100, gpt, paper_given, 4096));
}

// Llama 3 405B's layout on 16 stages as Dubey et al. 2024 ran it: tp 8 in a domain, 7 + 14 x 8 + 7
// blocks (one fewer on the first and the last, which hold the embedding and the LM head).
Layout llama405b_stages(std::int64_t dp) {
  Layout c = one_d(8, dp, 16);
  c.tensor.nv1 = 8;
  c.exec.first_stage_blocks = 7;
  c.exec.last_stage_blocks = 7;
  return c;
}

// Llama 3 405B on 16 stages (Dubey et al. 2024: one block fewer on the first and the last, which
// hold the embedding and the LM head): the step's memory is its fullest stage's and its time
// its slowest's, each what the stage costs.
TEST(UnevenStages, Llama405bOnSixteenStages) {
  const System h100 = load_system(kRoot / "systems" / "H100.yaml");
  const Transformer llama = load_model(kRoot / "models" / "llama3_405b.yaml");
  const Runtime rt = load_runtime_named("megatron");
  const Layout c = llama405b_stages(8);
  const Evaluation ev = evaluate(h100, llama, rt, c, 512);
  // a model of the same blocks whose every stage holds 8: the middle stages of the uneven split
  Transformer eight = llama;
  eight.depth = 128;
  eight.vocab_size = 0;
  Layout even = c;
  even.exec.first_stage_blocks = 0;
  even.exec.last_stage_blocks = 0;
  const Evaluation middle = evaluate(h100, eight, rt, even, 512);
  // 8 blocks with 15 micro-batches in flight outweigh 7 with 16 and the embedding: a middle
  // stage's weights, gradients and optimizer states, and 15/16 of the activations of the first
  // stage of 8 blocks
  EXPECT_EQ(ev.model.memory_stage, 1);
  EXPECT_EQ(ev.totals.wts_mem, middle.totals.wts_mem);
  EXPECT_EQ(ev.totals.wts_grad_mem, middle.totals.wts_grad_mem);
  EXPECT_EQ(ev.totals.wts_optimizer_states_mem, middle.totals.wts_optimizer_states_mem);
  EXPECT_NEAR(ev.totals.acts_mem, middle.totals.acts_mem * 15.0 / 16.0, 1e-12 * ev.totals.acts_mem);
  EXPECT_NEAR(ev.totals.mem, middle.totals.mem - middle.totals.acts_mem / 16.0, 1e-12 * ev.totals.mem);
}

// 126 blocks on 1024 H100s with tp 8: only pp 1 and 2 divide both 126 and the 128 GPUs left, and
// neither fits 405B parameters; under Megatron's runtime the search runs pp 4..64 with balanced
// partitions, and what it ranks is what evaluate gives, bit for bit.
TEST(UnevenStages, SearchBalancesDepthsThatDoNotDivide) {
  SearchProblem p = megatron_search("llama3_405b", 512);
  bool uneven = false;
  // Kept in a variable: a range-for over a returned TopN's items() would read a destroyed object.
  const TopN top = expect_ranked_as_evaluated(p, 1024);
  for (const Candidate& c : top.items()) {
    const Layout& l = c.layout;
    if (!splits_evenly(p.model, l.pp)) {
      uneven = true;
      const StageBlocks b = stage_blocks(p.model, l.pp, l.exec);
      EXPECT_EQ(b.first + (l.pp - 2) * b.middle + b.last, p.model.depth);
    } else {
      EXPECT_EQ(l.exec.first_stage_blocks, 0);
    }
  }
  EXPECT_TRUE(uneven);
  // the reference's search keeps to depths dividing the model's
  p.runtime = reference_runtime();
  Searcher reference(p);
  SearchCounters reference_counters;
  const TopN reference_top = reference.run_all(1024, reference_counters);
  for (const Candidate& c : reference_top.items()) {
    EXPECT_TRUE(splits_evenly(p.model, c.layout.pp));
  }
}

// Interleaving over a depth no pipeline divides: the search tries V where the slotted partition
// (the embedding and the loss each taking a block's slot) cuts into V chunks, as Megatron-LM's
// --account-for-embedding/loss-in-pipeline-split, and what it ranks is what evaluate gives.
TEST(UnevenStages, SearchInterleavesSlottedStages) {
  SearchProblem p = megatron_search("llama3_405b", 512);
  p.exec.interleave = {1, 2, 4};
  bool slotted = false;
  const TopN top = expect_ranked_as_evaluated(p, 1024);  // kept: items() of a temporary dangles
  for (const Candidate& c : top.items()) {
    const Layout& l = c.layout;
    if (l.exec.interleave == 1 || splits_evenly(p.model, l.pp)) continue;
    slotted = true;
    const StageBlocks b = stage_blocks(p.model, l.pp, l.exec);
    EXPECT_EQ(text_of(b), text_of(slotted_stages(p.model.depth, l.pp, l.exec.interleave)));
    EXPECT_TRUE(interleaved_chunks(b, l.pp, l.exec.interleave).valid);
  }
  EXPECT_TRUE(slotted);
  // estimate's --first-stage-blocks auto gives the same partition
  const System h100 = load_system(kRoot / "systems" / "H100.yaml");
  Layout c = one_d(8, 8, 16);
  c.exec.interleave = 4;
  const Layout balanced = with_balanced_stages(h100, p.model, p.runtime, c, 512);
  EXPECT_EQ(text_of(stage_blocks(p.model, 16, balanced.exec)), "7/8/7");
}

// Pipeline schedules as a search dimension: every ranked configuration of a search over 1F1B,
// ZB-H1, ZB-H2 and DualPipe is what evaluate gives, the zero-bubble schedules appear only with
// pipeline stages and no interleaving, DualPipe only with pp even and at least 2 pp micro-batches,
// and ZB-H1 (1F1B's memory, a smaller bubble) beats 1F1B wherever both fit.
TEST(Runtime, SearchOverSchedules) {
  SearchProblem p = megatron_search("llama3_70b", 256);
  p.exec.interleave = {1, 2};
  p.exec.schedule = {PipelineSchedule::OneFOneB, PipelineSchedule::ZeroBubbleH1, PipelineSchedule::ZeroBubbleH2,
                     PipelineSchedule::DualPipe};
  std::set<PipelineSchedule> seen;
  const TopN top = expect_ranked_as_evaluated(p, 64);  // kept: items() of a temporary dangles
  for (const Candidate& c : top.items()) {
    const Layout& l = c.layout;
    seen.insert(l.exec.schedule);
    if (l.exec.schedule == PipelineSchedule::OneFOneB) continue;
    EXPECT_GT(l.pp, 1);
    EXPECT_EQ(l.exec.interleave, 1);
    if (l.exec.schedule == PipelineSchedule::DualPipe) {
      EXPECT_EQ(l.pp % 2, 0);
      EXPECT_GE(256 / l.dp / l.mbs, 2 * l.pp);
    }
  }
  EXPECT_GT(seen.size(), 1u);
  const System h100 = load_system(kRoot / "systems" / "H100.yaml");
  Layout c = one_d(8, 2, 4);
  const Evaluation one = evaluate(h100, p.model, p.runtime, c, 256);
  c.exec.schedule = PipelineSchedule::ZeroBubbleH1;
  const Evaluation zb = evaluate(h100, p.model, p.runtime, c, 256);
  EXPECT_LT(zb.totals.t_bubble, one.totals.t_bubble);
  EXPECT_EQ(zb.totals.mem, one.totals.mem);
}

// estimate's advice for a bubble that dominates the step: Llama 3 405B on 16 stages with 16
// micro-batches loses about half its step to the 1F1B bubble; each alternative is the layout with
// one option changed, evaluated as evaluate gives it, those that fit first and fastest first within
// each; interleaving keeps the 7 + 14 x 8 + 7 partition, which cuts into chunks of 2, 4 and 8
// (slotted).
TEST(UnevenStages, PipelineAlternatives) {
  const System h100 = load_system(kRoot / "systems" / "H100.yaml");
  const Transformer llama = load_model(kRoot / "models" / "llama3_405b.yaml");
  const Runtime rt = load_runtime_named("megatron");
  const Layout c = llama405b_stages(128);
  const Evaluation base = evaluate(h100, llama, rt, c, 2048);
  EXPECT_GT(base.totals.bubble_frac, 0.4);
  const std::vector<PipelineAlternative> alternatives = pipeline_alternatives(h100, llama, rt, c, base, 2048, 0.15, 16);
  ASSERT_FALSE(alternatives.empty());
  std::set<std::string> flags;
  for (std::size_t i = 0; i < alternatives.size(); ++i) {
    const PipelineAlternative& a = alternatives[i];
    flags.insert(a.flags);
    const Evaluation ev = evaluate(h100, llama, rt, a.layout, 2048);
    EXPECT_EQ(ev.throughput, a.ev.throughput) << a.flags;
    EXPECT_EQ(ev.totals.mem, a.ev.totals.mem) << a.flags;
    EXPECT_LT(a.ev.totals.t_bubble, base.totals.t_bubble) << a.flags;
    if (i > 0) {  // those that fit first, fastest first within each
      const PipelineAlternative& before = alternatives[i - 1];
      EXPECT_TRUE(before.ev.fits || !a.ev.fits) << a.flags;
      if (before.ev.fits == a.ev.fits) {
        EXPECT_GE(before.ev.throughput, a.ev.throughput) << a.flags;
      }
    }
    EXPECT_EQ(a.layout.exec.first_stage_blocks, 7) << a.flags;
  }
  for (const char* f : {"--interleave 2", "--interleave 4", "--interleave 8", "--schedule zb-h1", "--schedule zb-h2"}) {
    EXPECT_TRUE(flags.count(f)) << f;
  }
  EXPECT_FALSE(flags.count("--interleave 3"));       // 8 slots do not cut into 3
  EXPECT_FALSE(flags.count("--schedule dualpipe"));  // 16 micro-batches, fewer than 2 pp
  EXPECT_NE(pipeline_alternatives_text(base, alternatives).find("pipeline bubble"), std::string::npos);
  // nothing to advise: a small bubble, or interleaving already chosen
  EXPECT_TRUE(pipeline_alternatives(h100, llama, rt, c, base, 2048, 0.99).empty());
  Layout interleaved = c;
  interleaved.exec.interleave = 2;
  EXPECT_TRUE(pipeline_alternatives(h100, llama, rt, interleaved, base, 2048).empty());
}

// A stage partition given to estimate or configs through with_balanced_stages: the balanced
// partition of Llama 3 405B on 16 stages is valid and evaluates.
TEST(UnevenStages, BalancedLayoutEvaluates) {
  const System h100 = load_system(kRoot / "systems" / "H100.yaml");
  const Transformer llama = load_model(kRoot / "models" / "llama3_405b.yaml");
  const Runtime rt = load_runtime_named("megatron");
  const Layout c = with_balanced_stages(h100, llama, rt, one_d(8, 8, 16), 512);
  const StageBlocks b = stage_blocks(llama, 16, c.exec);
  EXPECT_EQ(b.first + 14 * b.middle + b.last, 126);
  EXPECT_LE(b.first, b.middle);
  EXPECT_LE(b.last, b.middle);
  const Evaluation ev = evaluate(h100, llama, rt, c, 512);
  EXPECT_GT(ev.throughput, 0);
  // no pipeline: nothing to split
  EXPECT_EQ(with_balanced_stages(h100, llama, rt, one_d(8, 8, 1), 512).exec.first_stage_blocks, 0);
}

}  // namespace
}  // namespace perfsweep

namespace perfsweep {
namespace {

// The best throughput of a search, and the top-N it keeps.
double best_throughput(const SearchProblem& p, std::int64_t n_gpus) {
  SearchCounters counters;
  const TopN top = Searcher(p).run_all(n_gpus, counters);
  return top.items().empty() ? 0.0 : top.items().front().throughput;
}

// The rank order as a search choice: Llama 3 70B on 1,024 GPUs of the tiered cluster (pods of 3,072
// GPUs behind an oversubscribed spine) under Llama 3's runtime. With both orders listed the search
// ranks what evaluate gives for each layout, bit for bit; a layout with one pipeline stage or one
// data-parallel rank takes the first listed order alone (the two number its ranks alike); and the
// best of both is the better of the two searched alone (the search is exhaustive).
TEST(RankOrder, SearchTriesBothOrders) {
  SearchProblem p = megatron_search("llama3_70b", 1024);
  p.system = load_system(kRoot / "systems" / "H100-llama3-cluster.yaml");
  p.runtime = load_runtime_named("llama3");
  p.exec.recompute = {Recompute::None, Recompute::Full};
  p.top_n = 400;
  p.exec.rank_order = {RankOrder::DataInnerPipelineOuter, RankOrder::PipelineInnerDataOuter};
  check_runtime_choices(p.system, p.runtime, p.strategy, p.exec);
  const TopN top = expect_ranked_as_evaluated(p, 1024);
  std::set<RankOrder> seen;
  for (const Candidate& c : top.items()) {
    const Layout& l = c.layout;
    seen.insert(l.exec.rank_order);
    if (l.pp == 1 || l.dp == 1) {
      EXPECT_EQ(l.exec.rank_order, RankOrder::DataInnerPipelineOuter) << "pp=" << l.pp << " dp=" << l.dp;
    }
  }
  EXPECT_EQ(seen.size(), 2u);
  const double both = best_throughput(p, 1024);
  SearchProblem inner = p, outer = p;
  inner.exec.rank_order = {RankOrder::PipelineInnerDataOuter};
  outer.exec.rank_order = {RankOrder::DataInnerPipelineOuter};
  EXPECT_EQ(both, std::max(best_throughput(inner, 1024), best_throughput(outer, 1024)));
}

// Flags that name no order leave it to the runtime: Llama 3's runtime numbers ranks tp-cp-ep-pp-dp,
// Megatron's tp-cp-ep-dp-pp; a given --rank-order overrides either, in the search's lists
// (check_runtime_choices) and in one layout (parse_execution).
TEST(RankOrder, FlagsLeaveItToTheRuntime) {
  const System s = load_system(kRoot / "systems" / "H100-llama3-cluster.yaml");
  const Runtime llama3 = load_runtime_named("llama3"), megatron = load_runtime_named("megatron");
  ExecutionFlags flags;
  using Orders = std::vector<RankOrder>;
  EXPECT_TRUE(parse_execution_choices(flags).rank_order.empty());
  ExecutionChoices c = parse_execution_choices(flags);
  check_runtime_choices(s, llama3, Strategy::OneD, c);
  EXPECT_EQ(c.rank_order, Orders{RankOrder::PipelineInnerDataOuter});
  c = parse_execution_choices(flags);
  check_runtime_choices(s, megatron, Strategy::OneD, c);
  EXPECT_EQ(c.rank_order, Orders{RankOrder::DataInnerPipelineOuter});
  EXPECT_EQ(parse_execution(flags, llama3).rank_order, RankOrder::PipelineInnerDataOuter);
  EXPECT_EQ(parse_execution(flags, megatron).rank_order, RankOrder::DataInnerPipelineOuter);

  *flags.list("--rank-order") = "tp-cp-ep-dp-pp,tp-cp-ep-pp-dp";
  c = parse_execution_choices(flags);
  check_runtime_choices(s, llama3, Strategy::OneD, c);
  EXPECT_EQ(c.rank_order, (Orders{RankOrder::DataInnerPipelineOuter, RankOrder::PipelineInnerDataOuter}));
  *flags.list("--rank-order") = "tp-cp-ep-dp-pp";
  EXPECT_EQ(parse_execution(flags, llama3).rank_order, RankOrder::DataInnerPipelineOuter);
  *flags.list("--rank-order") = "dp-first";
  try {
    parse_execution_choices(flags);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "--rank-order must be tp-cp-ep-dp-pp or tp-cp-ep-pp-dp, got 'dp-first'");
  }
}

// Tensor-parallel communication overlap as the user's choice: not given, the runtime's (nemo and
// megatron_tp_overlap on, megatron off, the reference without one); --tp-comm-overlap on under
// megatron is megatron_tp_overlap bit for bit (the two files differ in the default alone), off
// exposes the collectives the overlap hid, and on under a runtime with no overlap is refused (and
// dropped from a search's list).
TEST(TpCommOverlap, FlagsLeaveItToTheRuntime) {
  const Runtime nemo = load_runtime_named("nemo"), megatron = load_runtime_named("megatron"),
                overlap = load_runtime_named("megatron_tp_overlap");
  EXPECT_TRUE(runtime_defaults(nemo).tp_comm_overlap);
  EXPECT_TRUE(runtime_defaults(overlap).tp_comm_overlap);
  EXPECT_FALSE(runtime_defaults(megatron).tp_comm_overlap);
  EXPECT_FALSE(runtime_defaults(reference_runtime()).tp_comm_overlap);
  EXPECT_EQ(megatron.tp_comm_overlap, overlap.tp_comm_overlap);
  ExecutionFlags flags;
  EXPECT_TRUE(parse_execution(flags, nemo).tp_comm_overlap);
  EXPECT_FALSE(parse_execution(flags, megatron).tp_comm_overlap);
  *flags.list("--tp-comm-overlap") = "on";
  EXPECT_TRUE(parse_execution(flags, megatron).tp_comm_overlap);

  const System s = load_system(kRoot / "systems" / "H100-calibrated.yaml");
  const Transformer m = load_model(kRoot / "models" / "llama3_70b.yaml");
  Layout c = one_d(4, 16, 2);
  c.tensor.nv1 = 4;
  c.exec.precision = Precision::Fp8;
  Layout on = c, off = c;
  on.exec.tp_comm_overlap = true;
  const Evaluation asked = evaluate(s, m, megatron, on, 256), shipped = evaluate(s, m, overlap, on, 256),
                   plain = evaluate(s, m, megatron, off, 256);
  for (const TotalsField& f : kTotalsFields) EXPECT_EQ(asked.totals.*f.member, shipped.totals.*f.member) << f.name;
  EXPECT_LT(asked.totals.t_tp_comm, plain.totals.t_tp_comm);
  EXPECT_EQ(asked.totals.t_comp, plain.totals.t_comp);
  Runtime none = megatron;
  none.tp_comm_overlap = 0;
  try {
    validate_runtime_layout(none, on);
    ADD_FAILURE() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("has no tensor-parallel communication overlap"), std::string::npos) << e.what();
  }
  ExecutionChoices both;
  both.tp_comm_overlap = {true, false};
  std::vector<std::string> dropped;
  check_runtime_choices(s, none, Strategy::OneD, both, &dropped);
  EXPECT_EQ(both.tp_comm_overlap, std::vector<bool>{false});
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_NE(dropped[0].find("--tp-comm-overlap on dropped"), std::string::npos) << dropped[0];
}

// Both values of --tp-comm-overlap and of --fp8-params searched under nemo: the search ranks what
// evaluate gives for each layout, bit for bit; both values appear among the layouts they apply to
// (tensor parallelism; a low precision), the others take the first listed; and the best of both is
// the better of each searched alone.
TEST(TpCommOverlap, SearchTriesBoth) {
  SearchProblem p = megatron_search("llama3_70b", 512);
  p.system = load_system(kRoot / "systems" / "H100-calibrated.yaml");
  p.runtime = load_runtime_named("nemo");
  p.exec.precision = {Precision::Bf16, Precision::Fp8};
  p.exec.tp_comm_overlap = {true, false};
  p.exec.fp8_params = {false, true};
  p.top_n = 400;
  check_runtime_choices(p.system, p.runtime, p.strategy, p.exec);
  const TopN top = expect_ranked_as_evaluated(p, 256);
  std::set<bool> overlap, params;
  for (const Candidate& c : top.items()) {
    const Execution& x = c.layout.exec;
    if (c.layout.tensor.tp1 > 1) {
      overlap.insert(x.tp_comm_overlap);
    } else {
      EXPECT_TRUE(x.tp_comm_overlap);
    }
    if (x.precision != Precision::Bf16) {
      params.insert(x.fp8_params);
    } else {
      EXPECT_FALSE(x.fp8_params);
    }
  }
  EXPECT_EQ(overlap.size(), 2u);
  EXPECT_EQ(params.size(), 2u);
  SearchProblem with = p, without = p;
  with.exec.tp_comm_overlap = {true};
  without.exec.tp_comm_overlap = {false};
  EXPECT_EQ(best_throughput(p, 256), std::max(best_throughput(with, 256), best_throughput(without, 256)));
}

}  // namespace
}  // namespace perfsweep
