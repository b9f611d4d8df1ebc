// configs: chosen parallel configurations at a fixed GPU count, side by side, with their time
// components and memory (the reference's plots_sweep_parallel_configs notebook as a command).
#include <CLI/CLI.hpp>
#include <csignal>

#include "calib/error_ranges.hpp"
#include "common/cli.hpp"
#include "common/exit_codes.hpp"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

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
#include "core/human.hpp"
#include "core/limits.hpp"
#include "core/text.hpp"
#include "io/report.hpp"
#include "model/efficiency.hpp"
#include "model/guards.hpp"
#include "search/candidates.hpp"
#include "search/configs.hpp"
#include "search/neighbours.hpp"
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

// A difference (the memory headroom, negative where a row does not fit): finite, of any sign.
std::string difference_g17(double v) {
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

// One system of the run (--system A,B,C): the system as loaded (with --nvs), the runtime its
// rows are costed under, the price of its GPU-hour, and each strategy's ranges.
struct SystemRun {
  System sys;
  Runtime runtime;
  double price = 0;  // of a GPU-hour (0: none given)
  std::vector<ConfigRanges> ranges;
  std::vector<Strategy> strategies;
};

// A row of the table and CSV: the configuration, its system, its tokens, model FLOP/s and MFU
// (of bf16's peak and of its precision's), and the budget's time and cost when one is asked.
struct Row {
  ConfigRow config;
  std::size_t system = 0;
  Efficiency efficiency;
  TrainingBudget budget;
  double cost_per_mtok = 0;  // the price of a million tokens (0: no price)
};
Row make_row(ConfigRow r, std::size_t system, const SystemRun& run, const Transformer& model,
             std::int64_t global_batch, double tokens) {
  Row x;
  Execution exec = r.layout.exec;
  exec.fp8 = run.runtime.fp8;  // the precision's peak as the runtime runs it (FP8 or MXFP8)
  x.efficiency = efficiency(model, run.sys, r.layout.n_gpus(), global_batch, r.totals.t, &exec);
  x.budget = training_budget(x.efficiency, r.layout.n_gpus(), global_batch, model.l, tokens, run.price);
  x.cost_per_mtok = run.price > 0 ? run.price / 3600 / x.efficiency.tokens_per_s_per_gpu * 1e6 : 0;
  x.config = std::move(r);
  x.system = system;
  return x;
}

// The attention column's value: flash, unfused, or unfused-recompute.
std::string attention_column(const AttentionMode& a) {
  return a.flash ? "flash" : a.recompute ? "unfused-recompute" : "unfused";
}

// A row's execution option as the flags spell it (names: recompute=full, precision=fp8), never a code.
std::string option_column(const ExecutionOption& o, std::int64_t code) { return option_value_name(o, code); }

// system, n_gpus, strategy, the degrees, the execution options (by name), throughput, fits, the
// memory limit and headroom, every totals key, hbm_capacity, the efficiency, the budget and the
// costs where asked (scripts/plot_configs.py reads these columns).
// launch: each row's launch line (arguments only), a last column; empty: no such column.
std::string to_csv(const std::vector<Row>& rows, std::int64_t n_gpus, const std::vector<SystemRun>& systems,
                   const std::vector<LaunchLine>& launch, double tokens) {
  const bool budget = tokens > 0;
  const bool priced = std::any_of(systems.begin(), systems.end(), [](const SystemRun& s) { return s.price > 0; });
  std::ostringstream out;
  out << "system,n_gpus,strategy";
  for (const Column& c : kIntColumns) out << ',' << c.name;
  for_each_config_key(Layout{}, KeyKind::Execution, [&](const char* name, std::int64_t) { out << ',' << name; });
  out << ",attention,throughput,fits,mem_limit,mem_headroom";
  for (const TotalsField& f : kTotalsFields) out << ',' << f.name;
  out << ",hbm_capacity,tokens_per_s_per_gpu,model_tflops_per_gpu,mfu,mfu_precision";
  if (priced) out << ",gpu_hour_cost,cost_per_mtok";
  if (budget) out << ",train_days,gpu_hours";
  if (budget && priced) out << ",cost";
  if (!launch.empty()) out << ",launch";
  out << "\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& x = rows[i];
    const ConfigRow& r = x.config;
    const SystemRun& run = systems[x.system];
    out << csv_field(run.sys.name) << ',' << n_gpus << ',' << strategy_name(r.layout.strategy);
    for (const Column& c : kIntColumns) {
      check_published(c.get(r), c.name);
      out << ',' << c.get(r);
    }
    for_each_config_key(r.layout, KeyKind::Execution, [&](const char* name, std::int64_t v) {
      const ExecutionOption* o = find_execution_option(name);
      out << ',' << (o != nullptr ? option_column(*o, v) : std::to_string(v));
    });
    const double headroom = r.totals.mem_limit - r.totals.mem;
    check_published_difference(headroom, "mem_headroom");
    out << ',' << attention_column(r.layout.attention) << ',' << g17(r.throughput, "throughput") << ','
        << (r.fits ? 1 : 0) << ',' << g17(r.totals.mem_limit, "mem_limit") << ',' << difference_g17(headroom);
    for (const TotalsField& f : kTotalsFields) out << ',' << g17(r.totals.*(f.member), f.name);
    out << ',' << g17(run.sys.hbm_capacity, "hbm_capacity") << ','
        << g17(x.efficiency.tokens_per_s_per_gpu, "tokens_per_s_per_gpu") << ','
        << g17(x.efficiency.model_tflops_per_gpu, "model_tflops_per_gpu") << ',' << g17(x.efficiency.mfu, "mfu")
        << ',' << g17(x.efficiency.mfu_precision, "mfu_precision");
    // an unpriced system's cost columns are empty (pandas: NaN)
    if (priced) {
      out << ',' << (run.price > 0 ? g17(run.price, "gpu_hour_cost") : "") << ','
          << (run.price > 0 ? g17(x.cost_per_mtok, "cost_per_mtok") : "");
    }
    if (budget) out << ',' << g17(x.budget.days, "train_days") << ',' << g17(x.budget.gpu_hours, "gpu_hours");
    if (budget && priced) out << ',' << (run.price > 0 ? g17(x.budget.cost, "cost") : "");
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

// A text table: each column as wide as its widest cell, numbers right-aligned, text left-aligned.
class TextTable {
 public:
  void column(std::string header, bool left = false) {
    headers_.push_back(std::move(header));
    left_.push_back(left);
  }
  void row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  std::string text() const {
    std::vector<std::size_t> width(headers_.size());
    for (std::size_t c = 0; c < headers_.size(); ++c) {
      width[c] = headers_[c].size();
      for (const auto& r : rows_) width[c] = std::max(width[c], r[c].size());
    }
    std::string out;
    auto line = [&](const std::vector<std::string>& cells) {
      std::string l;
      for (std::size_t c = 0; c < cells.size(); ++c) {
        const std::string pad(width[c] - cells[c].size(), ' ');
        l += (c ? "  " : "") + (left_[c] ? cells[c] + pad : pad + cells[c]);
      }
      while (!l.empty() && l.back() == ' ') l.pop_back();
      out += l + "\n";
    };
    line(headers_);
    for (const auto& r : rows_) line(r);
    return out;
  }

 private:
  std::vector<std::string> headers_;
  std::vector<bool> left_;
  std::vector<std::vector<std::string>> rows_;
};

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// One line per system: its NVLink domain, runtime, memory limit (what the runtime can allocate of
// its HBM: the number "fits" uses), price, and calibration status with any caveat.
std::string systems_text(const std::vector<SystemRun>& systems) {
  std::string out;
  for (const SystemRun& s : systems) {
    // the limit the rows' fits use: memory_limit_gb, as evaluate sets totals.mem_limit
    const double limit = memory_limit_gb(s.sys, s.runtime);
    // the capacity as the runtime reads it: a datasheet's "141GB" as GiB under a framework's runtime
    const bool gib = s.runtime.capacity_in_gib && !s.sys.hbm_capacity_exact;
    out += (systems.size() > 1 ? "  " : "") + s.sys.name + ": NVLink domain " + std::to_string(s.sys.nvlink_size) +
           ", runtime " + s.runtime.name + ", memory limit " + fixed(limit, 2) + " GB per GPU (of HBM " +
           human_number(s.sys.hbm_capacity) + (gib ? " GiB" : " GB") +
           (s.runtime.is_reference() ? "" : ", less the runtime's driver and allocator reserves") + ")";
    if (s.price > 0) out += ", " + human_number(s.price) + " per GPU-hour";
    const std::string caveat = system_caveat_text(s.sys);
    out += "; " + (caveat.empty() ? calibration_status(s.sys) : caveat) + "\n";
  }
  return out;
}

// Aligned, for people: one line per configuration, times in seconds per iteration. The options
// every row shares on a line above the table; those given as lists (`listed`, option_values'
// names) or differing between rows in an options column, with several strategies or systems each
// row's in a column.
std::string to_table(const std::vector<Row>& rows, bool several_strategies, const std::vector<std::string>& listed,
                     const std::vector<SystemRun>& systems, const Transformer& model, double tokens) {
  const bool budget = tokens > 0;
  const bool several_systems = systems.size() > 1;
  const bool priced = std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.cost_per_mtok > 0; });
  const bool all_1d = std::all_of(rows.begin(), rows.end(),
                                  [](const Row& r) { return r.config.layout.strategy == Strategy::OneD; });
  const bool own_peak = std::any_of(rows.begin(), rows.end(), [](const Row& r) {
    return r.config.layout.exec.precision != Precision::Bf16;
  });
  std::ostringstream out;
  // the stages' blocks (given, or balanced for each row) in a column of their own
  const bool partitioned = std::any_of(rows.begin(), rows.end(),
                                       [](const Row& r) { return stages_partitioned(r.config.layout); });
  std::vector<std::size_t> varying;  // indices into option_values of the options that differ between rows
  if (!rows.empty()) {
    const auto first = option_values(rows.front().config);
    for (std::size_t k = 0; k < first.size(); ++k) {
      const std::string_view key = first[k].first;
      if (key.ends_with("_stage_blocks")) continue;
      if (std::find(listed.begin(), listed.end(), key) != listed.end()) {
        varying.push_back(k);
        continue;
      }
      for (const Row& r : rows) {
        if (option_values(r.config)[k].second != first[k].second) {
          varying.push_back(k);
          break;
        }
      }
    }
    // the first row's system's runtime (several systems: each its own, named in the system lines)
    const Runtime& runtime = systems[rows.front().system].runtime;
    Execution shared = rows.front().config.layout.exec;
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
        if (o.applies != nullptr && !o.applies(rows.front().config.layout)) continue;
        if (!option_shown(o, rows.front().config.layout.exec)) continue;  // etp left at tp's
        // the layout as the runtime keeps it (its own bytes per parameter where its file gives them)
        const std::string value =
            key == "layout" ? param_layout_text(runtime, rows.front().config.layout.exec.params) : first[k].second;
        common += (common.empty() ? "" : " ") + std::string(key) + "=" + value;
      }
      for (std::size_t k : varying) differ += (differ.empty() ? "" : ", ") + std::string(first[k].first);
      out << "execution: " << common << "; per row (options): " << differ << "\n";
    }
  }
  TextTable table;
  table.column("#", true);
  if (several_systems) table.column("system", true);
  if (several_strategies) table.column("strat", true);
  for (const char* h : {all_1d ? "tp" : "tp1xtp2", "pp", "dp", "mbs", "nb", "m-b", "nv tp/dp/pp", "samples/s", "t (s)",
                        "comp", "mem", "tp comm", "dp comm", "pp comm", "bubble", "mem GB"}) {
    table.column(h);
  }
  if (several_systems) table.column("limit GB");
  for (const char* h : {"headroom", "fits", "tok/s/GPU", "MFU %"}) table.column(h);
  if (own_peak) table.column("MFU own %");
  if (budget) table.column("days");
  if (priced) table.column("cost/Mtok");
  if (budget && priced) table.column("cost");
  if (partitioned) table.column("blocks first/middle/last", true);
  if (!varying.empty()) table.column("options", true);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& x = rows[i];
    const ConfigRow& r = x.config;
    const Layout& l = r.layout;
    const bool one_d = l.strategy == Strategy::OneD;
    // context parallelism: "8/cp16" and the cp group's NVLink share after nv_tp ("8x2/1/1")
    const bool cp = l.tensor.cp > 1;
    const std::string tp = one_d ? std::to_string(l.tensor.tp1) + (cp ? "/cp" + std::to_string(l.tensor.cp) : "")
                                 : std::to_string(l.tensor.tp1) + "x" + std::to_string(l.tensor.tp2);
    const std::string nv = (one_d ? std::to_string(l.tensor.nv1) + (cp ? "x" + std::to_string(l.tensor.nv_cp) : "")
                                  : std::to_string(l.tensor.nv1) + "x" + std::to_string(l.tensor.nv2)) +
                           "/" + std::to_string(l.nv_dp) + "/" + std::to_string(l.nv_pp);
    const Totals& t = r.totals;
    std::vector<std::string> cells{std::to_string(i + 1)};
    if (several_systems) cells.push_back(systems[x.system].sys.name);
    if (several_strategies) cells.emplace_back(strategy_name(l.strategy));
    for (const std::string& c :
         {tp, std::to_string(l.pp), std::to_string(l.dp), std::to_string(l.mbs),
          l.strategy == Strategy::TwoD ? std::to_string(l.tensor.nb) : std::string("-"),
          std::to_string(r.micro_batches), nv, fixed(r.throughput, 3), fixed(t.t, 3), fixed(t.t_comp, 3),
          fixed(t.t_mem, 3), fixed(t.t_tp_comm, 3), fixed(t.t_dp_comm, 3), fixed(t.t_pp_comm, 3), fixed(t.t_bubble, 3),
          fixed(t.mem, 1)}) {
      cells.push_back(c);
    }
    if (several_systems) cells.push_back(fixed(t.mem_limit, 1));
    cells.push_back(fixed(t.mem_limit - t.mem, 1));
    cells.emplace_back(r.fits ? "yes" : "no");
    cells.push_back(human_number(x.efficiency.tokens_per_s_per_gpu));
    cells.push_back(fixed(100 * x.efficiency.mfu, 1));
    if (own_peak) cells.push_back(fixed(100 * x.efficiency.mfu_precision, 1));
    if (budget) cells.push_back(human_number(x.budget.days));
    if (priced) cells.push_back(x.cost_per_mtok > 0 ? human_number(x.cost_per_mtok, 3) : "-");
    if (budget && priced) cells.push_back(x.cost_per_mtok > 0 ? human_number(x.budget.cost, 3) : "-");
    if (partitioned) {
      const StageBlocks b = stage_blocks(model, l.pp, l.exec);
      cells.push_back(std::to_string(b.first) + "/" + (l.pp > 2 ? std::to_string(b.middle) : "-") + "/" +
                      std::to_string(b.last));
    }
    if (!varying.empty()) {
      const auto values = option_values(r);
      std::string options;
      for (std::size_t k : varying) {
        // an option that does not apply to the row (offload_percent without offload optimizer) is left out
        const ExecutionOption* o = k > 0 ? &kExecutionOptions[k - 1] : nullptr;
        if (o != nullptr && o->applies != nullptr && !o->applies(r.layout)) continue;
        options += (options.empty() ? "" : " ") + std::string(values[k].first) + "=" + values[k].second;
      }
      cells.push_back(options);
    }
    table.row(std::move(cells));
  }
  out << table.text();
  std::string footer = "m-b: micro-batches per step; nv: GPUs of each group in one NVLink domain";
  if (!several_systems) footer += " of " + std::to_string(systems.front().sys.nvlink_size);
  footer += "; times: seconds per iteration; memory: GB (1e9 bytes) per GPU, headroom = the runtime's memory limit "
            "less the memory, fits = within that limit (";
  if (several_systems) {
    footer += "each system's, limit GB";
  } else {
    footer += fixed(memory_limit_gb(systems.front().sys, systems.front().runtime), 2) + " GB under " +
              systems.front().runtime.name;
  }
  footer += "); tok/s/GPU: tokens per second per GPU; MFU: model FLOP/s of the dense bf16 peak";
  if (own_peak) footer += ", own: of the peak of the row's precision";
  if (priced) footer += "; cost/Mtok: the price of a million tokens";
  if (budget && priced) footer += ", cost: of training on " + human_number(tokens) + " tokens";
  // wrapped at the clauses, about 110 columns a line
  std::string line;
  std::size_t pos = 0;
  const std::string text = footer + ".";
  while (pos < text.size()) {
    std::size_t next = text.find("; ", pos);
    next = next == std::string::npos ? text.size() : next + 2;
    const std::string clause = text.substr(pos, next - pos);
    if (!line.empty() && line.size() + clause.size() > 110) {
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out << line << "\n";
      line.clear();
    }
    line += clause;
    pos = next;
  }
  if (!line.empty()) out << line << "\n";
  if (!rows.empty()) {
    const Row& best = rows.front();
    const std::string range =
        expected_error_line({systems[best.system].sys.name,
                             kPrecisionNames[static_cast<std::size_t>(best.config.layout.exec.precision)],
                             best.config.layout.n_gpus(), model_kind(model.is_moe())},
                            "row 1's ");
    out << range;
  }
  return out.str();
}

