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

// The blocks a model's mean block is taken over: a group of `every` with one MoE block, or with
// first dense blocks the whole depth.
struct BlockMix {
  I moe_blocks = 1, blocks = 1;
};
BlockMix block_mix(const Transformer& m) {
  if (m.moe.first_dense > 0) return {m.moe_blocks(), m.depth};
  return {1, m.moe.every};
}
bool mixes_blocks(const Transformer& m) { return m.is_moe() && (m.moe.every > 1 || m.moe.first_dense > 0); }
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

BlockSummary cost_block(const System& s, const Transformer& m, const Layout& c, const std::vector<BlockLayer>& block,
                        const std::vector<BlockLayer>& dense_block, Module& mlp, Module& sa) {
  const TensorSplit split = block_split(c);
  const BuiltBlock built = build_block(s, c.strategy, block, c.mbs, m, split, c.attention, mlp, sa, c.exec);
  const BlockSummary summary = summarize(mlp, sa, built);
  if (!mixes_blocks(m)) return summary;
  Module dense_mlp, dense_sa;
  const BuiltBlock dense =
      build_block(s, c.strategy, dense_block, c.mbs, m, split, c.attention, dense_mlp, dense_sa, c.exec);
  const BlockMix mix_of = block_mix(m);
  return mix_blocks(summary, summarize(dense_mlp, dense_sa, dense), mix_of.moe_blocks, mix_of.blocks);
}

BlockMemory cost_block_memory(const System& s, const Transformer& m, const Layout& c,
                              const std::vector<BlockLayer>& block, const std::vector<BlockLayer>& dense_block) {
  const TensorSplit split = block_split(c);
  const BlockMemory mem = block_memory(s, c.strategy, block, c.mbs, m, split, c.attention, c.exec);
  if (!mixes_blocks(m)) return mem;
  const BlockMix mix_of = block_mix(m);
  return mix_block_memory(mem, block_memory(s, c.strategy, dense_block, c.mbs, m, split, c.attention, c.exec),
                          mix_of.moe_blocks, mix_of.blocks);
}

void add_sums(ModuleSums& x, const ModuleSums& y) {
  for (double ModuleSums::*f : kSumFields) x.*f += y.*f;
}

StageEndSums stage_end_sums(const System& s, const Transformer& m, const Layout& c, Module* first_stage,
                            Module* last_stage) {
  StageEndSums out;
  if (m.vocab_size == 0) return out;
  const StageEnds ends = describe_stage_ends(m, c.pp);
  Module first_local, last_local;
  Module& first = first_stage != nullptr ? *first_stage : first_local;
  Module& last = last_stage != nullptr ? *last_stage : last_local;
  build_stage(s, c.strategy, ends.first, c.mbs, m, c.tensor, c.attention, first, c.exec);
  build_stage(s, c.strategy, ends.last, c.mbs, m, c.tensor, c.attention, last, c.exec);
  out.first = sum_module(first);
  out.last = sum_module(last);
  // The loss layer's kept logits: the last stage's transient peak; a tied head's copy of the
  // embedding on another stage.
  for (int i = 0; i < ends.last.count; ++i) {
    const std::size_t k = static_cast<std::size_t>(i);
    if (ends.last.layers[k].role == Role::CrossEntropy) out.logits_gb = last.layers[k].cost.activation_buffer;
    if (ends.last.layers[k].role == Role::VocabProjection && m.tie_embeddings && c.pp > 1) {
      out.tied_head_gb = last.layers[k].cost.weights_mem;
    }
  }
  return out;
}

}  // namespace perfsweep
