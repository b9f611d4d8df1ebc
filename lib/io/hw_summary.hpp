#pragma once
// A hardware sweep's results as grids (best throughput and speed-up over the base system per
// point and GPU count) and the few lines a run closes with.
#include <cstdint>
#include <string>
#include <vector>

#include "config/hw_sweep.hpp"
#include "search/sweep_target.hpp"

namespace perfsweep {

struct HwSweepGrid {
  std::size_t n_points = 0, n_gpus = 0;
  std::vector<double> best;       // [point][GPU count], samples/s; NaN: nothing fits
  std::vector<double> base_best;  // [GPU count], the base system's
  std::vector<double> speedup;    // best / base_best; NaN where either is
};

// results: the points in index order, then the base system.
HwSweepGrid hw_sweep_grid(const HardwareSweep& sweep, std::size_t n_gpu_counts, const std::vector<TargetResult>& results);

// "best point ...", "speed-up over the base ..." at the largest GPU count where the base fits.
std::vector<std::string> hw_sweep_summary(const HardwareSweep& sweep, const std::vector<std::int64_t>& n_gpus,
                                          const std::vector<TargetResult>& results);

}  // namespace perfsweep
