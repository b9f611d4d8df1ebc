// validate: the model against GPU measurements (validation/gpu formats).
//   validate layers --measurements FILE --system NAME|PATH [--only IDS | --except IDS]
//       one CSV row per (config, layer, pass) and per block pass on stdout, a summary on stderr;
//   validate fit-kernels --measurements FILE [--system NAME|PATH] [--only IDS | --except IDS]
//       [--kernel-measurements FILE [--kernel-except IDS]] [--train-measurements FILE --train-only IDS]
//       --out FILE.yaml
//       a kernel calibration for a system file's `kernels:` key;
//   validate kernels --measurements FILE --system NAME|PATH [--only IDS | --except IDS]
//       the training step's kernels (h100_kernels.json format), CSV and summary as `layers`;
//   validate train --measurements FILE --system NAME|PATH [--only IDS | --except IDS]
//       whole training steps (h100_train.json format): CSV on stdout, summary on stderr.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "calib/layer_measurements.hpp"
#include "calib/layer_validation.hpp"
#include "calib/measurement_entry.hpp"
#include "calib/step_kernels.hpp"
#include "calib/step_measurements.hpp"
#include "calib/train_validation.hpp"
#include "config/inputs.hpp"
#include "config/kernels_file.hpp"
#include "common/measurement_tool.hpp"
#include "core/error.hpp"

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

}  // namespace

int main(int argc, char** argv) {
  init_tool_logger("validate");

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

  std::string kernels_measured, kernels_system, kernels_only, kernels_except;
  CLI::App* kernels_cmd = app.add_subcommand("kernels", "predict the training step's kernels; CSV on stdout, summary on stderr");
  kernels_cmd->add_option("--measurements,-m", kernels_measured, "kernel measurements (h100_kernels.json format)")->required();
  kernels_cmd->add_option("--system", kernels_system, "system (name or YAML path), with its `kernels:`")->required();
  auto* ko = kernels_cmd->add_option("--only", kernels_only, "only these kernel ids");
  kernels_cmd->add_option("--except", kernels_except, "all but these kernel ids")->excludes(ko);

  std::string train_measured, train_system, train_sel_only, train_sel_except;
  CLI::App* train = app.add_subcommand("train", "predict whole training steps; CSV on stdout, summary on stderr");
  train->add_option("--measurements,-m", train_measured, "training steps (h100_train.json format)")->required();
  train->add_option("--system", train_system, "system (name or YAML path), with its `kernels:`")->required();
  auto* to = train->add_option("--only", train_sel_only, "only these run ids");
  train->add_option("--except", train_sel_except, "all but these run ids")->excludes(to);

  return run_tool(app, argc, argv, verbosity, [&]() -> int {
    if (layers->parsed()) {
      const System system = load_system_named(layers_system);
      const auto rows = calib::validate_layers(system, layers_in.read());
      std::cout << calib::validation_csv(rows);
      std::cerr << calib::validation_summary(rows);
      return 0;
    }
    if (kernels_cmd->parsed()) {
      const System system = load_system_named(kernels_system);
      const auto rows = calib::validate_kernels(
          system, read_selected<calib::KernelMeasurement>(calib::read_kernel_measurements, kernels_measured,
                                                          kernels_only, kernels_except));
      std::cout << calib::validation_csv(rows);
      std::cerr << calib::validation_summary(rows);
      return 0;
    }
    if (train->parsed()) {
      const System system = load_system_named(train_system);
      const auto rows = calib::validate_train(
          system, read_selected<calib::TrainRun>(calib::read_train_measurements, train_measured, train_sel_only,
                                                 train_sel_except));
      std::cout << calib::train_csv(rows);
      std::cerr << calib::train_summary(rows);
      return 0;
    }
    const System system = load_system_named(fit_system);
    const auto configs = fit_in.read();
    kernels::Calibration cal = calib::fit_kernels(system, configs, sm_count);
    if (!kernel_file.empty()) {
      calib::fit_step_kernels(system, cal,
                              read_selected<calib::KernelMeasurement>(calib::read_kernel_measurements, kernel_file,
                                                                      "", kernel_except));
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
