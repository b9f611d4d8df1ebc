#include "config/hf_config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <span>
#include <utility>
#include <string_view>
#include <system_error>

#include "config/model_checks.hpp"
#include "config/yaml_file.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "model/parameters.hpp"

namespace perfsweep {

namespace fs = std::filesystem;

namespace {
using I = std::int64_t;

// Keys that change no cost of a training step: tokenizer ids, numerical epsilons and scales,
// position encoding settings (rotary positions have no weights), initialisation, inference-only
// settings and the router's loss coefficients (a scalar per step).
constexpr std::string_view kFreeKeys[] = {
    "_name_or_path", "architectures", "auto_map", "model_type", "torch_dtype", "transformers_version",
    "bos_token_id", "eos_token_id", "pad_token_id", "initializer_range", "rms_norm_eps", "layer_norm_eps",
    "layer_norm_epsilon", "rope_theta", "rope_scaling", "rotary_pct", "rotary_emb_base", "rotary_emb_fraction",
    "partial_rotary_factor", "use_cache", "pretraining_tp", "output_router_logits", "router_aux_loss_coef",
    "router_jitter_noise", "aux_loss_alpha", "seq_aux", "norm_topk_prob", "routed_scaling_factor", "scoring_func",
    "topk_method", "ep_size", "bos_token", "eos_token", "classifier_dropout",
    "max_window_layers", "use_sliding_window", "scale_attn_weights", "reorder_and_upcast_attn",
    "scale_attn_by_inverse_layer_idx", "query_pre_attn_scalar", "quantization_config", "use_mrope",
    "apply_residual_connection_post_layernorm", "rope_local_base_freq", "initial_context_length",
    "original_max_position_embeddings", "swiglu_limit"};

// What a warning says of the parameter count: "the parameter count is unaffected", "N
// parameters (X B) left out" or "N parameters (X B) counted too many".
std::string parameter_effect(I left_out) {
  if (left_out == 0) return "the parameter count is unaffected";
  const I n = left_out > 0 ? left_out : -left_out;
  char b[32];
  std::snprintf(b, sizeof b, "%.3f B", static_cast<double>(n) / 1e9);
  return std::to_string(n) + " parameters (" + b + ") " + (left_out > 0 ? "left out" : "counted too many");
}

// GPT-2's sequence-classification head settings (GPT2DoubleHeadsModel), unused by a language model.
bool is_summary_key(std::string_view key) { return key.starts_with("summary_") || key.starts_with("task_specific"); }

// One config.json: reads values by key and remembers which keys were read, so the rest can be
// named in a warning.
class HfKeys {
 public:
  HfKeys(std::string file, YAML::Node root) : file_(std::move(file)), root_(std::move(root)) {}

  const std::string& file() const { return file_; }

  // The value, or nothing when the key is absent or null (transformers' None).
  std::optional<YAML::Node> find(const std::string& key) {
    read_.insert(key);
    const YAML::Node n = root_[key];
    if (!n || n.IsNull()) return std::nullopt;
    return n;
  }

  I integer(const std::string& key) {
    const std::optional<YAML::Node> n = find(key);
    if (!n) throw InputError(file_ + ": missing key '" + key + "'");
    return positive(key, *n);
  }
  I integer_or(const std::string& key, I fallback) {
    const std::optional<YAML::Node> n = find(key);
    return n ? positive(key, *n) : fallback;
  }
  // A count that may be 0.
  I count_or(const std::string& key, I fallback) {
    const std::optional<YAML::Node> n = find(key);
    if (!n) return fallback;
    I v = -1;
    if (!n->IsScalar() || yaml_is_text(*n) || !YAML::convert<I>::decode(*n, v) || v < 0) {
      throw InputError(file_ + ": " + key + " must be a non-negative integer, got " + text(*n));
    }
    return v;
  }
  // A probability (a dropout rate): a JSON number in [0, 1].
  double probability_or(const std::string& key, double fallback) {
    const std::optional<YAML::Node> n = find(key);
    if (!n) return fallback;
    double v = 0;
    if (!json_number(*n, v) || !(v >= 0 && v <= 1)) {
      throw InputError(file_ + ": " + key + " must be a probability (a number in [0, 1]), got " + text(*n));
    }
    return v;
  }
  // A finite JSON number (not text).
  double number_or(const std::string& key, double fallback) {
    const std::optional<YAML::Node> n = find(key);
    return n ? number(key, *n) : fallback;
  }
  double number(const std::string& key, const YAML::Node& n) const {
    double v = 0;
    if (!json_number(n, v) || !std::isfinite(v)) throw InputError(file_ + ": " + key + " must be a number, got " + text(n));
    return v;
  }
  bool flag_or(const std::string& key, bool fallback) {
    const std::optional<YAML::Node> n = find(key);
    if (!n) return fallback;
    if (!yaml_is_text(*n) && n->IsScalar() && (n->Scalar() == "true" || n->Scalar() == "false")) {
      return n->Scalar() == "true";
    }
    throw InputError(file_ + ": " + key + " must be true or false, got " + text(*n));
  }
  std::string text_or(const std::string& key, const std::string& fallback) {
    const std::optional<YAML::Node> n = find(key);
    if (!n) return fallback;
    if (!yaml_is_text(*n)) throw InputError(file_ + ": " + key + " must be a string, got " + text(*n));
    return n->Scalar();
  }

