#include "calib/validation_set.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>
#include <sstream>

#include "config/yaml_file.hpp"
#include "core/csv.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"

namespace perfsweep::calib {
namespace fs = std::filesystem;
namespace {

constexpr std::array<QuantityInfo, 6> kQuantities{{
    {"step_s", "s", "the training step (estimate's totals.t)"},
    {"tokens_per_s_per_gpu", "tokens/s per GPU", "global batch x sequence / step / GPUs"},
    {"samples_per_s", "samples/s", "global batch / step"},
    {"model_tflops_per_gpu", "TFLOP/s per GPU", "PaLM's count, 6N + 12 L e T FLOPs a token, x tokens/s per GPU"},
    {"model_tflops_per_gpu_causal", "TFLOP/s per GPU", "the causal attention halved, 6N + 6 L e T FLOPs a token"},
    {"megatron_tflops_per_gpu", "TFLOP/s per GPU",
     "Narayanan et al. (2021)'s count, 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) an iteration, / step / GPUs"},
}};
constexpr std::array<QuantityInfo, 2> kMemoryQuantities{{
    {"state_gib", "GiB", "weights, gradients and optimizer states of the fullest stage"},
    {"peak_gb", "GB", "the step's peak memory of the fullest stage (estimate's totals.mem)"},
}};

struct StatisticInfo {
  Statistic statistic;
  const char* name;
};
constexpr std::array<StatisticInfo, 10> kStatistics{{
    {Statistic::Count, "count"},
    {Statistic::MedianAbsError, "median_abs_error"},
    {Statistic::MeanAbsError, "mean_abs_error"},
    {Statistic::MaxAbsError, "max_abs_error"},
    {Statistic::MedianSignedError, "median_signed_error"},
    {Statistic::P10SignedError, "p10_signed_error"},
    {Statistic::P90SignedError, "p90_signed_error"},
    {Statistic::FitAccuracy, "fit_accuracy"},
    {Statistic::TrainedFit, "trained_fit"},
    {Statistic::MemoryMedianAbsError, "memory_median_abs_error"},
}};

// The keys of one mapping of set.yaml, checked against those allowed (an unknown or repeated key is
// an error), with typed access that names the file, the key path and the line in every error.
class Keys {
 public:
  Keys(const YAML::Node& node, std::string where, std::initializer_list<const char*> allowed)
      : node_(node), where_(std::move(where)) {
    if (!node.IsMap()) throw InputError(where_ + " must be a mapping of keys to values, got " + yaml_shown(node) + yaml_line(node));
    std::set<std::string> seen;
    for (const auto& kv : node) {
      const std::string k = yaml_scalar(kv.first, where_ + ": a key", "a plain name");
      if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return k == a; })) {
        std::string list;
        for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
        throw InputError(where_ + ": unknown key '" + k + "'" + yaml_line(kv.first) + " (known: " + list + ")");
      }
      if (!seen.insert(k).second) throw InputError(where_ + ": duplicate key '" + k + "'" + yaml_line(kv.first));
    }
  }
  bool has(const char* key) const { return static_cast<bool>(node_[key]); }
  YAML::Node get(const char* key) const {
    if (!has(key)) throw InputError(where_ + ": missing key '" + key + "'" + yaml_line(node_));
    return node_[key];
  }
  // A key's path for messages: "FILE: key" at the top, "FILE: key.sub" below.
  std::string at(const char* key) const { return where_ + (where_.ends_with(".yaml") ? ": " : ".") + key; }
  std::string text(const char* key, const char* what = "a text") const { return yaml_scalar(get(key), at(key), what); }
  std::string text_or(const char* key, const std::string& fallback, const char* what = "a text") const {
    return has(key) ? text(key, what) : fallback;
  }
  double number(const char* key) const { return number_of(get(key), at(key)); }
  static double number_of(const YAML::Node& n, const std::string& where) {
    const std::string s = yaml_scalar(n, where, "a number");
    const std::optional<double> v = parse_finite(s);
    if (!v) throw InputError(where + " must be a number, got '" + s + "'" + yaml_line(n));
    return *v;
  }
  // A list of texts; one text stands for a list of one.
  std::vector<std::string> texts(const char* key, const char* what) const {
    const YAML::Node n = get(key);
    std::vector<std::string> out;
    if (n.IsSequence()) {
      for (std::size_t i = 0; i < n.size(); ++i) out.push_back(yaml_scalar(n[i], at(key) + "[" + std::to_string(i) + "]", what));
    } else {
      out.push_back(yaml_scalar(n, at(key), what));
    }
    return out;
  }
  const std::string& where() const { return where_; }

 private:
  YAML::Node node_;
  std::string where_;
};

