#pragma once
// Runtime files (runtimes/*.yaml, docs/runtimes.md) into a checked Runtime: every key declared
// once in kRuntimeKeys with its unit and range; unknown keys, values of the wrong kind and values
// out of range are InputErrors naming the file, the key and the value.
#include <filesystem>
#include <string>

#include "model/runtime.hpp"
#include "model/system.hpp"
#include "model/transformer.hpp"

namespace perfsweep {

Runtime load_runtime(const std::filesystem::path& file);

// Every key of the runtime (numbers as "%.17g"), which load_runtime reads back to the same
// runtime (its `file` and `content_hash` those of the file read). `states` is written only when
// the runtime gives its bytes per parameter.
std::string runtime_to_yaml(const Runtime& runtime);

// `reference` is the built-in paper model (runtimes/reference.yaml states the same and loads to
// it); another name is looked up in runtimes/ as models and systems are (resolve_input); a path
// is loaded as it is.
Runtime load_runtime_named(const std::string& name_or_path);

// The runtime a tool uses (docs/runtimes.md): `given` when not empty (--runtime); else the system
// file's `runtime:`; else `megatron` for a model with options beyond the paper's (GQA, SwiGLU, a
// vocabulary, ...), whose published runs are framework runs; else `reference`, so the paper's
// models on the paper's systems stay the reference's bit for bit.
std::string default_runtime_name(const std::string& given, const System& system, const Transformer& model);
Runtime choose_runtime(const std::string& given, const System& system, const Transformer& model);

// One GPU's whole step as PyTorch eager with bf16 autocast runs it (runtimes/pytorch_amp.yaml):
// what `validate train` checks against the H100's measured steps and `estimate --train-step` uses.
inline constexpr const char* kTrainStepRuntime = "pytorch_amp";

// "megatron (runtimes/megatron.yaml, fnv1a 0123456789abcdef)": what outputs record.
std::string runtime_label(const Runtime& rt);
// The content hash as 16 hex digits ("" for the built-in reference).
std::string runtime_hash_hex(const Runtime& rt);

}  // namespace perfsweep