  // A key the model cannot express: "FILE: key=value cannot be expressed: instead (its effect on
  // the parameter count)", `left_out` the parameters the model counts fewer than the file's
  // model has (negative: more).
  void cannot_express(const std::string& key, const std::string& value, const std::string& instead, I left_out) {
    read_.insert(key);
    warnings_.push_back(file_ + ": " + key + "=" + value + " cannot be expressed: " + instead + " (" +
                        parameter_effect(left_out) + ")");
  }
  // The same for a key whose value is in the file, when it is there and not null.
  void cannot_express_if_set(const std::string& key, const std::string& instead, I left_out) {
    if (const std::optional<YAML::Node> n = find(key)) cannot_express(key, text(*n), instead, left_out);
  }
  // A nested config (a multimodal config's text_config), read as a file of its own whose
  // warnings join this one's.
  // `defaults`: the nested config class's values of keys it leaves out.
  HfKeys nested(const std::string& key, std::span<const std::pair<const char*, I>> defaults) {
    const std::optional<YAML::Node> n = find(key);
    if (!n || !n->IsMap()) throw InputError(file_ + ": " + key + " must be an object of keys to values");
    YAML::Node copy = YAML::Clone(*n);
    for (const auto& [name, value] : defaults) {
      if (!copy[name] || copy[name].IsNull()) copy[name] = value;
    }
    return HfKeys(file_ + " " + key, copy);
  }
  void absorb(const HfKeys& other) {
    const std::vector<std::string> w = other.warnings();
    warnings_.insert(warnings_.end(), w.begin(), w.end());
  }
  // A sequence of strings, or nothing when the key is absent or null.
  std::optional<std::vector<std::string>> texts(const std::string& key) {
    const std::optional<YAML::Node> n = find(key);
    if (!n) return std::nullopt;
    std::vector<std::string> out;
    if (n->IsSequence()) {
      for (const YAML::Node& v : *n) {
        if (!yaml_is_text(v)) break;
        out.push_back(v.Scalar());
      }
      if (out.size() == n->size()) return out;
    }
    throw InputError(file_ + ": " + key + " must be a list of strings, got " + text(*n));
  }

  // The warnings, then one naming every key neither read nor free of cost.
  std::vector<std::string> warnings() const {
    std::vector<std::string> out = warnings_;
    std::string unread;
    for (const auto& kv : root_) {
      const std::string key = kv.first.Scalar();
      if (read_.count(key) || is_summary_key(key) ||
          std::find(std::begin(kFreeKeys), std::end(kFreeKeys), key) != std::end(kFreeKeys)) {
        continue;
      }
      unread += (unread.empty() ? "" : ", ") + shown_text(key) + "=" + text(kv.second);
    }
    if (!unread.empty()) out.push_back(file_ + ": not modelled, ignored: " + unread);
    return out;
  }

  // A value for messages and warnings: a string in quotes, a number as written, at most
  // kShownBytes of either (core/text.hpp).
  static std::string text(const YAML::Node& n) {
    if (n.IsScalar()) return yaml_is_text(n) ? quoted_text(n.Scalar(), '"') : shown_text(n.Scalar());
    if (n.IsSequence()) return std::to_string(n.size()) + " values";
    if (n.IsMap()) return "{...}";
    return "null";
  }

 private:
  I positive(const std::string& key, const YAML::Node& n) const {
    if (n.IsScalar() && !yaml_is_text(n)) {
      const std::string& s = n.Scalar();
      I v = 0;
      const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
      if (ec == std::errc() && ptr == s.data() + s.size() && v > 0) return v;
    }
    throw InputError(file_ + ": " + key + " must be a positive integer, got " + text(n));
  }

  static bool json_number(const YAML::Node& n, double& v) {
    return n.IsScalar() && !yaml_is_text(n) && YAML::convert<double>::decode(n, v);
  }

