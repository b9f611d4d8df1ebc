#include "calib/error_ranges.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "config/inputs.hpp"
#include "core/csv.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/text.hpp"

namespace perfsweep {
namespace {

constexpr std::array<const char*, 8> kColumns = {"set", "id", "source", "system", "precision", "gpus", "error", "model"};
constexpr std::size_t kMaxResidualBytes = std::size_t{16} << 20;
// A signed error beyond this is not a prediction's error but a broken row.
constexpr double kMaxAbsError = 10;

std::string shown(std::string_view value) { return quoted_text(value); }

std::string header_text() {
  std::string out;
  for (const char* c : kColumns) {
    if (!out.empty()) out += ',';
    out += c;
  }
  return out;
}

// 2,048 as "2K", 10,752 as "11K", 512 as "512".
std::string count_text(std::int64_t n) {
  char buf[32];
  if (n >= 1000) {
    std::snprintf(buf, sizeof buf, "%.0fK", static_cast<double>(n) / 1024.0);
  } else {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(n));
  }
  return buf;
}

std::string percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.0f%%", v * 100);
  return std::string(buf) == "+0%" || std::string(buf) == "-0%" ? "0%" : buf;
}

bool shares(const Residual& r, const ErrorRangeQuery& q, RangeTier tier) {
  switch (tier) {
    case RangeTier::SystemAndPrecision: return r.system == q.system && r.precision == q.precision;
    case RangeTier::System: return r.system == q.system;
    case RangeTier::Precision: return r.precision == q.precision;
    case RangeTier::Any: return true;
  }
  return false;
}

double scale_distance(std::int64_t gpus, std::int64_t query) {
  return std::abs(std::log(static_cast<double>(gpus) / static_cast<double>(std::max<std::int64_t>(query, 1))));
}

}  // namespace

std::vector<Residual> read_residuals(const std::filesystem::path& file) {
  const std::string text = read_input_file(file.string(), kMaxResidualBytes);
  std::istringstream in(text);
  std::string line;
  std::size_t line_no = 0;
  auto where = [&] { return file.string() + ":" + std::to_string(line_no); };
  if (!std::getline(in, line)) throw InputError(file.string() + ": empty file, expected the header " + header_text());
  ++line_no;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const std::vector<std::string> header = split_csv_line(line, where());
  if (header != std::vector<std::string>(kColumns.begin(), kColumns.end())) {
    throw InputError(where() + ": header " + shown(line) + ", expected " + header_text());
  }
  std::vector<Residual> rows;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (trim(line).empty()) continue;
    const std::vector<std::string> cells = split_csv_line(line, where());
    if (cells.size() != kColumns.size()) {
      throw InputError(where() + ": expected " + std::to_string(kColumns.size()) + " fields, got " +
                       std::to_string(cells.size()));
    }
      for (std::size_t i = 0; i < 5; ++i) {
      if (cells[i].empty()) throw InputError(where() + ": field " + kColumns[i] + " is empty");
      if (utf8_invalid_at(cells[i]) != std::string::npos) {
        throw InputError(where() + ": field " + kColumns[i] + " is not UTF-8 (" + utf8_error(cells[i]) + ")");
      }
    }
    Residual r{cells[0], cells[1], cells[2], cells[3], cells[4], 0, 0, "dense"};
    const std::optional<double> gpus = parse_finite(cells[5]);
    if (!gpus || *gpus < 1 || *gpus != std::floor(*gpus) || *gpus > 1e9) {
      throw InputError(where() + ": field gpus must be a whole count of GPUs, got " + shown(cells[5]));
    }
    r.gpus = static_cast<std::int64_t>(*gpus);
    const std::optional<double> error = parse_finite(cells[6]);
    if (!error || std::abs(*error) > kMaxAbsError) {
      throw InputError(where() + ": field error must be a signed fraction (predicted / measured - 1) within +/-" +
                       std::to_string(static_cast<int>(kMaxAbsError)) + ", got " + shown(cells[6]));
    }
    r.error = *error;
    if (cells[7] != "dense" && cells[7] != "moe") {
      throw InputError(where() + ": field model must be dense or moe, got " + shown(cells[7]));
    }
    r.model = cells[7];
    rows.push_back(std::move(r));
  }
  if (rows.empty()) throw InputError(file.string() + ": no rows");
  return rows;
}

std::string residuals_csv(std::span<const Residual> rows) {
  std::string out = header_text() + "\n";
  char buf[40];
  for (const Residual& r : rows) {
    std::snprintf(buf, sizeof buf, "%.17g", r.error);
    out += csv_field(r.set) + "," + csv_field(r.id) + "," + csv_field(r.source) + "," + csv_field(r.system) + "," +
           csv_field(r.precision) + "," + std::to_string(r.gpus) + "," + buf + "," + csv_field(r.model) + "\n";
  }
  return out;
}

const std::vector<Residual>& shipped_residuals() {
  static const std::vector<Residual> rows = [] {
    const std::optional<std::filesystem::path> file = find_shipped_file("validation/residuals.csv");
    return file ? read_residuals(*file) : std::vector<Residual>{};
  }();
  return rows;
}

