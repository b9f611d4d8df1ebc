#include "comm/calibration.hpp"

#include <yaml-cpp/yaml.h>

#include "config/yaml_file.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <span>
#include <tuple>

#include "core/error.hpp"

namespace perfsweep::comm {

namespace {

constexpr int kFormatVersion = 1;
constexpr const char* kFormatName = "perfsweep-comm-calibration";
constexpr double kBytesPerGB = 1e9;

bool is_calibrated_op(CommType op) {
  return op == CommType::AllReduce || op == CommType::AllGather || op == CommType::ReduceScatter;
}

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

std::string_view comm_model_name(CommModel model) {
  return model == CommModel::Calibrated ? "calibrated" : "analytical";
}

CollectiveTime collective_time(const System& system, const Calibration* calibration, CommType type,
                               double volume_gb, std::int64_t n_gpus, std::int64_t fast_domain) {
  if (calibration != nullptr) {
    if (const auto t = predict(*calibration, type, volume_gb * kBytesPerGB, n_gpus, fast_domain)) {
      return {*t, CommModel::Calibrated};
    }
  }
  return {collective_seconds(system, type, volume_gb, n_gpus, fast_domain), CommModel::Analytical};
}

// ---------------------------------------------------------------------------------------------
// YAML

void save_calibration(const Calibration& cal, const std::filesystem::path& file) {
  YAML::Emitter out;
  out.SetDoublePrecision(17);
  out << YAML::Comment(
      "perfsweep communication calibration (comm fit). A collective of `size` bytes over n GPUs takes\n"
      "overhead_s + ring_steps(n) * step_s(size / n), step_s interpolated in chunk_bytes and across\n"
      "node counts (log-log); ring_steps = n - 1, 2 (n - 1) for allreduce. Times in seconds.");
  out << YAML::BeginMap;
  out << YAML::Key << "format" << YAML::Value << kFormatName;
  out << YAML::Key << "version" << YAML::Value << kFormatVersion;
  out << YAML::Key << "source" << YAML::Value << cal.source;
  out << YAML::Key << "overhead_s" << YAML::Value << cal.overhead_s;
  out << YAML::Key << "node_extrapolation" << YAML::Value << cal.node_extrapolation;
  out << YAML::Key << "size_extrapolation" << YAML::Value << cal.size_extrapolation;
  out << YAML::Key << "collectives" << YAML::Value << YAML::BeginSeq;
  for (const PlacementCalibration& p : cal.placements) {
    out << YAML::BeginMap;
    out << YAML::Key << "op" << YAML::Value << std::string(comm_type_name(p.op));
    out << YAML::Key << "gpus_per_node" << YAML::Value << p.gpus_per_node;
    out << YAML::Key << "size_bytes" << YAML::Value << YAML::Flow << YAML::BeginSeq << p.min_size_bytes
        << p.max_size_bytes << YAML::EndSeq;
    out << YAML::Key << "step_latency_s" << YAML::Value << p.step_latency_s;
    out << YAML::Key << "step_bandwidth_GBps" << YAML::Value << p.step_bandwidth_GBps;
    out << YAML::Key << "node_counts" << YAML::Value << YAML::BeginSeq;
    for (const StepTable& t : p.tables) {
      out << YAML::BeginMap;
      out << YAML::Key << "num_nodes" << YAML::Value << t.num_nodes;
      out << YAML::Key << "overhead_s" << YAML::Value << t.overhead_s;
      out << YAML::Key << "chunk_bytes" << YAML::Value << YAML::Flow << t.chunk_bytes;
      out << YAML::Key << "step_s" << YAML::Value << YAML::Flow << t.step_s;
      out << YAML::EndMap;
    }
    out << YAML::EndSeq << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  if (!out.good()) throw InputError(file.string() + ": cannot write calibration: " + out.GetLastError());

  // Write then rename, so an interrupted run never leaves a truncated calibration behind.
  const std::filesystem::path tmp = file.string() + ".tmp";
  {
    std::ofstream f(tmp);
    if (!f) throw InputError(file.string() + ": cannot write");
    f << out.c_str() << "\n";
    if (!f) throw InputError(file.string() + ": write failed");
  }
  std::filesystem::rename(tmp, file);
}

namespace {

void check_keys(const YAML::Node& node, std::initializer_list<const char*> allowed, const std::string& at) {
  for (const auto& kv : node) {
    const std::string k = kv.first.as<std::string>();
    if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return k == a; })) {
      throw InputError(at + ": unknown key '" + k + "'");
    }
  }
}

const YAML::Node require(const YAML::Node& node, const char* key, const std::string& at) {
  const YAML::Node v = node[key];
  if (!v) throw InputError(at + ": missing key '" + key + "'");
  return v;
}

double number(const YAML::Node& node, const char* key, const std::string& at) {
  const YAML::Node v = require(node, key, at);
  double x = 0;
  if (!v.IsScalar() || !YAML::convert<double>::decode(v, x) || !std::isfinite(x)) {
    throw InputError(at + ": " + key + " must be a number");
  }
  return x;
}

std::int64_t integer(const YAML::Node& node, const char* key, const std::string& at) {
  const YAML::Node v = require(node, key, at);
  long long x = 0;
  if (!v.IsScalar() || !YAML::convert<long long>::decode(v, x)) {
    throw InputError(at + ": " + key + " must be an integer, got '" + (v.IsScalar() ? v.Scalar() : "<non-scalar>") +
                     "'");
  }
  return x;
}

std::vector<double> numbers(const YAML::Node& node, const char* key, const std::string& at) {
  const YAML::Node v = require(node, key, at);
  if (!v.IsSequence()) throw InputError(at + ": " + key + " must be a list of numbers");
  std::vector<double> out;
  for (const YAML::Node& e : v) {
    double x = 0;
    if (!e.IsScalar() || !YAML::convert<double>::decode(e, x) || !std::isfinite(x)) {
      throw InputError(at + ": " + key + " must be a list of numbers");
    }
    out.push_back(x);
  }
  return out;
}

void check_positive(double v, const char* key, const std::string& at) {
  if (!(v > 0)) throw InputError(at + ": " + key + " must be > 0, got " + std::to_string(v));
}

}  // namespace

