#include "calib/layer_measurements.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "calib/measurement_entry.hpp"
#include "config/yaml_file.hpp"
#include "core/error.hpp"
#include "model/block.hpp"

namespace perfsweep::calib {

namespace {

std::array<double, 2> pass_pair(const Entry& at, const YAML::Node& layers, const std::string& name) {
  const YAML::Node n = layers[name];
  const std::string field = "layers." + name;
  if (!n) at.fail(field, "is missing");
  if (!n.IsSequence() || n.size() != 2) at.fail(field, "must be [forward_s, backward_s], got " + shown(n));
  return {seconds(at, n[0], field + "[0]"), seconds(at, n[1], field + "[1]")};
}

}  // namespace

std::vector<LayerConfig> read_layer_measurements(const std::filesystem::path& file) {
  const std::string f = file.string();
  const YAML::Node root = load_yaml_file(file);
  if (!root.IsMap() || !root["configs"]) throw InputError(f + ": expected a mapping with 'configs'");
  const YAML::Node configs = root["configs"];
  if (!configs.IsSequence() || configs.size() == 0) throw InputError(f + ": configs must be a non-empty list");
  std::vector<LayerConfig> out;
  std::set<std::string> ids;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const YAML::Node entry = configs[i];
    Entry at{f, "configs[" + std::to_string(i) + "]"};
    if (!entry.IsMap()) at.fail("entry", "must be a mapping");
    const YAML::Node cfg = entry["cfg"];
    if (!cfg || !cfg.IsMap()) at.fail("cfg", "is missing or not a mapping");
    LayerConfig c;
    if (!cfg["id"] || !cfg["id"].IsScalar() || cfg["id"].Scalar().empty()) at.fail("cfg.id", "is missing");
    c.id = cfg["id"].Scalar();
    at.name += " (" + c.id + ")";
    if (!ids.insert(c.id).second) at.fail("cfg.id", "repeats an earlier entry's id");
    c.b = positive_integer(at, cfg, "b");
    c.l = positive_integer(at, cfg, "l");
    c.e = positive_integer(at, cfg, "e");
    c.f = positive_integer(at, cfg, "f");
    c.h = positive_integer(at, cfg, "h");
    c.tp = cfg["tp"] ? positive_integer(at, cfg, "tp") : 1;
    if (c.e % c.h != 0) at.fail("cfg.h", "must divide e");
    if (c.h % c.tp != 0 || c.e % c.tp != 0 || c.f % c.tp != 0) at.fail("cfg.tp", "must divide h, e and f");
    const YAML::Node layers = entry["layers"];
    if (!layers || !layers.IsMap()) at.fail("layers", "is missing or not a mapping");
    Transformer model;
    model.l = c.l;
    model.e = c.e;
    model.h = c.h;
    model.f = c.f;
    model.depth = 1;
    check_model(at, model);
    for (const BlockLayer& y : describe_block(model, AttentionMode{})) {
      c.layer_names.emplace_back(y.name);
      c.layer_s.push_back(pass_pair(at, layers, y.name));
    }
    c.block_s = pass_pair(at, layers, "block");
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<LayerConfig> select_configs(const std::vector<LayerConfig>& configs, const std::string& ids, bool keep) {
  return select_by_id(configs, ids, keep);
}

}  // namespace perfsweep::calib
