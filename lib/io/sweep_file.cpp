#include "io/sweep_file.hpp"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <optional>
#include <sstream>

#include "core/error.hpp"
#include "core/published.hpp"
#include "core/text.hpp"
#include "io/h5.hpp"
#include "model/block.hpp"
#include "model/execution_options.hpp"
#include "model/kernel_calibration.hpp"
#include "model/plan.hpp"

namespace perfsweep {
namespace {

// Reads of one file: every HDF5 failure becomes an InputError naming the file and the field.
class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError(path_ + ": " + field + ": " + what);
  }

  template <typename F>
  auto at(const std::string& field, F&& read) const {
    try {
      return read();
    } catch (const H5Error& e) {
      fail(field, e.what());
    }
  }

  std::string text_attr(hid_t obj, const std::string& where, const std::string& name) const {
    if (!at(where + name, [&] { return h5::has_attr(obj, name); })) fail(where + name, "attribute missing");
    return utf8(where + name, at(where + name, [&] { return h5::attr_text(obj, name); }));
  }
  // Text the page shows: UTF-8, as every input it came from was held to.
  std::string utf8(const std::string& field, std::string text) const {
    if (const std::string bad = utf8_error(text); !bad.empty()) fail(field, "not UTF-8 text, " + bad + altered());
    return text;
  }
  // A number of the file that a sweep cannot have written: refused, never rendered.
  [[noreturn]] void impossible(const std::string& field, double v, const char* what) const {
    char value[32];
    std::snprintf(value, sizeof value, "%.17g", v);
    std::string message = "= ";
    message += value;
    message += ": ";
    message += what;
    fail(field, message + altered());
  }
  // The names of an object's attributes or members (h5::attr_names, h5::member_names): names the
  // page shows, so UTF-8 as the text is.
  std::vector<std::string> names(const std::string& where, std::vector<std::string> found) const {
    for (const std::string& n : found) utf8(where + " (a name in it)", n);
    return found;
  }
  static const char* altered() { return " (a sweep writes none: the file was altered, or is not a sweep's)"; }
  double number_attr(hid_t obj, const std::string& where, const std::string& name) const {
    if (!at(where + name, [&] { return h5::has_attr(obj, name); })) fail(where + name, "attribute missing");
    const std::vector<double> v = at(where + name, [&] { return h5::read_numeric_attr(obj, name); });
    if (v.size() != 1 || !std::isfinite(v.front())) fail(where + name, "expected one finite number");
    return v.front();
  }
  // A count, index or degree attribute: a whole number of at least `lo`.
  std::int64_t whole_attr(hid_t obj, const std::string& where, const std::string& name, double lo) const {
    const double v = number_attr(obj, where, name);
    if (!(v >= lo && v <= 0x1p62 && v == std::floor(v))) impossible(where + name, v, "not a whole number in range");
    return static_cast<std::int64_t>(v);
  }
  std::vector<TextField> all_attrs(hid_t obj, const std::string& where, const std::vector<std::string>& skip = {}) const {
    std::vector<TextField> out;
    for (const std::string& name : names(where, at(where, [&] { return h5::attr_names(obj); }))) {
      if (std::find(skip.begin(), skip.end(), name) != skip.end()) continue;
      // what a sweep writes, as it checks it when it writes: UTF-8 text, finite non-negative numbers
      if (!at(where + name, [&] { return h5::attr_is_text(obj, name); })) {
        for (const double v : at(where + name, [&] { return h5::read_numeric_attr(obj, name); })) {
          if (!publishable(v)) impossible(where + name, v, "not a finite, non-negative number");
        }
      }
      out.emplace_back(name, utf8(where + name, at(where + name, [&] { return h5::attr_text(obj, name); })));
    }
    return out;
  }
  h5::Handle group(hid_t parent, const std::string& where, const std::string& name) const {
    if (!at(where + name, [&] { return h5::is_group(parent, name); })) fail(where + name, "group missing");
    return at(where + name, [&] { return h5::open_group(parent, name); });
  }
  std::vector<double> doubles(hid_t parent, const std::string& where, const std::string& name) const {
    if (!at(where + name, [&] { return h5::exists(parent, name); })) fail(where + name, "dataset missing");
    return at(where + name, [&] { return h5::read_doubles(parent, name); });
  }