std::string expected_error_line(const ErrorRangeQuery& q, std::string_view lead) {
  const std::optional<ErrorRange> r = expected_error(shipped_residuals(), q, kStatedRangeWidening);
  if (!r) return {};
  // wrapped at spaces, about 110 columns a line, continuation lines indented
  const std::string text = std::string(lead) + "expected error of the step time: " + describe(*r, q);
  std::string out, line;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t next = text.find(' ', pos);
    next = next == std::string::npos ? text.size() : next + 1;
    const std::string_view word(text.data() + pos, next - pos);
    if (!line.empty() && line.size() + word.size() > 110) {
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line;
      out += '\n';
      line = "  ";
    }
    line += word;
    pos = next;
  }
  out += line;
  out += '\n';
  return out;
}

double quantile(std::span<const double> sorted, double p) {
  const double at = p * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(at));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (at - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

std::optional<ErrorRange> expected_error(std::span<const Residual> rows, const ErrorRangeQuery& q, double widen) {
  const auto same_kind = static_cast<std::size_t>(
      std::count_if(rows.begin(), rows.end(), [&](const Residual& r) { return r.model == q.model; }));
  const bool by_kind = same_kind >= kMinRangeRows;
  for (const RangeTier tier : {RangeTier::SystemAndPrecision, RangeTier::System, RangeTier::Precision, RangeTier::Any}) {
    std::vector<const Residual*> near;
    for (const Residual& r : rows) {
      if ((!by_kind || r.model == q.model) && shares(r, q, tier)) near.push_back(&r);
    }
    if (near.size() < kMinRangeRows) continue;
    std::sort(near.begin(), near.end(), [&](const Residual* a, const Residual* b) {
      const double da = scale_distance(a->gpus, q.gpus), db = scale_distance(b->gpus, q.gpus);
      if (da != db) return da < db;
      if (a->set != b->set) return a->set < b->set;
      return a->id < b->id;
    });
    const double window = std::log(kRangeScaleFactor);
    std::size_t n = 0;
    while (n < near.size() && scale_distance(near[n]->gpus, q.gpus) <= window) ++n;
    n = std::max(n, kMinRangeRows);
    ErrorRange out;
    out.tier = tier;
    out.same_model = by_kind;
    out.rows = n;
    std::vector<double> errors;
    errors.reserve(n);
    out.gpus_lo = near[0]->gpus;
    out.gpus_hi = near[0]->gpus;
    for (std::size_t i = 0; i < n; ++i) {
      errors.push_back(near[i]->error);
      out.gpus_lo = std::min(out.gpus_lo, near[i]->gpus);
      out.gpus_hi = std::max(out.gpus_hi, near[i]->gpus);
      out.sets.push_back(near[i]->set);
    }
    std::sort(errors.begin(), errors.end());
    const double median = quantile(errors, 0.5);
    out.p10 = median + widen * (quantile(errors, 0.1) - median);
    out.p90 = median + widen * (quantile(errors, 0.9) - median);
    std::sort(out.sets.begin(), out.sets.end());
    out.sets.erase(std::unique(out.sets.begin(), out.sets.end()), out.sets.end());
    return out;
  }
  return std::nullopt;
}

std::string describe(const ErrorRange& r, const ErrorRangeQuery& q) {
  std::string of = std::to_string(r.rows) + " ";
  if (r.same_model && q.model == "moe") of += "MoE ";
  switch (r.tier) {
    case RangeTier::SystemAndPrecision: of += q.system + " " + q.precision + " runs"; break;
    case RangeTier::System: of += q.system + " runs of any precision"; break;
    case RangeTier::Precision: of += q.precision + " runs on other systems"; break;
    case RangeTier::Any: of += "runs on other systems and precisions"; break;
  }
  of += r.gpus_lo == r.gpus_hi ? " at " + count_text(r.gpus_lo) + " GPUs"
                               : " at " + count_text(r.gpus_lo) + "-" + count_text(r.gpus_hi) + " GPUs";
  std::string sets;
  for (const std::string& s : r.sets) {
    if (!sets.empty()) sets += ", ";
    sets += s;
  }
  return percent(r.p10) + " / " + percent(r.p90) + " (an 80% range, from " + of + ": " + sets + ")";
}

RangeCoverage held_out_coverage(std::span<const Residual> rows, double widen) {
  RangeCoverage c;
  std::vector<Residual> others;
  for (const Residual& r : rows) {
    others.clear();
    for (const Residual& o : rows) {
      if (o.source != r.source) others.push_back(o);
    }
    ++c.rows;
    const std::optional<ErrorRange> range = expected_error(others, {r.system, r.precision, r.gpus, r.model}, widen);
    if (!range) {
      ++c.without;
    } else if (r.error < range->p10) {
      ++c.below;
    } else if (r.error > range->p90) {
      ++c.above;
    } else {
      ++c.inside;
    }
  }
  return c;
}

}  // namespace perfsweep
