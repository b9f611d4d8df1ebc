// The readers of the training step's measurements (test/data/gpu/h100_kernels.json and
// h100_train.json, copies of validation/gpu) and what the step model takes from them.
#include <gtest/gtest.h>

#include <string>

#include "calib/step_measurements.hpp"
#include "model/parameters.hpp"

namespace perfsweep::calib {
namespace {

const std::string kData = PERFSWEEP_TEST_DATA_DIR "/gpu/";

const KernelMeasurement& by_id(const std::vector<KernelMeasurement>& v, const std::string& id) {
  for (const KernelMeasurement& k : v) {
    if (k.id == id) return k;
  }
  throw std::runtime_error("no " + id);
}

TEST(StepMeasurements, ReadsEveryKernelWithItsShape) {
  const auto kernels = read_kernel_measurements(kData + "h100_kernels.json");
  ASSERT_EQ(kernels.size(), 28u);
  const KernelMeasurement& a = by_id(kernels, "k22");
  EXPECT_EQ(a.kind, "attention");
  EXPECT_EQ(a.b, 2);
  EXPECT_EQ(a.h, 32);
  EXPECT_EQ(a.kv, 8);
  EXPECT_EQ(a.l, 4096);
  EXPECT_EQ(a.d, 128);
  EXPECT_TRUE(a.causal);
  const KernelMeasurement& adam = by_id(kernels, "k44");
  EXPECT_EQ(adam.elements, 400000000);
  EXPECT_EQ(adam.chunk, 16000000);
  EXPECT_EQ(adam.t[1], 0.0);
  EXPECT_EQ(by_id(kernels, "k38").vocab, 128256);
}

// The step's memory model holds three fp32 logit-sized buffers at the loss backward's peak:
// the measured lm_head_loss peaks say so for every shape.
TEST(StepMeasurements, LossPeakIsThreeFp32LogitBuffers) {
  for (const KernelMeasurement& k : read_kernel_measurements(kData + "h100_kernels.json")) {
    if (k.kind != "lm_head_loss") continue;
    const double logits = static_cast<double>(k.n) * static_cast<double>(k.vocab) * 4;
    EXPECT_NEAR(k.peak_extra_bytes / logits, 3.0, 0.01) << k.id;
  }
}

TEST(StepMeasurements, ReadsRunsWithTheirDefaults) {
  const auto runs = read_train_measurements(kData + "h100_train.json");
  ASSERT_EQ(runs.size(), 13u);
  const TrainRun& t01 = runs[0];
  EXPECT_EQ(t01.model.vocab_size, 50304);
  EXPECT_EQ(t01.model.mlp, MlpKind::Gelu);
  EXPECT_EQ(t01.model.norm, NormKind::LayerNorm);
  EXPECT_TRUE(t01.model.bias);
  EXPECT_TRUE(t01.model.causal);
  EXPECT_FALSE(t01.model.has_dropout());
  EXPECT_EQ(t01.micro_batches, 1);
  EXPECT_FALSE(t01.full_recompute);
  EXPECT_TRUE(runs[4].oom);  // t05
  EXPECT_EQ(runs[4].step_s, 0.0);
  EXPECT_TRUE(runs[5].full_recompute);  // t06
  EXPECT_EQ(runs[6].micro_batches, 4);  // t07
  const TrainRun& t11 = runs[10];
  EXPECT_EQ(t11.model.kv(), 4);
  EXPECT_EQ(t11.model.mlp, MlpKind::SwiGlu);
  EXPECT_EQ(t11.model.norm, NormKind::RmsNorm);
  EXPECT_FALSE(t11.model.bias);
}

// The model's parameter count of every measured run is PyTorch's.
TEST(StepMeasurements, ParameterCountsMatchPyTorch) {
  for (const TrainRun& r : read_train_measurements(kData + "h100_train.json")) {
    EXPECT_EQ(count_parameters(r.model).total, r.params) << r.id;
  }
}

}  // namespace
}  // namespace perfsweep::calib
