#pragma once
// Shape of the transformer being trained. The short names are the reference's symbols:
// l = sequence length, e = embedding dim, h = heads, f = MLP hidden dim, depth = layers.
#include <cstdint>
#include <string>

namespace perfsweep {

struct Transformer {
  std::string name;
  std::int64_t l = 0;      // seq_len: tokens per sample
  std::int64_t e = 0;      // embed_dim
  std::int64_t h = 0;      // num_heads
  std::int64_t depth = 0;  // number of transformer blocks
  std::int64_t f = 0;      // ffn_dim (4 e unless given)
  // Optional, for plots: samples per training run (tokens / l for LLMs, samples x epochs for ViT).
  double dataset_samples = 0;
};

}  // namespace perfsweep
