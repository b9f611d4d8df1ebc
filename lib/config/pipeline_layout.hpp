#pragma once
// Megatron-Core's custom pipeline layout (pipeline_model_parallel_layout; megatron/core/transformer/
// pipeline_parallel_layer_layout.py): a string such as "Et*4|(t*4|)*14tmL" naming, chunk by chunk,
// the layers each virtual pipeline stage holds. 'E' the embedding, 't' a decoder block, 'm' a
// multi-token prediction layer, 'L' the loss (with the LM head); '|' ends a chunk; "x*N" repeats a
// character and "(...)*N" a group (no nesting); commas are cosmetic. The flattened chunks go to the
// stages in Megatron-Core's order: chunk i to pipeline rank i % pp, virtual stage i / pp. Parsed
// once into plain numbers (the stages' blocks), never in a search's loop.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/transformer.hpp"

namespace perfsweep {

// One chunk: its decoder blocks and the other layers it holds.
struct LayoutChunk {
  std::int64_t blocks = 0;  // 't'
  std::int64_t mtp = 0;     // 'm'
  std::int64_t embeddings = 0, losses = 0;
  bool embedding_first = false;  // 'E' is the chunk's first layer
  bool loss_last = false;        // 'L' is the chunk's last layer
  bool block_after_mtp = false;  // a 't' here follows an 'm' of this chunk or an earlier one
};

// The chunks of `text` as Megatron-Core's parse_str_to_list reads it (repetitions unrolled, then
// split at '|'); ConfigError naming `flag` and the value for a character that is none of E, t, m,
// L or an expansion longer than the layout could be.
std::vector<LayoutChunk> parse_pipeline_layout(std::string_view text, std::string_view flag);

// What a layout gives the cost model: the end stages' blocks and the chunk of the uneven
// interleaved chunks (Execution's first_stage_blocks, last_stage_blocks, layout_chunk_blocks; 0
// where the existing representation already cuts the stages so), and each stage's total.
struct PipelineLayoutStages {
  std::int64_t first_stage_blocks = 0, last_stage_blocks = 0, layout_chunk_blocks = 0;
  std::vector<std::int64_t> stage_totals;  // decoder blocks of each pipeline rank, in rank order
};

// The layout checked against the configuration as Megatron-Core's PipelineParallelLayerLayout
// checks it (chunk count a multiple of pp; the embedding first and the loss last, once each; the
// decoder blocks the model's depth; the MTP layers the model's, after every block, in one chunk)
// and against what perfsweep costs (pp x interleave chunks; the embedding on the first stage, the
// loss and the MTP layers on the last; every stage with a block; the middle stages holding as many
// blocks; with interleave > 1 every chunk but the first stage's first and the last stage's last
// holding as many): ConfigError naming `flag` and the value otherwise.
PipelineLayoutStages pipeline_layout_stages(std::string_view text, std::string_view flag, std::int64_t pp,
                                            std::int64_t interleave, const Transformer& model);

}  // namespace perfsweep
