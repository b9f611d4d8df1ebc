#pragma once
// The inputs behind the predictions of `validate megatron|vtrain|nanotron|train` as files
// `estimate` reads (`validate ... --inputs DIR`, docs/validation.md "Seeing how a measured run was mapped"):
//   DIR/models/NAME.yaml    each run's model (config/inputs.hpp: model_to_yaml);
//   DIR/systems/NAME.yaml   the system the runs were predicted on, before the job's scale
//                           (estimate takes it there itself), with its kernel calibration
//                           (NAME.kernels.yaml) and collective calibration (NAME.calibration.yaml)
//                           beside it and its network_scaling;
//   DIR/runtimes/NAME.yaml  each run's runtime, with the mechanisms its layout sets folded in
//                           (estimate has no flags for them);
//   DIR/commands.tsv        one line per run: `ID<TAB>estimate ARGS`, ARGS naming those files
//                           relative to DIR and every layout flag (degrees, micro-batch, global
//                           batch, NVLink placement, attention, execution options).
// Run from DIR, a line's `estimate ARGS --json` prints as totals.t the run's predicted step
// (runs_csv's predicted_iteration_s) bit for bit. A model or runtime written for several runs is
// one file. Runs the model cannot express (their prediction is an error) have no line.
// An ID is the run's id, with "@LINE" (its line in the measurements
// file) where the file repeats the id.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "calib/cluster_runs.hpp"

namespace perfsweep::calib {

struct RunInputsWritten {
  std::size_t lines = 0;          // commands.tsv lines
  std::size_t not_expressed = 0;  // runs without a prediction (RunPrediction::error): no line
  std::size_t models = 0, runtimes = 0;  // distinct files written
};

// estimate's flags for a layout and global batch (ARGS without the input files).
std::string estimate_layout_arguments(const Layout& layout, std::int64_t global_batch);

// The run's runtime with the mechanisms its layout sets (kRuntimeMechanisms) turned on, so that
// estimate, whose layouts have none set, evaluates the same execution; named NAME_MECHANISM...
// after those it turns on.
Runtime runtime_with_layout_mechanisms(const Runtime& runtime, const Layout& layout);

// One measured run as estimate evaluates it: its id in commands.tsv, model, runtime (the
// mechanisms its layout sets are folded in), layout and global batch.
struct RunInput {
  std::string id;
  const Transformer* model = nullptr;
  const Runtime* runtime = nullptr;
  Layout layout;
  std::int64_t global_batch = 0;
};
// Writes DIR as above for these runs, predicted on `system`.
RunInputsWritten write_inputs(const std::filesystem::path& dir, const System& system, const std::vector<RunInput>& runs);

// Writes DIR as above for the rows of one validate_runs call: `system` is what it predicted
// every run on (ClusterFit::system); each row's runtime is the one it was predicted under (with a
// fitted host floor, nanotron's). Files are replaced where they exist; others in DIR are left as
// they are.
RunInputsWritten write_run_inputs(const std::filesystem::path& dir, const System& system,
                                  const std::vector<RunResult>& rows);

// "# inputs: 109 runs in DIR/commands.tsv (15 models, 1 runtimes)", then the runs without a
// line, for validate's stderr.
std::string run_inputs_summary(const RunInputsWritten& written, const std::string& dir);

}  // namespace perfsweep::calib