// Progress of a long evaluation on the log, at most every kProgressSeconds: configurations done of
// those counted, the rate and the time left.
class ConfigProgress {
 public:
  // pruned: the walk skips subtrees, so the configurations walked are no measure of the time left
  ConfigProgress(std::int64_t total, bool pruned)
      : total_(total), pruned_(pruned), start_(std::chrono::steady_clock::now()), last_(start_) {}
  void add(std::int64_t points) {
    done_ += points;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < kProgressSeconds) return;
    last_ = now;
    const double s = std::chrono::duration<double>(now - start_).count();
    const double rate = static_cast<double>(done_) / s;
    if (pruned_) {
      spdlog::info("progress {} configurations walked of {} ({:.0f}/s; the rest may be skipped)", done_, total_, rate);
      return;
    }
    spdlog::info("progress {}/{} configurations ({:.1f}%), {:.0f}/s, ETA {:.0f} s", done_, total_,
                 100.0 * static_cast<double>(done_) / static_cast<double>(std::max<std::int64_t>(total_, 1)), rate,
                 static_cast<double>(total_ - done_) / rate);
  }

 private:
  static constexpr std::chrono::seconds kProgressSeconds{5};
  std::int64_t total_, done_ = 0;
  bool pruned_;
  std::chrono::steady_clock::time_point start_, last_;
};

