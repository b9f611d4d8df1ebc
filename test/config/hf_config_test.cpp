// Hugging Face config.json files (test/data/hf, written from the model repositories' config.json
// files; test/data/README.md lists the sources) against the published parameter totals, and the
// reader's warnings and errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

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
  EXPECT_TRUE(has_warning(hf("Mistral-7B-v0.1"), "sliding_window"));
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
  // Gemma 2 9B's 16 heads of 256 features are wider than hidden_size 3584: named, not dropped.
  const ModelInput gemma2 = hf("gemma-2-9b");
  for (const char* key : {"head_dim", "sliding_window", "attn_logit_softcapping", "final_logit_softcapping"}) {
    EXPECT_TRUE(has_warning(gemma2, key)) << key;
  }
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

TEST(HfConfig, DeepSeekMoeExpressedAttentionNamed) {
  const ModelInput ds = hf("DeepSeek-V3");
  EXPECT_EQ(ds.model.moe.experts, 256);
  EXPECT_EQ(ds.model.moe.top_k, 8);
  EXPECT_EQ(ds.model.moe.ffn_dim, 2048);
  EXPECT_EQ(ds.model.moe.shared_experts, 1);
  EXPECT_EQ(ds.model.f, 18432);
  for (const char* key : {"q_lora_rank", "kv_lora_rank", "first_k_dense_replace", "num_nextn_predict_layers"}) {
    EXPECT_TRUE(has_warning(ds, key)) << key;
  }
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
  // What the sweep stores (model_to_yaml) reads back as the same model.
  const fs::path yaml = fs::temp_directory_path() / "perfsweep_qwen_roundtrip.yaml";
  {
    std::FILE* f = std::fopen(yaml.c_str(), "w");
    ASSERT_NE(f, nullptr);
    const std::string text = model_to_yaml(hf("Qwen2.5-7B").model);
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  EXPECT_EQ(model_to_yaml(load_model(yaml)), model_to_yaml(hf("Qwen2.5-7B").model));
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
