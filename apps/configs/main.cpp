// configs: chosen parallel configurations at a fixed GPU count, side by side, with their time
// components and memory (the reference's plots_sweep_parallel_configs notebook as a command).
#include <CLI/CLI.hpp>
#include <csignal>

#include "common/cli.hpp"
#include "common/exit_codes.hpp"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <optional>
#include <sstream>

#include "common/attention_options.hpp"
#include "common/axis_options.hpp"
#include "common/cli.hpp"
#include "common/execution_options.hpp"
#include "common/launch_options.hpp"
#include "common/budget_options.hpp"
#include "common/model_flags.hpp"
#include "config/inputs.hpp"
#include "config/runtime_file.hpp"
#include "config/system_list.hpp"
#include "core/csv.hpp"
#include "core/published.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/limits.hpp"
#include "io/report.hpp"
#include "model/efficiency.hpp"
#include "search/candidates.hpp"
#include "search/configs.hpp"
#include "search/search.hpp"

using namespace perfsweep;

namespace {

struct Options {
  std::string model = "gpt3_1T", system = cli::kDefaultSystem, strat = "1d";
  std::optional<std::int64_t> nvs;
  std::int64_t n_gpus = 0;
  cli::Verbosity verbosity;
  std::int64_t global_batch = 4096;
  std::int64_t seq_len = 0;  // 0: the model's
  std::string mbs, nb;
  AxisFlags<std::string> axes;  // --tp --tp1 --tp2 --dp --pp lists and the --nv-* shares (model/axes.hpp)
  AttentionOptions attention;
  ExecutionFlags exec;
  bool all_placements = false, fits_only = false, csv = false;
  std::string sort = "auto";
  std::size_t top = 0;
  std::int64_t max_points = 1000000;
  std::string output;
  cli::BudgetOptions budget;
  cli::LaunchOptions launch;
};

// --tp, --tp1, --tp2, --pp, --dp: "" -> {} (free); "8" or "1,2,4" -> those, each of which must
// divide the GPU count; "lo:hi" -> the divisors of the GPU count from lo to hi (the powers of two
// when the count is one). Repeated values count once.
std::vector<std::int64_t> degrees(const std::string& text, const std::string& flag, std::int64_t n_gpus) {
  if (text.empty()) return {};
  const std::string n = std::to_string(n_gpus);
  std::vector<std::int64_t> out;
  const auto colon = text.find(':');
  if (colon == std::string::npos) {
    for (std::int64_t v : parse_gpu_counts(text, flag)) {
      if (n_gpus % v) throw InputError(flag + "=" + std::to_string(v) + " does not divide --n-gpus=" + n);
      if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    }
    return out;
  }
  auto bound = [&](const std::string& s, const char* which) {
    const std::string where = flag + " (range " + which + ")";
    const std::vector<std::int64_t> v = parse_gpu_counts(s, where);
    if (v.size() != 1) throw InputError(where + " must be a positive integer, got '" + s + "'");
    return v.front();
  };
  const std::int64_t lo = bound(text.substr(0, colon), "start"), hi = bound(text.substr(colon + 1), "end");
  if (lo > hi) throw InputError(flag + ": a range runs from low to high, got '" + text + "'");
  for (std::int64_t d : divisors(n_gpus)) {
    if (d >= lo && d <= hi) out.push_back(d);
  }
  if (out.empty()) throw InputError(flag + "=" + text + ": no divisor of --n-gpus=" + n + " in that range");
  return out;
}

// --mbs, --nb: "" -> {}; "1,2,4" -> those; "1:64" -> the powers of two from 1 to 64.
std::vector<std::int64_t> values(const std::string& text, const std::string& flag) {
  if (text.empty()) return {};
  return parse_gpu_counts(text, flag);
}

// Every number of the CSV (and so of the table, built from the same rows after it) is checked here
// before it is printed or written (core/published.hpp).
std::string g17(double v, const char* column) {
  check_published(v, column);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

struct Column {
  const char* name;
  std::int64_t (*get)(const ConfigRow&);
};
const Column kIntColumns[] = {
    {"dp", [](const ConfigRow& r) { return r.layout.dp; }},
    {"tp", [](const ConfigRow& r) { return r.layout.tensor.tp1 * r.layout.tensor.tp2; }},
    {"tp1", [](const ConfigRow& r) { return r.layout.tensor.tp1; }},
    {"tp2", [](const ConfigRow& r) { return r.layout.tensor.tp2; }},
    {"pp", [](const ConfigRow& r) { return r.layout.pp; }},
    {"mbs", [](const ConfigRow& r) { return r.layout.mbs; }},
    {"nb", [](const ConfigRow& r) { return r.layout.tensor.nb; }},
    {"nv_tp1", [](const ConfigRow& r) { return r.layout.tensor.nv1; }},
    {"nv_tp2", [](const ConfigRow& r) { return r.layout.tensor.nv2; }},
    {"nv_dp", [](const ConfigRow& r) { return r.layout.nv_dp; }},
    {"nv_pp", [](const ConfigRow& r) { return r.layout.nv_pp; }},
    {"cp", [](const ConfigRow& r) { return r.layout.tensor.cp; }},
    {"nv_cp", [](const ConfigRow& r) { return r.layout.tensor.nv_cp; }},
    {"micro_batches", [](const ConfigRow& r) { return r.micro_batches; }},
};

// n_gpus, strategy, the degrees, throughput, fits, every totals key, hbm_capacity
// (scripts/plot_configs.py reads these columns).
// Each row's tokens, model FLOP/s and MFU, and the budget's time and cost when one is asked.
struct RowTraining {
  Efficiency efficiency;
  TrainingBudget budget;
};
RowTraining row_training(const ConfigRow& r, const Transformer& model, const System& sys, std::int64_t global_batch,
                         const cli::BudgetOptions& b) {
  RowTraining x;
  x.efficiency = efficiency(model, sys, r.layout.n_gpus(), global_batch, r.totals.t);
  x.budget = training_budget(x.efficiency, r.layout.n_gpus(), global_batch, model.l, b.tokens, b.gpu_hour_cost);
  return x;
}

// The attention column's value: flash, unfused, or unfused-recompute.
std::string attention_column(const AttentionMode& a) {
  return a.flash ? "flash" : a.recompute ? "unfused-recompute" : "unfused";
}

// launch: each row's launch line (arguments only), a last column; empty: no such column.
std::string to_csv(const std::vector<ConfigRow>& rows, std::int64_t n_gpus, const System& sys,
                   const std::vector<RowTraining>& training, const std::vector<LaunchLine>& launch) {
  const bool budget = !training.empty() && training.front().budget.tokens > 0;
  std::ostringstream out;
  out << "n_gpus,strategy";
  for (const Column& c : kIntColumns) out << ',' << c.name;
  // the execution options (model/plan.hpp kConfigKeys), coded as in the sweep's HDF5 columns
  for_each_config_key(Layout{}, KeyKind::Execution, [&](const char* name, std::int64_t) { out << ',' << name; });
  out << ",attention,throughput,fits";
  for (const TotalsField& f : kTotalsFields) out << ',' << f.name;
  out << ",hbm_capacity,tokens_per_s_per_gpu,model_tflops_per_gpu,mfu";
  if (budget) out << ",train_days,gpu_hours,cost";
  if (!launch.empty()) out << ",launch";
  out << "\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const ConfigRow& r = rows[i];
    const RowTraining& x = training[i];
    out << n_gpus << ',' << strategy_name(r.layout.strategy);
    for (const Column& c : kIntColumns) {
      check_published(c.get(r), c.name);
      out << ',' << c.get(r);
    }
    for_each_config_key(r.layout, KeyKind::Execution, [&](const char*, std::int64_t v) { out << ',' << v; });
    out << ',' << attention_column(r.layout.attention) << ',' << g17(r.throughput, "throughput") << ','
        << (r.fits ? 1 : 0);
    for (const TotalsField& f : kTotalsFields) out << ',' << g17(r.totals.*(f.member), f.name);
    out << ',' << g17(sys.hbm_capacity, "hbm_capacity") << ','
        << g17(x.efficiency.tokens_per_s_per_gpu, "tokens_per_s_per_gpu") << ','
        << g17(x.efficiency.model_tflops_per_gpu, "model_tflops_per_gpu") << ',' << g17(x.efficiency.mfu, "mfu");
    if (budget) {
      out << ',' << g17(x.budget.days, "train_days") << ',' << g17(x.budget.gpu_hours, "gpu_hours") << ','
          << g17(x.budget.cost, "cost");
    }
    if (!launch.empty()) out << ',' << csv_field(launch_arguments_text(launch[i]));
    out << '\n';
  }
  return out.str();
}

// A row's options as the flags spell them: the attention kernels, then execution_values.
std::vector<std::pair<const char*, std::string>> option_values(const ConfigRow& r) {
  std::vector<std::pair<const char*, std::string>> out{{"attention", std::string(attention_name(r.layout.attention))}};
  for (auto& kv : execution_values(r.layout.exec)) out.push_back(std::move(kv));
  return out;
}

// Aligned, for people: one line per configuration, times in seconds per iteration. The options
// every row shares on a line above the table; those given as lists (`listed`, option_values'
// names) or differing between rows in an options column, and with several strategies
// (several_strategies) each row's in a column.
std::string to_table(const std::vector<ConfigRow>& rows, bool several_strategies, const std::vector<std::string>& listed,
                     const System& sys, const Transformer& model, const Runtime& runtime,
                     const std::vector<RowTraining>& training) {
  const bool budget = !training.empty() && training.front().budget.tokens > 0;
  const bool all_1d =
      std::all_of(rows.begin(), rows.end(), [](const ConfigRow& r) { return r.layout.strategy == Strategy::OneD; });
  std::ostringstream out;
  char line[512];
  // the stages' blocks (given, or balanced for each row) in a column of their own
  const bool partitioned =
      std::any_of(rows.begin(), rows.end(), [](const ConfigRow& r) { return stages_partitioned(r.layout); });
  std::vector<std::size_t> varying;  // indices into option_values of the options that differ between rows
  if (!rows.empty()) {
    const auto first = option_values(rows.front());
    for (std::size_t k = 0; k < first.size(); ++k) {
      const std::string_view key = first[k].first;
      if (key.ends_with("_stage_blocks")) continue;
      if (std::find(listed.begin(), listed.end(), key) != listed.end()) {
        varying.push_back(k);
        continue;
      }
      for (const ConfigRow& r : rows) {
        if (option_values(r)[k].second != first[k].second) {
          varying.push_back(k);
          break;
        }
      }
    }
    Execution shared = rows.front().layout.exec;
    shared.first_stage_blocks = shared.last_stage_blocks = 0;
    if (varying.empty()) {
      if (!(shared == Execution{})) {
        out << "execution: " << execution_text(shared, param_layout_text(runtime, shared.params)) << "\n";
      }
    } else {
      std::string common, differ;
      for (std::size_t k = 1; k < first.size(); ++k) {  // attention is in the title unless it varies
        const std::string_view key = first[k].first;
        if (key.ends_with("_stage_blocks")) continue;
        if (std::find(varying.begin(), varying.end(), k) != varying.end()) continue;
        const ExecutionOption& o = kExecutionOptions[k - 1];
        if (o.applies != nullptr && !o.applies(rows.front().layout)) continue;
        // the layout as the runtime keeps it (its own bytes per parameter where its file gives them)
        const std::string value =
            key == "layout" ? param_layout_text(runtime, rows.front().layout.exec.params) : first[k].second;
        common += (common.empty() ? "" : " ") + std::string(key) + "=" + value;
      }
      for (std::size_t k : varying) differ += (differ.empty() ? "" : ", ") + std::string(first[k].first);
      out << "execution: " << common << "; per row (options): " << differ << "\n";
    }
  }
  const char* strat_header = several_strategies ? "strat    " : "";
  std::snprintf(line, sizeof line,
                "%-3s %s%9s %4s %5s %4s %5s %6s %11s %11s %9s %8s %8s %8s %8s %8s %8s %7s %4s %6s%s%s%s\n", "#",
                strat_header, all_1d ? "tp" : "tp1xtp2", "pp", "dp", "mbs", "nb", "m-b", "nv tp/dp/pp", "samples/s",
                "t (s)", "comp", "mem", "tp comm", "dp comm", "pp comm", "bubble", "mem GB", "fits", "MFU %",
                budget ? "     days" : "", partitioned ? "  blocks first/middle/last" : "",
                varying.empty() ? "" : "  options");
  out << line;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const ConfigRow& r = rows[i];
    const Layout& l = r.layout;
    const bool one_d = l.strategy == Strategy::OneD;
    // context parallelism: "8/cp16" and the cp group's NVLink share after nv_tp ("8x2/1/1")
    const bool cp = l.tensor.cp > 1;
    const std::string tp = one_d ? std::to_string(l.tensor.tp1) + (cp ? "/cp" + std::to_string(l.tensor.cp) : "")
                                 : std::to_string(l.tensor.tp1) + "x" + std::to_string(l.tensor.tp2);
    const std::string nv = (one_d ? std::to_string(l.tensor.nv1) + (cp ? "x" + std::to_string(l.tensor.nv_cp) : "")
                                  : std::to_string(l.tensor.nv1) + "x" + std::to_string(l.tensor.nv2)) +
                           "/" + std::to_string(l.nv_dp) + "/" + std::to_string(l.nv_pp);
    const std::string nb = l.strategy == Strategy::TwoD ? std::to_string(l.tensor.nb) : "-";
    char strat[32] = "";
    if (several_strategies) std::snprintf(strat, sizeof strat, "%-8s ", std::string(strategy_name(l.strategy)).c_str());
    const Totals& t = r.totals;
    std::snprintf(line, sizeof line,
                  "%-3zu %s%9s %4lld %5lld %4lld %5s %6lld %11s %11.3f %9.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %7.1f "
                  "%4s\n",
                  i + 1, strat, tp.c_str(), static_cast<long long>(l.pp), static_cast<long long>(l.dp),
                  static_cast<long long>(l.mbs), nb.c_str(), static_cast<long long>(r.micro_batches), nv.c_str(),
                  r.throughput, t.t, t.t_comp, t.t_mem, t.t_tp_comm, t.t_dp_comm, t.t_pp_comm, t.t_bubble, t.mem,
                  r.fits ? "yes" : "no");
    std::string text = line;
    char extra[64];
    std::snprintf(extra, sizeof extra, " %6.1f", 100 * training[i].efficiency.mfu);
    text.insert(text.size() - 1, extra);
    if (budget) {
      std::snprintf(extra, sizeof extra, " %8.4g", training[i].budget.days);
      text.insert(text.size() - 1, extra);
    }
    if (partitioned) {
      const StageBlocks b = stage_blocks(model, l.pp, l.exec);
      std::string blocks = std::to_string(b.first) + "/" + (l.pp > 2 ? std::to_string(b.middle) : "-") + "/" +
                           std::to_string(b.last);
      if (!varying.empty()) blocks.resize(std::max<std::size_t>(blocks.size(), 23), ' ');
      text.insert(text.size() - 1, "  " + blocks);
    }
    if (!varying.empty()) {
      const auto values = option_values(r);
      std::string options;
      for (std::size_t k : varying) {
        // an option that does not apply to the row (offload_percent without offload optimizer) is left out
        const ExecutionOption* o = k > 0 ? &kExecutionOptions[k - 1] : nullptr;
        if (o != nullptr && o->applies != nullptr && !o->applies(r.layout)) continue;
        options += " " + std::string(values[k].first) + "=" + values[k].second;
      }
      text.insert(text.size() - 1, " " + options);
    }
    out << text;
  }
  std::snprintf(line, sizeof line,
                "m-b: micro-batches per step; nv: GPUs of each group in one NVLink domain of %lld; times: seconds "
                "per iteration; memory: GB (1e9 bytes), HBM capacity %.1f GB.\n",
                static_cast<long long>(sys.nvlink_size), sys.hbm_capacity);
  out << line;
  return out.str();
}

