// configs: chosen parallel configurations at a fixed GPU count, side by side, with their time
// components and memory (the reference's plots_sweep_parallel_configs notebook as a command).
// The run is library calls: search/configs_run.hpp builds, counts, evaluates and ranks the rows,
// io/configs_table.hpp writes them as CSV and as a table.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "calib/error_ranges.hpp"
#include "common/attention_options.hpp"
#include "common/axis_options.hpp"
#include "common/budget_options.hpp"
#include "common/cli.hpp"
#include "common/execution_options.hpp"
#include "common/launch_options.hpp"
#include "common/model_flags.hpp"
#include "common/tool.hpp"
#include "config/inputs.hpp"
#include "config/runtime_file.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/limits.hpp"
#include "io/configs_table.hpp"
#include "io/report.hpp"
#include "search/configs_run.hpp"
#include "search/neighbours.hpp"

using namespace perfsweep;

namespace {

struct Options {
  std::string model = "gpt3_1T", system = cli::kDefaultSystem, strat = "1d";
  std::optional<std::int64_t> nvs;
  std::int64_t n_gpus = 0;
  cli::Verbosity verbosity;
  std::int64_t global_batch = 4096;
  std::int64_t seq_len = 0;  // 0: the model's
  std::string mbs, nb;
  AxisFlags<std::string> axes;  // --tp --tp1 --tp2 --dp --pp lists and the --nv-* shares (model/axes.hpp)
  AttentionOptions attention;
  ExecutionFlags exec;
  bool all_placements = false, fits_only = false, csv = false;
  std::string sort = "auto";
  std::size_t top = 0;
  std::int64_t max_points = 1000000;
  std::string output;
  cli::BudgetOptions budget;
  cli::LaunchOptions launch;
};

void log_line(const std::string& line) { spdlog::info("{}", line); }

int run(const Options& o) {
  o.budget.check();
  shipped_residuals();  // read (and checked) before the work
  const std::optional<LaunchFramework> launch = o.launch.parse();
  check_count(o.n_gpus, kMaxGpuCount, "--n-gpus");
  check_count(o.global_batch, kMaxGlobalBatch, "--global-batch-size");
  const Transformer model = cli::read_model_logged(o.model, o.seq_len);
  const std::vector<std::string> given_systems = system_names(o.system);
  std::vector<SystemRun> systems = load_system_runs(given_systems, o.nvs);
  {
    std::vector<std::string> names;
    for (const SystemRun& s : systems) names.push_back(s.sys.name);
    o.budget.check_systems(names);
  }
  for (SystemRun& s : systems) s.price = o.budget.price_for(s.sys);
  const bool by_cost = o.sort == "cost";
  if (by_cost) check_priced(systems);
  const std::vector<Strategy> strategies = parse_strategies(o.strat);
  std::uint32_t listed_axes = 0;
  for (Strategy s : strategies) listed_axes |= plan_of(s).axes;
  check_axes_given(o.axes, listed_axes);
  if (std::none_of(strategies.begin(), strategies.end(), [](Strategy s) { return s == Strategy::TwoD; }) &&
      !o.nb.empty()) {
    throw InputError("--nb (SUMMA blocks) goes with --strat 2d");
  }
  const bool ranges_given = std::any_of(o.axes.degree.begin(), o.axes.degree.end(),
                                        [](const std::string& degree) { return !degree.empty(); });
  const bool by_throughput =
      o.sort == "throughput" || o.sort == "time" || by_cost || (o.sort == "auto" && !ranges_given);
  ConfigRangesFlags flags{.n_gpus = o.n_gpus, .degree = o.axes.degree, .nv = o.axes.nv, .mbs = o.mbs, .nb = o.nb,
                          .attention = o.attention.mode, .attention_recompute = o.attention.recompute,
                          .choices = parse_execution_choices(o.exec), .stages_given = stage_blocks_given(o.exec),
                          .all_placements = o.all_placements, .fits_only = o.fits_only, .top = o.top,
                          .by_throughput = by_throughput};
  check_execution_for_model(flags.choices, model);
  flags.stage_choices = parse_stage_block_choices(o.exec);
  flags.balance_stages = balances_stages(o.exec);
  std::vector<std::string> inputs{model_file(o.model).string()};
  for (std::size_t k = 0; k < systems.size(); ++k) {
    systems[k].runtime = choose_runtime(o.exec.runtime, systems[k].sys, model);
    inputs.push_back(resolve_input(given_systems[k], "systems").string());
    inputs.push_back(systems[k].runtime.file);
  }
  if (!o.output.empty()) refuse_output_over_input(o.output, inputs);
  auto check_launch = [&](Strategy strategy) {
    if (launch) check_launch_strategy(*launch, strategy);
  };
  add_strategy_ranges(systems, strategies, flags, check_launch, log_line);
  const bool pruned = o.top > 0 && by_throughput;
  const std::int64_t points = count_system_runs(systems, model, o.n_gpus, o.global_batch, o.max_points, pruned);
  for (const SystemRun& s : systems) {
    const std::string caveat = system_caveat_text(s.sys);
    if (!caveat.empty()) spdlog::info("{}: {}", s.sys.name, caveat);
  }
  spdlog::info("{} configurations (layouts x NVLink placements) {}", points,
               pruned ? "in the space; the walk skips those that cannot enter the top " + std::to_string(o.top)
                      : std::string("to evaluate"));
  ConfigProgress progress(points, pruned);
  auto on_points = [&](std::int64_t n) {
    if (const std::optional<std::string> line = progress.add(n)) log_line(*line);
  };
  SystemRunsSweep sweep =
      sweep_system_runs(systems, model, o.n_gpus, o.global_batch, o.budget.tokens, o.top, on_points, log_line);
  std::vector<SystemConfigRow>& rows = sweep.rows;
  // -v: the layouts each rule of the rule table refused (model/layout_rules.cpp), most first
  if (spdlog::should_log(spdlog::level::debug)) {
    spdlog::debug("layouts refused by rule: {}", refused_by_rule_text(sweep.refused_by_rule));
  }
  if (o.fits_only) std::erase_if(rows, [](const SystemConfigRow& row) { return !row.config.fits; });
  if (rows.empty()) {
    throw ConfigError(no_rows_message(sweep.rejections, systems, model, o.n_gpus, o.global_batch, o.fits_only));
  }
  rank_rows(rows, by_cost, by_throughput);
  if (o.top > 0 && rows.size() > o.top) rows.resize(o.top);
  for (const std::string& w : caveat_warnings(rows, systems, o.n_gpus)) spdlog::warn("{}", w);
  // Where the batch's divisors leave the search's space only slower layouts, a batch near it that
  // does not (the search's space alone: no degree lists given).
  std::string batch_note;
  if (!ranges_given) {
    batch_note = batch_advice_text(better_batches(search_problems(systems, model, o.global_batch), o.n_gpus,
                                                  o.global_batch, kBatchGain, kBatchTries),
                                   o.n_gpus, o.global_batch, kBatchGain);
    if (!batch_note.empty() && (o.csv || !o.output.empty())) spdlog::warn("{}", batch_note);
  }

  std::vector<LaunchLine> lines;
  if (launch) {
    for (const SystemConfigRow& row : rows) {
      const SystemRun& s = systems[row.system];
      lines.push_back(launch_line(*launch, {model, row.config.layout, s.runtime, o.global_batch, s.sys.nvlink_size}));
    }
  }
  const std::string csv = configs_csv(rows, o.n_gpus, systems, lines, o.budget.tokens);
  if (!o.output.empty()) {
    write_text_atomically(o.output, csv);
    spdlog::info("wrote {} configurations to {}", rows.size(), o.output);
  }
  if (o.csv) {
    std::cout << csv;
  } else if (o.output.empty()) {
    const SystemConfigRow& best = rows.front();
    std::cout << configs_heading(systems, model, o.n_gpus, o.global_batch, rows.size(), by_cost, by_throughput)
              << configs_table(rows, sweep.several_strategies, listed_options(systems, flags.choices), systems, model,
                               o.budget.tokens)
              << expected_error_line({systems[best.system].sys.name,
                                      kPrecisionNames[static_cast<std::size_t>(best.config.layout.exec.precision)],
                                      best.config.layout.n_gpus(), model_kind(model.is_moe())},
                                     "row 1's ");
    if (!sweep.rejections.empty()) {
      std::printf("not evaluated (%zu reasons), e.g.: %s\n", sweep.rejections.size(), sweep.rejections.front().c_str());
    }
    if (!batch_note.empty()) std::printf("note: %s\n", batch_note.c_str());
    if (!lines.empty()) {
      std::printf("\nlaunch (%s) of configuration 1:\n", launch_framework_info(lines.front().framework).name);
      std::cout << launch_text(lines.front());
    }
  }
  flush_stdout();
  return 0;
}

}  // namespace

