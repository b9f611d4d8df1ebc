// bench: single-core speed of the search on the paper grid (3 strategies x 2 models x the nine
// systems of sweeps/paper.yaml, GPU counts 4..16384), or on any list, model, batch and execution
// options. Prints numbers; asserts nothing.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <string>

#include "common/execution_options.hpp"
#include "common/cli.hpp"
#include "common/exit_codes.hpp"
#include "core/limits.hpp"
#include "config/inputs.hpp"
#include "config/runtime_file.hpp"
#include "config/system_list.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "io/report.hpp"
#include "search/search.hpp"

using namespace perfsweep;

namespace {
// GPU counts run from --n-min up to this by doubling.
constexpr std::int64_t kMaxBenchGpus = 16384;
constexpr std::int64_t kMaxRepeat = 1000;

// A rate or share printed with `format`, or "-" where its denominator is zero (no candidate: a
// batch no layout divides), which would print inf or nan.
std::string ratio(const char* format, double numerator, double denominator) {
  if (!(denominator > 0)) return "-";
  char text[64];
  std::snprintf(text, sizeof text, format, numerator / denominator);
  return text;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench: candidates evaluated per second on one core, and the wall time of the paper grid"};
  std::string systems = "paper";
  std::vector<std::string> models{"gpt3_1T", "vit_era5"};
  std::vector<std::string> strategies{"1d", "2d", "2d-seqp"};
  std::int64_t repeat = 1;
  std::string system_override;
  std::int64_t global_batch = 4096, n_min = 4;
  ExecutionFlags exec;
  app.add_option("--global-batch-size", global_batch, "samples per optimizer step")->capture_default_str();
  app.add_option("--n-min", n_min, "smallest GPU count (powers of two up to 16384)")->capture_default_str();
  add_execution_options(app, exec, true);
  app.add_option("--systems", systems, "system list (sweeps/NAME.yaml or path)")->capture_default_str();
  app.add_option("--models", models, "models")->capture_default_str();
  app.add_option("--strats", strategies, "strategies")->capture_default_str();
  app.add_option("--repeat", repeat, "repetitions (the best time is reported)")->capture_default_str();
  app.add_option("--system-override", system_override,
                 "one system (name or YAML path, e.g. systems/H100-calibrated.yaml) in place of each system of the "
                 "list, keeping the list's NVLink sizes");
  cli::Verbosity verbosity;
  cli::add_common_flags(app, verbosity);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli::exit_for(app, e) == 0 ? 0 : 2;
  }
  cli::use_stderr_log("bench", verbosity);
  cli::log_start(argc, argv, 1);

  try {
    check_count(global_batch, kMaxGlobalBatch, "--global-batch-size");
    check_count(n_min, kMaxBenchGpus, "--n-min");
    check_count(repeat, kMaxRepeat, "--repeat");
    const auto choices = load_system_list(resolve_input(systems, "sweeps"));
    if (!system_override.empty()) std::printf("every system replaced by %s\n", system_override.c_str());
    std::printf("%-8s %-10s %8s %12s %10s %14s %12s %11s %10s\n", "strategy", "model", "systems", "candidates",
                "seconds", "candidates/s", "us/candidate", "over HBM %", "blocks");
    std::int64_t grid_candidates = 0;
    double grid_seconds = 0;
    for (const std::string& strat : strategies) {
      for (const std::string& model_name : models) {
        SearchProblem p;
        p.strategy = parse_strategy(strat);
        p.model = load_model_named(model_name);
        p.global_batch = global_batch;
        p.exec = parse_execution_choices(exec);
        check_execution_for_model(p.exec, p.model);
        double best = 1e300;
        std::int64_t candidates = 0, infeasible = 0, blocks = 0;
        int n_systems = 0;
        for (std::int64_t r = 0; r < repeat; ++r) {
          candidates = 0;
          infeasible = 0;
          blocks = 0;
          n_systems = 0;
          const auto t0 = std::chrono::steady_clock::now();
          for (const SystemChoice& c : choices) {
            const System base = load_system_named(system_override.empty() ? c.system : system_override);
            for (std::int64_t nvs : c.nvs) {
              p.system = base;
              p.system.nvlink_size = nvs;
              p.runtime = choose_runtime(exec.runtime, base, p.model);
              ExecutionChoices choices_run = parse_execution_choices(exec);
              check_runtime_choices(p.system, p.runtime, p.strategy, choices_run);
              p.exec = choices_run;
              Searcher searcher(p);
              SearchCounters counters;
              for (std::int64_t n = n_min; n <= kMaxBenchGpus; n *= 2) searcher.run_all(n, counters);
              candidates += counters.candidates;
              infeasible += counters.infeasible_memory;
              blocks += counters.module_evaluations;
              ++n_systems;
            }
          }
          best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        const auto n_candidates = static_cast<double>(candidates);
        std::printf("%-8s %-10s %8d %12lld %10.3f %14s %12s %11s %10lld\n", strat.c_str(), model_name.c_str(),
                    n_systems, static_cast<long long>(candidates), best, ratio("%.4g", n_candidates, best).c_str(),
                    ratio("%.4f", 1e6 * best, n_candidates).c_str(),
                    ratio("%.1f", 100.0 * static_cast<double>(infeasible), n_candidates).c_str(),
                    static_cast<long long>(blocks));
        grid_candidates += candidates;
        grid_seconds += best;
      }
    }
    const auto n_grid = static_cast<double>(grid_candidates);
    std::printf("%-8s %-10s %8s %12lld %10.3f %14s %12s\n", "grid", "all", "", static_cast<long long>(grid_candidates),
                grid_seconds, ratio("%.4g", n_grid, grid_seconds).c_str(),
                ratio("%.4f", 1e6 * grid_seconds, n_grid).c_str());
    std::printf("reference: about 7 ms per candidate (105 s for the 15,098 candidates of 1d gpt3_1T on one system)\n");
    std::printf("speed-up over the reference: %sx\n", ratio("%.0f", 7e-3 * n_grid, grid_seconds).c_str());
    flush_stdout();
  } catch (...) {
    const cli::ErrorExit e = cli::current_error_exit();
    cli::print_error("bench", e);
    return e.code;
  }
  return 0;
}