// Progress of a long evaluation on the log, at most every kProgressSeconds: configurations done of
// those counted, the rate and the time left.
class ConfigProgress {
 public:
  explicit ConfigProgress(std::int64_t total) : total_(total), start_(std::chrono::steady_clock::now()), last_(start_) {}
  void add(std::int64_t points) {
    done_ += points;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < kProgressSeconds) return;
    last_ = now;
    const double s = std::chrono::duration<double>(now - start_).count();
    const double rate = static_cast<double>(done_) / s;
    spdlog::info("progress {}/{} configurations ({:.1f}%), {:.0f}/s, ETA {:.0f} s", done_, total_,
                 100.0 * static_cast<double>(done_) / static_cast<double>(std::max<std::int64_t>(total_, 1)), rate,
                 static_cast<double>(total_ - done_) / rate);
  }

 private:
  static constexpr std::chrono::seconds kProgressSeconds{5};
  std::int64_t total_, done_ = 0;
  std::chrono::steady_clock::time_point start_, last_;
};

int run(const Options& o) {
  o.budget.check();
  const std::optional<LaunchFramework> launch = o.launch.parse();
  check_count(o.n_gpus, kMaxGpuCount, "--n-gpus");
  check_count(o.global_batch, kMaxGlobalBatch, "--global-batch-size");
  const Transformer model = cli::read_model_logged(o.model, o.seq_len);
  System sys = load_system_named(o.system);
  if (o.nvs) {
    check_count(*o.nvs, kMaxNvlinkDomain, "--nvs");
    sys.nvlink_size = *o.nvs;
  }
  const std::vector<Strategy> strategies = parse_strategies(o.strat);
  auto listed = [&](auto&& pred) { return std::any_of(strategies.begin(), strategies.end(), pred); };
  std::uint32_t listed_axes = 0;
  for (Strategy s : strategies) listed_axes |= plan_of(s).axes;
  check_axes_given(o.axes, listed_axes);
  if (!listed([](Strategy s) { return s == Strategy::TwoD; }) && !o.nb.empty()) {
    throw InputError("--nb (SUMMA blocks) goes with --strat 2d");
  }
  ExecutionChoices choices = parse_execution_choices(o.exec);
  check_execution_for_model(choices, model);
  const std::vector<Execution> stage_choices = parse_stage_block_choices(o.exec);
  const bool balance = balances_stages(o.exec);
  const Runtime runtime = choose_runtime(o.exec.runtime, sys, model);
  if (!o.output.empty()) {
    refuse_output_over_input(o.output,
                             {model_file(o.model).string(), resolve_input(o.system, "systems").string(), runtime.file});
  }

  // Each strategy's rows (its degrees, attention modes and execution options; --tp and --nv-tp
  // are 1d's, --tp1, --tp2, --nv-tp1 and --nv-tp2 the 2d strategies', --nb 2d's), checked before
  // any is evaluated.
  bool ranges_given = false;
  for (std::size_t i = 0; i < kAxisCount; ++i) ranges_given = ranges_given || !o.axes.degree[i].empty();
  const bool by_throughput = o.sort == "throughput" || (o.sort == "auto" && !ranges_given);
  std::vector<ConfigRanges> ranges;
  std::vector<Strategy> run_strategies;
  for (const Strategy strategy : strategies) {
    if (launch) check_launch_strategy(*launch, strategy);
    ConfigRanges r;
    const StrategyPlan& plan = plan_of(strategy);
    for (std::size_t i = 0; i < kAxisCount; ++i) {
      if (!kAxes[i].has_degree_flag() || !has_axis(plan, i)) continue;
      r.degrees_of(kAxes[i].name) = degrees(o.axes.degree[i], key_flag(kAxes[i].name), o.n_gpus);
    }
    r.all_micro_batch_sizes = o.mbs == "all";
    if (!r.all_micro_batch_sizes) r.mbs = values(o.mbs, "--mbs");
    if (strategy == Strategy::TwoD) r.nb = values(o.nb, "--nb");
    r.placement.nv = o.axes.nv;
    r.all_placements = o.all_placements;
    r.attentions = parse_attentions(o.attention.mode, o.attention.recompute, strategy);
    ExecutionChoices runnable = choices;
    std::vector<std::string> dropped;
    try {
      check_runtime_choices(sys, runtime, strategy, runnable, &dropped);
    } catch (const StrategyNotRunError& e) {
      // of several strategies, one the runtime does not run is left out; when none is left, refused
      if (strategies.size() == 1 || (run_strategies.empty() && strategy == strategies.back())) throw;
      spdlog::info("--strat {} dropped: {}", strategy_name(strategy), e.what());
      continue;
    }
    for (const std::string& line : dropped) spdlog::info("{}", line);
    r.choices = runnable;
    r.stage_choices = stage_choices;
    r.balance_stages = balance;
    r.stages_given = stage_blocks_given(o.exec);
    r.runtime = runtime;
    r.fits_only = o.fits_only;
    r.keep = o.top;
    r.by_throughput = by_throughput;
    ranges.push_back(std::move(r));
    run_strategies.push_back(strategy);
  }
  // The work, counted before any configuration is evaluated: refused past --max-points.
  check_count(o.max_points, kMaxConfigPoints, "--max-points");
  std::int64_t points = 0;
  for (std::size_t k = 0; k < run_strategies.size(); ++k) {
    points += count_configs(sys, model, run_strategies[k], o.n_gpus, o.global_batch, ranges[k], o.max_points - points);
    if (points > o.max_points) {
      throw InputError("configs would evaluate more than --max-points=" + std::to_string(o.max_points) +
                       " configurations (layouts x NVLink placements); narrow the lists (--tp, --pp, --dp, --mbs, "
                       "the execution options, --strat) or raise --max-points to run it");
    }
  }
  spdlog::info("{} configurations (layouts x NVLink placements) to evaluate", points);
  ConfigProgress progress(points);
  for (ConfigRanges& r : ranges) r.on_points = [&](std::int64_t n) { progress.add(n); };
  ConfigSweep sweep;
  for (std::size_t k = 0; k < run_strategies.size(); ++k) {
    ConfigSweep one = sweep_configs(sys, model, run_strategies[k], o.n_gpus, o.global_batch, ranges[k]);
    sweep.rows.insert(sweep.rows.end(), one.rows.begin(), one.rows.end());
    sweep.combinations += one.combinations;
    for (std::string& why : one.rejections) {
      if (run_strategies.size() > 1) why = std::string(strategy_name(run_strategies[k])) + ": " + why;
      sweep.rejections.push_back(std::move(why));
    }
  }
  std::vector<ConfigRow>& rows = sweep.rows;
  if (o.fits_only) std::erase_if(rows, [](const ConfigRow& row) { return !row.fits; });
  if (rows.empty()) {
    std::string why = sweep.rejections.empty() ? "" : ": " + sweep.rejections.front();
    if (sweep.rejections.size() > 1) why += " (and " + std::to_string(sweep.rejections.size() - 1) + " other reasons)";
    throw ConfigError("no configuration of " + std::to_string(o.n_gpus) + " GPUs " +
                      (o.fits_only ? "fits in memory among those asked for" : "matches the ranges asked for") + why);
  }
  if (by_throughput) {
    // Those that fit first, as the search ranks them; then the fastest of those that do not.
    std::stable_sort(rows.begin(), rows.end(), [](const ConfigRow& a, const ConfigRow& b) {
      return a.fits != b.fits ? a.fits : a.throughput > b.throughput;
    });
  }
  if (o.top > 0 && rows.size() > o.top) rows.resize(o.top);

  std::vector<RowTraining> training;
  for (const ConfigRow& row : rows) training.push_back(row_training(row, model, sys, o.global_batch, o.budget));
  std::vector<LaunchLine> lines;
  if (launch) {
    for (const ConfigRow& row : rows) {
      lines.push_back(launch_line(*launch, {model, row.layout, runtime, o.global_batch, sys.nvlink_size}));
    }
  }
  const std::string csv = to_csv(rows, o.n_gpus, sys, training, lines);
  if (!o.output.empty()) {
    write_text_atomically(o.output, csv);
    spdlog::info("wrote {} configurations to {}", rows.size(), o.output);
  }
  if (o.csv) {
    std::cout << csv;
  } else if (o.output.empty()) {
    // one attention mode for every row: in the title (several: in the options column)
    const std::vector<AttentionMode>& modes = ranges.front().attentions;
    const std::string attention =
        modes.size() != 1 || modes.front().flash ? "" : ", attention " + std::string(attention_name(modes.front()));
    std::string strategy_names;
    for (Strategy s : run_strategies) strategy_names += (strategy_names.empty() ? "" : ", ") + std::string(strategy_name(s));
    std::printf("%s on %s (NVLink domain %lld), %s%s, %lld GPUs, global batch %lld: %zu configurations%s\n",
                model.name.c_str(), sys.name.c_str(), static_cast<long long>(sys.nvlink_size),
                strategy_names.c_str(), attention.c_str(), static_cast<long long>(o.n_gpus),
                static_cast<long long>(o.global_batch), rows.size(),
                by_throughput ? ", fastest first (those that fit before those that do not)" : ", in the order asked for");
    // the options given as lists, each row's value in the options column
    std::vector<std::string> listed_options;
    auto several = [&](const char* key, std::size_t n) {
      if (n > 1) listed_options.emplace_back(key);
    };
    several("attention", modes.size());
    for (const ExecutionOption& eo : kExecutionOptions) {
      if (eo.searched()) several(eo.key, eo.count(choices));
    }
    std::cout << to_table(rows, run_strategies.size() > 1, listed_options, sys, model, runtime, training);
    if (!sweep.rejections.empty()) {
      std::printf("not evaluated (%zu reasons), e.g.: %s\n", sweep.rejections.size(), sweep.rejections.front().c_str());
    }
    if (!lines.empty()) {
      std::printf("\nlaunch (%s) of configuration 1:\n", launch_framework_info(lines.front().framework).name);
      std::cout << launch_text(lines.front());
    }
  }
  flush_stdout();
  return 0;
}

}  // namespace

