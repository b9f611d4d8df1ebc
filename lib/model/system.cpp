#include "model/system.hpp"

#include <cmath>

namespace perfsweep {

double NetworkScaling::bus_GBps(std::int64_t job_nodes) const {
  const std::size_t n = nodes.size();
  if (n == 0) return std::nan("");
  if (n == 1 || job_nodes <= nodes.front()) return allreduce_bus_GBps.front();
  std::size_t hi = 1;
  while (hi + 1 < n && nodes[hi] < job_nodes) ++hi;
  const double x0 = std::log(static_cast<double>(nodes[hi - 1])), x1 = std::log(static_cast<double>(nodes[hi]));
  const double y0 = std::log(allreduce_bus_GBps[hi - 1]), y1 = std::log(allreduce_bus_GBps[hi]);
  return std::exp(y0 + (y1 - y0) * (std::log(static_cast<double>(job_nodes)) - x0) / (x1 - x0));
}

System at_scale(const System& s, std::int64_t n_gpus) {
  System out = s;
  const std::int64_t domain = s.nvlink_size > 0 ? s.nvlink_size : 1;
  const std::int64_t job_nodes = n_gpus / domain;
  if (s.network_scaling && !s.network_scaling->nodes.empty() && job_nodes > 1 && s.ib_eff > 0) {
    out.ib_bandwidth = s.network_scaling->bus_GBps(job_nodes) / static_cast<double>(domain) / s.ib_eff;
  }
  return out;
}

std::string calibration_status(const System& s) {
  if (kernels_calibrated(s)) return "calibrated (kernels: " + s.kernels_file + ")";
  if (s.calibration) return "collectives calibrated, kernels uncalibrated (roofline)";
  return "uncalibrated (roofline)";
}

std::string system_caveat_text(const System& s) {
  std::string out = kernels_calibrated(s) ? "" : calibration_status(s);
  if (!s.caveat.empty()) out += (out.empty() ? "" : "; ") + s.caveat;
  return out;
}

}  // namespace perfsweep
