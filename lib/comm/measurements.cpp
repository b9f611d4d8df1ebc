#include "comm/measurements.hpp"

#include <yaml-cpp/yaml.h>

#include "config/yaml_file.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>

#include "core/csv.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/limits.hpp"

namespace perfsweep::comm {

namespace {

constexpr double kMicrosecond = 1e-6;

std::string where(const std::filesystem::path& file, std::size_t line) {
  return file.string() + ":" + std::to_string(line);
}

std::vector<std::string> split_whitespace(const std::string& line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    const std::size_t start = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

std::optional<std::int64_t> to_integer(const std::string& text) {
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

// Sizes and times: relative errors and fits divide by them, so a denormal is refused.
double positive_number(const std::string& text, const std::string& field, const std::string& at) {
  const auto v = parse_finite(text);
  if (!v || !(*v >= kMinMeasured)) {
    throw InputError(at + ": " + field + " must be a positive number (at least 1e-12), got '" + text + "'");
  }
  return *v;
}

std::int64_t positive_integer(const std::string& text, const std::string& field, const std::string& at) {
  const auto v = to_integer(text);
  if (!v || *v < 1) throw InputError(at + ": " + field + " must be a positive integer, got '" + text + "'");
  return *v;
}

// Nodes and GPUs per node within their bounds, so their product (GPUs) fits kMaxGpuCount.
void check_placement(std::int64_t num_nodes, std::int64_t gpus_per_node, const std::string& at) {
  if (num_nodes < 1 || num_nodes > kMaxNodes) {
    throw InputError(at + ": num_nodes must be in [1, " + std::to_string(kMaxNodes) + "], got " +
                     std::to_string(num_nodes));
  }
  if (gpus_per_node < 1 || gpus_per_node > kMaxGpusPerNode) {
    throw InputError(at + ": gpus_per_node must be in [1, " + std::to_string(kMaxGpusPerNode) + "], got " +
                     std::to_string(gpus_per_node));
  }
}

CommType collective(const std::string& name, const std::string& at) {
  const auto op = parse_collective_name(name);
  if (!op) throw InputError(at + ": op must be allreduce, allgather or reducescatter, got '" + name + "'");
  return *op;
}

// The collective named by "# Collective test starting: all_reduce_perf" (nccl-tests >= 2.14).
std::optional<CommType> collective_from_header(const std::string& line) {
  static constexpr std::string_view kMarker = "Collective test starting:";
  const auto at = line.find(kMarker);
  if (at == std::string::npos) return std::nullopt;
  const auto words = split_whitespace(line.substr(at + kMarker.size()));
  if (words.empty()) return std::nullopt;
  return parse_collective_name(words.front());
}

std::optional<CommType> collective_from_file_name(const std::filesystem::path& file) {
  std::string stem = file.filename().string();
  std::transform(stem.begin(), stem.end(), stem.begin(), [](unsigned char c) { return std::tolower(c); });
  std::erase(stem, '_');
  std::erase(stem, '-');
  for (std::string_view name : {"allreduce", "allgather", "reducescatter"}) {
    if (stem.find(name) != std::string::npos) return parse_collective_name(name);
  }
  return std::nullopt;
}

}  // namespace

std::vector<Measurement> read_measurements_csv(const std::filesystem::path& file) {
  require_input_file(file.string());  // a FIFO would block the read
  std::ifstream in(file);
  if (!in) throw InputError(file.string() + ": cannot open");
  std::string line;
  std::size_t line_no = 0;
  std::vector<std::string> header;
  while (header.empty() && std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!split_whitespace(line).empty()) header = split_csv_line(line, where(file, line_no));
  }
  if (header.empty()) throw InputError(file.string() + ": empty file, expected a CSV header");

  static constexpr std::array<const char*, 6> kRequired = {"size", "time-o", "time-i", "num_nodes", "gpus_per_node",
                                                           "op"};
  std::array<std::size_t, kRequired.size()> column{};
  for (std::size_t k = 0; k < kRequired.size(); ++k) {
    const auto it = std::find(header.begin(), header.end(), kRequired[k]);
    if (it == header.end()) {
      throw InputError(where(file, line_no) + ": missing column '" + kRequired[k] + "' in the header");
    }
    column[k] = static_cast<std::size_t>(it - header.begin());
  }

  std::vector<Measurement> rows;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (split_whitespace(line).empty()) continue;
    const std::string at = where(file, line_no);
    const auto cells = split_csv_line(line, at);
    if (cells.size() != header.size()) {
      throw InputError(at + ": expected " + std::to_string(header.size()) + " columns, got " +
                       std::to_string(cells.size()));
    }
    Measurement m;
    m.size_bytes = positive_number(cells[column[0]], "size", at);
    m.time_oop_s = positive_number(cells[column[1]], "time-o", at) * kMicrosecond;
    m.time_ip_s = positive_number(cells[column[2]], "time-i", at) * kMicrosecond;
    m.num_nodes = positive_integer(cells[column[3]], "num_nodes", at);
    m.gpus_per_node = positive_integer(cells[column[4]], "gpus_per_node", at);
    check_placement(m.num_nodes, m.gpus_per_node, at);
    m.op = collective(cells[column[5]], at);
    rows.push_back(m);
  }
  return rows;
}

std::vector<Measurement> read_nccl_tests_output(const std::filesystem::path& file, std::int64_t num_nodes,
                                                std::int64_t gpus_per_node, std::optional<CommType> op) {
  check_placement(num_nodes, gpus_per_node, file.string());
  require_input_file(file.string());  // a FIFO would block the read
  std::ifstream in(file);
  if (!in) throw InputError(file.string() + ": cannot open");

  struct Row {
    std::size_t line_no;
    double size_bytes, time_oop_us, time_ip_us;
  };
  std::vector<Row> table;
  std::optional<CommType> header_op;
  std::string line;
  std::size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    const auto words = split_whitespace(line);
    if (words.empty()) continue;
    if (words.front().front() == '#') {
      if (!header_op) header_op = collective_from_header(line);
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(words.front().front()))) continue;  // MPI, NCCL, srun