  std::string file_;
  YAML::Node root_;
  std::set<std::string> read_;
  std::vector<std::string> warnings_;
};

// The launch-line numerics (model/transformer.hpp: rope_theta, rope_scaling_factor, norm_epsilon)
// under the config class's key names; a key absent leaves the value unknown (0), since each
// class has its own default. Only Llama 3.1's "llama3" rope_scaling has a factor the launch lines
// can carry; another kind costs nothing either and stays a free key.
void read_numerics(HfKeys& k, Transformer& t, const char* theta_key, const char* epsilon_key) {
  if (theta_key != nullptr) t.rope_theta = k.number_or(theta_key, 0.0);
  t.norm_epsilon = k.number_or(epsilon_key, 0.0);
  if (const std::optional<YAML::Node> scaling = k.find("rope_scaling"); scaling && scaling->IsMap()) {
    const YAML::Node kind = (*scaling)["rope_type"] ? (*scaling)["rope_type"] : (*scaling)["type"];
    const YAML::Node factor = (*scaling)["factor"];
    if (kind && kind.IsScalar() && kind.Scalar() == "llama3" && factor && !factor.IsNull()) {
      t.rope_scaling_factor = k.number("rope_scaling.factor", factor);
    }
  }
  const auto out_of_range = [&](const char* key, double v, bool ok) {
    if (!ok) throw InputError(k.file() + ": " + key + " out of range, got " + std::to_string(v));
  };
  out_of_range(theta_key != nullptr ? theta_key : "rope_theta", t.rope_theta, t.rope_theta >= 0 && t.rope_theta < 1e12);
  out_of_range(epsilon_key, t.norm_epsilon, t.norm_epsilon >= 0 && t.norm_epsilon < 1);
  out_of_range("rope_scaling.factor", t.rope_scaling_factor,
               t.rope_scaling_factor == 0 || (t.rope_scaling_factor >= 1 && t.rope_scaling_factor <= 1024));
}

// The names of one config class's shape keys, and transformers' defaults (0: the key is required).
struct ShapeKeys {
  const char* hidden;
  const char* heads;
  const char* layers;
  const char* ffn;
  I ffn_per_hidden;  // the default ffn is ffn_per_hidden x hidden
  const char* positions;
  I positions_default;
  bool tie_default;  // tie_word_embeddings
};

// The shape every reader needs, and causal attention (all are decoders).
void read_shape(HfKeys& k, Transformer& t, const ShapeKeys& s) {
  t.e = k.integer(s.hidden);
  t.h = k.integer(s.heads);
  t.depth = k.integer(s.layers);
  t.f = s.ffn_per_hidden > 0 ? k.integer_or(s.ffn, s.ffn_per_hidden * t.e) : k.integer(s.ffn);
  t.vocab_size = k.integer("vocab_size");
  t.l = s.positions_default > 0 ? k.integer_or(s.positions, s.positions_default) : k.integer(s.positions);
  t.tie_embeddings = k.flag_or("tie_word_embeddings", s.tie_default);
  t.causal = true;
}

// Which blocks attend through the sliding window: transformers' layer_types ("sliding_attention"
// or "full_attention" per block) where the file has them, else every `global_every`-th block
// global (0: every block windowed).
void read_layer_types(HfKeys& k, Transformer& t, I global_every) {
  const std::optional<std::vector<std::string>> types = k.texts("layer_types");
  if (t.window == 0) return;
  t.global_every = global_every;
  if (!types) return;
  if (static_cast<I>(types->size()) != t.depth) {
    throw InputError(k.file() + ": layer_types has " + std::to_string(types->size()) +
                     " entries for num_hidden_layers=" + std::to_string(t.depth));
  }
  for (const std::string& type : *types) {
    if (type != "sliding_attention" && type != "full_attention") {
      throw InputError(k.file() + ": layer_types holds " + quoted_text(type, '"') +
                       ", not sliding_attention or full_attention");
    }
  }
  const auto full = [&](std::size_t i) { return (*types)[i] == "full_attention"; };
  const auto first_full = std::find(types->begin(), types->end(), "full_attention");
  if (first_full == types->end()) {
    t.global_every = 0;
    return;
  }
  if (std::find(types->begin(), types->end(), "sliding_attention") == types->end()) {
    t.window = 0;
    t.global_every = 0;
    return;
  }
  const I every = std::distance(types->begin(), first_full) + 1;
  t.global_every = every;
  for (std::size_t i = 0; i < types->size(); ++i) {
    if (full(i) != ((static_cast<I>(i) + 1) % every == 0)) {
      k.cannot_express("layer_types", std::to_string(types->size()) + " values",
                       "every " + std::to_string(every) + "-th block is costed as the global one", 0);
      return;
    }
  }
}

// The decoder every Llama-like config shares (LlamaConfig and its descendants in transformers:
// hidden_size, intermediate_size, num_attention_heads, num_key_value_heads, head_dim,
// num_hidden_layers, max_position_embeddings, vocab_size, tie_word_embeddings, hidden_act,
// attention_bias, mlp_bias, attention_dropout, sliding_window, layer_types): pre-norm RMSNorm
// blocks, a gated MLP, rotary positions, causal attention. `tie_default` is the config class's
// default for tie_word_embeddings; `windowed` whether a sliding_window in the file applies, and
// `global_every` which blocks attend globally where the file has no layer_types.
void read_llama_like(HfKeys& k, Transformer& t, bool tie_default, bool windowed = true, I global_every = 0) {
  read_shape(k, t, {"hidden_size", "num_attention_heads", "num_hidden_layers", "intermediate_size", 0,
                    "max_position_embeddings", 0, tie_default});
  t.kv_heads = k.integer_or("num_key_value_heads", t.h);
  t.mlp = MlpKind::SwiGlu;
  t.norm = NormKind::RmsNorm;
  t.bias = false;
  t.dropout = k.probability_or("attention_dropout", 0.0);
  read_numerics(k, t, "rope_theta", "rms_norm_eps");
  // Gemma's GeGLU has the shapes and nearly the flops of SwiGLU (a tanh GELU for the SiLU).
  for (const char* key : {"hidden_act", "hidden_activation"}) {
    const std::string act = k.text_or(key, "silu");
    if (act != "silu") k.cannot_express(key, shown_text(act), "the gated MLP is costed with SwiGLU's SiLU", 0);
  }
  // Gemma 2 and 3, Qwen3, gpt-oss, Mistral NeMo: heads of head_dim features, not hidden / heads.
  if (const I head_dim = k.integer_or("head_dim", t.e / t.h); head_dim * t.h != t.e) t.head_dim_given = head_dim;
  // LlamaConfig: attention_bias biases q, k, v and o; mlp_bias the MLP's three projections.
  const bool attention_bias = k.flag_or("attention_bias", false);
  const bool mlp_bias = k.flag_or("mlp_bias", false);
  if (attention_bias && mlp_bias) {
    t.bias = true;
  } else if (attention_bias) {
    t.qkv_bias = true;
    t.out_bias = true;
  } else if (mlp_bias) {
    k.cannot_express("mlp_bias", "true", "the MLP's biases are left out", t.depth * (2 * t.f + t.e));
  }
  if (windowed) t.window = k.integer_or("sliding_window", 0);
  else k.find("sliding_window");
  read_layer_types(k, t, global_every);
}

// The MLP parameters a block gains as a MoE block of `t` (router, routed and shared experts)
// over a dense one.
I moe_over_dense_mlp(const Transformer& t) {
  const I gated = 3 * t.e;
  return t.e * t.moe.experts + (t.moe.experts + t.moe.shared_experts) * gated * t.moe.ffn_dim - gated * t.f;
}

void read_llama(HfKeys& k, Transformer& t) { read_llama_like(k, t, false); }

void read_mixtral(HfKeys& k, Transformer& t) {
  read_llama_like(k, t, false);
  // MixtralConfig: every block's MLP routes to num_experts_per_tok of num_local_experts experts,
  // each of intermediate_size features.
  t.moe.experts = k.integer("num_local_experts");
  t.moe.top_k = k.integer("num_experts_per_tok");
  t.moe.ffn_dim = t.f;
}

void read_qwen2(HfKeys& k, Transformer& t) {
  // Qwen2Config keeps sliding_window even when use_sliding_window is false (the default).
  read_llama_like(k, t, false, k.flag_or("use_sliding_window", false));
  // modeling_qwen2.py: q_proj, k_proj and v_proj with bias=True, o_proj and the MLP without.
  t.qkv_bias = true;
}

// Qwen's sparse blocks (Qwen2MoeConfig, Qwen3MoeConfig): num_experts experts of
// moe_intermediate_size features, top num_experts_per_tok, in every decoder_sparse_step-th block
// (1-based) but those mlp_only_layers lists (0-based), which are dense.
void read_qwen_moe(HfKeys& k, Transformer& t) {
  t.moe.experts = k.integer("num_experts");
  t.moe.top_k = k.integer("num_experts_per_tok");
  t.moe.ffn_dim = k.integer("moe_intermediate_size");
  t.moe.every = k.integer_or("decoder_sparse_step", 1);
  const std::optional<YAML::Node> dense = k.find("mlp_only_layers");
  if (!dense || !dense->IsSequence() || dense->size() == 0) return;
  I listed = 0;
  for (const YAML::Node& n : *dense) {
    I layer = -1;
    if (n.IsScalar() && !yaml_is_text(n) && YAML::convert<I>::decode(n, layer) && layer >= 0 && layer < t.depth &&
        (layer + 1) % t.moe.every == 0) {
      ++listed;
    }
  }
  k.cannot_express("mlp_only_layers", HfKeys::text(*dense), "those blocks are costed as MoE blocks",
                   -listed * moe_over_dense_mlp(t));
}

void read_qwen2_moe(HfKeys& k, Transformer& t) {
  read_qwen2(k, t);
  read_qwen_moe(k, t);
  // modeling_qwen2_moe.py: one shared expert of shared_expert_intermediate_size features beside
  // the routed ones (whole multiples of moe_intermediate_size: that many shared experts), scaled
  // by a sigmoid gate of hidden_size weights.
  const I shared = k.integer_or("shared_expert_intermediate_size", 0);
  if (shared % t.moe.ffn_dim == 0) {
    t.moe.shared_experts = shared / t.moe.ffn_dim;
  } else {
    k.cannot_express("shared_expert_intermediate_size", std::to_string(shared), "the shared expert is left out",
                     t.moe_blocks() * 3 * t.e * shared);
  }
  if (shared > 0) {
    k.cannot_express("model_type", "qwen2_moe", "the shared expert's gate (hidden_size weights per MoE block) is left out",
                     t.moe_blocks() * t.e);
  }
}

void read_qwen3(HfKeys& k, Transformer& t) {
  read_llama_like(k, t, false, k.flag_or("use_sliding_window", false));
  // modeling_qwen3.py: an RMSNorm of head_dim on each query and key head (q_norm, k_norm).
  t.qk_norm = true;
}

void read_qwen3_moe(HfKeys& k, Transformer& t) {
  read_qwen3(k, t);
  read_qwen_moe(k, t);
}

void read_phi3(HfKeys& k, Transformer& t) {
  // Phi3Config: Llama's block with fused qkv and gate-up projections (the same weights), dropout
  // resid_pdrop on each sub-layer's output, every block windowed by sliding_window.
  read_llama_like(k, t, false);
  t.dropout = k.probability_or("resid_pdrop", 0.0);
  k.probability_or("embd_pdrop", 0);
}

void read_gpt_oss(HfKeys& k, Transformer& t) {
  // GptOssConfig (modeling_gpt_oss.py): Llama's block with heads of head_dim, biases on q, k, v
  // and o (attention_bias), a learned sink logit per head, sliding-window and full attention
  // alternating (layer_types), and every block's MLP routed to num_experts_per_tok of
  // num_local_experts SwiGLU experts of intermediate_size with biases, under a biased router.
  read_llama_like(k, t, false);
  t.attention_sinks = true;
  t.moe.experts = k.integer("num_local_experts");
  t.moe.top_k = k.integer("num_experts_per_tok");
  if (const I older = k.integer_or("experts_per_token", t.moe.top_k); older != t.moe.top_k) {
    throw InputError(k.file() + ": experts_per_token=" + std::to_string(older) + " differs from num_experts_per_tok=" +
                     std::to_string(t.moe.top_k));
  }
  t.moe.ffn_dim = t.f;
  t.moe.router_bias = true;
  t.moe.expert_bias = true;
}

void read_gemma(HfKeys& k, Transformer& t) { read_llama_like(k, t, true); }

// Gemma 2 and 3's tanh soft-capping of the scores and the logits: no weights.
void softcapping_named(HfKeys& k) {
  k.cannot_express_if_set("attn_logit_softcapping", "the scores' tanh soft-capping is left out", 0);
  k.cannot_express_if_set("final_logit_softcapping", "the logits' tanh soft-capping is left out", 0);
  k.find("cache_implementation");
}

void read_gemma2(HfKeys& k, Transformer& t) {
  // modeling_gemma2.py: a post_attention_layernorm and a post_feedforward_layernorm beside the
  // two pre-norms, every other block (the first of each pair) windowed.
  read_llama_like(k, t, true, true, 2);
  t.post_norms = true;
  softcapping_named(k);
  k.find("sliding_window_size");  // gemma2's older name of sliding_window
}

void read_gemma3_text(HfKeys& k, Transformer& t) {
  // modeling_gemma3.py: Gemma 2's block with QK-norm, five windowed blocks to a global one
  // (sliding_window_pattern, or layer_types).
  read_llama_like(k, t, true, true, k.integer_or("sliding_window_pattern", 6));
  t.post_norms = true;
  t.qk_norm = true;
  softcapping_named(k);
}

// A SigLIP vision tower (SiglipVisionConfig and its defaults) and Gemma 3's projection of it into
// the text model's `text_hidden` features.
I siglip_parameters(HfKeys& v, I text_hidden) {
  const I e = v.integer_or("hidden_size", 768), f = v.integer_or("intermediate_size", 3072);
  const I layers = v.integer_or("num_hidden_layers", 12), channels = v.integer_or("num_channels", 3);
  const I patch = v.integer_or("patch_size", 16), image = v.integer_or("image_size", 224);
  const I block = 4 * (e * e + e) + 2 * e * f + f + e + 2 * 2 * e;  // attention, MLP, two LayerNorms
  const I embeddings = channels * patch * patch * e + e + (image / patch) * (image / patch) * e;
  return layers * block + embeddings + 2 * e + e * text_hidden + e;  // post-LayerNorm, projection, its norm
}

// Gemma3TextConfig's defaults (transformers 4.50) for what a multimodal config's text_config
// leaves out.
constexpr std::pair<const char*, I> kGemma3TextDefaults[] = {
    {"hidden_size", 2304},         {"intermediate_size", 9216}, {"num_hidden_layers", 26},
    {"num_attention_heads", 8},    {"num_key_value_heads", 4},  {"head_dim", 256},
    {"max_position_embeddings", 131072}, {"vocab_size", 262208}, {"sliding_window", 4096}};

void read_gemma3(HfKeys& k, Transformer& t) {
  // Gemma3Config: the text model in text_config, a SigLIP vision tower in vision_config.
  HfKeys text = k.nested("text_config", kGemma3TextDefaults);
  read_gemma3_text(text, t);
  k.absorb(text);
  if (k.find("vision_config")) {
    HfKeys vision = k.nested("vision_config", {});
    k.cannot_express("vision_config", "{...}", "the SigLIP vision tower and its projection are left out",
                     siglip_parameters(vision, t.e));
  }
  for (const char* key : {"boi_token_index", "eoi_token_index", "image_token_index", "mm_tokens_per_image"}) k.find(key);
}

// DeepSeekMoE's blocks (DeepseekV2Config/V3Config and the configs that reuse them):
// n_routed_experts experts of moe_intermediate_size features, top num_experts_per_tok,
// n_shared_experts always active, in every moe_layer_freq-th block after the first
// first_k_dense_replace dense blocks (of intermediate_size); noaux_tc's router adds a bias per
// expert to its scores (e_score_correction_bias); num_nextn_predict_layers multi-token
// prediction modules (each a MoE block, a 2 x hidden_size -> hidden_size projection and three
// norms beside the model's embedding and head): model/transformer.hpp. group_limited_greedy and
// noaux_tc limit each token to topk_group of n_group expert groups (MoeOptions::groups).
void read_deepseek_moe(HfKeys& k, Transformer& t, const char* topk_method_default) {
  t.moe.experts = k.integer("n_routed_experts");
  t.moe.top_k = k.integer("num_experts_per_tok");
  t.moe.ffn_dim = k.integer("moe_intermediate_size");
  t.moe.shared_experts = k.count_or("n_shared_experts", 0);
  t.moe.every = k.integer_or("moe_layer_freq", 1);
  const std::string topk_method = k.text_or("topk_method", topk_method_default);
  t.moe.router_bias = topk_method == "noaux_tc";
  // group_limited_greedy and noaux_tc draw each token's experts from its topk_group best of
  // n_group groups (greedy ignores the groups)
  const I groups = k.integer_or("n_group", 1), group_top_k = k.integer_or("topk_group", groups);
  if ((topk_method == "group_limited_greedy" || topk_method == "noaux_tc") && groups > 1 && group_top_k < groups) {
    t.moe.groups = groups;
    t.moe.group_top_k = group_top_k;
  }
  if (const I dense = k.count_or("first_k_dense_replace", 0); dense > 0) {
    if (t.moe.every == 1) {
      t.moe.first_dense = dense;
    } else {
      k.cannot_express("first_k_dense_replace", std::to_string(dense), "those blocks are costed as MoE blocks",
                       -std::min(dense, t.depth) / t.moe.every * moe_over_dense_mlp(t));
    }
  }
  t.mtp_layers = k.count_or("num_nextn_predict_layers", 0);
}

void read_deepseek(HfKeys& k, Transformer& t) {
  read_llama_like(k, t, false);
  // DeepseekV2Config/V3Config: multi-head latent attention (q_lora_rank null: the query projected
  // directly; num_key_value_heads names no groups under it).
  if (const I kv_rank = k.integer_or("kv_lora_rank", 0); kv_rank > 0) {
    t.kv_heads = 0;
    t.mla.q_lora_rank = k.integer_or("q_lora_rank", 0);
    t.mla.kv_lora_rank = kv_rank;
    t.mla.qk_nope_head_dim = k.integer("qk_nope_head_dim");
    t.mla.qk_rope_head_dim = k.integer("qk_rope_head_dim");
    t.mla.v_head_dim = k.integer("v_head_dim");
  }
  read_deepseek_moe(k, t, "greedy");
}

void read_glm4_moe(HfKeys& k, Transformer& t) {
  // Glm4MoeConfig (modeling_glm4_moe.py): grouped-query attention of head_dim heads with biases on
  // q, k and v only (attention_bias; o_proj has none), an RMSNorm of head_dim on each query and key
  // head where use_qk_norm, rotary positions on partial_rotary_factor of each head (no weights), and
  // DeepSeekMoE's blocks under its noaux_tc router (Glm4MoeTopkRouter's e_score_correction_bias).
  read_llama_like(k, t, false);
  t.out_bias = false;
  t.qk_norm = k.flag_or("use_qk_norm", false);
  read_deepseek_moe(k, t, "noaux_tc");
}

void read_gpt2(HfKeys& k, Transformer& t) {
  // GPT2Config (defaults: n_positions 1024, n_inner None = 4 n_embd, resid_pdrop 0.1, tied):
  // LayerNorm, GELU MLP, biases, learned positions.
  read_shape(k, t, {"n_embd", "n_head", "n_layer", "n_inner", 4, "n_positions", 1024, true});
  k.find("n_ctx");  // the older name of n_positions
  t.learned_positions = true;
  read_numerics(k, t, nullptr, "layer_norm_epsilon");
  t.dropout = k.probability_or("resid_pdrop", 0.1);
  k.probability_or("embd_pdrop", 0);
  k.probability_or("attn_pdrop", 0);
  k.find("activation_function");
}

void read_gpt_neox(HfKeys& k, Transformer& t) {
  // GPTNeoXConfig (defaults: attention_bias true, use_parallel_residual true, untied, dropouts 0):
  // LayerNorm, GELU MLP, rotary positions.
  read_shape(k, t, {"hidden_size", "num_attention_heads", "num_hidden_layers", "intermediate_size", 0,
                    "max_position_embeddings", 0, false});
  t.bias = k.flag_or("attention_bias", true);
  read_numerics(k, t, "rotary_emb_base", "layer_norm_eps");
  // hidden_dropout_prob and attention_probs_dropout_prob: the names of configs before transformers 4.23.
  t.dropout = k.probability_or("hidden_dropout", k.probability_or("hidden_dropout_prob", 0.0));
  k.probability_or("attention_dropout", 0);
  k.probability_or("attention_probs_dropout_prob", 0);
  k.find("hidden_act");
  if (k.flag_or("use_parallel_residual", true)) {
    k.cannot_express("use_parallel_residual", "true", "attention and MLP are costed one after the other", 0);
  }
}

void read_falcon(HfKeys& k, Transformer& t) {
  // FalconConfig (defaults: max_position_embeddings 2048, multi_query true, parallel_attn true,
  // bias false, ffn_hidden_size 4 hidden_size, tied): LayerNorm, GELU MLP.
  read_shape(k, t, {"hidden_size", "num_attention_heads", "num_hidden_layers", "ffn_hidden_size", 4,
                    "max_position_embeddings", 2048, true});
  t.bias = k.flag_or("bias", false);
  read_numerics(k, t, "rope_theta", "layer_norm_epsilon");
  t.dropout = k.probability_or("hidden_dropout", 0.0);
  k.probability_or("attention_dropout", 0);
  k.find("activation");
  // The new decoder architecture (Falcon-40B/180B) has num_kv_heads groups; the old one is
  // multi-query (one key/value head) unless multi_query is false.
  const bool new_decoder = k.flag_or("new_decoder_architecture", false);
  const bool multi_query = k.flag_or("multi_query", true);
  const I kv = k.integer_or("num_kv_heads", t.h);
  t.kv_heads = new_decoder ? kv : multi_query ? 1 : t.h;
  if (k.flag_or("parallel_attn", true)) {
    k.cannot_express("parallel_attn", "true",
                     "attention and MLP are costed one after the other, each with its LayerNorm (the "
                     "block's one LayerNorm has as many weights with its shift)", 0);
  }
  if (k.flag_or("alibi", false)) k.cannot_express("alibi", "true", "the ALiBi bias on the scores is left out", 0);
  k.find("num_ln_in_parallel_attn");
}

struct Reader {
  std::string_view model_type;
  void (*read)(HfKeys&, Transformer&);
};

// transformers' model_type of each reader's config class.
constexpr std::array<Reader, 20> kReaders = {{
    {"deepseek_v2", read_deepseek},
    {"deepseek_v3", read_deepseek},
    {"falcon", read_falcon},
    {"gemma", read_gemma},
    {"gemma2", read_gemma2},
    {"gemma3", read_gemma3},
    {"gemma3_text", read_gemma3_text},
    {"gpt2", read_gpt2},
    {"gpt_neox", read_gpt_neox},
    {"glm4_moe", read_glm4_moe},
    {"gpt_oss", read_gpt_oss},
    // Kimi K2's config.json names DeepSeek-V3's architecture (DeepseekV3ForCausalLM, its
    // configuration_deepseek.DeepseekV3Config) under a model_type of its own
    {"kimi_k2", read_deepseek},
    {"llama", read_llama},
    {"mistral", read_llama},
    {"mixtral", read_mixtral},
    {"phi3", read_phi3},
    {"qwen2", read_qwen2},
    {"qwen2_moe", read_qwen2_moe},
    {"qwen3", read_qwen3},
    {"qwen3_moe", read_qwen3_moe},
}};

// The name a config.json gives its model: its folder's, or for a Hugging Face cache's snapshot
// (models--ORG--NAME/snapshots/REVISION/config.json) the repository's NAME.
std::string hf_name(const fs::path& file) {
  if (file.filename() == "config.json") {
    const fs::path dir = fs::absolute(file).parent_path();
    const fs::path repo = dir.parent_path().parent_path();
    const std::string repo_name = repo.filename().string();
    if (dir.parent_path().filename() == "snapshots" && repo_name.starts_with("models--") &&
        repo_name.rfind("--") > 6) {
      return repo_name.substr(repo_name.rfind("--") + 2);
    }
    if (!dir.filename().empty()) return dir.filename().string();
  }
  return file.stem().string();
}

bool is_hub_id(const std::string& id) {
  const std::size_t slash = id.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == id.size() || id.find('/', slash + 1) != std::string::npos) {
    return false;
  }
  for (const std::string_view end : {".json", ".yaml", ".yml"}) {
    if (id.ends_with(end)) return false;
  }
  return std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '.' || c == '-' || c == '_';
  }) && id.find("..") == std::string::npos;
}

