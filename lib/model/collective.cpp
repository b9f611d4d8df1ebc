#include "model/collective.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.hpp"
#include "model/comm_calibration.hpp"

namespace perfsweep {

std::string_view comm_type_name(CommType type) {
  switch (type) {
    case CommType::None: return "none";
    case CommType::AllReduce: return "allreduce";
    case CommType::AllGather: return "allgather";
    case CommType::ReduceScatter: return "reducescatter";
    case CommType::Reduce: return "reduce";
    case CommType::Broadcast: return "broadcast";
    case CommType::P2P: return "p2p";
    case CommType::AllToAll: return "alltoall";
  }
  return "none";
}

NetworkPath network_path(const System& system, CommType type, std::int64_t domains, std::int64_t stride) {
  NetworkPath path{system.ib_latency, 1.0};
  if (system.network_tiers == nullptr) return path;
  const std::int64_t step = std::max<std::int64_t>(stride, 1);
  const std::int64_t span = (domains - 1) * step + 1;
  std::int64_t below = 1;  // domains per unit of the tier below: an NVLink domain first
  for (const NetworkTier& tier : *system.network_tiers) {
    // the group's consecutive domains in one unit of the tier below
    const std::int64_t m = step >= below ? 1 : std::min(domains, below / step);
    const double share = type == CommType::AllToAll
                             ? tier.oversubscription * (1 - static_cast<double>(m) / static_cast<double>(domains))
                             : tier.oversubscription / static_cast<double>(m);
    path.bandwidth_divisor = std::max(path.bandwidth_divisor, share);
    path.latency = tier.latency;
    if (tier.domains == 0 || span <= tier.domains) break;  // inside one unit of this tier
    below = tier.domains;
  }
  return path;
}

NetworkPath link_path(const System& system, std::int64_t from, std::int64_t to) {
  NetworkPath path{system.ib_latency, 1.0};
  if (system.network_tiers == nullptr) return path;
  std::int64_t below = 1;
  for (const NetworkTier& tier : *system.network_tiers) {
    if (from / below == to / below) break;  // the same unit of the tier below: this tier not crossed
    path.bandwidth_divisor = std::max(path.bandwidth_divisor, tier.oversubscription);
    path.latency = tier.latency;
    if (tier.domains == 0) break;
    below = tier.domains;
  }
  return path;
}

double analytical_collective_seconds(const System& system, CommType type, double volume_gb, std::int64_t n_gpus,
                                     std::int64_t fast_domain, std::int64_t stride) {
  if (std::isnan(volume_gb) || volume_gb == 0) return 0;
  if (fast_domain > system.nvlink_size) {
    throw ConfigError("collective over " + std::to_string(fast_domain) + " GPUs of an NVLink domain of " +
                      std::to_string(system.nvlink_size));
  }
  if (n_gpus == 1) return 0;

  // "nodes" are NVLink domains: fast_domain GPUs of the group sit in each.
  const std::int64_t domains = n_gpus / fast_domain;
  double slow_latency = system.ib_latency;
  const double fast_latency = system.nvlink_latency;
  double slow_bw = system.ib_bandwidth * system.ib_eff;
  const double fast_bw = system.nvlink_bandwidth * system.nvlink_eff;
  if (system.network_tiers != nullptr) [[unlikely]] {
    // a p2p "over one GPU" (the reference's slow pipeline link) stays free, as the reference has it
    const NetworkPath path = network_path(system, type, type == CommType::P2P ? 2 : domains, stride);
    slow_latency = path.latency;
    slow_bw /= path.bandwidth_divisor;
  }

  if (type == CommType::P2P) {
    if (n_gpus != 2) throw ConfigError("p2p communication is between a pair of GPUs, got " + std::to_string(n_gpus));
    if (fast_domain == 1) return slow_latency * static_cast<double>(n_gpus - 1) + volume_gb / slow_bw;
    return fast_latency * static_cast<double>(n_gpus - 1) + volume_gb / fast_bw;
  }

  const double latency_slow = slow_latency * static_cast<double>(domains - 1);
  const double latency_fast = fast_latency * static_cast<double>(n_gpus - domains);
  if (type == CommType::AllToAll) {
    const double n = static_cast<double>(n_gpus);
    const double others = (n - 1) / n * volume_gb;
    if (fast_domain == 1) return slow_latency * (n - 1) + others / slow_bw;
    if (domains == 1) return fast_latency * (n - 1) + others / fast_bw;
    const double leaving = (n - static_cast<double>(fast_domain)) / n * volume_gb;
    const double staying = static_cast<double>(fast_domain - 1) / n * volume_gb;
    return std::max(leaving / (system.nic_factor * slow_bw), staying / fast_bw) + latency_slow + latency_fast;
  }

  // Ring: each GPU moves (n-1)/n of the buffer; reduce and broadcast are pipelined chains.
  const bool chain = type == CommType::Reduce || type == CommType::Broadcast;
  const double correction = chain ? 1.0 : static_cast<double>(n_gpus - 1) / static_cast<double>(n_gpus);

  if (fast_domain == 1) return slow_latency * static_cast<double>(n_gpus - 1) + correction * volume_gb / slow_bw;
  if (domains == 1) return fast_latency * static_cast<double>(n_gpus - 1) + correction * volume_gb / fast_bw;

  // Several domains: one ring per NIC of a domain runs over the slow network while the domain's
  // share moves over NVLink; the slower of the two bounds the collective.
  const double rings = system.nic_factor * static_cast<double>(fast_domain);
  const double t_slow = correction * volume_gb / (rings * slow_bw);
  const double t_fast = correction * volume_gb / fast_bw;
  double t = std::max(t_slow, t_fast);
  if (type == CommType::AllReduce) t *= 2;  // reduce-scatter + all-gather
  t += (latency_slow + latency_fast);
  return t;
}

std::string_view comm_model_name(CommModel model) {
  return model == CommModel::Calibrated ? "calibrated" : "analytical";
}

CollectiveTime collective_time(const System& system, const comm::Calibration* calibration, CommType type,
                               double volume_gb, std::int64_t n_gpus, std::int64_t fast_domain, std::int64_t stride) {
  constexpr double kBytesPerGB = 1e9;
  // fast_domain <= nvlink_size: a placement the analytical model refuses stays an error.
  if (calibration != nullptr && comm::is_calibrated_op(type) && n_gpus > 1 && volume_gb > 0 &&
      fast_domain <= system.nvlink_size) {
    if (const auto t = comm::predict(*calibration, type, volume_gb * kBytesPerGB, n_gpus, fast_domain)) {
      return {*t, CommModel::Calibrated};
    }
  }
  return {analytical_collective_seconds(system, type, volume_gb, n_gpus, fast_domain, stride), CommModel::Analytical};
}

}  // namespace perfsweep