// PERFSWEEP_TOOL_ENTRY names this function where the tool runs in-process (the Python module).
#ifdef PERFSWEEP_TOOL_ENTRY
int PERFSWEEP_TOOL_ENTRY(int argc, char** argv) {
#else
int main(int argc, char** argv) {
#endif
  std::signal(SIGXFSZ, SIG_IGN);  // past a file-size limit, a write fails (reported) instead of killing
  CLI::App app{
      "configs: chosen parallel configurations at a fixed GPU count, side by side: time per iteration by component "
      "and memory (the reference's plots_sweep_parallel_configs notebook)"};
  Options o;
  cli::add_model_flags(app, o.model, o.seq_len);
  app.add_option("--system", o.system, "system name (systems/NAME.yaml) or path")->capture_default_str();
  app.add_option("--nvs", o.nvs, "GPUs per NVLink domain (default: the system file's nvlink_size)");
  app.add_option("--strat", o.strat,
                 "1d, 2d (SUMMA) or 2d-seqp (context parallel), a list 1d,2d-seqp, or all: the rows of every strategy "
                 "ranked together")
      ->capture_default_str();
  app.add_option("--n-gpus", o.n_gpus, "GPU count")->required();
  app.add_option("--global-batch-size", o.global_batch, "samples per optimizer step")->capture_default_str();
  const char* list = "8 or 1,2,4 (each dividing --n-gpus) or 1:64 (the divisors of --n-gpus from 1 to 64)";
  add_axis_options(
      app, o.axes,
      [&](std::size_t axis) {
        const std::string name = kAxes[axis].name;
        const std::string fallback = name == "dp"   ? "n / (tp pp)"
                                     : name == "pp" ? "derived from --dp, or all"
                                     : name == "tp2" ? "all"
                                                     : "the search's";
        return std::string("; a list: ") + list + " (default: " + fallback + ")";
      },
      " (default: fastest)");
  app.add_option("--mbs", o.mbs,
                 "micro-batch sizes: 1,2,4 or 1:64 (powers of two), or all (the search's); default: 1 when any of "
                 "--tp/--tp1/--tp2/--pp/--dp is given, else all");
  app.add_option("--nb", o.nb,
                 "2d SUMMA block counts: 8 or 8,16 or 8:64 (powers of two); default: the fastest the search tries");
  add_attention_options(app, o.attention, true);
  add_execution_options(app, o.exec, true);
  add_stage_options(app, o.exec);
  app.add_flag("--all-placements", o.all_placements, "one row per NVLink placement (and nb) instead of the fastest (reference runtime) or the rank order's (any other)");
  app.add_flag("--fits-only", o.fits_only, "only configurations that fit in HBM");
  app.add_option("--sort", o.sort, "throughput (fitting ones first), or config (the order asked for); auto: config when ranges are given")
      ->check(CLI::IsMember({"auto", "throughput", "config"}))
      ->capture_default_str();
  app.add_option("--top", o.top, "keep the first K rows (0: all); memory holds K rows however many are evaluated")
      ->capture_default_str();
  app.add_option("--max-points", o.max_points,
                 "refuse to start when more configurations than this (layouts x NVLink placements, counted first) "
                 "would be evaluated")
      ->capture_default_str();
  cli::add_common_flags(app, o.verbosity);
  o.budget.add_to(app);
  o.launch.add_to(app, "the first configuration listed, after the table (--csv, -o: each row's, a launch column),");
  app.add_flag("--csv", o.csv, "print CSV (the columns scripts/plot_configs.py reads) instead of the table");
  app.add_option("-o,--out", o.output, "also write the CSV to this file (atomically)");
  app.footer(
      "Examples (the notebook's sweeps: 16384 B200s in NVLink domains of 8):\n"
      "  configs --n-gpus 16384 --nvs 8 --tp 8 --pp 1:128     # TP fixed, PP swept, DP = n / (TP PP)\n"
      "  configs --n-gpus 16384 --nvs 8 --pp 64 --tp 1:32     # PP fixed, TP swept\n"
      "  configs --n-gpus 16384 --nvs 8 --dp 32 --tp 4:128    # DP fixed, TP swept, PP = n / (TP DP)\n"
      "  configs --n-gpus 1024 --top 10 -o configs.csv       # the ten fastest of the search's space\n"
      "  scripts/plot_configs.py configs.csv --out configs    # the figure\n"
      "Units: time s per iteration, memory GB, throughput samples/s. Exit codes: 0 ok, 2 bad input.");
  try {
    app.parse(argc, argv);
    cli::use_stderr_log("configs", o.verbosity);
    cli::log_start(argc, argv, 1);
  } catch (const CLI::ParseError& e) {
    return cli::exit_for(app, e) == 0 ? 0 : 2;
  }
  try {
    return run(o);
  } catch (...) {
    const cli::ErrorExit e = cli::current_error_exit();
    cli::print_error("configs", e);
    return e.code;
  }
}
