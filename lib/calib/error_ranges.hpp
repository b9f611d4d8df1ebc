#pragma once
// What a prediction is worth: the signed errors of the validation sets' rows (validation/*/,
// predicted by `validate runs` through estimate's own path) as residuals, and from the rows
// nearest to a new prediction (its system, precision and GPU count) an 80% range of its error
// (docs/validation.md, "What a prediction is worth").
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace perfsweep {

// One validation row's signed error: predicted step time / measured - 1 (negative: predicted
// faster than measured).
struct Residual {
  std::string set;        // the validation set (its folder's name)
  std::string id;         // the row's id in the set
  std::string source;     // what is held out together: the set, or the set and its release (round, container)
  std::string system;     // the system it was predicted with (a shipped name: H100-calibrated)
  std::string precision;  // bf16, fp8, ...
  std::int64_t gpus = 0;
  double error = 0;
  std::string model = "dense";  // the model's kind: dense, or moe (routed experts)
};

// validation/residuals.csv: the header set,id,source,system,precision,gpus,error,model and a row per
// residual; InputError naming the file, line, field and value for anything else.
std::vector<Residual> read_residuals(const std::filesystem::path& file);
// The same table as text, rows in the order given (errors with 17 significant digits).
std::string residuals_csv(std::span<const Residual> rows);

struct ErrorRangeQuery {
  std::string system;
  std::string precision;
  std::int64_t gpus = 0;
  std::string model = "dense";  // dense or moe: a model with routed experts
};
// A model's kind as the residuals name it.
inline const char* model_kind(bool routed_experts) { return routed_experts ? "moe" : "dense"; }

// The rows a range is drawn from: the tier (which of system and precision they share with the
// query) and the rows themselves, nearest in GPU count first.
enum class RangeTier { SystemAndPrecision, System, Precision, Any };
struct ErrorRange {
  double p10 = 0, p90 = 0;  // the range's ends: the signed errors' 10th and 90th percentiles, widened
  RangeTier tier = RangeTier::Any;
  bool same_model = false;  // drawn from the rows of the query's model kind alone
  std::size_t rows = 0;
  std::int64_t gpus_lo = 0, gpus_hi = 0;
  std::vector<std::string> sets;  // sorted, distinct
};

// Rows drawn per range: at least kMinRangeRows; those within a factor kRangeScaleFactor of the
// query's GPU count when there are that many, else the kMinRangeRows nearest.
inline constexpr std::size_t kMinRangeRows = 8;
inline constexpr double kRangeScaleFactor = 8;

// The 80% range of the rows nearest to the query: among the rows of the query's model kind (dense
// or MoE: their errors differ in kind, docs/validation.md) where there are kMinRangeRows of them,
// else among all, the first tier with kMinRangeRows rows (system and precision, then system, then
// precision, then any), then the nearest in scale (|log(gpus / query gpus)|, ties by set and id).
// Nothing when there are fewer rows in all.
// The range: the drawn rows' 10th and 90th percentiles, each `widen` times as far from their
// median as it is.
std::optional<ErrorRange> expected_error(std::span<const Residual> rows, const ErrorRangeQuery& q, double widen = 1);

// The widening the stated 80% ranges use, chosen so that with each source (a set, or a set's
// software release: an MLPerf round, a container of NVIDIA's pages) held out in turn about 80% of
// its rows fall inside the range drawn from the other sources: the percentiles as they are cover
// 60.1% of 383 rows (a source's rows share its bias, which the other sources' scatter does not
// show), x1.5 80.7%, x2 89.0%, x2.5 92.2% (`validate residuals` prints them; docs/validation.md,
// "What a prediction is worth").
inline constexpr double kStatedRangeWidening = 2;

// "-4% / +7% (80% of 40 H100-calibrated fp8 runs at 2K-11K GPUs: mlperf, nvidia_h100)".
std::string describe(const ErrorRange& r, const ErrorRangeQuery& q);

// Each source held out in turn: its rows' ranges drawn from the other sources' rows; how many of
// them fall inside their range (a stated 80% should cover about 80%).
struct RangeCoverage {
  std::size_t rows = 0, inside = 0, below = 0, above = 0, without = 0;
};
RangeCoverage held_out_coverage(std::span<const Residual> rows, double widen = 1);

// The shipped residual table (validation/residuals.csv, written by `validate residuals`), found as
// inputs are (config/inputs.hpp: find_shipped_file) and read once; empty where there is none.
// InputError for a damaged one.
const std::vector<Residual>& shipped_residuals();
// "<lead>expected error of the step time: -4% / +7% (an 80% range, from ...)" from the shipped
// table, wrapped at about 110 columns, each line ending in a newline; "" without a table.
std::string expected_error_line(const ErrorRangeQuery& q, std::string_view lead = {});

// The p-th quantile (0..1) of sorted values, linearly interpolated between order statistics
// (numpy's default); values must not be empty.
double quantile(std::span<const double> sorted, double p);

}  // namespace perfsweep
