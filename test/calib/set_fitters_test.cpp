// The pieces of a validation set's prediction and of the named fitters that can be derived by
// hand (calib/set_validation.hpp, calib/set_fitters.hpp), and kernel_scales recovering the scales
// that made its rows' measurements. That the fitters reproduce what they fitted on the shipped sets
// is test/python/test_validation_fitters.py.
#include "calib/set_fitters.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "calib/set_validation.hpp"
#include "config/inputs.hpp"
#include "config/runtime_file.hpp"
#include "core/error.hpp"

namespace perfsweep::calib {
namespace {

const std::filesystem::path kRoot = PERFSWEEP_SOURCE_DIR;

// GPT 7.5B of Narayanan et al. (2021) Table 1 (the validation set's model file): sequence 2048,
// hidden 4096, 32 heads, 36 layers, vocabulary 51200.
Transformer megatron_gpt_shape() {
  return load_model(kRoot / "validation" / "megatron_narayanan2021" / "models" / "gpt-7.5B.yaml");
}

TEST(SetFitters, MegatronFlopsFormula) {
  const Transformer m = megatron_gpt_shape();
  const double expected = 96.0 * 512 * 2048 * 36 * 4096.0 * 4096 *
                          (1 + 2048.0 / (6 * 4096) + 51200.0 / (16.0 * 36 * 4096));
  EXPECT_DOUBLE_EQ(megatron_model_flops(m, 512), expected);
}

// Each quantity of a 2 s step of 64 sequences of 2048 tokens on 8 GPUs.
TEST(SetFitters, QuantitiesOfAStep) {
  EstimateRequest q;
  q.model = megatron_gpt_shape();
  q.global_batch = 64;
  q.layout.tensor.tp1 = 2;
  q.layout.dp = 4;
  EXPECT_EQ(quantity_of(SetQuantity::StepSeconds, q, 2.0), 2.0);
  EXPECT_DOUBLE_EQ(quantity_of(SetQuantity::SamplesPerSecond, q, 2.0), 32.0);
  EXPECT_DOUBLE_EQ(quantity_of(SetQuantity::TokensPerSecondPerGpu, q, 2.0), 64.0 * 2048 / 2 / 8);
  EXPECT_DOUBLE_EQ(quantity_of(SetQuantity::MegatronTflopsPerGpu, q, 2.0), megatron_model_flops(q.model, 64) / 16 * 1e-12);
  // PaLM's count less the causal half of the attention: 6 L e T (L 36, e 4096, T 2048) a token fewer
  const double tokens_per_gpu = 64.0 * 2048 / 2 / 8;
  EXPECT_NEAR(quantity_of(SetQuantity::ModelTflopsPerGpu, q, 2.0) - quantity_of(SetQuantity::ModelTflopsPerGpuCausal, q, 2.0),
              6.0 * 36 * 4096 * 2048 * tokens_per_gpu * 1e-12, 1e-9);
}

TEST(SetFitters, HostFloorByHand) {
  EstimateRequest q;
  q.cluster.nvlink_size = 8;
  // 10 slots of 50 ms and 200 ms of exposed data-parallel communication
  const StepParts p{.step_s = 0.05 * 10 + 0.2, .slot_s = 0.05, .slots = 10, .outside_s = 0.2, .stage_blocks = 8};
  const FrameworkOverhead o{
      .layer_s = 0.004, .pipelined_layer_per_tp_s = 0.002, .tp_domain_layer_s = 0.003, .before_fix_slot_s = 0.5};
  const auto with = [&](std::int64_t tp, std::int64_t pp, std::int64_t dp, bool before_fix) {
    q.layout.tensor.tp1 = tp;
    q.layout.pp = pp;
    q.layout.dp = dp;
    return step_with_overhead(q, p, o, before_fix);
  };
  // pp 1, one domain: 8 x 4 ms = 32 ms under the GPU's 50 ms: unchanged.
  EXPECT_DOUBLE_EQ(with(4, 1, 2, false), 0.7);
  // pp 2, tp 4: 8 x (4 + 4 x 2) ms = 96 ms per slot.
  EXPECT_NEAR(with(4, 2, 2, false), 0.096 * 10 + 0.2, 1e-12);
  // before the fix, on 2 nodes (16 GPUs): 0.5 s more per slot; on one node (8 GPUs) none.
  EXPECT_NEAR(with(4, 2, 2, true), 0.596 * 10 + 0.2, 1e-12);
  EXPECT_NEAR(with(4, 2, 1, true), 0.096 * 10 + 0.2, 1e-12);
  // tp 16 spans two domains: 8 x (4 + 3) ms = 56 ms at pp 1.
  EXPECT_NEAR(with(16, 1, 2, false), 0.056 * 10 + 0.2, 1e-12);
}

TEST(SetFitters, NetworkInterpolatesLogLog) {
  NetworkScaling net;
  net.nodes = {2, 8};
  net.allreduce_bus_GBps = {400, 100};
  EXPECT_DOUBLE_EQ(net.bus_GBps(1), 400);  // below the smallest: its value
  EXPECT_DOUBLE_EQ(net.bus_GBps(2), 400);
  EXPECT_NEAR(net.bus_GBps(4), 200, 1e-9);  // log-log between 2 and 8
  EXPECT_NEAR(net.bus_GBps(32), 25, 1e-9);  // the last slope carried on
  EXPECT_TRUE(std::isnan(NetworkScaling{}.bus_GBps(4)));
}

// Rows measured as the model predicts them with the A100 calibration's compute x 1.10 and launch
// x 0.50: kernel_scales finds those two scales, and its rows then match their measurements.
TEST(SetFitters, KernelScalesRecoverTheirScales) {
  ValidationSet set;
  set.name = "made up";
  const System cluster = load_system(kRoot / "systems" / "vtrain_a100.yaml");
  ASSERT_NE(cluster.kernel_calibration, nullptr);
  const Runtime megatron = load_runtime_named("megatron");
  const Transformer model = load_model(kRoot / "models" / "gpt_1_3b.yaml");
  const auto scaled = std::make_shared<const kernels::Calibration>(scale_calibration(*cluster.kernel_calibration, {1.10, 0.50}));
  std::vector<FitRow> rows;
  const std::int64_t layouts[][3] = {{1, 8, 4}, {2, 4, 2}, {4, 2, 1}, {8, 1, 1}, {2, 8, 1}, {1, 16, 2}};
  for (const auto& [tp, dp, mbs] : layouts) {
    SetRow row;
    row.id = "r" + std::to_string(rows.size());
    set.rows.push_back(row);
    FitRow r;
    r.row = rows.size();
    r.request.model = model;
    r.request.cluster = cluster;
    r.request.runtime = megatron;
    r.request.layout.tensor.tp1 = tp;
    r.request.layout.tensor.nv1 = tp;
    r.request.layout.dp = dp;
    r.request.layout.nv_dp = std::min<std::int64_t>(dp, 8 / tp);
    r.request.layout.mbs = mbs;
    r.request.layout.exec.zero = 1;
    r.request.global_batch = 128;
    r.request.all_placed = true;
    r.request.system = at_scale(cluster, r.request.layout.n_gpus());
    r.quantity = SetQuantity::StepSeconds;
    r.fit = true;
    EstimateRequest truth = r.request;
    truth.cluster.kernel_calibration = scaled;
    truth.system = at_scale(truth.cluster, truth.layout.n_gpus());
    r.measured = evaluate_request(truth).totals.t;
    rows.push_back(r);
  }
  for (FitRow& r : rows) r.set = &set;
  const FitResult fit = find_fitter("kernel_scales").fit(rows, {});
  ASSERT_FALSE(fit.report.empty());
  EXPECT_NE(fit.report[0].find("compute x 1.10, stream launch_s x 0.50"), std::string::npos) << fit.report[0];
  for (const FitRow& r : rows) {
    EstimateRequest q = r.request;
    fit.apply(q, r);
    EXPECT_NEAR(evaluate_request(q).totals.t / r.measured - 1, 0, 1e-12) << set.rows[r.row].id;
  }
  EXPECT_THROW(find_fitter("kernel_scale"), InputError);
}

}  // namespace
}  // namespace perfsweep::calib
