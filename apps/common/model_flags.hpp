#pragma once
// --model and --seq-len, as every tool that costs one model takes them, and the model read with
// its warnings logged (the keys of a Hugging Face config the model cannot express).
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "config/inputs.hpp"
#include "model/parameters.hpp"

namespace perfsweep::cli {

// The system estimate and configs use when none is given (sweep's default is the paper's nine).
inline constexpr const char* kDefaultSystem = "A100";

inline void add_model_flags(CLI::App& app, std::string& model, std::int64_t& seq_len) {
  app.add_option("--model", model,
                 "model: a name (models/NAME.yaml), a model YAML, or a Hugging Face config.json or the folder "
                 "holding one")
      ->capture_default_str();
  app.add_option("--seq-len", seq_len, "tokens per sample, replacing the model's (a Hugging Face config's is "
                                       "max_position_embeddings)")
      ->check(CLI::PositiveNumber);
}

inline Transformer read_model_logged(const std::string& model, std::int64_t seq_len) {
  ModelInput in = read_model(model, seq_len);
  for (const std::string& w : in.warnings) spdlog::warn("{}", w);
  spdlog::info("model {}: {}", in.model.name, parameters_text(count_parameters(in.model), in.model.is_moe()));
  return in.model;
}

}  // namespace perfsweep::cli