 private:
  std::string path_;
};

std::vector<std::string> split_keys(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string k; std::getline(in, k, ',');) {
    k.erase(0, k.find_first_not_of(' '));
    if (!k.empty()) out.push_back(k);
  }
  return out;
}

// Echoed input files are text attributes too: kept out of `parameters`, shown as files.
const std::vector<std::string> kEchoedAttrs{"calibration_yaml", "runtime_yaml"};

// The values a sweep writes, held to what it checks when it writes them (core/published.hpp) and to
// what each column means: finite and not negative, throughput positive, counts, degrees and GPU
// counts whole (degrees and GPU counts at least 1), execution options one of their codes.
void check_column_values(const Reader& r, const ResultTarget& t, const std::string& where) {
  const auto listed = [](const std::vector<std::string>& keys, const std::string& name) {
    return std::find(keys.begin(), keys.end(), name) != keys.end();
  };
  for (const ResultColumn& c : t.columns) {
    const ExecutionOption* option = listed(t.execution_keys, c.name) ? find_execution_option(c.name) : nullptr;
    const bool degree = c.name == "n_gpus" || listed(t.config_keys, c.name) || listed(t.placement_keys, c.name);
    const bool whole = degree || option != nullptr || c.name == "rank" || listed(t.execution_keys, c.name);
    for (std::size_t i = 0; i < c.values.size(); ++i) {
      const double v = c.values[i];
      const std::string field = where + c.name + "[" + std::to_string(i) + "]";
      if (!publishable(v)) r.impossible(field, v, "not a finite, non-negative number");
      if (c.name == "throughput" && !(v > 0)) r.impossible(field, v, "no throughput");
      if (whole && (v != std::floor(v) || v > 0x1p62)) r.impossible(field, v, "not a whole number");
      if (degree && v < 1) r.impossible(field, v, "not a degree or GPU count (at least 1)");
      if (option != nullptr && !option_code_possible(*option, static_cast<std::int64_t>(v))) {
        r.impossible(field, v, "not a value of the option (io/sweep_file.hpp execution_value_name)");
      }
    }
  }
}

