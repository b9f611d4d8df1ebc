#include "config/calibration_file.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

#include "config/yaml_file.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"
#include "core/files.hpp"

namespace perfsweep::comm {

namespace {
constexpr int kFormatVersion = 1;
constexpr const char* kFormatName = "perfsweep-comm-calibration";
}  // namespace

void save_calibration(const Calibration& cal, const std::filesystem::path& file) {
  YAML::Emitter out;
  out.SetDoublePrecision(17);
  out << YAML::Comment(
      "perfsweep communication calibration (comm fit). A collective of `size` bytes over n GPUs takes\n"
      "overhead_s + ring_steps(n) * step_s(size / n), step_s interpolated in chunk_bytes and across\n"
      "node counts (log-log); ring_steps = n - 1, 2 (n - 1) for allreduce. Times in seconds.");
  out << YAML::BeginMap;
  out << YAML::Key << "format" << YAML::Value << kFormatName;
  out << YAML::Key << "version" << YAML::Value << kFormatVersion;
  out << YAML::Key << "source" << YAML::Value << cal.source;
  out << YAML::Key << "overhead_s" << YAML::Value << cal.overhead_s;
  out << YAML::Key << "node_extrapolation" << YAML::Value << cal.node_extrapolation;
  out << YAML::Key << "size_extrapolation" << YAML::Value << cal.size_extrapolation;
  out << YAML::Key << "collectives" << YAML::Value << YAML::BeginSeq;
  for (const PlacementCalibration& p : cal.placements) {
    out << YAML::BeginMap;
    out << YAML::Key << "op" << YAML::Value << std::string(comm_type_name(p.op));
    out << YAML::Key << "gpus_per_node" << YAML::Value << p.gpus_per_node;
    out << YAML::Key << "size_bytes" << YAML::Value << YAML::Flow << YAML::BeginSeq << p.min_size_bytes
        << p.max_size_bytes << YAML::EndSeq;
    out << YAML::Key << "step_latency_s" << YAML::Value << p.step_latency_s;
    out << YAML::Key << "step_bandwidth_GBps" << YAML::Value << p.step_bandwidth_GBps;
    out << YAML::Key << "node_counts" << YAML::Value << YAML::BeginSeq;
    for (const StepTable& t : p.tables) {
      out << YAML::BeginMap;
      out << YAML::Key << "num_nodes" << YAML::Value << t.num_nodes;
      out << YAML::Key << "overhead_s" << YAML::Value << t.overhead_s;
      out << YAML::Key << "chunk_bytes" << YAML::Value << YAML::Flow << t.chunk_bytes;
      out << YAML::Key << "step_s" << YAML::Value << YAML::Flow << t.step_s;
      out << YAML::EndMap;
    }
    out << YAML::EndSeq << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  if (!out.good()) throw InputError(file.string() + ": cannot write calibration: " + out.GetLastError());

  // Written to a temporary, synced and renamed (core/files.hpp): a failed or interrupted write
  // leaves no truncated calibration and no temporary behind.
  write_text_atomically(file.string(), std::string(out.c_str()) + "\n");
}

namespace {

void check_keys(const YAML::Node& node, std::initializer_list<const char*> allowed, const std::string& at) {
  for (const auto& kv : node) {
    const std::string k = yaml_scalar(kv.first, at + ": a key", "a plain name");
    if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return k == a; })) {
      throw InputError(at + ": unknown key '" + k + "'");
    }
  }
}

const YAML::Node require(const YAML::Node& node, const char* key, const std::string& at) {
  const YAML::Node v = node[key];
  if (!v) throw InputError(at + ": missing key '" + key + "'");
  return v;
}

double number(const YAML::Node& node, const char* key, const std::string& at) {
  const YAML::Node v = require(node, key, at);
  double x = 0;
  if (!v.IsScalar() || yaml_is_text(v) || !YAML::convert<double>::decode(v, x) || !std::isfinite(x)) {
    throw InputError(at + ": " + key + " must be a number, got " + yaml_shown(v));
  }
  return x;
}

std::int64_t integer(const YAML::Node& node, const char* key, const std::string& at) {
  const YAML::Node v = require(node, key, at);
  long long x = 0;
  if (!v.IsScalar() || yaml_is_text(v) || !YAML::convert<long long>::decode(v, x)) {
    throw InputError(at + ": " + key + " must be an integer, got " + yaml_shown(v));
  }
  return x;
}

std::vector<double> numbers(const YAML::Node& node, const char* key, const std::string& at) {
  const YAML::Node v = require(node, key, at);
  if (!v.IsSequence()) throw InputError(at + ": " + key + " must be a list of numbers");
  std::vector<double> out;
  for (const YAML::Node& e : v) {
    double x = 0;
    if (!e.IsScalar() || yaml_is_text(e) || !YAML::convert<double>::decode(e, x) || !std::isfinite(x)) {
      throw InputError(at + ": " + key + " must be a list of numbers");
    }
    out.push_back(x);
  }
  return out;
}

// Chunk sizes and step times are interpolated between and divided by: at least kMinMeasured.
void check_positive(double v, const char* key, const std::string& at) {
  if (!(v >= kMinMeasured)) throw InputError(at + ": " + key + " must be at least 1e-12, got " + std::to_string(v));
}