template <std::size_t N>
std::string names_of(const std::array<QuantityInfo, N>& table) {
  std::string out;
  for (const QuantityInfo& q : table) out += std::string(out.empty() ? "" : ", ") + q.name;
  return out;
}

SetQuantity parse_quantity(const std::string& name, const std::string& where) {
  for (std::size_t i = 0; i < kQuantities.size(); ++i) {
    if (name == kQuantities[i].name) return static_cast<SetQuantity>(i);
  }
  throw InputError(where + " must be one of " + names_of(kQuantities) + ", got '" + name + "'");
}

Part parse_part(const std::string& name, const std::string& where) {
  if (name == "held-out") return Part::HeldOut;
  if (name == "fit") return Part::Fit;
  if (name == "all") return Part::All;
  throw InputError(where + " must be held-out, fit or all, got '" + name + "'");
}

// Whitespace-separated flags and values (no quoting: a path in a set holds no space).
std::vector<std::string> split_args(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

// `measured: {column, quantity, unit}`: the unit is the quantity's, or one it converts from (a step
// in ms: x 1e-3).
void read_measured(const YAML::Node& node, const std::string& where, Variant& v) {
  const Keys m(node, where, {"column", "quantity", "unit"});
  v.measured_column = m.text("column", "a column");
  v.quantity = parse_quantity(m.text("quantity", "a quantity"), m.at("quantity"));
  v.unit = m.text("unit", "a unit");
  v.measured_scale = 1;
  if (v.quantity == SetQuantity::StepSeconds && v.unit == "ms") {
    v.measured_scale = 1e-3;
  } else if (v.unit != quantity_info(v.quantity).unit) {
    throw InputError(m.at("unit") + " must be the quantity's unit, '" + quantity_info(v.quantity).unit + "'" +
                     (v.quantity == SetQuantity::StepSeconds ? " or 'ms'" : "") + ", got '" + v.unit + "'");
  }
}

std::vector<Target> read_targets(const YAML::Node& list, const std::string& where) {
  if (!list.IsSequence()) throw InputError(where + " must be a list of targets, got " + yaml_shown(list) + yaml_line(list));
  std::vector<Target> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Keys k(list[i], where + "[" + std::to_string(i) + "]",
                 {"statistic", "below", "at_most", "above", "at_least", "part", "where"});
    Target t;
    const std::string name = k.text("statistic", "a statistic");
    const auto s = std::find_if(kStatistics.begin(), kStatistics.end(), [&](const StatisticInfo& x) { return name == x.name; });
    if (s == kStatistics.end()) {
      std::string list_text;
      for (const StatisticInfo& x : kStatistics) list_text += std::string(list_text.empty() ? "" : ", ") + x.name;
      throw InputError(k.at("statistic") + " must be one of " + list_text + ", got '" + name + "'");
    }
    t.statistic = s->statistic;
    int bounds = 0;
    for (const auto& [key, bound] : {std::pair{"below", Target::Bound::Below}, std::pair{"at_most", Target::Bound::AtMost},
                                     std::pair{"above", Target::Bound::Above}, std::pair{"at_least", Target::Bound::AtLeast}}) {
      if (!k.has(key)) continue;
      ++bounds;
      t.bound = bound;
      t.value = k.number(key);
    }
    if (bounds != 1) throw InputError(k.where() + " needs exactly one of below, at_most, above, at_least");
    if (k.has("part")) t.part = parse_part(k.text("part", "held-out, fit or all"), k.at("part"));
    if (k.has("where")) {
      const YAML::Node w = k.get("where");
      if (!w.IsMap()) throw InputError(k.at("where") + " must map columns to values, got " + yaml_shown(w) + yaml_line(w));
      for (const auto& kv : w) {
        const std::string column = yaml_scalar(kv.first, k.at("where") + ": a key", "a column");
        const std::string value = yaml_scalar(kv.second, k.at("where") + "." + column, "a value");
        t.where.emplace_back(column, value);
        t.where_text += (t.where_text.empty() ? "" : " ") + column + "=" + value;
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<KnownOom> read_known_oom(const YAML::Node& list, const std::string& where) {
  if (!list.IsSequence()) throw InputError(where + " must be a list, got " + yaml_shown(list) + yaml_line(list));
  std::vector<KnownOom> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Keys k(list[i], where + "[" + std::to_string(i) + "]", {"rows", "reason", "memory_below"});
    KnownOom o;
    o.rows = k.texts("rows", "a row id");
    o.reason = k.text("reason");
    o.memory_below = k.number("memory_below");
    if (!(o.memory_below > 0)) throw InputError(k.at("memory_below") + " must be positive, got " + std::to_string(o.memory_below));
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace

const QuantityInfo& quantity_info(SetQuantity q) { return kQuantities[static_cast<std::size_t>(q)]; }
const QuantityInfo& memory_quantity_info(MemoryQuantity q) { return kMemoryQuantities[static_cast<std::size_t>(q)]; }

const char* statistic_name(Statistic s) {
  for (const StatisticInfo& x : kStatistics) {
    if (x.statistic == s) return x.name;
  }
  return "?";
}

const char* part_name(Part p) {
  switch (p) {
    case Part::HeldOut: return "held-out";
    case Part::Fit: return "fit";
    case Part::All: return "all";
  }
  return "?";
}

const KnownOom* Variant::known_oom_of(const std::string& id) const {
  for (const KnownOom& k : known_oom) {
    if (std::find(k.rows.begin(), k.rows.end(), id) != k.rows.end()) return &k;
  }
  return nullptr;
}

std::size_t ValidationSet::column(const std::string& name_) const {
  const auto it = std::find(header.begin(), header.end(), name_);
  if (it == header.end()) throw InputError((dir / "runs.csv").string() + ": no column '" + name_ + "' in the header");
  return static_cast<std::size_t>(it - header.begin());
}

const std::string& ValidationSet::cell(const SetRow& row, const std::string& column_name) const {
  return row.cells[column(column_name)];
}

ValidationSet read_validation_set(const fs::path& dir) {
  ValidationSet set;
  set.dir = dir;
  const fs::path yaml_path = dir / "set.yaml";
  const std::string f = yaml_path.string();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError(dir.string() + ": not a folder (a validation set is a folder with set.yaml and runs.csv)");
  const YAML::Node root = load_yaml_file(yaml_path);
  return with_yaml_errors(f, [&] {
    const Keys k(root, f, {"name", "description", "sources", "measured", "memory", "outcome", "summarize_by", "parts",
                           "fitter_columns", "targets", "known_oom", "variants"});
    set.name = k.text("name", "a name");
    set.description = k.text("description");
    {
      const YAML::Node sources = k.get("sources");
      if (!sources.IsSequence() || sources.size() == 0) {
        throw InputError(k.at("sources") + " must be a list of sources, got " + yaml_shown(sources) + yaml_line(sources));
      }
      for (std::size_t i = 0; i < sources.size(); ++i) {
        const Keys s(sources[i], k.at("sources") + "[" + std::to_string(i) + "]", {"name", "url", "commit", "note"});
        set.sources.push_back({s.text("name"), s.text_or("url", ""), s.text_or("commit", ""), s.text_or("note", "")});
      }
    }
    Variant own;
    own.name = "default";
    own.description = "the rows as given";
    read_measured(k.get("measured"), k.at("measured"), own);
    if (k.has("memory")) {
      const Keys m(k.get("memory"), k.at("memory"), {"column", "quantity"});
      set.memory_column = m.text("column", "a column");
      const std::string q = m.text("quantity", "a memory quantity");
      const auto it = std::find_if(kMemoryQuantities.begin(), kMemoryQuantities.end(),
                                   [&](const QuantityInfo& x) { return q == x.name; });
      if (it == kMemoryQuantities.end()) {
        throw InputError(m.at("quantity") + " must be one of " + names_of(kMemoryQuantities) + ", got '" + q + "'");
      }
      set.memory_quantity = static_cast<MemoryQuantity>(it - kMemoryQuantities.begin());
    }
    std::vector<std::string> trained_values, oom_values;
    if (k.has("outcome")) {
      const Keys o(k.get("outcome"), k.at("outcome"), {"column", "trained", "oom"});
      set.outcome_column = o.text("column", "a column");
      trained_values = o.texts("trained", "a value");
      oom_values = o.texts("oom", "a value");
    }
    set.summarize_by = k.texts("summarize_by", "a column");
    if (k.has("parts")) {
      const Keys p(k.get("parts"), k.at("parts"), {"column", "how"});
      set.part_column = p.text("column", "a column");
      set.parts_how = p.text("how");
    }
    if (k.has("fitter_columns")) {
      const YAML::Node fc = k.get("fitter_columns");
      if (!fc.IsMap()) throw InputError(k.at("fitter_columns") + " must map a fitter's inputs to columns" + yaml_line(fc));
      for (const auto& kv : fc) {
        const std::string input = yaml_scalar(kv.first, k.at("fitter_columns") + ": a key", "a fitter input");
        set.fitter_columns[input] = yaml_scalar(kv.second, k.at("fitter_columns") + "." + input, "a column");
      }
    }
    own.targets = k.has("targets") ? read_targets(k.get("targets"), k.at("targets")) : std::vector<Target>{};
    if (k.has("known_oom")) own.known_oom = read_known_oom(k.get("known_oom"), k.at("known_oom"));
    set.variants.push_back(own);
    if (k.has("variants")) {
      const YAML::Node vs = k.get("variants");
      if (!vs.IsSequence()) throw InputError(k.at("variants") + " must be a list" + yaml_line(vs));
      for (std::size_t i = 0; i < vs.size(); ++i) {
        const Keys v(vs[i], k.at("variants") + "[" + std::to_string(i) + "]",
                     {"name", "description", "args", "measured", "quantity", "targets", "known_oom"});
        Variant x = own;
        x.targets.clear();
        x.known_oom.clear();
        x.args.clear();
        x.name = v.text("name", "a name");
        for (const Variant& other : set.variants) {
          if (other.name == x.name) throw InputError(v.at("name") + ": '" + x.name + "' names another variant too");
        }
        x.description = v.text("description");
        if (v.has("args")) x.args = split_args(v.text("args", "estimate's flags"));
        if (v.has("measured")) read_measured(v.get("measured"), v.at("measured"), x);
        if (v.has("quantity")) {
          // another figure of the prediction in the measured column's quantity's unit
          const SetQuantity measured = x.quantity;
          x.quantity = parse_quantity(v.text("quantity", "a quantity"), v.at("quantity"));
          if (std::string(quantity_info(x.quantity).unit) != quantity_info(measured).unit) {
            throw InputError(v.at("quantity") + ": '" + quantity_info(x.quantity).name + "' is not in " +
                             quantity_info(measured).unit + ", the unit of " + x.measured_column);
          }
        }
        if (v.has("targets")) x.targets = read_targets(v.get("targets"), v.at("targets"));
        if (v.has("known_oom")) x.known_oom = read_known_oom(v.get("known_oom"), v.at("known_oom"));
        set.variants.push_back(std::move(x));
      }
    }

    // runs.csv
    const fs::path csv_path = dir / "runs.csv";
    const std::string csv_file = csv_path.string();
    const CsvTable t = read_csv_table(csv_path);
    set.header = t.header;
    const std::size_t id_col = set.column("id"), args_col = set.column("args");
    constexpr std::size_t kNone = static_cast<std::size_t>(-1);
    const auto optional_column = [&](const std::string& name_) { return name_.empty() ? kNone : set.column(name_); };
    const bool has_reason = std::find(t.header.begin(), t.header.end(), "reason") != t.header.end();
    const std::size_t reason_col = has_reason ? set.column("reason") : kNone;
    // A summarize_by entry is a column, or columns joined by '+' (each row's values together).
    const auto parts_of = [](const std::string& spec) {
      std::vector<std::string> out;
      std::size_t start = 0;
      for (std::size_t plus; (plus = spec.find('+', start)) != std::string::npos; start = plus + 1) {
        out.push_back(spec.substr(start, plus - start));
      }
      out.push_back(spec.substr(start));
      return out;
    };
    for (const std::string& s : set.summarize_by) {
      for (const std::string& c : parts_of(s)) set.column(c);
    }
    for (const auto& [input, column] : set.fitter_columns) set.column(column);
    const std::size_t memory_col = optional_column(set.memory_column);
    const std::size_t outcome_col = optional_column(set.outcome_column);
    const std::size_t part_col = optional_column(set.part_column);
    std::set<std::string> ids;
    for (std::size_t r = 0; r < t.rows.size(); ++r) {
      SetRow row;
      row.line = t.lines[r];
      row.cells = t.rows[r];
      const auto fail = [&](std::size_t col, const std::string& what) {
        throw InputError(csv_file + ":" + std::to_string(row.line) + ": column '" + t.header[col] + "': " + what);
      };
      row.id = row.cells[id_col];
      if (row.id.empty()) fail(id_col, "missing value");
      if (!ids.insert(row.id).second) fail(id_col, "'" + row.id + "' is the id of an earlier row too");
      row.args = split_args(row.cells[args_col]);
      if (reason_col != kNone) row.reason = row.cells[reason_col];
      if (row.args.empty() && row.reason.empty()) fail(args_col, "empty: a row estimate cannot take needs a reason");
      if (!row.args.empty() && row.args.front() == "estimate") {
        fail(args_col, "estimate's flags, without the program's name, got '" + row.cells[args_col] + "'");
      }
      if (outcome_col != kNone) {
        const std::string& o = row.cells[outcome_col];
        if (o.empty()) fail(outcome_col, "missing value");
        row.outcome = std::find(trained_values.begin(), trained_values.end(), o) != trained_values.end() ? Outcome::Trained
                      : std::find(oom_values.begin(), oom_values.end(), o) != oom_values.end()       ? Outcome::OutOfMemory
                                                                                                       : Outcome::Other;
      }
      if (part_col != kNone) {
        const std::string& p = row.cells[part_col];
        if (p != "fit" && p != "held-out") fail(part_col, "expected fit or held-out, got '" + p + "'");
        row.fit = p == "fit";
      }
      const auto positive = [&](std::size_t col) {
        const std::string& s = row.cells[col];
        const std::optional<double> v = parse_finite(s);
        if (!v || !(*v >= kMinMeasured)) fail(col, "expected a positive number (at least 1e-12), got '" + s + "'");
        return *v;
      };
      // A run that trained and that estimate can take has its measurement; others may have none.
      const bool needs_value = row.outcome == Outcome::Trained && !row.args.empty();
      for (Variant& v : set.variants) {
        const std::size_t col = set.column(v.measured_column);
        // in the quantity's unit (a step in ms scaled to s)
        v.measured.push_back(needs_value || !row.cells[col].empty() ? positive(col) * v.measured_scale : kMissing);
      }
      if (memory_col != kNone && (needs_value || !row.cells[memory_col].empty())) row.measured_memory = positive(memory_col);
      for (const std::string& s : set.summarize_by) {
        for (const std::string& c : parts_of(s)) {
          if (row.cells[set.column(c)].empty() && !row.args.empty()) fail(set.column(c), "missing value");
        }
      }
      set.rows.push_back(std::move(row));
    }
    if (std::find(set.header.begin(), set.header.end(), "gpus") != set.header.end()) {
      const std::size_t g = set.column("gpus");
      for (const SetRow& row : set.rows) {
        if (row.args.empty()) continue;
        const std::optional<double> v = parse_finite(row.cells[g]);
        if (!v || *v < 1 || *v != std::floor(*v) || *v > static_cast<double>(kMaxGpuCount)) {
          throw InputError(csv_file + ":" + std::to_string(row.line) + ": column 'gpus': expected a GPU count, got '" +
                           row.cells[g] + "'");
        }
      }
    }
    // Every known_oom row and every target's column is the set's.
    for (std::size_t v = 0; v < set.variants.size(); ++v) {
      const std::string where = v == 0 ? f + ": known_oom" : f + ": variants[" + std::to_string(v - 1) + "].known_oom";
      for (const KnownOom& o : set.variants[v].known_oom) {
        for (const std::string& id : o.rows) {
          if (!ids.contains(id)) throw InputError(where + ": no row '" + id + "' in runs.csv");
        }
      }
      for (const Target& target : set.variants[v].targets) {
        for (const auto& [column, value] : target.where) set.column(column);
        if (target.part != Part::HeldOut && set.part_column.empty() && target.part == Part::Fit) {
          throw InputError(f + ": a target on the fit part, but the set has no parts");
        }
        if ((target.statistic == Statistic::MemoryMedianAbsError) && set.memory_column.empty()) {
          throw InputError(f + ": a target on memory_median_abs_error, but the set has no memory column");
        }
      }
    }
    return set;
  });
}

std::vector<std::string> row_arguments(const ValidationSet& set, const SetRow& row, const Variant& variant) {
  std::vector<std::string> args = row.args;
  // The variant's flags where the row does not give the flag.
  for (std::size_t i = 0; i < variant.args.size(); ++i) {
    const std::string& a = variant.args[i];
    const bool value_follows = i + 1 < variant.args.size() && !variant.args[i + 1].starts_with("--");
    if (!a.starts_with("--")) continue;
    if (std::find(row.args.begin(), row.args.end(), a) == row.args.end()) {
      args.push_back(a);
      if (value_follows) args.push_back(variant.args[i + 1]);
    }
  }
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] != "--model" && args[i] != "--system" && args[i] != "--runtime") continue;
    std::error_code ec;
    const fs::path local = set.dir / args[i + 1];
    if (fs::exists(local, ec)) args[i + 1] = local.lexically_normal().string();
  }
  return args;
}

std::string estimate_command(const std::vector<std::string>& args) {
  std::string out = "estimate";
  for (const std::string& a : args) out += " " + a;
  return out;
}

std::string gpu_bucket(std::int64_t gpus) {
  std::int64_t low = 1, high = 8;
  while (gpus > high && high < 32768) {
    low = high + 1;
    high *= 8;
  }
  if (gpus > high) return std::to_string(high + 1) + "+";
  return std::to_string(low) + "-" + std::to_string(high);
}

}  // namespace perfsweep::calib
