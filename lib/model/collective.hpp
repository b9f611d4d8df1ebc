#pragma once
// Two-tier ring-collective timing, as in the reference's Estimates class (estimates.py:
// get_time_comm), and collectives timed from
// measurements where the system names a calibration.
#include <cstdint>
#include <string_view>

#include "model/system.hpp"

namespace perfsweep {

enum class CommType : std::uint8_t { None, AllReduce, AllGather, ReduceScatter, Reduce, Broadcast, P2P, AllToAll };

std::string_view comm_type_name(CommType type);  // the reference's spelling: "allreduce", "p2p", "none"

// Seconds for one collective of `volume_gb` GB over `n_gpus` GPUs, `fast_domain` of which share an
// NVLink domain (the rest of the ring crosses the slow network), by the reference's analytical
// model. Ring algorithm as NCCL runs it: (n-1)/n of the volume per GPU except for reduce and
// broadcast; allreduce costs twice on the two-tier path; one latency per ring step on each tier.
// All-to-all (MoE dispatch and combine): each GPU sends 1/n of its `volume_gb` to each of the
// other n-1; across domains the (n - fast)/n leaving the domain goes over the GPU's own NICs
// (no ring shares it) while (fast - 1)/n moves over NVLink, the slower bounding the time, with
// n-1 pairwise steps of latency as a ring has.
// With network tiers (System::network_tiers), `stride` places the group: its domains sit `stride`
// domains apart (1: adjacent; a pair for p2p: the distance between the two); see network_path.
// Throws ConfigError if fast_domain exceeds the system's NVLink domain, or for a p2p that is not
// between two GPUs.
double analytical_collective_seconds(const System& system, CommType type, double volume_gb, std::int64_t n_gpus,
                                     std::int64_t fast_domain, std::int64_t stride = 1);

// What the network tiers make of the slow part of a collective over `domains` NVLink domains
// `stride` domains apart (docs/network.md). The group crosses the innermost tier and, while it
// spans more domains than one unit of a tier joins ((domains - 1) stride + 1 > that tier's
// domains), the next: each ring step waits for its slowest link, so the latency per step is the
// outermost crossed tier's. Bandwidth: the groups of an axis run their collectives at once; a
// ring with m consecutive domains of its group in one unit of the tier below a crossed tier has
// one link per ring leaving that unit, so the unit's NICs send m times less across than they
// could, and an oversubscription o divides the NIC's bandwidth by max(1, o / m) (m = 1 where
// the group's domains are a unit or more apart); an all-to-all sends the share (1 - m / domains)
// of every NIC's data across, so max(1, o (1 - m / domains)). The largest divisor of the crossed
// tiers bounds the collective. Without tiers: ib_latency and a divisor of 1.
struct NetworkPath {
  double latency = 0;            // s per ring step across domains
  double bandwidth_divisor = 1;  // the slow network's per-NIC bandwidth is divided by it
};
NetworkPath network_path(const System& system, CommType type, std::int64_t domains, std::int64_t stride);
// One link between NVLink domains `from` and `to` (positions in the job, units of every tier
// aligned from domain 0), as a pipeline's stage boundaries use them all at once: the outermost
// tier whose units below hold the two apart sets the latency, each crossed tier's whole
// oversubscription divides the bandwidth (the largest bounds).
NetworkPath link_path(const System& system, std::int64_t from, std::int64_t to);

// Which model timed a collective.
enum class CommModel : std::uint8_t { Analytical, Calibrated };
std::string_view comm_model_name(CommModel model);  // "analytical", "calibrated"

struct CollectiveTime {
  double seconds = 0;
  CommModel model = CommModel::Analytical;
};

// A collective timed with `calibration` (may be null; model/comm_calibration.hpp) where it
// answers: an allreduce, allgather or reducescatter that moves data (volume > 0, two or more
// GPUs) in a placement (fast_domain = GPUs per node), node count (n_gpus / fast_domain) and
// message size (volume_gb * 1e9 bytes, nccl-tests' size) the calibration covers. Everything else
// by the analytical model, with its checks.
CollectiveTime collective_time(const System& system, const comm::Calibration* calibration, CommType type,
                               double volume_gb, std::int64_t n_gpus, std::int64_t fast_domain,
                               std::int64_t stride = 1);

// The cost model's collective time: with the system's calibration where it applies. Without
// one, exactly the analytical model (one null check on the hot path).
inline CollectiveTime collective_time(const System& system, CommType type, double volume_gb, std::int64_t n_gpus,
                                      std::int64_t fast_domain, std::int64_t stride = 1) {
  if (system.calibration == nullptr) [[likely]] {
    return {analytical_collective_seconds(system, type, volume_gb, n_gpus, fast_domain, stride),
            CommModel::Analytical};
  }
  return collective_time(system, system.calibration.get(), type, volume_gb, n_gpus, fast_domain, stride);
}

inline double collective_seconds(const System& system, CommType type, double volume_gb, std::int64_t n_gpus,
                                 std::int64_t fast_domain, std::int64_t stride = 1) {
  return collective_time(system, type, volume_gb, n_gpus, fast_domain, stride).seconds;
}

}  // namespace perfsweep
