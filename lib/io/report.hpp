#pragma once
// Reports of one evaluated configuration (the `estimate` tool): the reference's per-layer JSON,
// CSV, and readable tables.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "io/launch.hpp"
#include "model/step.hpp"

namespace perfsweep {

// The strategy's parallel-config keys as the reference names them ({"dp", "tp", "pp", "mbs"}, ...)
// and the NVLink-placement keys ({"nv_tp", "nv_dp", "nv_pp"} or nv_tp1, nv_tp2, ...); the keys
// beyond the reference's (cp, nv_cp) only where they differ from it, unless `all` (the same keys
// for every layout of a strategy: HDF5 columns, schemas).
std::vector<std::pair<const char*, std::int64_t>> config_keys(const Layout& layout, bool all = false);
std::vector<std::pair<const char*, std::int64_t>> nv_keys(const Layout& layout, bool all = false);

std::string_view strategy_name(Strategy s);  // "1d", "2d", "2d-seqp"
Strategy parse_strategy(const std::string& name);  // also accepts "2d-seq"; InputError otherwise
// --strat as `configs` and `sweep` take it: a comma-separated list ("1d,2d-seqp") or "all" (1d,
// 2d, 2d-seqp), in the order given; InputError on an unknown or repeated strategy.
std::vector<Strategy> parse_strategies(const std::string& text);
// The --attention and --attention-recompute options: mode "flash" or "unfused"; recompute only
// with unfused attention and strategy 1d (the reference's sa_1d). InputError naming the option
// otherwise.
AttentionMode parse_attention(const std::string& mode, bool recompute, Strategy strategy);
// A comma-separated list of modes ("flash,unfused", configs), each as parse_attention reads it
// (in a list of both, `recompute` goes with unfused).
std::vector<AttentionMode> parse_attentions(const std::string& modes, bool recompute, Strategy strategy);
std::string_view attention_name(const AttentionMode& a);  // "flash", "unfused", "unfused with recompute"

// Which model timed a row's collectives: those that move data (volume > 0 over two or more GPUs;
// the pipeline row's only when pp > 1) and, of them, those timed from the system's calibration.
struct CommUse {
  int collectives = 0;
  int calibrated = 0;
};
CommUse comm_use(const LayerResult& row, bool pipeline_row, const Layout& layout);
// "none" (no collective), "analytical", "calibrated" (all of them) or "mixed".
std::string_view comm_use_name(const CommUse& use);

// {"modules": {"mlp": [...], "sa": [...], "dp": [...], "pp": [...]}, "totals": {...}, "throughput": x}.
// Beyond the reference's keys: each layer with a collective has "comm_model" (comm_use_name),
// totals have "fits", "comm_model", "collectives", "calibrated_collectives" and, when the
// system names one, "calibration" (the calibration file's path).
std::string estimate_json(const Evaluation& ev, const Layout& layout, const System& system);
// The same with the inputs echoed first: {"inputs": {"model": {...}, "system": {...}, "strategy",
// "global_batch_size", the configuration and NVLink keys, "placement": "given" or "fastest"},
// "units": {the unit of each system key, totals field, ...}, ...}.
// With a launch line, its arguments ("launch": one string), framework and notes follow last.
std::string estimate_json(const Evaluation& ev, const Layout& layout, const System& system, const Transformer& model,
                          std::int64_t global_batch, bool placement_given, const LaunchLine* launch = nullptr);

// One CSV row per layer (module, layer, every per-layer field, comm_model).
std::string estimate_csv(const Evaluation& ev, const Layout& layout);
// The totals as `quantity,value,unit` rows (with the comm_model summary and calibration path as in
// the JSON).
std::string estimate_csv_totals(const Evaluation& ev, const Layout& layout, const System& system);

// "training on 1.5e+13 tokens: 8.941e+05 steps, 326.2 days, 4.008e+06 GPU-hours[, cost ...]".
std::string training_budget_text(const TrainingBudget& budget);

// One line for a search's best configuration, whole: the strategy, every degree and placement,
// the execution options (precision too), the attention kernels and the runtime, the step time and
// its parts, tokens/s per GPU and MFU, the memory against its limit, and with a token budget
// (tokens > 0) its training_budget_text.
std::string configuration_summary(const Layout& layout, const Totals& totals, const Transformer& model,
                                  const System& system, std::int64_t global_batch, std::string_view runtime,
                                  double tokens = 0, double gpu_hour_cost = 0);

// The parallel axes as model/axes.hpp declares them (estimate --axes): each axis's name, the
// strategies that have it, what it splits, the collectives it causes per layer and per step, how its
// GPUs share an NVLink domain (its --nv-* share) and its rule.
std::string axes_text();

// Aligned tables for people: per-layer costs and times, totals, and the memory breakdown.
std::string estimate_text(const Evaluation& ev, const Layout& layout, const System& system, const Transformer& model,
                          std::int64_t global_batch);

}  // namespace perfsweep
