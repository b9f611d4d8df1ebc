#include "calib/set_validation.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>

#include "calib/layer_validation.hpp"
#include "core/csv.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "model/efficiency.hpp"

namespace perfsweep::calib {
namespace {
constexpr double D(std::int64_t v) { return static_cast<double>(v); }

double median(std::vector<double> v) {
  if (v.empty()) return kMissing;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string number(double v, const char* format = "%.17g") {
  if (!std::isfinite(v)) return "";
  char buf[48];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string percent(double v, bool sign = false) {
  if (!std::isfinite(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, sign ? "%+.2f%%" : "%.2f%%", 100 * v);
  return buf;
}

bool is_fraction(Statistic s) { return s != Statistic::Count; }

bool in_part(const SetRow& row, Part part) {
  return part == Part::All || (part == Part::Fit) == row.fit;
}

// A row's value of a summarize_by column: a GPU count as its scale bucket; of "A+B", each's joined by '+'.
std::string group_value(const ValidationSet& set, const SetRow& row, const std::string& column) {
  if (const std::size_t plus = column.find('+'); plus != std::string::npos) {
    return group_value(set, row, column.substr(0, plus)) + "+" + group_value(set, row, column.substr(plus + 1));
  }
  const std::string& v = set.cell(row, column);
  if (column != "gpus") return v;
  const std::optional<double> n = parse_finite(v);
  return n ? gpu_bucket(static_cast<std::int64_t>(*n)) : v;
}

}  // namespace

double megatron_model_flops(const Transformer& m, std::int64_t global_batch) {
  const double B = D(global_batch), s = D(m.l), l = D(m.depth), h = D(m.e), V = D(m.vocab_size);
  return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}

double quantity_of(SetQuantity q, const EstimateRequest& r, double step_s) {
  const Efficiency e = efficiency(r.model, r.system, r.layout.n_gpus(), r.global_batch, step_s);
  switch (q) {
    case SetQuantity::StepSeconds: return step_s;
    case SetQuantity::TokensPerSecondPerGpu: return e.tokens_per_s_per_gpu;
    case SetQuantity::SamplesPerSecond: return D(r.global_batch) / step_s;
    case SetQuantity::ModelTflopsPerGpu: return e.model_tflops_per_gpu;
    case SetQuantity::ModelTflopsPerGpuCausal: {
      // Causal attention counted at half: 6 L e T of the 12 L e T a token dropped.
      const Transformer& m = r.model;
      const double halved = 6 * D(m.depth) * D(m.h * m.head_dim()) * D(m.l);
      return (e.model_flops_per_token - halved) * e.tokens_per_s_per_gpu * 1e-12;
    }
    case SetQuantity::MegatronTflopsPerGpu:
      return megatron_model_flops(r.model, r.global_batch) / (step_s * D(r.layout.n_gpus())) * 1e-12;
  }
  return kMissing;
}

double memory_of(MemoryQuantity q, const Evaluation& ev) {
  const Totals& x = ev.totals;
  switch (q) {
    case MemoryQuantity::StateGib: return (x.wts_mem + x.wts_grad_mem + x.wts_optimizer_states_mem) / kGbPerGib;
    case MemoryQuantity::PeakGb: return x.mem;
  }
  return kMissing;
}

bool RowPrediction::has_error() const { return predicted && std::isfinite(value) && std::isfinite(measured); }

RowPrediction predict_row(EstimateRequest request, SetQuantity quantity, const ValidationSet& set) {
  RowPrediction p;
  p.run = true;
  Evaluation ev;
  try {
    ev = evaluate_request(request);
  } catch (const ConfigError& e) {
    p.note = e.what();
    return p;
  }
  p.predicted = true;
  p.step_s = ev.totals.t;
  p.value = quantity_of(quantity, request, ev.totals.t);
  if (!set.memory_column.empty()) p.memory = memory_of(set.memory_quantity, ev);
  p.memory_fraction = ev.totals.mem / ev.totals.mem_limit;
  p.fits = ev.fits;
  return p;
}

double Summary::statistic(Statistic s) const {
  const auto ratio = [](std::size_t a, std::size_t b) { return b == 0 ? kMissing : D(static_cast<std::int64_t>(a)) / D(static_cast<std::int64_t>(b)); };
  switch (s) {
    case Statistic::Count: return D(static_cast<std::int64_t>(count));
    case Statistic::MedianAbsError: return median_abs;
    case Statistic::MeanAbsError: return mean_abs;
    case Statistic::MaxAbsError: return max_abs;
    case Statistic::MedianSignedError: return median_signed;
    case Statistic::P10SignedError: return p10_signed;
    case Statistic::P90SignedError: return p90_signed;
    case Statistic::FitAccuracy: return ratio(judged_right, judged);
    case Statistic::TrainedFit: return ratio(trained_fit, trained);
    case Statistic::MemoryMedianAbsError: return memory_median_abs;
  }
  return kMissing;
}

Summary summarize_rows(const ValidationSet& set, const Variant& variant, const std::vector<RowPrediction>& predictions,
                       const std::string& group, const std::vector<bool>& selected) {
  Summary s;
  s.group = group;
  std::vector<double> abs_errors, signed_errors, memory_errors;
  for (std::size_t i = 0; i < set.rows.size(); ++i) {
    if (!selected[i]) continue;
    const SetRow& row = set.rows[i];
    const RowPrediction& p = predictions[i];
    ++s.rows;
    if (!p.predicted) {
      ++s.not_predicted;
      continue;
    }
    if (p.has_error()) {
      const double e = p.error();
      signed_errors.push_back(e);
      abs_errors.push_back(std::abs(e));
      if (std::abs(e) == *std::max_element(abs_errors.begin(), abs_errors.end())) s.worst = row.id;
    }
    if (row.outcome != Outcome::Other) {
      ++s.judged;
      if (p.fits == (row.outcome == Outcome::Trained)) ++s.judged_right;
    }
    if (row.outcome == Outcome::Trained && variant.known_oom_of(row.id) == nullptr) {
      ++s.trained;
      if (p.fits) ++s.trained_fit;
    }
    if (row.outcome == Outcome::Trained && std::isfinite(row.measured_memory) && std::isfinite(p.memory)) {
      memory_errors.push_back(std::abs(p.memory / row.measured_memory - 1));
    }
  }
  s.count = abs_errors.size();
  if (s.count > 0) {
    s.median_abs = median(abs_errors);
    s.mean_abs = std::accumulate(abs_errors.begin(), abs_errors.end(), 0.0) / D(static_cast<std::int64_t>(s.count));
    s.max_abs = *std::max_element(abs_errors.begin(), abs_errors.end());
    s.median_signed = median(signed_errors);
    s.p10_signed = quantile(signed_errors, 0.1);
    s.p90_signed = quantile(signed_errors, 0.9);
  }
  s.memory_count = memory_errors.size();
  s.memory_median_abs = median(memory_errors);
  return s;
}

std::vector<bool> rows_of_part(const ValidationSet& set, const std::vector<RowPrediction>& predictions, Part part) {
  std::vector<bool> out(set.rows.size());
  for (std::size_t i = 0; i < set.rows.size(); ++i) {
    out[i] = in_part(set.rows[i], part) && predictions[i].run;
  }
  return out;
}

std::vector<Summary> summaries(const ValidationSet& set, const Variant& variant,
                               const std::vector<RowPrediction>& predictions, Part part) {
  const std::vector<bool> base = rows_of_part(set, predictions, part);
  std::vector<Summary> out{summarize_rows(set, variant, predictions, "all", base)};
  for (const std::string& column : set.summarize_by) {
    std::vector<std::string> values;
    for (std::size_t i = 0; i < set.rows.size(); ++i) {
      if (!base[i] || set.rows[i].args.empty()) continue;
      const std::string v = group_value(set, set.rows[i], column);
      if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
    }
    if (column == "gpus") {
      std::sort(values.begin(), values.end(), [](const std::string& a, const std::string& b) {
        return std::stoll(a.substr(0, a.find_first_of("-+"))) < std::stoll(b.substr(0, b.find_first_of("-+")));
      });
    }
    for (const std::string& v : values) {
      std::vector<bool> sel = base;
      for (std::size_t i = 0; i < set.rows.size(); ++i) {
        sel[i] = sel[i] && !set.rows[i].args.empty() && group_value(set, set.rows[i], column) == v;
      }
      out.push_back(summarize_rows(set, variant, predictions, column + "=" + v, sel));
    }
  }
  return out;
}

TargetReport check_targets(const ValidationSet& set, const Variant& variant, const std::vector<RowPrediction>& predictions) {
  TargetReport report;
  const auto add = [&report](bool ok, const std::string& line) {
    report.lines.push_back((ok ? "ok    " : "FAIL  ") + line);
    report.ok = report.ok && ok;
  };
  for (const Target& t : variant.targets) {
    std::vector<bool> sel = rows_of_part(set, predictions, t.part);
    std::size_t run = 0;
    for (std::size_t i = 0; i < set.rows.size(); ++i) {
      for (const auto& [column, value] : t.where) sel[i] = sel[i] && set.cell(set.rows[i], column) == value;
      run += sel[i] ? 1u : 0u;
    }
    const char* sign = t.bound == Target::Bound::Below    ? "<"
                       : t.bound == Target::Bound::AtMost ? "<="
                       : t.bound == Target::Bound::Above  ? ">"
                                                          : ">=";
    const std::string what = std::string(part_name(t.part)) + (t.where_text.empty() ? "" : " " + t.where_text) + " " +
                             statistic_name(t.statistic);
    const auto shown = [&](double v) {
      return is_fraction(t.statistic) ? percent(v, t.statistic == Statistic::MedianSignedError ||
                                                       t.statistic == Statistic::P10SignedError ||
                                                       t.statistic == Statistic::P90SignedError)
                                      : number(v, "%.0f");
    };
    if (run == 0) {
      report.lines.push_back("skip  " + what + ": no such rows predicted here (--part)");
      continue;
    }
    const Summary s = summarize_rows(set, variant, predictions, "", sel);
    const double v = s.statistic(t.statistic);
    const bool ok = std::isfinite(v) && (t.bound == Target::Bound::Below    ? v < t.value
                                         : t.bound == Target::Bound::AtMost ? v <= t.value
                                         : t.bound == Target::Bound::Above  ? v > t.value
                                                                            : v >= t.value);
    std::string line = what + " " + shown(v) + " " + sign + " " + shown(t.value) + " (" + std::to_string(s.count) +
                       " rows with an error";
    if (t.statistic == Statistic::TrainedFit || t.statistic == Statistic::FitAccuracy) {
      line += t.statistic == Statistic::TrainedFit
                  ? "; " + std::to_string(s.trained_fit) + " of " + std::to_string(s.trained) + " that trained fit"
                  : "; " + std::to_string(s.judged_right) + " of " + std::to_string(s.judged) + " verdicts right";
    }
    if (t.statistic == Statistic::MaxAbsError && !s.worst.empty()) line += "; worst " + s.worst;
    line += ")";
    if (!ok && t.statistic == Statistic::TrainedFit) {
      std::string ids;
      for (std::size_t i = 0; i < set.rows.size(); ++i) {
        const SetRow& row = set.rows[i];
        if (sel[i] && predictions[i].predicted && row.outcome == Outcome::Trained && !predictions[i].fits &&
            variant.known_oom_of(row.id) == nullptr) {
          ids += (ids.empty() ? "" : ", ") + row.id;
        }
      }
      line += "; predicted not to fit: " + ids;
    }
    add(ok, line);
  }
  // Each known_oom entry: its rows' predicted memory over what the runtime can allocate, each below the bound.
  for (const KnownOom& known : variant.known_oom) {
    bool ok = true;
    std::string rows, now_fit;
    for (std::size_t i = 0; i < set.rows.size(); ++i) {
      const RowPrediction& p = predictions[i];
      if (std::find(known.rows.begin(), known.rows.end(), set.rows[i].id) == known.rows.end() || !p.predicted) continue;
      ok = ok && p.memory_fraction < known.memory_below;
      rows += (rows.empty() ? "" : ", ") + set.rows[i].id + " " + percent(p.memory_fraction);
      if (p.fits) now_fit += (now_fit.empty() ? "" : ", ") + set.rows[i].id;
    }
    if (rows.empty()) continue;
    add(ok, "known out of memory (" + known.reason + "): memory of usable below " + percent(known.memory_below) +
                ": " + rows);
    if (!now_fit.empty()) report.lines.push_back("note  now predicted to fit, take out of known_oom: " + now_fit);
  }
  return report;
}

std::string summary_text(const ValidationSet& set, const Variant& variant, const std::vector<RowPrediction>& predictions) {
  const QuantityInfo& q = quantity_info(variant.quantity);
  std::string out = "variant " + variant.name + ": " + variant.description + "\nmeasured " + variant.measured_column +
                    " against the predicted " + q.name + " (" + q.unit + "); error = predicted / measured - 1\n";
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-9s %-34s %5s %6s %11s %10s %10s %9s %9s %10s  %s\n", "part", "group", "rows", "count",
                "median|err|", "mean|err|", "median err", "p10 err", "p90 err", "worst|err|", "worst run");
  out += buf;
  std::string fits;
  for (const Part part : {Part::HeldOut, Part::Fit}) {
    const std::vector<Summary> all = summaries(set, variant, predictions, part);
    if (all.front().rows == 0) continue;
    for (const Summary& s : all) {
      if (s.rows == 0) continue;
      std::snprintf(buf, sizeof buf, "%-9s %-34s %5zu %6zu %11s %10s %10s %9s %9s %10s  %s\n", part_name(part),
                    s.group.c_str(), s.rows, s.count, percent(s.median_abs).c_str(), percent(s.mean_abs).c_str(),
                    percent(s.median_signed, true).c_str(), percent(s.p10_signed, true).c_str(),
                    percent(s.p90_signed, true).c_str(), percent(s.max_abs).c_str(), s.worst.c_str());
      out += buf;
    }
    const Summary& s = all.front();
    fits += std::string(part_name(part)) + ": " + std::to_string(s.trained_fit) + " of " + std::to_string(s.trained) +
            " runs that trained predicted to fit";
    if (!set.outcome_column.empty()) {
      fits += "; fit verdicts right for " + std::to_string(s.judged_right) + " of " + std::to_string(s.judged) +
              " runs that trained or ran out of memory (" + percent(s.statistic(Statistic::FitAccuracy)) + ")";
    }
    if (!set.memory_column.empty()) {
      fits += "; memory (" + std::string(memory_quantity_info(set.memory_quantity).name) + ") median |error| " +
              percent(s.memory_median_abs) + " over " + std::to_string(s.memory_count) + " runs";
    }
    fits += "\n";
  }
  out += fits;
  std::size_t not_expressed = 0, refused = 0;
  std::string refusals;
  for (std::size_t i = 0; i < set.rows.size(); ++i) {
    const RowPrediction& p = predictions[i];
    if (p.predicted || !p.run) continue;
    if (set.rows[i].args.empty()) {
      ++not_expressed;
    } else if (++refused <= 5) {
      refusals += "  " + set.rows[i].id + ": " + p.note + "\n";
    }
  }
  if (not_expressed > 0) {
    out += "not predicted: " + std::to_string(not_expressed) + " rows without estimate flags (their reason in runs.csv)\n";
  }
  if (refused > 0) {
    out += "not predicted: " + std::to_string(refused) + " rows the model refuses" + (refused > 5 ? " (the first 5)" : "") +
           ":\n" + refusals;
  }
  return out;
}

std::string rows_csv(const ValidationSet& set, const Variant& variant, const std::vector<RowPrediction>& predictions,
                     bool header) {
  const bool memory = !set.memory_column.empty(), outcome = !set.outcome_column.empty();
  std::string out;
  if (header) {
    out += "variant,id,part";
    for (const std::string& c : set.summarize_by) {
      if (c.find('+') == std::string::npos) out += "," + csv_field(c);
    }
    out += ",quantity,measured,predicted,rel_err,fits,memory_fraction";
    if (outcome) out += ",outcome";
    if (memory) out += ",measured_memory,predicted_memory";
    out += ",predicted_step_s,note,command\n";
  }
  // Each field appended on its own (GCC 12 warns falsely on chains of "," + string temporaries).
  const auto field = [&out](const std::string& text) {
    out += ',';
    out += text;
  };
  for (std::size_t i = 0; i < set.rows.size(); ++i) {
    const SetRow& row = set.rows[i];
    const RowPrediction& p = predictions[i];
    if (!p.run) continue;
    out += csv_field(variant.name);
    field(csv_field(row.id));
    field(row.fit ? "fit" : "held-out");
    for (const std::string& c : set.summarize_by) {
      if (c.find('+') == std::string::npos) field(csv_field(set.cell(row, c)));
    }
    field(quantity_info(variant.quantity).name);
    field(number(p.measured));
    field(number(p.predicted ? p.value : kMissing));
    field(p.has_error() ? number(p.error()) : "");
    field(p.predicted ? (p.fits ? "yes" : "no") : "");
    field(number(p.predicted ? p.memory_fraction : kMissing));
    if (outcome) {
      field(row.outcome == Outcome::Trained ? "trained" : row.outcome == Outcome::OutOfMemory ? "oom" : "other");
    }
    if (memory) {
      field(number(row.measured_memory));
      field(number(p.predicted ? p.memory : kMissing));
    }
    field(number(p.predicted ? p.step_s : kMissing));
    field(csv_field(p.predicted ? "" : p.note));
    field(csv_field(p.command));
    out += '\n';
  }
  return out;
}

}  // namespace perfsweep::calib