// PERFSWEEP_TOOL_ENTRY names this function where the tool runs in-process (the Python module).
#ifdef PERFSWEEP_TOOL_ENTRY
int PERFSWEEP_TOOL_ENTRY(int argc, char** argv) {
#else
int main(int argc, char** argv) {
#endif
  CLI::App app{
      "configs: chosen parallel configurations at a fixed GPU count, side by side: time per iteration by component "
      "and memory (the reference's plots_sweep_parallel_configs notebook)"};
  Options o;
  cli::add_model_flags(app, o.model, o.seq_len);
  app.add_option("--system", o.system,
                 "system name (systems/NAME.yaml) or path, or a list A,B,C: the rows of every system ranked together "
                 "(by throughput, or by cost with --sort cost)")
      ->capture_default_str();
  app.add_option("--nvs", o.nvs, "GPUs per NVLink domain (default: the system file's nvlink_size)");
  app.add_option("--strat", o.strat,
                 "1d, 2d (SUMMA) or 2d-seqp (context parallel), a list 1d,2d-seqp, or all: the rows of every strategy "
                 "ranked together")
      ->capture_default_str();
  app.add_option("--n-gpus", o.n_gpus, "GPU count")->required();
  app.add_option("--global-batch-size", o.global_batch, "samples per optimizer step")->capture_default_str();
  const char* list = "8 or 1,2,4 (each dividing --n-gpus) or 1:64 (the divisors of --n-gpus from 1 to 64)";
  add_axis_options(
      app, o.axes,
      [&](std::size_t axis) {
        const std::string name = kAxes[axis].name;
        const std::string fallback = name == "dp"   ? "n / (tp pp)"
                                     : name == "pp" ? "derived from --dp, or all"
                                     : name == "tp2" ? "all"
                                                     : "the search's";
        return std::string("; a list: ") + list + " (default: " + fallback + ")";
      },
      " (default: fastest)");
  app.add_option("--mbs", o.mbs,
                 "micro-batch sizes: 1,2,4 or 1:64 (powers of two), or all (the search's); default: 1 when any of "
                 "--tp/--tp1/--tp2/--pp/--dp is given, else all");
  app.add_option("--nb", o.nb,
                 "2d SUMMA block counts: 8 or 8,16 or 8:64 (powers of two); default: the fastest the search tries");
  add_attention_options(app, o.attention, true);
  add_execution_options(app, o.exec, true);
  add_stage_options(app, o.exec);
  app.add_flag("--all-placements", o.all_placements, "one row per NVLink placement (and nb) instead of the fastest (reference runtime) or the rank order's (any other)");
  app.add_flag("--fits-only", o.fits_only, "only configurations that fit in HBM");
  app.add_option("--sort", o.sort,
                 "throughput or time (the fastest first), cost (the cheapest per token first: a price for every "
                 "system, --gpu-hour-cost), or config (the order asked for); those that fit first; auto: config when "
                 "ranges are given, else throughput")
      ->check(CLI::IsMember({"auto", "throughput", "time", "cost", "config"}))
      ->capture_default_str();
  app.add_option("--top", o.top, "keep the first K rows (0: all); memory holds K rows however many are evaluated")
      ->capture_default_str();
  app.add_option("--max-points", o.max_points,
                 "refuse to start when more configurations than this (layouts x NVLink placements, counted first) "
                 "would be evaluated; with --top and the rows ranked by throughput or cost, 1000 times this (the "
                 "walk skips what cannot enter the top)")
      ->capture_default_str();
  cli::add_common_flags(app, o.verbosity);
  o.budget.add_to(app);
  o.launch.add_to(app, "the first configuration listed, after the table (--csv, -o: each row's, a launch column),");
  app.add_flag("--csv", o.csv, "print CSV (the columns scripts/plot_configs.py reads) instead of the table");
  app.add_option("-o,--out", o.output, "also write the CSV to this file (atomically)");
  app.footer(
      "Examples (the notebook's sweeps: 16384 B200s in NVLink domains of 8):\n"
      "  configs --n-gpus 16384 --nvs 8 --tp 8 --pp 1:128     # TP fixed, PP swept, DP = n / (TP PP)\n"
      "  configs --n-gpus 16384 --nvs 8 --pp 64 --tp 1:32     # PP fixed, TP swept\n"
      "  configs --n-gpus 16384 --nvs 8 --dp 32 --tp 4:128    # DP fixed, TP swept, PP = n / (TP DP)\n"
      "  configs --n-gpus 1024 --top 10 -o configs.csv       # the ten fastest of the search's space\n"
      "  configs --model mixtral_8x7b --n-gpus 512 --system H100-calibrated,B200-calibrated,GB200-calibrated \\\n"
      "      --gpu-hour-cost H100-calibrated=2.5,B200-calibrated=4,GB200-calibrated=5 --sort cost --top 5\n"
      "  scripts/plot_configs.py configs.csv --out configs    # the figure\n"
      "Units: time s per iteration, memory GB, throughput samples/s. Exit codes: 0 ok, 2 bad input.");

  return cli::run_tool("configs", app, argc, argv, o.verbosity, {.ignore_file_size_signal = true},
                       [&] { return run(o); });
}
