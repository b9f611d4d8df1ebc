// The kernel calibration's fit recovers known parameters from measurements the model itself
// generated; the measurement reader names file, entry and field in its errors; the calibrated
// roofline stays within the peaks.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "calib/layer_measurements.hpp"
#include "calib/layer_validation.hpp"
#include "common/synthetic_layers.hpp"
#include "config/inputs.hpp"
#include "config/kernels_file.hpp"
#include "core/error.hpp"
#include "model/roofline.hpp"

namespace perfsweep::calib {
namespace {

const std::filesystem::path kData = PERFSWEEP_TEST_DATA_DIR;

System h100() { return load_system(std::filesystem::path(PERFSWEEP_SOURCE_DIR) / "systems" / "H100.yaml"); }

// Parameters on the fit's grid (tiles from {64, 128, 256} x {64, 128, 192, 256}, k_half a
// multiple of 16, head_dim_half a multiple of 4), away from the bounds.
kernels::Calibration known() {
  kernels::Calibration c;
  c.sm_count = 132;
  // bf16 GEMMs: the backward's two share one form and split its launch
  c.gemm[0] = {kernels::GemmModel{0.74, 128, 256, 96, 12e-6}, kernels::GemmModel{0.69, 64, 192, 224, 15.5e-6},
               kernels::GemmModel{0.69, 64, 192, 224, 15.5e-6}};
  c.attention[0] = {0.83, 44, 40e-6};
  c.attention[1] = {0.61, 72, 95e-6};
  c.stream[0] = {{{0.35, 9e-6}, {0.9, 70e-6}}};   // bias
  c.stream[1] = {{{0.66, 4e-6}, {0.52, 41e-6}}};  // activation
  c.stream[2] = {{{0.57, 7e-6}, {0.61, 55e-6}}};  // dropout
  c.stream[3] = {{{0.48, 11e-6}, {0.27, 73e-6}}}; // norm
  c.isolated_call_s = {14e-6, 19e-6};
  c.residual_glue_bytes = {21, 34};
  return c;
}

// The shapes of the shipped H100 measurements, with times the model predicts under `cal`.
std::vector<LayerConfig> synthetic(const kernels::Calibration& cal) { return test::synthetic_layers(h100(), cal); }

void expect_near_rel(double got, double want, const char* what) {
  EXPECT_NEAR(got, want, 1e-6 * std::max(std::abs(want), 1e-6)) << what;
}

TEST(KernelFit, RecoversKnownParametersFromSyntheticMeasurements) {
  const kernels::Calibration want = known();
  const kernels::Calibration got = fit_kernels(h100(), synthetic(want), 132);
  for (std::size_t g = 0; g < kernels::kGemmPassCount; ++g) {
    SCOPED_TRACE(kernels::kGemmPassNames[g]);
    expect_near_rel(got.gemm[0][g].efficiency, want.gemm[0][g].efficiency, "gemm efficiency");
    EXPECT_EQ(got.gemm[0][g].tile_m, want.gemm[0][g].tile_m);
    EXPECT_EQ(got.gemm[0][g].tile_n, want.gemm[0][g].tile_n);
    EXPECT_EQ(got.gemm[0][g].k_half, want.gemm[0][g].k_half);
    expect_near_rel(got.gemm[0][g].launch_s, want.gemm[0][g].launch_s, "gemm launch");
  }
  for (std::size_t p = 0; p < 2; ++p) {
    SCOPED_TRACE(kernels::kPassNames[p]);
    expect_near_rel(got.attention[p].efficiency, want.attention[p].efficiency, "attention efficiency");
    EXPECT_EQ(got.attention[p].head_dim_half, want.attention[p].head_dim_half);
    expect_near_rel(got.attention[p].launch_s, want.attention[p].launch_s, "attention launch");
    for (std::size_t k = 0; k < kernels::kLayerStreamKinds; ++k) {
      SCOPED_TRACE(kernels::kStreamKindNames[k]);
      expect_near_rel(got.stream[k][p].bandwidth_fraction, want.stream[k][p].bandwidth_fraction, "bandwidth");
      expect_near_rel(got.stream[k][p].launch_s, want.stream[k][p].launch_s, "launch");
    }
    expect_near_rel(got.isolated_call_s[p], want.isolated_call_s[p], "isolated call");
    expect_near_rel(got.residual_glue_bytes[p], want.residual_glue_bytes[p], "residual glue");
  }
}

TEST(KernelFit, EfficienciesStayPhysicalWhenTheDataAreFasterThanThePeak) {
  // Times at a tenth of what the peak allows: the fit must clamp at efficiency 1, fraction 1.
  kernels::Calibration fast = known();
  std::vector<LayerConfig> configs = synthetic(fast);
  for (LayerConfig& c : configs) {
    for (auto& t : c.layer_s) t = {t[0] * 0.1, t[1] * 0.1};
    c.block_s = {c.block_s[0] * 0.1, c.block_s[1] * 0.1};
  }
  const kernels::Calibration got = fit_kernels(h100(), configs, 132);
  for (const kernels::GemmModel& g : got.gemm[0]) {
    EXPECT_LE(g.efficiency, 1.0);
    EXPECT_GE(g.launch_s, 0.0);
  }
  for (std::size_t p = 0; p < 2; ++p) {
    EXPECT_LE(got.attention[p].efficiency, 1.0);
    for (const auto& k : got.stream) {
      EXPECT_LE(k[p].bandwidth_fraction, 1.0);
      EXPECT_GE(k[p].launch_s, 0.0);
    }
  }
}

TEST(KernelFit, SavedCalibrationReadsBackIdentically) {
  const kernels::Calibration want = known();
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "perfsweep_kernels_roundtrip.yaml";
  kernels::save_calibration(want, file);
  const kernels::Calibration got = kernels::load_calibration(file);
  for (std::size_t g = 0; g < kernels::kGemmPassCount; ++g) {
    expect_near_rel(got.gemm[0][g].efficiency, want.gemm[0][g].efficiency, "gemm efficiency");
  }
  for (std::size_t p = 0; p < 2; ++p) {
    expect_near_rel(got.attention[p].head_dim_half, want.attention[p].head_dim_half, "head_dim_half");
    expect_near_rel(got.stream[3][p].bandwidth_fraction, want.stream[3][p].bandwidth_fraction, "norm");
    expect_near_rel(got.isolated_call_s[p], want.isolated_call_s[p], "isolated");
    expect_near_rel(got.residual_glue_bytes[p], want.residual_glue_bytes[p], "glue");
  }
  std::filesystem::remove(file);
}

// A 4096^3 GEMM on H100 with efficiency 0.8, 128 x 128 tiles (1024 tiles: 7.76 waves of 132
// SMs, 1024 / 1056 busy), k_half 0: 2 * 4096^3 flop / (989.4e12 * 0.8 * 1024/1056) + 10 us.
TEST(CalibratedRoofline, GemmWaveQuantizationByHand) {
  System s = h100();
  kernels::Calibration c;
  c.gemm[0][0] = {0.8, 128, 128, 0, 10e-6};
  const KernelShape shape{1, 4096, 4096, 4096};
  const KernelSeconds t = calibrated_seconds(s, c, KernelOp::Gemm, shape, kernels::kFwd, 0, 0);
  const double want = 2.0 * 4096.0 * 4096.0 * 4096.0 / (989.4e12 * 0.8 * 1024.0 / 1056.0);
  EXPECT_NEAR(t.compute, want, 1e-12);
  EXPECT_DOUBLE_EQ(t.launch, 10e-6);
}

// FlashAttention-2's split-KV choice (flash_api.cpp, num_splits_heuristic) worked by hand on 132
// SMs (264 slots of two CTAs): one head of 8192 queries fills 128 of 264 slots, and 2 splits of its
// 64 key blocks fill 97% (the best count's at least 85%); 64 heads fill them already; 6 heads of
// 2048 queries (192 blocks) fill 73% with 1, 2 or 3 splits and 97% with 4.
TEST(CalibratedRoofline, AttentionSplitsByHand) {
  EXPECT_EQ(kernels::attention_splits(1, 8192, 8192, 128, 132), 2);
  EXPECT_EQ(kernels::attention_splits(64, 8192, 8192, 128, 132), 1);
  EXPECT_EQ(kernels::attention_splits(6, 2048, 2048, 128, 132), 4);
}

// The tile schedule worked by hand (tile 128, 132 SMs). Non-causal, 16 heads of 4096 queries and
// keys: 512 CTAs in 4 waves of 32 key tiles each, 128 tile products. Causal, one head of 8192:
// 64 x 64 / 2 + 64 / 2 = 2080 products; the forward splits the keys in two (longest CTA 32
// tiles): max(32, 2080 / 132 + 0.4 x 32) = 32, at the split kernel's 0.5 speed 64; the backward's
// longest CTA is 64 tiles: max(64, 2080 / 132 + 0.4 x 64) = 64.
TEST(CalibratedRoofline, AttentionTileScheduleByHand) {
  const kernels::AttentionModel a{1, 0, 0, 1, 0.4, 128, 0.5};
  const KernelShape plain{16, 4096, 128, 4096, false};
  EXPECT_DOUBLE_EQ(kernels::attention_makespan_tiles(a, kernels::kFwd, 132, plain), 128);
  const KernelShape causal{1, 8192, 128, 8192, true};
  EXPECT_DOUBLE_EQ(kernels::attention_makespan_tiles(a, kernels::kFwd, 132, causal), 64);
  EXPECT_DOUBLE_EQ(kernels::attention_makespan_tiles(a, kernels::kBwd, 132, causal), 64);
  // 64 heads: 4096 CTAs, W = 64 x 2080 = 133120 products: 133120 / 132 + 0.4 x 64 > 64
  const KernelShape many{64, 8192, 128, 8192, true};
  EXPECT_NEAR(kernels::attention_makespan_tiles(a, kernels::kBwd, 132, many), 133120.0 / 132 + 25.6, 1e-9);
  // Seconds: the makespan's products at one SM's share of the peak, 4 x 128 x 128 x 128 flops each
  // forward, with efficiency 1 and no head-dimension factor.
  const System s = h100();
  EXPECT_NEAR(kernels::attention_compute_seconds(a, kernels::kFwd, 132, s.matrix_flops_fp16, s.flops_units, plain),
              128 * 4.0 * 128 * 128 * 128 * 1e-12 * 132 / 989.4, 1e-15);
}

TEST(CalibratedRoofline, MemoryBoundKernelNeverBeatsTheBandwidth) {
  System s = h100();
  kernels::Calibration c;
  c.stream[1][0] = {1.0, 0};
  const KernelSeconds t = calibrated_seconds(s, c, KernelOp::Activation, {}, kernels::kFwd, 0, 3.35);
  EXPECT_DOUBLE_EQ(t.total(), 3.35 / 3350);
}

// A format-2 calibration (test/data/gpu/h100_kernels_format2.yaml: the H100 calibration fitted to
// isolated times before format 3) reads as it was meant: its GEMM {fwd, bwd} the fprop and, for both
// backward GEMMs, bwd with half its launch; the attention's flop model (tile 0). Its backward GEMM
// time is the format-2 formula by hand: the launch plus the two GEMMs' compute.
TEST(KernelsKey, ReadsFormat2) {
  const kernels::Calibration c = kernels::load_calibration(kData / "gpu" / "h100_kernels_format2.yaml");
  EXPECT_TRUE(c.gemm_fitted[0]);
  EXPECT_TRUE(c.gemm_fitted[1]);
  EXPECT_DOUBLE_EQ(c.gemm[0][0].efficiency, 0.760507424);
  EXPECT_EQ(c.gemm[0][0].tile_n, 256);
  for (const std::size_t g : {std::size_t{1}, std::size_t{2}}) {
    EXPECT_DOUBLE_EQ(c.gemm[0][g].efficiency, 0.704793282);
    EXPECT_DOUBLE_EQ(c.gemm[0][g].launch_s, 1.00025162e-05 / 2);
    EXPECT_DOUBLE_EQ(c.gemm[1][g].efficiency, 0.626932163);
  }
  EXPECT_EQ(c.attention[0].tile, 0);
  EXPECT_DOUBLE_EQ(c.attention[0].causal_efficiency, 0.958281914);
  EXPECT_EQ(c.sustained_tensor_fraction[0], 1);
  const System s = h100();
  const KernelShape shape{1, 4096, 8192, 2048};
  const KernelSeconds t = calibrated_seconds(s, c, KernelOp::Gemm, shape, kernels::kBwd, 0, 0);
  const kernels::GemmModel bwd{0.704793282, 64, 64, 80, 0};
  EXPECT_DOUBLE_EQ(t.launch, 1.00025162e-05);
  EXPECT_DOUBLE_EQ(t.compute, kernels::gemm_compute_seconds(c, bwd, 989.4, 1e-12, 1, 4096, 2048, 8192) +
                                  kernels::gemm_compute_seconds(c, bwd, 989.4, 1e-12, 1, 8192, 4096, 2048));
}

TEST(KernelsKey, LoadsRelativeToTheSystemFileAndWritesBack) {
  const std::filesystem::path file = std::filesystem::path(PERFSWEEP_SOURCE_DIR) / "systems" / "H100-calibrated.yaml";
  const System s = load_system(file);
  ASSERT_NE(s.kernel_calibration, nullptr);
  EXPECT_EQ(s.kernels_file, "calibrations/h100_kernels.yaml");
  EXPECT_NE(system_to_yaml(s).find("kernels: \"calibrations/h100_kernels.yaml\""), std::string::npos);
  // The same layer costs more than the reference's roofline says: every efficiency is <= 1 and
  // the roofline's GEMM efficiency 0.8 is above any fitted one.
  const System plain = h100();
  const LayerCost fc1 = gemm(plain, "fc1", {4 * 2048, 4096, 16384, 4096, 16384}, {});
  EXPECT_GT(time_layer(s, fc1).fwd.t, time_layer(plain, fc1).fwd.t);
}

TEST(KernelsKey, BadPathNamesSystemFileAndKey) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "perfsweep_kernels_key";
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / "bad.yaml";
  {
    std::ofstream out(file);
    out << read_text(std::filesystem::path(PERFSWEEP_SOURCE_DIR) / "systems" / "H100.yaml") << "kernels: absent.yaml\n";
  }
  try {
    load_system(file);
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("bad.yaml: kernels 'absent.yaml'"), std::string::npos) << m;
  }
  std::filesystem::remove_all(dir);
}

