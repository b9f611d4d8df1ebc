#pragma once
// The kernel calibration written by `validate fit-kernels` and named by a system file's
// `kernels:` key: YAML with format "perfsweep-kernel-calibration", version 2 (1 still loads; the model it holds:
// model/kernel_calibration.hpp).
#include <filesystem>

#include "model/kernel_calibration.hpp"

namespace perfsweep::kernels {

// Writes to a temporary file and renames it, so an interrupted run leaves no truncated file.
// Numbers have `significant_digits` digits: 9 keeps a fitted file readable, kExactDigits writes
// every double so that load_calibration reads back the same one.
inline constexpr int kReadableDigits = 9, kExactDigits = 17;
void save_calibration(const Calibration& calibration, const std::filesystem::path& file,
                      int significant_digits = kReadableDigits);

// Validates every key (unknown keys, ranges: efficiencies and bandwidth fractions in (0, 1],
// times >= 0, tiles >= 1) and names file, entry and key in its InputErrors. Sets `file`.
Calibration load_calibration(const std::filesystem::path& file);

}  // namespace perfsweep::kernels
