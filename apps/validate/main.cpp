// validate: the model against GPU measurements (validation/gpu formats).
//   validate layers --measurements FILE --system NAME|PATH [--only IDS | --except IDS]
//       one CSV row per (config, layer, pass) and per block pass on stdout, a summary on stderr;
//   validate fit-kernels --measurements FILE [--system NAME|PATH] [--only IDS | --except IDS]
//       [--kernel-measurements FILE [--kernel-except IDS]] [--train-measurements FILE --train-only IDS]
//       --out FILE.yaml
//       a kernel calibration for a system file's `kernels:` key;
//   validate kernels --measurements FILE --system NAME|PATH [--only IDS | --except IDS]
//       [--timing stream|isolated|both] [--call-overhead-from IDS]
//       the training step's kernels (h100_kernels.json and h100_kernels_fp8.json formats), CSV
//       (with a timing column) and summary as `layers`;
//       --call-overhead-from fits the measuring host's isolated-call overhead to those entries
//       first (calib::fit_call_overhead);
//   validate train --measurements FILE --system NAME|PATH [--only IDS | --except IDS] [--inputs DIR]
//       whole training steps (h100_train.json format): CSV on stdout, summary on stderr;
//   validate runs DIR [-o ROWS.csv] [--check] [--part fit|held-out|all] [--variant NAME]
//       every row of a validation set (validation/NAME: set.yaml, runs.csv) predicted through
//       estimate's path: the summary by part, GPU, precision and scale and the set's targets on
//       stdout, the rows as CSV in ROWS.csv; --check exits 1 on a missed target;
//   validate fit NAME --sets A,B [--held-out C,D] [--kernels FILE] [-o OUT]
//       a named fitter (kernel_scales, host_floor, carried_efficiency) over the fit part of the chosen sets, the rest
//       held out: the fitted values, then each set's fit and held-out errors with them; OUT what
//       the fitter writes (docs/validation.md, "Validation sets").
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <array>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "calib/layer_measurements.hpp"
#include "calib/layer_validation.hpp"
#include "calib/measurement_entry.hpp"
#include "calib/set_fitters.hpp"
#include "calib/run_inputs.hpp"
#include "calib/step_kernels.hpp"
#include "calib/step_measurements.hpp"
#include "calib/train_validation.hpp"
#include "config/inputs.hpp"
#include "config/kernels_file.hpp"
#include "config/runtime_file.hpp"
#include "core/files.hpp"
#include "common/tool.hpp"
#include "core/error.hpp"
#include "validate/set_runs.hpp"

using namespace perfsweep;

namespace {

struct MeasurementOptions {
  std::string file, only, except;

  void add_to(CLI::App& cmd) {
    cmd.add_option("--measurements,-m", file, "layer measurements (validation/gpu/h100_layers.json format)")
        ->required();
    auto* o = cmd.add_option("--only", only, "only these configuration ids, e.g. c03,c06,c09");
    cmd.add_option("--except", except, "all but these configuration ids")->excludes(o);
  }

