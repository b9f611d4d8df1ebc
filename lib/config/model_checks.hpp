#pragma once
// The checks every model passes, whatever file or format it was read from (a model file, a Hugging
// Face config): what config/inputs.cpp and config/hf_config.cpp both apply.
#include <string>

#include "model/transformer.hpp"

namespace perfsweep {

// The checks every model passes, whatever its file: num_heads divides embed_dim, num_kv_heads
// divides num_heads, moe.top_k <= moe.experts, qkv_bias without bias, and shapes small enough for
// the cost model's int64 counts. Errors start with `where`.
void check_model(const Transformer& model, const std::string& where);

}  // namespace perfsweep
