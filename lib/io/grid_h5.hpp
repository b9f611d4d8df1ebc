#pragma once
// Output of a hardware design-space sweep: the sweep's grid for Python and ParaView.
//   /grid/<parameter>     values along its axis (dimension scales of best_throughput), attrs axis, units
//   /grid/n_gpus          GPU counts searched
//   /grid/best_throughput [axis 0][axis 1][GPU count], samples/s, NaN where nothing fits
//   /grid/speedup, /grid/days   the same over the base system's throughput, and as training days
//   /xdmf/<metric>_<n>_gpus     2-D slices of those for the sidecar
//   /provenance/sweep.yaml, /provenance/base_system.yaml
//   /points/<index>       each point's results in the layout of a system group of a plain run
//   /base                 the unswept base system's results
// plus a sidecar <file>.xmf (XDMF 3) that opens the grid in ParaView as a 2-D rectilinear mesh
// with the best throughput, speed-up and days at each GPU count as point data, and records the
// SHA-256 of the .h5 it belongs to; the two are published as one unit (publish_pair).
#include <string>
#include <vector>

#include "config/hw_sweep.hpp"
#include "io/sweep_h5.hpp"

namespace perfsweep {

// targets: the points in index order, then the base system.
void write_hw_sweep_file(const std::string& path, const RunMetadata& meta, const HardwareSweep& sweep,
                         const std::string& sweep_yaml, const std::string& base_system_yaml,
                         const std::vector<SweepTarget>& targets,
                         const std::vector<TargetResult>& results);

// The sidecar's path: the .h5 path with its extension replaced by .xmf.
std::string xdmf_path_for(const std::string& h5_path);

// The XDMF text for an HDF5 file `h5_name` (as referenced from the .xmf's directory) whose bytes
// hash to `h5_sha256` (recorded as the Information "h5_sha256", which readers check).
std::string xdmf_for(const std::string& h5_name, const HardwareSweep& sweep, const std::vector<std::int64_t>& n_gpus,
                     bool with_days, const std::string& h5_sha256);

}  // namespace perfsweep
