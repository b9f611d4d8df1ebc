#pragma once
// The calibration file written by `comm fit` and named by a system file's `calibration:` key:
// YAML with format "perfsweep-comm-calibration", version 1 (the model it holds:
// model/comm_calibration.hpp).
#include <filesystem>

#include "model/comm_calibration.hpp"

namespace perfsweep::comm {

// Writes to a temporary file and renames it, so an interrupted run leaves no truncated file.
void save_calibration(const Calibration& calibration, const std::filesystem::path& file);

// Validates everything and names file, entry and key in its InputErrors. Sets `file` (as given)
// and `file_text` (the bytes read).
Calibration load_calibration(const std::filesystem::path& file);

}  // namespace perfsweep::comm
