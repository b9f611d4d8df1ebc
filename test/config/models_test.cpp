// The shipped models (models/*.yaml) against their published parameter counts, and the
// options' bad values. Published totals are rounded as published (8.03B: to 0.005B either side);
// the measured H100 runs' counts (PyTorch's sum of parameter sizes, shared validation set,
// validation/gpu/h100_train.json `result.params`) are exact.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "config/inputs.hpp"
#include "core/error.hpp"
#include "model/parameters.hpp"

namespace perfsweep {
namespace {

namespace fs = std::filesystem;

Transformer shipped(const std::string& name) {
  return load_model(fs::path(PERFSWEEP_SOURCE_DIR) / "models" / (name + ".yaml"));
}

// `published` in units of `unit`, given to `digits` decimals: within half the last digit.
void expect_published(std::int64_t count, double published, double unit, double half_last_digit) {
  EXPECT_NEAR(static_cast<double>(count) / unit, published, half_last_digit) << count;
}

TEST(ShippedModels, Llama3MatchPublishedTotals) {
  // "The Llama 3 Herd of Models": 8.03B, 70.6B, 405.9B (model cards).
  expect_published(count_parameters(shipped("llama3_8b")).total, 8.03, 1e9, 0.005);
  expect_published(count_parameters(shipped("llama3_70b")).total, 70.6, 1e9, 0.05);
  expect_published(count_parameters(shipped("llama3_405b")).total, 405.9, 1e9, 0.05);
  // Dense: every parameter is active.
  const ParameterCount p = count_parameters(shipped("llama3_8b"));
  EXPECT_EQ(p.active, p.total);
  // 8B by hand: a block 4096 x (32 + 16) x 128 + 4096^2 + 3 x 4096 x 14336 + 2 x 4096 = 218,112,000;
  // 32 blocks, two 128256 x 4096 tables and the final norm.
  EXPECT_EQ(p.per_block, 218112000);
  EXPECT_EQ(p.total, 32 * 218112000LL + 2 * 128256LL * 4096 + 4096);
}

TEST(ShippedModels, MixtralTotalAndActive) {
  // "Mixtral of Experts": 46.7B parameters, 12.9B active per token (top-2 of 8 experts).
  const ParameterCount p = count_parameters(shipped("mixtral_8x7b"));
  expect_published(p.total, 46.7, 1e9, 0.05);
  expect_published(p.active, 12.9, 1e9, 0.05);
}

TEST(ShippedModels, Gpt2SmallTiedWithLearnedPositions) {
  // 124M: 12 blocks of 12 e^2 + 13 e (e = 768), a 50257 x 768 table tied to the head, 1024
  // learned positions, the final LayerNorm: 124,439,808.
  const ParameterCount p = count_parameters(shipped("gpt2_small"));
  expect_published(p.total, 124, 1e6, 0.5);
  EXPECT_EQ(p.total, 124439808);
  EXPECT_EQ(p.head, 0);
}

TEST(ShippedModels, MeasuredH100RunsExactly) {
  EXPECT_EQ(count_parameters(shipped("gpt_1_3b")).total, 1414647808);     // runs t04-t07
  EXPECT_EQ(count_parameters(shipped("gpt_2_7b")).total, 2775208960);     // runs t08-t10
  Transformer llama = shipped("llama3_2_1b");
  EXPECT_EQ(count_parameters(llama).total, 1498482688);                   // run t13, untied head
  llama.tie_embeddings = true;                                            // Meta's release: 1.24B
  expect_published(count_parameters(llama).total, 1.24, 1e9, 0.005);
}

TEST(ShippedModels, EveryShippedModelLoadsAndRoundTrips) {
  for (const char* name : {"llama3_8b", "llama3_70b", "llama3_405b", "mixtral_8x7b", "gpt2_small", "gpt_1_3b",
                           "gpt_2_7b", "llama3_2_1b"}) {
    const Transformer m = shipped(name);
    const fs::path copy = fs::temp_directory_path() / (std::string("perfsweep_rt_") + name + ".yaml");
    std::ofstream(copy) << model_to_yaml(m);
    const Transformer back = load_model(copy);
    fs::remove(copy);
    EXPECT_EQ(model_to_yaml(back), model_to_yaml(m)) << name;
    EXPECT_EQ(count_parameters(back).total, count_parameters(m).total) << name;
  }
}

std::string load_error(const std::string& text) {
  // one file per test process: ctest runs the tests of this file in parallel processes
  const fs::path p = fs::temp_directory_path() / ("perfsweep_bad_model_" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(p) << "seq_len: 128\nembed_dim: 256\nnum_heads: 8\ndepth: 2\n" << text;
  std::string message;
  try {
    load_model(p);
  } catch (const InputError& e) {
    message = e.what();
  }
  fs::remove(p);
  const std::string prefix = p.string() + ": ";
  return message.starts_with(prefix) ? message.substr(prefix.size()) : "(no error naming the file) " + message;
}

TEST(ModelOptions, BadValuesNameTheFieldAndValue) {
  EXPECT_EQ(load_error("num_kv_heads: 3\n"), "num_kv_heads=3 does not divide num_heads=8");
  EXPECT_EQ(load_error("num_kv_heads: 0\n"), "num_kv_heads must be a positive integer, got 0");
  EXPECT_EQ(load_error("mlp: relu\n"), "mlp must be gelu or swiglu, got relu");
  EXPECT_EQ(load_error("norm: batchnorm\n"), "norm must be layernorm or rmsnorm, got batchnorm");
  EXPECT_EQ(load_error("vocab_size: -5\n"), "vocab_size must be a non-negative integer, got -5");
  EXPECT_EQ(load_error("dropout: 1\n"), "dropout must be in [0, 1), got 1");
  EXPECT_EQ(load_error("logits_dtype: fp16\nvocab_size: 10\n"), "logits_dtype must be fp32 or bf16, got fp16");
  EXPECT_EQ(load_error("tie_embeddings: true\n"),
            "tie_embeddings: true needs a vocabulary (vocab_size > 0); without one it can only be absent or false");
  EXPECT_EQ(load_error("logits_dtype: bf16\n"),
            "logits_dtype: bf16 needs a vocabulary (vocab_size > 0); without one it can only be absent or fp32");
  EXPECT_EQ(load_error("moe: {experts: 4, top_k: 5}\n"), "moe.top_k=5 exceeds moe.experts=4");
  EXPECT_EQ(load_error("moe: {experts: 4, top_k: 2, kind: x}\n"), "unknown key 'moe.kind'");
  EXPECT_EQ(load_error("moe: {top_k: 2}\n"), "missing key 'moe.experts'");
  EXPECT_EQ(load_error("rope_theta: 0\n"), "rope_theta must be > 0 and < 1e12, got 0");
  EXPECT_EQ(load_error("rope_theta: .nan\n"), "rope_theta must be a finite number, got .nan");
  EXPECT_EQ(load_error("rope_scaling_factor: 0.5\n"), "rope_scaling_factor must be in [1, 1024], got 0.5");
  EXPECT_EQ(load_error("norm_epsilon: 1\n"), "norm_epsilon must be in (0, 1), got 1");
  EXPECT_EQ(load_error("norm_epsilon: tiny\n"), "norm_epsilon must be a finite number, got tiny");
  EXPECT_EQ(load_error("mtp_layers: -1\nvocab_size: 10\n"), "mtp_layers must be a non-negative integer, got -1");
  EXPECT_EQ(load_error("mtp_layers: 65\nvocab_size: 10\n"), "mtp_layers must be in [0, 64], got 65");
  EXPECT_EQ(load_error("mtp_layers: 1\n"),
            "mtp_layers=1 needs a vocabulary (vocab_size > 0): each depth runs the LM head and a loss");
}

// The launch lines' numerics (no cost) as the released config.json files give them.
TEST(ShippedModels, LaunchNumericsAreTheReleasedConfigs) {
  for (const char* name : {"llama3_8b", "llama3_70b", "llama3_405b", "llama3_2_1b"}) {
    const Transformer m = shipped(name);
    EXPECT_EQ(m.rope_theta, 500000) << name;
    EXPECT_EQ(m.norm_epsilon, 1e-5) << name;
  }
  EXPECT_EQ(shipped("llama3_70b").rope_scaling_factor, 0);  // Llama 3: rope_scaling null
  EXPECT_EQ(shipped("llama3_405b").rope_scaling_factor, 8);
  EXPECT_EQ(shipped("llama3_2_1b").rope_scaling_factor, 32);
  EXPECT_EQ(shipped("mixtral_8x7b").rope_theta, 1e6);
  EXPECT_EQ(shipped("gpt2_small").rope_theta, 0);  // learned positions
  EXPECT_EQ(shipped("gpt2_small").norm_epsilon, 1e-5);
  // the reference's models give none, and their canonical YAML stays without them
  EXPECT_EQ(model_to_yaml(shipped("gpt3_1T")).find("epsilon"), std::string::npos);
}

// A model without a vocabulary may state the vocabulary's options as what they mean without one
// (as a model file written with every key does).
TEST(ModelOptions, VocabularyOptionsAtTheirDefaultsNeedNoVocabulary) {
  EXPECT_EQ(load_error("vocab_size: 0\ntie_embeddings: false\nlearned_positions: false\nlogits_dtype: fp32\n"),
            "(no error naming the file) ");
}

TEST(ModelOptions, DefaultsAreTheReferenceBlock) {
  const Transformer m = load_model(fs::path(PERFSWEEP_SOURCE_DIR) / "models" / "gpt3.yaml");
  EXPECT_FALSE(m.extends_reference());
  EXPECT_EQ(m.kv(), m.h);
  EXPECT_EQ(m.mlp, MlpKind::Gelu);
  EXPECT_EQ(m.norm, NormKind::LayerNorm);
  EXPECT_TRUE(m.bias);
  EXPECT_TRUE(m.has_dropout());
  EXPECT_FALSE(m.causal);
  EXPECT_EQ(m.vocab_size, 0);
  // A reference model's canonical YAML has no option keys (sweep fingerprints are made of it).
  EXPECT_EQ(model_to_yaml(m).find("mlp"), std::string::npos);
}

}  // namespace
}  // namespace perfsweep
