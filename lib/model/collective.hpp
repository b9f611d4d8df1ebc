#pragma once
// Roofline and two-tier ring-collective timing, as in the reference's Estimates class
// (estimates.py: get_time_flops, get_time_mem, get_time_comm).
#include <cstdint>
#include <string_view>

#include "model/system.hpp"

namespace perfsweep {

enum class CommType : std::uint8_t { None, AllReduce, AllGather, ReduceScatter, Reduce, Broadcast, P2P };

std::string_view comm_type_name(CommType type);  // the reference's spelling: "allreduce", "p2p", "none"

// Seconds to execute `tflop` TFLOP on tensor cores (or vector units): 20 us launch overhead plus
// the work at 80% of peak.
double compute_seconds(const System& system, double tflop, bool tensor_cores);

// Seconds to stream `gigabytes` through HBM.
double memory_seconds(const System& system, double gigabytes);

// Seconds for one collective of `volume_gb` GB over `n_gpus` GPUs, `fast_domain` of which share an
// NVLink domain (the rest of the ring crosses the slow network). Ring algorithm as NCCL runs it:
// (n-1)/n of the volume per GPU except for reduce and broadcast; allreduce costs twice on the
// two-tier path; one latency per ring step on each tier. Throws ConfigError if fast_domain exceeds
// the system's NVLink domain, or for a p2p that is not between two GPUs.
double collective_seconds(const System& system, CommType type, double volume_gb, std::int64_t n_gpus,
                          std::int64_t fast_domain);

}  // namespace perfsweep
