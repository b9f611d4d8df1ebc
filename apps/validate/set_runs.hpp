#pragma once
// `validate runs DIR` and `validate fit NAME --sets ...`: a validation set's rows read through
// estimate's own parser (common/estimate_options.hpp), predicted by estimate's evaluation
// (search/estimate.hpp), summarized and checked (calib/set_validation.hpp), or fitted by a named
// fitter (calib/set_fitters.hpp). docs/validation.md, "Validation sets".
#include <filesystem>
#include <optional>
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

struct FitOptions {
  std::string fitter;
  std::vector<std::string> sets, held_out;  // names of validation/ or folders
  std::string kernels, out;
};
// The fitter on the fit part of `sets`: its report, then every set's rows predicted with what it
// fitted, a line per part (fit, held out) and set; what it fitted written to `out` where given.
int validate_fit(const FitOptions& o);

struct ResidualsOptions {
  std::vector<std::string> sets;  // names of validation/ or folders; empty: every set of validation/
  std::string out;
};
// Every row of the sets predicted as `validate runs` predicts it (the rows as given) with a shipped
// system (a --system that names one of systems/, not a set's own file): its signed error on the
// step time (calib/error_ranges.hpp) written as a residual table to `out` (stdout without one),
// and the 80% ranges' coverage with each source (a set, or a set's round) held out on stderr.
int validate_residuals(const ResidualsOptions& o);

// A set's folder: DIR as given where it is one, else validation/NAME here, under
// $PERFSWEEP_DATA_DIR or in the source tree; InputError otherwise.
std::filesystem::path set_folder(const std::string& name_or_dir);

}  // namespace perfsweep