std::string read_error(const std::string& file) {
  try {
    read_layer_measurements(kData / "gpu" / "bad" / file);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(LayerMeasurements, ErrorsNameFileEntryAndField) {
  const auto has = [](const std::string& msg, std::initializer_list<const char*> parts) {
    for (const char* part : parts) {
      if (msg.find(part) == std::string::npos) return false;
    }
    return true;
  };
  std::string m = read_error("missing_layer.json");
  EXPECT_TRUE(has(m, {"missing_layer.json", "configs[1] (c02)", "layers.ln2", "missing"})) << m;
  m = read_error("missing_cfg_field.json");
  EXPECT_TRUE(has(m, {"missing_cfg_field.json", "configs[1] (c02)", "cfg.e", "missing"})) << m;
  m = read_error("wrong_type.json");
  EXPECT_TRUE(has(m, {"wrong_type.json", "configs[1] (c02)", "cfg.b", "an integer in [1, 1073741824]", "four"})) << m;
  m = read_error("wrong_type_time.json");
  EXPECT_TRUE(has(m, {"wrong_type_time.json", "configs[1] (c02)", "layers.fc2[1]", "fast"})) << m;
  m = read_error("negative_time.json");
  EXPECT_TRUE(has(m, {"negative_time.json", "configs[1] (c02)", "layers.qkv[0]", "positive time"})) << m;
}

}  // namespace
}  // namespace perfsweep::calib
