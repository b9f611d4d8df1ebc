#include "io/hw_summary.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

namespace perfsweep {

namespace {
double best_of(const TopN& top) {
  return top.items().empty() ? std::numeric_limits<double>::quiet_NaN() : top.items().front().throughput;
}

std::string point_values(const HardwareSweep& sweep, std::size_t index) {
  const System s = sweep.point(index);
  std::string out;
  for (const SweepAxis& a : sweep.axes) {
    for (const SweepParameter& p : a.parameters) {
      for (const SystemKey& f : kSystemKeys) {
        if (p.name != f.name) continue;
        char buf[96];
        std::snprintf(buf, sizeof buf, "%s%s %.6g %s", out.empty() ? "" : ", ", f.name, s.*f.member, f.unit);
        out += buf;
      }
    }
  }
  return out;
}
}  // namespace

HwSweepGrid hw_sweep_grid(const HardwareSweep& sweep, std::size_t n_gpu_counts, const std::vector<TargetResult>& results) {
  HwSweepGrid g;
  g.n_points = sweep.n_points();
  g.n_gpus = n_gpu_counts;
  g.best.assign(g.n_points * g.n_gpus, std::numeric_limits<double>::quiet_NaN());
  g.base_best.assign(g.n_gpus, std::numeric_limits<double>::quiet_NaN());
  for (std::size_t p = 0; p < g.n_points; ++p) {
    for (std::size_t k = 0; k < g.n_gpus; ++k) g.best[p * g.n_gpus + k] = best_of(results[p].tops[k]);
  }
  if (results.size() > g.n_points) {
    for (std::size_t k = 0; k < g.n_gpus; ++k) g.base_best[k] = best_of(results[g.n_points].tops[k]);
  }
  g.speedup.resize(g.best.size());
  for (std::size_t i = 0; i < g.best.size(); ++i) g.speedup[i] = g.best[i] / g.base_best[i % g.n_gpus];
  return g;
}

std::vector<std::string> hw_sweep_summary(const HardwareSweep& sweep, const std::vector<std::int64_t>& n_gpus,
                                          const std::vector<TargetResult>& results) {
  const HwSweepGrid g = hw_sweep_grid(sweep, n_gpus.size(), results);
  std::size_t k = g.n_gpus;
  while (k-- > 0 && std::isnan(g.base_best[k])) {
  }
  if (k >= g.n_gpus) return {"the base system fits at no GPU count searched: no speed-ups"};
  std::size_t best = g.n_points, fits = 0;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (std::size_t p = 0; p < g.n_points; ++p) {
    const double s = g.speedup[p * g.n_gpus + k];
    if (std::isnan(s)) continue;
    ++fits;
    lo = std::min(lo, s);
    hi = std::max(hi, s);
    if (best == g.n_points || g.best[p * g.n_gpus + k] > g.best[best * g.n_gpus + k]) best = p;
  }
  char line[512];
  std::vector<std::string> out;
  std::snprintf(line, sizeof line, "at %lld GPUs the base %s-NVS%lld trains %.4g samples/s", static_cast<long long>(n_gpus[k]),
                sweep.base.name.c_str(), static_cast<long long>(sweep.base.nvlink_size), g.base_best[k]);
  out.push_back(line);
  if (best == g.n_points) {
    out.push_back("no point of the sweep fits there");
    return out;
  }
  std::snprintf(line, sizeof line, "best point %zu (%s): %.4g samples/s, %.3gx the base", best,
                point_values(sweep, best).c_str(), g.best[best * g.n_gpus + k], g.speedup[best * g.n_gpus + k]);
  out.push_back(line);
  std::snprintf(line, sizeof line, "speed-up over the base: %.3gx to %.3gx over the %zu of %zu points that fit", lo, hi,
                fits, g.n_points);
  out.push_back(line);
  return out;
}

}  // namespace perfsweep
