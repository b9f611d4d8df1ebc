// Hugging Face config.json files (test/data/hf, written from the model repositories' config.json
// files; test/data/README.md lists the sources) against the published parameter totals, and the
// reader's warnings and errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <tuple>

#include "config/hf_config.hpp"
#include "config/inputs.hpp"
#include "core/error.hpp"
#include "model/block.hpp"
#include "model/parameters.hpp"

namespace perfsweep {
namespace {

namespace fs = std::filesystem;

const fs::path kHf = fs::path(PERFSWEEP_TEST_DATA_DIR) / "hf";

ModelInput hf(const std::string& folder, std::int64_t seq_len = 0) { return read_model((kHf / folder).string(), seq_len); }
std::int64_t total(const std::string& folder) { return count_parameters(hf(folder).model).total; }

// Published totals in billions, rounded to the digits given (half the last digit either side).
void expect_billions(std::int64_t count, double published, double half_last_digit) {
  EXPECT_NEAR(static_cast<double>(count) / 1e9, published, half_last_digit) << count;
}

bool has_warning(const ModelInput& in, const std::string& key) {
  return std::any_of(in.warnings.begin(), in.warnings.end(),
                     [&](const std::string& w) { return w.find(": " + key + "=") != std::string::npos; });
}

TEST(HfConfig, LlamaMatchesPublishedTotals) {
  // "The Llama 3 Herd of Models" (arXiv 2407.21783) and the model cards: 8.03B and 70.6B. The
  // 8B count by hand is the shipped models/llama3_8b.yaml's (test/config/models_test.cpp).
  EXPECT_EQ(total("Meta-Llama-3-8B"), 32 * 218112000LL + 2 * 128256LL * 4096 + 4096);
  expect_billions(total("Meta-Llama-3-70B"), 70.6, 0.05);
  // Llama 3.1 8B has 3's shapes; only its context (max_position_embeddings) grew.
  const ModelInput llama31 = hf("Llama-3.1-8B");
  expect_billions(count_parameters(llama31.model).total, 8.03, 0.005);
  EXPECT_EQ(llama31.model.l, 131072);
  EXPECT_TRUE(llama31.warnings.empty()) << llama31.warnings.front();
  // Llama 3.2 1B, tied embeddings: the model card's "1.23B" (1,235,814,400, truncated).
  const std::int64_t llama32 = total("Llama-3.2-1B");
  EXPECT_EQ(llama32, 16 * (2048LL * (32 + 16) * 64 + 2048LL * 2048 + 3 * 2048LL * 8192 + 2 * 2048) + 128256LL * 2048 + 2048);
  EXPECT_EQ(llama32 / 10000000, 123);
}

// The launch lines' numerics: the rotary base, a llama3 rope_scaling's factor and the norm's
// epsilon under each config class's key; absent keys and other scalings stay not given (0).
TEST(HfConfig, LaunchNumerics) {
  const Transformer llama31 = hf("Llama-3.1-8B").model;
  EXPECT_EQ(llama31.rope_theta, 500000);
  EXPECT_EQ(llama31.rope_scaling_factor, 8);
  EXPECT_EQ(llama31.norm_epsilon, 1e-5);
  EXPECT_EQ(hf("Meta-Llama-3-70B").model.rope_scaling_factor, 0);  // rope_scaling null
  EXPECT_EQ(hf("Llama-3.2-1B").model.rope_scaling_factor, 32);
  EXPECT_EQ(hf("Mixtral-8x7B-v0.1").model.rope_theta, 1e6);
  EXPECT_EQ(hf("Qwen2.5-7B").model.norm_epsilon, 1e-6);
  const Transformer deepseek = hf("DeepSeek-V3").model;  // yarn scaling: not a llama3 factor
  EXPECT_EQ(deepseek.rope_theta, 10000);
  EXPECT_EQ(deepseek.rope_scaling_factor, 0);
  const Transformer gpt2 = hf("gpt2").model;
  EXPECT_EQ(gpt2.rope_theta, 0);
  EXPECT_EQ(gpt2.norm_epsilon, 1e-5);
  EXPECT_EQ(hf("gpt-neox-20b").model.norm_epsilon, 1e-5);
  EXPECT_EQ(hf("falcon-7b").model.rope_theta, 0);  // not in its file: FalconConfig's default applies
}

TEST(HfConfig, MistralAndMixtral) {
  // Mistral 7B: Llama 3 8B's block (218,112,000) with a 32000 vocabulary; the Hugging Face Hub's
  // count of mistralai/Mistral-7B-v0.1 is 7.24B.
  EXPECT_EQ(total("Mistral-7B-v0.1"), 32 * 218112000LL + 2 * 32000LL * 4096 + 4096);
  expect_billions(total("Mistral-7B-v0.1"), 7.24, 0.005);
  // "Mixtral of Experts" (arXiv 2401.04088): 46.7B in total, 12.9B active per token.
  const ParameterCount mixtral = count_parameters(hf("Mixtral-8x7B-v0.1").model);
  expect_billions(mixtral.total, 46.7, 0.05);
  expect_billions(mixtral.active, 12.9, 0.05);
  EXPECT_TRUE(hf("Mixtral-8x7B-v0.1").warnings.empty());  // its sliding_window is null
  // Mistral 7B's window of 4096 keys in every block
  const ModelInput mistral = hf("Mistral-7B-v0.1");
  EXPECT_EQ(mistral.model.window, 4096);
  EXPECT_EQ(mistral.model.global_every, 0);
  EXPECT_TRUE(mistral.warnings.empty()) << mistral.warnings.front();
}

TEST(HfConfig, QwenBiasOnQkvOnly) {
  // Qwen2.5-7B model card: 7.61B parameters, 6.53B non-embedding; the counts are 7,615,616,512
  // (the card truncates) and 6,525,621,760 (the card rounds).
  const ModelInput qwen = hf("Qwen2.5-7B");
  EXPECT_FALSE(qwen.model.bias);
  EXPECT_TRUE(qwen.model.qkv_bias);
  const ParameterCount p = count_parameters(qwen.model);
  EXPECT_EQ(p.total / 10000000, 761);
  expect_billions(p.total - p.embedding - p.head, 6.53, 0.005);
  // The q, k and v biases: (28 + 2 x 4) heads x 128 per block, 28 blocks.
  Transformer unbiased = qwen.model;
  unbiased.qkv_bias = false;
  EXPECT_EQ(p.total - count_parameters(unbiased).total, 28 * 36 * 128);
  // The block gets a qkv-bias layer 4608 wide; Llama's block has none.
  const auto layers = describe_block(qwen.model, AttentionMode{});
  const auto bias = std::find_if(layers.begin(), layers.end(),
                                 [](const BlockLayer& y) { return std::string(y.name) == "qkv-bias"; });
  ASSERT_NE(bias, layers.end());
  EXPECT_EQ(bias->out, 36 * 128);
  const auto llama = describe_block(hf("Meta-Llama-3-8B").model, AttentionMode{});
  EXPECT_TRUE(std::none_of(llama.begin(), llama.end(), [](const BlockLayer& y) { return y.role == Role::Bias; }));
  // Its sliding_window is unused (use_sliding_window: false), so nothing to warn about.
  EXPECT_TRUE(qwen.warnings.empty()) << qwen.warnings.front();
}

TEST(HfConfig, GemmaAndItsWarnings) {
  // Gemma (arXiv 2403.08295) Table 2, 2B: 1,981,884,416 non-embedding parameters (18 blocks and
  // the final norm; its embedding table counts the tokenizer's 256,128 rows, the config 256,000).
  const ParameterCount p = count_parameters(hf("gemma-2b").model);
  EXPECT_EQ(p.total - p.embedding, 1981884416);
  EXPECT_EQ(p.head, 0);  // tied
  EXPECT_TRUE(has_warning(hf("gemma-2b"), "hidden_act"));  // GeGLU costed as SwiGLU
  // Gemma 2 (arXiv 2408.00118) Table 1, 9B: 8,324,201,984 non-embedding parameters; the
  // Hub's 9.24B with the 256,000-row table. Its 16 heads of 256 features are wider than
  // hidden_size 3584, each block has four norms, and every other block a window of 4096.
  const ModelInput gemma2 = hf("gemma-2-9b");
  const ParameterCount g2 = count_parameters(gemma2.model);
  EXPECT_EQ(g2.total - g2.embedding, 8324201984);
  expect_billions(g2.total, 9.24, 0.005);
  EXPECT_EQ(gemma2.model.head_dim(), 256);
  EXPECT_TRUE(gemma2.model.post_norms);
  EXPECT_EQ(gemma2.model.window, 4096);
  EXPECT_EQ(gemma2.model.global_every, 2);
  EXPECT_EQ(gemma2.model.windowed_blocks(), 21);
  for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping"}) {
    EXPECT_TRUE(has_warning(gemma2, key)) << key;
  }
  for (const char* key : {"head_dim", "sliding_window"}) EXPECT_FALSE(has_warning(gemma2, key)) << key;
}

void expect_input_error(const std::string& path, const std::string& part);

// The count a warning gives for what the model leaves out ("N parameters (X B) left out").
std::int64_t left_out(const ModelInput& in, const std::string& key) {
  for (const std::string& w : in.warnings) {
    if (w.find(": " + key + "=") == std::string::npos) continue;
    const std::size_t at = w.rfind('(', w.find(" parameters ("));
    return std::stoll(w.substr(at + 1));
  }
  ADD_FAILURE() << "no warning on " << key;
  return 0;
}

TEST(HfConfig, Gemma3TextAndMultimodal) {
  // Gemma 3 technical report (arXiv 2503.19786) Table 1: 1B: 302M embedding, 698M non-embedding
  // parameters; 27B: 417M vision encoder, 25,600M non-embedding. gemma-3-1b is a text config
  // (gemma3_text); gemma-3-27b a multimodal one whose text_config leaves keys to
  // Gemma3TextConfig's defaults (vocab_size 262208 among them).
  const ModelInput one = hf("gemma-3-1b-pt");
  const ParameterCount p1 = count_parameters(one.model);
  EXPECT_EQ(p1.embedding / 1000000, 301);  // 301,989,888
  EXPECT_EQ((p1.total - p1.embedding + 500000) / 1000000, 698);
  EXPECT_EQ(p1.total, 999885952);  // 26 blocks of 26,842,112, the table, the final norm
  EXPECT_EQ(p1.total, 26 * (1152LL * (4 + 2) * 256 + 1024LL * 1152 + 2 * 256 + 3 * 1152LL * 6912 + 4 * 1152) +
                          262144LL * 1152 + 1152);
  EXPECT_TRUE(one.model.qk_norm && one.model.post_norms);
  EXPECT_EQ(one.model.window, 512);
  EXPECT_EQ(one.model.global_every, 6);
  const ModelInput big = hf("gemma-3-27b-pt");
  const ParameterCount p27 = count_parameters(big.model);
  EXPECT_EQ((p27.total - p27.embedding + 500000) / 1000000, 25600);
  EXPECT_EQ(big.model.vocab_size, 262208);
  EXPECT_EQ(big.model.head_dim(), 128);
  EXPECT_EQ(big.model.window, 1024);
  // SigLIP: 27 blocks of 15,239,504, its patch and position embeddings and final norm
  // (416,866,032: the report's 417M), and the projection 1152 x 5376 with its norm.
  const std::int64_t vision = left_out(big, "vision_config");
  EXPECT_EQ(vision, 27 * 15239504LL + 3 * 14 * 14 * 1152 + 1152 + 4096LL * 1152 + 2 * 1152 + 1152LL * 5376 + 1152);
  EXPECT_EQ((vision - 1152LL * 5376 - 1152 + 500000) / 1000000, 417);
}

TEST(HfConfig, Qwen3DenseAndMoe) {
  // Qwen3-8B model card: 8.2B parameters, 6.95B non-embedding; heads of head_dim 128 with a
  // norm on each query and key head.
  const ModelInput dense = hf("Qwen3-8B");
  const ParameterCount p = count_parameters(dense.model);
  expect_billions(p.total, 8.2, 0.05);
  expect_billions(p.total - p.embedding - p.head, 6.95, 0.005);
  EXPECT_TRUE(dense.model.qk_norm);
  EXPECT_TRUE(dense.warnings.empty()) << dense.warnings.front();
  // Qwen3-30B-A3B model card: 30.5B in total, 3.3B activated, 29.9B non-embedding: 48 blocks of
  // 128 experts of 768 (top 8).
  const ModelInput moe = hf("Qwen3-30B-A3B");
  const ParameterCount m = count_parameters(moe.model);
  expect_billions(m.total, 30.5, 0.05);
  expect_billions(m.total - m.embedding - m.head, 29.9, 0.05);
  EXPECT_EQ(m.active / 100000000, 33);  // 3,353,032,704: the card truncates
  EXPECT_TRUE(moe.warnings.empty()) << moe.warnings.front();
  // Qwen3-235B-A22B model card: 235B in total, 22B activated, 234B non-embedding: 94 blocks of
  // 128 experts of 1536 (top 8), 64 query and 4 key-value heads.
  const ModelInput large = hf("Qwen3-235B-A22B");
  const ParameterCount l = count_parameters(large.model);
  expect_billions(l.total, 235.0, 0.235);  // 235,093,634,560: within 0.1%
  expect_billions(l.total - l.embedding - l.head, 234.0, 0.234);
  EXPECT_EQ(l.active / 1000000000, 22);  // 22,190,763,520: the card's two digits
  EXPECT_TRUE(large.warnings.empty()) << large.warnings.front();
  // Qwen1.5-MoE-A2.7B model card: 14.3B in total, 2.7B activated; its shared expert of 5632
  // features is four experts of 1408, its gate of 2048 weights per block named.
  const ModelInput q2 = hf("Qwen1.5-MoE-A2.7B");
  const ParameterCount q = count_parameters(q2.model);
  EXPECT_EQ(q2.model.moe.shared_experts, 4);
  EXPECT_EQ(left_out(q2, "model_type"), 24 * 2048);
  expect_billions(q.total, 14.3, 0.05);
  expect_billions(q.active, 2.7, 0.05);
}

TEST(HfConfig, Phi3AndGptOss) {
  // Phi-3 technical report (arXiv 2404.14219): phi-3-mini, 3.8B parameters, a 2047-key window.
  const ModelInput phi = hf("Phi-3-mini-4k-instruct");
  expect_billions(count_parameters(phi.model).total, 3.8, 0.05);
  EXPECT_EQ(phi.model.window, 2047);
  EXPECT_TRUE(phi.warnings.empty()) << phi.warnings.front();
  // gpt-oss model card (arXiv 2508.10925) Table 1: 20b 20.91B total, 3.61B active; 120b
  // 116.83B, 5.13B; active counts the unembedding and not the embedding table.
  for (const auto& [folder, total_b, active_b] : {std::tuple{"gpt-oss-20b", 20.91, 3.61}, {"gpt-oss-120b", 116.83, 5.13}}) {
    const ModelInput oss = hf(folder);
    const ParameterCount c = count_parameters(oss.model);
    expect_billions(c.total, total_b, 0.005);
    expect_billions(c.active - c.embedding, active_b, 0.005);
    EXPECT_TRUE(oss.model.attention_sinks && oss.model.qkv_bias && oss.model.out_bias);
    EXPECT_EQ(oss.model.head_dim(), 64);
    EXPECT_EQ(oss.model.window, 128);
    EXPECT_EQ(oss.model.global_every, 2);  // layer_types: sliding, full, sliding, ...
    EXPECT_TRUE(oss.warnings.empty()) << oss.warnings.front();
  }
}

TEST(HfConfig, DeepSeekLatentAttention) {
  // DeepSeek-V2 (arXiv 2405.04434): V2-Lite 15.7B in total, 2.4B activated: 27 blocks, the first
  // dense, attention through a 512-wide key/value latent, the queries projected directly.
  const ModelInput lite = hf("DeepSeek-V2-Lite");
  EXPECT_TRUE(lite.model.is_mla());
  EXPECT_EQ(lite.model.mla.q_lora_rank, 0);
  EXPECT_EQ(lite.model.moe.first_dense, 1);
  EXPECT_EQ(lite.model.moe_blocks(), 26);
  const ParameterCount l = count_parameters(lite.model);
  expect_billions(l.total, 15.7, 0.05);
  // by hand: attention 2048 x 16 x 192 + 2048 x 576 + 512 + 512 x 16 x 256 + 16 x 128 x 2048
  const std::int64_t attention = 2048LL * 16 * 192 + 2048LL * 576 + 512 + 512LL * 16 * 256 + 16LL * 128 * 2048;
  EXPECT_EQ(attention, 13763072);
  const std::int64_t expert = 3 * 2048LL * 1408;
  EXPECT_EQ(l.total, attention * 27 + 2 * 2048 * 27 + 3 * 2048LL * 10944 + 26 * (2048LL * 64 + 66 * expert) +
                         2 * 102400LL * 2048 + 2048);
  EXPECT_EQ(l.active - l.embedding, l.total - l.embedding - 26 * 58 * expert);  // 64 + 2 of 8.65M against 6 + 2
  expect_billions(l.active - l.embedding, 2.45, 0.005);  // the published 2.4B, truncated
  EXPECT_TRUE(lite.warnings.empty()) << lite.warnings.front();
  // DeepSeek-V3 (arXiv 2412.19437): 671B in total, 37B activated in the main model; the
  // multi-token prediction module (one MoE block, a 2 x 7168 -> 7168 projection, three norms)
  // beside it. Its model card: 685B on the Hub (671B of the main model, 14B of the module), whose
  // checkpoint stores the module's own copies of the embedding and the head (shared in training):
  // 684.49B, 0.07% from 685B.
  const ModelInput v3 = hf("DeepSeek-V3");
  const ParameterCount c = count_parameters(v3.model);
  EXPECT_EQ(v3.model.mtp_layers, 1);
  expect_billions(c.total - c.mtp, 671.0, 0.05);
  expect_billions(c.active, 37.0, 0.6);
  EXPECT_EQ(v3.model.moe.first_dense, 3);
  EXPECT_TRUE(v3.model.moe.router_bias);
  EXPECT_EQ(v3.model.mla.q_lora_rank, 1536);
  // noaux_tc draws each token's 8 experts from its best 4 of 8 groups (n_group, topk_group)
  EXPECT_EQ(v3.model.moe.groups, 8);
  EXPECT_EQ(v3.model.moe.group_top_k, 4);
  EXPECT_EQ(lite.model.moe.groups, 0);  // greedy: no groups
  const std::int64_t moe_block = (c.total - c.mtp - c.embedding - c.head - 7168 - 3 * c.per_block) / 58;
  EXPECT_EQ(c.mtp, moe_block + 2 * 7168LL * 7168 + 3 * 7168);
  const std::int64_t stored = c.total + 2 * 129280LL * 7168;  // the module's copies of the table and head
  EXPECT_LT(std::abs(static_cast<double>(stored) / 685e9 - 1), 1e-3);
  Transformer main_model = v3.model;
  main_model.mtp_layers = 0;
  EXPECT_EQ(count_parameters(main_model).total, c.total - c.mtp);
  EXPECT_EQ(count_parameters(main_model).active, c.active);
  EXPECT_FALSE(has_warning(v3, "num_nextn_predict_layers"));
  for (const char* key : {"q_lora_rank", "kv_lora_rank", "first_k_dense_replace"}) EXPECT_FALSE(has_warning(v3, key)) << key;
}

// GLM-4.5-Air (zai-org/GLM-4.5-Air, Glm4MoeConfig): grouped-query attention of 96 heads of 128
// features with biases on q, k and v only, DeepSeekMoE's blocks (one dense block, 45 of 128 routed
// and one shared expert, top 8, noaux_tc's router bias) and one multi-token prediction layer. Its
// model card: 106B in total, 12B active.
TEST(HfConfig, GlmMoe) {
  const ModelInput air = hf("GLM-4.5-Air");
  EXPECT_TRUE(air.warnings.empty()) << air.warnings.front();
  EXPECT_TRUE(air.model.qkv_bias && !air.model.out_bias && !air.model.qk_norm);
  EXPECT_EQ(air.model.head_dim(), 128);
  EXPECT_EQ(air.model.moe.first_dense, 1);
  EXPECT_TRUE(air.model.moe.router_bias);
  EXPECT_EQ(air.model.mtp_layers, 1);
  const ParameterCount c = count_parameters(air.model);
  // by hand from the config: q, k, v with their biases, o without; two norms a block
  const std::int64_t e = 4096;
  const std::int64_t attention = e * 96 * 128 + 2 * e * 8 * 128 + 96 * 128 + 2 * 8 * 128 + 96 * 128 * e + 2 * e;
  const std::int64_t expert = 3 * e * 1408;
  const std::int64_t moe = e * 128 + 128 + 129 * expert;  // router and its bias, routed and shared experts
  const std::int64_t main_model = 46 * attention + 3 * e * 10944 + 45 * moe + 2 * 151552 * e + e;
  EXPECT_EQ(c.total - c.mtp, main_model);
  EXPECT_EQ(c.mtp, attention + moe + 2 * e * e + 3 * e);
  EXPECT_EQ(c.active, main_model - 45 * 120 * expert);  // 8 of the 128 routed experts
  expect_billions(c.total - c.mtp, 106.9, 0.05);        // the card's 106B, truncated
}

// Kimi K2 (moonshotai/Kimi-K2-Instruct): DeepSeek-V3's architecture under model_type kimi_k2, with
// 64 heads, 384 routed experts and one dense block. Its model card: 1T in total, 32B activated;
// the Hub lists 1.03T.
TEST(HfConfig, KimiK2ReadsAsDeepSeekV3) {
  const ModelInput k2 = hf("Kimi-K2-Instruct");
  EXPECT_TRUE(k2.warnings.empty()) << k2.warnings.front();
  EXPECT_TRUE(k2.model.is_mla());
  EXPECT_EQ(k2.model.moe.first_dense, 1);
  EXPECT_EQ(k2.model.mtp_layers, 0);
  const ParameterCount c = count_parameters(k2.model);
  const std::int64_t e = 7168, h = 64;
  // MLA: q through a 1536-wide latent (with its norm), keys and values through a 512-wide one
  const std::int64_t attention =
      e * 1536 + 1536 + 1536 * h * 192 + e * 576 + 512 + 512 * h * 256 + h * 128 * e + 2 * e;
  const std::int64_t expert = 3 * e * 2048;
  const std::int64_t moe = e * 384 + 384 + 385 * expert;
  const std::int64_t total = 61 * attention + 3 * e * 18432 + 60 * moe + 2 * 163840 * e + e;
  EXPECT_EQ(c.total, total);
  EXPECT_EQ(c.active, total - 60 * 376 * expert);
  expect_billions(c.total, 1026.4, 0.05);
  expect_billions(c.active, 32.9, 0.05);
}

// A Hub id resolves in the local cache ($HF_HUB_CACHE), named by the repository; a missing one
// names the file to fetch.
TEST(HfConfig, HubIdFromTheLocalCache) {
  const fs::path cache = fs::temp_directory_path() / ("perfsweep_hub_" + std::to_string(::getpid()));
  const fs::path snapshot = cache / "models--Qwen--Qwen3-8B" / "snapshots" / "0123abcd";
  fs::create_directories(snapshot);
  fs::create_directories(cache / "models--Qwen--Qwen3-8B" / "refs");
  fs::copy_file(kHf / "Qwen3-8B" / "config.json", snapshot / "config.json");
  std::ofstream(cache / "models--Qwen--Qwen3-8B" / "refs" / "main") << "0123abcd";
  ::setenv("HF_HUB_CACHE", cache.c_str(), 1);
  const ModelInput in = read_model("Qwen/Qwen3-8B");
  EXPECT_EQ(in.model.name, "Qwen3-8B");
  EXPECT_EQ(model_to_yaml(in.model), model_to_yaml(hf("Qwen3-8B").model));
  expect_input_error("Qwen/Qwen3-14B", "models--Qwen--Qwen3-14B/snapshots/*/config.json in the local Hugging Face "
                                       "cache; fetch it (huggingface-cli download Qwen/Qwen3-14B config.json)");
  ::unsetenv("HF_HUB_CACHE");
  fs::remove_all(cache);
}

TEST(HfConfig, Gpt2NeoxFalcon) {
  // GPT-2 small: 124,439,808 (models/gpt2_small.yaml's count, tied, learned positions).
  const ModelInput gpt2 = hf("gpt2");
  EXPECT_EQ(count_parameters(gpt2.model).total, 124439808);
  EXPECT_TRUE(gpt2.model.learned_positions);
  EXPECT_DOUBLE_EQ(gpt2.model.dropout, 0.1);
  EXPECT_TRUE(gpt2.warnings.empty()) << gpt2.warnings.front();
  // GPT-NeoX-20B model card: 20,554,567,680 parameters.
  EXPECT_EQ(total("gpt-neox-20b"), 20554567680);
  EXPECT_TRUE(has_warning(hf("gpt-neox-20b"), "use_parallel_residual"));
  // Falcon-7B, multi-query (one key/value head of 64), ffn 4 x 4544, tied: by hand 32 blocks of
  // 4544 x 73 x 64 + 4544^2 + 2 x 4544 x 18176 + 2 x 4544, the 65024-row table and a final norm
  // (scale only: bias false). The Hub's "7.22B" counts the tied head a second time:
  // 6,921,720,704 (with the final norm's shift) + 65024 x 4544 = 7,217,189,760.
  const ModelInput falcon = hf("falcon-7b");
  EXPECT_EQ(falcon.model.kv(), 1);
  EXPECT_EQ(count_parameters(falcon.model).total,
            32 * (4544LL * 73 * 64 + 4544LL * 4544 + 2 * 4544LL * 18176 + 2 * 4544) + 65024LL * 4544 + 4544);
  EXPECT_TRUE(has_warning(falcon, "parallel_attn"));
  EXPECT_EQ(falcon.model.l, 2048);  // FalconConfig's default max_position_embeddings
}

TEST(HfConfig, DeepSeekMoeExpressed) {
  const ModelInput ds = hf("DeepSeek-V3");
  EXPECT_EQ(ds.model.moe.experts, 256);
  EXPECT_EQ(ds.model.moe.top_k, 8);
  EXPECT_EQ(ds.model.moe.ffn_dim, 2048);
  EXPECT_EQ(ds.model.moe.shared_experts, 1);
  EXPECT_EQ(ds.model.f, 18432);
  EXPECT_TRUE(ds.warnings.empty()) << ds.warnings.front();
}

TEST(HfConfig, NameFolderFileAndSeqLen) {
  const ModelInput folder = hf("Meta-Llama-3-8B");
  const ModelInput file = read_model((kHf / "Meta-Llama-3-8B" / "config.json").string());
  EXPECT_EQ(folder.model.name, "Meta-Llama-3-8B");
  EXPECT_EQ(model_to_yaml(folder.model), model_to_yaml(file.model));
  EXPECT_EQ(folder.model.l, 8192);
  EXPECT_EQ(hf("Llama-3.1-8B", 4096).model.l, 4096);
  // The override applies to perfsweep's own models too.
  EXPECT_EQ(read_model("llama3_8b", 2048).model.l, 2048);
  // What the sweep stores (model_to_yaml) reads back as the same model, every option with it.
  const fs::path yaml = fs::temp_directory_path() / "perfsweep_qwen_roundtrip.yaml";
  for (const char* repo : {"Qwen2.5-7B", "gemma-3-27b-pt", "gpt-oss-20b", "DeepSeek-V3", "DeepSeek-V2-Lite"}) {
    {
      std::FILE* f = std::fopen(yaml.c_str(), "w");
      ASSERT_NE(f, nullptr);
      const std::string text = model_to_yaml(hf(repo).model);
      std::fputs(text.c_str(), f);
      std::fclose(f);
    }
    const Transformer back = load_model(yaml);
    EXPECT_EQ(model_to_yaml(back), model_to_yaml(hf(repo).model)) << repo;
    EXPECT_EQ(count_parameters(back).total, total(repo)) << repo;
  }
  fs::remove(yaml);
}

void expect_input_error(const std::string& path, const std::string& part) {
  try {
    read_model(path);
    ADD_FAILURE() << path << " was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(HfConfig, ClearErrors) {
  expect_input_error((kHf / "bad" / "unknown_type.json").string(),
                     "model_type 'bert' has no reader; known: deepseek_v2, deepseek_v3, falcon, gemma");
  expect_input_error((kHf / "bad" / "no_model_type.json").string(), "no model_type");
  expect_input_error((kHf / "bad" / "missing_heads.json").string(), "missing key 'num_attention_heads'");
  expect_input_error((kHf / "bad").string(), "a folder without config.json");
  EXPECT_THROW(read_model("llama3_8b", std::int64_t{1} << 40), InputError);  // too long for int64 counts
}

// A copy of test/data/hf/FOLDER/config.json with `from` replaced by `to` (which must occur), in a
// folder of its own.
std::string edited(const std::string& folder, const std::string& from, const std::string& to) {
  std::ifstream in(kHf / folder / "config.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  const fs::path dir = fs::temp_directory_path() / ("perfsweep_hf_hostile_" + std::to_string(::getpid())) / folder;
  fs::create_directories(dir);
  std::ofstream(dir / "config.json", std::ios::binary) << text;
  return dir.string();
}

// What a hostile config.json used to get past the reader: a key twice (transformers takes the
// last, a YAML reader the first), text where a number belongs, a probability past 1, a value of
// 20 MB echoed whole into a warning; and what JSON allows that a YAML reader refused.
TEST(HfConfig, HostileValues) {
  const struct {
    const char* folder;
    const char* from;
    const char* to;
    const char* message;
  } refused[] = {
      {"Mixtral-8x7B-v0.1", R"("num_local_experts": 8,)", R"("num_local_experts": 8, "num_local_experts": 64,)",
       "config.json: duplicate key 'num_local_experts' (line 18, column 27)"},
      {"Meta-Llama-3-8B", R"("hidden_size": 4096)", R"("hidden_size": "4096")",
       R"(config.json: hidden_size must be a positive integer, got "4096")"},
      {"gpt2", R"("resid_pdrop": 0.1)", R"("resid_pdrop": 2.0)",
       "config.json: resid_pdrop must be a probability (a number in [0, 1]), got 2.0"},
      {"gpt2", R"("resid_pdrop": 0.1)", R"("resid_pdrop": 1)", "config.json: dropout=1 must be a probability in [0, 1)"},
      {"Mixtral-8x7B-v0.1", R"("attention_dropout": 0.0)", R"("attention_dropout": -0.5)",
       "config.json: attention_dropout must be a probability"},
      {"Mixtral-8x7B-v0.1", R"("tie_word_embeddings": false)", R"("tie_word_embeddings": "false")",
       R"(config.json: tie_word_embeddings must be true or false, got "false")"},
      {"Mixtral-8x7B-v0.1", R"("hidden_act": "silu")", R"("hidden_act": ["silu"])",
       "config.json: hidden_act must be a string, got 1 values"},
  };
  for (const auto& r : refused) expect_input_error(edited(r.folder, r.from, r.to), r.message);
  const ModelInput big = read_model(edited("Mixtral-8x7B-v0.1", "\"use_cache\": true", "\"tokenizer_blob\": \"" + std::string(20'000'000, 'x') + "\""));
  ASSERT_EQ(big.warnings.size(), 1u);
  EXPECT_LT(big.warnings.front().size(), 1000u) << "a 20 MB value echoed whole";
  EXPECT_NE(big.warnings.front().find("(20000000 bytes in all)"), std::string::npos) << big.warnings.front();
  // json.dump's surrogate pair for an emoji is valid JSON
  const ModelInput emoji = read_model(edited("Mixtral-8x7B-v0.1", "\"torch_dtype\": \"bfloat16\"", "\"torch_dtype\": \"\\ud83d\\ude00\""));
  EXPECT_EQ(model_to_yaml(emoji.model), model_to_yaml(hf("Mixtral-8x7B-v0.1").model));
  fs::remove_all(fs::temp_directory_path() / ("perfsweep_hf_hostile_" + std::to_string(::getpid())));
}

}  // namespace
}  // namespace perfsweep
