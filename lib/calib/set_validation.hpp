#pragma once
// A validation set's rows predicted through estimate's path (search/estimate.hpp: each row's
// request as estimate's parser makes it from the row's flags), their errors against the
// measurements, the summary by part, GPU, precision and scale, and the set's targets checked
// (`validate runs DIR`, docs/validation.md "Validation sets").
#include <optional>
#include <string>
#include <vector>

#include "calib/validation_set.hpp"
#include "search/estimate.hpp"

namespace perfsweep::calib {

// Megatron's model FLOPs per iteration, as Narayanan et al. (2021) count them with full
// recomputation: 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
double megatron_model_flops(const Transformer& model, std::int64_t global_batch);

// The set's quantity of a request whose step takes step_s (estimate's totals.t).
double quantity_of(SetQuantity q, const EstimateRequest& request, double step_s);
double memory_of(MemoryQuantity q, const Evaluation& ev);

// One row's prediction under one variant.
struct RowPrediction {
  bool run = false;         // its part was asked for (validate runs --part)
  bool predicted = false;   // the row was predicted (its part selected and estimate could take it)
  std::string note;         // why not: the row's reason, or the model's refusal
  double value = kMissing;  // in the variant's quantity
  double step_s = kMissing;
  double memory = kMissing;           // in the set's memory quantity, where it has one
  double memory_fraction = kMissing;  // peak memory over what the runtime can allocate
  bool fits = false;
  std::string command;  // "estimate ARGS": the command that gives this prediction
  double measured = kMissing;  // the row's measured value of the variant's column
  bool has_error() const;
  double error() const { return value / measured - 1; }
};

// evaluate_request on a copy of `request`, the figures the set compares; a configuration the
// model refuses (ConfigError) is a row not predicted, with the model's reason as its note.
RowPrediction predict_row(EstimateRequest request, SetQuantity quantity, const ValidationSet& set);

// The figures over a selection of a variant's rows.
struct Summary {
  std::string group;       // "all", "gpu=H100", "gpus=65-512", ...
  std::size_t rows = 0;    // selected
  std::size_t count = 0;   // with a measured and a predicted value
  std::size_t not_predicted = 0;  // selected rows estimate could not take
  double median_abs = kMissing, mean_abs = kMissing, max_abs = kMissing;
  std::string worst;       // the row of max_abs
  double median_signed = kMissing, p10_signed = kMissing, p90_signed = kMissing;
  std::size_t trained = 0, trained_fit = 0;  // rows that trained (not known_oom) and of those predicted to fit
  std::size_t judged = 0, judged_right = 0;  // rows that trained or ran out of memory, and verdicts right
  std::size_t memory_count = 0;
  double memory_median_abs = kMissing;
  double statistic(Statistic s) const;
};

// `select` picks rows by index into set.rows.
template <class Select>
Summary summarize(const ValidationSet& set, const Variant& variant, const std::vector<RowPrediction>& predictions,
                  const std::string& group, Select&& select);
Summary summarize_rows(const ValidationSet& set, const Variant& variant, const std::vector<RowPrediction>& predictions,
                       const std::string& group, const std::vector<bool>& selected);

// Rows of `part` (held-out, fit or all).
std::vector<bool> rows_of_part(const ValidationSet& set, const std::vector<RowPrediction>& predictions, Part part);

// The summaries of one part: over all its rows, then by each summarize_by column's values (a
// `gpus` column by gpu_bucket), in order of their first row.
std::vector<Summary> summaries(const ValidationSet& set, const Variant& variant,
                               const std::vector<RowPrediction>& predictions, Part part);

// A variant's targets and its known_oom rows' memory bounds, each as "ok    ..." or "FAIL  ..."
// with the figure and the bound; `ok` false where any failed. A target whose part was not
// predicted (validate runs --part) is listed as not checked.
struct TargetReport {
  std::vector<std::string> lines;
  bool ok = true;
};
TargetReport check_targets(const ValidationSet& set, const Variant& variant, const std::vector<RowPrediction>& predictions);

// The summary text of one variant: its quantity, every predicted part's table and its fit line,
// and the rows not predicted.
std::string summary_text(const ValidationSet& set, const Variant& variant, const std::vector<RowPrediction>& predictions);

// One CSV row per (variant, row): variant,id,part,<summarize_by columns>,measured,predicted,
// rel_err,fits,memory_fraction[,outcome,measured_memory,predicted_memory],predicted_step_s,note,command
// (numbers as %.17g, empty where there is none). The header first where `header`.
std::string rows_csv(const ValidationSet& set, const Variant& variant, const std::vector<RowPrediction>& predictions,
                     bool header);

template <class Select>
Summary summarize(const ValidationSet& set, const Variant& variant, const std::vector<RowPrediction>& predictions,
                  const std::string& group, Select&& select) {
  std::vector<bool> selected(set.rows.size());
  for (std::size_t i = 0; i < set.rows.size(); ++i) selected[i] = select(i);
  return summarize_rows(set, variant, predictions, group, selected);
}

}  // namespace perfsweep::calib
