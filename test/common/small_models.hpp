#pragma once
// Small made-up models the tests work out by hand.
#include <cstdint>

#include "model/transformer.hpp"

namespace perfsweep::test {

// e features, h heads, an MLP of f, l tokens a sequence, 2 blocks; the rest as Transformer's defaults.
inline Transformer small(std::int64_t e, std::int64_t h, std::int64_t f, std::int64_t l) {
  Transformer m;
  m.name = "small";
  m.e = e;
  m.h = h;
  m.f = f;
  m.l = l;
  m.depth = 2;
  return m;
}

// An MoE model: e = 16, 2 heads of 8 (multi-head), no biases, no dropout,
// LayerNorm (a scale of 16 without biases), a GELU MLP of f = 32, 16 tokens; 4 experts, top 2,
// expert f = 32. Weights of one block, in elements, with tp = 1:
//   qkv 16 x 48 = 768, vproj 16 x 16 = 256, ln1 and ln2 16 each: 1056 shared by every block;
//   dense MLP fc1 16 x 32 + fc2 32 x 16 = 1024;
//   MoE MLP: router 16 x 4 = 64 and experts / ep experts of 1024 each (ep = 1: 4096, ep = 2: 2048).
inline Transformer small_moe(std::int64_t depth, std::int64_t every) {
  Transformer m = small(16, 2, 32, 16);
  m.bias = false;
  m.dropout = 0;
  m.depth = depth;
  m.moe = {4, 2, 32, 1.0, every, 0};
  return m;
}

}  // namespace perfsweep::test
