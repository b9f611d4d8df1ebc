#include "io/html_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/human.hpp"
#include "io/svg_chart.hpp"

namespace perfsweep {
namespace {

using svg::escape;
using svg::number;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A column's value at `row`, NaN where the file has no such column.
double value(const ResultTarget& t, const std::string& name, std::size_t row) {
  const ResultColumn* c = t.column(name);
  return c == nullptr ? kNaN : c->values[row];
}
std::int64_t integer(const ResultTarget& t, const std::string& name, std::size_t row) {
  return static_cast<std::int64_t>(std::llround(value(t, name, row)));
}

const std::string* field(const std::vector<TextField>& fields, const std::string& name) {
  for (const TextField& f : fields) {
    if (f.first == name) return &f.second;
  }
  return nullptr;
}
double number_field(const std::vector<TextField>& fields, const std::string& name) {
  const std::string* v = field(fields, name);
  if (v == nullptr) return kNaN;
  char* end = nullptr;
  const double d = std::strtod(v->c_str(), &end);
  return end != v->c_str() && *end == '\0' ? d : kNaN;
}

// The rank-0 (fastest) row of each GPU count of a target.
std::map<std::int64_t, std::size_t> fastest_rows(const ResultTarget& t) {
  std::map<std::int64_t, std::size_t> out;
  for (std::size_t r = 0; r < t.rows; ++r) {
    if (integer(t, "rank", r) == 0) out.emplace(integer(t, "n_gpus", r), r);
  }
  return out;
}

// The fastest configuration of one system at one GPU count, over every file.
struct Best {
  const SweepFile* file = nullptr;
  const ResultTarget* target = nullptr;
  std::size_t row = 0;
};

// How a system is named across files: its group (name-NVSnvs).
std::string system_label(const ResultTarget& t) { return t.name + "-NVS" + std::to_string(t.nvs); }

// The targets whose results the best table, the scaling and breakdown charts show: every
// system group of a plain run, a hardware sweep's base.
std::vector<const ResultTarget*> shown_targets(const SweepFile& f) {
  std::vector<const ResultTarget*> out;
  for (const ResultTarget& t : f.targets) {
    if (!f.grid || t.group == "/base") out.push_back(&t);
  }
  return out;
}

struct Summary {
  std::vector<std::string> systems;                               // in order of first appearance
  std::map<std::string, std::map<std::int64_t, Best>> best;       // system -> GPU count -> best
  std::vector<std::int64_t> n_gpus;                               // every GPU count with a result
  std::vector<std::string> config_keys, placement_keys, execution_keys;  // union, in order met
  bool several_strategies = false;
};

void add_unique(std::vector<std::string>& to, const std::vector<std::string>& from) {
  for (const std::string& s : from) {
    if (std::find(to.begin(), to.end(), s) == to.end()) to.push_back(s);
  }
}

Summary summarize(const std::vector<SweepFile>& files) {
  Summary s;
  std::set<std::int64_t> counts;
  std::set<std::string> strategies;
  for (const SweepFile& f : files) {
    strategies.insert(f.strategy);
    for (const ResultTarget* t : shown_targets(f)) {
      const std::string label = system_label(*t);
      if (std::find(s.systems.begin(), s.systems.end(), label) == s.systems.end()) s.systems.push_back(label);
      add_unique(s.config_keys, t->config_keys);
      add_unique(s.placement_keys, t->placement_keys);
      add_unique(s.execution_keys, t->execution_keys);
      for (const auto& [n, row] : fastest_rows(*t)) {
        counts.insert(n);
        Best& b = s.best[label][n];
        // Ties keep the file given first.
        if (b.target == nullptr || value(*t, "throughput", row) > value(*b.target, "throughput", b.row)) {
          b = Best{&f, t, row};
        }
      }
    }
  }
  s.n_gpus.assign(counts.begin(), counts.end());
  s.several_strategies = strategies.size() > 1;
  return s;
}

// The stages' blocks are shown only where a configuration gives them.
bool shows_key(const ResultTarget& t, const std::string& key, std::size_t row) {
  return !key.ends_with("_stage_blocks") || integer(t, key, row) != 0;
}

// "tp=8 pp=16 dp=32 mbs=1 nv_tp=8 ... recompute=full sp=on ...": one row's configuration.
std::string configuration_text(const SweepFile& f, const ResultTarget& t, std::size_t row) {
  std::string o = "strategy=" + f.strategy;
  for (const auto* keys : {&t.config_keys, &t.placement_keys}) {
    for (const std::string& k : *keys) o += " " + k + "=" + std::to_string(integer(t, k, row));
  }
  for (const std::string& k : t.execution_keys) {
    if (shows_key(t, k, row)) o += " " + k + "=" + execution_value_name(k, integer(t, k, row));
  }
  return o;
}

// Tokens per second per GPU: the file's column under a runtime, else from the throughput and
// the model's sequence length.
double tokens_per_gpu(const SweepFile& f, const ResultTarget& t, std::size_t row) {
  const double column = value(t, "tokens_per_s_per_gpu", row);
  if (std::isfinite(column)) return column;
  return value(t, "throughput", row) * number_field(f.model_parameters, "seq_len") / value(t, "n_gpus", row);
}

// Days to train: the token budget's (train_days), else the model's dataset_samples at this throughput.
double train_days(const SweepFile& f, const ResultTarget& t, std::size_t row) {
  const double column = value(t, "train_days", row);
  if (std::isfinite(column)) return column;
  return number_field(f.model_parameters, "dataset_samples") / value(t, "throughput", row) / 86400.0;
}

// What a configuration may use (GB): the runtime's limit where it has one, else the HBM capacity.
double memory_limit(const ResultTarget& t, std::size_t row) {
  const double limit = value(t, "mem_limit", row);
  return std::isfinite(limit) && limit > 0 ? limit : t.hbm_capacity_gb;
}

std::string td(const std::string& text, double sort_value = kNaN, const std::string& cls = "") {
  std::string o = "<td";
  if (!cls.empty()) o += " class=\"" + cls + "\"";
  if (std::isfinite(sort_value)) o += " data-v=\"" + number(sort_value, 17) + "\"";
  return o + ">" + text + "</td>";
}
std::string td_number(double v, int digits = 4) { return td(number(v, digits), v); }

std::string run_table(const std::vector<SweepFile>& files) {
  std::vector<std::string> names;
  for (const SweepFile& f : files) {
    std::vector<std::string> keys;
    for (const TextField& field_ : f.run) keys.push_back(field_.first);
    add_unique(names, keys);
  }
  std::string o = "<table class=\"fields\"><thead><tr><th class=\"t\">attribute</th>";
  for (const SweepFile& f : files) {
    o += "<th class=\"t\">" + escape(std::filesystem::path(f.path).filename().string()) + "</th>";
  }
  o += "</tr></thead><tbody>\n";
  for (const std::string& n : names) {
    o += "<tr><td class=\"t\">" + escape(n) + "</td>";
    for (const SweepFile& f : files) {
      const std::string* v = field(f.run, n);
      o += "<td class=\"t\">" + (v == nullptr ? std::string("-") : escape(*v)) + "</td>";
    }
    o += "</tr>\n";
  }
  return o + "</tbody></table>\n";
}

std::string fields_table(const std::vector<TextField>& fields) {
  std::string o = "<table class=\"fields\"><tbody>";
  for (const auto& [name, text] : fields) {
    o += "<tr><td class=\"t\">" + escape(name) + "</td><td class=\"t\">" + escape(text) + "</td></tr>";
  }
  return o + "</tbody></table>\n";
}

std::string inputs_section(const std::vector<SweepFile>& files, const Summary& s) {
  std::string o = "<section id=\"inputs\"><h2>Inputs</h2>\n<h3>Runs</h3>\n" + run_table(files);
  o += "<h3>Model</h3>\n" + fields_table(files.front().model_parameters);
  o += "<h3>Systems</h3>\n<table class=\"sortable\"><thead><tr><th class=\"t\">system</th><th>GPUs per NVLink "
       "domain</th><th>HBM capacity (GB)</th><th class=\"t\">calibration</th><th class=\"t\">runtime</th>"
       "<th class=\"t\">runtime FNV-1a</th><th class=\"t\">collectives</th><th class=\"t\">parameters</th></tr></thead>"
       "<tbody>\n";
  std::set<std::string> seen;
  for (const SweepFile& f : files) {
    for (const ResultTarget* t : shown_targets(f)) {
      const std::string label = system_label(*t);
      if (!seen.insert(label + "\n" + t->runtime + "\n" + t->runtime_fnv1a).second) continue;
      std::string parameters;
      for (const auto& [name, text] : t->parameters) {
        if (name == "attribute_units") continue;
        parameters += (parameters.empty() ? "" : ", ") + name + "=" + text;
      }
      o += "<tr>" + td(escape(label), kNaN, "t") + td_number(static_cast<double>(t->nvs)) +
           td_number(t->hbm_capacity_gb) +
           td(escape((t->calibration_status.empty() ? "-" : t->calibration_status) +
                     (t->caveat.empty() ? "" : "; " + t->caveat)),
              kNaN, "t") +
           td(escape(t->runtime), kNaN, "t") +
           td(escape(t->runtime_fnv1a.empty() ? "-" : t->runtime_fnv1a), kNaN, "t") +
           td(escape(t->comm_model), kNaN, "t") + td("<details><summary>" + std::to_string(t->parameters.size()) +
                                                          " attributes</summary>" + escape(parameters) + "</details>",
                                                      kNaN, "t") +
           "</tr>\n";
    }
  }
  o += "</tbody></table>\n";
  // The values of each execution option among the kept configurations.
  o += "<h3>Execution options in the results</h3>\n<table class=\"fields\"><tbody>";
  for (const std::string& k : s.execution_keys) {
    std::set<std::int64_t> codes;
    for (const SweepFile& f : files) {
      for (const ResultTarget& t : f.targets) {
        if (t.column(k) == nullptr) continue;
        for (const double v : t.column(k)->values) codes.insert(static_cast<std::int64_t>(std::llround(v)));
      }
    }
    std::string values;
    for (const std::int64_t c : codes) values += (values.empty() ? "" : ", ") + execution_value_name(k, c);
    o += "<tr><td class=\"t\">" + escape(k) + "</td><td class=\"t\">" + escape(values) + "</td></tr>";
  }
  o += "</tbody></table>\n<h3>Input files as the runs read them</h3>\n";
  std::set<std::string> shown;
  for (const SweepFile& f : files) {
    for (const auto& [name, text] : f.provenance) {
      if (!shown.insert(name + "\n" + text).second) continue;
      o += "<details><summary>" + escape(name) + "</summary><pre>" + escape(text) + "</pre></details>\n";
    }
  }
  return o + "</section>\n";
}

// The execution options whose value is the same in every best configuration: shown once above
// the table instead of a column each. "" when an option varies or a file lacks it.
std::map<std::string, std::string> constant_options(const Summary& s) {
  std::map<std::string, std::string> out;
  for (const std::string& k : s.execution_keys) {
    std::set<std::string> seen;
    bool everywhere = true;
    for (const auto& [system, by_count] : s.best) {
      for (const auto& [n, b] : by_count) {
        if (b.target->column(k) == nullptr) everywhere = false;
        else seen.insert(execution_value_name(k, integer(*b.target, k, b.row)));
      }
    }
    if (everywhere && seen.size() == 1) out[k] = *seen.begin();
  }
  return out;
}

std::string figure(const std::string& svg_text);

// "tp 8 pp 4 dp 16 mbs 1": a row's degrees (the strategy's config keys), and its NVLink shares "8/1/1".
std::string degrees_text(const ResultTarget& t, std::size_t row) {
  std::string o;
  for (const std::string& k : t.config_keys) {
    if ((k == "cp" || k == "ep") && integer(t, k, row) == 1) continue;
    o += (o.empty() ? "" : " ") + k + " " + std::to_string(integer(t, k, row));
  }
  return o;
}
std::string shares_text(const ResultTarget& t, std::size_t row) {
  std::string o;
  for (const std::string& k : t.placement_keys) {
    if (k == "nv_cp" && integer(t, k, row) == 1) continue;
    if (!o.empty()) o += '/';
    o += std::to_string(integer(t, k, row));
  }
  return o;
}
std::string shares_header(const Summary& s) {
  std::string o;
  for (const std::string& k : s.placement_keys) {
    if (k == "nv_cp") continue;
    o += (o.empty() ? "" : "/") + k.substr(3);
  }
  return "NVLink " + o;
}

// Money, days and large counts for people ("6.39M", "1,665"), the exact value kept for sorting.
std::string td_human(double v, int digits = 4) { return td(human_number(v, digits), v); }

std::string best_section(const Summary& s) {
  const std::map<std::string, std::string> constant = constant_options(s);
  std::string same;
  for (const std::string& k : s.execution_keys) {
    if (constant.count(k) == 0 || (k.ends_with("_stage_blocks") && constant.at(k) == "0")) continue;
    same += (same.empty() ? "" : ", ") + k + " " + constant.at(k);
  }
  bool varying = false;
  for (const std::string& k : s.execution_keys) varying = varying || constant.count(k) == 0;
  std::string o =
      "<section id=\"best\"><h2>Best configuration per GPU count and system</h2>\n<p>The fastest configuration "
      "that fits at each GPU count" +
      std::string(s.several_strategies ? ", over every strategy" : "") +
      ". Click a column to sort; hover a row for its whole configuration. Memory is per GPU against the runtime's "
      "limit (what it can allocate of the HBM: the number a fit is judged by; under the reference runtime the HBM "
      "capacity); headroom is what is left of it." +
      (same.empty() ? std::string() : " In every row: " + escape(same) + ".") +
      "</p>\n<div class=\"wide\"><table class=\"sortable\" id=\"best-table\"><thead><tr><th class=\"t\">system</th>"
      "<th>GPUs</th>";
  if (s.several_strategies) o += "<th class=\"t\">strategy</th>";
  o += "<th class=\"t\">degrees</th><th class=\"t\">" + escape(shares_header(s)) + "</th>";
  if (varying) o += "<th class=\"t\">options</th>";
  // MFU, GPU-hours and cost: columns only where some configuration has them.
  auto any_has = [&](const char* column) {
    for (const auto& [system, by_count] : s.best) {
      for (const auto& [n, b] : by_count) {
        if (std::isfinite(value(*b.target, column, b.row))) return true;
      }
    }
    return false;
  };
  const bool mfu = any_has("mfu"), gpu_hours = any_has("gpu_hours"), cost = any_has("cost");
  o += std::string("<th>time per step (s)</th><th>samples/s</th><th>tokens/s per GPU</th>") +
       (mfu ? "<th>MFU</th>" : "") + "<th>days</th>" + (gpu_hours ? "<th>GPU-hours</th>" : "") +
       (cost ? "<th>cost</th>" : "") +
       "<th>memory (GB)</th><th>limit (GB)</th><th>headroom (GB)</th><th class=\"t\">memory / limit</th></tr></thead>"
       "<tbody>\n";
  for (const std::string& system : s.systems) {
    for (const auto& [n, b] : s.best.at(system)) {
      const ResultTarget& t = *b.target;
      const std::size_t r = b.row;
      o += "<tr title=\"" + escape(configuration_text(*b.file, t, r)) + "\">" + td(escape(system), kNaN, "t nw") +
           td_number(static_cast<double>(n), 10);
      if (s.several_strategies) o += td(escape(b.file->strategy), kNaN, "t");
      o += td(escape(degrees_text(t, r)), kNaN, "t nw") + td(escape(shares_text(t, r)), kNaN, "t");
      if (varying) {
        std::string options;
        for (const std::string& k : s.execution_keys) {
          if (constant.count(k) != 0 || t.column(k) == nullptr || !shows_key(t, k, r)) continue;
          options += (options.empty() ? "" : " ") + k + "=" + execution_value_name(k, integer(t, k, r));
        }
        o += td(escape(options), kNaN, "t");
      }
      const double mem = value(t, "mem", r), limit = memory_limit(t, r), share = mem / limit;
      o += td_number(value(t, "t", r)) + td_number(value(t, "throughput", r)) + td_human(tokens_per_gpu(*b.file, t, r));
      if (mfu) {
        o += td(std::isfinite(value(t, "mfu", r)) ? number(100 * value(t, "mfu", r), 3) + "%" : "-", value(t, "mfu", r));
      }
      o += td_human(train_days(*b.file, t, r));
      if (gpu_hours) o += td_human(value(t, "gpu_hours", r), 3);
      if (cost) o += td_human(value(t, "cost", r), 3);
      o += td_number(mem) + td_number(limit) + td(number(limit - mem, 4), limit - mem) +
           td("<span class=\"meter\"><span style=\"width:" + number(std::clamp(100 * share, 0.0, 100.0), 3) +
                  "%\"></span></span> " + number(100 * share, 3) + "%",
              share, "t nw") +
           "</tr>\n";
    }
  }
  return o + "</tbody></table></div></section>\n";
}

// Per system: the cost of a row (the file's `cost`, else the GPU-hours at the system's price),
// NaN without a price.
double row_cost(const ResultTarget& t, std::size_t row) {
  const double cost = value(t, "cost", row);
  if (std::isfinite(cost)) return cost;
  return t.gpu_hour_cost > 0 ? value(t, "gpu_hours", row) * t.gpu_hour_cost : kNaN;
}

// GPU-hours of training a row: the file's (a token budget), else from the model's dataset_samples.
double row_gpu_hours(const SweepFile& f, const ResultTarget& t, std::size_t row) {
  const double h = value(t, "gpu_hours", row);
  if (std::isfinite(h)) return h;
  return train_days(f, t, row) * 24 * value(t, "n_gpus", row);
}

// The systems side by side: each one's calibration and caveat, its fastest configuration (at its
// largest GPU count) and its cheapest (the fewest GPU-hours, or the least cost where priced), with
// the fastest's launch line; then days against cost (or GPU-hours) of every best configuration,
// the Pareto front marked: nothing on the front is both slower and dearer than another point.
std::string systems_section(const Summary& s) {
  bool priced = true, any_days = false;
  for (const auto& [system, by_count] : s.best) {
    for (const auto& [n, b] : by_count) {
      priced = priced && std::isfinite(row_cost(*b.target, b.row));
      any_days = any_days || std::isfinite(train_days(*b.file, *b.target, b.row));
    }
  }
  const char* money = priced ? "cost" : "GPU-hours";
  std::string o = "<section id=\"systems\"><h2>Systems compared</h2>\n<p>Each system's fastest configuration (at its "
                  "largest GPU count) and its cheapest (the least " +
                  std::string(money) +
                  " to train, at any GPU count); a system without kernel times fitted to measurements is marked "
                  "uncalibrated: its numbers are the reference's roofline, not validated against runs.</p>\n";
  if (!any_days) {
    return o + "<p class=\"note\">Days, GPU-hours and cost need a token budget: run the sweep with --tokens (and "
               "--gpu-hour-cost), or give the model a dataset_samples.</p></section>\n";
  }
  o += "<div class=\"wide\"><table class=\"sortable\"><thead><tr><th class=\"t\">system</th><th class=\"t\">calibration"
       "</th><th>fastest: GPUs</th><th>days</th><th>" +
       std::string(money) + "</th><th>tokens/s per GPU</th><th>cheapest: GPUs</th><th>days</th><th>" + money +
       "</th></tr></thead><tbody>\n";
  svg::Scatter chart{"Days to train against " + std::string(priced ? "cost" : "GPU-hours") +
                         " (best configuration per system and GPU count)",
                     priced ? "cost" : "GPU-hours", "days", {}, {}};
  std::string launches;
  for (std::size_t i = 0; i < s.systems.size(); ++i) {
    const std::string& system = s.systems[i];
    const auto& by_count = s.best.at(system);
    if (by_count.empty()) continue;
    chart.series.push_back({system, svg::palette(i), {}, {}});
    const Best& fastest = by_count.rbegin()->second;
    const Best* cheapest = nullptr;
    double cheapest_money = kNaN;
    for (const auto& [n, b] : by_count) {
      const double m = priced ? row_cost(*b.target, b.row) : row_gpu_hours(*b.file, *b.target, b.row);
      if (cheapest == nullptr || m < cheapest_money) {
        cheapest = &b;
        cheapest_money = m;
      }
      const double days = train_days(*b.file, *b.target, b.row);
      chart.points.push_back({m, days, chart.series.size() - 1,
                              system + ", " + std::to_string(n) + " GPUs: " + human_number(days) + " days, " +
                                  money + " " + human_number(m, 3) + "\n" +
                                  configuration_text(*b.file, *b.target, b.row),
                              false});
    }
    const ResultTarget& t = *fastest.target;
    const std::string status = t.calibration_status.empty() ? "-" : t.calibration_status;
    const double fast_money =
        priced ? row_cost(t, fastest.row) : row_gpu_hours(*fastest.file, t, fastest.row);
    o += "<tr title=\"" + escape(configuration_text(*fastest.file, t, fastest.row)) + "\">" +
         td(escape(system), kNaN, "t nw") +
         td(escape(status + (t.caveat.empty() ? "" : "; " + t.caveat)), kNaN, "t") +
         td_number(value(t, "n_gpus", fastest.row), 10) + td_human(train_days(*fastest.file, t, fastest.row)) +
         td_human(fast_money, 3) + td_human(tokens_per_gpu(*fastest.file, t, fastest.row)) +
         td_number(value(*cheapest->target, "n_gpus", cheapest->row), 10) +
         td_human(train_days(*cheapest->file, *cheapest->target, cheapest->row)) + td_human(cheapest_money, 3) +
         "</tr>\n";
    // the fastest configuration's launch line, as the sweep wrote it
    const std::int64_t n_fast = integer(t, "n_gpus", fastest.row);
    for (const auto& [n, line] : t.best_launch) {
      if (n != n_fast || line.empty()) continue;
      launches += "<details><summary>" + escape(system) + ", " + std::to_string(n) + " GPUs: launch (" +
                  escape(t.launch_framework) + ")</summary><pre>" + escape(line) + "</pre></details>\n";
    }
  }
  o += "</tbody></table></div>\n";
  if (launches.empty()) {
    o += "<p class=\"note\">No launch line: the runs were costed under a runtime with no framework's arguments (the "
         "reference's, or one whose framework perfsweep does not write; docs/launch.md), or with a strategy other "
         "than 1d.</p>\n";
  } else {
    o += "<h3>Launch lines of the fastest configurations</h3>\n" + launches;
  }
  // the Pareto front: no other point has fewer days at no more cost (or the same days for less)
  for (std::size_t p = 0; p < chart.points.size(); ++p) {
    svg::ScatterPoint& a = chart.points[p];
    if (!(std::isfinite(a.x) && std::isfinite(a.y))) continue;
    a.front = std::none_of(chart.points.begin(), chart.points.end(), [&](const svg::ScatterPoint& b) {
      return std::isfinite(b.x) && std::isfinite(b.y) && b.x <= a.x && b.y <= a.y && (b.x < a.x || b.y < a.y);
    });
  }
  std::string front_rows;
  std::vector<const svg::ScatterPoint*> front;
  for (const svg::ScatterPoint& p : chart.points) {
    if (p.front) front.push_back(&p);
  }
  std::sort(front.begin(), front.end(), [](const auto* a, const auto* b) { return a->y < b->y; });
  o += "<h3>Days against " + std::string(money) +
       ": the Pareto front</h3>\n<p>Every best configuration (system and GPU count); the outlined points, joined by "
       "the dashed steps, are the front: for each, nothing is both faster and cheaper. Both axes are logarithmic.</p>\n" +
       figure(svg::scatter(chart));
  o += "<table class=\"sortable\"><thead><tr><th class=\"t\">on the front</th><th>days</th><th>" + std::string(money) +
       "</th></tr></thead><tbody>\n";
  for (const svg::ScatterPoint* p : front) {
    o += "<tr>" + td(escape(p->tip.substr(0, p->tip.find(':'))), kNaN, "t nw") + td_human(p->y) + td_human(p->x, 3) +
         "</tr>\n";
  }
  return o + "</tbody></table></section>\n";
}

std::string figure(const std::string& svg_text) {
  return "<figure>" + svg_text + "<figcaption class=\"readout\">Hover a mark for its configuration.</figcaption></figure>\n";
}

// Values of one quantity of the best configurations, over the summary's GPU counts.
template <typename F>
svg::Series best_series(const Summary& s, const std::string& system, std::size_t colour, F&& get,
                        const std::string& what) {
  svg::Series out{system, svg::palette(colour), {}, {}};
  const auto& by_count = s.best.at(system);
  for (const std::int64_t n : s.n_gpus) {
    const auto it = by_count.find(n);
    if (it == by_count.end()) {
      out.values.push_back(kNaN);
      out.tips.emplace_back();
      continue;
    }
    const Best& b = it->second;
    const double v = get(b);
    out.values.push_back(v);
    out.tips.push_back(system + ", " + std::to_string(n) + " GPUs: " + what + " " + number(v) + "\n" +
                       configuration_text(*b.file, *b.target, b.row));
  }
  return out;
}

std::vector<std::string> count_labels(const Summary& s) {
  std::vector<std::string> x;
  for (const std::int64_t n : s.n_gpus) x.push_back(std::to_string(n));
  return x;
}

bool any_finite(const std::vector<svg::Series>& series) {
  for (const svg::Series& s : series) {
    if (std::any_of(s.values.begin(), s.values.end(), [](double v) { return std::isfinite(v); })) return true;
  }
  return false;
}

// Why a system has no point at a GPU count the runs searched: nothing feasible there (no
// configuration fits in the memory limit or divides the global batch), as one sentence per system.
std::string missing_points(const std::vector<SweepFile>& files, const Summary& s) {
  std::set<std::int64_t> searched;
  for (const SweepFile& f : files) {
    for (const TextField& field_ : f.run) {
      if (field_.first != "n_gpus_searched") continue;
      std::stringstream in(field_.second);
      for (std::string item; std::getline(in, item, ',');) {
        char* end = nullptr;
        const double v = std::strtod(item.c_str(), &end);
        if (end != item.c_str() && v >= 1) searched.insert(static_cast<std::int64_t>(v));
      }
    }
  }
  std::string o;
  for (const std::string& system : s.systems) {
    std::string counts;
    std::size_t missing = 0;
    for (const std::int64_t n : searched) {
      if (s.best.at(system).count(n) != 0) continue;
      ++missing;
      counts += (counts.empty() ? "" : ", ") + std::to_string(n);
    }
    if (missing == 0) continue;
    o += "<li>" + escape(system) + ": no point at " + counts + " GPUs, where no configuration was feasible (none "
         "fits in the memory limit, or none divides the global batch over that many GPUs)</li>";
  }
  return o.empty() ? "" : "<p class=\"note\">Missing points:</p><ul class=\"note\">" + o + "</ul>\n";
}

std::string scaling_section(const std::vector<SweepFile>& files, const Summary& s) {
  std::string o = "<section id=\"scaling\"><h2>Throughput and MFU against GPU count</h2>\n<p>An axis whose values "
                  "span more than a factor of 30 is logarithmic (its label says so).</p>\n" +
                  missing_points(files, s) + "<div class=\"charts\">";
  struct Quantity {
    const char* title;
    const char* axis;
    double (*get)(const Best&);
    const char* missing;  // why the chart is left out when nothing has the quantity
  };
  const Quantity quantities[] = {
      {"Tokens per second per GPU (best configuration)", "tokens/s per GPU",
       [](const Best& b) { return tokens_per_gpu(*b.file, *b.target, b.row); }, "No tokens per second: no sequence length."},
      {"Model FLOP utilization (best configuration)", "MFU (%)",
       [](const Best& b) { return 100 * value(*b.target, "mfu", b.row); },
       "No MFU chart: the files hold no mfu column (runs under the reference runtime write none; estimate gives it "
       "for any configuration)."},
      {"Days to train (best configuration)", "days", [](const Best& b) { return train_days(*b.file, *b.target, b.row); },
       "No days to train: the runs had no token budget (sweep --tokens) and the model no dataset_samples."},
  };
  std::string missing;
  for (const Quantity& q : quantities) {
    svg::LineChart chart{q.title, "GPUs", q.axis, count_labels(s), {}};
    for (std::size_t i = 0; i < s.systems.size(); ++i) {
      chart.series.push_back(best_series(s, s.systems[i], i, q.get, q.axis));
    }
    if (any_finite(chart.series)) {
      o += figure(svg::line_chart(chart));
    } else {
      missing += std::string(missing.empty() ? "" : " ") + q.missing;
    }
  }
  o += "</div>";
  if (!missing.empty()) o += "<p class=\"note\">" + escape(missing) + "</p>";
  return o + "</section>\n";
}

struct Part {
  const char* column;
  const char* name;
  const char* colour;
};
constexpr Part kTimeParts[] = {{"t_comp", "compute", "#4e79a7"},       {"t_mem", "memory-bound", "#a0cbe8"},
                               {"t_tp_comm", "TP comm", "#f28e2b"},    {"t_dp_comm", "DP comm", "#e15759"},
                               {"t_pp_comm", "PP comm", "#76b7b2"},    {"t_bubble", "bubble", "#bab0ac"},
                               {"t_optimizer", "optimizer", "#59a14f"}, {"t_framework", "framework", "#b07aa1"}};
constexpr Part kMemoryParts[] = {{"wts_mem", "weights", "#4e79a7"},
                                 {"wts_grad_mem", "gradients", "#f28e2b"},
                                 {"wts_optimizer_states_mem", "optimizer states", "#59a14f"},
                                 {"acts_mem", "activations", "#e15759"}};

// One stacked bar per GPU count of a system's best configurations; `rest`: a part for what the
// total (column `total`) holds beyond the parts, when any.
// `limit`: the dashed mark of each bar, named `limit_name`.
template <std::size_t N>
svg::StackedBars parts_chart(const Summary& s, const std::string& system, const Part (&parts)[N], const char* total,
                             const char* unit, const char* rest, double (*limit)(const ResultTarget&, std::size_t),
                             const char* limit_name) {
  svg::StackedBars chart;
  chart.x = count_labels(s);
  chart.x_label = "GPUs";
  chart.limit_name = limit_name;
  const auto& by_count = s.best.at(system);
  for (const std::int64_t n : s.n_gpus) {
    const auto it = by_count.find(n);
    chart.limit.push_back(it == by_count.end() ? kNaN : limit(*it->second.target, it->second.row));
  }
  std::vector<Part> shown(std::begin(parts), std::end(parts));
  shown.push_back({total, rest, "#d4a6c8"});
  for (const Part& p : shown) {
    svg::Series series{p.name, p.colour, {}, {}};
    for (const std::int64_t n : s.n_gpus) {
      const auto it = by_count.find(n);
      if (it == by_count.end()) {
        series.values.push_back(kNaN);
        series.tips.emplace_back();
        continue;
      }
      const ResultTarget& t = *it->second.target;
      const std::size_t r = it->second.row;
      double v = value(t, p.column, r);
      if (&p == &shown.back()) {
        double sum = 0;
        for (const Part& q : parts) sum += std::isfinite(value(t, q.column, r)) ? value(t, q.column, r) : 0;
        v = value(t, total, r) - sum;
        if (v < 1e-9 * value(t, total, r)) v = kNaN;
      }
      series.values.push_back(v);
      series.tips.push_back(system + ", " + std::to_string(n) + " GPUs: " + p.name + " " + number(v) + " " + unit +
                            " (" + number(100 * v / value(t, total, r), 3) + "% of " + number(value(t, total, r)) +
                            " " + unit + ")\n" + configuration_text(*it->second.file, t, r));
    }
    if (std::any_of(series.values.begin(), series.values.end(), [](double v) { return v > 0; })) {
      chart.parts.push_back(std::move(series));
    }
  }
  return chart;
}

std::string breakdown_section(const Summary& s) {
  std::string o = "<section id=\"breakdown\"><h2>Where the time goes</h2>\n<p>Time per step of the best configuration "
                  "at each GPU count, by component.</p>\n<div class=\"charts\">";
  for (const std::string& system : s.systems) {
    // Overlapped communication makes the step shorter than its parts' sum: the mark shows the step.
    svg::StackedBars chart = parts_chart(
        s, system, kTimeParts, "t", "s", "other", [](const ResultTarget& t, std::size_t r) { return value(t, "t", r); },
        "step (s)");
    chart.title = system + ": time per step";
    chart.y_label = "seconds per step";
    o += figure(svg::stacked_bars(chart));
  }
  o += "</div></section>\n<section id=\"memory\"><h2>Memory against capacity</h2>\n<p>Memory per GPU of the best "
       "configuration at each GPU count; the dashed mark is what it may use (the runtime's limit, else the HBM "
       "capacity).</p>\n<div class=\"charts\">";
  for (const std::string& system : s.systems) {
    svg::StackedBars chart =
        parts_chart(s, system, kMemoryParts, "mem", "GB", "other (runtime)", memory_limit, "limit (GB)");
    chart.title = system + ": memory per GPU";
    chart.y_label = "GB per GPU";
    o += figure(svg::stacked_bars(chart));
  }
  return o + "</div></section>\n";
}

// "hbm_bandwidth 2 TB/s, hbm_capacity 192 GB" of one cell.
std::string point_text(const ResultGrid& g, std::size_t i0, std::size_t i1) {
  std::string o;
  for (std::size_t a = 0; a < g.axes.size(); ++a) {
    const GridAxis& axis = g.axes[a];
    const std::size_t i = a == 0 ? i0 : i1;
    for (std::size_t p = 0; p < axis.names.size(); ++p) {
      o += (o.empty() ? "" : ", ") + axis.names[p] + " " + number(axis.values[p][i], 6) + " " + axis.units[p];
    }
  }
  return o;
}

std::string hardware_section(const SweepFile& f, std::size_t index) {
  const ResultGrid& g = *f.grid;
  const std::size_t n0 = g.axes[0].size(), n1 = g.axes.size() > 1 ? g.axes[1].size() : 1, ng = g.n_gpus.size();
  const std::string id = "hw" + std::to_string(index);
  std::string o = "<section id=\"" + id + "\"><h2>Hardware sweep " + escape(g.sweep) + " (" + escape(f.strategy) +
                  ")</h2>\n<p>" + escape(g.description) + " Base system: " + escape(g.base_system) +
                  ". Each cell is a variant of the base system, coloured by its best throughput over the base's at "
                  "the same GPU count (blue faster, red slower, grey: nothing fits); the outlined cell is the "
                  "best.</p>\n";
  std::vector<std::map<std::int64_t, std::size_t>> fastest;
  for (const ResultTarget& t : f.targets) fastest.push_back(fastest_rows(t));
  auto axis_labels = [&](const GridAxis& a) {
    std::vector<std::string> out;
    // Whole numbers from 1000 up, four digits below: labels that fit under a cell.
    for (std::size_t i = 0; i < a.size(); ++i) {
      const double v = a.values[0][i];
      out.push_back(std::abs(v) >= 1000 ? number(std::round(v), 12) : number(v, 4));
    }
    return out;
  };
  o += "<p><label>GPUs: <select class=\"gpus\" data-for=\"" + id + "\">";
  for (std::size_t k = 0; k < ng; ++k) {
    o += "<option value=\"" + std::to_string(g.n_gpus[k]) + "\"" + (k + 1 == ng ? " selected" : "") + ">" +
         std::to_string(g.n_gpus[k]) + "</option>";
  }
  o += "</select></label></p>\n";
  std::string best_rows;
  for (std::size_t k = 0; k < ng; ++k) {
    svg::Heatmap map;
    map.title = g.sweep + ", " + std::to_string(g.n_gpus[k]) + " GPUs: speed-up over " + g.base_system;
    map.value_label = "speed-up";
    map.y = axis_labels(g.axes[0]);
    map.y_label = g.axes[0].names[0] + " (" + g.axes[0].units[0] + ")";
    if (g.axes.size() > 1) {
      map.x = axis_labels(g.axes[1]);
      map.x_label = g.axes[1].names[0] + " (" + g.axes[1].units[0] + ")";
    } else {
      map.x = {""};
    }
    double best = -1;
    for (std::size_t i0 = 0; i0 < n0; ++i0) {
      for (std::size_t i1 = 0; i1 < n1; ++i1) {
        const std::size_t cell = i0 * n1 + i1, at = cell * ng + k;
        map.values.push_back(g.speedup[at]);
        std::string tip = point_text(g, i0, i1) + "\n";
        const auto row = fastest[cell].find(g.n_gpus[k]);
        if (row == fastest[cell].end()) {
          tip += "nothing fits";
        } else {
          tip += "best " + number(g.best_throughput[at]) + " samples/s, speed-up " + number(g.speedup[at]) + "\n" +
                 configuration_text(f, f.targets[cell], row->second);
        }
        map.tips.push_back(tip);
        if (std::isfinite(g.best_throughput[at]) && g.best_throughput[at] > best) {
          best = g.best_throughput[at];
          map.marked = cell;
        }
      }
    }
    // The largest GPU count shows first (the selector's default), also without the script.
    o += "<div class=\"hw-map\" data-map=\"" + id + "\" data-gpus=\"" + std::to_string(g.n_gpus[k]) + "\"" +
         (k + 1 == ng ? "" : " hidden") + ">" +
         figure(svg::heatmap(map)) + "</div>\n";
    best_rows += "<tr>" + td_number(static_cast<double>(g.n_gpus[k]), 10);
    if (map.marked) {
      const std::size_t cell = *map.marked, at = cell * ng + k;
      const auto row = fastest[cell].find(g.n_gpus[k]);
      if (row == fastest[cell].end()) {
        // the grid's best at this count and the point's table disagree: a file no sweep writes
        throw InputError(f.path + ": " + f.targets[cell].group + "/top has no configuration at " +
                         std::to_string(g.n_gpus[k]) + " GPUs, where the grid's best_throughput has one (altered?)");
      }
      best_rows += td(escape(point_text(g, cell / n1, cell % n1)), kNaN, "t") + td_number(g.best_throughput[at]) +
                   td_number(g.speedup[at]) +
                   td(escape(configuration_text(f, f.targets[cell], row->second)), kNaN, "t");
    } else {
      best_rows += td("nothing fits", kNaN, "t") + td("-") + td("-") + td("-");
    }
    best_rows += "</tr>\n";
  }
  o += "<h3>Best point per GPU count</h3>\n<table class=\"sortable\"><thead><tr><th>GPUs</th><th class=\"t\">point"
       "</th><th>samples/s</th><th>speed-up over the base</th><th class=\"t\">configuration</th></tr></thead><tbody>\n" +
       best_rows + "</tbody></table></section>\n";
  return o;
}

constexpr const char* kStyle = R"(body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#222;margin:0 auto;max-width:1240px;padding:12px 20px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;border-bottom:2px solid #4e79a7;padding-bottom:2px;margin-top:28px}h3{font-size:15px;margin:16px 0 6px}
nav a{margin-right:14px}p.sub{color:#555;margin:0}
table{border-collapse:collapse;font-size:12px;margin:4px 0}th,td{border-bottom:1px solid #e2e2e2;padding:3px 7px;text-align:right;vertical-align:top}
th{background:#f1f4f8;position:sticky;top:0}table.sortable th{cursor:pointer}th[data-dir=asc]::after{content:" \25B2"}th[data-dir=desc]::after{content:" \25BC"}
.t{text-align:left}.wide{overflow-x:auto}.nw{white-space:nowrap}tbody tr:hover{background:#fff7e0}table.fields td:first-child{font-weight:600}
.meter{display:inline-block;width:60px;height:9px;background:#e8e8e8;vertical-align:middle}.meter span{display:block;height:100%;background:#59a14f}
details pre{background:#f7f7f7;padding:8px;overflow:auto;max-height:320px;font-size:12px}summary{cursor:pointer}
.charts{display:flex;flex-wrap:wrap;gap:8px 16px}figure{margin:0}svg.chart{width:600px;height:auto;display:block}
.readout{font-size:12px;color:#333;min-height:3.6em;white-space:pre-line;max-width:600px}
svg text{font-family:inherit;fill:#333}svg .title{font-size:15px;font-weight:600}svg .tick{font-size:11px}svg .label,svg .legend{font-size:12px}
svg .grid{stroke:#e6e6e6}svg .axis{stroke:#444}svg .limit{stroke:#111;stroke-width:2;stroke-dasharray:5 3}svg rect.marked{stroke:#000;stroke-width:2}
svg [data-tip]:hover{opacity:.75}
.note{color:#555;font-size:13px}ul.note{margin:2px 0 8px 18px;padding:0}
)";

// Hover read-outs, sortable tables, the GPU count of the heatmaps shown.
constexpr const char* kScript = R"("use strict";
(function () {
  document.querySelectorAll("figure").forEach(function (fig) {
    var out = fig.querySelector(".readout");
    fig.addEventListener("mouseover", function (e) {
      var tip = e.target.getAttribute ? e.target.getAttribute("data-tip") : null;
      if (tip && out) out.textContent = tip;
    });
  });
  function key(cell) {
    var v = cell.getAttribute("data-v");
    return v === null ? null : parseFloat(v);
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      th.addEventListener("click", function () {
        var dir = th.getAttribute("data-dir") === "asc" ? -1 : 1;
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("data-dir"); });
        th.setAttribute("data-dir", dir === 1 ? "asc" : "desc");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = key(a.cells[col]), y = key(b.cells[col]);
          if (x === null || y === null) return dir * a.cells[col].textContent.localeCompare(b.cells[col].textContent);
          return dir * (x < y ? -1 : x > y ? 1 : 0);
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  document.querySelectorAll("select.gpus").forEach(function (sel) {
    var maps = document.querySelectorAll('[data-map="' + sel.getAttribute("data-for") + '"]');
    function show() {
      maps.forEach(function (m) { m.hidden = m.getAttribute("data-gpus") !== sel.value; });
    }
    sel.addEventListener("change", show);
    show();
  });
})();
)";

}  // namespace

std::string html_report(const std::vector<SweepFile>& files) {
  if (files.empty()) throw InputError("no sweep file to report on");
  const SweepFile& first = files.front();
  for (const SweepFile& f : files) {
    if (f.model != first.model) {
      throw InputError(f.path + ": model '" + f.model + "' differs from " + first.path + "'s '" + first.model +
                       "': a report compares runs of one model");
    }
    if (f.global_batch != first.global_batch) {
      throw InputError(f.path + ": global_batch_size " + std::to_string(f.global_batch) + " differs from " +
                       first.path + "'s " + std::to_string(first.global_batch) + ": a report compares runs of one batch");
    }
  }
  const Summary s = summarize(files);
  std::string strategies, names;
  for (const SweepFile& f : files) {
    if (strategies.find(f.strategy) == std::string::npos) strategies += (strategies.empty() ? "" : ", ") + f.strategy;
    names += (names.empty() ? "" : ", ") + std::filesystem::path(f.path).filename().string();
  }
  const std::string title = "perfsweep report: " + first.model + ", " + strategies;
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" "
                  "content=\"width=device-width, initial-scale=1\">\n<title>" +
                  escape(title) + "</title>\n<style>\n" + kStyle + "</style>\n</head>\n<body>\n<h1>" + escape(title) +
                  "</h1>\n<p class=\"sub\">" + escape(names) + "; global batch " + std::to_string(first.global_batch) +
                  " samples</p>\n<nav><a href=\"#best\">best configurations</a>";
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (files[i].grid) o += "<a href=\"#hw" + std::to_string(i) + "\">hardware sweep " + escape(files[i].grid->sweep) + "</a>";
  }
  o += "<a href=\"#systems\">systems and cost</a><a href=\"#scaling\">scaling</a><a href=\"#breakdown\">time</a><a "
       "href=\"#memory\">memory</a><a href=\"#inputs\">inputs</a></nav>\n";
  o += best_section(s) + systems_section(s);
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (files[i].grid) o += hardware_section(files[i], i);
  }
  o += scaling_section(files, s) + breakdown_section(s) + inputs_section(files, s);
  o += "<script>\n" + std::string(kScript) + "</script>\n</body>\n</html>\n";
  return o;
}

}  // namespace perfsweep
