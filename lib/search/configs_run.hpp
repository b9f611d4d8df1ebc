#pragma once
// configs' run (apps/configs) as plain data and free functions: the systems of --system, each
// strategy's ConfigRanges from the lists as the flags give them, the work counted before it
// starts, the rows evaluated and ranked, and the search's problems for the same systems and
// options (search/neighbours.hpp). Nothing here logs: what a person is told comes back as text.
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/axes.hpp"
#include "model/efficiency.hpp"
#include "search/configs.hpp"
#include "search/search.hpp"

namespace perfsweep {

// One system of the run (--system A,B,C): the system as loaded (with --nvs), the runtime its
// rows are costed under, the price of its GPU-hour, and each strategy's ranges.
struct SystemRun {
  System sys;
  Runtime runtime;
  double price = 0;  // of a GPU-hour (0: none given)
  std::vector<ConfigRanges> ranges;
  std::vector<Strategy> strategies;
};

// A row of the table and CSV: the configuration, its system (an index into the run's systems), its
// tokens, model FLOP/s and MFU (of bf16's peak and of its precision's), and the budget's time and
// cost when one is asked.
struct SystemConfigRow {
  ConfigRow config;
  std::size_t system = 0;
  Efficiency efficiency;
  TrainingBudget budget;
  double cost_per_mtok = 0;  // the price of a million tokens (0: no price)
};

// tokens: the training budget's tokens (0: none asked).
SystemConfigRow make_row(ConfigRow r, std::size_t system, const SystemRun& run, const Transformer& model,
                         std::int64_t global_batch, double tokens);

// "A,B,C" -> {"A", "B", "C"}: the systems of --system, each once.
std::vector<std::string> system_names(const std::string& text);

// Each system of `names` loaded, its NVLink domain set to `nvs` where given; InputError for two of
// one name.
std::vector<SystemRun> load_system_runs(const std::vector<std::string>& names, std::optional<std::int64_t> nvs);

// --sort cost: InputError naming the systems without the price of a GPU-hour.
void check_priced(const std::vector<SystemRun>& systems);

// --tp, --tp1, --tp2, --pp, --dp: "" -> {} (free); "8" or "1,2,4" -> those, each of which must
// divide the GPU count; "lo:hi" -> the divisors of the GPU count from lo to hi (the powers of two
// when the count is one). Repeated values count once.
std::vector<std::int64_t> degrees(const std::string& text, const std::string& flag, std::int64_t n_gpus);

// --mbs, --nb: "" -> {}; "1,2,4" -> those; "1:64" -> the powers of two from 1 to 64.
std::vector<std::int64_t> values(const std::string& text, const std::string& flag);

// What each strategy's ConfigRanges are made of: the lists as the flags give them, the execution
// options as parsed, and what is kept.
struct ConfigRangesFlags {
  std::int64_t n_gpus = 0;
  std::array<std::string, kAxisCount> degree{};               // --tp, --tp1, --tp2, --dp, --pp ("" free)
  std::array<std::optional<std::int64_t>, kAxisCount> nv{};  // --nv-* (the NVLink shares)
  std::string mbs{}, nb{};                                   // "all" mbs: the search's
  std::string attention{};                                   // --attention's modes
  bool attention_recompute = false;
  ExecutionChoices choices{};
  std::vector<Execution> stage_choices{};
  bool balance_stages = false, stages_given = false;
  bool all_placements = false, fits_only = false;
  std::size_t top = 0;
  bool by_throughput = false;
};

// Each system's and strategy's ranges (its degrees, attention modes and execution options; --tp
// and --nv-tp are 1d's, --tp1, --tp2, --nv-tp1 and --nv-tp2 the 2d strategies', --nb 2d's),
// checked before any is evaluated. check_strategy runs first for each system and strategy (the
// launch framework's); of several strategies, one a system's runtime does not run is left out
// (refused when none is left). note: a line for the log (a strategy or option dropped).
void add_strategy_ranges(std::vector<SystemRun>& systems, const std::vector<Strategy>& strategies,
                         const ConfigRangesFlags& flags, const std::function<void(Strategy)>& check_strategy,
                         const std::function<void(const std::string&)>& note);

// With --top and the rows ranked by throughput or cost, the space --max-points admits, as a
// multiple of it: the walk evaluates only what its step-time bound lets through.
constexpr std::int64_t kPrunedSpaceFactor = 1000;

// The work, counted before any configuration is evaluated: InputError past max_points (pruned:
// --top with the rows ranked by throughput or cost, whose walk skips what cannot enter the top
// (ConfigRanges::prune): the space may then hold kPrunedSpaceFactor times as many).
std::int64_t count_system_runs(const std::vector<SystemRun>& systems, const Transformer& model, std::int64_t n_gpus,
                               std::int64_t global_batch, std::int64_t max_points, bool pruned);

// Every system's and strategy's rows, in the order of the systems and their strategies.
struct SystemRunsSweep {
  std::vector<SystemConfigRow> rows;
  std::vector<std::string> rejections;  // why some could not be evaluated, named by strategy and system where several
  std::vector<std::int64_t> refused_by_rule;  // by index in layout_rules()
  bool several_strategies = false;            // some system ran more than one
};

// on_points: each layout's points as it is walked (progress); note: a line for the log (the
// subtrees and layouts the step-time bound skipped); top: --top, named in that line.
SystemRunsSweep sweep_system_runs(std::vector<SystemRun>& systems, const Transformer& model, std::int64_t n_gpus,
                                  std::int64_t global_batch, double tokens, std::size_t top,
                                  const std::function<void(std::int64_t)>& on_points,
                                  const std::function<void(const std::string&)>& note);

// The layouts each rule of the rule table refused (model/layout_rules.cpp), most first: "name n,
// ..." or "none".
std::string refused_by_rule_text(const std::vector<std::int64_t>& refused_by_rule);

// How far from the GPU count asked for `configs` looks for counts at which a configuration fits.
constexpr std::int64_t kNearestCountReach = 64;
// A batch whose best configuration is this much faster per GPU is named (search/neighbours.hpp),
// of the first kBatchTries neighbouring batches on each side.
constexpr double kBatchGain = 0.10;
constexpr std::size_t kBatchTries = 6;

// Why no row is left (the first rejection), and where the search with the same options finds a
// configuration that fits instead: the nearest GPU counts (within kNearestCountReach).
std::string no_rows_message(const std::vector<std::string>& rejections, const std::vector<SystemRun>& systems,
                            const Transformer& model, std::int64_t n_gpus, std::int64_t global_batch, bool fits_only);

// Those that fit first; by cost the cheapest per token first, by throughput the fastest first
// (neither: the order the rows were evaluated in).
void rank_rows(std::vector<SystemConfigRow>& rows, bool by_cost, bool by_throughput);

// Warnings on what the table recommends (its first row) and on any row whose MFU passes 100% of
// its precision's peak (model/guards.hpp), one per sentence past the row's name.
std::vector<std::string> caveat_warnings(const std::vector<SystemConfigRow>& rows,
                                         const std::vector<SystemRun>& systems, std::int64_t n_gpus);

// The search's problems for the run's systems, strategies and attention modes with the options
// given (search/neighbours.hpp searches beside the count and batch asked for with them).
std::vector<SearchProblem> search_problems(const std::vector<SystemRun>& systems, const Transformer& model,
                                           std::int64_t global_batch);

// Progress of a long evaluation, at most every kProgressSeconds: configurations done of those
// counted, the rate and the time left.
class ConfigProgress {
 public:
  // pruned: the walk skips subtrees, so the configurations walked are no measure of the time left
  ConfigProgress(std::int64_t total, bool pruned)
      : total_(total), pruned_(pruned), start_(std::chrono::steady_clock::now()), last_(start_) {}
  // The line to log when one is due.
  std::optional<std::string> add(std::int64_t points);

 private:
  static constexpr std::chrono::seconds kProgressSeconds{5};
  std::int64_t total_, done_ = 0;
  bool pruned_;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace perfsweep