  std::vector<calib::LayerConfig> read() const {
    auto configs = calib::read_layer_measurements(file);
    if (!only.empty()) configs = calib::select_configs(configs, only, true);
    if (!except.empty()) configs = calib::select_configs(configs, except, false);
    return configs;
  }
};

// The entries of a kernel or training-step file, optionally selected by id.
template <typename T, typename Read>
std::vector<T> read_selected(Read&& read, const std::string& file, const std::string& only, const std::string& except) {
  std::vector<T> items = read(file);
  if (!only.empty()) items = calib::select_by_id(items, only, true);
  if (!except.empty()) items = calib::select_by_id(items, except, false);
  return items;
}

// A subcommand predicting a measurement file's entries, all or a selection by id, on a system
// with a kernel calibration.
struct SelectedCommand {
  CLI::App* cmd = nullptr;
  std::string measured, system, only, except;
  template <typename T, typename Read>
  std::vector<T> read(Read&& reader) const {
    return read_selected<T>(std::forward<Read>(reader), measured, only, except);
  }
};

void add_selected_command(SelectedCommand& c, CLI::App* cmd, const char* format, const char* entries) {
  c.cmd = cmd;
  c.cmd->add_option("--measurements,-m", c.measured, format)->required();
  c.cmd->add_option("--system", c.system, "system (name or YAML path), with its `kernels:`")->required();
  auto* only = c.cmd->add_option("--only", c.only, std::string("only these ") + entries);
  c.cmd->add_option("--except", c.except, std::string("all but these ") + entries)->excludes(only);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The model against GPU measurements, and the kernel calibration fitted to them"};
  app.require_subcommand(1);
  app.fallthrough();  // -q, -v after the subcommand too
  cli::Verbosity verbosity;
  cli::add_common_flags(app, verbosity);

  MeasurementOptions layers_in, fit_in;
  std::string layers_system, fit_system = "H100", out_file;
  std::int64_t sm_count = 132;
  CLI::App* layers = app.add_subcommand("layers", "predict every layer pass and block; CSV on stdout, summary on stderr");
  layers_in.add_to(*layers);
  layers->add_option("--system", layers_system, "system (name or YAML path), with its `kernels:` if it names one")
      ->required();
  CLI::App* fit = app.add_subcommand("fit-kernels", "fit a kernel calibration to layer measurements");
  fit_in.add_to(*fit);
  fit->add_option("--system", fit_system, "system whose peaks the measurements ran on (default H100)");
  fit->add_option("--sm-count", sm_count, "streaming multiprocessors of the GPU (default 132, H100 SXM)")
      ->check(CLI::Range(1, 1000000));
  fit->add_option("--out,-o", out_file, "kernel calibration YAML to write")->required();
  std::string kernel_file, kernel_except, train_file, train_only;
  fit->add_option("--kernel-measurements", kernel_file,
                  "also fit the training step's kernels (validation/gpu/h100_kernels.json format)");
  fit->add_option("--kernel-except", kernel_except, "kernel ids left out of that fit");
  auto* train_in = fit->add_option("--train-measurements", train_file,
                                   "also fit the allocator's reserve to training steps (h100_train.json format)");
  fit->add_option("--train-only", train_only, "the training-step ids to fit it on")->needs(train_in);

  SelectedCommand kernels_cmd, train;
  add_selected_command(kernels_cmd,
                       app.add_subcommand("kernels", "predict the training step's kernels; CSV on stdout, summary on stderr"),
                       "kernel measurements (h100_kernels.json format)", "kernel ids");
  std::string overhead_from, timing_name = "stream";
  kernels_cmd.cmd
      ->add_option("--timing", timing_name,
                   "the measured times compared: stream (in-stream, where an entry has them, else isolated; the "
                   "default), isolated, or both (docs/validation.md)")
      ->check(CLI::IsMember({"stream", "isolated", "both"}));
  kernels_cmd.cmd->add_option("--call-overhead-from", overhead_from,
                              "kernel ids to fit the measuring host's isolated-call overhead to (per pass, every kernel "
                              "parameter kept) before predicting: measurements taken on another machine than the "
                              "calibration's");
  add_selected_command(train, app.add_subcommand("train", "predict whole training steps; CSV on stdout, summary on stderr"),
                       "training steps (h100_train.json format)", "run ids");
  std::string train_inputs_dir;
  train.cmd->add_option("--inputs", train_inputs_dir,
                        "also write each run's model, system and runtime files into DIR and DIR/commands.tsv: per run "
                        "the estimate command (paths relative to DIR) that reproduces its predicted step "
                        "(docs/validation.md)");

  RunsOptions runs_options;
  CLI::App* runs_cmd = app.add_subcommand(
      "runs", "predict every row of a validation set (validation/NAME) through estimate's path; summary on stdout");
  runs_cmd->add_option("dir", runs_options.dir,
                       "the set's folder (set.yaml, runs.csv; docs/validation.md), or its name in validation/")
      ->required();
  runs_cmd->add_option("-o,--out", runs_options.out,
                   "CSV of every row: measured, predicted, signed error, fits, the estimate command");
  runs_cmd->add_flag("--check", runs_options.check, "exit 1 when a target of set.yaml is missed");
  runs_cmd->add_option("--part", runs_options.part, "the rows predicted: fit, held-out or all (default)")
      ->check(CLI::IsMember({"fit", "held-out", "all"}));
  runs_cmd->add_option("--variant", runs_options.variant,
                   "one variant of set.yaml (default: the rows as given, `default`, and every variant)");
  ResidualsOptions residuals_options;
  CLI::App* residuals_cmd = app.add_subcommand(
      "residuals", "every validation row's signed step-time error (the table estimate's error ranges come from)");
  residuals_cmd->add_option("--sets", residuals_options.sets, "names of validation/ or folders (default: every set)")
      ->delimiter(',');
  residuals_cmd->add_option("-o,--out", residuals_options.out,
                            "the residual table (validation/residuals.csv ships it; default: stdout)");
  FitOptions fit_options;
  std::string fitter_help = "a named fitter:";
  for (const calib::Fitter& f : calib::fitters()) fitter_help += std::string("\n  ") + f.name + ": " + f.what;
  CLI::App* fit_cmd = app.add_subcommand("fit", "fit a named fitter on chosen validation sets, the rest held out");
  fit_cmd->add_option("fitter", fit_options.fitter, fitter_help)->required();
  fit_cmd->add_option("--sets", fit_options.sets,
                      "the sets whose fit part is fitted: names of validation/ or folders, comma-separated")
      ->required()
      ->delimiter(',');
  fit_cmd->add_option("--held-out", fit_options.held_out, "sets predicted with the fitted values, every row held out")
      ->delimiter(',');
  fit_cmd->add_option("--kernels", fit_options.kernels, "the kernel calibration the fitter scales (default: the fit rows' system's) or carries "
                      "(carried_efficiency)");
  fit_cmd->add_option("-o,--out", fit_options.out,
                      "what the fitter writes: kernel_scales a kernel calibration YAML, host_floor a folder of systems/ "
                      "and runtimes/, carried_efficiency a folder of the carried calibrations");

  return cli::run_tool(nullptr, app, argc, argv, verbosity, {.ignore_file_size_signal = true}, [&]() -> int {
    if (runs_cmd->parsed()) return validate_runs(runs_options);
    if (fit_cmd->parsed()) return validate_fit(fit_options);
    if (residuals_cmd->parsed()) return validate_residuals(residuals_options);
    if (layers->parsed()) {
      const System system = load_system_named(layers_system);
      const auto rows = calib::validate_layers(system, layers_in.read());
      std::cout << calib::validation_csv(rows);
      std::cerr << calib::validation_summary(rows);
      return 0;
    }
    if (kernels_cmd.cmd->parsed()) {
      System system = load_system_named(kernels_cmd.system);
      if (!overhead_from.empty()) {
        const auto fit_part =
            calib::select_by_id(calib::read_kernel_measurements(kernels_cmd.measured), overhead_from, true);
        const std::array<double, 2> overhead = calib::fit_call_overhead(system, fit_part);  // InputError without `kernels:`
        kernels::Calibration cal = *system.kernel_calibration;
        cal.isolated_call_s = overhead;
        spdlog::info("isolated-call overhead fitted to {} entries: forward {:.2f} us, backward {:.2f} us", fit_part.size(),
                     cal.isolated_call_s[0] * 1e6, cal.isolated_call_s[1] * 1e6);
        system.kernel_calibration = std::make_shared<const kernels::Calibration>(cal);
      }
      const calib::Timing timing = timing_name == "isolated" ? calib::Timing::Isolated
                                   : timing_name == "both"   ? calib::Timing::Both
                                                             : calib::Timing::Stream;
      const auto rows = calib::validate_kernels(
          system, kernels_cmd.read<calib::KernelMeasurement>(calib::read_kernel_measurements), timing);
      std::cout << calib::validation_csv(rows);
      std::cerr << calib::validation_summary(rows);
      return 0;
    }
    if (train.cmd->parsed()) {
      const System system = load_system_named(train.system);
      const auto runs = train.read<calib::TrainRun>(calib::read_train_measurements);
      const auto rows = calib::validate_train(system, runs);
      std::cout << calib::train_csv(rows);
      std::cerr << calib::train_summary(rows);
      if (!train_inputs_dir.empty()) {
        const Runtime runtime = load_runtime_named(kTrainStepRuntime);
        const calib::RunInputsWritten w =
            calib::write_inputs(train_inputs_dir, system, calib::train_inputs(runs, runtime));
        std::cerr << calib::run_inputs_summary(w, train_inputs_dir);
      }
      return 0;
    }
    refuse_output_over_input(out_file, {fit_in.file, kernel_file, train_file});
    const System system = load_system_named(fit_system);
    const auto configs = fit_in.read();
    kernels::Calibration cal = calib::fit_kernels(system, configs, sm_count);
    if (!kernel_file.empty()) {
      calib::fit_step_kernels(system, cal,
                              read_selected<calib::KernelMeasurement>(calib::read_kernel_measurements, kernel_file,
                                                                      "", kernel_except),
                              configs);
    }
    if (!train_file.empty()) {
      cal.allocator_reserve = calib::fit_allocator_reserve(
          read_selected<calib::TrainRun>(calib::read_train_measurements, train_file, train_only, ""));
    }
    // The source is the command that made it: files, selections and options.
    cal.source = "validate";
    for (int i = 1; i < argc; ++i) cal.source += std::string(" ") + argv[i];
    kernels::save_calibration(cal, out_file);
    spdlog::info("fitted {} configurations; wrote {}", configs.size(), out_file);
    return 0;
  });
}