// The search's problems for the run's systems, strategies and attention modes with the options
// given (search/neighbours.hpp searches beside the count and batch asked for with them).
std::vector<SearchProblem> search_problems(const std::vector<SystemRun>& systems, const Transformer& model,
                                           std::int64_t global_batch) {
  std::vector<SearchProblem> out;
  for (const SystemRun& s : systems) {
    for (std::size_t k = 0; k < s.strategies.size(); ++k) {
      for (const AttentionMode& attention : s.ranges[k].attentions) {
        SearchProblem p;
        p.strategy = s.strategies[k];
        p.model = model;
        p.system = s.sys;
        p.global_batch = global_batch;
        p.top_n = 1;
        p.attention = attention;
        p.exec = s.ranges[k].choices;
        p.runtime = s.runtime;
        out.push_back(std::move(p));
      }
    }
  }
  return out;
}

// With --top and the rows ranked by throughput or cost, the space --max-points admits, as a
// multiple of it: the walk evaluates only what its step-time bound lets through.
constexpr std::int64_t kPrunedSpaceFactor = 1000;

// How far from the GPU count asked for `configs` looks for counts at which a configuration fits.
constexpr std::int64_t kNearestCountReach = 64;
// A batch whose best configuration is this much faster per GPU is named (search/neighbours.hpp),
// of the first kBatchTries neighbouring batches on each side.
constexpr double kBatchGain = 0.10;
constexpr std::size_t kBatchTries = 6;

