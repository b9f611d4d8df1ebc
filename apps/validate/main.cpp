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
//   validate megatron|vtrain|nanotron --measurements FILE [--system NAME|PATH]
//       measured training runs against the model's prediction of each: CSV on stdout (one row per
//       run), a summary on stderr; the system defaults to the set's cluster (selene_a100,
//       vtrain_a100, hf_h100); --inputs DIR also writes each run's model, system and runtime
//       files and DIR/commands.tsv, the estimate command of each run (calib/run_inputs.hpp);
//   validate fit-cluster vtrain --measurements FILE [--system NAME|PATH] [--kernels FILE] --out FILE.yaml
//       the kernel calibration with its compute and stream-launch scales fitted on the set's fit
//       runs (docs/validation.md).
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <array>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "calib/cluster_runs.hpp"
#include "calib/layer_measurements.hpp"
#include "calib/layer_validation.hpp"
#include "calib/measurement_entry.hpp"
#include "calib/run_inputs.hpp"
#include "calib/step_kernels.hpp"
#include "calib/step_measurements.hpp"
#include "calib/train_validation.hpp"
#include "config/inputs.hpp"
#include "config/kernels_file.hpp"
#include "config/runtime_file.hpp"
#include "core/files.hpp"
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

  struct RunSetCommand {
    calib::RunSet set;
    CLI::App* cmd;
    std::string file, system, inputs;
    bool unfitted = false;
  };
  std::vector<RunSetCommand> run_sets;
  for (calib::RunSet set : {calib::RunSet::Megatron, calib::RunSet::Vtrain, calib::RunSet::Nanotron}) {
    run_sets.push_back({set, nullptr, "", "", "", false});
  }
  for (RunSetCommand& c : run_sets) {
    c.cmd = app.add_subcommand(calib::run_set_name(c.set),
                               std::string("predict every measured ") + calib::run_set_name(c.set) +
                                   " run; CSV on stdout, summary on stderr");
    c.cmd->add_option("--measurements,-m", c.file, "the set's CSV (docs/validation.md)")->required();
    c.cmd->add_option("--system", c.system,
                      std::string("system (name or YAML path; default ") + calib::default_system_file(c.set) + ")");
    c.cmd->add_option("--inputs", c.inputs,
                      "also write each run's model, system and runtime files into DIR and DIR/commands.tsv: per run "
                      "the estimate command (paths relative to DIR) that reproduces its predicted step "
                      "(docs/validation.md)");
    if (c.set == calib::RunSet::Nanotron) {
      c.cmd->add_flag("--unfitted", c.unfitted,
                      "the system as it is (default: the network the cluster measured at each job size and the "
                      "compute scale, both fitted on the fit runs)");
    }
  }

  std::string cluster_set, cluster_file, cluster_system, cluster_kernels, cluster_out;
  CLI::App* fit_cluster =
      app.add_subcommand("fit-cluster", "fit the kernel calibration's two scales to a set's fit runs");
  fit_cluster->add_option("set", cluster_set, "megatron, vtrain or nanotron")
      ->required()
      ->check(CLI::IsMember({"megatron", "vtrain", "nanotron"}));
  fit_cluster->add_option("--measurements,-m", cluster_file, "the set's CSV")->required();
  fit_cluster->add_option("--system", cluster_system, "system (default: the set's cluster)");
  fit_cluster->add_option("--kernels", cluster_kernels, "kernel calibration to scale (default: the system's)");
  fit_cluster->add_option("--out,-o", cluster_out, "kernel calibration YAML to write")->required();

  return run_tool(app, argc, argv, verbosity, [&]() -> int {
    if (fit_cluster->parsed()) {
      refuse_output_over_input(cluster_out, {cluster_file, cluster_kernels});
      calib::RunSet set = calib::RunSet::Vtrain;
      for (const RunSetCommand& c : run_sets) {
        if (cluster_set == calib::run_set_name(c.set)) set = c.set;
      }
      System system =
          load_system_named(cluster_system.empty() ? std::string(calib::default_system_file(set)) : cluster_system);
      if (!cluster_kernels.empty()) {
        system.kernel_calibration =
            std::make_shared<const kernels::Calibration>(kernels::load_calibration(cluster_kernels));
      }
      const calib::KernelScaleFit scaled = calib::fit_kernel_scales(system, calib::read_cluster_runs(set, cluster_file));
      kernels::Calibration out = scaled.calibration;
      char scales[160];
      std::snprintf(scales, sizeof scales, "compute x %.2f, stream launch_s x %.2f", scaled.scales.compute,
                    scaled.scales.stream_launch);
      out.source = out.source + "; scaled (validate fit-cluster " + cluster_set + ", " + std::to_string(scaled.runs) +
                   " fit runs of " + cluster_file + "): " + scales;
      kernels::save_calibration(out, cluster_out);
      spdlog::info("{} on {} fit runs: mean |relative error| {:.4f} -> {:.4f}; wrote {}", scales, scaled.runs,
                   scaled.mean_abs_before, scaled.mean_abs_after, cluster_out);
      return 0;
    }
    for (const RunSetCommand& c : run_sets) {
      if (!c.cmd->parsed()) continue;
      const System system =
          load_system_named(c.system.empty() ? std::string(calib::default_system_file(c.set)) : c.system);
      const auto runs = calib::read_cluster_runs(c.set, c.file);
      calib::ClusterFit fitted;
      const auto rows = calib::validate_runs(system, runs, c.unfitted, &fitted);
      std::cout << calib::runs_csv(c.set, rows);
      std::cerr << calib::runs_summary(c.set, rows);
      if (c.set == calib::RunSet::Nanotron && !c.unfitted) {
        const calib::ClusterNetwork& net = fitted.network;
        std::string line = "# network: all-reduce bus bandwidth by job nodes (median over fit runs):";
        for (std::size_t i = 0; i < net.scaling.nodes.size(); ++i) {
          line += fmt::format(" {}:{:.1f}GB/s({})", net.scaling.nodes[i], net.scaling.allreduce_bus_GBps[i], net.runs[i]);
        }
        std::cerr << line << "\n";
        std::cerr << fmt::format("# compute: kernel efficiencies x {:.2f} (median |rel err| of {} {}fit runs {:.4f} -> {:.4f})\n",
                                 fitted.compute.compute, fitted.compute.runs, fitted.compute.one_node ? "one-node " : "",
                                 fitted.compute.median_abs_before, fitted.compute.median_abs_after);
        const calib::FrameworkOverhead& o = fitted.overhead.overhead;
        std::cerr << fmt::format(
            "# overhead: per block and micro-batch {:.2f} ms + tp x {:.3f} ms with pp > 1 + {:.2f} ms per further "
            "tensor-parallel node; {:.0f} ms per micro-batch slot before the pipeline fix (median |rel err| of {} "
            "fit runs {:.4f} -> {:.4f})\n",
            o.layer_s * 1e3, o.pipelined_layer_per_tp_s * 1e3, o.tp_domain_layer_s * 1e3, o.before_fix_slot_s * 1e3,
            fitted.overhead.runs, fitted.overhead.median_abs_before, fitted.overhead.median_abs_after);
      }
      if (!c.inputs.empty()) {
        const calib::RunInputsWritten w =
            calib::write_run_inputs(c.inputs, fitted.system, rows);
        std::cerr << calib::run_inputs_summary(w, c.inputs);
      }
      return 0;
    }
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
