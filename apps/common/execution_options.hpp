#pragma once
// The execution-option flags of `estimate`, `configs` and `sweep` (parsed by
// config/execution_flags.hpp; `sweep` and `configs` take lists, `estimate` one value each).
#include <CLI/CLI.hpp>
#include <string>

#include "config/execution_flags.hpp"

namespace perfsweep {

inline void add_execution_options(CLI::App& app, ExecutionFlags& f, bool lists) {
  const std::string each = lists ? " (a comma-separated list: each is tried)" : "";
  for (std::size_t i = 0; i < kExecutionOptions.size(); ++i) {
    const ExecutionOption& o = kExecutionOptions[i];
    if (!o.searched()) continue;
    std::string values;  // a named option's accepted names, from its table
    if (o.values == OptionValues::Named) {
      for (std::size_t k = 0; k < o.accepted; ++k) values += (k == 0 ? " (one of: " : ", ") + std::string(o.names[k]);
      values += ")";
    }
    app.add_option(o.flag, f.lists[i], o.help + values + each)->capture_default_str();
  }
  app.add_option("--cp", f.cp,
                 "context-parallel degree (1d): GPUs each sequence is split over (Megatron-Core's load-balanced "
                 "causal split; weights replicated, joining the data-parallel reduction; docs/context_parallel.md)" +
                     each)
      ->capture_default_str();
  app.add_option("--runtime", f.runtime,
                 "how a training framework executes each configuration: reference (the paper's model), megatron, "
                 "megatron_tp_overlap, nemo, deepspeed, fsdp, nanotron, llama3, pytorch_amp (runtimes/) or a runtime "
                 "file; default: the system file's runtime, else megatron for a model with options beyond the "
                 "paper's, else reference (docs/runtimes.md)");
}

// The pipeline's partition (`estimate`, `configs`: one layout's, not a search dimension).
inline void add_stage_options(CLI::App& app, ExecutionFlags& f) {
  for (const char* key : {"first_stage_blocks", "last_stage_blocks"}) {
    const ExecutionOption& o = *find_execution_option(key);
    app.add_option(o.flag, *key == 'f' ? f.first_stage_blocks : f.last_stage_blocks, o.help)->capture_default_str();
  }
}

}  // namespace perfsweep