// "A,B,C" -> {"A", "B", "C"}: the systems of --system, each once.
std::vector<std::string> system_names(const std::string& text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = text.find(',', pos);
    std::string name = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (name.empty()) throw InputError("--system takes a name or path, or a list A,B,C; got '" + text + "'");
    if (std::find(out.begin(), out.end(), name) != out.end()) {
      throw InputError("--system lists " + quoted_text(name) + " twice");
    }
    out.push_back(std::move(name));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

// Warnings on what the table recommends (its first row) and on any row whose MFU passes 100% of
// its precision's peak (model/guards.hpp).
void warn_caveats(const std::vector<Row>& rows, const std::vector<SystemRun>& systems, std::int64_t n_gpus) {
  std::vector<std::string> said;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& x = rows[i];
    if (i > 0 && !(x.efficiency.mfu_precision > 1)) continue;
    const SystemRun& s = systems[x.system];
    for (const std::string& w : prediction_caveats("configuration " + std::to_string(i + 1), s.sys, s.runtime, n_gpus,
                                                   x.efficiency, x.config.layout.exec.precision)) {
      // one warning per sentence past the row's name, however many rows share it
      const std::string cause = w.substr(w.find(':'));
      if (std::find(said.begin(), said.end(), cause) != said.end()) continue;
      said.push_back(cause);
      spdlog::warn("{}", w);
    }
  }
}

