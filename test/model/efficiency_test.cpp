// Tokens, model FLOPs and MFU (model/efficiency.hpp) by hand on Llama 3 8B (Meta's model card:
// 8,030,261,248 parameters; 128,256 x 4,096 input embedding, an untied LM head; 32 blocks,
// 32 heads of 128, sequence 8,192) and the H100's dense bf16 peak, 989.4 TFLOP/s.
#include <gtest/gtest.h>

#include "model/efficiency.hpp"
#include "model/parameters.hpp"

namespace perfsweep {
namespace {

Transformer llama3_8b() {
  Transformer m;
  m.name = "llama3_8b";
  m.e = 4096;
  m.h = 32;
  m.kv_heads = 8;
  m.f = 14336;
  m.depth = 32;
  m.l = 8192;
  m.vocab_size = 128256;
  m.mlp = MlpKind::SwiGlu;
  m.norm = NormKind::RmsNorm;
  m.bias = false;
  m.dropout = 0;
  m.causal = true;
  return m;
}

TEST(Efficiency, ModelFlopsPerTokenArePalms) {
  const Transformer m = llama3_8b();
  ASSERT_EQ(count_parameters(m).total, 8030261248);
  // 6 N with N = every parameter but the input embedding's table (8,030,261,248 - 525,336,576),
  // and 12 L H Q T = 12 x 32 x 4096 x 8192 for the attention's two products.
  EXPECT_EQ(model_flops_per_token(m), 6 * 7504924672.0 + 12 * 32 * 4096 * 8192.0);
  // Tied: the head multiplies by the table, so N stays the same.
  Transformer tied = m;
  tied.tie_embeddings = true;
  EXPECT_EQ(model_flops_per_token(tied), model_flops_per_token(m));
}

TEST(Efficiency, TokensMfuAndTheBudget) {
  const Transformer m = llama3_8b();
  System h100;
  h100.matrix_flops_fp16 = 989.4;
  // 64 GPUs, 512 samples of 8192 tokens in 4 s: 1,048,576 tokens/s, 16,384 per GPU.
  const Efficiency e = efficiency(m, h100, 64, 512, 4.0);
  EXPECT_EQ(e.tokens_per_s, 1048576.0);
  EXPECT_EQ(e.tokens_per_s_per_gpu, 16384.0);
  const double flops = 6 * 7504924672.0 + 12 * 32 * 4096 * 8192.0;
  EXPECT_DOUBLE_EQ(e.model_tflops_per_gpu, flops * 16384 * 1e-12);
  EXPECT_DOUBLE_EQ(e.mfu, flops * 16384 * 1e-12 / 989.4);
  // 15e12 tokens: 15e12 / 1,048,576 s, 64 GPUs, at 2 per GPU-hour.
  const TrainingBudget b = training_budget(e, 64, 512, 8192, 15e12, 2.0);
  EXPECT_DOUBLE_EQ(b.steps, 15e12 / (512 * 8192.0));
  EXPECT_DOUBLE_EQ(b.seconds, 15e12 / 1048576.0);
  EXPECT_DOUBLE_EQ(b.days, 15e12 / 1048576.0 / 86400);
  EXPECT_DOUBLE_EQ(b.gpu_hours, 15e12 / 1048576.0 / 3600 * 64);
  EXPECT_DOUBLE_EQ(b.cost, 2 * b.gpu_hours);
  EXPECT_EQ(training_budget(e, 64, 512, 8192, 0, 2.0).seconds, 0.0);  // no budget asked
}

// MFU against the precision's own peak: the H100's dense FP8 peak (1979 TFLOP/s, twice bf16's)
// under fp8, its MXFP8 peak under a block-scaling recipe, bf16's where the system has none.
TEST(Efficiency, MfuOfThePrecisionsOwnPeak) {
  const Transformer m = llama3_8b();
  System s;
  s.matrix_flops_fp16 = 989.4;
  s.matrix_flops_fp8 = 1979;
  s.matrix_flops_mxfp8 = 3000;
  const auto of = [&](Precision p, Fp8Recipe recipe) {
    return efficiency(m, s, 64, 512, 4.0, peak_precision(s, p, recipe));
  };
  const Efficiency bf16 = of(Precision::Bf16, Fp8Recipe::Delayed);
  EXPECT_EQ(bf16.mfu_precision, bf16.mfu);
  const Efficiency fp8 = of(Precision::Fp8, Fp8Recipe::Delayed);
  EXPECT_EQ(fp8.mfu, bf16.mfu);  // the convention of published runs: of bf16's peak, whatever the precision
  EXPECT_DOUBLE_EQ(fp8.mfu_precision, fp8.model_tflops_per_gpu / 1979);
  EXPECT_DOUBLE_EQ(of(Precision::Fp8, Fp8Recipe::Mxfp8).mfu_precision, fp8.model_tflops_per_gpu / 3000);
  s.matrix_flops_mxfp8 = 0;
  EXPECT_DOUBLE_EQ(of(Precision::Fp8, Fp8Recipe::Mxfp8).mfu_precision, fp8.mfu);
  EXPECT_EQ(efficiency(m, s, 64, 512, 4.0).mfu_precision, bf16.mfu);  // no execution: bf16
}

// A price by system name over the price for every system over the system file's.
TEST(Efficiency, GpuHourPricesBySystem) {
  System h100, b200, gb200;
  h100.name = "H100";
  b200.name = "B200";
  gb200.name = "GB200";
  gb200.gpu_hour_cost = 6;
  GpuHourPrices none;
  EXPECT_FALSE(none.any());
  EXPECT_EQ(none.for_system(h100), 0.0);
  EXPECT_EQ(none.for_system(gb200), 6.0);
  GpuHourPrices p{2.5, {{"B200", 4.0}}};
  EXPECT_TRUE(p.any());
  EXPECT_EQ(p.for_system(h100), 2.5);
  EXPECT_EQ(p.for_system(b200), 4.0);
  EXPECT_EQ(p.for_system(gb200), 2.5);  // the flag's price for every system over the file's
  GpuHourPrices only_b200{0, {{"B200", 4.0}}};
  EXPECT_EQ(only_b200.for_system(gb200), 6.0);
  EXPECT_EQ(only_b200.for_system(h100), 0.0);
}

}  // namespace
}  // namespace perfsweep