Calibration read_calibration(const std::filesystem::path& file) {
  const std::string f = file.string();
  // the text read once: its hash (Calibration::file_text) is of what was read
  const std::string text = read_input_file(f, kMaxInputBytes);
  const YAML::Node root = load_yaml_text(text, f);
  if (!root.IsMap()) throw InputError(f + ": expected a mapping (a calibration written by `comm fit`)");
  check_keys(root,
             {"format", "version", "source", "overhead_s", "node_extrapolation", "size_extrapolation", "collectives"},
             f);
  if (!root["format"] || root["format"].Scalar() != kFormatName) {
    throw InputError(f + ": format must be '" + std::string(kFormatName) + "'");
  }
  if (integer(root, "version", f) != kFormatVersion) {
    throw InputError(f + ": version must be " + std::to_string(kFormatVersion));
  }
  Calibration cal;
  if (root["source"]) cal.source = root["source"].Scalar();
  cal.overhead_s = number(root, "overhead_s", f);
  if (cal.overhead_s < 0) throw InputError(f + ": overhead_s must be >= 0");
  cal.node_extrapolation = number(root, "node_extrapolation", f);
  cal.size_extrapolation = number(root, "size_extrapolation", f);
  if (!(cal.node_extrapolation >= 1)) throw InputError(f + ": node_extrapolation must be >= 1");
  if (!(cal.size_extrapolation >= 1)) throw InputError(f + ": size_extrapolation must be >= 1");

  const YAML::Node list = require(root, "collectives", f);
  if (!list.IsSequence() || list.size() == 0) throw InputError(f + ": collectives must be a non-empty list");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YAML::Node e = list[i];
    const std::string at = f + ": collectives[" + std::to_string(i) + "]";
    if (!e.IsMap()) throw InputError(at + ": expected a mapping");
    check_keys(e, {"op", "gpus_per_node", "size_bytes", "step_latency_s", "step_bandwidth_GBps", "node_counts"}, at);
    PlacementCalibration p;
    const std::string op_name = require(e, "op", at).Scalar();
    const auto op = parse_collective_name(op_name);
    if (!op) throw InputError(at + ": op must be allreduce, allgather or reducescatter, got '" + op_name + "'");
    p.op = *op;
    p.gpus_per_node = integer(e, "gpus_per_node", at);
    if (p.gpus_per_node < 1 || p.gpus_per_node > kMaxGpusPerNode) {
      throw InputError(at + ": gpus_per_node must be in [1, " + std::to_string(kMaxGpusPerNode) + "]");
    }
    if (cal.find(p.op, p.gpus_per_node) != nullptr) {
      throw InputError(at + ": a second entry for " + op_name + " with gpus_per_node " +
                       std::to_string(p.gpus_per_node));
    }
    const auto sizes = numbers(e, "size_bytes", at);
    if (sizes.size() != 2 || !(sizes[0] > 0) || !(sizes[1] >= sizes[0])) {
      throw InputError(at + ": size_bytes must be [min, max] with 0 < min <= max");
    }
    p.min_size_bytes = sizes[0];
    p.max_size_bytes = sizes[1];
    if (e["step_latency_s"]) p.step_latency_s = number(e, "step_latency_s", at);
    if (e["step_bandwidth_GBps"]) p.step_bandwidth_GBps = number(e, "step_bandwidth_GBps", at);

    const YAML::Node counts = require(e, "node_counts", at);
    if (!counts.IsSequence() || counts.size() == 0) throw InputError(at + ": node_counts must be a non-empty list");
    for (std::size_t j = 0; j < counts.size(); ++j) {
      const YAML::Node t = counts[j];
      const std::string tat = at + ".node_counts[" + std::to_string(j) + "]";
      if (!t.IsMap()) throw InputError(tat + ": expected a mapping");
      check_keys(t, {"num_nodes", "overhead_s", "chunk_bytes", "step_s"}, tat);
      StepTable table;
      table.num_nodes = integer(t, "num_nodes", tat);
      if (table.num_nodes < 1 || table.num_nodes > kMaxNodes) {
        throw InputError(tat + ": num_nodes must be in [1, " + std::to_string(kMaxNodes) + "], got " +
                         std::to_string(table.num_nodes));
      }
      if (!p.tables.empty() && table.num_nodes <= p.tables.back().num_nodes) {
        throw InputError(tat + ": num_nodes must be strictly ascending, got " + std::to_string(table.num_nodes) +
                         " after " + std::to_string(p.tables.back().num_nodes));
      }
      if (table.num_nodes * p.gpus_per_node < 2) throw InputError(tat + ": a collective needs two or more GPUs");
      table.overhead_s = number(t, "overhead_s", tat);
      if (table.overhead_s < 0) throw InputError(tat + ": overhead_s must be >= 0");
      table.chunk_bytes = numbers(t, "chunk_bytes", tat);
      table.step_s = numbers(t, "step_s", tat);
      if (table.chunk_bytes.size() < 2 || table.chunk_bytes.size() != table.step_s.size()) {
        throw InputError(tat + ": chunk_bytes and step_s must have the same length, at least 2");
      }
      for (std::size_t k = 0; k < table.chunk_bytes.size(); ++k) {
        check_positive(table.chunk_bytes[k], "chunk_bytes", tat);
        check_positive(table.step_s[k], "step_s", tat);
        if (k > 0 && !(table.chunk_bytes[k] > table.chunk_bytes[k - 1])) {
          throw InputError(tat + ": chunk_bytes must be strictly ascending");
        }
      }
      p.tables.push_back(std::move(table));
    }
    cal.placements.push_back(std::move(p));
  }
  cal.file = f;
  cal.file_text = std::move(text);
  return cal;
}

}  // namespace

Calibration load_calibration(const std::filesystem::path& file) {
  return with_yaml_errors(file.string(), [&] { return read_calibration(file); });
}

}  // namespace perfsweep::comm
