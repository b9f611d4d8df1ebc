// validate: the model against GPU measurements (validation/gpu formats).
//   validate layers --measurements FILE --system NAME|PATH [--only IDS | --except IDS]
//       one CSV row per (config, layer, pass) and per block pass on stdout, a summary on stderr;
//   validate fit-kernels --measurements FILE [--system NAME|PATH] [--only IDS | --except IDS] --out FILE.yaml
//       a kernel calibration for a system file's `kernels:` key.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "calib/layer_measurements.hpp"
#include "calib/layer_validation.hpp"
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

  return run_tool(app, argc, argv, verbosity, [&]() -> int {
    if (layers->parsed()) {
      const System system = load_system_named(layers_system);
      const auto rows = calib::validate_layers(system, layers_in.read());
      std::cout << calib::validation_csv(rows);
      std::cerr << calib::validation_summary(rows);
      return 0;
    }
    const System system = load_system_named(fit_system);
    const auto configs = fit_in.read();
    kernels::Calibration cal = calib::fit_kernels(system, configs, sm_count);
    cal.source = fit_in.file + (fit_in.only.empty() ? "" : " (only " + fit_in.only + ")") +
                 (fit_in.except.empty() ? "" : " (except " + fit_in.except + ")");
    kernels::save_calibration(cal, out_file);
    spdlog::info("fitted {} configurations; wrote {}", configs.size(), out_file);
    return 0;
  });
}
