#pragma once
// A sweep's HDF5 file (io/sweep_h5.hpp, a hardware sweep's io/grid_h5.hpp) read back into plain
// data, for the report (io/html_report.hpp). Every error is an InputError naming the file and
// the field: a missing file, one that is not HDF5, one without perfsweep's schema, a missing or
// malformed dataset.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace perfsweep {

// Name and value, as the file's attributes give them (attr_text: strings as they are, numbers
// "%.10g").
using TextField = std::pair<std::string, std::string>;

// One column of a `top/` table, with its `units` attribute (integers read as doubles).
struct ResultColumn {
  std::string name;
  std::string units;
  std::vector<double> values;
};

// A system group (plain run), or a hardware sweep's point or base: its attributes and `top/` table.
struct ResultTarget {
  std::string group;   // its path in the file: "/B200-NVS8", "/points/3", "/base"
  std::string name;    // the system's name
  std::int64_t nvs = 0;
  double hbm_capacity_gb = 0;
  std::string runtime;        // "reference", "megatron", ...
  std::string runtime_fnv1a;  // "" under the reference
  std::string comm_model;     // "analytical" or "calibrated: FILE"
  std::vector<TextField> parameters;  // every attribute but the echoed files, in name order
  std::vector<std::string> config_keys, placement_keys, execution_keys;  // top/'s key columns
  std::vector<ResultColumn> columns;  // every top/ column but `count`, in name order
  // The best configuration's launch line at each GPU count (the group's n_gpus and best_launch,
  // under a runtime whose framework has one); empty otherwise.
  std::string launch_framework;
  std::vector<std::pair<std::int64_t, std::string>> best_launch;
  // Optional attributes: the system's calibration status and caveat, its price of a GPU-hour (0: none).
  std::string calibration_status, caveat;
  double gpu_hour_cost = 0;
  std::size_t rows = 0;
  std::int64_t i0 = -1, i1 = -1;  // a hardware sweep point's place on the grid

  // The column `name`, or null when the file has none of that name.
  const ResultColumn* column(const std::string& name) const;
};

// One axis of a hardware sweep: its parameters (zipped ones move together) and their values.
struct GridAxis {
  std::vector<std::string> names, units;
  std::vector<std::vector<double>> values;  // [parameter][position]
  std::size_t size() const { return values.empty() ? 1 : values.front().size(); }
};

// A hardware sweep's /grid: best throughput and speed-up over the base, [axis 0][axis 1][GPU count],
// NaN where nothing fits.
struct ResultGrid {
  std::string sweep, description, base_system;
  std::vector<GridAxis> axes;  // one or two
  std::vector<std::int64_t> n_gpus;
  std::vector<double> best_throughput, speedup;
};

struct SweepFile {
  std::string path;
  std::string strategy, model;
  std::int64_t global_batch = 0;
  std::vector<TextField> run;               // the root attributes, in name order
  std::vector<TextField> model_parameters;  // /model's attributes
  std::vector<TextField> provenance;        // echoed input files: name and text
  std::vector<ResultTarget> targets;        // plain: the system groups in name order; hardware
                                            // sweep: the points by index, then the base
  std::optional<ResultGrid> grid;           // a hardware sweep's
};

SweepFile read_sweep_file(const std::string& path);

// The same for a file of unknown origin (report's inputs): HDF5 1.10 itself can crash on a damaged
// object header (a flipped byte in an attribute table crashes H5Aiterate2 before any of its
// answers can be checked), so the file is read first in a child process; where that child dies
// rather than reading it or refusing it, InputError naming the file, before anything is written.
SweepFile read_sweep_file_isolated(const std::string& path);

// Execution option codes of the HDF5 columns (io/sweep_h5.cpp) as the flags spell them:
// recompute 2 -> "full", schedule 1 -> "zb-h1"; other keys and unknown codes as the number.
std::string execution_value_name(const std::string& key, std::int64_t code);

}  // namespace perfsweep
