#pragma once
// A launch line: one evaluated configuration as a training framework's own arguments, so that the
// layout estimate or configs chose can be run (docs/launch.md). Each framework's names are those
// of the parser source read for it (kLaunchFrameworks: repository, path, version); the tests check
// every line the writers give, over every shipped model and runtime, against that parser as
// scripts/extract_launch_parsers.py read it (test/data/launch/: names, kinds, choices and the rules
// the framework checks between arguments). What the framework cannot express, and what the
// environment must give, is said in notes ('#' lines), never left out silently.
#include <cstdint>
#include <string>
#include <vector>

#include "model/plan.hpp"
#include "model/runtime.hpp"
#include "model/transformer.hpp"

namespace perfsweep {

enum class LaunchFramework : std::uint8_t { Megatron, Nemo, Torchtitan };

// A framework and the source its argument names were read from.
struct LaunchFrameworkInfo {
  LaunchFramework framework;
  const char* name;     // as --launch spells it
  const char* display;  // as notes name it
  const char* source;   // repository, version and the file(s) holding its parser
  const char* gpus;     // how a run is given its GPU count
};
inline constexpr LaunchFrameworkInfo kLaunchFrameworks[] = {
    {LaunchFramework::Megatron, kLaunchFrameworkNames[0], "Megatron-LM",
     "NVIDIA/Megatron-LM core_v0.15.3 (309ffca6a405), megatron/training/arguments.py",
     "the world size torchrun starts, from which Megatron-LM derives the data-parallel size"},
    {LaunchFramework::Nemo, kLaunchFrameworkNames[1], "NeMo",
     "NVIDIA/NeMo 8cfedd720346 (v2.5.0rc0+113), nemo/lightning/pytorch/strategies/megatron_strategy.py and the "
     "Megatron-Core core_v0.14.0 configs it overrides",
     "trainer.num_nodes x trainer.devices"},
    {LaunchFramework::Torchtitan, kLaunchFrameworkNames[2], "torchtitan",
     "pytorch/torchtitan v0.2.2 (73a0e6979dd1), torchtitan/config/job_config.py", "NGPU x nodes"},
};

static_assert(std::size(kLaunchFrameworks) == std::size(kLaunchFrameworkNames), "a runtime names every framework");
const LaunchFrameworkInfo& launch_framework_info(LaunchFramework f);
// "megatron", "nemo" or "torchtitan"; InputError naming --launch and the value otherwise.
LaunchFramework parse_launch_framework(const std::string& text);

// One argument: a flag (Megatron-LM, torchtitan: "--name") or an override path (NeMo-Run:
// "trainer.strategy.name") and its value; an empty value is a switch.
struct LaunchArgument {
  std::string name;
  std::string value;
  // The value is several words, space-separated (argparse's nargs: "--sizes 4 2"), each its own
  // shell word; else one.
  bool words = false;
};

struct LaunchLine {
  LaunchFramework framework = LaunchFramework::Megatron;
  std::vector<std::string> notes;  // what the arguments leave to the user or cannot express
  std::vector<LaunchArgument> arguments;
};

// What a launch line is made from: the configuration as evaluated (the placement and stage
// partition chosen), the runtime it was costed under and the NVLink domain its placement refers to.
struct LaunchInput {
  const Transformer& model;
  const Layout& layout;
  const Runtime& runtime;
  std::int64_t global_batch = 0;
  std::int64_t nvlink_size = 1;  // GPUs per NVLink domain
};

// ConfigError for a strategy the framework has no equivalent of (2d SUMMA, 2d-seqp): the tools
// check it before any work.
void check_launch_strategy(LaunchFramework framework, Strategy strategy);

// The framework's arguments for the configuration (check_launch_strategy first).
LaunchLine launch_line(LaunchFramework framework, const LaunchInput& in);

// The arguments as one shell line: "--name value --switch" (Megatron-LM, torchtitan) or
// "name=value" (NeMo-Run); a value a shell would split is quoted.
std::string launch_arguments_text(const LaunchLine& line);
// The notes as "# ..." lines, then the arguments line, each ending in a newline.
std::string launch_text(const LaunchLine& line);

}  // namespace perfsweep
