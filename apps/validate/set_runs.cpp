#include "validate/set_runs.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "calib/error_ranges.hpp"
#include "calib/set_fitters.hpp"
#include "calib/set_validation.hpp"
#include "common/estimate_options.hpp"
#include "core/error.hpp"
#include "core/files.hpp"

namespace perfsweep {

SetRequests read_requests(const calib::ValidationSet& set, const calib::Variant& variant, calib::Part part) {
  SetRequests out;
  const std::size_t n = set.rows.size();
  out.requests.resize(n);
  out.commands.resize(n);
  out.refusals.resize(n);
  out.run.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const calib::SetRow& row = set.rows[i];
    out.run[i] = part == calib::Part::All || (part == calib::Part::Fit) == row.fit;
    if (!out.run[i] || row.args.empty()) continue;
    const std::vector<std::string> args = calib::row_arguments(set, row, variant);
    out.commands[i] = calib::estimate_command(args);
    const std::string where = (set.dir / "runs.csv").string() + ":" + std::to_string(row.line) + ": row '" + row.id +
                              "'" + (variant.name == "default" ? "" : " (variant " + variant.name + ")") + ": ";
    try {
      const ParsedEstimateFlags flags = parse_estimate_flags(args);
      out.requests[i] = estimate_request(*flags.options);
    } catch (const ConfigError& e) {
      out.refusals[i] = e.what();  // a configuration the model refuses: a finding, not a bad file
    } catch (const InputError& e) {
      throw InputError(where + e.what());
    }
  }
  return out;
}

int validate_runs(const RunsOptions& o) {
  const calib::ValidationSet set = calib::read_validation_set(set_folder(o.dir));
  if (!o.out.empty()) refuse_output_over_input(o.out, {(set.dir / "set.yaml").string(), (set.dir / "runs.csv").string()});
  const calib::Part part = o.part == "fit" ? calib::Part::Fit : o.part == "held-out" ? calib::Part::HeldOut : calib::Part::All;
  std::vector<const calib::Variant*> variants;
  for (const calib::Variant& v : set.variants) {
    if (o.variant.empty() || o.variant == v.name) variants.push_back(&v);
  }
  if (variants.empty()) throw InputError(o.dir + ": no variant '" + o.variant + "' in set.yaml");
  // Every variant's rows read (files, flags) before any is predicted.
  std::vector<SetRequests> requests;
  for (const calib::Variant* v : variants) requests.push_back(read_requests(set, *v, part));
  std::string csv, text;
  bool ok = true;
  std::size_t missed = 0;
  text += "validate runs " + set.dir.string() + ": " + set.name + ", " + std::to_string(set.rows.size()) + " rows\n";
  for (std::size_t k = 0; k < variants.size(); ++k) {
    const calib::Variant& v = *variants[k];
    const SetRequests& r = requests[k];
    std::vector<calib::RowPrediction> predictions(set.rows.size());
    for (std::size_t i = 0; i < set.rows.size(); ++i) {
      calib::RowPrediction& p = predictions[i];
      if (r.requests[i]) {
        try {
          p = calib::predict_row(*r.requests[i], v.quantity, set);
        } catch (const InputError& e) {
          throw InputError((set.dir / "runs.csv").string() + ":" + std::to_string(set.rows[i].line) + ": row '" +
                           set.rows[i].id + "': " + e.what());
        }
      } else {
        p.run = r.run[i];
        p.note = set.rows[i].args.empty() ? "not expressed: " + set.rows[i].reason : r.refusals[i];
      }
      p.command = r.commands[i];
      p.measured = v.measured[i];
    }
    text += "\n" + calib::summary_text(set, v, predictions);
    const calib::TargetReport report = calib::check_targets(set, v, predictions);
    if (!report.lines.empty()) {
      text += "targets:\n";
      for (const std::string& line : report.lines) text += "  " + line + "\n";
    }
    for (const std::string& line : report.lines) missed += line.starts_with("FAIL") ? 1u : 0u;
    ok = ok && report.ok;
    csv += calib::rows_csv(set, v, predictions, k == 0);
  }
  if (!o.out.empty()) write_text_atomically(o.out, csv);
  std::cout << text;
  flush_stdout();
  if (o.check && !ok) {
    std::fprintf(stderr, "validate: %zu target(s) of %s missed (FAIL lines above)\n", missed, set.name.c_str());
    return 1;
  }
  return 0;
}

