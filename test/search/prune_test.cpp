// The search's pruning (SearchProblem::prune; search.cpp's step-time bound and memory floor): on
// several models, runtimes, strategies and option lists, at each GPU count the pruned search keeps
// the exhaustive one's top-N bit for bit (identical_lists: every number and key), counts the same
// candidates, finds no costed step below its bound, and skips some subtrees (so the comparison
// is of a search that pruned). The cases reach what the bound reads: uneven and interleaved
// stages, zero-bubble and DualPipe schedules beside interleaving (whose bubble the bound must not
// count before the schedule is chosen), tensor-parallel overlap, the nanotron partition, experts,
// FP8, offload and recomputation, dense first blocks, and the reference's 2d strategy (SUMMA's nb).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "config/inputs.hpp"
#include "config/runtime_file.hpp"
#include "search/search.hpp"

namespace perfsweep {
namespace {

const std::filesystem::path kRoot = PERFSWEEP_SOURCE_DIR;

struct PruneCase {
  std::string name, model, system, runtime;
  Strategy strategy = Strategy::OneD;
  std::int64_t global_batch = 256;
  std::vector<std::int64_t> gpus;
  ExecutionChoices exec;
};

PruneCase on(std::string name, std::string model, std::string system, std::string runtime) {
  PruneCase k;
  k.name = std::move(name);
  k.model = std::move(model);
  k.system = std::move(system);
  k.runtime = std::move(runtime);
  return k;
}

// Both searches over the case's GPU counts at top-N sizes 1, 3 and 10.
void expect_same_top_n(const PruneCase& k) {
  SearchProblem p;
  p.strategy = k.strategy;
  if (k.model.find('/') == std::string::npos) {
    p.model = load_model(kRoot / "models" / (k.model + ".yaml"));
  } else {
    p.model = load_model_named((kRoot / k.model).string());
    p.model.l = 4096;  // the config's max_position_embeddings is not a training sequence
  }
  p.system = load_system(kRoot / "systems" / (k.system + ".yaml"));
  p.runtime = load_runtime_named(k.runtime);
  p.global_batch = k.global_batch;
  p.exec = k.exec;
  check_runtime_choices(p.system, p.runtime, p.strategy, p.exec);
  std::int64_t pruned = 0, costed_lists = 0;
  for (const std::size_t top_n : {std::size_t{1}, std::size_t{3}, std::size_t{10}}) {
    p.top_n = top_n;
    p.prune = false;
    Searcher exhaustive(p);
    p.prune = true;
    Searcher pruning(p);
    for (const std::int64_t n : k.gpus) {
      SearchCounters all, some;
      const TopN expected = exhaustive.run_all(n, all);
      const TopN got = pruning.run_all(n, some);
      const std::string where = k.name + " at " + std::to_string(n) + " GPUs, top " + std::to_string(top_n);
      EXPECT_TRUE(identical_lists(expected.items(), got.items()))
          << where << ": " << expected.items().size() << " and " << got.items().size() << " kept";
      EXPECT_EQ(all.candidates, some.candidates) << where;
      EXPECT_EQ(all.pruned_subtrees, 0) << where;
      EXPECT_EQ(all.bound_exceeded, 0) << where;
      EXPECT_EQ(some.bound_exceeded, 0) << where;
      pruned += some.pruned_candidates;
      costed_lists += expected.items().empty() ? 0 : 1;
    }
  }
  EXPECT_GT(costed_lists, 0) << k.name << ": no configuration fits";
  EXPECT_GT(pruned, 0) << k.name << ": nothing pruned";
}

TEST(Prune, Llama8bSchedulesInterleavingFp8) {
  PruneCase k = on("llama3_8b megatron", "llama3_8b", "H100-calibrated", "megatron");
  k.gpus = {8, 16, 32, 64, 128};
  k.exec.recompute = {Recompute::None, Recompute::Selective, Recompute::Full};
  k.exec.zero = {0, 1, 2, 3};
  k.exec.interleave = {1, 2, 4};
  k.exec.schedule = {PipelineSchedule::OneFOneB, PipelineSchedule::ZeroBubbleH1, PipelineSchedule::ZeroBubbleH2,
                     PipelineSchedule::DualPipe};
  k.exec.precision = {Precision::Bf16, Precision::Fp8};
  expect_same_top_n(k);
}

// Few micro-batches a step (batch 16): the pipeline's bubble is a large share of it, and a
// DualPipe or zero-bubble schedule without interleaving, below a node where interleaving is still
// open, can be faster than 1F1B's bubble at the most virtual stages would allow.
TEST(Prune, Llama70bFewMicroBatchesSchedulesBelowInterleaving) {
  PruneCase k = on("llama3_70b megatron, batch 16", "llama3_70b", "H100", "megatron");
  k.global_batch = 16;
  k.gpus = {16, 32, 64, 128};
  k.exec.recompute = {Recompute::None, Recompute::Selective, Recompute::Full};
  k.exec.interleave = {1, 2, 4};
  k.exec.schedule = {PipelineSchedule::OneFOneB, PipelineSchedule::ZeroBubbleH1, PipelineSchedule::ZeroBubbleH2,
                     PipelineSchedule::DualPipe};
  expect_same_top_n(k);
}

// 126 blocks (uneven and slotted stages), the nemo runtime's tensor-parallel overlap and host floor,
// optimizer offload, context parallelism.
TEST(Prune, Llama405bUnderNemo) {
  PruneCase k = on("llama3_405b nemo", "llama3_405b", "H200-calibrated", "nemo");
  k.global_batch = 512;
  k.gpus = {64, 128, 256, 512};
  k.exec.recompute = {Recompute::None, Recompute::Full};
  k.exec.interleave = {1, 3, 7};
  k.exec.schedule = {PipelineSchedule::OneFOneB, PipelineSchedule::ZeroBubbleH1};
  k.exec.offload = {Offload::None, Offload::Optimizer};
  k.exec.offload_percent = {50, 100};
  k.exec.cp = {1, 2};
  k.exec.cp_comm = {CpComm::P2P, CpComm::AllGather};
  expect_same_top_n(k);
}

// The nanotron runtime partitions the stages itself (its fullest stage), no interleaving.
TEST(Prune, Llama70bUnderNanotron) {
  PruneCase k = on("llama3_70b nanotron", "llama3_70b", "H100-calibrated", "nanotron");
  k.gpus = {32, 64, 128, 256};
  k.exec.recompute = {Recompute::None, Recompute::Selective, Recompute::Full};
  k.exec.zero = {0, 1};
  expect_same_top_n(k);
}

// A MoE model's case: experts over 1 to 8 GPUs, with and without recomputation, ZeRO 1 and 3.
PruneCase experts_case(std::string name, std::string model, std::string runtime, std::vector<std::int64_t> gpus) {
  PruneCase k = on(std::move(name), std::move(model), "H100-calibrated", std::move(runtime));
  k.gpus = std::move(gpus);
  k.exec.ep = {1, 2, 4, 8};
  k.exec.recompute = {Recompute::None, Recompute::Full};
  k.exec.zero = {1, 3};
  return k;
}

// Experts over ep, both parameter layouts under the reference's accounting.
TEST(Prune, MixtralExperts) {
  PruneCase k = experts_case("mixtral_8x7b megatron", "mixtral_8x7b", "megatron", {16, 32, 64, 128});
  k.exec.interleave = {1, 2};
  k.exec.schedule = {PipelineSchedule::OneFOneB, PipelineSchedule::DualPipe};
  expect_same_top_n(k);
}

// Expert tensor parallelism: the memory bound takes the experts' least weights and their most
// replicas over the tensor group.
TEST(Prune, MixtralExpertTensorParallel) {
  PruneCase k = experts_case("mixtral_8x7b etp megatron", "mixtral_8x7b", "megatron", {16, 64});
  k.exec.etp = {0, 1, 2};
  expect_same_top_n(k);
}

// Dense first blocks (DeepSeek-V2-Lite: the first of 27 dense, 64 fine-grained experts): stages
// costed with their own blocks, the bound per block the least a stage of the fullest's blocks
// holds, the memory check the least such a stage holds; 27 blocks split evenly on 3 stages and
// balanced on the others.
TEST(Prune, DeepSeekDenseFirstBlocks) {
  expect_same_top_n(
      experts_case("DeepSeek-V2-Lite nemo", "test/data/hf/DeepSeek-V2-Lite/config.json", "nemo", {8, 24, 32, 64}));
}

// The paper's model and 2d strategy (SUMMA's nb a block dimension), the reference runtime.
TEST(Prune, ReferenceTwoD) {
  PruneCase k = on("gpt3_1T 2d reference", "gpt3_1T", "A100", "reference");
  k.strategy = Strategy::TwoD;
  k.global_batch = 4096;
  k.gpus = {256, 1024, 4096};
  expect_same_top_n(k);
}

}  // namespace
}  // namespace perfsweep
