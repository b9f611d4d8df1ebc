#pragma once
// estimate's flags that describe the configuration it costs (model, system, runtime, degrees,
// placements, execution options, stages, budget), and the request they make (search/estimate.hpp):
// the one parser `estimate` and `validate runs` (each row of a validation set) use, so that a
// row's flags mean what they mean on estimate's command line, with estimate's defaults.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/attention_options.hpp"
#include "common/axis_options.hpp"
#include "common/budget_options.hpp"
#include "config/execution_flags.hpp"
#include "search/estimate.hpp"

namespace perfsweep {

struct EstimateOptions {
  std::string model = "gpt3_1T", system = "A100", strat = "1d";  // system: cli::kDefaultSystem
  std::optional<std::int64_t> nvs;
  std::int64_t global_batch = 4096;
  std::int64_t seq_len = 0;  // 0: the model's
  std::int64_t mbs = 1, nb = 0;
  AxisFlags<std::int64_t> axes;  // --tp --tp1 --tp2 --dp --pp and the --nv-* shares (model/axes.hpp)
  AttentionOptions attention;
  ExecutionFlags exec;
  // --pipeline-layout: Megatron-Core's pipeline_model_parallel_layout ("" not given;
  // config/pipeline_layout.hpp), the stages' blocks in place of --first/--last-stage-blocks.
  std::string pipeline_layout;
  bool train_step = false;
  cli::BudgetOptions budget;
};

// The configuration's flags on `app`, with estimate's help and defaults.
void add_estimate_flags(CLI::App& app, EstimateOptions& o);

// The request the flags describe: the model, system and runtime read, every degree and option
// checked (InputError naming the flag and value; ConfigError for a configuration the model refuses).
EstimateRequest estimate_request(const EstimateOptions& o);

// A command line of estimate's configuration flags (no program name), parsed by a parser of its
// own as estimate parses its command line: the options, or InputError with CLI11's message
// ("unknown flag --tpp", "--tp: Value two not ...").
struct ParsedEstimateFlags {
  std::unique_ptr<CLI::App> app;  // keeps the options' CLI11 state (AxisFlags::given)
  std::unique_ptr<EstimateOptions> options;
};
ParsedEstimateFlags parse_estimate_flags(const std::vector<std::string>& args);

}  // namespace perfsweep
