#include "validate/set_runs.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <iostream>

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
  const calib::ValidationSet set = calib::read_validation_set(o.dir);
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
  text += "validate runs " + o.dir + ": " + set.name + ", " + std::to_string(set.rows.size()) + " rows\n";
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

}  // namespace perfsweep