ResultTarget read_target(const Reader& r, hid_t file, const std::string& group) {
  ResultTarget t;
  t.group = "/" + group;
  const std::string where = t.group + "/";
  h5::Handle g = r.group(file, "", group);
  t.name = r.text_attr(g.id(), where, "name");
  t.nvs = r.whole_attr(g.id(), where, "nvs", 1);
  t.hbm_capacity_gb = r.number_attr(g.id(), where, "hbm_capacity");
  t.runtime = r.text_attr(g.id(), where, "runtime");
  t.comm_model = r.text_attr(g.id(), where, "comm_model");
  if (r.at(where, [&] { return h5::has_attr(g.id(), "runtime_fnv1a"); })) {
    t.runtime_fnv1a = r.text_attr(g.id(), where, "runtime_fnv1a");
  }
  t.parameters = r.all_attrs(g.id(), where, kEchoedAttrs);
  if (r.at(where, [&] { return h5::has_attr(g.id(), "calibration_status"); })) {
    t.calibration_status = r.text_attr(g.id(), where, "calibration_status");
  }
  if (r.at(where, [&] { return h5::has_attr(g.id(), "caveat"); })) t.caveat = r.text_attr(g.id(), where, "caveat");
  if (r.at(where, [&] { return h5::has_attr(g.id(), "gpu_hour_cost"); })) {
    t.gpu_hour_cost = r.number_attr(g.id(), where, "gpu_hour_cost");
  }
  if (r.at(where, [&] { return h5::exists(g.id(), "best_launch"); })) {
    const std::vector<double> counts = r.doubles(g.id(), where, "n_gpus");
    const std::vector<std::string> lines = r.at(where + "best_launch", [&] { return h5::read_strings(g.id(), "best_launch"); });
    if (lines.size() != counts.size()) {
      r.fail(where + "best_launch", std::to_string(lines.size()) + " lines where n_gpus has " +
                                        std::to_string(counts.size()) + Reader::altered());
    }
    h5::Handle d = r.at(where + "best_launch", [&] {
      return h5::Handle(h5::check(H5Dopen2(g.id(), "best_launch", H5P_DEFAULT), "open dataset best_launch"), H5Dclose);
    });
    t.launch_framework = r.text_attr(d.id(), where + "best_launch/", "framework");
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const double n = counts[i];
      if (!(n >= 1 && n <= 0x1p62 && n == std::floor(n))) r.impossible(where + "n_gpus", n, "not a GPU count");
      t.best_launch.emplace_back(static_cast<std::int64_t>(n), r.utf8(where + "best_launch", lines[i]));
    }
  }
  if (r.at(where, [&] { return h5::has_attr(g.id(), "i0"); })) {
    t.i0 = r.whole_attr(g.id(), where, "i0", 0);
    t.i1 = r.whole_attr(g.id(), where, "i1", 0);
  }
  h5::Handle top = r.group(g.id(), where, "top");
  const std::string top_where = where + "top/";
  t.config_keys = split_keys(r.text_attr(top.id(), top_where, "config_keys"));
  t.placement_keys = split_keys(r.text_attr(top.id(), top_where, "placement_keys"));
  t.execution_keys = split_keys(r.text_attr(top.id(), top_where, "execution_keys"));
  for (const std::string& name : r.names(top_where, r.at(top_where, [&] { return h5::member_names(top.id()); }))) {
    if (name == "count") continue;
    ResultColumn c;
    c.name = name;
    if (r.at(top_where + name, [&] { return h5::is_text_dataset(top.id(), name); })) {
      // a named execution option (files from version 1.1 on): each name back to its code
      const ExecutionOption* option = find_execution_option(name);
      if (option == nullptr || option->values == OptionValues::Integer) {
        r.fail(top_where + name, "a column of text where a sweep writes numbers" + std::string(Reader::altered()));
      }
      const std::vector<std::string> names = r.at(top_where + name, [&] { return h5::read_strings(top.id(), name); });
      for (std::size_t i = 0; i < names.size(); ++i) {
        const std::string field = top_where + name + "[" + std::to_string(i) + "]";
        const std::optional<std::int64_t> code = option_code_of(*option, r.utf8(field, names[i]));
        if (!code) r.fail(field, "= " + quoted_text(names[i]) + ": not a value of the option" + Reader::altered());
        c.values.push_back(static_cast<double>(*code));
      }
    } else {
      c.values = r.doubles(top.id(), top_where, name);
    }
    h5::Handle d = r.at(top_where + name, [&] {
      return h5::Handle(h5::check(H5Dopen2(top.id(), name.c_str(), H5P_DEFAULT), "open dataset " + name), H5Dclose);
    });
    if (r.at(top_where + name, [&] { return h5::has_attr(d.id(), "units"); })) {
      c.units = r.text_attr(d.id(), top_where + name + "/", "units");
    }
    t.columns.push_back(std::move(c));
  }
  // The columns every report reads, all of one length.
  for (const char* required : {"n_gpus", "rank", "throughput", "mem", "t"}) {
    if (t.column(required) == nullptr) r.fail(top_where + required, "dataset missing");
  }
  if (!(t.hbm_capacity_gb > 0)) r.impossible(where + "hbm_capacity", t.hbm_capacity_gb, "not a capacity");
  t.rows = t.column("n_gpus")->values.size();
  for (const ResultColumn& c : t.columns) {
    if (c.values.size() != t.rows) {
      r.fail(top_where + c.name, std::to_string(c.values.size()) + " values where n_gpus has " + std::to_string(t.rows));
    }
  }
  for (const std::vector<std::string>* keys : {&t.config_keys, &t.placement_keys, &t.execution_keys}) {
    for (const std::string& k : *keys) {
      if (t.column(k) == nullptr) r.fail(top_where + k, "dataset missing (named in the group's key attributes)");
    }
  }
  check_column_values(r, t, top_where);
  return t;
}

