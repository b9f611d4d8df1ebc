// Llama 3 405B's pre-training layouts (Llama Team, "The Llama 3 Herd of Models", arXiv 2407.21783,
// Table 4) on the cluster they ran on (systems/H100-llama3-cluster.yaml): the validation set
// validation/llama3_table4 checks them against Meta's throughput under Meta's framework
// (runtimes/llama3.yaml, ZeRO-2); here, what that runtime's ZeRO-2 changes against Megatron's.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/layouts.hpp"
#include "config/inputs.hpp"
#include "config/runtime_file.hpp"
#include "model/step.hpp"

namespace perfsweep {
namespace {

const std::filesystem::path kRoot = PERFSWEEP_SOURCE_DIR;

// The table's 16,384-GPU layout at 8K tokens under Megatron's runtime (its distributed optimizer,
// ZeRO-1: the fp32 gradients whole on every rank) does not fit: what the llama3 runtime's ZeRO-2
// changes.
TEST(Llama3Table4, MegatronsZeroOneDoesNotFit) {
  const System s = load_system(kRoot / "systems" / "H100-llama3-cluster.yaml");
  const Runtime rt = load_runtime_named("megatron");
  Transformer m = load_model(kRoot / "models" / "llama3_405b.yaml");
  Layout c = test::one_d(8, 128, 16);
  c.tensor.nv1 = 8;
  c.exec.interleave = 8;
  c.exec.first_stage_blocks = 7;
  c.exec.last_stage_blocks = 7;
  const Evaluation megatron = evaluate(s, m, rt, c, 2048);
  EXPECT_FALSE(megatron.fits);
  c.exec.zero = 2;
  const Evaluation llama3 = evaluate(s, m, load_runtime_named("llama3"), c, 2048);
  EXPECT_TRUE(llama3.fits);
  // the gradients' fp32 bytes, whole under ZeRO-1, are what separates the two
  EXPECT_GT(megatron.totals.mem - llama3.totals.mem, 12.0);
}

}  // namespace
}  // namespace perfsweep
