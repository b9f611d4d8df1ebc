#pragma once
// A collective-time model calibrated from a cluster's own nccl-tests runs: the data and the
// prediction (pure computation, used by the cost model through System::calibration). Fitting and
// measurements live in lib/comm, the YAML file format in lib/config/calibration_file.
//
// NCCL runs allgather and reducescatter as a ring of n - 1 steps and allreduce as 2 (n - 1) steps
// (reduce-scatter, then all-gather); in every step each GPU forwards one chunk of size / n bytes.
// So a measurement of `size` bytes over n GPUs is read as
//     t = overhead + ring_steps(n) * step_time(chunk = size / n)
// and the calibration stores, for every collective, placement (GPUs per node) and measured node
// count, the per-step time as a table over chunk sizes. A prediction looks the chunk up in the
// tables of the two measured node counts around the one asked for and interpolates log step time
// linearly in log node count; message-size features (NCCL's protocol switches, pipelining) live at
// fixed chunk sizes, so they line up across node counts. The step time varies far less across node
// counts than the total does, which keeps the interpolation accurate and the extrapolation tame:
//   - below the smallest measured message: the time of the smallest (latency bound);
//   - chunks below a table's range (when interpolating between node counts): the first
//     segment's log-log slope clamped to [0, 1]; above it: proportional to the chunk (bandwidth
//     bound);
//   - beyond the largest measured node count: a ring step costs at most what it did at the last
//     node count (log-log slope between the last two clamped to [-1, 0]; [0, 0] for allreduce,
//     whose step time falls only where NCCL switched to its tree). For allreduce the time is
//     also bounded by the time at the same size growing linearly in log(nodes), the tree, and
//     the faster of the two is used (NCCL picks the faster algorithm).
// The fixed overhead of a call (launch, proxy set-up) is fitted by least squares on the
// multi-node ring collectives, where it separates from the per-step cost through the different
// step counts at equal chunk size.
//
// The namespace names the feature (communication calibration) across lib/model, lib/config and
// lib/comm.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/collective.hpp"

namespace perfsweep::comm {

// "allreduce", "all_reduce", "all_reduce_perf" (and the same for allgather, reducescatter) ->
// the collective; nullopt for any other name. Case-insensitive.
std::optional<CommType> parse_collective_name(std::string_view name);

// Ring steps of one collective over n GPUs: n - 1 (allgather, reducescatter), 2 (n - 1)
// (allreduce). 0 for the collectives this model does not calibrate.
double ring_steps(CommType op, std::int64_t n_gpus);

// Whether the model can be calibrated for this collective (allreduce, allgather, reducescatter).
constexpr bool is_calibrated_op(CommType op) {
  return op == CommType::AllReduce || op == CommType::AllGather || op == CommType::ReduceScatter;
}

// Per-step times measured at one node count.
struct StepTable {
  std::int64_t num_nodes = 0;
  double overhead_s = 0;            // fixed cost of a call at this node count
  std::vector<double> chunk_bytes;  // size / n_gpus, strictly ascending, at least two
  std::vector<double> step_s;       // (measured - overhead_s) / ring_steps, > 0
};

// One collective on one placement: `gpus_per_node` GPUs of every node, sharing its NVLink domain.
struct PlacementCalibration {
  CommType op = CommType::None;
  std::int64_t gpus_per_node = 0;
  double min_size_bytes = 0;  // measured message-size range
  double max_size_bytes = 0;
  // Alpha-beta summary of the tables (weighted least squares of step time vs chunk over the
  // multi-node tables): step time ~ step_latency_s + chunk / (step_bandwidth_GBps * 1e9).
  // Reported, not used to predict; 0 when the data do not determine it.
  double step_latency_s = 0;
  double step_bandwidth_GBps = 0;
  std::vector<StepTable> tables;  // strictly ascending num_nodes

  std::int64_t min_nodes() const { return tables.front().num_nodes; }
  std::int64_t max_nodes() const { return tables.back().num_nodes; }
};

struct Calibration {
  std::string source;        // what it was fitted from (informational)
  double overhead_s = 0;     // fitted fixed cost of a multi-node call, s
  // How far outside the measured range predict() answers: node counts up to
  // node_extrapolation x the largest measured, sizes within [min / size_extrapolation,
  // max x size_extrapolation].
  double node_extrapolation = 4;
  double size_extrapolation = 16;
  std::vector<PlacementCalibration> placements;

  // Provenance, set by load_calibration: the file read, as opened, and its bytes (echoed into
  // outputs and run fingerprints). Empty for a calibration fitted in memory.
  std::string file;
  std::string file_text;

  const PlacementCalibration* find(CommType op, std::int64_t gpus_per_node) const;
};

// Seconds for a collective of `bytes` (nccl-tests' size: the full buffer) over `n_gpus`, of which
// `fast_domain` share each node. nullopt if the collective or placement is not calibrated,
// n_gpus is not a multiple of fast_domain, or the node count or size lies outside the range the
// calibration answers for. 0 for zero bytes or a single GPU. Allocates nothing.
std::optional<double> predict(const Calibration& calibration, CommType op, double bytes, std::int64_t n_gpus,
                              std::int64_t fast_domain);

}  // namespace perfsweep::comm
