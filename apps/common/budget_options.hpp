#pragma once
// --tokens and --gpu-hour-cost (estimate, configs): the token budget whose days, GPU-hours and
// cost a tool prints beside each configuration (model/efficiency.hpp).
#include <CLI/CLI.hpp>

#include <cmath>
#include <string>

#include "core/error.hpp"

namespace perfsweep::cli {

struct BudgetOptions {
  double tokens = 0, gpu_hour_cost = 0;

  void add_to(CLI::App& app) {
    app.add_option("--tokens", tokens, "tokens to train on, e.g. 15e12: prints the days, steps and GPU-hours")
        ->check(CLI::Range(0.0, 1e18));
    app.add_option("--gpu-hour-cost", gpu_hour_cost, "price of one GPU-hour: with --tokens, prints the cost")
        ->check(CLI::Range(0.0, 1e9));
  }
  // CLI11's range lets NaN through.
  void check() const {
    for (const auto& [flag, v] : {std::pair{"--tokens", tokens}, std::pair{"--gpu-hour-cost", gpu_hour_cost}}) {
      if (!std::isfinite(v)) throw InputError(std::string(flag) + " must be a finite number, got " + std::to_string(v));
    }
  }
};

}  // namespace perfsweep::cli
