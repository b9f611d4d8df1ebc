// The inputs of measured runs as files estimate reads (calib/run_inputs.hpp): the flags of a
// layout, the runtime with a layout's mechanisms, and the folder validate train --inputs writes
// (files once per distinct content). That estimate reproduces each line's prediction bit for bit
// is test/python/test_validate_inputs.py.
#include "calib/run_inputs.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "config/execution_flags.hpp"
#include "config/inputs.hpp"
#include "config/runtime_file.hpp"
#include "model/kernel_calibration.hpp"
#include "model/step.hpp"

namespace perfsweep::calib {
namespace {

const std::filesystem::path kRoot = PERFSWEEP_SOURCE_DIR;

std::vector<std::string> lines_of(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(RunInputs, LayoutArgumentsOneD) {
  Layout c;
  c.dp = 4;
  c.pp = 2;
  c.mbs = 1;
  c.tensor.tp1 = 8;
  c.tensor.nv1 = 8;
  c.attention.flash = false;
  c.exec.recompute = Recompute::Full;
  c.exec.zero = 0;
  c.exec.interleave = 2;
  c.exec.params = ParamLayout::Megatron;
  EXPECT_EQ(estimate_layout_arguments(c, 512),
            "--strat 1d --dp 4 --tp 8 --pp 2 --mbs 1 --nv-tp 8 --nv-dp 1 --nv-pp 1 --global-batch-size 512 "
            "--attention unfused --recompute full --sp on --zero 0 --interleave 2 --layout megatron --ep 1");
}

TEST(RunInputs, LayoutArgumentsTwoD) {
  Layout c;
  c.strategy = Strategy::TwoD;
  c.tensor.tp1 = 2;
  c.tensor.tp2 = 4;
  c.tensor.nb = 4;
  c.tensor.nv1 = 2;
  c.tensor.nv2 = 2;
  EXPECT_EQ(estimate_layout_arguments(c, 8),
            "--strat 2d --dp 1 --tp1 2 --tp2 4 --pp 1 --mbs 1 --nb 4 --nv-tp1 2 --nv-tp2 2 --nv-dp 1 --nv-pp 1 "
            "--global-batch-size 8 --attention flash --recompute none --sp on --zero 1 --interleave 1 --layout "
            "reference --ep 1");
}

// The flags execution_arguments writes parse back to the same options.
TEST(RunInputs, ExecutionArgumentsParseBack) {
  Execution x;
  x.recompute = Recompute::Selective;
  x.sequence_parallel = false;
  x.zero = 3;
  x.interleave = 4;
  x.params = ParamLayout::Amp;
  x.ep = 8;
  x.precision = Precision::Fp8;
  x.schedule = PipelineSchedule::ZeroBubbleH1;
  x.cp_comm = CpComm::AllGather;
  x.offload = Offload::Optimizer;
  x.first_stage_blocks = 7;
  std::istringstream words(execution_arguments(x));
  ExecutionFlags f;
  for (std::string flag, value; words >> flag >> value;) {
    std::string* list = f.list(flag);
    if (list != nullptr) *list = value;
    else if (flag == "--first-stage-blocks") f.first_stage_blocks = value;
    else ADD_FAILURE() << "unexpected flag " << flag;
  }
  EXPECT_EQ(parse_execution(f), x);
}

// The flags' defaults (each option's value in Execution{}, spelt by the table) parse back to the
// reference's execution and choices.
TEST(RunInputs, FlagDefaultsAreTheReferenceExecution) {
  EXPECT_EQ(parse_execution(ExecutionFlags{}), Execution{});
  EXPECT_EQ(parse_execution_choices(ExecutionFlags{}), ExecutionChoices{});
  EXPECT_TRUE(ExecutionChoices{}.rank_order.empty());  // the runtime's (fill_runtime_defaults)
  EXPECT_EQ(execution_arguments(Execution{}), "--recompute none --sp on --zero 1 --interleave 1 --layout reference --ep 1");
}

TEST(RunInputs, WritesEachFileOnceAndALinePerRun) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "perfsweep_run_inputs_test";
  std::filesystem::remove_all(dir);
  const System s = load_system(kRoot / "systems" / "selene_a100.yaml");
  const Runtime megatron = load_runtime_named("megatron");
  Transformer small = load_model(kRoot / "models" / "gpt_1_3b.yaml");
  Transformer longer = small;
  longer.l = 4096;  // another content under the same name
  Runtime local_ddp = megatron;  // Megatron's local DDP
  local_ddp.name = "megatron_dp_after_backward";
  local_ddp.mechanisms.dp_after_backward = true;
  Layout c;
  c.tensor.tp1 = 2;
  c.dp = 4;
  const std::vector<RunInput> runs{{"a", &small, &megatron, c, 64},
                                   {"b", &small, &local_ddp, c, 64},
                                   {"c", &longer, &megatron, c, 32}};
  const RunInputsWritten w = write_inputs(dir, s, runs);
  EXPECT_EQ(w.lines, 3u);
  EXPECT_EQ(w.models, 2u);    // gpt_1_3b.yaml and gpt_1_3b-2.yaml
  EXPECT_EQ(w.runtimes, 2u);  // megatron, and with Megatron's local DDP
  const std::vector<std::string> lines = lines_of(dir / "commands.tsv");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].rfind("a\testimate --system systems/selene_a100.yaml --model models/" + small.name + ".yaml "
                           "--runtime runtimes/megatron.yaml --strat 1d",
                           0),
            0u)
      << lines[0];
  EXPECT_NE(lines[1].find("--runtime runtimes/megatron_dp_after_backward.yaml"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("--model models/" + small.name + "-2.yaml"), std::string::npos) << lines[2];

  // The system reads back with its calibration beside it, every number the same.
  const System back = load_system(dir / "systems" / "selene_a100.yaml");
  EXPECT_EQ(back.kernels_file, "selene_a100.kernels.yaml");
  ASSERT_NE(back.kernel_calibration, nullptr);
  EXPECT_EQ(back.kernel_calibration->gemm[0][0].efficiency, s.kernel_calibration->gemm[0][0].efficiency);
  EXPECT_EQ(back.runtime, "");
  EXPECT_EQ(back.ib_bandwidth, s.ib_bandwidth);
  EXPECT_TRUE(load_runtime(dir / "runtimes" / "megatron_dp_after_backward.yaml").mechanisms.dp_after_backward);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace perfsweep::calib
