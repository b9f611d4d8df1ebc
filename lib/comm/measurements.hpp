#pragma once
// Collective timings measured with nccl-tests (all_reduce_perf, all_gather_perf,
// reduce_scatter_perf): read from its own text output, from a manifest of such outputs, or from
// the CSV of the reference's comm_validation (one row per nccl-tests table row plus num_nodes,
// gpus_per_node and op columns).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/collective.hpp"
#include "model/comm_calibration.hpp"  // parse_collective_name

namespace perfsweep::comm {

// One row of an nccl-tests table. nccl-tests' `size` is the full buffer in bytes: the reduced
// buffer of an allreduce, the gathered output of an allgather, the scattered input of a
// reducescatter (the reference's `vol` of the same collective, in bytes instead of GB).
struct Measurement {
  CommType op = CommType::None;
  std::int64_t num_nodes = 0;
  std::int64_t gpus_per_node = 0;  // ranks per node; they share the node's NVLink domain
  double size_bytes = 0;
  double time_oop_s = 0;  // out-of-place
  double time_ip_s = 0;   // in-place

  std::int64_t n_gpus() const { return num_nodes * gpus_per_node; }
  // The time compared with and fitted to: the mean of the out-of-place and in-place runs.
  double measured_s() const { return 0.5 * (time_oop_s + time_ip_s); }
};

// The CSV with nccl-tests' columns (size, time-o, time-i, ...) plus num_nodes, gpus_per_node, op.
// Extra columns are ignored; a missing column or a malformed row throws InputError naming
// file:line.
std::vector<Measurement> read_measurements_csv(const std::filesystem::path& file);

// The standard output of one nccl-tests run. Table rows are
//   size count type [redop] [root] time algbw busbw #wrong time algbw busbw #wrong
// (times in microseconds); lines starting with '#' are comments, and lines that do not start with
// a digit are other programs' output (MPI, NCCL) and skipped. The collective comes from `op`, or
// else the "# Collective test starting: all_reduce_perf" header, or else the file name. A row that
// starts with a number but does not parse throws InputError naming file:line.
std::vector<Measurement> read_nccl_tests_output(const std::filesystem::path& file, std::int64_t num_nodes,
                                                std::int64_t gpus_per_node,
                                                std::optional<CommType> op = std::nullopt);

// A YAML list of nccl-tests outputs: [{file: PATH, num_nodes: N, gpus_per_node: G, op: OP}, ...]
// (op optional, as for read_nccl_tests_output; relative paths are relative to the manifest).
std::vector<Measurement> read_manifest(const std::filesystem::path& file);

// By extension: .csv -> read_measurements_csv, .yaml/.yml -> read_manifest. Anything else is
// an nccl-tests output and needs `num_nodes` and `gpus_per_node` (InputError without them).
std::vector<Measurement> read_measurements(const std::filesystem::path& file,
                                           std::optional<std::int64_t> num_nodes = std::nullopt,
                                           std::optional<std::int64_t> gpus_per_node = std::nullopt,
                                           std::optional<CommType> op = std::nullopt);

// The measurements whose num_nodes is in `nodes` (all of them when `nodes` is empty).
std::vector<Measurement> select_nodes(const std::vector<Measurement>& rows, const std::vector<std::int64_t>& nodes);

}  // namespace perfsweep::comm
