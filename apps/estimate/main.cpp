// estimate: the cost of one parallel configuration, layer by layer (the reference's stats
// notebook as a command).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <optional>

#include "common/attention_options.hpp"
#include "common/axis_options.hpp"
#include "common/budget_options.hpp"
#include "common/execution_options.hpp"
#include "common/cli.hpp"
#include "common/exit_codes.hpp"
#include "common/launch_options.hpp"
#include "common/model_flags.hpp"
#include "config/inputs.hpp"
#include "config/runtime_file.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/limits.hpp"
#include "io/report.hpp"
#include "model/step.hpp"
#include "search/configs.hpp"
#include "search/dimensions.hpp"
#include "search/pipeline_advice.hpp"
#include "search/search.hpp"

using namespace perfsweep;

namespace {

struct Options {
  std::string model = "gpt3_1T", system = cli::kDefaultSystem, strat = "1d";
  std::optional<std::int64_t> nvs;
  std::int64_t global_batch = 4096;
  std::int64_t seq_len = 0;  // 0: the model's
  std::int64_t mbs = 1, nb = 0;
  AxisFlags<std::int64_t> axes;  // --tp --tp1 --tp2 --dp --pp and the --nv-* shares (model/axes.hpp)
  AttentionOptions attention;
  ExecutionFlags exec;
  bool json = false, csv = false, csv_totals = false, train_step = false, axes_only = false;
  cli::BudgetOptions budget;
  cli::LaunchOptions launch;
  cli::Verbosity verbosity;
};

int run(const Options& o) {
  o.budget.check();
  const std::optional<LaunchFramework> launch = o.launch.parse();
  Transformer model = cli::read_model_logged(o.model, o.seq_len);
  System sys = load_system_named(o.system);
  if (o.nvs) {
    check_count(*o.nvs, kMaxNvlinkDomain, "--nvs");
    sys.nvlink_size = *o.nvs;
  }
  check_count(o.global_batch, kMaxGlobalBatch, "--global-batch-size");
  // Each degree, and the GPU count they multiply to, within bounds (validate_layout checks the rest).
  std::int64_t gpus = 1;
  const std::int64_t cp = parse_context_parallel(o.exec);
  Layout layout;
  layout.strategy = parse_strategy(o.strat);
  const StrategyPlan& plan = plan_of(layout.strategy);
  check_axes_given(o.axes, plan.axes);
  auto count_gpus = [&](const std::string& flag, std::int64_t v) {
    check_count(v, kMaxGpuCount, flag);
    if (__builtin_mul_overflow(gpus, v, &gpus) || gpus > kMaxGpuCount) {
      throw InputError(std::string("the degrees multiply to more than ") + std::to_string(kMaxGpuCount) + " GPUs (at " +
                       flag + "=" + std::to_string(v) + ")");
    }
  };
  for (std::size_t i = 0; i < kAxisCount; ++i) {
    if (!kAxes[i].has_degree_flag() || !has_axis(plan, i)) continue;
    count_gpus(key_flag(kAxes[i].name), o.axes.degree[i]);
    kAxes[i].set_degree(layout, o.axes.degree[i]);
  }
  count_gpus("--cp", cp);
  // The network as a job of this many GPUs sees it (a system's network_scaling), as the search costs it.
  sys = at_scale(sys, gpus);
  check_count(o.mbs, kMaxGlobalBatch, "--mbs");
  layout.mbs = o.mbs;
  layout.tensor.cp = cp;
  if (layout.strategy == Strategy::TwoD) {
    if (o.nb == 0) throw InputError("--nb (SUMMA blocks) is required with --strat 2d");
    layout.tensor.nb = o.nb;
  }
  if (launch) check_launch_strategy(*launch, layout.strategy);
  layout.attention = parse_attention(o.attention.mode, o.attention.recompute, layout.strategy);
  const Runtime runtime = choose_runtime(o.train_step ? kTrainStepRuntime : o.exec.runtime, sys, model);
  spdlog::debug("runtime: {}", runtime_label(runtime));
  layout.exec = parse_execution(o.exec, runtime);  // rank_order, unless given: the runtime's
  if (o.train_step) {
    // one GPU under PyTorch eager with autocast: the runtime validate train checks
    if (gpus != 1) throw InputError("--train-step models one GPU: dp, pp and tp must be 1");
    if (!o.exec.runtime.empty() && o.exec.runtime != kTrainStepRuntime) {
      throw InputError("--train-step is the " + std::string(kTrainStepRuntime) + " runtime, not --runtime " +
                       o.exec.runtime);
    }
    layout.exec.zero = 0;
  }
  // Every placed axis's share given (an axis beyond the reference's needs none at its reference
  // degree): the placement is the user's; else the fastest of those the search tries that keep the given.
  const PlacedAxes& placed = placed_axes(layout.strategy);
  bool all_given = true;
  for (std::size_t k = 0; k < placed.count; ++k) {
    const LayoutAxis& a = kAxes[placed.axis[k]];
    const std::optional<std::int64_t>& nv = o.axes.nv[placed.axis[k]];
    if (nv) a.set_nv(layout, *nv);
    all_given = all_given && (nv || a.degree(layout) == a.omitted_at);
  }
  layout.exec.stage_partition = runtime.stage_partition;  // the framework's partition, checked below
  // --first-stage-blocks auto, or neither given where pp does not split the depth evenly under a
  // framework's runtime (as the search): balanced here for a given placement, else for each one tried.
  const bool balance = balances_stages(o.exec) ||
                       (!stage_blocks_given(o.exec) && balances_where_uneven(runtime, model, layout));
  if (balance && !balances_stages(o.exec)) {
    spdlog::info("pp={} does not divide depth {}: the stages balanced (--first-stage-blocks and "
                 "--last-stage-blocks choose others)",
                 layout.pp, model.depth);
  }
  if (balance) layout = with_balanced_stages(sys, model, runtime, layout, o.global_batch);
  // Positivity of every degree is checked before placements are enumerated.
  validate_layout(sys, model, layout, o.global_batch);
  {
    ExecutionChoices one = choices_of(layout.exec, cp);
    check_runtime_choices(sys, runtime, layout.strategy, one);
  }
  Evaluation ev;
  if (all_given) {
    ev = evaluate(sys, model, runtime, layout, o.global_batch);
  } else {
    PlacementChoice choice;
    choice.nv = o.axes.nv;
    // Under a framework's runtime, with no share given, the placement its rank order makes.
    bool any_given = false;
    for (const std::optional<std::int64_t>& nv : o.axes.nv) any_given = any_given || nv.has_value();
    choice.rank_order = !runtime.is_reference() && !any_given;
    spdlog::debug(choice.rank_order ? "NVLink placement: the runtime's rank order"
                                    : "NVLink placements not all given: choosing the fastest");
    std::optional<Evaluation> best = best_placement(sys, model, layout, o.global_batch, choice, runtime, balance);
    if (!best) {
      throw ConfigError("no NVLink placement of the reference's search matches the given --nv-* values for nvs=" +
                        std::to_string(sys.nvlink_size));
    }
    ev = std::move(*best);
  }
  ev.budget =
      training_budget(ev.efficiency, layout.n_gpus(), o.global_batch, model.l, o.budget.tokens, o.budget.gpu_hour_cost);
  std::optional<LaunchLine> line;
  if (launch) line = launch_line(*launch, {model, layout, runtime, o.global_batch, sys.nvlink_size});
  if (o.json) {
    std::cout << estimate_json(ev, layout, sys, model, o.global_batch, all_given, line ? &*line : nullptr);
  } else if (o.csv) {
    std::cout << estimate_csv(ev, layout);
  } else if (o.csv_totals) {
    std::cout << estimate_csv_totals(ev, layout, sys);
  } else {
    std::cout << estimate_text(ev, layout, sys, model, o.global_batch);
    const std::string advice = pipeline_alternatives_text(
        ev, pipeline_alternatives(sys, model, runtime, layout, ev, o.global_batch));
    if (!advice.empty()) std::cout << '\n' << advice;
    if (line) std::cout << "\nlaunch (" << launch_framework_info(line->framework).name << "):\n" << launch_text(*line);
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
  CLI::App app{"estimate: time, FLOPs, memory and communication of one parallel configuration of a transformer"};
  Options o;
  cli::add_model_flags(app, o.model, o.seq_len);
  app.add_option("--system", o.system, "system name (systems/NAME.yaml) or path to a system YAML/JSON")
      ->capture_default_str();
  app.add_option("--nvs", o.nvs, "GPUs per NVLink domain (default: the system file's nvlink_size)");
  app.add_option("--strat", o.strat, "tensor-parallel strategy: 1d, 2d (SUMMA) or 2d-seqp (context parallel)")
      ->capture_default_str();
  app.add_option("--global-batch-size", o.global_batch, "samples per optimizer step")->capture_default_str();
  add_axis_options(app, o.axes, [](std::size_t) { return std::string(); }, "");
  app.add_option("--mbs", o.mbs, "micro-batch size")->capture_default_str();
  app.add_option("--nb", o.nb, "SUMMA blocks: required with --strat 2d, unused otherwise");
  add_attention_options(app, o.attention);
  add_execution_options(app, o.exec, false);
  o.budget.add_to(app);
  add_stage_options(app, o.exec);
  app.add_flag("--json", o.json, "print the reference's per-layer stats and totals as one JSON object");
  auto* csv = app.add_flag("--csv", o.csv, "print the per-layer table as CSV (pandas.read_csv reads it)");
  auto* csv_totals =
      app.add_flag("--csv-totals", o.csv_totals, "print the totals as CSV: quantity,value,unit")->excludes(csv);
  o.launch.add_to(app, "the configuration, after the report (--json: its \"launch\" field),");
  app.get_option("--launch")->excludes(csv)->excludes(csv_totals);
  app.add_flag("--axes", o.axes_only,
               "print the parallel axes (what each splits, its collectives, NVLink share and rule) and exit");
  app.add_flag("--train-step", o.train_step,
               "one GPU's whole training step as PyTorch eager with bf16 autocast runs it: --runtime pytorch_amp "
               "(its casts, gradient accumulation, optimizer, host launches and peak memory) with ZeRO 0 "
               "(docs/validation.md; --global-batch-size / --mbs micro-batches)");
  cli::add_common_flags(app, o.verbosity);
  app.footer(
      "Flags each strategy needs: 1d --tp; 2d --tp1 --tp2 --nb; 2d-seqp --tp1 --tp2. All: --dp --pp --mbs\n"
      "(default 1 each), and dp x tp x pp GPUs in all.\n"
      "Placements (--nv-*) left out are chosen as the fastest among those the reference's search tries.\n"
      "Units: memory GB, compute TFLOP, time s, throughput samples/s. Exit codes: 0 ok, 2 bad input.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli::exit_for(app, e) == 0 ? 0 : 2;
  }
  if (o.axes_only) {
    std::cout << axes_text();
    flush_stdout();
    return 0;
  }
  cli::use_stderr_log("estimate", o.verbosity);
  cli::log_start(argc, argv, 1);
  try {
    return run(o);
  } catch (...) {
    const cli::ErrorExit e = cli::current_error_exit();
    cli::print_error("estimate", e);
    return e.code;
  }
}
