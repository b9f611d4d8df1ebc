#pragma once
// `validate runs DIR` and `validate fit NAME --sets ...`: a validation set's rows read through
// estimate's own parser (common/estimate_options.hpp), predicted by estimate's evaluation
// (search/estimate.hpp), summarized and checked (calib/set_validation.hpp), or fitted by a named
// fitter (calib/set_fitters.hpp). docs/validation.md, "Validation sets".
#include <string>
#include <vector>

#include "calib/validation_set.hpp"
#include "search/estimate.hpp"

namespace perfsweep {

// Each row's request under a variant, as estimate makes it from the row's flags (row_arguments);
// rows of another part than `part` and rows without flags have none. Every row is read before any
// is evaluated: an InputError names runs.csv, the row's line and id and estimate's message.
struct SetRequests {
  std::vector<std::optional<EstimateRequest>> requests;  // by row
  std::vector<std::string> commands;                     // "estimate ARGS" by row ("" without flags)
  std::vector<std::string> refusals;                     // the model's refusal at reading, by row
  std::vector<bool> run;                                 // in the part asked for
};
SetRequests read_requests(const calib::ValidationSet& set, const calib::Variant& variant, calib::Part part);

struct RunsOptions {
  std::string dir, out, part = "all", variant;
  bool check = false;
};
// Prints every variant's summary and target lines on stdout, writes the rows' CSV where asked;
// returns 1 where --check and a target is missed, else 0.
int validate_runs(const RunsOptions& o);

}  // namespace perfsweep
