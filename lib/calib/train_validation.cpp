#include "calib/train_validation.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "calib/layer_validation.hpp"
#include "core/error.hpp"
#include "config/runtime_file.hpp"
#include "model/step.hpp"

namespace perfsweep::calib {

std::vector<TrainRow> validate_train(const System& system, const std::vector<TrainRun>& runs) {
  const Runtime runtime = load_runtime_named(kTrainStepRuntime);
  std::vector<TrainRow> rows;
  for (const TrainRun& r : runs) {
    const Evaluation ev = evaluate(system, r.model, runtime, train_layout(r), r.b * r.micro_batches);
    TrainRow row;
    row.id = r.id;
    row.oom_measured = r.oom;
    row.measured_step_s = r.step_s;
    row.predicted_step_s = ev.totals.t;
    row.measured_peak_gb = r.peak_allocated_gb;
    row.predicted_peak_gb = ev.totals.mem;
    row.fits_predicted = ev.fits;
    rows.push_back(row);
  }
  return rows;
}

Layout train_layout(const TrainRun& run) {
  Layout c;
  c.mbs = run.b;
  c.exec.zero = 0;
  c.exec.recompute = run.full_recompute ? Recompute::Full : Recompute::None;
  return c;
}

std::vector<RunInput> train_inputs(const std::vector<TrainRun>& runs, const Runtime& runtime) {
  std::vector<RunInput> out;
  for (const TrainRun& r : runs) out.push_back({r.id, &r.model, &runtime, train_layout(r), r.b * r.micro_batches});
  return out;
}

std::string train_csv(const std::vector<TrainRow>& rows) {
  std::string out = "id,measured_step_s,predicted_step_s,measured_peak_gb,predicted_peak_gb,oom_measured,fits_predicted\n";
  char buf[200];
  for (const TrainRow& r : rows) {
    out += r.id + ",";
    if (!r.oom_measured) {
      std::snprintf(buf, sizeof buf, "%.6g,%.17g", r.measured_step_s, r.predicted_step_s);
      out += buf;
    } else {
      out += ",";
    }
    std::snprintf(buf, sizeof buf, ",%.6g,%.17g,%s,%s\n", r.measured_peak_gb, r.predicted_peak_gb,
                  r.oom_measured ? "true" : "false", r.fits_predicted ? "true" : "false");
    out += buf;
  }
  return out;
}

std::string train_summary(const std::vector<TrainRow>& rows) {
  std::vector<double> step, peak;
  std::size_t right = 0;
  for (const TrainRow& r : rows) {
    if (r.fits_predicted == !r.oom_measured) ++right;
    if (r.oom_measured) continue;
    step.push_back(std::abs(r.predicted_step_s / r.measured_step_s - 1));
    peak.push_back(std::abs(r.predicted_peak_gb / r.measured_peak_gb - 1));
  }
  std::string out = "quantity,count,median_abs_rel_err,p90_abs_rel_err,max_abs_rel_err\n";
  char buf[200];
  for (const auto& [name, v] : {std::pair{"step_time", step}, std::pair{"peak_memory", peak}}) {
    if (v.empty()) continue;
    std::snprintf(buf, sizeof buf, "%s,%zu,%.4f,%.4f,%.4f\n", name, v.size(), quantile(v, 0.5), quantile(v, 0.9),
                  *std::max_element(v.begin(), v.end()));
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "fits_vs_oom,%zu,%zu right,%.4f accuracy,\n", rows.size(), right,
                rows.empty() ? 0.0 : static_cast<double>(right) / static_cast<double>(rows.size()));
  out += buf;
  return out;
}

double fit_allocator_reserve(const std::vector<TrainRun>& runs) {
  std::vector<double> v;
  for (const TrainRun& r : runs) {
    if (!r.oom) v.push_back(std::max(r.peak_reserved_gb / r.peak_allocated_gb - 1, 0.0));
  }
  if (v.empty()) throw InputError("fit-kernels: no training run without OOM to fit the allocator's reserve");
  return quantile(v, 0.5);
}

}  // namespace perfsweep::calib