fs::path hub_cache() {
  const auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  if (const std::string v = env("HF_HUB_CACHE"); !v.empty()) return v;
  if (const std::string v = env("HF_HOME"); !v.empty()) return fs::path(v) / "hub";
  if (const std::string v = env("XDG_CACHE_HOME"); !v.empty()) return fs::path(v) / "huggingface" / "hub";
  return fs::path(env("HOME")) / ".cache" / "huggingface" / "hub";
}
}  // namespace

bool is_hf_config(const fs::path& file) {
  if (file.extension() != ".json") return false;
  const YAML::Node root = load_yaml_file(file);
  return root.IsMap() && !root["embed_dim"];
}

std::optional<fs::path> hub_config(const std::string& id) {
  std::error_code ec;
  if (!is_hub_id(id) || fs::exists(id, ec)) return std::nullopt;
  const std::size_t slash = id.find('/');
  const fs::path repo = hub_cache() / ("models--" + id.substr(0, slash) + "--" + id.substr(slash + 1));
  const fs::path snapshots = repo / "snapshots";
  std::string revision;
  if (std::ifstream main(repo / "refs" / "main"); main && std::getline(main, revision) &&
      fs::exists(snapshots / revision / "config.json", ec)) {
    return snapshots / revision / "config.json";
  }
  std::optional<fs::path> newest;
  fs::file_time_type newest_time{};
  for (const auto& entry : fs::directory_iterator(snapshots, ec)) {
    const fs::path config = entry.path() / "config.json";
    if (!fs::exists(config, ec)) continue;
    const fs::file_time_type time = fs::last_write_time(config, ec);
    if (!newest || time > newest_time) {
      newest = config;
      newest_time = time;
    }
  }
  if (newest) return newest;
  throw InputError(id + ": no such file, and no " + (snapshots / "*" / "config.json").string() +
                   " in the local Hugging Face cache; fetch it (huggingface-cli download " + id +
                   " config.json) or give the path of its config.json");
}

