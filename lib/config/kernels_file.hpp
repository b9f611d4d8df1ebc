#pragma once
// The kernel calibration written by `validate fit-kernels` and named by a system file's
// `kernels:` key: YAML with format "perfsweep-kernel-calibration", version 2 (1 still loads; the model it holds:
// model/kernel_calibration.hpp).
#include <filesystem>

#include "model/kernel_calibration.hpp"

namespace perfsweep::kernels {

// Writes to a temporary file and renames it, so an interrupted run leaves no truncated file.
void save_calibration(const Calibration& calibration, const std::filesystem::path& file);

// Validates every key (unknown keys, ranges: efficiencies and bandwidth fractions in (0, 1],
// times >= 0, tiles >= 1) and names file, entry and key in its InputErrors. Sets `file`.
Calibration load_calibration(const std::filesystem::path& file);

}  // namespace perfsweep::kernels
