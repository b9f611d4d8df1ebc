#pragma once
// A validation set as data (docs/validation.md, "Validation sets"): a folder of
//   set.yaml   the set's name, description and sources; the measured quantity and its unit; the
//              columns the summary groups by; the parts (which rows a fitter may fit); the
//              accuracy targets `validate runs --check` checks; variants (the rows under other
//              flags); the runs that trained but are known to be predicted not to fit;
//   runs.csv   one row per measured run: its id, `args` (estimate's flags for the run: the
//              command a user would type, paths relative to the folder), the measured value and
//              the columns set.yaml names;
//   README.md  the sources, the columns, what is left out and why;
//   models/, systems/, runtimes/  inputs particular to the set, named by the rows' args.
// Read once and checked before any run is predicted: every error is an InputError naming the file,
// the line (runs.csv) or key (set.yaml) and the value.
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace perfsweep::calib {

inline constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();

// What a set's measured column is compared with: a figure of the prediction.
enum class SetQuantity : std::uint8_t {
  StepSeconds,             // step_s: the training step (estimate's totals.t)
  TokensPerSecondPerGpu,   // tokens_per_s_per_gpu: global batch x sequence / step / GPUs
  SamplesPerSecond,        // samples_per_s: global batch / step
  ModelTflopsPerGpu,       // model_tflops_per_gpu: PaLM's count (6N + 12 L e T a token) x tokens/s per GPU
  ModelTflopsPerGpuCausal, // model_tflops_per_gpu_causal: the same with the causal attention halved (6N + 6 L e T)
  MegatronTflopsPerGpu,    // megatron_tflops_per_gpu: Narayanan et al. (2021)'s count, 96 B s l h^2 (1 + s/6h + V/16lh)
};
// What a set's memory column is compared with.
enum class MemoryQuantity : std::uint8_t {
  StateGib,  // state_gib: weights, gradients and optimizer states of the fullest stage, GiB
  PeakGb,    // peak_gb: the step's peak of the fullest stage (estimate's totals.mem), GB
};

struct QuantityInfo {
  const char* name;
  const char* unit;
  const char* what;
};
const QuantityInfo& quantity_info(SetQuantity q);
const QuantityInfo& memory_quantity_info(MemoryQuantity q);

// The figures a target bounds, over the rows it selects.
enum class Statistic : std::uint8_t {
  Count,                 // rows with a measured and a predicted value
  MedianAbsError,        // of |predicted / measured - 1|
  MeanAbsError,
  MaxAbsError,
  MedianSignedError,     // of predicted / measured - 1
  P10SignedError,
  P90SignedError,
  FitAccuracy,           // rows that trained or ran out of memory whose fit verdict is right, of those
  TrainedFit,            // rows that trained, not listed as known_oom, predicted to fit, of those
  MemoryMedianAbsError,  // of |predicted / measured memory - 1|, rows that trained
};
const char* statistic_name(Statistic s);

enum class Part : std::uint8_t { HeldOut, Fit, All };
const char* part_name(Part p);  // "held-out", "fit", "all"

struct Target {
  Statistic statistic = Statistic::MedianAbsError;
  enum class Bound : std::uint8_t { Below, AtMost, Above, AtLeast } bound = Bound::Below;
  double value = 0;
  Part part = Part::HeldOut;
  std::vector<std::pair<std::string, std::string>> where;  // column = value, all of them
  std::string where_text;  // "gpu=B200", for messages
};

// Runs that trained and that the model is known to predict not to fit: each one's predicted memory
// over what the runtime can allocate must stay below `memory_below`.
struct KnownOom {
  std::vector<std::string> rows;
  std::string reason;
  double memory_below = 1;
};

// The rows as given (name "default"), or under flags of their own added to each row that does not
// give them (a row's own --runtime stays), or compared with another measured column or quantity.
struct Variant {
  std::string name;
  std::string description;
  std::vector<std::string> args;
  // The measured column (the set's `measured`, or the variant's own), the quantity of the
  // prediction it is compared with and its unit, and its value by row (NaN where the run has none).
  std::string measured_column, unit;
  double measured_scale = 1;  // the column's unit to the quantity's (ms to s: 1e-3)
  SetQuantity quantity = SetQuantity::StepSeconds;
  std::vector<double> measured;
  std::vector<Target> targets;
  std::vector<KnownOom> known_oom;
  // The known_oom entry of a row id, or nullptr.
  const KnownOom* known_oom_of(const std::string& id) const;
};

struct SetSource {
  std::string name, url, commit, note;
};

enum class Outcome : std::uint8_t { Trained, OutOfMemory, Other };

struct SetRow {
  std::size_t line = 0;  // of runs.csv, from 1
  std::string id;
  std::vector<std::string> args;  // estimate's flags, paths as in the file; empty: not expressed
  std::string reason;             // why not expressed (the `reason` column), where args is empty
  bool fit = false;               // in the fit part
  Outcome outcome = Outcome::Trained;
  double measured_memory = kMissing;  // in the memory quantity's unit; NaN where none
  std::vector<std::string> cells;     // every column's text, by the header's order
};

struct ValidationSet {
  std::filesystem::path dir;
  std::string name, description;
  std::vector<SetSource> sources;
  std::string memory_column;  // "" without one
  MemoryQuantity memory_quantity = MemoryQuantity::StateGib;
  std::string outcome_column;  // "" without one: every run trained
  std::string part_column;     // "" without one: every run held out
  std::string parts_how;       // how the fit part was chosen
  std::vector<std::string> summarize_by;
  std::map<std::string, std::string> fitter_columns;  // a fitter's input name -> runs.csv column
  std::vector<Variant> variants;  // [0]: the rows as given
  std::vector<std::string> header;
  std::vector<SetRow> rows;

  // The column's index in runs.csv; InputError naming the set when it has none.
  std::size_t column(const std::string& name) const;
  const std::string& cell(const SetRow& row, const std::string& column_name) const;
};

// DIR/set.yaml and DIR/runs.csv, checked (the header above).
ValidationSet read_validation_set(const std::filesystem::path& dir);

// A row's args as the command line the rows' reader hands estimate's parser: the variant's flags
// added where the row does not give them, and the value of --model, --system and --runtime
// replaced by DIR/VALUE where that names a file or folder of the set.
std::vector<std::string> row_arguments(const ValidationSet& set, const SetRow& row, const Variant& variant);

// "estimate ARGS" of row_arguments, as a user would type it from where `validate runs` ran.
std::string estimate_command(const std::vector<std::string>& args);

// The scale bucket of a GPU count: "1-8", "9-64", "65-512", "513-4096", "4097-32768", "32769+".
std::string gpu_bucket(std::int64_t gpus);

}  // namespace perfsweep::calib
