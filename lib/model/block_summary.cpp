#include "model/block_summary.hpp"

#include <algorithm>

#include "model/parameters.hpp"

namespace perfsweep {
namespace {
using I = std::int64_t;
constexpr double D(I v) { return static_cast<double>(v); }
}  // namespace

BlockSummary summarize(const Module& mlp, const Module& sa, const BuiltBlock& built) {
  BlockSummary b;
  b.mlp = sum_module(mlp);
  b.sa = sum_module(sa);
  b.p2p_volume_gb = built.p2p_volume_gb;
  b.expert_weights_gb = built.expert_weights_gb;
  return b;
}

namespace {
// The mean of `blocks` blocks, `moe_blocks` of them MoE and the others dense.
double mix(double moe, double dense, I moe_blocks, I blocks) {
  return (D(moe_blocks) * moe + D(blocks - moe_blocks) * dense) / D(blocks);
}

constexpr double ModuleSums::*kSumFields[] = {
    &ModuleSums::flops_fwd,  &ModuleSums::flops_bwd,  &ModuleSums::t_fwd,      &ModuleSums::t_bwd,
    &ModuleSums::t_fwd_comm, &ModuleSums::t_bwd_comm, &ModuleSums::t_fwd_comp, &ModuleSums::t_bwd_comp,
    &ModuleSums::t_fwd_mem,  &ModuleSums::t_bwd_mem,  &ModuleSums::weights_mem, &ModuleSums::activation_buffer,
    &ModuleSums::gemm_weights_mem, &ModuleSums::calls, &ModuleSums::fp8_weights_mem, &ModuleSums::fp8_gemms,
    &ModuleSums::t_bwd_weight};

// A group of `every` blocks, one MoE, whose mean block every stage holds (moe.every > 1); dense
// first blocks are costed per stage instead (stage_block).
bool mixes_blocks(const Transformer& m) { return m.is_moe() && m.moe.every > 1; }
bool dense_first(const Transformer& m) { return m.is_moe() && m.moe.first_dense > 0; }
}  // namespace

BlockSummary mix_blocks(const BlockSummary& moe, const BlockSummary& dense, I moe_blocks, I blocks) {
  BlockSummary b = moe;
  for (double ModuleSums::*f : kSumFields) b.mlp.*f = mix(moe.mlp.*f, dense.mlp.*f, moe_blocks, blocks);
  b.expert_weights_gb = moe.expert_weights_gb * D(moe_blocks) / D(blocks);
  b.whole_block_weights_gb =
      std::max(moe.mlp.weights_mem + moe.sa.weights_mem, dense.mlp.weights_mem + dense.sa.weights_mem);
  return b;
}

BlockMemory mix_block_memory(const BlockMemory& moe, const BlockMemory& dense, I moe_blocks, I blocks) {
  BlockMemory b = moe;
  b.mlp_weights = mix(moe.mlp_weights, dense.mlp_weights, moe_blocks, blocks);
  b.mlp_activations = mix(moe.mlp_activations, dense.mlp_activations, moe_blocks, blocks);
  b.expert_weights = moe.expert_weights * D(moe_blocks) / D(blocks);
  b.whole_block_weights = std::max(moe.weights(), dense.weights());
  return b;
}

BlockSummary stage_block(const BlockSummary& block, I dense, I blocks) {
  if (block.first_dense == 0) return block;
  if (dense == 0) {
    BlockSummary moe = block;
    moe.whole_block_weights_gb = 0;  // the MoE block's
    return moe;
  }
  BlockSummary dense_block = block;
  dense_block.mlp = block.dense_mlp;
  dense_block.expert_weights_gb = 0;
  dense_block.whole_block_weights_gb = 0;
  if (dense >= blocks) return dense_block;
  return mix_blocks(block, dense_block, blocks - dense, blocks);
}

BlockMemory least_stage_memory(const BlockMemory& block, I blocks) {
  if (block.first_dense == 0) return block;
  const I dense = std::min(blocks, block.first_dense);
  BlockMemory out = block;
  out.mlp_weights = mix(block.mlp_weights, std::min(block.mlp_weights, block.dense_mlp_weights), blocks - dense, blocks);
  out.mlp_activations =
      mix(block.mlp_activations, std::min(block.mlp_activations, block.dense_mlp_activations), blocks - dense, blocks);
  out.expert_weights = block.expert_weights * D(blocks - dense) / D(blocks);
  out.whole_block_weights = std::min(block.weights(), block.dense_mlp_weights + block.sa_weights);
  return out;
}

BlockSummary cost_block(const System& s, const Transformer& m, const Layout& c, const Mechanisms& mech,
                        const std::vector<BlockLayer>& block, const std::vector<BlockLayer>& dense_block, Module& mlp,
                        Module& sa) {
  const TensorSplit split = block_split(c);
  const BuiltBlock built = build_block(s, c.strategy, block, c.mbs, m, split, c.attention, mlp, sa, c.exec, mech);
  BlockSummary summary = summarize(mlp, sa, built);
  if (!mixes_blocks(m) && !dense_first(m)) return summary;
  Module dense_mlp, dense_sa;
  const BuiltBlock dense =
      build_block(s, c.strategy, dense_block, c.mbs, m, split, c.attention, dense_mlp, dense_sa, c.exec, mech);
  const BlockSummary dense_summary = summarize(dense_mlp, dense_sa, dense);
  if (mixes_blocks(m)) return mix_blocks(summary, dense_summary, 1, m.moe.every);
  summary.first_dense = std::min(m.depth, m.moe.first_dense);
  summary.dense_mlp = dense_summary.mlp;
  summary.whole_block_weights_gb = std::max(summary.mlp.weights_mem + summary.sa.weights_mem,
                                            dense_summary.mlp.weights_mem + dense_summary.sa.weights_mem);
  return summary;
}

BlockMemory cost_block_memory(const System& s, const Transformer& m, const Layout& c, const Mechanisms& mech,
                              const std::vector<BlockLayer>& block, const std::vector<BlockLayer>& dense_block) {
  const TensorSplit split = block_split(c);
  BlockMemory mem = block_memory(s, c.strategy, block, c.mbs, m, split, c.attention, c.exec, mech);
  if (!mixes_blocks(m) && !dense_first(m)) return mem;
  const BlockMemory dense = block_memory(s, c.strategy, dense_block, c.mbs, m, split, c.attention, c.exec, mech);
  if (mixes_blocks(m)) return mix_block_memory(mem, dense, 1, m.moe.every);
  mem.first_dense = std::min(m.depth, m.moe.first_dense);
  mem.dense_mlp_weights = dense.mlp_weights;
  mem.dense_mlp_activations = dense.mlp_activations;
  return mem;
}

void add_sums(ModuleSums& x, const ModuleSums& y) {
  for (double ModuleSums::*f : kSumFields) x.*f += y.*f;
}

StageEndSums stage_end_sums(const System& s, const Transformer& m, const Layout& c, const Mechanisms& mech,
                            Module* first_stage, Module* last_stage) {
  StageEndSums out;
  if (m.vocab_size == 0) return out;
  const StageEnds ends = describe_stage_ends(m, c.pp);
  Module first_local, last_local;
  Module& first = first_stage != nullptr ? *first_stage : first_local;
  Module& last = last_stage != nullptr ? *last_stage : last_local;
  build_stage(s, c.strategy, ends.first, c.mbs, m, c.tensor, c.attention, first, c.exec, mech);
  build_stage(s, c.strategy, ends.last, c.mbs, m, c.tensor, c.attention, last, c.exec, mech);
  out.first = sum_module(first);
  out.last = sum_module(last);
  // The loss layer's kept logits: the last stage's transient peak (the model's loss; each
  // multi-token prediction loss keeps as many); a tied head's copy of the embedding on another
  // stage, or multi-token prediction's.
  for (int i = 0; i < ends.last.count; ++i) {
    const std::size_t k = static_cast<std::size_t>(i);
    const BlockLayer& layer = ends.last.layers[k];
    if (layer.role == Role::CrossEntropy && out.logits_gb == 0) out.logits_gb = last.layers[k].cost.activation_buffer;
    const bool copy = layer.role == Role::Embedding || (layer.role == Role::VocabProjection && m.tie_embeddings);
    if (copy && !layer.shares_weights && c.pp > 1) out.tied_head_gb = last.layers[k].cost.weights_mem;
  }
  return out;
}

}  // namespace perfsweep