ResultGrid read_grid(const Reader& r, hid_t file, std::vector<TextField>& run) {
  ResultGrid g;
  auto root = [&](const std::string& name) {
    for (const TextField& f : run) {
      if (f.first == name) return f.second;
    }
    r.fail("/" + name, "attribute missing");
  };
  g.sweep = root("sweep");
  g.description = root("sweep_description");
  g.base_system = root("base_system");
  h5::Handle grid = r.group(file, "/", "grid");
  const std::string where = "/grid/";
  const std::vector<std::string> names = r.names(where, r.at(where, [&] { return h5::member_names(grid.id()); }));
  const std::vector<std::string> axis_names = split_keys(root("sweep_axes"));
  g.axes.resize(axis_names.size());
  if (g.axes.empty() || g.axes.size() > 2) r.fail("/sweep_axes", "expected one or two axes");
  // Every swept parameter is a dataset of /grid with an `axis` attribute.
  for (const std::string& name : names) {
    h5::Handle d = r.at(where + name, [&] {
      return h5::Handle(h5::check(H5Oopen(grid.id(), name.c_str(), H5P_DEFAULT), "open " + name), H5Oclose);
    });
    if (!r.at(where + name, [&] { return h5::has_attr(d.id(), "axis"); })) continue;
    const double axis = r.number_attr(d.id(), where + name + "/", "axis");
    if (axis < 0 || axis >= static_cast<double>(g.axes.size())) r.fail(where + name + "/axis", "no such axis");
    GridAxis& a = g.axes[static_cast<std::size_t>(axis)];
    a.names.push_back(name);
    a.units.push_back(r.text_attr(d.id(), where + name + "/", "units"));
    a.values.push_back(r.doubles(grid.id(), where, name));
    if (a.values.back().size() != a.values.front().size()) {
      r.fail(where + name, "length differs from the other parameters of axis " + std::to_string(static_cast<int>(axis)));
    }
  }
  for (std::size_t a = 0; a < g.axes.size(); ++a) {
    if (g.axes[a].names.empty()) r.fail(where + axis_names[a], "dataset missing (axis " + std::to_string(a) + ")");
    // The axis's first parameter (sweep_axes) leads.
    auto first = std::find(g.axes[a].names.begin(), g.axes[a].names.end(), axis_names[a]);
    if (first == g.axes[a].names.end()) r.fail(where + axis_names[a], "dataset missing (axis " + std::to_string(a) + ")");
    const auto i = static_cast<std::size_t>(first - g.axes[a].names.begin());
    std::swap(g.axes[a].names[0], g.axes[a].names[i]);
    std::swap(g.axes[a].units[0], g.axes[a].units[i]);
    std::swap(g.axes[a].values[0], g.axes[a].values[i]);
  }
  for (const double n : r.doubles(grid.id(), where, "n_gpus")) {
    if (!(n >= 1 && n <= 0x1p62 && n == std::floor(n))) r.impossible(where + "n_gpus", n, "not a GPU count");
    g.n_gpus.push_back(static_cast<std::int64_t>(n));
  }
  g.best_throughput = r.doubles(grid.id(), where, "best_throughput");
  g.speedup = r.doubles(grid.id(), where, "speedup");
  for (const GridAxis& a : g.axes) {
    for (std::size_t p = 0; p < a.names.size(); ++p) {
      for (const double v : a.values[p]) {
        if (!publishable(v)) r.impossible(where + a.names[p], v, "not a system parameter's value");
      }
    }
  }
  std::size_t cells = g.n_gpus.size();
  for (const GridAxis& a : g.axes) cells *= a.size();
  for (const auto& [name, values] : {std::pair<const char*, const std::vector<double>*>{"best_throughput", &g.best_throughput},
                                     {"speedup", &g.speedup}}) {
    if (values->size() != cells) {
      r.fail(where + name, std::to_string(values->size()) + " values where the axes and n_gpus make " +
                               std::to_string(cells));
    }
    // NaN: nothing fits (the grid's documented marker); any other value a throughput or a ratio
    for (std::size_t i = 0; i < values->size(); ++i) {
      if (!publishable((*values)[i], NanMeans::NothingFits)) {
        r.impossible(where + name + "[" + std::to_string(i) + "]", (*values)[i], "not a throughput or a speed-up");
      }
    }
  }
  return g;
}

}  // namespace