namespace {

// The step-time error of a prediction whose set compares another quantity: a rate (samples,
// tokens or FLOPs per second) too high by e is a step too short by e / (1 + e).
double step_time_error(calib::SetQuantity q, double error) {
  return q == calib::SetQuantity::StepSeconds ? error : 1 / (1 + error) - 1;
}

// The value of `flag` in a row's arguments ("" where absent).
std::string flag_value(const std::vector<std::string>& args, std::string_view flag) {
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == flag) return args[i + 1];
  }
  return {};
}

std::vector<std::string> every_set() {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(fs::path(PERFSWEEP_SOURCE_DIR) / "validation", ec)) {
    if (e.is_directory(ec) && fs::is_regular_file(e.path() / "set.yaml", ec)) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

int validate_residuals(const ResidualsOptions& o) {
  std::vector<calib::ValidationSet> sets;
  for (const std::string& name : o.sets.empty() ? every_set() : o.sets) sets.push_back(calib::read_validation_set(set_folder(name)));
  if (!o.out.empty()) {
    std::vector<std::string> inputs;
    for (const calib::ValidationSet& s : sets) inputs.push_back((s.dir / "runs.csv").string());
    refuse_output_over_input(o.out, inputs);
  }
  std::vector<Residual> rows;
  for (const calib::ValidationSet& set : sets) {
    const calib::Variant& v = set.variants[0];
    const SetRequests r = read_requests(set, v, calib::Part::All);
    // What is held out together (held_out_coverage): the set, or the set and the software release
    // a row ran, where the set names it: an MLPerf round, a container of NVIDIA's pages.
    const auto has = [&](const char* column) {
      return std::find(set.header.begin(), set.header.end(), column) != set.header.end();
    };
    const char* release = has("round") ? "round" : has("container") ? "container" : nullptr;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < set.rows.size(); ++i) {
      if (!r.requests[i]) continue;
      const std::string system_arg = flag_value(calib::row_arguments(set, set.rows[i], v), "--system");
      if (system_arg.empty() || system_arg.find('/') != std::string::npos) continue;  // a set's own system
      calib::RowPrediction p = calib::predict_row(*r.requests[i], v.quantity, set);
      p.measured = v.measured[i];
      if (!p.has_error()) continue;
      const EstimateRequest& q = *r.requests[i];
      Residual res;
      res.set = set.name;
      res.id = set.rows[i].id;
      res.source = release != nullptr ? set.name + " " + set.cell(set.rows[i], release) : set.name;
      res.system = system_arg;
      res.precision = kPrecisionNames[static_cast<std::size_t>(q.layout.exec.precision)];
      res.gpus = q.layout.n_gpus();
      res.error = step_time_error(v.quantity, p.error());
      res.model = model_kind(q.model.is_moe());
      rows.push_back(std::move(res));
      ++kept;
    }
    spdlog::info("{}: {} of {} rows predicted with a shipped system", set.name, kept, set.rows.size());
  }
  if (rows.empty()) throw InputError("no row of the sets was predicted with a shipped system");
  const std::string csv = residuals_csv(rows);
  if (o.out.empty()) {
    std::cout << csv;
  } else {
    write_text_atomically(o.out, csv);
  }
  for (const double widen : {1.0, 1.5, 2.0, 2.5, 3.0}) {
    const RangeCoverage c = held_out_coverage(rows, widen);
    std::fprintf(stderr,
                 "percentiles widened x%.1f%s: with each source held out, %zu of %zu rows inside its range (%.1f%%), "
                 "%zu below, %zu above, %zu without one\n",
                 widen, widen == kStatedRangeWidening ? " (stated)" : "", c.inside, c.rows,
                 c.rows ? 100.0 * static_cast<double>(c.inside) / static_cast<double>(c.rows) : 0.0, c.below, c.above,
                 c.without);
  }
  flush_stdout();
  return 0;
}

std::filesystem::path set_folder(const std::string& name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(name, ec)) return name;
  std::vector<fs::path> candidates{fs::path("validation") / name};
  if (const char* data = std::getenv("PERFSWEEP_DATA_DIR"); data != nullptr && *data != '\0') {
    candidates.push_back(fs::path(data) / "validation" / name);
  }
  candidates.push_back(fs::path(PERFSWEEP_SOURCE_DIR) / "validation" / name);
  for (const fs::path& c : candidates) {
    if (fs::is_directory(c, ec)) return c;
  }
  throw InputError("no validation set '" + name + "' (a folder, or a name of validation/)");
}