    // size count type [redop] [root], then time algbw busbw #wrong for out-of-place and in-place.
    const std::string at = where(file, line_no);
    if (words.size() < 11 || words.size() > 13) {
      throw InputError(at + ": expected 'size count type [redop] [root] time algbw busbw #wrong time algbw busbw "
                            "#wrong', got " +
                       std::to_string(words.size()) + " fields");
    }
    const std::size_t timing = words.size() - 8;
    if (!to_integer(words[1])) throw InputError(at + ": count must be an integer, got '" + words[1] + "'");
    for (std::size_t k : {timing + 1, timing + 2, timing + 5, timing + 6}) {
      if (!parse_finite(words[k])) throw InputError(at + ": bandwidth must be a number, got '" + words[k] + "'");
    }
    table.push_back(Row{line_no, positive_number(words[0], "size", at), positive_number(words[timing], "time", at),
                        positive_number(words[timing + 4], "in-place time", at)});
  }

  if (!op) op = header_op;
  if (!op) op = collective_from_file_name(file);
  if (!op) {
    throw InputError(file.string() +
                     ": cannot tell the collective (no '# Collective test starting:' line and no "
                     "all_reduce/all_gather/reduce_scatter in the file name); give it explicitly");
  }
  if (table.empty()) throw InputError(file.string() + ": no nccl-tests table rows");

  std::vector<Measurement> rows;
  rows.reserve(table.size());
  for (const Row& r : table) {
    rows.push_back(Measurement{*op, num_nodes, gpus_per_node, r.size_bytes, r.time_oop_us * kMicrosecond,
                               r.time_ip_us * kMicrosecond});
  }
  return rows;
}

std::vector<Measurement> read_manifest(const std::filesystem::path& file) {
  const std::string f = file.string();
  const YAML::Node root = load_yaml_file(file);
  if (!root.IsSequence() || root.size() == 0) {
    throw InputError(f + ": expected a list of {file, num_nodes, gpus_per_node[, op]}");
  }
  std::vector<Measurement> rows;
  for (std::size_t i = 0; i < root.size(); ++i) {
    const YAML::Node e = root[i];
    const std::string at = f + ": entry " + std::to_string(i);
    if (!e.IsMap()) throw InputError(at + ": expected {file, num_nodes, gpus_per_node[, op]}");
    for (const auto& kv : e) {
      const std::string k = yaml_scalar(kv.first, at + ": a key", "a plain name");
      if (k != "file" && k != "num_nodes" && k != "gpus_per_node" && k != "op") {
        throw InputError(at + ": unknown key '" + k + "'");
      }
    }
    for (const char* k : {"file", "num_nodes", "gpus_per_node"}) {
      if (!e[k] || !e[k].IsScalar()) throw InputError(at + ": missing key '" + std::string(k) + "'");
    }
    const std::int64_t nodes = positive_integer(e["num_nodes"].Scalar(), "num_nodes", at);
    const std::int64_t gpus = positive_integer(e["gpus_per_node"].Scalar(), "gpus_per_node", at);
    check_placement(nodes, gpus, at);
    std::optional<CommType> op;
    if (e["op"]) op = collective(e["op"].Scalar(), at);
    std::filesystem::path output = e["file"].Scalar();
    if (output.is_relative()) output = file.parent_path() / output;
    const auto part = read_nccl_tests_output(output, nodes, gpus, op);
    rows.insert(rows.end(), part.begin(), part.end());
  }
  return rows;
}

std::vector<Measurement> read_measurements(const std::filesystem::path& file, std::optional<std::int64_t> num_nodes,
                                           std::optional<std::int64_t> gpus_per_node, std::optional<CommType> op) {
  const std::string ext = file.extension().string();
  if (ext == ".csv") return read_measurements_csv(file);
  if (ext == ".yaml" || ext == ".yml") return read_manifest(file);
  if (!num_nodes || !gpus_per_node) {
    throw InputError(file.string() +
                     ": an nccl-tests output needs the node and GPU-per-node counts (or use a .yaml manifest)");
  }
  return read_nccl_tests_output(file, *num_nodes, *gpus_per_node, op);
}

std::vector<Measurement> select_nodes(const std::vector<Measurement>& rows, const std::vector<std::int64_t>& nodes) {
  if (nodes.empty()) return rows;
  std::vector<Measurement> out;
  for (const Measurement& m : rows) {
    if (std::find(nodes.begin(), nodes.end(), m.num_nodes) != nodes.end()) out.push_back(m);
  }
  return out;
}

}  // namespace perfsweep::comm