const ResultColumn* ResultTarget::column(const std::string& wanted) const {
  for (const ResultColumn& c : columns) {
    if (c.name == wanted) return &c;
  }
  return nullptr;
}

SweepFile read_sweep_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(path + ": no such file");
  if (!std::filesystem::is_regular_file(path, ec)) throw InputError(path + ": not a regular file");
  // H5Fis_hdf5 fails (negative) as well as answers no for files that are not HDF5.
  if (H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr) < 0 || H5Fis_hdf5(path.c_str()) <= 0) {
    throw InputError(path + ": not an HDF5 file");
  }
  const Reader r(path);
  SweepFile f;
  f.path = path;
  h5::Handle file = r.at("/", [&] { return h5::open_file(path); });
  if (!r.at("/schema", [&] { return h5::has_attr(file.id(), "schema"); })) {
    r.fail("/schema", "attribute missing: not a perfsweep sweep file");
  }
  const std::string schema = r.text_attr(file.id(), "/", "schema");
  if (schema != "perfsweep/1") r.fail("/schema", "expected 'perfsweep/1', got '" + schema + "'");
  f.run = r.all_attrs(file.id(), "/");
  f.strategy = r.text_attr(file.id(), "/", "strategy");
  f.model = r.text_attr(file.id(), "/", "model");
  f.global_batch = r.whole_attr(file.id(), "/", "global_batch_size", 1);
  {
    h5::Handle model = r.group(file.id(), "/", "model");
    f.model_parameters = r.all_attrs(model.id(), "/model/");
  }
  {
    h5::Handle prov = r.group(file.id(), "/", "provenance");
    const auto members = [&](const std::string& where, hid_t group) {
      return r.names(where, r.at(where, [&] { return h5::member_names(group); }));
    };
    for (const std::string& name : members("/provenance/", prov.id())) {
      if (r.at("/provenance/" + name, [&] { return h5::is_group(prov.id(), name); })) {
        h5::Handle sub = r.group(prov.id(), "/provenance/", name);
        for (const std::string& inner : members("/provenance/" + name, sub.id())) {
          const std::string field = "/provenance/" + name + "/" + inner;
          f.provenance.emplace_back(name + "/" + inner,
                                    r.utf8(field, r.at(field, [&] { return h5::read_text(sub.id(), inner); })));
        }
      } else {
        const std::string field = "/provenance/" + name;
        f.provenance.emplace_back(name, r.utf8(field, r.at(field, [&] { return h5::read_text(prov.id(), name); })));
      }
    }
  }
  const bool hardware = r.at("/grid", [&] { return h5::exists(file.id(), "grid"); });
  if (hardware) {
    f.grid = read_grid(r, file.id(), f.run);
    h5::Handle points = r.group(file.id(), "/", "points");
    std::vector<std::string> names = r.at("/points/", [&] { return h5::member_names(points.id()); });
    // By index: member names sort as text ("10" before "2").
    std::vector<std::pair<long long, std::string>> by_index;
    for (const std::string& n : names) {
      char* end = nullptr;
      const long long i = std::strtoll(n.c_str(), &end, 10);
      if (n.empty() || *end != '\0') r.fail("/points/" + n, "a point's group is named by its index");
      by_index.emplace_back(i, n);
    }
    std::sort(by_index.begin(), by_index.end());
    std::size_t cells = 1;
    for (const GridAxis& a : f.grid->axes) cells *= a.size();
    if (by_index.size() != cells) {
      r.fail("/points", std::to_string(by_index.size()) + " points where the axes make " + std::to_string(cells));
    }
    for (const auto& [index, name] : by_index) {
      f.targets.push_back(read_target(r, file.id(), "points/" + name));
      const ResultTarget& t = f.targets.back();
      // a point's place on the grid, which the heatmaps index by
      const std::size_t n1 = f.grid->axes.size() > 1 ? f.grid->axes[1].size() : 1;
      if (t.i0 < 0 || t.i1 < 0 || static_cast<std::size_t>(t.i0) >= f.grid->axes[0].size() ||
          static_cast<std::size_t>(t.i1) >= n1) {
        r.fail(t.group + "/i0", "the point's place (" + std::to_string(t.i0) + ", " + std::to_string(t.i1) +
                                     ") is not on the grid" + Reader::altered());
      }
    }
    f.targets.push_back(read_target(r, file.id(), "base"));
  } else {
    for (const std::string& name : r.names("/", r.at("/", [&] { return h5::member_names(file.id()); }))) {
      if (name == "model" || name == "provenance") continue;
      if (!r.at("/" + name, [&] { return h5::is_group(file.id(), name); })) continue;
      f.targets.push_back(read_target(r, file.id(), name));
    }
    if (f.targets.empty()) r.fail("/", "no system group (a group with a top/ table)");
  }
  for (const ResultTarget& t : f.targets) {
    for (const char* echoed : {"runtime_yaml", "calibration_yaml"}) {
      h5::Handle g = r.at(t.group, [&] { return h5::open_group(file.id(), t.group); });
      if (r.at(t.group + "/" + echoed, [&] { return h5::has_attr(g.id(), echoed); })) {
        // an input file echoed as a sweep writes it: text, never a number shown as one
        if (!r.at(t.group + "/" + echoed, [&] { return h5::attr_is_text(g.id(), echoed); })) {
          r.fail(t.group + "/" + echoed, "not text (the echoed input file)");
        }
        const std::string text = r.text_attr(g.id(), t.group + "/", echoed);
        const std::string name = std::string(echoed) == "runtime_yaml" ? "runtime " + t.runtime : "calibration of " + t.name;
        const bool seen = std::any_of(f.provenance.begin(), f.provenance.end(),
                                      [&](const TextField& p) { return p.first == name && p.second == text; });
        if (!seen) f.provenance.emplace_back(name, text);
      }
    }
  }
  r.at("/", [&] {
    file.close(path);
    return 0;
  });
  return f;
}

