#include "comm/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "core/error.hpp"

namespace perfsweep::comm {

namespace {

constexpr double kBytesPerGB = 1e9;

// Least-squares overhead shared by every collective call, from rows grouped by (op, placement,
// chunk): within a group t_i = overhead + steps_i * step, one unknown step per group. Relative
// residuals (t_i weighted by 1 / t_i). The per-group step eliminates in closed form, leaving a
// residual linear in the overhead: r_i = overhead * u_i + v_i.
struct OverheadRow {
  double steps, seconds;
};
double fit_overhead(const std::map<std::tuple<CommType, std::int64_t, double>, std::vector<OverheadRow>>& groups) {
  double uu = 0, uv = 0;
  for (const auto& [key, rows] : groups) {
    if (rows.size() < 2) continue;
    double d = 0, a = 0, b = 0;
    for (const OverheadRow& r : rows) {
      d += r.steps * r.steps / (r.seconds * r.seconds);
      a += r.steps / r.seconds;
      b += r.steps / (r.seconds * r.seconds);
    }
    for (const OverheadRow& r : rows) {
      const double u = (1 - r.steps * b / d) / r.seconds;
      const double v = (r.steps * a / d - r.seconds) / r.seconds;
      uu += u * u;
      uv += u * v;
    }
  }
  if (!(uu > 0)) return 0;
  return std::max(0.0, -uv / uu);
}

// Weighted least squares of step = latency + chunk * inverse_bandwidth (relative residuals).
void fit_alpha_beta(PlacementCalibration& p) {
  double s11 = 0, s12 = 0, s22 = 0, r1 = 0, r2 = 0;
  const bool have_multi_node = p.tables.back().num_nodes > 1;
  for (const StepTable& t : p.tables) {
    if (have_multi_node && t.num_nodes == 1) continue;
    for (std::size_t i = 0; i < t.chunk_bytes.size(); ++i) {
      const double w = 1 / (t.step_s[i] * t.step_s[i]);
      const double c = t.chunk_bytes[i];
      s11 += w;
      s12 += w * c;
      s22 += w * c * c;
      r1 += w * t.step_s[i];
      r2 += w * c * t.step_s[i];
    }
  }
  const double det = s11 * s22 - s12 * s12;
  if (!(det > 0)) return;
  const double latency = (s22 * r1 - s12 * r2) / det;
  const double inverse_bandwidth = (s11 * r2 - s12 * r1) / det;
  p.step_latency_s = std::max(0.0, latency);
  p.step_bandwidth_GBps = inverse_bandwidth > 0 ? 1 / (inverse_bandwidth * kBytesPerGB) : 0;
}

}  // namespace

Calibration fit(const std::vector<Measurement>& measurements) {
  // (op, gpus_per_node, num_nodes, size) -> mean measured seconds.
  using Point = std::tuple<CommType, std::int64_t, std::int64_t, double>;
  std::map<Point, std::pair<double, int>> points;
  for (const Measurement& m : measurements) {
    if (!is_calibrated_op(m.op)) {
      throw InputError("cannot calibrate " + std::string(comm_type_name(m.op)) +
                       ": only allreduce, allgather and reducescatter");
    }
    if (m.n_gpus() < 2) continue;
    if (!(m.size_bytes > 0) || !(m.measured_s() > 0)) {
      throw InputError("measurement of " + std::string(comm_type_name(m.op)) + " with size " +
                       std::to_string(m.size_bytes) + " has a non-positive size or time");
    }
    auto& [sum, count] = points[{m.op, m.gpus_per_node, m.num_nodes, m.size_bytes}];
    sum += m.measured_s();
    ++count;
  }
  if (points.empty()) throw InputError("no measurements over two or more GPUs to calibrate from");

  // The overhead: from the ring-only collectives when there are any (allreduce switches to a
  // tree at small sizes, where its step count does not hold), else from everything.
  std::map<std::tuple<CommType, std::int64_t, double>, std::vector<OverheadRow>> ring_groups, all_groups;
  for (const auto& [point, acc] : points) {
    const auto& [op, gpus, nodes, size] = point;
    if (nodes < 2) continue;
    const std::int64_t n = nodes * gpus;
    const OverheadRow row{ring_steps(op, n), acc.first / acc.second};
    const double chunk = size / static_cast<double>(n);
    all_groups[{op, gpus, chunk}].push_back(row);
    if (op != CommType::AllReduce) ring_groups[{op, gpus, chunk}].push_back(row);
  }
  Calibration cal;
  cal.overhead_s = fit_overhead(ring_groups.empty() ? all_groups : ring_groups);

  for (auto it = points.begin(); it != points.end();) {
    const auto [op, gpus, first_nodes, first_size] = it->first;
    PlacementCalibration p;
    p.op = op;
    p.gpus_per_node = gpus;
    p.min_size_bytes = first_size;
    p.max_size_bytes = first_size;
    for (; it != points.end() && std::get<0>(it->first) == op && std::get<1>(it->first) == gpus;) {
      const std::int64_t nodes = std::get<2>(it->first);
      const std::int64_t n = nodes * gpus;
      std::vector<std::pair<double, double>> rows;  // (size, seconds), ascending size
      for (; it != points.end() && std::get<0>(it->first) == op && std::get<1>(it->first) == gpus &&
             std::get<2>(it->first) == nodes;
           ++it) {
        rows.emplace_back(std::get<3>(it->first), it->second.first / it->second.second);
      }
      if (rows.size() < 2) {
        throw InputError(std::string(comm_type_name(op)) + " on " + std::to_string(nodes) + " nodes x " +
                         std::to_string(gpus) + " GPUs: need at least two message sizes, got " +
                         std::to_string(rows.size()));
      }
      StepTable table;
      table.num_nodes = nodes;
      // Single-node runs never touch the network and can be faster than the multi-node overhead;
      // cap it so that ring steps keep at least a quarter of the fastest measured time.
      double fastest = rows.front().second;
      for (const auto& r : rows) fastest = std::min(fastest, r.second);
      table.overhead_s = std::min(cal.overhead_s, 0.75 * fastest);
      const double steps = ring_steps(op, n);
      for (const auto& [size, seconds] : rows) {
        table.chunk_bytes.push_back(size / static_cast<double>(n));
        table.step_s.push_back((seconds - table.overhead_s) / steps);
        p.min_size_bytes = std::min(p.min_size_bytes, size);
        p.max_size_bytes = std::max(p.max_size_bytes, size);
      }
      p.tables.push_back(std::move(table));
    }
    fit_alpha_beta(p);
    cal.placements.push_back(std::move(p));
  }
  return cal;
}

}  // namespace perfsweep::comm
