// The training step's costs around the layers and its peak memory (model/train_step.hpp), worked
// out by hand on GPT-2 small's shape as measured in validation/gpu/h100_train.json run t01
// (V 50304, e 768, h 12, f 3072, 12 blocks, l 1024, micro-batch 16; GELU, LayerNorm, biases,
// causal, no dropout) on the round system (HBM 1000 GB/s, no kernel calibration: the roofline at
// the full bandwidth times the memory-bound passes).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "common/round_system.hpp"
#include "model/kernel_calibration.hpp"
#include "model/train_step.hpp"

namespace perfsweep {
namespace {

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

// Parameters, by hand: per block qkv 768 x 2304 + 2304, out 768 x 768 + 768, up 768 x 3072 + 3072,
// down 3072 x 768 + 768 = 7,084,800 linear, plus two LayerNorms of 2 x 768; embedding and LM head
// 50304 x 768 each, the final norm 1536. PyTorch counted 162,322,944 (the run's `params`).
constexpr double kParams = 162322944, kLinear = 12 * 7084800.0 + 50304 * 768.0;

TEST(TrainStep, ParametersAsPyTorchCountsThem) {
  const TrainParameters p = train_parameters(gpt2_t01());
  EXPECT_EQ(p.total, kParams);
  EXPECT_EQ(p.linear, kLinear);
  EXPECT_EQ(p.block_linear, 12 * 7084800.0);
}

TEST(TrainStep, PeakMemoryOfTheLossBackward) {
  const TrainStep t = train_step(test::round_system(), gpt2_t01(), 16, 1, Recompute::None);
  // States: 16 bytes per parameter.
  EXPECT_NEAR(t.memory.states, 16 * kParams * 1e-9, 1e-12);
  // Saved per token and block: fp32 residual 4e, norm cast 2e, qkv output 6e, attention output
  // 2e, log-sum-exp 4h, fp32 residual 4e, norm cast 2e, GELU input 2f and output 2f, two
  // LayerNorms' mean and rstd 16: 27,712 bytes; 12 blocks plus the final norm's 4e + 2e
  // = 337,152 bytes per token, 16,384 tokens.
  EXPECT_NEAR(t.memory.activations, 337152.0 * 16384 * 1e-9, 1e-12);
  // Peak in the loss backward: every bf16 weight cast kept, and three fp32 logit buffers of
  // 16384 x 50304 x 4 bytes (larger than the forward's end: all casts and two buffers).
  EXPECT_NEAR(t.memory.weight_casts, 2 * kLinear * 1e-9, 1e-12);
  EXPECT_NEAR(t.memory.transient, 3 * 16384.0 * 50304 * 4 * 1e-9, 1e-12);
  // Token ids and targets, int64: 2 x 16384 x 8 bytes.
  EXPECT_NEAR(t.memory.inputs, 2 * 16384 * 8 * 1e-9, 1e-15);
  // 2.597167104 + 0.000262144 + 5.523898368 + 0.247302144 + 9.890168832
  EXPECT_NEAR(t.memory.peak, 18.258798592, 1e-9);
  // Measured on the H100: 18.343 GB allocated at the peak.
  EXPECT_NEAR(t.memory.peak / 18.342870016, 1, 0.02);
  // No calibration: no allocator reserve; usable (80 - 0.82) GiB.
  EXPECT_EQ(t.memory.reserved, t.memory.peak);
  EXPECT_NEAR(t.memory.usable, 79.18 * 1.073741824, 1e-9);
  EXPECT_TRUE(t.memory.fits);
}

TEST(TrainStep, CostsAroundTheLayersAtTheFullBandwidth) {
  const TrainStep one = train_step(test::round_system(), gpt2_t01(), 16, 1, Recompute::None);
  const TrainStep four = train_step(test::round_system(), gpt2_t01(), 16, 4, Recompute::None);
  // AdamW: 28 bytes per parameter once per step; zeroing 4.
  EXPECT_NEAR(one.time.optimizer, 28 * kParams * 1e-9 / 1000, 1e-15);
  EXPECT_NEAR(one.time.zero_grad, 4 * kParams * 1e-9 / 1000, 1e-15);
  // Per micro-batch: the GEMM weights cast (6 bytes each); their gradients cast back and added
  // (18), the other parameters' gradients added (12).
  EXPECT_NEAR(one.time.weight_casts, 6 * kLinear * 1e-9 / 1000, 1e-15);
  EXPECT_NEAR(one.time.grad_accumulate, (18 * kLinear + 12 * (kParams - kLinear)) * 1e-9 / 1000, 1e-15);
  // Four micro-batches: four times the layers, casts and accumulation; the same optimizer step
  // and the same peak but for the three more micro-batches' token ids and targets (the
  // gradients accumulate in place).
  EXPECT_NEAR(four.time.layers, 4 * one.time.layers, 1e-12 * one.time.layers);
  EXPECT_NEAR(four.time.weight_casts, 4 * one.time.weight_casts, 1e-15);
  EXPECT_NEAR(four.time.grad_accumulate, 4 * one.time.grad_accumulate, 1e-15);
  EXPECT_EQ(four.time.optimizer, one.time.optimizer);
  EXPECT_NEAR(four.memory.peak, one.memory.peak + 3 * 2 * 16384 * 8 * 1e-9, 1e-12);
  EXPECT_EQ(one.time.total(), one.time.layers + one.time.weight_casts + one.time.grad_accumulate +
                                  one.time.optimizer + one.time.zero_grad);
  EXPECT_EQ(one.time.host, 0.0);  // no calibration: no host model
}

TEST(TrainStep, FullRecomputeKeepsBlockInputsAndCastsTheBlocksTwice) {
  const Transformer m = gpt2_t01();
  const TrainStep none = train_step(test::round_system(), m, 16, 1, Recompute::None);
  const TrainStep full = train_step(test::round_system(), m, 16, 1, Recompute::Full);
  // Each block keeps its fp32 input, 4e bytes per token, plus the final norm's 6e.
  EXPECT_NEAR(full.memory.activations, (12 * 4 + 6) * 768.0 * 16384 * 1e-9, 1e-12);
  // The loss backward then holds only the LM head's cast.
  EXPECT_NEAR(full.memory.weight_casts, 2 * 50304 * 768.0 * 1e-9, 1e-12);
  EXPECT_NEAR(full.time.weight_casts, 6 * (kLinear + 12 * 7084800.0) * 1e-9 / 1000, 1e-15);
  EXPECT_GT(full.time.layers, none.time.layers);  // the blocks' forward runs again
}

TEST(TrainStep, HostLaunchesBoundAStepOfSmallKernels) {
  System s = test::round_system();
  auto cal = std::make_shared<kernels::Calibration>();
  cal->isolated_call_s = {20e-6, 40e-6};
  cal->stream_fitted = {};  // every pass on the roofline; only the host model from the calibration
  s.kernel_calibration = cal;
  // One sample of 16 tokens: 12 blocks of 11 layer passes (fc1, fc1-bias, act1, fc2, fc2-bias,
  // ln1, qkv, fusedla, vproj, vproj-bias, ln2) and the embedding, final norm, LM head and loss:
  // 136 calls x 60 us = 8.16 ms per micro-batch, two micro-batches.
  Transformer m = gpt2_t01();
  m.l = 16;
  const TrainStep t = train_step(s, m, 1, 2, Recompute::None);
  EXPECT_NEAR(t.time.host, 2 * 136 * 60e-6, 1e-12);
  EXPECT_EQ(t.time.total(), std::max(t.time.gpu(), t.time.host));
}

TEST(TrainStep, WithoutAVocabularyTheLossIsAnMseOnTheOutput) {
  Transformer m = gpt2_t01();
  m.vocab_size = 0;
  const TrainStep t = train_step(test::round_system(), m, 16, 1, Recompute::None);
  // 12 blocks of 27,712 bytes per token, the final norm's fp32 input and output 8e.
  EXPECT_NEAR(t.memory.activations, (12 * 27712.0 + 8 * 768) * 16384 * 1e-9, 1e-12);
  // fp32 inputs and targets of e features.
  EXPECT_NEAR(t.memory.inputs, 2 * 16384 * 4 * 768.0 * 1e-9, 1e-12);
  // Loss backward: the output's gradient and the norm's input gradient, 2 x 4e per token.
  EXPECT_NEAR(t.memory.transient, 2 * 16384 * 4 * 768.0 * 1e-9, 1e-12);
}

TEST(TrainStep, FitsComparesTheReservedPeakWithTheUsableCapacity) {
  System s = test::round_system();
  auto cal = std::make_shared<kernels::Calibration>();
  cal->allocator_reserve = 0.05;
  s.kernel_calibration = cal;
  const Transformer m = gpt2_t01();
  // b = 64: four times the activations and logits of b = 16 (the states and casts stay):
  // 2.597 + 0.247 + 4 x (5.524 + 9.890) = 64.50 GB, reserved 67.73.
  const TrainStep t = train_step(s, m, 64, 1, Recompute::None);
  EXPECT_NEAR(t.memory.reserved, t.memory.peak * 1.05, 1e-9);
  EXPECT_TRUE(t.memory.fits);
  s.hbm_capacity = 64;  // 63.18 GiB = 67.84 GB usable
  EXPECT_TRUE(train_step(s, m, 64, 1, Recompute::None).memory.fits);
  s.hbm_capacity = 63;  // 62.18 GiB = 66.77 GB
  EXPECT_FALSE(train_step(s, m, 64, 1, Recompute::None).memory.fits);
}

}  // namespace
}  // namespace perfsweep
