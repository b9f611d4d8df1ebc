#include "calib/run_inputs.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>

#include "config/calibration_file.hpp"
#include "config/execution_flags.hpp"
#include "config/inputs.hpp"
#include "config/kernels_file.hpp"
#include "config/runtime_file.hpp"
#include "core/files.hpp"
#include "model/comm_calibration.hpp"
#include "model/kernel_calibration.hpp"

namespace perfsweep::calib {
namespace fs = std::filesystem;
namespace {

// A name as a file stem that needs no quoting in a command line: letters, digits, '.', '_' and
// '-', anything else '_', never starting with '.'.
std::string file_stem(const std::string& name) {
  std::string out;
  for (const char ch : name) {
    const bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                       ch == '.' || ch == '_' || ch == '-';
    out += plain ? ch : '_';
  }
  if (out.empty()) return "unnamed";
  if (out.front() == '.') out.front() = '_';
  return out;
}

// The YAML files of one folder of DIR, each distinct text once: FOLDER/STEM.yaml, or
// FOLDER/STEM-2.yaml, -3, ... for another text of a stem already taken.
class DistinctFiles {
 public:
  DistinctFiles(fs::path dir, std::string folder) : dir_(std::move(dir)), folder_(std::move(folder)) {}

  // The file holding `text`, relative to DIR; written the first time the text comes.
  std::string file_for(const std::string& name, const std::string& text) {
    if (const auto it = by_text_.find(text); it != by_text_.end()) return it->second;
    const std::string stem = file_stem(name);
    std::string file = folder_ + "/" + stem + ".yaml";
    for (int k = 2; taken_.contains(file); ++k) file = folder_ + "/" + stem + "-" + std::to_string(k) + ".yaml";
    write_text_atomically((dir_ / file).string(), text);
    taken_.insert(file);
    by_text_.emplace(text, file);
    return file;
  }
  std::size_t size() const { return by_text_.size(); }

 private:
  fs::path dir_;
  std::string folder_;
  std::map<std::string, std::string> by_text_;
  std::set<std::string> taken_;
};

// A run id as a commands.tsv field: no tabs or line breaks.
std::string tsv_field(const std::string& text) {
  std::string out = text;
  std::replace_if(out.begin(), out.end(), [](char ch) { return ch == '\t' || ch == '\n' || ch == '\r'; }, ' ');
  return out;
}

}  // namespace

std::string write_system_file(const fs::path& dir, const System& system, const std::string& header) {
  const std::string stem = file_stem(system.name);
  System out = system;
  out.runtime.clear();
  out.kernels_file.clear();
  out.calibration_file.clear();
  fs::create_directories(dir / "systems");
  if (system.kernel_calibration) {
    out.kernels_file = stem + ".kernels.yaml";
    kernels::save_calibration(*system.kernel_calibration, dir / "systems" / out.kernels_file, kernels::kExactDigits);
  }
  if (system.calibration) {
    out.calibration_file = stem + ".calibration.yaml";
    comm::save_calibration(*system.calibration, dir / "systems" / out.calibration_file);
  }
  const std::string file = "systems/" + stem + ".yaml";
  write_text_atomically((dir / file).string(), header + system_to_yaml(out));
  return file;
}

std::string estimate_layout_arguments(const Layout& c, std::int64_t global_batch) {
  const StrategyPlan& plan = plan_of(c.strategy);
  std::string out = std::string("--strat ") + plan.name;
  const auto flag = [&out](std::string_view key, std::int64_t value) {
    out += ' ';
    out += key_flag(key);
    out += ' ';
    out += std::to_string(value);
  };
  // The degrees and NVLink placements under their configuration keys' names (estimate's flags
  // are the names with '-' for '_'); a strategy with two tensor degrees has no flag for their
  // product.
  for (const KeyKind kind : {KeyKind::Degree, KeyKind::Placement}) {
    for_each_config_key(
        c, kind,
        [&](const char* name, std::int64_t value) {
          if (!(has_tp2(plan) && std::string_view(name) == "tp")) flag(name, value);
        },
        true);
  }
  flag("global_batch_size", global_batch);
  out += std::string(" --attention ") + (c.attention.flash ? "flash" : "unfused");
  if (c.attention.recompute) out += " --attention-recompute";
  return out + " " + execution_arguments(c.exec);
}

RunInputsWritten write_inputs(const fs::path& dir, const System& system, const std::vector<RunInput>& runs) {
  RunInputsWritten written;
  const std::string system_file = write_system_file(dir, system);
  DistinctFiles models(dir, "models"), runtimes(dir, "runtimes");
  std::string tsv;
  for (const RunInput& r : runs) {
    const std::string model = models.file_for(r.model->name, model_to_yaml(*r.model));
    const Runtime& rt = *r.runtime;
    const std::string runtime = runtimes.file_for(rt.name, runtime_to_yaml(rt));
    tsv += tsv_field(r.id) + "\testimate --system " + system_file + " --model " + model + " --runtime " + runtime +
           " " + estimate_layout_arguments(r.layout, r.global_batch);
    tsv += "\n";
    ++written.lines;
  }
  write_text_atomically((dir / "commands.tsv").string(), tsv);
  written.models = models.size();
  written.runtimes = runtimes.size();
  return written;
}

std::string run_inputs_summary(const RunInputsWritten& w, const std::string& dir) {
  std::string out = "# inputs: " + std::to_string(w.lines) + " runs in " + dir + "/commands.tsv (" +
                    std::to_string(w.models) + " models, " + std::to_string(w.runtimes) + " runtimes)";
  if (w.not_expressed > 0) out += "; no line for " + std::to_string(w.not_expressed) + " runs without a prediction";
  return out + "\n";
}

}  // namespace perfsweep::calib
