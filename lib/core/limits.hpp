#pragma once
// Bounds on the counts a user gives, so that no product, range or loop over them can overflow
// int64 or run for hours: GPU counts, batch sizes and kept configurations.
#include <cstdint>
#include <string>

#include "core/error.hpp"

namespace perfsweep {

inline constexpr std::int64_t kMaxGpuCount = std::int64_t{1} << 30;     // GPUs in one job
inline constexpr std::int64_t kMaxGlobalBatch = std::int64_t{1} << 32;  // samples per step
inline constexpr std::int64_t kMaxTopN = 100000;                         // configurations kept
// GPUs per NVLink domain: placements are enumerated over its divisors for every candidate.
inline constexpr std::int64_t kMaxNvlinkDomain = std::int64_t{1} << 16;
// Nodes of one measured job (nccl-tests rows, calibration tables, measured training runs), and
// GPUs per node: their product stays within kMaxGpuCount.
inline constexpr std::int64_t kMaxNodes = std::int64_t{1} << 20;
inline constexpr std::int64_t kMaxGpusPerNode = std::int64_t{1} << 10;
// Configurations `configs --max-points` may allow: each costs a whole step's evaluation (tens of
// microseconds to milliseconds), so 2^40 is already years.
inline constexpr std::int64_t kMaxConfigPoints = std::int64_t{1} << 40;
// SUMMA blocks of a 2d layout: the blocks split a GPU's shard of e or f (at most 2^22).
inline constexpr std::int64_t kMaxSummaBlocks = std::int64_t{1} << 22;

// The smallest efficiency or bandwidth fraction (of a peak) a file may give: the model divides by
// them, and below this the quotient is physically meaningless (a kernel a million times slower
// than its roofline) while near the denormals it becomes inf.
inline constexpr double kMinFraction = 1e-6;
// The smallest positive measured value a file may give (seconds, TFLOP/s; relative errors divide
// by it): a picosecond is far below any kernel launch.
inline constexpr double kMinMeasured = 1e-12;

// InputError naming the flag and the value unless 1 <= value <= max.
inline void check_count(std::int64_t value, std::int64_t max, const std::string& flag) {
  if (value < 1) throw InputError(flag + " must be a positive integer, got " + std::to_string(value));
  if (value > max) {
    throw InputError(flag + " must be at most " + std::to_string(max) + ", got " + std::to_string(value));
  }
}

}  // namespace perfsweep
