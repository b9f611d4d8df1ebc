#pragma once
// Hugging Face config.json files (the `config.json` a model repository publishes) into the
// Transformer of model/transformer.hpp. One reader per transformers `model_type`; a key a reader
// does not use and does not know to be free of cost (token ids, epsilons, rope settings) is named
// in a warning, never dropped silently, and so is a key whose effect the model cannot express
// (a sliding window, multi-head latent attention).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "model/transformer.hpp"

namespace perfsweep {

struct HfModel {
  Transformer model;
  std::vector<std::string> warnings;  // "FILE: key=value ...: what is costed instead"
};

// Whether `file` is read as a Hugging Face config: a .json file without perfsweep's `embed_dim`.
bool is_hf_config(const std::filesystem::path& file);

// The model of `file`. Its name is the folder holding config.json (the repository's name), or the
// file's stem for another file name; seq_len is max_position_embeddings (n_positions for GPT-2),
// or the transformers config class's default where the file leaves it out. Throws InputError for a
// file without model_type, a model_type no reader knows (the message lists the known ones), and
// missing or bad values.
HfModel load_hf_config(const std::filesystem::path& file);

// A Hugging Face Hub id (ORG/NAME: one '/', letters, digits, '.', '-' and '_', no .json/.yaml/.yml
// ending) that names no existing file: its config.json in the local Hugging Face cache
// ($HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub), the snapshot refs/main names or else the newest. Nothing for an
// argument not shaped as a hub id; throws InputError naming the file to fetch when the cache
// lacks it.
std::optional<std::filesystem::path> hub_config(const std::string& id);

// The model_types load_hf_config reads, in alphabetical order.
std::vector<std::string> hf_model_types();

}  // namespace perfsweep
