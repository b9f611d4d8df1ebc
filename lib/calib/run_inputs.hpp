#pragma once
// The inputs behind the predictions of `validate train` as files `estimate` reads
// (`validate train --inputs DIR`, docs/validation.md), and a system file with its calibrations
// beside it (what `validate fit host_floor` writes):
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
// Run from DIR, a line's `estimate ARGS --json` prints as totals.t the run's predicted step bit for
// bit. A model or runtime written for several runs is one file.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "model/plan.hpp"
#include "model/runtime.hpp"
#include "model/system.hpp"
#include "model/transformer.hpp"

namespace perfsweep::calib {

struct RunInputsWritten {
  std::size_t lines = 0;          // commands.tsv lines
  std::size_t not_expressed = 0;  // runs without a prediction: no line
  std::size_t models = 0, runtimes = 0;  // distinct files written
};

// DIR/systems/STEM.yaml (STEM: the system's name) with its kernel and collective calibrations
// beside it (all 17 digits), `header` (comment lines) first, the system's default runtime left out
// (every command names its runtime). Returns the file relative to DIR.
std::string write_system_file(const std::filesystem::path& dir, const System& system, const std::string& header = "");

// estimate's flags for a layout and global batch (ARGS without the input files).
std::string estimate_layout_arguments(const Layout& layout, std::int64_t global_batch);

// One measured run as estimate evaluates it: its id in commands.tsv, model, runtime (with its
// mechanisms), layout and global batch.
struct RunInput {
  std::string id;
  const Transformer* model = nullptr;
  const Runtime* runtime = nullptr;
  Layout layout;
  std::int64_t global_batch = 0;
};
// Writes DIR as above for these runs, predicted on `system`.
RunInputsWritten write_inputs(const std::filesystem::path& dir, const System& system, const std::vector<RunInput>& runs);

// "# inputs: 109 runs in DIR/commands.tsv (15 models, 1 runtimes)", then the runs without a
// line, for validate's stderr.
std::string run_inputs_summary(const RunInputsWritten& written, const std::string& dir);

}  // namespace perfsweep::calib