std::vector<std::string> hf_model_types() {
  std::vector<std::string> out;
  for (const Reader& r : kReaders) out.emplace_back(r.model_type);
  return out;
}

HfModel load_hf_config(const fs::path& file) {
  const YAML::Node root = load_yaml_file(file);
  const std::string f = file.string();
  if (!root.IsMap()) throw InputError(f + ": expected a JSON object of keys to values");
  const YAML::Node type = root["model_type"];
  if (!type || !yaml_is_text(type)) {
    throw InputError(f + ": neither a perfsweep model (no embed_dim) nor a Hugging Face config (no model_type)");
  }
  const auto reader = std::find_if(kReaders.begin(), kReaders.end(),
                                   [&](const Reader& r) { return r.model_type == type.Scalar(); });
  if (reader == kReaders.end()) {
    std::string known;
    for (const std::string& t : hf_model_types()) known += (known.empty() ? "" : ", ") + t;
    throw InputError(f + ": Hugging Face model_type '" + shown_text(type.Scalar()) + "' has no reader; known: " + known);
  }
  HfKeys keys(f, root);
  HfModel out;
  out.model.name = hf_name(file);
  check_name(f + ": the model's name (its folder's or file's name)", out.model.name, NameUse::kLabel);
  reader->read(keys, out.model);
  check_model(out.model, f);
  out.warnings = keys.warnings();
  return out;
}

}  // namespace perfsweep
