// One GPU's whole training step under the pytorch_amp runtime (runtimes/pytorch_amp.yaml: PyTorch
// eager, bf16 autocast, fused AdamW), through the one step composition (evaluate), worked out by
// hand on GPT-2 small's shape as measured in validation/gpu/h100_train.json run t01 (V 50304, e
// 768, h 12, f 3072, 12 blocks, l 1024, micro-batch 16; GELU, LayerNorm, biases, causal, no
// dropout) on the round system (HBM 1000 GB/s, no kernel calibration: the roofline at the full
// bandwidth times the memory-bound kernels).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "common/round_system.hpp"
#include "config/runtime_file.hpp"
#include "model/kernel_calibration.hpp"
#include "model/parameters.hpp"
#include "model/step.hpp"

namespace perfsweep {
namespace {

const std::filesystem::path kRoot = PERFSWEEP_SOURCE_DIR;

Transformer gpt2_t01() {
  Transformer m;
  m.name = "t01";
  m.vocab_size = 50304;
  m.e = 768;
  m.h = 12;
  m.f = 3072;
  m.depth = 12;
  m.l = 1024;
  m.causal = true;
  m.dropout = 0;
  return m;
}

const Runtime& amp() {
  static const Runtime rt = load_runtime(kRoot / "runtimes" / "pytorch_amp.yaml");
  return rt;
}

Evaluation step(const System& s, const Transformer& m, std::int64_t b, std::int64_t micro_batches, Recompute r) {
  Layout c;
  c.mbs = b;
  c.exec.zero = 0;
  c.exec.recompute = r;
  return evaluate(s, m, amp(), c, b * micro_batches);
}

// Parameters, by hand: per block qkv 768 x 2304 + 2304, out 768 x 768 + 768, up 768 x 3072 + 3072,
// down 3072 x 768 + 768 = 7,084,800 linear, plus two LayerNorms of 2 x 768; embedding and LM head
// 50304 x 768 each, the final norm 1536. PyTorch counted 162,322,944
// (the run's `params`). The layers' weights carry no qkv bias (the reference's layers): 2304 per
// block fewer, in the states and the casts alike.
constexpr double kParams = 162322944, kQkvBias = 12 * 2304.0;
constexpr double kStepParams = kParams - kQkvBias;
constexpr double kLinear = 12 * 7084800.0 + 50304 * 768.0 - kQkvBias;  // the GEMMs' weights and biases
constexpr double kGB = 1e-9;

TEST(TrainStep, ParametersAsPyTorchCountsThem) {
  EXPECT_EQ(static_cast<double>(count_parameters(gpt2_t01()).total), kParams);
}

TEST(TrainStep, PeakMemoryOfTheLossBackward) {
  const Evaluation ev = step(test::round_system(), gpt2_t01(), 16, 1, Recompute::None);
  const Totals& x = ev.totals;
  // States: fp32 weight, gradient and two moments, 16 bytes per parameter.
  EXPECT_NEAR(x.wts_mem + x.wts_grad_mem + x.wts_optimizer_states_mem, 16 * kStepParams * kGB, 1e-12);
  // Saved per token and block: fp32 residual 4e, norm cast 2e, qkv output 6e, attention output
  // 2e, log-sum-exp 4h, fp32 residual 4e, norm cast 2e, GELU input 2f and output 2f, two
  // LayerNorms' mean and rstd 16: 27,712 bytes; 12 blocks plus the final norm's 4e + 2e
  // = 337,152 bytes per token, 16,384 tokens.
  EXPECT_NEAR(x.acts_mem, 337152.0 * 16384 * kGB, 1e-12);
  // Beyond them at the peak, the loss backward: every bf16 weight cast kept and three fp32 logit
  // buffers of 16384 x 50304 x 4 bytes (more than the forward's end: all casts and two buffers);
  // and the token ids and targets, int64: 2 x 16384 x 8 bytes.
  const double beyond = 2 * kLinear * kGB + 3 * 16384.0 * 50304 * 4 * kGB + 2 * 16384 * 8 * kGB;
  EXPECT_NEAR(x.mem - (x.wts_mem + x.wts_grad_mem + x.wts_optimizer_states_mem + x.acts_mem), beyond, 1e-9);
  // 2.596724736 + 5.523898368 + 0.247246848 + 9.890168832 + 0.000262144
  EXPECT_NEAR(x.mem, 18.258300928, 1e-9);
  // Measured on the H100: 18.343 GB allocated at the peak.
  EXPECT_NEAR(x.mem / 18.342870016, 1, 0.02);
  // No calibration: the runtime's allocator reserve (0.049) on (80 - 0.82) GiB.
  EXPECT_NEAR(x.mem_limit, 79.18 * 1.073741824 / 1.049, 1e-9);
  EXPECT_TRUE(ev.fits);
}

TEST(TrainStep, CostsAroundTheLayersAtTheFullBandwidth) {
  const Evaluation one = step(test::round_system(), gpt2_t01(), 16, 1, Recompute::None);
  const Evaluation four = step(test::round_system(), gpt2_t01(), 16, 4, Recompute::None);
  // Per step: AdamW, 28 bytes per parameter, and zeroing, 4. Per micro-batch: the GEMM weights
  // cast (6 bytes each), their gradients cast back (6) and every gradient added (12).
  const double per_step = (28 + 4) * kStepParams * kGB / 1000;
  const double per_micro_batch = (6 * kLinear + 6 * kLinear + 12 * kStepParams) * kGB / 1000;
  EXPECT_NEAR(one.totals.t_optimizer, per_step + per_micro_batch, 1e-15);
  EXPECT_NEAR(four.totals.t_optimizer, per_step + 4 * per_micro_batch, 1e-15);
  // Four micro-batches: four times the layers; the same peak but for the three more
  // micro-batches' token ids and targets (the gradients accumulate in place).
  const double layers = one.totals.t - one.totals.t_optimizer;
  EXPECT_NEAR(four.totals.t - four.totals.t_optimizer, 4 * layers, 1e-12 * layers);
  EXPECT_NEAR(four.totals.mem, one.totals.mem + 3 * 2 * 16384 * 8 * kGB, 1e-12);
  EXPECT_EQ(one.totals.t_framework, 0.0);  // no calibration: no host model
}

TEST(TrainStep, FullRecomputeKeepsBlockInputsAndCastsTheBlocksTwice) {
  const Transformer m = gpt2_t01();
  const Evaluation none = step(test::round_system(), m, 16, 1, Recompute::None);
  const Evaluation full = step(test::round_system(), m, 16, 1, Recompute::Full);
  // Each block keeps its fp32 input, 4e bytes per token, plus the final norm's 6e.
  EXPECT_NEAR(full.totals.acts_mem, (12 * 4 + 6) * 768.0 * 16384 * kGB, 1e-12);
  // The loss backward then holds only the LM head's cast beside the three logit buffers.
  const double states = 16 * kStepParams * kGB;
  EXPECT_NEAR(full.totals.mem - states - full.totals.acts_mem,
              2 * 50304 * 768.0 * kGB + 3 * 16384.0 * 50304 * 4 * kGB + 2 * 16384 * 8 * kGB, 1e-9);
  // The blocks' weights are cast again for the re-run forward.
  const double block_linear = 12 * 7084800.0 - kQkvBias;
  EXPECT_NEAR(full.totals.t_optimizer - none.totals.t_optimizer, 6 * block_linear * kGB / 1000, 1e-15);
  EXPECT_GT(full.totals.t - full.totals.t_optimizer, none.totals.t - none.totals.t_optimizer);
}

TEST(TrainStep, HostLaunchesBoundAStepOfSmallKernels) {
  System s = test::round_system();
  auto cal = std::make_shared<kernels::Calibration>();
  cal->isolated_call_s = {20e-6, 40e-6};
  cal->stream_fitted = {};  // every pass on the roofline; only the host model from the calibration
  s.kernel_calibration = cal;
  // One sample of 16 tokens: 12 blocks of 11 layer passes (fc1, fc1-bias, act1, fc2, fc2-bias,
  // ln1, qkv, fusedla, vproj, vproj-bias, ln2) and the embedding, final norm, LM head and loss:
  // 136 calls x 60 us = 8.16 ms per micro-batch, two micro-batches. The micro-batches' layers,
  // casts and accumulation wait for the host; the optimizer step and zeroing follow.
  Transformer m = gpt2_t01();
  m.l = 16;
  const Evaluation ev = step(s, m, 1, 2, Recompute::None);
  const double per_step = (28 + 4) * kStepParams * kGB / 1000;
  EXPECT_GT(ev.totals.t_framework, 0.0);
  EXPECT_NEAR(ev.totals.t, 2 * 136 * 60e-6 + per_step, 1e-12);
}

TEST(TrainStep, WithoutAVocabularyTheLossIsAnMseOnTheOutput) {
  Transformer m = gpt2_t01();
  m.vocab_size = 0;
  const Evaluation ev = step(test::round_system(), m, 16, 1, Recompute::None);
  const Totals& x = ev.totals;
  // 12 blocks of 27,712 bytes per token, the final norm's fp32 input and output 8e.
  EXPECT_NEAR(x.acts_mem, (12 * 27712.0 + 8 * 768) * 16384 * kGB, 1e-12);
  // Beyond states and activations: every weight cast; the fp32 inputs and targets of e features;
  // the loss backward's output gradient and the norm's input gradient, 2 x 4e per token.
  const double casts = 2 * (12 * 7084800.0 - kQkvBias) * kGB;
  EXPECT_NEAR(x.mem - (x.wts_mem + x.wts_grad_mem + x.wts_optimizer_states_mem + x.acts_mem),
              casts + 2 * 16384 * 4 * 768.0 * kGB + 2 * 16384 * 4 * 768.0 * kGB, 1e-9);
}

TEST(TrainStep, FitsComparesTheReservedPeakWithTheUsableCapacity) {
  System s = test::round_system();
  auto cal = std::make_shared<kernels::Calibration>();
  cal->allocator_reserve = 0.05;  // the calibration's fitted reserve replaces the runtime's
  cal->stream_fitted = {};
  s.kernel_calibration = cal;
  const Transformer m = gpt2_t01();
  // b = 64: four times the activations, logits and batch of b = 16 (the states and casts stay):
  // 2.597 + 0.247 + 4 x (5.524 + 9.890 + 0.0003) = 64.50 GB, 67.73 GB with the reserve.
  const Evaluation ev = step(s, m, 64, 1, Recompute::None);
  EXPECT_NEAR(ev.totals.mem_limit, 79.18 * 1.073741824 / 1.05, 1e-9);
  EXPECT_TRUE(ev.fits);
  s.hbm_capacity = 64;  // 63.18 GiB = 67.84 GB usable
  EXPECT_TRUE(step(s, m, 64, 1, Recompute::None).fits);
  s.hbm_capacity = 63;  // 62.18 GiB = 66.77 GB
  EXPECT_FALSE(step(s, m, 64, 1, Recompute::None).fits);
}

}  // namespace
}  // namespace perfsweep
