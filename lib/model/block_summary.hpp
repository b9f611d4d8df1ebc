#pragma once
// What a step needs of the model's layers: one block's sums (with MoE every `moe.every` > 1
// blocks, the mean of the MoE and dense blocks; with dense first blocks, both kinds) and the end
// stages' layers (embedding, LM head).
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
  // With the first `first_dense` blocks dense (moe.first_dense, DeepSeek's first_k_dense_replace):
  // `mlp` and expert_weights_gb are the MoE block's, `dense_mlp` the dense block's MLP (the
  // attention is the same), and each pipeline stage is costed with its own blocks (stage_block).
  // 0: every block is this one.
  std::int64_t first_dense = 0;
  ModuleSums dense_mlp;
};

BlockSummary summarize(const Module& mlp, const Module& sa, const BuiltBlock& built);

// A stage of blocks of two kinds (MoE every `every` blocks, dense the others) holds whole groups
// of every blocks (validate_layout), so its sums are depth / pp times the group's mean block:
// (moe + (every - 1) dense) / every, field by field. The attention is the same in both; ZeRO-3
// gathers the larger block whole.
// (A stage's share of dense first blocks: stage_block.)
BlockSummary mix_blocks(const BlockSummary& moe, const BlockSummary& dense, std::int64_t moe_blocks,
                        std::int64_t blocks);
BlockMemory mix_block_memory(const BlockMemory& moe, const BlockMemory& dense, std::int64_t moe_blocks,
                             std::int64_t blocks);

// The mean block of a pipeline stage of `blocks` blocks, `dense` of them the dense first blocks
// (block.first_dense > 0): the two kinds' MLP sums mixed as mix_blocks mixes them, the experts'
// weights of its MoE blocks, ZeRO-3's larger block where it holds both kinds; a stage of one
// kind is that kind's block. Without dense first blocks, the block itself.
BlockSummary stage_block(const BlockSummary& block, std::int64_t dense, std::int64_t blocks);
// The same for the memory alone, as the least that any stage of at least `blocks` blocks holds per
// block (the search's memory check, which knows no partition): at most min(blocks, first_dense)
// of them dense, each field at the lesser of the two kinds, ZeRO-3's whole block the lesser.
BlockMemory least_stage_memory(const BlockMemory& block, std::int64_t blocks);

// The block a step is composed from, for one micro-batch on one GPU: the model's block (`block`:
// describe_block) timed into `mlp` and `sa`, and with MoE every `moe.every` > 1 blocks the dense
// block between (`dense_block`: describe_dense_block) mixed in; with dense first blocks the MoE
// block with the dense block's MLP beside it (BlockSummary::dense_mlp). evaluate and the search both cost
// blocks with these, so their steps agree to the last bit. `mech`: the runtime's mechanisms.
BlockSummary cost_block(const System& s, const Transformer& m, const Layout& layout, const Mechanisms& mech,
                        const std::vector<BlockLayer>& block, const std::vector<BlockLayer>& dense_block, Module& mlp,
                        Module& sa);
BlockMemory cost_block_memory(const System& s, const Transformer& m, const Layout& layout, const Mechanisms& mech,
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
StageEndSums stage_end_sums(const System& s, const Transformer& m, const Layout& layout, const Mechanisms& mech,
                            Module* first_stage = nullptr, Module* last_stage = nullptr);

}  // namespace perfsweep
