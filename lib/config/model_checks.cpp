#include "config/model_checks.hpp"

#include "config/yaml_file.hpp"
#include "core/error.hpp"

namespace perfsweep {

void check_model(const Transformer& model, const std::string& where) {
  if (model.head_dim_given == 0 && !model.is_mla() && model.e % model.h != 0) {
    throw InputError(where + ": num_heads=" + std::to_string(model.h) + " does not divide embed_dim=" +
                     std::to_string(model.e));
  }
  if (model.h % model.kv() != 0) {
    throw InputError(where + ": num_kv_heads=" + std::to_string(model.kv()) + " does not divide num_heads=" +
                     std::to_string(model.h));
  }
  if (model.moe.top_k > model.moe.experts) {
    throw InputError(where + ": moe.top_k=" + std::to_string(model.moe.top_k) + " exceeds moe.experts=" +
                     std::to_string(model.moe.experts));
  }
  if (model.qkv_bias && model.bias) throw InputError(where + ": qkv_bias: true needs bias: false (bias: true has it)");
  if (model.out_bias && !model.qkv_bias) {
    throw InputError(where + ": out_bias: true goes with qkv_bias: true (bias: true biases every projection)");
  }
  if (model.window > 0 && !model.causal) {
    throw InputError(where + ": sliding_window=" + std::to_string(model.window) +
                     " needs causal: true (a window of the keys before each query)");
  }
  if (model.global_every > 0 && model.window == 0) {
    throw InputError(where + ": global_every=" + std::to_string(model.global_every) + " needs a sliding_window");
  }
  if (model.is_mla() && (model.qk_norm || model.head_dim_given > 0 || model.kv_heads > 0 || model.qkv_bias)) {
    throw InputError(where + ": mla sets the attention's shapes itself: leave out head_dim, num_kv_heads, qkv_bias "
                             "and qk_norm");
  }
  if (model.moe.first_dense > 0 && model.moe.every > 1) {
    throw InputError(where + ": moe.first_dense=" + std::to_string(model.moe.first_dense) +
                     " with moe.every=" + std::to_string(model.moe.every) + " > 1 is not modelled");
  }
  if (!(model.dropout >= 0 && model.dropout < 1)) {
    throw InputError(where + ": dropout=" + yaml_double(model.dropout) + " must be a probability in [0, 1)");
  }
  if (const std::string error = model_limits_error(model); !error.empty()) throw InputError(where + ": " + error);
}

}  // namespace perfsweep
