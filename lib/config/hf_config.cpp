#include "config/hf_config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <iterator>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>

#include "config/inputs.hpp"
#include "config/yaml_file.hpp"
#include "core/error.hpp"
#include "core/text.hpp"

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
    "topk_method", "n_group", "topk_group", "ep_size", "bos_token", "eos_token", "classifier_dropout",
    "max_window_layers", "use_sliding_window", "scale_attn_weights", "reorder_and_upcast_attn",
    "scale_attn_by_inverse_layer_idx", "query_pre_attn_scalar", "quantization_config", "use_mrope",
    "apply_residual_connection_post_layernorm"};

// GPT-2's sequence-classification head settings (GPT2DoubleHeadsModel), unused by a language model.
bool is_summary_key(std::string_view key) { return key.starts_with("summary_") || key.starts_with("task_specific"); }

// One config.json: reads values by key and remembers which keys were read, so the rest can be
// named in a warning.
class HfKeys {
 public:
  HfKeys(const fs::path& file, YAML::Node root) : file_(file.string()), root_(std::move(root)) {}

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

  // A key the model cannot express: "FILE: key=value: instead".
  void cannot_express(const std::string& key, const std::string& value, const std::string& instead) {
    read_.insert(key);
    warnings_.push_back(file_ + ": " + key + "=" + value + " cannot be expressed: " + instead);
  }
  // The same for a key whose value is in the file, when it is there and not null.
  void cannot_express_if_set(const std::string& key, const std::string& instead) {
    if (const std::optional<YAML::Node> n = find(key)) cannot_express(key, text(*n), instead);
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

// The decoder every Llama-like config shares (LlamaConfig and its descendants in transformers:
// hidden_size, intermediate_size, num_attention_heads, num_key_value_heads, num_hidden_layers,
// max_position_embeddings, vocab_size, tie_word_embeddings, hidden_act, attention_dropout):
// pre-norm RMSNorm blocks, a gated MLP, no biases, rotary positions, causal attention.
// `tie_default` is the config class's default for tie_word_embeddings; `windowed` whether a
// sliding_window in the file applies.
void read_llama_like(HfKeys& k, Transformer& t, bool tie_default, bool windowed = true) {
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
    if (act != "silu") k.cannot_express(key, shown_text(act), "the gated MLP is costed with SwiGLU's SiLU");
  }
  if (const I head_dim = k.integer_or("head_dim", t.e / t.h); head_dim * t.h != t.e) {
    k.cannot_express("head_dim", std::to_string(head_dim),
                     "attention is costed with hidden_size / num_attention_heads = " + std::to_string(t.e / t.h) +
                         " features per head");
  }
  // LlamaConfig: attention_bias biases q, k, v and o; mlp_bias the MLP's three projections.
  const bool attention_bias = k.flag_or("attention_bias", false);
  const bool mlp_bias = k.flag_or("mlp_bias", false);
  if (attention_bias && mlp_bias) {
    t.bias = true;
  } else if (attention_bias) {
    t.qkv_bias = true;
    k.cannot_express("attention_bias", "true", "o_proj's bias is left out (q, k and v biases are costed)");
  } else if (mlp_bias) {
    k.cannot_express("mlp_bias", "true", "the MLP's biases are left out");
  }
  if (windowed) {
    k.cannot_express_if_set("sliding_window", "attention is costed over the whole sequence");
  } else {
    k.find("sliding_window");
  }
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

void read_gemma(HfKeys& k, Transformer& t) { read_llama_like(k, t, true); }

void read_gemma2(HfKeys& k, Transformer& t) {
  read_llama_like(k, t, true);
  // modeling_gemma2.py: post_attention_layernorm and post_feedforward_layernorm beside the two
  // pre-norms, and tanh soft-capping of the attention scores and of the final logits.
  k.cannot_express("model_type", "gemma2", "its post-attention and post-feedforward RMSNorms (2 x hidden_size "
                                           "weights per block) are left out");
  k.cannot_express_if_set("attn_logit_softcapping", "the scores' tanh soft-capping is left out");
  k.cannot_express_if_set("final_logit_softcapping", "the logits' tanh soft-capping is left out");
  k.find("cache_implementation");
  k.find("sliding_window_size");  // gemma2's older name of sliding_window
}

void read_deepseek(HfKeys& k, Transformer& t) {
  read_llama_like(k, t, false);
  // DeepseekV2Config/V3Config: n_routed_experts experts of moe_intermediate_size features, top
  // num_experts_per_tok, n_shared_experts always active, in every moe_layer_freq-th block after
  // the first first_k_dense_replace dense blocks (of intermediate_size).
  t.moe.experts = k.integer("n_routed_experts");
  t.moe.top_k = k.integer("num_experts_per_tok");
  t.moe.ffn_dim = k.integer("moe_intermediate_size");
  t.moe.shared_experts = k.integer_or("n_shared_experts", 0);
  t.moe.every = k.integer_or("moe_layer_freq", 1);
  if (const I dense = k.integer_or("first_k_dense_replace", 0); dense > 0 && t.moe.every == 1) {
    k.cannot_express("first_k_dense_replace", std::to_string(dense), "those blocks are costed as MoE blocks");
  }
  for (const char* key : {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"}) {
    k.cannot_express_if_set(key, "multi-head latent attention is costed as multi-head attention");
  }
  k.cannot_express_if_set("num_nextn_predict_layers", "the multi-token prediction module is left out");
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
    k.cannot_express("use_parallel_residual", "true", "attention and MLP are costed one after the other");
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
                     "block's one LayerNorm has as many weights with its shift)");
  }
  if (k.flag_or("alibi", false)) k.cannot_express("alibi", "true", "the ALiBi bias on the scores is left out");
  k.find("num_ln_in_parallel_attn");
}

struct Reader {
  std::string_view model_type;
  void (*read)(HfKeys&, Transformer&);
};

// transformers' model_type of each reader's config class.
constexpr std::array<Reader, 11> kReaders = {{
    {"deepseek_v2", read_deepseek},
    {"deepseek_v3", read_deepseek},
    {"falcon", read_falcon},
    {"gemma", read_gemma},
    {"gemma2", read_gemma2},
    {"gpt2", read_gpt2},
    {"gpt_neox", read_gpt_neox},
    {"llama", read_llama},
    {"mistral", read_llama},
    {"mixtral", read_mixtral},
    {"qwen2", read_qwen2},
}};

std::string hf_name(const fs::path& file) {
  if (file.filename() == "config.json") {
    const fs::path dir = fs::absolute(file).parent_path();
    if (!dir.filename().empty()) return dir.filename().string();
  }
  return file.stem().string();
}
}  // namespace

bool is_hf_config(const fs::path& file) {
  if (file.extension() != ".json") return false;
  const YAML::Node root = load_yaml_file(file);
  return root.IsMap() && !root["embed_dim"];
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
  HfKeys keys(file, root);
  HfModel out;
  out.model.name = hf_name(file);
  check_name(f + ": the model's name (its folder's or file's name)", out.model.name, NameUse::kLabel);
  reader->read(keys, out.model);
  check_model(out.model, f);
  out.warnings = keys.warnings();
  return out;
}

}  // namespace perfsweep