std::string execution_value_name(const std::string& key, std::int64_t code) {
  const ExecutionOption* o = find_execution_option(key);
  return o != nullptr ? option_value_name(*o, code) : std::to_string(code);
}

SweepFile read_sweep_file_isolated(const std::string& path) {
  // the child's exit: 0 read, kRefused refused (the parent then reads it and refuses it with the
  // same message), anything else (a signal, the sanitizer's exit) a crash inside the library
  constexpr int kRefused = 3;
  const pid_t child = fork();
  if (child == 0) {
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, STDERR_FILENO);
    int code = 0;
    try {
      (void)read_sweep_file(path);
    } catch (...) {
      code = kRefused;
    }
    _exit(code);
  }
  if (child > 0) {
    int status = 0;
    while (waitpid(child, &status, 0) < 0) {
      if (errno != EINTR) throw IoError(path + ": cannot wait for the process reading it");
    }
    const bool read_or_refused = WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == kRefused);
    if (!read_or_refused) {
      throw InputError(path + ": the HDF5 library failed reading it (" +
                       (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                            : "exit " + std::to_string(WEXITSTATUS(status))) +
                       "): a damaged file? (a sweep file as sweep writes it reads in full)");
    }
  }
  // fork failed (no process to spare): read it here, as read_sweep_file does
  return read_sweep_file(path);
}

}  // namespace perfsweep
