// The readers of the training step's measurements (test/data/gpu/h100_kernels.json and
// h100_train.json, copies of validation/gpu) and what the step model takes from them.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <utility>

#include "calib/step_measurements.hpp"
#include "core/error.hpp"
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

// The fields beyond h100_kernels_fp8.json's (test/data/gpu/kernels_new_fields.json): an
// attention's value head dimension and sliding window, the grouped_gemm kind with its data type,
// and an in-stream time without an isolated one.
TEST(StepMeasurements, ReadsValueDimWindowAndGroupedGemms) {
  using Fields = std::array<std::int64_t, 4>;
  const auto kernels = read_kernel_measurements(kData + "kernels_new_fields.json");
  ASSERT_EQ(kernels.size(), 4u);
  // attention: d, dv, window; causal and in-stream
  const KernelMeasurement& mla = by_id(kernels, "mla");
  EXPECT_EQ((Fields{mla.d, mla.dv, mla.window, mla.in_stream}), (Fields{192, 128, 0, true}));
  const KernelMeasurement& swa = by_id(kernels, "swa");
  EXPECT_EQ((Fields{swa.d, swa.dv, swa.window, swa.in_stream}), (Fields{128, 0, 4096, false}));
  EXPECT_TRUE(swa.causal);
  // grouped_gemm: experts, tokens, k, m; forward only
  const KernelMeasurement& bf16 = by_id(kernels, "moe_bf16");
  EXPECT_EQ(bf16.kind, "grouped_gemm");
  EXPECT_EQ((Fields{bf16.experts, bf16.tokens, bf16.k, bf16.m}), (Fields{128, 64, 7168, 4096}));
  EXPECT_FALSE(bf16.fp8 || bf16.in_stream);
  EXPECT_EQ(bf16.t[1], 0.0);
  const KernelMeasurement& fp8 = by_id(kernels, "moe_fp8");
  EXPECT_TRUE(fp8.fp8 && fp8.in_stream);
  EXPECT_EQ(fp8.t_iso[0], 0.0);
}

// The message of the InputError reading `file` throws.
std::string read_error(const std::string& file) {
  try {
    read_kernel_measurements(kData + "bad/" + file);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(StepMeasurements, NewFieldsErrorsNameFileEntryFieldAndValue) {
  const std::pair<const char*, const char*> cases[] = {
      {"grouped_gemm_bad_dtype.json", "kernels[1] (g02): cfg.dtype must be one of bf16, fp8, got 'fp16'"},
      {"grouped_gemm_missing_tokens.json", "kernels[1] (g02): cfg.tokens is missing"},
      {"attention_window_not_causal.json", "kernels[1] (a02): cfg.window is a causal sliding window"},
      {"attention_bad_dv.json", "kernels[1] (a02): cfg.dv must be a positive integer, got 0"},
  };
  for (const auto& [file, message] : cases) {
    EXPECT_NE(read_error(file).find(std::string(file) + ": " + message), std::string::npos) << read_error(file);
  }
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
