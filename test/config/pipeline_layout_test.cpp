// Megatron-Core's pipeline layout strings (config/pipeline_layout.hpp): the chunks parsed as its
// parse_str_to_list reads them, the stages' totals as its chunk i -> pp rank i % pp gives them, and
// each refusal. The layouts are Megatron Bridge's DeepSeek-V3 layouts (validation/nvidia_moe/README.md).
#include "config/pipeline_layout.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "config/inputs.hpp"
#include "core/error.hpp"

namespace perfsweep {
namespace {

namespace fs = std::filesystem;

const Transformer& deepseek_v3() {
  static const Transformer m = read_model((fs::path(PERFSWEEP_TEST_DATA_DIR) / "hf" / "DeepSeek-V3").string(), 0).model;
  return m;
}
Transformer blocks(std::int64_t depth) {
  Transformer m;
  m.depth = depth;
  return m;
}
PipelineLayoutStages stages(const std::string& text, std::int64_t pp, std::int64_t v, const Transformer& m) {
  return pipeline_layout_stages(text, "--pipeline-layout", pp, v, m);
}
// The refusal's message, or "" where none.
std::string refusal(const std::string& text, std::int64_t pp, std::int64_t v, const Transformer& m) {
  try {
    stages(text, pp, v, m);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(PipelineLayout, ParsesAsMegatronCore) {
  // "Et|(tt|)*30mL": [E t], 30 x [t t], [m L]
  const auto chunks = parse_pipeline_layout("Et|(tt|)*30mL", "--pipeline-layout");
  ASSERT_EQ(chunks.size(), 32u);
  EXPECT_EQ(chunks[0].blocks, 1);
  EXPECT_EQ(chunks[0].embeddings, 1);
  EXPECT_TRUE(chunks[0].embedding_first);
  for (std::size_t i = 1; i < 31; ++i) EXPECT_EQ(chunks[i].blocks, 2) << i;
  EXPECT_EQ(chunks[31].blocks, 0);
  EXPECT_EQ(chunks[31].mtp, 1);
  EXPECT_TRUE(chunks[31].loss_last);
  // commas are cosmetic; x*N repeats one character, (...)*N a group; a trailing '|' an empty chunk
  const auto commas = parse_pipeline_layout("Et*4,|(t*4|)*14,tmL", "--pipeline-layout");
  ASSERT_EQ(commas.size(), 16u);
  EXPECT_EQ(commas[0].blocks, 4);
  EXPECT_EQ(commas[14].blocks, 4);
  EXPECT_EQ(commas[15].blocks, 1);
  EXPECT_EQ(parse_pipeline_layout("Et|", "--pipeline-layout").size(), 2u);
  EXPECT_EQ(parse_pipeline_layout("(t|)*3", "--pipeline-layout").size(), 4u);
}

// Each stage's blocks by hand: chunk i on stage i % pp.
TEST(PipelineLayout, StageTotals) {
  const Transformer& v3 = deepseek_v3();
  ASSERT_EQ(v3.depth, 61);
  ASSERT_EQ(v3.mtp_layers, 1);
  // pp 4 x 4: stage 0 chunks 0, 4, 8, 12 (4 each); stage 3 chunks 3, 7, 11 (4) and 15 (1)
  const PipelineLayoutStages four = stages("Et*4|(t*4|)*14tmL", 4, 4, v3);
  EXPECT_EQ(four.stage_totals, (std::vector<std::int64_t>{16, 16, 16, 13}));
  EXPECT_EQ(four.first_stage_blocks, 16);
  EXPECT_EQ(four.last_stage_blocks, 13);
  EXPECT_EQ(four.layout_chunk_blocks, 4);
  // pp 2 x 8: stage 0 eight chunks of 4, stage 1 seven of 4 and one of 1
  const PipelineLayoutStages two = stages("Et*4|(t*4|)*14tmL", 2, 8, v3);
  EXPECT_EQ(two.stage_totals, (std::vector<std::int64_t>{32, 29}));
  EXPECT_EQ(two.layout_chunk_blocks, 4);
  // pp 8 x 4: stage 0 1 + 3 x 2, the middle 4 x 2, stage 7 3 x 2 and the MTP and loss chunk
  const PipelineLayoutStages eight = stages("Et|(tt|)*30mL", 8, 4, v3);
  EXPECT_EQ(eight.stage_totals, (std::vector<std::int64_t>{7, 8, 8, 8, 8, 8, 8, 6}));
  EXPECT_EQ(eight.first_stage_blocks, 7);
  EXPECT_EQ(eight.last_stage_blocks, 6);
  EXPECT_EQ(eight.layout_chunk_blocks, 2);
  // no interleaving: the end stages' counts alone, as --first-stage-blocks 4 --last-stage-blocks 1
  const PipelineLayoutStages sixteen = stages("Et*4|(t*4|)*14tmL", 16, 1, v3);
  EXPECT_EQ(sixteen.first_stage_blocks, 4);
  EXPECT_EQ(sixteen.last_stage_blocks, 1);
  EXPECT_EQ(sixteen.layout_chunk_blocks, 0);
  // one stage
  const PipelineLayoutStages one = stages("Et*61mL", 1, 1, v3);
  EXPECT_EQ(one.first_stage_blocks, 0);
  EXPECT_EQ(one.last_stage_blocks, 0);
  // chunks the interleaved schedule already cuts so keep its representation: an even split in
  // chunks of 2, and 4 + 3 with the loss taking a slot (Megatron-LM's account-for-loss)
  const PipelineLayoutStages even = stages("Ett|tt|tt|ttL", 2, 2, blocks(8));
  EXPECT_EQ(even.first_stage_blocks, 0);
  EXPECT_EQ(even.layout_chunk_blocks, 0);
  const PipelineLayoutStages slotted = stages("Ett|tt|tt|tL", 2, 2, blocks(7));
  EXPECT_EQ(slotted.first_stage_blocks, 4);
  EXPECT_EQ(slotted.last_stage_blocks, 3);
  EXPECT_EQ(slotted.layout_chunk_blocks, 0);
  // even totals in uneven chunks (1 + 2, 2 + 1): the chunk given
  const PipelineLayoutStages uneven = stages("Et|tt|tt|tL", 2, 2, blocks(6));
  EXPECT_EQ(uneven.first_stage_blocks, 0);
  EXPECT_EQ(uneven.layout_chunk_blocks, 2);
}

TEST(PipelineLayout, Refusals) {
  const Transformer& v3 = deepseek_v3();
  const auto has = [](const std::string& message, const std::string& part) {
    return message.find(part) != std::string::npos;
  };
  std::string e = refusal("Etx|L", 2, 1, v3);
  EXPECT_TRUE(has(e, "--pipeline-layout 'Etx|L': invalid layer character 'x'")) << e;
  e = refusal("Et*4|(t*4|)*14tmL", 4, 2, v3);
  EXPECT_TRUE(has(e, "it has 16 chunks, not pp x interleave = 4 x 2")) << e;
  e = refusal("t*4E|(t*4|)*14tmL", 4, 4, v3);
  EXPECT_TRUE(has(e, "the first layer must be the embedding")) << e;
  e = refusal("Et*4|(t*4|)*14tLm", 4, 4, v3);
  EXPECT_TRUE(has(e, "the last layer must be the loss")) << e;
  e = refusal("EEt*61mL", 1, 1, v3);
  EXPECT_TRUE(has(e, "must each be given once, got 2 and 1")) << e;
  e = refusal("Et*4|(t*4|)*14ttmL", 4, 4, v3);
  EXPECT_TRUE(has(e, "it holds 62 decoder blocks (t), the model 61")) << e;
  e = refusal("Et*4|(t*4|)*14tL", 4, 4, v3);
  EXPECT_TRUE(has(e, "it holds 0 MTP layers (m), the model 1")) << e;
  e = refusal("Et*30|t*30m|t|L", 2, 2, v3);
  EXPECT_TRUE(has(e, "the decoder blocks (t) must come before the MTP layers (m)")) << e;
  e = refusal("Et*30|t*31|m|L", 2, 2, v3);
  EXPECT_TRUE(has(e, "the MTP layers (m) must be in the last stage's last chunk")) << e;
  e = refusal("E|t*61mL", 2, 1, v3);
  EXPECT_TRUE(has(e, "a stage holds no decoder block (stages 0, 61)")) << e;
  e = refusal("Et*15|t*16|t*17|t*13mL", 4, 1, v3);
  EXPECT_TRUE(has(e, "the middle stages hold different numbers of blocks (15, 16, 17, 13)")) << e;
  e = refusal("Et*8|t*8|t*7|t*8|t*8|t*8|t*8|t*6mL", 2, 4, v3);
  EXPECT_TRUE(has(e, "its chunks other than the first and the last hold different numbers of blocks (8 and 7)")) << e;
  e = refusal("Et*99999999mL", 1, 1, v3);
  EXPECT_TRUE(has(e, "its repetitions unroll to more than")) << e;
}

}  // namespace
}  // namespace perfsweep
