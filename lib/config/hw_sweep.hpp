#pragma once
// Hardware design-space sweeps (sweeps/bw_capacity.yaml, sweeps/flops_capacity.yaml): a base
// system and one or two axes of system parameters. Parameters listed under one axis are zipped
// (they move together); the two axes are crossed. Point index = i0 * len(axis 1) + i1.
//
//   description: free text
//   base: {system: B200, nvs: 8}
//   axes:
//     - hbm_capacity: {linspace: [80, 1000, 32]}          # axis 0
//     - hbm_bandwidth: [500, 1000, 2000]                   # axis 1: an explicit list
//   # or values interpolated between systems' own values, segment by segment, as the
//   # reference's sweep_flops_cap_bw() does:
//   #   matrix_flops_fp16: {interpolate: {systems: [A100, H200, B200, B200-next], points_per_segment: 8}}
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "model/system.hpp"

namespace perfsweep {

struct SweepParameter {
  std::string name;  // a numeric system key, e.g. "hbm_bandwidth"
  std::vector<double> values;
};

struct SweepAxis {
  std::vector<SweepParameter> parameters;  // zipped: equal lengths
  std::size_t size() const { return parameters.empty() ? 0 : parameters.front().values.size(); }
};

struct HardwareSweep {
  std::string name;         // file stem, e.g. "bw_capacity"
  std::string description;
  std::string base_system;  // as written (name or path)
  System base;              // loaded, with nvlink_size = nvs
  std::vector<SweepAxis> axes;  // one or two
  std::size_t n_points() const;
  std::size_t axis_size(std::size_t axis) const { return axis < axes.size() ? axes[axis].size() : 1; }
  // The base system with point `index`'s parameters set.
  System point(std::size_t index) const;
};

HardwareSweep load_hardware_sweep(const std::filesystem::path& file);

// numpy.linspace(start, stop, num): start + i * ((stop - start) / (num - 1)), the last value
// exactly stop.
std::vector<double> linspace(double start, double stop, std::int64_t num);

}  // namespace perfsweep
