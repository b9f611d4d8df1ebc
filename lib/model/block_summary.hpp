#pragma once
// What a step needs of the model's layers: one block's sums (with MoE every `moe.every` > 1
// blocks, the mean of the MoE and dense blocks) and the end stages' layers (embedding, LM head).
#include <cstdint>
#include <vector>

#include "model/plan.hpp"
#include "model/runtime.hpp"

namespace perfsweep {

// What a step needs of one block's modules. With MoE every `moe.every` > 1 blocks, the mean
// block of a group of every blocks (mix_blocks).
struct BlockSummary {
  ModuleSums mlp;
  ModuleSums sa;
  double p2p_volume_gb = 0;  // activations sent between pipeline stages per micro-batch
  // The routed experts' weights (GB), part of mlp.weights_mem: sharded and reduced over the
  // expert-data-parallel group (dp / ep GPUs).
  double expert_weights_gb = 0;
  // ZeRO-3's whole block (GB): the larger kind's weights when blocks differ, else 0 (the block's).
  double whole_block_weights_gb = 0;
};

BlockSummary summarize(const Module& mlp, const Module& sa, const BuiltBlock& built);

// A stage of blocks of two kinds (MoE every `every` blocks, dense the others) holds whole groups
// of every blocks (validate_layout), so its sums are depth / pp times the group's mean block:
// (moe + (every - 1) dense) / every, field by field. The attention is the same in both; ZeRO-3
// gathers the larger block whole.
// With the first moe.first_dense blocks dense (DeepSeek's first_k_dense_replace) the mean is the
// model's, moe_blocks of depth blocks MoE, every stage costed with it (a stage's own mix of the
// two is not followed; docs/models.md).
BlockSummary mix_blocks(const BlockSummary& moe, const BlockSummary& dense, std::int64_t moe_blocks,
                        std::int64_t blocks);
BlockMemory mix_block_memory(const BlockMemory& moe, const BlockMemory& dense, std::int64_t moe_blocks,
                             std::int64_t blocks);

// The block a step is composed from, for one micro-batch on one GPU: the model's block (`block`:
// describe_block) timed into `mlp` and `sa`, and with MoE every `moe.every` > 1 blocks the dense
// block between (`dense_block`: describe_dense_block) mixed in. evaluate and the search both cost
// blocks with these, so their steps agree to the last bit.
BlockSummary cost_block(const System& s, const Transformer& m, const Layout& layout,
                        const std::vector<BlockLayer>& block, const std::vector<BlockLayer>& dense_block, Module& mlp,
                        Module& sa);
BlockMemory cost_block_memory(const System& s, const Transformer& m, const Layout& layout,
                              const std::vector<BlockLayer>& block, const std::vector<BlockLayer>& dense_block);

// x += y, field by field.
void add_sums(ModuleSums& x, const ModuleSums& y);

// With a vocabulary, what the end stages run beside their blocks for one micro-batch: the
// embedding (first) and the final norm, LM head and loss (last), summed, and the loss's kept
// logits (GB). It depends on the layout only as a block does (micro-batch, tensor split and
// placement, execution options) and on whether the embedding and a tied head share one stage
// (pp = 1), so the search costs it once with each block. `first_stage` and `last_stage`, when
// given, receive the timed rows.
// tied_head_gb: with tied embeddings on several stages, the last stage's copy of the embedding
// (GB per GPU), whose gradient the first and last stage all-reduce after the backward
// (Megatron's embedding group), exposed on both.
struct StageEndSums {
  ModuleSums first, last;
  double logits_gb = 0;
  double tied_head_gb = 0;
};
StageEndSums stage_end_sums(const System& s, const Transformer& m, const Layout& layout,
                            Module* first_stage = nullptr, Module* last_stage = nullptr);

}  // namespace perfsweep
