// The step kernels' fit (fit_step_kernels) recovers known parameters from measurements the model
// generated on the shapes of test/data/gpu/h100_kernels.json, and keeps them physical when the
// measurements are faster than the peaks.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "calib/step_kernels.hpp"
#include "config/inputs.hpp"

namespace perfsweep::calib {
namespace {

System h100() { return load_system(std::filesystem::path(PERFSWEEP_SOURCE_DIR) / "systems" / "H100.yaml"); }

using kernels::StreamKind;
constexpr StreamKind kStepKinds[] = {StreamKind::RmsNorm,      StreamKind::GatedActivation, StreamKind::Embedding,
                                     StreamKind::CrossEntropy, StreamKind::Optimizer,       StreamKind::Cast};

// A calibration whose layer kinds, GEMM and attention are given, with the step kinds known.
kernels::Calibration known() {
  kernels::Calibration c;
  c.gemm = {kernels::GemmModel{0.76, 128, 256, 144, 0}, kernels::GemmModel{0.70, 64, 64, 80, 10e-6}};
  c.attention = {kernels::AttentionModel{0.99, 72, 11e-6, 0.93}, kernels::AttentionModel{0.97, 100, 170e-6, 0.88}};
  c.isolated_call_s = {22e-6, 47e-6};
  // rmsnorm's three shapes, and the embedding's forward, move nearly the same bytes: the fit
  // takes no launch cost there, so none is given.
  const double values[6][2][2] = {{{0.9, 0}, {0.55, 0}}, {{0.31, 5e-6}, {0.28, 70e-6}},
                                  {{0.8, 0}, {0.5, 700e-6}}, {{0.23, 200e-6}, {0.25, 50e-6}},
                                  {{0.76, 60e-6}, {0.76, 60e-6}}, {{0.9, 20e-6}, {0.9, 20e-6}}};
  for (std::size_t k = 0; k < 6; ++k) {
    const std::size_t i = static_cast<std::size_t>(kStepKinds[k]);
    c.stream_fitted[i] = true;
    for (std::size_t p = 0; p < 2; ++p) c.stream[i][p] = {values[k][p][0], values[k][p][1]};
  }
  return c;
}

// The measured kernels' shapes with the times `cal` predicts, scaled by `speed`.
std::vector<KernelMeasurement> synthetic(const kernels::Calibration& cal, double speed = 1) {
  System s = h100();
  s.kernel_calibration = std::make_shared<const kernels::Calibration>(cal);
  std::vector<KernelMeasurement> out;
  for (KernelMeasurement k : read_kernel_measurements(PERFSWEEP_TEST_DATA_DIR "/gpu/h100_kernels.json")) {
    if (!modelled_kernel(k)) continue;
    const std::array<double, 2> t = predict_kernel(s, k);
    k.t = {t[0] * speed, t[1] * speed};
    out.push_back(k);
  }
  return out;
}

// What the fit starts from: the known calibration without the step kinds.
kernels::Calibration layers_only(kernels::Calibration c) {
  for (const StreamKind kind : kStepKinds) {
    const std::size_t i = static_cast<std::size_t>(kind);
    c.stream_fitted[i] = false;
    c.stream[i] = {};
  }
  c.attention[0].causal_efficiency = c.attention[1].causal_efficiency = 1;
  return c;
}

TEST(StepKernelFit, RecoversKnownParameters) {
  const kernels::Calibration want = known();
  kernels::Calibration got = layers_only(want);
  fit_step_kernels(h100(), got, synthetic(want));
  for (const StreamKind kind : kStepKinds) {
    const std::size_t i = static_cast<std::size_t>(kind);
    SCOPED_TRACE(kernels::kStreamKindNames[i]);
    EXPECT_TRUE(got.stream_fitted[i]);
    for (std::size_t p = 0; p < 2; ++p) {
      EXPECT_NEAR(got.stream[i][p].bandwidth_fraction, want.stream[i][p].bandwidth_fraction, 1e-6);
      EXPECT_NEAR(got.stream[i][p].launch_s, want.stream[i][p].launch_s, 1e-9);
    }
  }
  for (std::size_t p = 0; p < 2; ++p) {
    EXPECT_NEAR(got.attention[p].causal_efficiency, want.attention[p].causal_efficiency, 1e-6);
  }
}

TEST(StepKernelFit, StaysPhysicalWhenTheDataAreFasterThanThePeaks) {
  kernels::Calibration got = layers_only(known());
  fit_step_kernels(h100(), got, synthetic(known(), 0.1));
  for (const StreamKind kind : kStepKinds) {
    for (std::size_t p = 0; p < 2; ++p) {
      const kernels::StreamModel& m = got.stream[static_cast<std::size_t>(kind)][p];
      EXPECT_LE(m.bandwidth_fraction, 1.0);
      EXPECT_GT(m.bandwidth_fraction, 0.0);
      EXPECT_GE(m.launch_s, 0.0);
    }
  }
  for (std::size_t p = 0; p < 2; ++p) EXPECT_LE(got.attention[p].causal_efficiency, 1.0);
}

}  // namespace
}  // namespace perfsweep::calib
