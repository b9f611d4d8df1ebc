// estimate: the cost of one parallel configuration, layer by layer (the reference's stats
// notebook as a command).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <optional>

#include "calib/error_ranges.hpp"
#include "common/cli.hpp"
#include "common/estimate_options.hpp"
#include "common/exit_codes.hpp"
#include "common/launch_options.hpp"
#include "common/tool.hpp"
#include "core/files.hpp"
#include "io/report.hpp"
#include "model/axes.hpp"
#include "model/guards.hpp"
#include "search/estimate.hpp"
#include "search/pipeline_advice.hpp"

using namespace perfsweep;

namespace {

struct Options {
  EstimateOptions config;  // what is costed: estimate's configuration flags
  bool json = false, csv = false, csv_totals = false, axes_only = false;
  cli::LaunchOptions launch;
  cli::Verbosity verbosity;
};

int run(const Options& o) {
  const std::optional<LaunchFramework> launch = o.launch.parse();
  EstimateRequest request = estimate_request(o.config);
  shipped_residuals();  // read (and checked) before the work
  if (launch) check_launch_strategy(*launch, request.layout.strategy);
  const Evaluation ev = evaluate_request(request);
  const Layout& layout = request.layout;
  const System& sys = request.system;
  const Transformer& model = request.model;
  for (const std::string& w :
       prediction_caveats("the configuration", sys, request.runtime, layout.n_gpus(), ev.efficiency, layout.exec.precision)) {
    spdlog::warn("{}", w);
  }
  std::optional<LaunchLine> line;
  if (launch) line = launch_line(*launch, {model, layout, request.runtime, request.global_batch, sys.nvlink_size});
  if (o.json) {
    std::cout << estimate_json(ev, layout, sys, model, request.global_batch, request.all_placed,
                               line ? &*line : nullptr);
  } else if (o.csv) {
    std::cout << estimate_csv(ev, layout);
  } else if (o.csv_totals) {
    std::cout << estimate_csv_totals(ev, layout, sys);
  } else {
    std::cout << estimate_text(ev, layout, sys, model, request.global_batch);
    const std::string range = expected_error_line(
        {request.cluster.name, kPrecisionNames[static_cast<std::size_t>(layout.exec.precision)], layout.n_gpus(),
         model_kind(model.is_moe())});
    std::cout << range;
    const std::string advice = pipeline_alternatives_text(
        ev, pipeline_alternatives(sys, model, request.runtime, layout, ev, request.global_batch));
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
  add_estimate_flags(app, o.config);
  app.add_flag("--json", o.json, "print the reference's per-layer stats and totals as one JSON object");
  auto* csv = app.add_flag("--csv", o.csv, "print the per-layer table as CSV (pandas.read_csv reads it)");
  auto* csv_totals =
      app.add_flag("--csv-totals", o.csv_totals, "print the totals as CSV: quantity,value,unit")->excludes(csv);
  o.launch.add_to(app, "the configuration, after the report (--json: its \"launch\" field),");
  app.get_option("--launch")->excludes(csv)->excludes(csv_totals);
  app.add_flag("--axes", o.axes_only,
               "print the parallel axes (what each splits, its collectives, NVLink share and rule) and exit");
  cli::add_common_flags(app, o.verbosity);
  app.footer(
      "Flags each strategy needs: 1d --tp; 2d --tp1 --tp2 --nb; 2d-seqp --tp1 --tp2. All: --dp --pp --mbs\n"
      "(default 1 each), and dp x tp x pp GPUs in all.\n"
      "Placements (--nv-*) left out are chosen as the fastest among those the reference's search tries.\n"
      "Units: memory GB, compute TFLOP, time s, throughput samples/s. Exit codes: 0 ok, 2 bad input.");
  // --axes prints the table and exits before the log starts
  auto axes_only = [&]() -> std::optional<int> {
    if (!o.axes_only) return std::nullopt;
    std::cout << axes_text();
    flush_stdout();
    return 0;
  };
  return cli::run_tool("estimate", app, argc, argv, o.verbosity, {.early_exit = axes_only}, [&] { return run(o); });
}