Calibration load_calibration(const std::filesystem::path& file) {
  const std::string f = file.string();
  const YAML::Node root = load_yaml_file(file);
  if (!root.IsMap()) throw InputError(f + ": expected a mapping (a calibration written by `comm fit`)");
  check_keys(root,
             {"format", "version", "source", "overhead_s", "node_extrapolation", "size_extrapolation", "collectives"},
             f);
  if (!root["format"] || root["format"].Scalar() != kFormatName) {
    throw InputError(f + ": format must be '" + std::string(kFormatName) + "'");
  }
  if (integer(root, "version", f) != kFormatVersion) {
    throw InputError(f + ": version must be " + std::to_string(kFormatVersion));
  }
  Calibration cal;
  if (root["source"]) cal.source = root["source"].Scalar();
  cal.overhead_s = number(root, "overhead_s", f);
  if (cal.overhead_s < 0) throw InputError(f + ": overhead_s must be >= 0");
  cal.node_extrapolation = number(root, "node_extrapolation", f);
  cal.size_extrapolation = number(root, "size_extrapolation", f);
  if (!(cal.node_extrapolation >= 1)) throw InputError(f + ": node_extrapolation must be >= 1");
  if (!(cal.size_extrapolation >= 1)) throw InputError(f + ": size_extrapolation must be >= 1");

  const YAML::Node list = require(root, "collectives", f);
  if (!list.IsSequence() || list.size() == 0) throw InputError(f + ": collectives must be a non-empty list");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YAML::Node e = list[i];
    const std::string at = f + ": collectives[" + std::to_string(i) + "]";
    if (!e.IsMap()) throw InputError(at + ": expected a mapping");
    check_keys(e, {"op", "gpus_per_node", "size_bytes", "step_latency_s", "step_bandwidth_GBps", "node_counts"}, at);
    PlacementCalibration p;
    const std::string op_name = require(e, "op", at).Scalar();
    const auto op = parse_collective_name(op_name);
    if (!op) throw InputError(at + ": op must be allreduce, allgather or reducescatter, got '" + op_name + "'");
    p.op = *op;
    p.gpus_per_node = integer(e, "gpus_per_node", at);
    if (p.gpus_per_node < 1) throw InputError(at + ": gpus_per_node must be >= 1");
    if (cal.find(p.op, p.gpus_per_node) != nullptr) {
      throw InputError(at + ": a second entry for " + op_name + " with gpus_per_node " +
                       std::to_string(p.gpus_per_node));
    }
    const auto sizes = numbers(e, "size_bytes", at);
    if (sizes.size() != 2 || !(sizes[0] > 0) || !(sizes[1] >= sizes[0])) {
      throw InputError(at + ": size_bytes must be [min, max] with 0 < min <= max");
    }
    p.min_size_bytes = sizes[0];
    p.max_size_bytes = sizes[1];
    if (e["step_latency_s"]) p.step_latency_s = number(e, "step_latency_s", at);
    if (e["step_bandwidth_GBps"]) p.step_bandwidth_GBps = number(e, "step_bandwidth_GBps", at);

    const YAML::Node counts = require(e, "node_counts", at);
    if (!counts.IsSequence() || counts.size() == 0) throw InputError(at + ": node_counts must be a non-empty list");
    for (std::size_t j = 0; j < counts.size(); ++j) {
      const YAML::Node t = counts[j];
      const std::string tat = at + ".node_counts[" + std::to_string(j) + "]";
      if (!t.IsMap()) throw InputError(tat + ": expected a mapping");
      check_keys(t, {"num_nodes", "overhead_s", "chunk_bytes", "step_s"}, tat);
      StepTable table;
      table.num_nodes = integer(t, "num_nodes", tat);
      if (table.num_nodes < 1) throw InputError(tat + ": num_nodes must be >= 1");
      if (!p.tables.empty() && table.num_nodes <= p.tables.back().num_nodes) {
        throw InputError(tat + ": num_nodes must be strictly ascending, got " + std::to_string(table.num_nodes) +
                         " after " + std::to_string(p.tables.back().num_nodes));
      }
      if (table.num_nodes * p.gpus_per_node < 2) throw InputError(tat + ": a collective needs two or more GPUs");
      table.overhead_s = number(t, "overhead_s", tat);
      if (table.overhead_s < 0) throw InputError(tat + ": overhead_s must be >= 0");
      table.chunk_bytes = numbers(t, "chunk_bytes", tat);
      table.step_s = numbers(t, "step_s", tat);
      if (table.chunk_bytes.size() < 2 || table.chunk_bytes.size() != table.step_s.size()) {
        throw InputError(tat + ": chunk_bytes and step_s must have the same length, at least 2");
      }
      for (std::size_t k = 0; k < table.chunk_bytes.size(); ++k) {
        check_positive(table.chunk_bytes[k], "chunk_bytes", tat);
        check_positive(table.step_s[k], "step_s", tat);
        if (k > 0 && !(table.chunk_bytes[k] > table.chunk_bytes[k - 1])) {
          throw InputError(tat + ": chunk_bytes must be strictly ascending");
        }
      }
      p.tables.push_back(std::move(table));
    }
    cal.placements.push_back(std::move(p));
  }
  return cal;
}

}  // namespace perfsweep::comm
