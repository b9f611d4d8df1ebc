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

}  // namespace
}  // namespace perfsweep
