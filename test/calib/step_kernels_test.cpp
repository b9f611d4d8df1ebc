// The step kernels' fits (fit_step_kernels) recover known parameters from measurements the model
// generated: on the shapes of test/data/gpu/h100_kernels.json (isolated times) and of
// test/data/gpu/h100_kernels_fp8.json (in-stream and isolated times: the GEMMs of each data type
// and pass, flash attention's tile schedule, the quantization kernels, the host's floor and the
// tensor-core kernels' sustained fraction); they keep them physical when the measurements are
// faster than the peaks; the isolated-call overhead of another host is recovered.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "calib/step_kernels.hpp"
#include "common/synthetic_layers.hpp"
#include "config/inputs.hpp"
#include "config/kernels_file.hpp"
#include "core/error.hpp"

namespace perfsweep::calib {
namespace {

System h100() { return load_system(std::filesystem::path(PERFSWEEP_SOURCE_DIR) / "systems" / "H100.yaml"); }

using kernels::StreamKind;
constexpr StreamKind kStepKinds[] = {StreamKind::RmsNorm,      StreamKind::GatedActivation, StreamKind::Embedding,
                                     StreamKind::CrossEntropy, StreamKind::Optimizer,       StreamKind::Cast};
constexpr StreamKind kCastKinds[] = {StreamKind::Amax, StreamKind::Quantize, StreamKind::Transpose,
                                      StreamKind::CastTranspose};
constexpr std::size_t kBf16 = 0, kFp8 = 1;

// A calibration whose layer kinds, GEMM and attention are given, with the step kinds known.
kernels::Calibration known() {
  kernels::Calibration c;
  const kernels::GemmModel fwd{0.76, 128, 256, 144, 0}, bwd{0.70, 64, 64, 80, 5e-6};
  c.gemm[kBf16] = {fwd, bwd, bwd};
  c.attention = {kernels::AttentionModel{0.99, 72, 11e-6, 0.93}, kernels::AttentionModel{0.97, 100, 170e-6, 0.88}};
  c.isolated_call_s = {22e-6, 47e-6};
  // FP8 GEMMs: the bf16 form, their own efficiency, the backward's scaled as the forward's
  c.gemm[kFp8] = c.gemm[kBf16];
  c.gemm[kFp8][0].efficiency = 0.66;
  c.gemm[kFp8][1].efficiency = c.gemm[kFp8][2].efficiency = 0.70 * 0.66 / 0.76;
  c.gemm_fitted[kFp8] = true;
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

// The measured kernels of `file` with the times `cal` predicts, scaled by `speed`.
std::vector<KernelMeasurement> synthetic(const kernels::Calibration& cal, const char* file, double speed = 1) {
  System s = h100();
  s.kernel_calibration = std::make_shared<const kernels::Calibration>(cal);
  std::vector<KernelMeasurement> out;
  for (const KernelMeasurement& k : read_kernel_measurements(std::string(PERFSWEEP_TEST_DATA_DIR "/gpu/") + file)) {
    KernelMeasurement m = predicted_measurement(s, k);
    for (double& t : m.t) t *= speed;
    for (double& t : m.t_iso) t *= speed;
    for (auto& g : m.gemm_s) {
      for (double& t : g) t *= speed;
    }
    for (auto& c : m.cast_s) c = {c[0] * speed, c[1] * speed};
    out.push_back(m);
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
  c.gemm[kFp8] = {};
  c.gemm_fitted[kFp8] = false;
  return c;
}

TEST(StepKernelFit, RecoversKnownParameters) {
  const kernels::Calibration want = known();
  kernels::Calibration got = layers_only(want);
  fit_step_kernels(h100(), got, synthetic(want, "h100_kernels.json"), {});
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
  ASSERT_TRUE(got.gemm_fitted[kFp8]);
  for (std::size_t g = 0; g < kernels::kGemmPassCount; ++g) {
    EXPECT_NEAR(got.gemm[kFp8][g].efficiency, want.gemm[kFp8][g].efficiency, 1e-9);
    EXPECT_EQ(got.gemm[kFp8][g].tile_m, want.gemm[kFp8][g].tile_m);
    EXPECT_EQ(got.gemm[kFp8][g].k_half, want.gemm[kFp8][g].k_half);
  }
}

TEST(StepKernelFit, StaysPhysicalWhenTheDataAreFasterThanThePeaks) {
  kernels::Calibration got = layers_only(known());
  fit_step_kernels(h100(), got, synthetic(known(), "h100_kernels.json", 0.1), {});
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

// Parameters of the in-stream fit, each on its grid (GEMM tiles and k_half, attention's tail,
// head-dimension factor, causal and split-KV efficiencies) and away from its bounds; the host
// floors bind the smallest calls only. No isolated-call overhead, so that a long GEMM's isolated /
// in-stream time is the sustained fraction exactly.
kernels::Calibration known_in_stream() {
  kernels::Calibration c = known();
  c.isolated_call_s = {0, 0};
  c.gemm[kBf16] = {kernels::GemmModel{0.75, 64, 64, 128, 0}, kernels::GemmModel{0.70, 64, 128, 144, 2e-6},
                   kernels::GemmModel{0.69, 64, 64, 64, 1e-6}};
  c.gemm[kFp8] = {kernels::GemmModel{0.73, 64, 64, 192, 0}, kernels::GemmModel{0.65, 64, 128, 272, 3e-6},
                  kernels::GemmModel{0.66, 64, 128, 320, 2e-6}};
  c.attention = {kernels::AttentionModel{0.95, 44, 8e-6, 0.88, 0.35, 128, 0.65},
                 kernels::AttentionModel{0.90, 100, 25e-6, 0.96, 0.45, 128, 1}};
  const double quant[4][2] = {{0.87, 9e-6}, {0.93, 6e-6}, {0.086, 1e-6}, {0.28, 3e-6}};
  for (std::size_t k = 0; k < 4; ++k) {
    const std::size_t i = static_cast<std::size_t>(kCastKinds[k]);
    c.stream_fitted[i] = true;
    c.stream[i] = {kernels::StreamModel{quant[k][0], quant[k][1]}, kernels::StreamModel{quant[k][0], quant[k][1]}};
  }
  c.host_call_s = {14e-6, 150e-6};
  c.host_compiled_call_s = 95e-6;
  c.sustained_tensor_fraction = {0.92, 1};
  return c;
}

void expect_near_rel(double got, double want, const char* what) {
  EXPECT_NEAR(got, want, 1e-6 * std::max(std::abs(want), 1e-6)) << what;
}

TEST(InStreamFit, RecoversKnownParameters) {
  kernels::Calibration want = known_in_stream();
  want.residual_glue_bytes = {9, 38};
  kernels::Calibration got = want;
  got.gemm = {};
  got.gemm_fitted = {true, false};
  got.attention = {};
  for (const StreamKind kind : kCastKinds) got.stream_fitted[static_cast<std::size_t>(kind)] = false;
  got.host_call_s = {0, 0};
  got.host_compiled_call_s = 0;
  got.sustained_tensor_fraction = {1, 1};
  got.residual_glue_bytes = {0, 0};
  fit_step_kernels(h100(), got, synthetic(want, "h100_kernels_fp8.json"), test::synthetic_layers(h100(), want));
  for (std::size_t p = 0; p < 2; ++p) {
    SCOPED_TRACE(kernels::kPassNames[p]);
    expect_near_rel(got.sustained_tensor_fraction[p], want.sustained_tensor_fraction[p], "sustained fraction");
    const kernels::AttentionModel& a = got.attention[p];
    const kernels::AttentionModel& b = want.attention[p];
    expect_near_rel(a.efficiency, b.efficiency, "attention efficiency");
    expect_near_rel(a.launch_s, b.launch_s, "attention launch");
    EXPECT_DOUBLE_EQ(a.head_dim_half, b.head_dim_half);
    EXPECT_NEAR(a.causal_efficiency, b.causal_efficiency, 1e-12);
    EXPECT_NEAR(a.tail, b.tail, 1e-12);
    EXPECT_NEAR(a.split_efficiency, b.split_efficiency, 1e-12);
    EXPECT_EQ(a.tile, 128);
    expect_near_rel(got.residual_glue_bytes[p], want.residual_glue_bytes[p], "residual glue");
  }
  for (std::size_t t = 0; t < kernels::kGemmTypeCount; ++t) {
    EXPECT_TRUE(got.gemm_fitted[t]);
    for (std::size_t g = 0; g < kernels::kGemmPassCount; ++g) {
      SCOPED_TRACE(std::string(kernels::kGemmTypeNames[t]) + " " + kernels::kGemmPassNames[g]);
      const kernels::GemmModel& a = got.gemm[t][g];
      const kernels::GemmModel& b = want.gemm[t][g];
      expect_near_rel(a.efficiency, b.efficiency, "gemm efficiency");
      expect_near_rel(a.launch_s, b.launch_s, "gemm launch");
      EXPECT_EQ(a.tile_m, b.tile_m);
      EXPECT_EQ(a.tile_n, b.tile_n);
      EXPECT_EQ(a.k_half, b.k_half);
    }
  }
  for (const StreamKind kind : kCastKinds) {
    const std::size_t i = static_cast<std::size_t>(kind);
    SCOPED_TRACE(kernels::kStreamKindNames[i]);
    ASSERT_TRUE(got.stream_fitted[i]);
    expect_near_rel(got.stream[i][0].bandwidth_fraction, want.stream[i][0].bandwidth_fraction, "bandwidth");
    expect_near_rel(got.stream[i][0].launch_s, want.stream[i][0].launch_s, "launch");
  }
  // The floors are found on a grid of 0.1 us.
  EXPECT_NEAR(got.host_call_s[0], want.host_call_s[0], 1e-7);
  EXPECT_NEAR(got.host_call_s[1], want.host_call_s[1], 1e-7);
  EXPECT_NEAR(got.host_compiled_call_s, want.host_compiled_call_s, 1e-7);
}

}  // namespace
}  // namespace perfsweep::calib

namespace perfsweep::calib {
namespace {

// Measurements the model made with another host's isolated-call overhead (31 and 108 us) give
// back that overhead, whatever the calibration's own; the fit never goes below 0, and a system
// without a kernel calibration is refused by name.
TEST(CallOverheadFit, RecoversTheMeasuringHostsOverhead) {
  kernels::Calibration other_host = known();
  other_host.isolated_call_s = {31e-6, 108e-6};
  System s = h100();
  s.kernel_calibration = std::make_shared<const kernels::Calibration>(known());
  const std::array<double, 2> got = fit_call_overhead(s, synthetic(other_host, "h100_kernels.json"));
  EXPECT_NEAR(got[0], 31e-6, 1e-12);
  EXPECT_NEAR(got[1], 108e-6, 1e-12);

  // Kernels faster than the model with no overhead at all: 0, not negative.
  kernels::Calibration none = known();
  none.isolated_call_s = {0, 0};
  const std::array<double, 2> floor = fit_call_overhead(s, synthetic(none, "h100_kernels.json", 0.5));
  EXPECT_EQ(floor[0], 0.0);
  EXPECT_EQ(floor[1], 0.0);

  const System bare = h100();
  try {
    fit_call_overhead(bare, synthetic(known(), "h100_kernels.json"));
    ADD_FAILURE() << "no calibration accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("kernel calibration"), std::string::npos) << e.what();
  }
}

// `validate kernels` predicts a grouped_gemm entry and a windowed attention through the functions
// a training step costs them with: the experts' grouped GEMM (grouped_experts) and flash
// attention with its window (attention_core), plus the isolated call's overhead for times
// timed alone; an entry in-stream without isolated times has no isolated row.
TEST(StepKernels, GroupedGemmAndWindowPredictedAsTheStepCostsThem) {
  const System s = load_system(std::filesystem::path(PERFSWEEP_SOURCE_DIR) / "systems" / "H100-calibrated.yaml");
  const kernels::Calibration& cal = *s.kernel_calibration;
  const auto rows =
      validate_kernels(s, read_kernel_measurements(PERFSWEEP_TEST_DATA_DIR "/gpu/kernels_new_fields.json"), Timing::Both);
  const auto row = [&](const std::string& id, const std::string& pass, const std::string& timing) {
    for (const ValidationRow& r : rows) {
      if (r.id == id && r.pass == pass && r.timing == timing) return r;
    }
    throw std::runtime_error("no row " + id + " " + pass + " " + timing);
  };
  const LayerCost experts = grouped_experts(gemm(s, "x", {64, 7168, 4096, 7168, 4096}, {}), 128);
  EXPECT_EQ(row("moe_bf16", "fwd", "isolated").layer, "grouped_gemm");
  EXPECT_DOUBLE_EQ(row("moe_bf16", "fwd", "isolated").predicted_s,
                   time_layer(s, experts).fwd.t + cal.isolated_call_s[kernels::kFwd]);
  EXPECT_THROW(row("moe_bf16", "bwd", "isolated"), std::runtime_error);
  EXPECT_GT(row("moe_fp8", "fwd", "stream").predicted_s, 0.0);
  EXPECT_THROW(row("moe_fp8", "fwd", "isolated"), std::runtime_error);
  const LayerCost window = attention_core(s, "a", {1, 32, 8, 128, 32768, 32768}, {},
                                          {.causal = true, .dropout = false, .window = 4096});
  const LayerCost causal = attention_core(s, "a", {1, 32, 8, 128, 32768, 32768}, {}, {.causal = true, .dropout = false});
  for (std::size_t p = 0; p < 2; ++p) {
    const LayerResult r = time_layer(s, window);
    EXPECT_DOUBLE_EQ(row("swa", kernels::kPassNames[p], "isolated").predicted_s,
                     (p == 0 ? r.fwd.t : r.bwd.t) + cal.isolated_call_s[p]);
    const LayerResult full = time_layer(s, causal);
    EXPECT_LT(p == 0 ? r.fwd.t : r.bwd.t, p == 0 ? full.fwd.t : full.bwd.t);
  }
  const LayerCost mla = attention_core(s, "a", {1, 16, 16, 192, 4096, 4096, 128}, {}, {.causal = true, .dropout = false});
  EXPECT_DOUBLE_EQ(row("mla", "fwd", "isolated").predicted_s, time_layer(s, mla).fwd.t + cal.isolated_call_s[kernels::kFwd]);
}

}  // namespace
}  // namespace perfsweep::calib
