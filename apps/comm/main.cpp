// comm: the collective model against nccl-tests measurements.
//   comm validate --measurements FILE (--system NAME|PATH | --calibration FILE) [--nodes 4,16]
//       one CSV row per measurement on stdout, a relative-error summary on stderr;
//   comm fit --measurements FILE [--nodes 1,2,8] --out FILE.yaml
//       a calibration for `estimate` and `sweep`.
#include <spdlog/spdlog.h>

#include "common/cli.hpp"

#include <CLI/CLI.hpp>
#include <csignal>
#include <iostream>
#include <optional>
#include <string>

#include "comm/calibration.hpp"
#include "comm/measurements.hpp"
#include "comm/validation.hpp"
#include "config/inputs.hpp"
#include "config/system_list.hpp"
#include "common/tool.hpp"
#include "core/error.hpp"
#include "core/files.hpp"

using namespace perfsweep;

namespace {

struct MeasurementOptions {
  std::string file;
  std::int64_t num_nodes = 0;      // for a single nccl-tests output
  std::int64_t gpus_per_node = 0;  // for a single nccl-tests output
  std::string op;                  // for a single nccl-tests output without header
  std::string nodes;               // restrict to these node counts

  void add_to(CLI::App& cmd) {
    cmd.add_option("--measurements,-m", file,
                   "nccl-tests measurements: a .csv, a .yaml manifest of nccl-tests outputs, or one output")
        ->required();
    cmd.add_option("--num-nodes", num_nodes, "nodes of a single nccl-tests output");
    cmd.add_option("--gpus-per-node", gpus_per_node, "GPUs per node of a single nccl-tests output");
    cmd.add_option("--op", op, "collective of a single nccl-tests output (else from its header or name)");
    cmd.add_option("--nodes", nodes, "only the measurements with these node counts, e.g. 4,16,64,256");
  }

  std::vector<comm::Measurement> read() const {
    std::optional<CommType> type;
    if (!op.empty()) {
      type = comm::parse_collective_name(op);
      if (!type) throw InputError("--op must be allreduce, allgather or reducescatter, got '" + op + "'");
    }
    auto rows = comm::read_measurements(file, num_nodes > 0 ? std::optional(num_nodes) : std::nullopt,
                                        gpus_per_node > 0 ? std::optional(gpus_per_node) : std::nullopt, type);
    if (!nodes.empty()) rows = comm::select_nodes(rows, parse_gpu_counts(nodes, "--nodes"));
    if (rows.empty()) throw InputError(file + ": no measurements" + (nodes.empty() ? "" : " with --nodes " + nodes));
    spdlog::info("{} measurements from {}{}", rows.size(), file, nodes.empty() ? "" : " (nodes " + nodes + ")");
    return rows;
  }
};

int run_validate(const MeasurementOptions& in, const std::string& system_name, const std::string& calibration_file) {
  const auto rows = in.read();
  std::optional<System> system;
  std::optional<comm::Calibration> calibration;
  if (!system_name.empty()) system = load_system_named(system_name);
  if (!calibration_file.empty()) calibration = comm::load_calibration(calibration_file);
  // A system file's own `calibration:` applies unless --calibration replaces it, as in estimate and sweep.
  const comm::Calibration* model = calibration ? &*calibration : system ? system->calibration.get() : nullptr;
  const auto results = comm::validate(rows, system ? &*system : nullptr, model);
  std::cout << comm::validation_csv(results);
  flush_stdout();
  std::cerr << comm::validation_summary(results);
  return 0;
}

int run_fit(const MeasurementOptions& in, const std::string& out) {
  refuse_output_over_input(out, {in.file});
  const auto rows = in.read();
  comm::Calibration cal = comm::fit(rows);
  cal.source = in.file + (in.nodes.empty() ? "" : " (nodes " + in.nodes + ")");
  spdlog::info("fixed overhead per call {:.2f} us", cal.overhead_s * 1e6);
  for (const auto& p : cal.placements) {
    spdlog::info("{} x {} GPU/node: {} node counts ({}..{}), step latency {:.2f} us, step bandwidth {:.2f} GB/s",
                 comm_type_name(p.op), p.gpus_per_node, p.tables.size(), p.min_nodes(), p.max_nodes(),
                 p.step_latency_s * 1e6, p.step_bandwidth_GBps);
  }
  comm::save_calibration(cal, out);
  spdlog::info("wrote {}", out);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Collective times: the analytical model against nccl-tests measurements, and a calibrated model"};
  app.require_subcommand(1);
  app.fallthrough();  // -q, -v after the subcommand too
  cli::Verbosity verbosity;
  cli::add_common_flags(app, verbosity);

  MeasurementOptions validate_in, fit_in;
  std::string system_name, calibration_file, out_file;
  CLI::App* validate = app.add_subcommand("validate", "predict every measurement; CSV on stdout, summary on stderr");
  validate_in.add_to(*validate);
  validate->add_option("--system", system_name,
                       "analytical model of this system (name or YAML path), and its `calibration:` if it names one");
  validate->add_option("--calibration", calibration_file,
                       "calibration from `comm fit` (with --system: analytical outside its range)");
  CLI::App* fit = app.add_subcommand("fit", "fit a calibration to the measurements");
  fit_in.add_to(*fit);
  fit->add_option("--out,-o", out_file, "calibration YAML to write")->required();

  return cli::run_tool(nullptr, app, argc, argv, verbosity, {.ignore_file_size_signal = true}, [&]() -> int {
    if (validate->parsed()) {
      if (system_name.empty() && calibration_file.empty()) {
        throw InputError("validate needs --system or --calibration");
      }
      return run_validate(validate_in, system_name, calibration_file);
    }
    return run_fit(fit_in, out_file);
  });
}
