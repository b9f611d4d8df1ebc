#include "comm/validation.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>

namespace perfsweep::comm {

namespace {

constexpr double kBytesPerGB = 1e9;
constexpr double kMiB = 1024.0 * 1024.0;

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string stats_line(const std::string& label, const std::vector<double>& errors) {
  const ErrorStats s = error_stats(errors);
  char buf[160];
  std::snprintf(buf, sizeof buf, "  %-28s n=%-5zu median %6.2f%%  p90 %6.2f%%\n", label.c_str(), s.count,
                100 * s.median, 100 * s.p90);
  return buf;
}

// Sort key that keeps size bands in size order.
int band_order(const std::string& band) {
  if (band == "<1MiB") return 0;
  if (band == "1MiB-64MiB") return 1;
  if (band == "64MiB-1GiB") return 2;
  return 3;
}

}  // namespace

std::optional<double> ValidationRow::relative_error() const {
  if (!predicted_s) return std::nullopt;
  return std::abs(*predicted_s / measurement.measured_s() - 1);
}

std::vector<ValidationRow> validate(const std::vector<Measurement>& measurements, const System* system,
                                    const Calibration* calibration) {
  std::vector<ValidationRow> rows;
  rows.reserve(measurements.size());
  for (const Measurement& m : measurements) {
    ValidationRow row{m, std::nullopt, "none"};
    if (calibration != nullptr) {
      row.predicted_s = predict(*calibration, m.op, m.size_bytes, m.n_gpus(), m.gpus_per_node);
      if (row.predicted_s) row.model = std::string(comm_model_name(CommModel::Calibrated));
    }
    if (!row.predicted_s && system != nullptr) {
      row.predicted_s =
          analytical_collective_seconds(*system, m.op, m.size_bytes / kBytesPerGB, m.n_gpus(), m.gpus_per_node);
      row.model = std::string(comm_model_name(CommModel::Analytical));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

ErrorStats error_stats(std::vector<double> e) {
  ErrorStats s;
  s.count = e.size();
  if (e.empty()) return s;
  std::sort(e.begin(), e.end());
  const auto quantile = [&](double q) {
    const double pos = q * static_cast<double>(e.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, e.size() - 1);
    return e[lo] + (pos - static_cast<double>(lo)) * (e[hi] - e[lo]);
  };
  s.median = quantile(0.5);
  s.p90 = quantile(0.9);
  return s;
}

std::string size_band(double bytes) {
  if (bytes < kMiB) return "<1MiB";
  if (bytes < 64 * kMiB) return "1MiB-64MiB";
  if (bytes < 1024 * kMiB) return "64MiB-1GiB";
  return ">=1GiB";
}

std::string validation_csv(const std::vector<ValidationRow>& rows) {
  std::string out = "op,num_nodes,gpus_per_node,size_bytes,measured_s,predicted_s,rel_error,model\n";
  for (const ValidationRow& r : rows) {
    const Measurement& m = r.measurement;
    out += std::string(comm_type_name(m.op)) + "," + std::to_string(m.num_nodes) + "," +
           std::to_string(m.gpus_per_node) + "," + format("%.0f", m.size_bytes) + "," + format("%.9g", m.measured_s()) +
           ",";
    if (r.predicted_s) out += format("%.9g", *r.predicted_s);
    out += ",";
    if (const auto e = r.relative_error()) out += format("%.6g", *e);
    out += "," + r.model + "\n";
  }
  return out;
}

std::string validation_summary(const std::vector<ValidationRow>& rows) {
  std::vector<double> all;
  std::size_t unpredicted = 0;
  for (const ValidationRow& r : rows) {
    if (const auto e = r.relative_error()) {
      all.push_back(*e);
    } else {
      ++unpredicted;
    }
  }
  std::string out = "relative error |predicted / measured - 1|:\n";
  out += stats_line("all", all);
  if (unpredicted > 0) out += "  (" + std::to_string(unpredicted) + " rows without a prediction, not counted)\n";

  const auto grouped = [&](const std::string& title, auto key_of, auto order) {
    std::map<std::string, std::vector<double>> groups;
    for (const ValidationRow& r : rows) {
      if (const auto e = r.relative_error()) groups[key_of(r)].push_back(*e);
    }
    std::vector<std::string> keys;
    for (const auto& [k, v] : groups) keys.push_back(k);
    std::stable_sort(keys.begin(), keys.end(), [&](const auto& a, const auto& b) { return order(a) < order(b); });
    out += "by " + title + ":\n";
    for (const auto& k : keys) out += stats_line(k, groups[k]);
  };
  const auto none = [](const std::string&) { return 0; };
  const auto numeric = [](const std::string& k) { return std::stol(k); };
  grouped("op", [](const ValidationRow& r) { return std::string(comm_type_name(r.measurement.op)); }, none);
  grouped("gpus_per_node", [](const ValidationRow& r) { return std::to_string(r.measurement.gpus_per_node); },
          numeric);
  grouped("message size", [](const ValidationRow& r) { return size_band(r.measurement.size_bytes); }, band_order);
  grouped("num_nodes", [](const ValidationRow& r) { return std::to_string(r.measurement.num_nodes); }, numeric);
  grouped("model", [](const ValidationRow& r) { return r.model; }, none);
  return out;
}

}  // namespace perfsweep::comm
