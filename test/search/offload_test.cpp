// Offload (--offload, docs/offload.md): what each kind moves off the GPU in bytes per parameter,
// the host link's and the host optimizer's seconds worked out by hand, none leaving every number
// as it was, the search agreeing with evaluate, refused inputs, and a 70B model that fits eight
// GPUs only with its optimizer on the host.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "common/layouts.hpp"
#include "config/inputs.hpp"
#include "config/runtime_file.hpp"
#include "core/error.hpp"
#include "model/module.hpp"
#include "model/parameters.hpp"
#include "model/step.hpp"
#include "search/search.hpp"

namespace perfsweep {
namespace {

using test::one_d;
const std::filesystem::path kRoot = PERFSWEEP_SOURCE_DIR;

System h100() { return load_system(kRoot / "systems" / "H100.yaml"); }
Transformer model(const char* name) { return load_model(kRoot / "models" / (std::string(name) + ".yaml")); }

// Megatron's bytes per parameter: bf16 weights 2, fp32 gradients 4, fp32 master 4, moments 8.
const StateBytes kMegatron{2, 4, 0, 4, 8, 0, 0, 0};

// One block of 1 GB of weights at the reference's 2 bytes (0.5e9 parameters) and 0.5 GB of
// activations, 4 blocks on the stage, dp = 2, one micro-batch in flight.
StepMemory memory_of(Offload offload, std::int64_t zero) {
  Execution x;
  x.zero = zero;
  x.offload = offload;
  return step_memory(1.0, 0.5, 4, 1, 2, 1, 1, x, 0, 0, 0, 0, &kMegatron);
}

// ZeRO-1, 2e9 parameters on the stage: weights 2 x 2e9 = 4 GB, gradients 4 x 2e9 = 8 GB,
// optimizer 12 x 2e9 / 2 = 12 GB, activations 4 x 0.5 = 2 GB.
// optimizer: the 12 GB leave for the host with an fp32 gradient copy of the shard (4 x 1e9 = 4 GB).
TEST(Offload, OptimizerMemoryByHand) {
  const StepMemory none = memory_of(Offload::None, 1);
  EXPECT_DOUBLE_EQ(none.optimizer_states, 12);
  EXPECT_DOUBLE_EQ(none.host, 0);
  const StepMemory off = memory_of(Offload::Optimizer, 1);
  EXPECT_DOUBLE_EQ(off.weights, 4);
  EXPECT_DOUBLE_EQ(off.weight_grads, 8);
  EXPECT_DOUBLE_EQ(off.optimizer_states, 0);
  EXPECT_DOUBLE_EQ(off.activations, 2);
  EXPECT_DOUBLE_EQ(off.host, 16);
  EXPECT_DOUBLE_EQ(off.total, 14);
}

// offload_percent 25 (Megatron-Core's offload_fraction 0.25): a quarter of the 12 GB of states and of
// the 4 GB gradient copy on the host (4 GB), three quarters of the states on the GPU (9 GB).
TEST(Offload, PartialOptimizerMemoryByHand) {
  Execution x;
  x.offload = Offload::Optimizer;
  x.offload_percent = 25;
  const StepMemory off = step_memory(1.0, 0.5, 4, 1, 2, 1, 1, x, 0, 0, 0, 0, &kMegatron);
  EXPECT_DOUBLE_EQ(off.host, 4);
  EXPECT_DOUBLE_EQ(off.optimizer_states, 9);
  EXPECT_DOUBLE_EQ(off.weights, 4);
  EXPECT_DOUBLE_EQ(off.weight_grads, 8);
  EXPECT_DOUBLE_EQ(off.total, 4 + 8 + 9 + 2);
}

// ZeRO-3 over 2 GPUs: the weights' shard 4 / 2 = 2 GB plus one block gathered whole (2 bytes x
// 0.5e9 = 1 GB), gradients 8 / 2 = 4 GB, optimizer 12 GB. weights: shards, gradients and optimizer
// to the host (2 + 4 + 12 = 18 GB); the GPU keeps two whole blocks (2 GB) and one block's
// gradients (4 x 0.5e9 = 2 GB).
TEST(Offload, WeightsMemoryByHand) {
  const StepMemory none = memory_of(Offload::None, 3);
  EXPECT_DOUBLE_EQ(none.weights, 3);
  EXPECT_DOUBLE_EQ(none.weight_grads, 4);
  const StepMemory off = memory_of(Offload::Weights, 3);
  EXPECT_DOUBLE_EQ(off.host, 18);
  EXPECT_DOUBLE_EQ(off.weights, 2);
  EXPECT_DOUBLE_EQ(off.weight_grads, 2);
  EXPECT_DOUBLE_EQ(off.optimizer_states, 0);
  EXPECT_DOUBLE_EQ(off.total, 2 + 2 + 2);
}

// activations: of 4 blocks' 2 GB the GPU keeps two blocks' (1 GB), the host the other 1 GB.
TEST(Offload, ActivationsMemoryByHand) {
  const StepMemory off = memory_of(Offload::Activations, 1);
  EXPECT_DOUBLE_EQ(off.activations, 1);
  EXPECT_DOUBLE_EQ(off.host, 1);
  EXPECT_DOUBLE_EQ(off.optimizer_states, 12);
}

// A runtime with Megatron's bytes and no kernels around the layers, so that offload's seconds
// are the whole difference of the step.
Runtime plain_runtime() {
  // one directory per test: ctest runs the tests of this file in parallel
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / (std::string("perfsweep_offload_test_") + test->name());
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / "plain.yaml";
  std::ofstream(file) << "name: plain\nstates: {weights: 2, gradients: 4, master: 4, moments: 8}\n"
                         "strategies: [1d]\nzero_stages: [0, 1, 3]\noffload: [optimizer, weights, activations]\n";
  return load_runtime(file);
}

// Llama 3 8B on one GPU (tp = dp = pp = 1, ZeRO-1 over one GPU): every parameter P in the
// optimizer's shard, a share h of them on the host (offload_percent / 100). CPU Adam streams
// 2 (4 + 8) + 4 + 2 = 30 bytes a parameter at 76.8 GB/s over h P parameters, fully exposed (the plain
// runtime's GPU optimizer runs no kernel); the updated bf16 weights come back over PCIe at 63 GB/s,
// 2 h P bytes; the 4 h P bytes of gradients go down behind the backward. The host holds h P x (12
// bytes of states + the 4-byte gradient copy), the GPU (1 - h) P x 12 bytes of states.
TEST(Offload, OptimizerSecondsByHand) {
  const System s = h100();
  const Transformer m = model("llama3_8b");
  const Runtime rt = plain_runtime();
  Layout c = one_d(1, 1, 1);
  c.exec.recompute = Recompute::Full;
  const Evaluation none = evaluate(s, m, rt, c, 8);
  const double p = static_cast<double>(count_parameters(m).total);
  c.exec.offload = Offload::Optimizer;
  for (const std::int64_t percent : {100, 50}) {
    SCOPED_TRACE("offload_percent " + std::to_string(percent));
    c.exec.offload_percent = percent;
    const Evaluation off = evaluate(s, m, rt, c, 8);
    EXPECT_NEAR(off.model.params_per_gpu, p, 1e-6 * p);
    const double host = off.model.params_per_gpu * static_cast<double>(percent) / 100;
    const double gpu = off.model.params_per_gpu - host;
    EXPECT_DOUBLE_EQ(off.totals.t_host_optimizer, host * 30e-9 / 76.8);
    const double up = host * 2e-9 / 63, down = host * 4e-9 / 63;
    EXPECT_GE(off.totals.t_offload, up);
    EXPECT_LE(off.totals.t_offload, up + down);
    EXPECT_NEAR(off.totals.t, none.totals.t + off.totals.t_offload + off.totals.t_host_optimizer,
                1e-12 * none.totals.t);
    if (percent == 100) {
      EXPECT_DOUBLE_EQ(off.totals.wts_optimizer_states_mem, 0);
    } else {
      EXPECT_NEAR(off.totals.wts_optimizer_states_mem, gpu * 12e-9, 1e-9 * gpu * 12e-9);
    }
    EXPECT_NEAR(off.totals.host_mem, host * 16e-9, 1e-9 * host * 16e-9);
  }
}

// Under a runtime whose GPU optimizer runs kernels (megatron), the host's step runs beside the
// GPU's update of its share and is exposed by what it exceeds it: the step's optimizer kernels
// (t_optimizer) shrink with the GPU's share, and the host's step is the host's Adam over its share
// less the GPU's optimizer time it runs beside.
TEST(Offload, PartialOptimizerBesideTheGpuStep) {
  const System s = h100();
  const Transformer m = model("llama3_8b");
  const Runtime rt = load_runtime_named("megatron");
  Layout c = one_d(1, 1, 1);
  c.exec.recompute = Recompute::Full;
  c.exec.offload = Offload::Optimizer;
  const Evaluation all = evaluate(s, m, rt, c, 8);
  c.exec.offload_percent = 75;
  const Evaluation most = evaluate(s, m, rt, c, 8);
  c.exec.offload = Offload::None;
  c.exec.offload_percent = 100;
  const Evaluation gpu = evaluate(s, m, rt, c, 8);
  // the GPU's optimizer kernel for a quarter of the parameters
  const double t_gpu_quarter = most.totals.t_optimizer - all.totals.t_optimizer;
  EXPECT_GT(t_gpu_quarter, 0);
  EXPECT_LT(t_gpu_quarter, gpu.totals.t_optimizer - all.totals.t_optimizer);
  EXPECT_NEAR(most.totals.t_host_optimizer, std::max(0.0, 0.75 * all.totals.t_host_optimizer - t_gpu_quarter),
              1e-9 * all.totals.t_host_optimizer);
}

// Streamed activations: each block's saved activations A out after its forward and in before its
// backward at 63 GB/s, each exposed by what it exceeds the block's pass:
// depth x (max(0, A / 63 - t_fwd) + max(0, A / 63 - t_bwd)), nothing else in the step changed.
TEST(Offload, ActivationSecondsByHand) {
  const System s = h100();
  const Transformer m = model("llama3_8b");
  const Runtime rt = plain_runtime();
  Layout c = one_d(1, 1, 1);
  const Evaluation none = evaluate(s, m, rt, c, 8);
  c.exec.offload = Offload::Activations;
  const Evaluation off = evaluate(s, m, rt, c, 8);
  const ModuleSums mlp = sum_module(off.mlp), sa = sum_module(off.sa);
  const double moved = (mlp.activation_buffer + sa.activation_buffer) / 63;
  const double per_block = std::max(0.0, moved - (mlp.t_fwd + sa.t_fwd)) + std::max(0.0, moved - (mlp.t_bwd + sa.t_bwd));
  const double expected = static_cast<double>(m.depth) * per_block * 8;  // 8 micro-batches
  EXPECT_GT(expected, 0);
  EXPECT_NEAR(off.totals.t_offload, expected, 1e-12 * expected);
  EXPECT_EQ(off.totals.t_host_optimizer, 0);
  EXPECT_NEAR(off.totals.t, none.totals.t + off.totals.t_offload, 1e-12 * none.totals.t);
  // the GPU keeps two blocks' activations and the end layers'; the host the rest
  EXPECT_LT(off.totals.acts_mem, none.totals.acts_mem);
  EXPECT_NEAR(off.totals.acts_mem + off.totals.host_mem, none.totals.acts_mem, 1e-12 * none.totals.acts_mem);
  EXPECT_EQ(off.totals.wts_optimizer_states_mem, none.totals.wts_optimizer_states_mem);
}

// Offload none leaves every number of a runtime's evaluation as it was, bit for bit: the layout
// with offload none is the layout without the field set, and the step composition takes no
// offload branch (the reference's 54 paper outputs stay exact: golden_paper_test).
TEST(Offload, NoneChangesNothing) {
  const System s = h100();
  const Transformer m = model("llama3_8b");
  const Runtime rt = load_runtime_named("megatron");
  Layout c = one_d(8, 2, 2);
  c.exec.zero = 1;
  const Evaluation a = evaluate(s, m, rt, c, 64);
  c.exec.offload = Offload::None;
  const Evaluation b = evaluate(s, m, rt, c, 64);
  for (const TotalsField& f : kTotalsFields) EXPECT_EQ(a.totals.*f.member, b.totals.*f.member) << f.name;
  for (const TotalsField& f : kOffloadTotalsFields) EXPECT_EQ(b.totals.*f.member, 0) << f.name;
  // the same layout offloading its optimizer differs only in the optimizer's place and time
  c.exec.offload = Offload::Optimizer;
  const Evaluation o = evaluate(s, m, rt, c, 64);
  EXPECT_EQ(o.totals.t_comp, a.totals.t_comp);
  EXPECT_EQ(o.totals.acts_mem, a.totals.acts_mem);
  EXPECT_GT(o.totals.t, a.totals.t);
}

// Llama 3 70B on 8 H100s (tp 8, ZeRO-1 over one replica): 105.8 GB of optimizer states a GPU do
// not fit 80 GB; on the host (141 GB of 256) they do, at the cost of the host's step.
TEST(Offload, OptimizerMakesSeventyBFit) {
  const System s = h100();
  const Transformer m = model("llama3_70b");
  const Runtime rt = load_runtime_named("megatron");
  Layout c = one_d(8, 1, 1);
  c.tensor.nv1 = 8;
  c.exec.recompute = Recompute::Full;
  const Evaluation none = evaluate(s, m, rt, c, 64);
  EXPECT_FALSE(none.fits);
  c.exec.offload = Offload::Optimizer;
  const Evaluation off = evaluate(s, m, rt, c, 64);
  EXPECT_TRUE(off.fits);
  EXPECT_GT(off.totals.t, none.totals.t);
  EXPECT_LT(off.totals.host_mem, s.host_memory);
  // with too little host memory it does not fit either
  System small = s;
  small.host_memory = 100;
  EXPECT_FALSE(evaluate(small, m, rt, c, 64).fits);
}

// The search over an offload list ranks what evaluate gives, bit for bit, and keeps offloaded
// layouts where memory is tight.
// Returns the shares of the optimizer on the host among the ranked layouts that offload it.
std::set<std::int64_t> expect_search_agrees(SearchProblem p, std::int64_t n_gpus, Offload wanted) {
  check_runtime_choices(p.system, p.runtime, p.strategy, p.exec);
  Searcher searcher(p);
  SearchCounters counters;
  const TopN top = searcher.run_all(n_gpus, counters);
  EXPECT_FALSE(top.items().empty());
  std::set<Offload> seen;
  std::set<std::int64_t> shares;
  for (const Candidate& c : top.items()) {
    const Evaluation ev = evaluate(p.system, p.model, p.runtime, c.layout, p.global_batch);
    EXPECT_EQ(ev.throughput, c.throughput) << execution_text(c.layout.exec);
    for (const TotalsField& f : kTotalsFields) EXPECT_EQ(ev.totals.*f.member, c.totals.*f.member) << f.name;
    for (const TotalsField& f : kOffloadTotalsFields) EXPECT_EQ(ev.totals.*f.member, c.totals.*f.member) << f.name;
    EXPECT_TRUE(ev.fits);
    seen.insert(c.layout.exec.offload);
    if (c.layout.exec.offload == Offload::Optimizer) shares.insert(c.layout.exec.offload_percent);
  }
  EXPECT_TRUE(seen.count(wanted)) << kOffloadNames[static_cast<std::size_t>(wanted)];
  return shares;
}

TEST(Offload, SearchAgreesWithEvaluate) {
  SearchProblem p;
  p.model = model("llama3_70b");
  p.system = h100();
  p.global_batch = 64;
  p.top_n = 200;
  p.runtime = load_runtime_named("megatron");
  p.exec.zero = {0, 1};
  p.exec.recompute = {Recompute::None, Recompute::Full};
  p.exec.offload = {Offload::None, Offload::Optimizer, Offload::Activations};
  expect_search_agrees(p, 16, Offload::Optimizer);
  // with shares of the optimizer on the host, tried with offload optimizer alone: each listed
  // share among the ranked layouts that offload it (the search walks the share below offload)
  p.exec.offload_percent = {50, 100};
  EXPECT_EQ(expect_search_agrees(p, 16, Offload::Optimizer), (std::set<std::int64_t>{50, 100}));
  p.runtime = load_runtime_named("deepspeed");
  p.exec.offload_percent = {100};
  p.exec.zero = {1, 3};
  p.exec.offload = {Offload::None, Offload::Weights};
  expect_search_agrees(p, 8, Offload::Weights);
}

TEST(Offload, RefusedInputs) {
  const System s = h100();
  const Transformer m = model("llama3_8b");
  Layout c = one_d(8, 1, 1);
  c.exec.offload = Offload::Optimizer;
  auto refused = [&](const System& sys, const Runtime& rt, const Layout& l, const std::string& expected) {
    try {
      evaluate(sys, m, rt, l, 8);
      ADD_FAILURE() << "accepted: " << expected;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  // the reference runtime and nanotron offload nothing
  refused(s, reference_runtime(), c, "runtime reference does not offload optimizer");
  refused(s, load_runtime_named("nanotron"), c, "does not offload optimizer");
  // a system without a host link (the reference's A100)
  refused(load_system(kRoot / "systems" / "A100.yaml"), load_runtime_named("megatron"), c, "gives no host_bandwidth");
  // weights offload needs ZeRO-3; activations offload no pipeline
  Layout w = c;
  w.exec.offload = Offload::Weights;
  refused(s, load_runtime_named("deepspeed"), w, "zero must be 3, got 1");
  Layout a = one_d(8, 1, 2);
  a.exec.offload = Offload::Activations;
  refused(s, load_runtime_named("megatron"), a, "without pipeline parallelism");
  // an unknown value names the flag and the choices
  try {
    parse_option_value(*find_execution_option("offload"), "disk", "--offload");
    ADD_FAILURE() << "accepted disk";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "--offload must be none, optimizer, weights or activations, got 'disk'");
  }
  // a share of the optimizer on the host goes with offload optimizer
  ExecutionChoices partial;
  partial.offload_percent = {50};
  EXPECT_THROW(check_runtime_choices(s, load_runtime_named("megatron"), Strategy::OneD, partial), InputError);
  // a search drops what the runtime does not offload, and refuses when nothing is left
  ExecutionChoices choices;
  choices.offload = {Offload::None, Offload::Weights};
  std::vector<std::string> dropped;
  check_runtime_choices(s, load_runtime_named("megatron"), Strategy::OneD, choices, &dropped);
  EXPECT_EQ(choices.offload, std::vector<Offload>{Offload::None});
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_NE(dropped[0].find("--offload weights dropped"), std::string::npos) << dropped[0];
  ExecutionChoices only;
  only.offload = {Offload::Optimizer};
  EXPECT_THROW(check_runtime_choices(s, load_runtime_named("fsdp"), Strategy::OneD, only), InputError);
}

}  // namespace
}  // namespace perfsweep
