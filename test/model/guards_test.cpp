// model/guards.hpp: the warnings on a prediction. MFU past 100% of the precision's own peak
// always; under a framework's runtime also an uncalibrated system, a GPU count beyond the largest
// validated run and an MFU above any measured run's. The reference runtime reproduces the paper's
// model, so only the first applies to it.
#include "model/guards.hpp"

#include <gtest/gtest.h>

#include <memory>

#include "model/kernel_calibration.hpp"

namespace perfsweep {
namespace {

bool any_says(const std::vector<std::string>& lines, const std::string& text) {
  for (const std::string& l : lines) {
    if (l.find(text) != std::string::npos) return true;
  }
  return false;
}

System system_named(const char* name, bool calibrated) {
  System s;
  s.name = name;
  s.matrix_flops_fp16 = 989.4;
  s.matrix_flops_fp8 = 1979;
  if (calibrated) {
    s.kernel_calibration = std::make_shared<const kernels::Calibration>();
    s.kernels_file = "calibrations/h100_kernels.yaml";
  }
  return s;
}

Runtime framework() {
  Runtime rt;
  rt.name = "nemo";
  rt.file = "runtimes/nemo.yaml";
  return rt;
}

Efficiency at(double mfu, double mfu_precision) {
  Efficiency e;
  e.mfu = mfu;
  e.mfu_precision = mfu_precision;
  return e;
}

TEST(Guards, NothingToSayWithinTheValidatedRange) {
  EXPECT_TRUE(prediction_caveats("c", system_named("H100-calibrated", true), framework(), 512, at(0.6, 0.6),
                                  Precision::Bf16)
                  .empty());
  // the reference runtime on an uncalibrated system at any scale: the paper's model, no warning
  EXPECT_TRUE(prediction_caveats("c", system_named("B200", false), Runtime{}, 16384, at(0.5, 0.5), Precision::Bf16)
                  .empty());
}

TEST(Guards, MfuAboveTheOwnPeakIsImplausibleUnderAnyRuntime) {
  // FP8 at 123% of the bf16 peak is 61.5% of FP8's: plausible, and not above any measured run's
  // bf16-peak MFU is not asked of it then
  const auto fp8 = prediction_caveats("c", system_named("H100-calibrated", true), framework(), 512, at(1.23, 0.615),
                                      Precision::Fp8);
  EXPECT_FALSE(any_says(fp8, "above 100%"));
  const auto over = prediction_caveats("configuration 1", system_named("B200", false), Runtime{}, 64, at(2.1, 1.05),
                                       Precision::Fp8);
  ASSERT_EQ(over.size(), 1u);
  EXPECT_TRUE(any_says(over, "configuration 1: MFU 105.0% of B200's fp8 peak is above 100%"));
}

TEST(Guards, OutsideTheValidatedRangeUnderAFramework) {
  const auto uncalibrated = prediction_caveats("c", system_named("H100", false), framework(), 512, at(0.5, 0.5),
                                               Precision::Bf16);
  EXPECT_TRUE(any_says(uncalibrated, "H100 is uncalibrated (roofline)"));
  const auto large = prediction_caveats("c", system_named("H100-calibrated", true), framework(), kLargestValidatedGpus * 2,
                                        at(0.5, 0.5), Precision::Bf16);
  EXPECT_TRUE(any_says(large, "23232 GPUs is beyond the largest validated run (11616 H100s"));
  const auto high = prediction_caveats("c", system_named("H100-calibrated", true), framework(), 512,
                                       at(kHighestMeasuredMfu + 0.01, 0.96), Precision::Bf16);
  EXPECT_TRUE(any_says(high, "above any measured run's (94.2%"));
}

}  // namespace
}  // namespace perfsweep
