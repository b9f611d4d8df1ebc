#pragma once
// --launch (estimate, configs): the chosen configuration as a training framework's own arguments
// (io/launch.hpp, docs/launch.md).
#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "io/launch.hpp"

namespace perfsweep::cli {

struct LaunchOptions {
  std::string framework;  // empty: no launch line

  void add_to(CLI::App& app, const char* which) {
    app.add_option("--launch", framework,
                   std::string("print ") + which +
                       " as a framework's arguments: megatron (Megatron-LM pretrain_gpt.py), nemo (NeMo 2.0 recipe "
                       "overrides) or torchtitan (train.py flags); docs/launch.md");
  }
  // The framework asked for; InputError for a name that is none (checked before any work).
  std::optional<LaunchFramework> parse() const {
    if (framework.empty()) return std::nullopt;
    return parse_launch_framework(framework);
  }
};

}  // namespace perfsweep::cli
