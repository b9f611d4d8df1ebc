#include "model/comm_calibration.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <span>

namespace perfsweep::comm {

namespace {

// Piecewise linear in log-log through (xs, ys), xs ascending; outside the points, the end segment's
// slope clamped to [below_lo, below_hi] below the first and [above_lo, above_hi] above the last.
double loglog_lookup(std::span<const double> xs, std::span<const double> ys, double x, double below_lo,
                     double below_hi, double above_lo, double above_hi) {
  const std::size_t n = xs.size();
  const double lx = std::log(x);
  std::size_t hi = 1;
  while (hi + 1 < n && xs[hi] < x) ++hi;
  const std::size_t lo = hi - 1;
  const double x0 = std::log(xs[lo]), x1 = std::log(xs[hi]);
  const double y0 = std::log(ys[lo]), y1 = std::log(ys[hi]);
  double slope = (y1 - y0) / (x1 - x0);
  if (x < xs.front()) return std::exp(y0 + std::clamp(slope, below_lo, below_hi) * (lx - x0));
  if (x > xs.back()) return std::exp(y1 + std::clamp(slope, above_lo, above_hi) * (lx - x1));
  return std::exp(y0 + slope * (lx - x0));
}

// Seconds per ring step for a chunk of `chunk_bytes` at the table's node count.
double step_seconds(const StepTable& table, double chunk_bytes) {
  return loglog_lookup(table.chunk_bytes, table.step_s, chunk_bytes, 0.0, 1.0, 1.0, 1.0);
}

// Total seconds of the collective at the table's own node count.
double table_seconds(const StepTable& table, CommType op, std::int64_t gpus_per_node, double bytes) {
  const std::int64_t n = table.num_nodes * gpus_per_node;
  return table.overhead_s + ring_steps(op, n) * step_seconds(table, bytes / static_cast<double>(n));
}

}  // namespace

std::optional<CommType> parse_collective_name(std::string_view name) {
  std::string s(name);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s.ends_with("_perf")) s.erase(s.size() - 5);
  std::erase(s, '_');
  if (s == "allreduce") return CommType::AllReduce;
  if (s == "allgather") return CommType::AllGather;
  if (s == "reducescatter") return CommType::ReduceScatter;
  return std::nullopt;
}

double ring_steps(CommType op, std::int64_t n_gpus) {
  const auto hops = static_cast<double>(n_gpus - 1);
  switch (op) {
    case CommType::AllReduce: return 2 * hops;
    case CommType::AllGather:
    case CommType::ReduceScatter: return hops;
    default: return 0;
  }
}

const PlacementCalibration* Calibration::find(CommType op, std::int64_t gpus_per_node) const {
  for (const PlacementCalibration& p : placements) {
    if (p.op == op && p.gpus_per_node == gpus_per_node) return &p;
  }
  return nullptr;
}

std::optional<double> predict(const Calibration& cal, CommType op, double bytes, std::int64_t n_gpus,
                              std::int64_t fast_domain) {
  if (!(bytes >= 0) || n_gpus < 1 || fast_domain < 1) return std::nullopt;
  if (bytes == 0 || n_gpus == 1) return 0.0;
  const PlacementCalibration* p = cal.find(op, fast_domain);
  if (p == nullptr || n_gpus % fast_domain != 0) return std::nullopt;
  const std::int64_t nodes = n_gpus / fast_domain;
  const auto nodes_d = static_cast<double>(nodes);
  if (nodes < p->min_nodes() || nodes_d > static_cast<double>(p->max_nodes()) * cal.node_extrapolation) {
    return std::nullopt;
  }
  if (bytes < p->min_size_bytes / cal.size_extrapolation || bytes > p->max_size_bytes * cal.size_extrapolation) {
    return std::nullopt;
  }

  // Below the smallest measured message a collective is latency bound: it costs what the
  // smallest one did.
  bytes = std::max(bytes, p->min_size_bytes);
  const double chunk = bytes / static_cast<double>(n_gpus);
  const double steps = ring_steps(op, n_gpus);
  const std::vector<StepTable>& tables = p->tables;
  std::size_t hi = 0;
  while (hi < tables.size() && tables[hi].num_nodes < nodes) ++hi;
  if (hi < tables.size() && tables[hi].num_nodes == nodes) {
    return tables[hi].overhead_s + steps * step_seconds(tables[hi], chunk);
  }

  if (hi < tables.size()) {  // between two measured node counts (hi > 0: nodes >= min_nodes)
    const StepTable& a = tables[hi - 1];
    const StepTable& b = tables[hi];
    const double w = std::log(nodes_d / static_cast<double>(a.num_nodes)) /
                     std::log(static_cast<double>(b.num_nodes) / static_cast<double>(a.num_nodes));
    const double log_step = (1 - w) * std::log(step_seconds(a, chunk)) + w * std::log(step_seconds(b, chunk));
    const double overhead = (1 - w) * a.overhead_s + w * b.overhead_s;
    return overhead + steps * std::exp(log_step);
  }

  // Beyond the largest measured node count.
  const StepTable& last = tables.back();
  const double last_nodes = static_cast<double>(last.num_nodes);
  double step = step_seconds(last, chunk);
  if (tables.size() == 1) return last.overhead_s + steps * step;
  const StepTable& prev = tables[tables.size() - 2];
  const double span = std::log(last_nodes / static_cast<double>(prev.num_nodes));
  // A ring step costs at most what it did at the last node count. Allreduce's step time falls
  // with node count only where NCCL switched to its tree, which the tree bound below models.
  const double min_slope = op == CommType::AllReduce ? 0.0 : -1.0;
  const double slope = std::clamp((std::log(step) - std::log(step_seconds(prev, chunk))) / span, min_slope, 0.0);
  step *= std::exp(slope * std::log(nodes_d / last_nodes));
  const double ring = last.overhead_s + steps * step;
  if (op != CommType::AllReduce) return ring;
  const double t_last = table_seconds(last, op, fast_domain, bytes);
  const double t_prev = table_seconds(prev, op, fast_domain, bytes);
  const double tree = t_last + std::max(0.0, (t_last - t_prev) / span) * std::log(nodes_d / last_nodes);
  return std::min(ring, tree);
}

}  // namespace perfsweep::comm
