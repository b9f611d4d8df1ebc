// bench: single-core speed of the search on the paper grid (3 strategies x 2 models x the nine
// systems of sweeps/paper.yaml, GPU counts 4..16384), or on any list, model, batch and execution
// options. Prints numbers; asserts nothing.
#include <CLI/CLI.hpp>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <string>

#include "common/execution_options.hpp"
#include "common/cli.hpp"
#include "common/tool.hpp"
#include "core/limits.hpp"
#include "config/inputs.hpp"
#include "config/runtime_file.hpp"
#include "config/system_list.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "io/report.hpp"
#include "search/configs.hpp"
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
// What one timed pass over the grid of a strategy and model found.
struct GridPass {
  double seconds = 1e300;      // wall, best of the repeats
  double cpu_seconds = 1e300;  // this process's CPU time, best of the repeats
  SearchCounters counters;
  int systems = 0;
  std::vector<std::vector<Candidate>> tops;  // per system and GPU count, of the last repeat
};

double cpu_seconds_now() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

// configs' rows kept by throughput at one GPU count, walked in full and pruned (ConfigRanges::prune):
// both times, the layouts the bound skipped, and whether the rows are the same bit for bit.
bool compare_configs(const System& sys, const Transformer& model, Strategy strategy, const Runtime& runtime,
                     ExecutionChoices choices, std::int64_t n_gpus, std::int64_t global_batch, std::size_t top) {
  ConfigRanges r;
  r.runtime = runtime;
  check_runtime_choices(sys, runtime, strategy, choices);
  r.choices = choices;
  r.keep = top;
  r.by_throughput = true;
  const std::int64_t points = count_configs(sys, model, strategy, n_gpus, global_batch, r, kMaxConfigPoints);
  auto timed = [&](bool prune, double& wall, double& cpu) {
    r.prune = prune;
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_seconds_now();
    ConfigSweep sweep = sweep_configs(sys, model, strategy, n_gpus, global_batch, r);
    wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    cpu = cpu_seconds_now() - c0;
    return sweep;
  };
  double wall_all = 0, cpu_all = 0, wall_pruned = 0, cpu_pruned = 0;
  const ConfigSweep all = timed(false, wall_all, cpu_all);
  const ConfigSweep pruned = timed(true, wall_pruned, cpu_pruned);
  auto candidates = [](const ConfigSweep& sweep) {
    std::vector<Candidate> out;
    for (const ConfigRow& row : sweep.rows) out.push_back({row.throughput, row.totals.mem, row.layout, row.totals});
    return out;
  };
  bool identical = identical_lists(candidates(all), candidates(pruned));
  for (std::size_t i = 0; identical && i < all.rows.size(); ++i) identical = all.rows[i].fits == pruned.rows[i].fits;
  std::printf("configs %s %s on %s, %lld GPUs, batch %lld, top %zu: %lld configurations; full walk %.3f s (CPU %.3f), "
              "pruned %.3f s (CPU %.3f), %sx; %lld subtrees and %lld layouts skipped; rows %s\n",
              std::string(strategy_name(strategy)).c_str(), model.name.c_str(), sys.name.c_str(),
              static_cast<long long>(n_gpus),
              static_cast<long long>(global_batch), top, static_cast<long long>(points), wall_all, cpu_all,
              wall_pruned, cpu_pruned, ratio("%.1f", wall_all, wall_pruned).c_str(),
              static_cast<long long>(pruned.pruned_subtrees), static_cast<long long>(pruned.pruned_layouts),
              identical ? "identical bit for bit" : "DIFFERENT");
  return identical;
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
  std::size_t top_n = 10;
  bool no_prune = false, compare_prune = false, configs_mode = false;
  std::string configs_system = "H100-calibrated";
  std::int64_t configs_gpus = 1024;
  ExecutionFlags exec;
  app.add_option("--global-batch-size", global_batch, "samples per optimizer step")->capture_default_str();
  app.add_option("--n-min", n_min, "smallest GPU count (powers of two up to 16384)")->capture_default_str();
  app.add_option("--top-n", top_n, "configurations kept per GPU count")->capture_default_str();
  add_execution_options(app, exec, true);
  app.add_option("--systems", systems, "system list (sweeps/NAME.yaml or path)")->capture_default_str();
  app.add_option("--models", models, "models")->capture_default_str();
  app.add_option("--strats", strategies, "strategies")->capture_default_str();
  app.add_option("--repeat", repeat, "repetitions (the best time is reported)")->capture_default_str();
  app.add_option("--system-override", system_override,
                 "one system (name or YAML path, e.g. systems/H100-calibrated.yaml) in place of each system of the "
                 "list, keeping the list's NVLink sizes");
  app.add_flag("--no-prune", no_prune, "the exhaustive search: every configuration that fits costed");
  app.add_flag("--compare-prune", compare_prune,
               "each grid searched exhaustively and pruned, one after the other: both times, and whether every "
               "top-N is the same bit for bit (exit 1 if not)");
  app.add_flag("--compare-configs", configs_mode,
               "configs' rows at one GPU count (--n-gpus, --system, --top-n) for each strategy and model, walked in "
               "full and pruned: both times, and whether the rows are the same bit for bit (exit 1 if not)");
  app.add_option("--system", configs_system, "with --compare-configs: the system")->capture_default_str();
  app.add_option("--n-gpus", configs_gpus, "with --compare-configs: the GPU count")->capture_default_str();
  cli::Verbosity verbosity;
  cli::add_common_flags(app, verbosity);
  return cli::run_tool("bench", app, argc, argv, verbosity, [&]() -> int {
    bool all_identical = true;
    check_count(global_batch, kMaxGlobalBatch, "--global-batch-size");
    check_count(n_min, kMaxBenchGpus, "--n-min");
    check_count(repeat, kMaxRepeat, "--repeat");
    check_count(static_cast<std::int64_t>(top_n), kMaxTopN, "--top-n");
    if (configs_mode) {
      check_count(configs_gpus, kMaxGpuCount, "--n-gpus");
      const System sys = load_system_named(configs_system);
      for (const std::string& strat : strategies) {
        for (const std::string& model_name : models) {
          const Transformer model = load_model_named(model_name);
          ExecutionChoices choices = parse_execution_choices(exec);
          check_execution_for_model(choices, model);
          all_identical = compare_configs(sys, model, parse_strategy(strat), choose_runtime(exec.runtime, sys, model),
                                          choices, configs_gpus, global_batch, top_n) &&
                          all_identical;
        }
      }
      flush_stdout();
      return all_identical ? 0 : 1;
    }
    const auto choices = load_system_list(resolve_input(systems, "sweeps"));
    if (!system_override.empty()) std::printf("every system replaced by %s\n", system_override.c_str());
    std::printf("%-8s %-10s %-10s %8s %12s %10s %10s %14s %12s %11s %10s %12s\n", "strategy", "model", "search",
                "systems", "candidates", "seconds", "cpu s", "candidates/s", "us/candidate", "over HBM %", "blocks",
                "pruned");
    std::int64_t grid_candidates = 0;
    double grid_seconds = 0, grid_exhaustive_seconds = 0;
    // One pass over the systems and GPU counts of a strategy and model, pruned or not.
    auto run_grid = [&](SearchProblem p, bool prune) {
      GridPass pass;
      p.prune = prune;
      for (std::int64_t r = 0; r < repeat; ++r) {
        pass.counters = SearchCounters{};
        pass.systems = 0;
        pass.tops.clear();
        const auto t0 = std::chrono::steady_clock::now();
        const double c0 = cpu_seconds_now();
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
            for (std::int64_t n = n_min; n <= kMaxBenchGpus; n *= 2) {
              const TopN top = searcher.run_all(n, pass.counters);
              pass.tops.push_back(top.items());
            }
            ++pass.systems;
          }
        }
        pass.seconds = std::min(pass.seconds, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        pass.cpu_seconds = std::min(pass.cpu_seconds, cpu_seconds_now() - c0);
      }
      return pass;
    };
    auto print_pass = [&](const std::string& strat, const std::string& model_name, const char* search,
                          const GridPass& pass) {
      const SearchCounters& k = pass.counters;
      const auto n_candidates = static_cast<double>(k.candidates);
      std::printf("%-8s %-10s %-10s %8d %12lld %10.3f %10.3f %14s %12s %11s %10lld %12lld\n", strat.c_str(),
                  model_name.c_str(), search, pass.systems, static_cast<long long>(k.candidates), pass.seconds,
                  pass.cpu_seconds, ratio("%.4g", n_candidates, pass.seconds).c_str(),
                  ratio("%.4f", 1e6 * pass.seconds, n_candidates).c_str(),
                  ratio("%.1f", 100.0 * static_cast<double>(k.infeasible_memory), n_candidates).c_str(),
                  static_cast<long long>(k.module_evaluations), static_cast<long long>(k.pruned_subtrees));
      if (k.bound_exceeded > 0) {
        std::printf("  the step-time bound was above %lld costed steps: pruning is not exact here\n",
                    static_cast<long long>(k.bound_exceeded));
        all_identical = false;
      }
    };
    for (const std::string& strat : strategies) {
      for (const std::string& model_name : models) {
        SearchProblem p;
        p.strategy = parse_strategy(strat);
        p.model = load_model_named(model_name);
        p.global_batch = global_batch;
        p.top_n = top_n;
        p.exec = parse_execution_choices(exec);
        check_execution_for_model(p.exec, p.model);
        GridPass pass;
        if (compare_prune) {
          const GridPass exhaustive = run_grid(p, false);
          print_pass(strat, model_name, "exhaustive", exhaustive);
          pass = run_grid(p, true);
          print_pass(strat, model_name, "pruned", pass);
          bool identical = exhaustive.tops.size() == pass.tops.size() &&
                           exhaustive.counters.candidates == pass.counters.candidates;
          std::size_t kept = 0;
          for (std::size_t i = 0; identical && i < pass.tops.size(); ++i) {
            identical = identical_lists(exhaustive.tops[i], pass.tops[i]);
            if (!identical) std::printf("  list %zu (system and GPU count in order) differs\n", i);
            kept += pass.tops[i].size();
          }
          all_identical = all_identical && identical;
          std::printf("  %s: %zu top-N lists, %zu configurations, %s; %s x faster (wall), %s x (CPU); %.1f%% of the "
                      "candidates pruned, %lld costed\n",
                      strat.c_str(), pass.tops.size(), kept, identical ? "identical bit for bit" : "DIFFERENT",
                      ratio("%.1f", exhaustive.seconds, pass.seconds).c_str(),
                      ratio("%.1f", exhaustive.cpu_seconds, pass.cpu_seconds).c_str(),
                      100.0 * static_cast<double>(pass.counters.pruned_candidates) /
                          std::max(1.0, static_cast<double>(pass.counters.candidates)),
                      static_cast<long long>(pass.counters.candidates - pass.counters.pruned_candidates -
                                             pass.counters.infeasible_memory));
          grid_exhaustive_seconds += exhaustive.seconds;
        } else {
          pass = run_grid(p, !no_prune);
          print_pass(strat, model_name, no_prune ? "exhaustive" : "pruned", pass);
        }
        grid_candidates += pass.counters.candidates;
        grid_seconds += pass.seconds;
      }
    }
    const auto n_grid = static_cast<double>(grid_candidates);
    std::printf("%-8s %-10s %-10s %8s %12lld %10.3f %10s %14s %12s\n", "grid", "all", compare_prune ? "pruned" : "", "",
                static_cast<long long>(grid_candidates), grid_seconds, "", ratio("%.4g", n_grid, grid_seconds).c_str(),
                ratio("%.4f", 1e6 * grid_seconds, n_grid).c_str());
    if (compare_prune) {
      std::printf("exhaustive: %.3f s, pruned: %.3f s (%sx); every top-N %s\n", grid_exhaustive_seconds, grid_seconds,
                  ratio("%.1f", grid_exhaustive_seconds, grid_seconds).c_str(),
                  all_identical ? "identical bit for bit" : "NOT identical");
    }
    std::printf("reference: about 7 ms per candidate (105 s for the 15,098 candidates of 1d gpt3_1T on one system)\n");
    std::printf("speed-up over the reference: %sx\n", ratio("%.0f", 7e-3 * n_grid, grid_seconds).c_str());
    flush_stdout();
    return all_identical ? 0 : 1;
  });
}