namespace {

// One line of a part's figures: rows, count, median and mean |error|, median signed, worst.
std::string part_line(const std::string& set, const char* part, const calib::Summary& s) {
  char buf[320];
  std::snprintf(buf, sizeof buf, "%-26s %-9s %5zu %6zu %10.2f%% %10.2f%% %+10.2f%% %10.2f%%  %s\n", set.c_str(), part,
                s.rows, s.count, 100 * s.median_abs, 100 * s.mean_abs, 100 * s.median_signed, 100 * s.max_abs,
                s.worst.c_str());
  return buf;
}

}  // namespace

int validate_fit(const FitOptions& o) {
  const calib::Fitter& fitter = calib::find_fitter(o.fitter);
  if (!o.out.empty() && !o.kernels.empty()) refuse_output_over_input(o.out, {o.kernels});
  // The sets, fitted ones first; every row read (files, flags) before anything is fitted.
  std::vector<calib::ValidationSet> sets;
  for (const std::string& name : o.sets) sets.push_back(calib::read_validation_set(set_folder(name)));
  for (const std::string& name : o.held_out) sets.push_back(calib::read_validation_set(set_folder(name)));
  std::vector<SetRequests> requests;
  for (const calib::ValidationSet& set : sets) requests.push_back(read_requests(set, set.variants[0], calib::Part::All));
  std::vector<calib::FitRow> rows, fit_set_rows;
  for (std::size_t k = 0; k < sets.size(); ++k) {
    const calib::ValidationSet& set = sets[k];
    for (std::size_t i = 0; i < set.rows.size(); ++i) {
      if (!requests[k].requests[i]) continue;
      calib::FitRow r;
      r.set = &set;
      r.row = i;
      r.request = *requests[k].requests[i];
      r.quantity = set.variants[0].quantity;
      r.measured = set.variants[0].measured[i];
      r.fit = k < o.sets.size() && set.rows[i].fit;
      rows.push_back(r);
      if (k < o.sets.size()) fit_set_rows.push_back(r);
    }
  }
  std::size_t fit_rows = 0;
  for (const calib::FitRow& r : rows) fit_rows += r.fit ? 1u : 0u;
  if (fit_rows == 0) throw InputError("no row of the sets " + o.sets.front() + (o.sets.size() > 1 ? ", ..." : "") +
                                      " is in a fit part (set.yaml parts)");
  const calib::FitResult result = fitter.fit(rows, {o.kernels});
  std::string command = "validate fit " + o.fitter + " --sets";
  for (std::size_t k = 0; k < o.sets.size(); ++k) command += (k ? "," : " ") + o.sets[k];
  for (std::size_t k = 0; k < o.held_out.size(); ++k) command += (k ? "," : " --held-out ") + o.held_out[k];
  if (!o.kernels.empty()) command += " --kernels " + o.kernels;
  std::string text = command + ": " + std::to_string(fit_rows) + " fit rows\n";
  for (const std::string& line : result.report) text += line + "\n";
  // Every set's rows with the fitted values.
  char head[256];
  std::snprintf(head, sizeof head, "%-26s %-9s %5s %6s %11s %11s %11s %11s  %s\n", "set", "part", "rows", "count",
                "median|err|", "mean|err|", "median err", "worst|err|", "worst run");
  text += head;
  std::size_t next = 0;
  for (std::size_t k = 0; k < sets.size(); ++k) {
    const calib::ValidationSet& set = sets[k];
    std::vector<calib::RowPrediction> predictions(set.rows.size());
    for (std::size_t i = 0; i < set.rows.size(); ++i) {
      calib::RowPrediction& p = predictions[i];
      if (requests[k].requests[i]) {
        const calib::FitRow& r = rows[next++];
        EstimateRequest q = r.request;
        result.apply(q, r);
        p = calib::predict_row(q, r.quantity, set);
      } else {
        p.run = true;
        p.note = requests[k].refusals[i];
      }
      p.measured = set.variants[0].measured[i];
    }
    // a held-out set's rows are all held out, whatever its parts
    const bool fitted_set = k < o.sets.size();
    for (const calib::Part part : {calib::Part::Fit, calib::Part::HeldOut}) {
      if (!fitted_set && part == calib::Part::Fit) continue;
      const std::vector<bool> selected =
          fitted_set ? calib::rows_of_part(set, predictions, part) : calib::rows_of_part(set, predictions, calib::Part::All);
      const calib::Summary s = calib::summarize_rows(set, set.variants[0], predictions, "all", selected);
      if (s.rows > 0) text += part_line(set.name, calib::part_name(part), s);
    }
  }
  if (!o.out.empty()) {
    for (const std::string& file : result.write(o.out, fit_set_rows, command)) text += "wrote " + file + "\n";
  }
  std::cout << text;
  flush_stdout();
  return 0;
}

}  // namespace perfsweep