int run(const Options& o) {
  o.budget.check();
  shipped_residuals();  // read (and checked) before the work
  const std::optional<LaunchFramework> launch = o.launch.parse();
  check_count(o.n_gpus, kMaxGpuCount, "--n-gpus");
  check_count(o.global_batch, kMaxGlobalBatch, "--global-batch-size");
  const Transformer model = cli::read_model_logged(o.model, o.seq_len);
  const std::vector<std::string> given_systems = system_names(o.system);
  std::vector<SystemRun> systems;
  for (const std::string& name : given_systems) {
    SystemRun s;
    s.sys = load_system_named(name);
    if (o.nvs) {
      check_count(*o.nvs, kMaxNvlinkDomain, "--nvs");
      s.sys.nvlink_size = *o.nvs;
    }
    for (const SystemRun& other : systems) {
      if (other.sys.name == s.sys.name) {
        throw InputError("--system: two systems named " + quoted_text(s.sys.name) + " (" + name + " and another)");
      }
    }
    systems.push_back(std::move(s));
  }
  {
    std::vector<std::string> names;
    for (const SystemRun& s : systems) names.push_back(s.sys.name);
    o.budget.check_systems(names);
  }
  for (SystemRun& s : systems) s.price = o.budget.price_for(s.sys);
  const bool by_cost = o.sort == "cost";
  if (by_cost) {
    std::string unpriced;
    for (const SystemRun& s : systems) {
      if (!(s.price > 0)) unpriced += (unpriced.empty() ? "" : ", ") + s.sys.name;
    }
    if (!unpriced.empty()) {
      throw InputError("--sort cost needs the price of a GPU-hour on every system; none for " + unpriced +
                       ": give --gpu-hour-cost PRICE or SYSTEM=PRICE,... (or gpu_hour_cost: in its system file)");
    }
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
  std::vector<std::string> inputs{model_file(o.model).string()};
  for (std::size_t k = 0; k < systems.size(); ++k) {
    systems[k].runtime = choose_runtime(o.exec.runtime, systems[k].sys, model);
    inputs.push_back(resolve_input(given_systems[k], "systems").string());
    inputs.push_back(systems[k].runtime.file);
  }
  if (!o.output.empty()) refuse_output_over_input(o.output, inputs);

  // Each system's and strategy's rows (its degrees, attention modes and execution options; --tp
  // and --nv-tp are 1d's, --tp1, --tp2, --nv-tp1 and --nv-tp2 the 2d strategies', --nb 2d's),
  // checked before any is evaluated.
  bool ranges_given = false;
  for (std::size_t i = 0; i < kAxisCount; ++i) ranges_given = ranges_given || !o.axes.degree[i].empty();
  const bool by_throughput =
      o.sort == "throughput" || o.sort == "time" || by_cost || (o.sort == "auto" && !ranges_given);
  for (SystemRun& s : systems) {
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
        check_runtime_choices(s.sys, s.runtime, strategy, runnable, &dropped);
      } catch (const StrategyNotRunError& e) {
        // of several strategies, one the runtime does not run is left out; when none is left, refused
        if (strategies.size() == 1 || (s.strategies.empty() && strategy == strategies.back())) throw;
        spdlog::info("{}: --strat {} dropped: {}", s.sys.name, strategy_name(strategy), e.what());
        continue;
      }
      for (const std::string& line : dropped) {
        spdlog::info("{}{}", systems.size() > 1 ? s.sys.name + ": " : std::string(), line);
      }
      r.choices = runnable;
      r.stage_choices = stage_choices;
      r.balance_stages = balance;
      r.stages_given = stage_blocks_given(o.exec);
      r.runtime = s.runtime;
      r.fits_only = o.fits_only;
      r.keep = o.top;
      // within one system and GPU count the cost of a token follows the throughput: the same top
      r.by_throughput = by_throughput;
      s.ranges.push_back(std::move(r));
      s.strategies.push_back(strategy);
    }
  }
  // The work, counted before any configuration is evaluated: refused past --max-points. With --top
  // and the rows ranked by throughput or cost, the walk skips what cannot enter the top
  // (ConfigRanges::prune): the space may then hold kPrunedSpaceFactor times as many.
  check_count(o.max_points, kMaxConfigPoints, "--max-points");
  const bool pruned = o.top > 0 && by_throughput;
  const std::int64_t limit = pruned ? std::min(kMaxConfigPoints, o.max_points * kPrunedSpaceFactor) : o.max_points;
  std::int64_t points = 0;
  for (const SystemRun& s : systems) {
    for (std::size_t k = 0; k < s.strategies.size(); ++k) {
      points += count_configs(s.sys, model, s.strategies[k], o.n_gpus, o.global_batch, s.ranges[k], limit - points);
      if (points > limit) {
        throw InputError("configs would evaluate more than " +
                         (pruned ? std::to_string(limit) + " configurations (--max-points=" +
                                       std::to_string(o.max_points) + " x " + std::to_string(kPrunedSpaceFactor) +
                                       " with --top, whose walk skips what cannot enter the top)"
                                 : "--max-points=" + std::to_string(o.max_points) + " configurations") +
                         " (layouts x NVLink placements); narrow the lists (--tp, --pp, --dp, --mbs, "
                         "the execution options, --strat, --system) or raise --max-points to run it");
      }
    }
  }
  for (const SystemRun& s : systems) {
    const std::string caveat = system_caveat_text(s.sys);
    if (!caveat.empty()) spdlog::info("{}: {}", s.sys.name, caveat);
  }
  spdlog::info("{} configurations (layouts x NVLink placements) {}", points,
               pruned ? "in the space; the walk skips those that cannot enter the top " + std::to_string(o.top)
                      : std::string("to evaluate"));
  ConfigProgress progress(points, pruned);
  std::vector<Row> rows;
  std::vector<std::string> rejections;
  std::vector<std::int64_t> refused_by_rule(layout_rules().size(), 0);
  bool several_strategies = false;
  for (std::size_t si = 0; si < systems.size(); ++si) {
    SystemRun& s = systems[si];
    several_strategies = several_strategies || s.strategies.size() > 1;
    for (std::size_t k = 0; k < s.strategies.size(); ++k) {
      s.ranges[k].on_points = [&](std::int64_t n) { progress.add(n); };
      ConfigSweep one = sweep_configs(s.sys, model, s.strategies[k], o.n_gpus, o.global_batch, s.ranges[k]);
      if (one.pruned_subtrees + one.pruned_layouts > 0) {
        spdlog::info("{}{}: the step-time bound skipped {} subtrees and {} layouts that could not enter the top {}",
                     s.sys.name, s.strategies.size() > 1 ? " " + std::string(strategy_name(s.strategies[k])) : "",
                     one.pruned_subtrees, one.pruned_layouts, o.top);
      }
      for (ConfigRow& r : one.rows) rows.push_back(make_row(std::move(r), si, s, model, o.global_batch, o.budget.tokens));
      for (std::size_t i = 0; i < one.refused_by_rule.size(); ++i) refused_by_rule[i] += one.refused_by_rule[i];
      for (std::string& why : one.rejections) {
        if (s.strategies.size() > 1) why = std::string(strategy_name(s.strategies[k])) + ": " + why;
        if (systems.size() > 1) why = s.sys.name + ": " + why;
        rejections.push_back(std::move(why));
      }
    }
  }
  // -v: the layouts each rule of the rule table refused (model/layout_rules.cpp), most first
  if (spdlog::should_log(spdlog::level::debug)) {
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < refused_by_rule.size(); ++i) {
      if (refused_by_rule[i] > 0) order.push_back(i);
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return refused_by_rule[a] > refused_by_rule[b]; });
    std::string counts;
    for (std::size_t i : order) {
      counts += (counts.empty() ? "" : ", ") + std::string(layout_rules()[i].name) + " " +
                std::to_string(refused_by_rule[i]);
    }
    spdlog::debug("layouts refused by rule: {}", counts.empty() ? "none" : counts);
  }
  if (o.fits_only) std::erase_if(rows, [](const Row& row) { return !row.config.fits; });
  if (rows.empty()) {
    std::string why = rejections.empty() ? "" : ": " + rejections.front();
    if (rejections.size() > 1) why += " (and " + std::to_string(rejections.size() - 1) + " other reasons)";
    // where it runs instead: the nearest counts at which the search with the same options finds one that fits
    const NearestCounts near = nearest_feasible_counts(search_problems(systems, model, o.global_batch), o.n_gpus,
                                                       o.global_batch, kNearestCountReach);
    std::string counts;
    if (near.below) counts = std::to_string(*near.below);
    if (near.above) counts += (counts.empty() ? "" : " and ") + std::to_string(*near.above);
    why += counts.empty() ? "; no GPU count within " + std::to_string(kNearestCountReach) +
                                " of it has a configuration that fits with these options"
                          : "; the nearest GPU counts with a configuration that fits (the search's, with these "
                            "options and batch): " + counts;
    throw ConfigError("no configuration of " + std::to_string(o.n_gpus) + " GPUs " +
                      (o.fits_only ? "fits in memory among those asked for" : "matches the ranges asked for") + why);
  }
  if (by_cost) {
    // Those that fit first, the cheapest per token first; then the cheapest of those that do not.
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
      return a.config.fits != b.config.fits ? a.config.fits : a.cost_per_mtok < b.cost_per_mtok;
    });
  } else if (by_throughput) {
    // Those that fit first, as the search ranks them; then the fastest of those that do not.
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
      return a.config.fits != b.config.fits ? a.config.fits : a.config.throughput > b.config.throughput;
    });
  }
  if (o.top > 0 && rows.size() > o.top) rows.resize(o.top);
  warn_caveats(rows, systems, o.n_gpus);
  // Where the batch's divisors leave the search's space only slower layouts, a batch near it that
  // does not (the search's space alone: no degree lists given).
  std::string batch_note;
  if (!ranges_given) {
    batch_note = batch_advice_text(better_batches(search_problems(systems, model, o.global_batch), o.n_gpus,
                                                  o.global_batch, kBatchGain, kBatchTries),
                                   o.n_gpus, o.global_batch, kBatchGain);
    if (!batch_note.empty() && (o.csv || !o.output.empty())) spdlog::warn("{}", batch_note);
  }

  std::vector<LaunchLine> lines;
  if (launch) {
    for (const Row& row : rows) {
      const SystemRun& s = systems[row.system];
      lines.push_back(launch_line(*launch, {model, row.config.layout, s.runtime, o.global_batch, s.sys.nvlink_size}));
    }
  }
  const std::string csv = to_csv(rows, o.n_gpus, systems, lines, o.budget.tokens);
  if (!o.output.empty()) {
    write_text_atomically(o.output, csv);
    spdlog::info("wrote {} configurations to {}", rows.size(), o.output);
  }
  if (o.csv) {
    std::cout << csv;
  } else if (o.output.empty()) {
    // one attention mode for every row: in the title (several: in the options column)
    const std::vector<AttentionMode>& modes = systems.front().ranges.front().attentions;
    const std::string attention =
        modes.size() != 1 || modes.front().flash ? "" : ", attention " + std::string(attention_name(modes.front()));
    std::string strategy_names;
    for (const SystemRun& s : systems) {
      for (Strategy st : s.strategies) {
        const std::string name(strategy_name(st));
        if (strategy_names.find(name) == std::string::npos) {
          strategy_names += (strategy_names.empty() ? "" : ", ") + name;
        }
      }
    }
    std::string where;
    if (systems.size() == 1) {
      where = systems.front().sys.name + " (NVLink domain " + std::to_string(systems.front().sys.nvlink_size) + ")";
    } else {
      for (const SystemRun& s : systems) where += (where.empty() ? "" : ", ") + s.sys.name;
    }
    const char* order = by_cost ? ", cheapest per token first (those that fit before those that do not)"
                        : by_throughput ? ", fastest first (those that fit before those that do not)"
                                        : ", in the order asked for";
    std::printf("%s on %s, %s%s, %lld GPUs, global batch %lld: %zu configurations%s\n", model.name.c_str(),
                where.c_str(), strategy_names.c_str(), attention.c_str(), static_cast<long long>(o.n_gpus),
                static_cast<long long>(o.global_batch), rows.size(), order);
    std::printf("%s%s", systems.size() > 1 ? "systems:\n" : "system ", systems_text(systems).c_str());
    // the options given as lists, each row's value in the options column
    std::vector<std::string> listed_options;
    auto several = [&](const char* key, std::size_t n) {
      if (n > 1) listed_options.emplace_back(key);
    };
    several("attention", modes.size());
    for (const ExecutionOption& eo : kExecutionOptions) {
      if (eo.searched()) several(eo.key, eo.count(choices));
    }
    std::cout << to_table(rows, several_strategies, listed_options, systems, model, o.budget.tokens);
    if (!rejections.empty()) {
      std::printf("not evaluated (%zu reasons), e.g.: %s\n", rejections.size(), rejections.front().c_str());
    }
    if (!batch_note.empty()) std::printf("note: %s\n", batch_note.c_str());
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
  app.add_option("--system", o.system,
                 "system name (systems/NAME.yaml) or path, or a list A,B,C: the rows of every system ranked together "
                 "(by throughput, or by cost with --sort cost)")
      ->capture_default_str();
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
  app.add_option("--sort", o.sort,
                 "throughput or time (the fastest first), cost (the cheapest per token first: a price for every "
                 "system, --gpu-hour-cost), or config (the order asked for); those that fit first; auto: config when "
                 "ranges are given, else throughput")
      ->check(CLI::IsMember({"auto", "throughput", "time", "cost", "config"}))
      ->capture_default_str();
  app.add_option("--top", o.top, "keep the first K rows (0: all); memory holds K rows however many are evaluated")
      ->capture_default_str();
  app.add_option("--max-points", o.max_points,
                 "refuse to start when more configurations than this (layouts x NVLink placements, counted first) "
                 "would be evaluated; with --top and the rows ranked by throughput or cost, 1000 times this (the "
                 "walk skips what cannot enter the top)")
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
      "  configs --model mixtral_8x7b --n-gpus 512 --system H100-calibrated,B200-calibrated,GB200-calibrated \\\n"
      "      --gpu-hour-cost H100-calibrated=2.5,B200-calibrated=4,GB200-calibrated=5 --sort cost --top 5\n"
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
