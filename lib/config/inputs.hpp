#pragma once
// Input files into validated structs: systems (systems/*.yaml, or the reference's
// systems/config-*.json unchanged, since YAML parses JSON) and models (models/*.yaml).
// Every error is an InputError naming the file, the key and the offending value.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/system.hpp"
#include "model/transformer.hpp"

namespace perfsweep {

// Keys are the reference's (matrix_flops_fp16, hbm_bandwidth, ...; see system.hpp for units),
// plus an optional `name` (default: the file stem, without the reference's "config-" prefix
// for .json files). Unknown keys, missing required keys and out-of-range values are errors;
// `empirical: true` is rejected (the calibration feature replaces the reference's measured mode).
// An optional `calibration: PATH` (relative to the system file's directory, or absolute) names a
// calibration written by `comm fit` (config/calibration_file.hpp); it is loaded and validated
// here, and its errors name the system file, the key and the path.
System load_system(const std::filesystem::path& file);

// Keys: name (default: file stem), seq_len, embed_dim, num_heads, depth, ffn_dim
// (default 4 * embed_dim), dataset_samples (optional, samples per training run, for plots), and
// the options of model/transformer.hpp (docs/models.md): num_kv_heads, mlp (gelu|swiglu), norm
// (layernorm|rmsnorm), bias, dropout, causal, vocab_size, tie_embeddings, learned_positions,
// logits_dtype (fp32|bf16), moe {experts, top_k, ffn_dim, capacity_factor, every, shared_experts,
// first_dense, router_bias, expert_bias}, head_dim, out_bias, sliding_window, global_every,
// attention_sinks, qk_norm, post_norms, mla {q_lora_rank, kv_lora_rank, qk_nope_head_dim,
// qk_rope_head_dim, v_head_dim}, mtp_layers.
Transformer load_model(const std::filesystem::path& file);

// `kind` is "systems", "models" or "sweeps". An argument that is an existing file, contains a '/'
// or ends in .yaml/.yml/.json is a path. Anything else is a name, looked up as NAME.yaml,
// NAME.yml, then config-NAME.json in $PERFSWEEP_DATA_DIR/<kind> (if set), ./<kind>, and the
// source tree's <kind>; the first hit wins.
std::filesystem::path resolve_input(const std::string& name_or_path, std::string_view kind);

// A file shipped with the project's inputs (`relative` to the source tree, "validation/residuals.csv"),
// looked up under $PERFSWEEP_DATA_DIR, then ./, then the source tree; nothing where none holds it.
std::optional<std::filesystem::path> find_shipped_file(std::string_view relative);

System load_system_named(const std::string& name_or_path);
// read_model's model, without its warnings (tools log them through read_model).
Transformer load_model_named(const std::string& name_or_path);

// A model as a tool reads it, and what its file held that the model cannot express.
struct ModelInput {
  Transformer model;
  std::vector<std::string> warnings;  // one line each, naming the file and the key
};

// The file a model argument names: a folder's config.json, or resolve_input's file.
std::filesystem::path model_file(const std::string& name_or_path);

// `name_or_path`: a model name (as load_model_named), a model YAML, a Hugging Face config.json or
// a folder holding one (config/hf_config.hpp). seq_len > 0 replaces the file's sequence length
// (--seq-len), checked as the file's would be.
ModelInput read_model(const std::string& name_or_path, std::int64_t seq_len = 0);

// A system key's accepted range as messages print it: "[0.001, 1e+09] GB/s", "(0, 1]".
std::string system_key_range(const SystemKey& key);

// The whole file, for echoing inputs into output provenance.
std::string read_text(const std::filesystem::path& file);

// Canonical YAML of every key (doubles as "%.17g"), which load_system/load_model read back to
// identical values. `calibration` is written as the system file had it (a relative path reads
// back from a file in the same directory).
std::string system_to_yaml(const System& system);
std::string model_to_yaml(const Transformer& model);

}  // namespace perfsweep
