#include "io/configs_table.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string_view>
#include <utility>

#include "core/csv.hpp"
#include "core/human.hpp"
#include "core/published.hpp"
#include "io/report.hpp"
#include "model/execution_options.hpp"
#include "model/plan.hpp"
#include "model/step_memory.hpp"

namespace perfsweep {

namespace {

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

// The attention column's value: flash, unfused, or unfused-recompute.
std::string attention_column(const AttentionMode& a) {
  return a.flash ? "flash" : a.recompute ? "unfused-recompute" : "unfused";
}

// A row's execution option as the flags spell it (names: recompute=full, precision=fp8), never a code.
std::string option_column(const ExecutionOption& o, std::int64_t code) { return option_value_name(o, code); }

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


}  // namespace

// system, n_gpus, strategy, the degrees, the execution options (by name), throughput, fits, the
// memory limit and headroom, every totals key, hbm_capacity, the efficiency, the budget and the
// costs where asked (scripts/plot_configs.py reads these columns).
// launch: each row's launch line (arguments only), a last column; empty: no such column.
std::string configs_csv(const std::vector<SystemConfigRow>& rows, std::int64_t n_gpus, const std::vector<SystemRun>& systems,
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
    const SystemConfigRow& x = rows[i];
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

// Aligned, for people: one line per configuration, times in seconds per iteration. The options
// every row shares on a line above the table; those given as lists (`listed`, option_values'
// names) or differing between rows in an options column, with several strategies or systems each
// row's in a column.
std::string configs_table(const std::vector<SystemConfigRow>& rows, bool several_strategies, const std::vector<std::string>& listed,
                     const std::vector<SystemRun>& systems, const Transformer& model, double tokens) {
  const bool budget = tokens > 0;
  const bool several_systems = systems.size() > 1;
  const bool priced = std::any_of(rows.begin(), rows.end(), [](const SystemConfigRow& r) { return r.cost_per_mtok > 0; });
  const bool all_1d = std::all_of(rows.begin(), rows.end(),
                                  [](const SystemConfigRow& r) { return r.config.layout.strategy == Strategy::OneD; });
  const bool own_peak = std::any_of(rows.begin(), rows.end(), [](const SystemConfigRow& r) {
    return r.config.layout.exec.precision != Precision::Bf16;
  });
  std::ostringstream out;
  // the stages' blocks (given, balanced for each row, or the runtime's partition) in a column of their own
  auto partition_of = [&](const SystemConfigRow& r) { return systems[r.system].runtime.mechanisms.stage_partition; };
  const bool partitioned = std::any_of(rows.begin(), rows.end(), [&](const SystemConfigRow& r) {
    return stages_partitioned(r.config.layout, partition_of(r));
  });
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
      for (const SystemConfigRow& r : rows) {
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
      if (!(shared == Execution{}) || runtime.mechanisms.stage_partition != StagePartition::Even) {
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
    const SystemConfigRow& x = rows[i];
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
      const StageBlocks b = stage_blocks(model, l.pp, l.exec, partition_of(x));
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
        if (!options.empty()) options += ' ';
        options += std::string(values[k].first) + "=" + values[k].second;
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
  return out.str();
}

std::string configs_heading(const std::vector<SystemRun>& systems, const Transformer& model, std::int64_t n_gpus,
                            std::int64_t global_batch, std::size_t n_rows, bool by_cost, bool by_throughput) {
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
  return model.name + " on " + where + ", " + strategy_names + attention + ", " + std::to_string(n_gpus) +
         " GPUs, global batch " + std::to_string(global_batch) + ": " + std::to_string(n_rows) + " configurations" +
         order + "\n" + (systems.size() > 1 ? "systems:\n" : "system ") + systems_text(systems);
}

std::vector<std::string> listed_options(const std::vector<SystemRun>& systems, const ExecutionChoices& choices) {
  std::vector<std::string> out;
  auto several = [&](const char* key, std::size_t n) {
    if (n > 1) out.emplace_back(key);
  };
  several("attention", systems.front().ranges.front().attentions.size());
  for (const ExecutionOption& eo : kExecutionOptions) {
    if (eo.searched()) several(eo.key, eo.count(choices));
  }
  return out;
}

}  // namespace perfsweep
