#pragma once
// Hardware description of one GPU system, with the reference's keys and units
// (systems/config-*.json of transformer-perf-estimates).
#include <cstdint>
#include <memory>
#include <string>

namespace perfsweep {

namespace comm {
struct Calibration;  // model/comm_calibration.hpp
}

struct System {
  std::string name;                  // label, e.g. "A100"; the file stem by default
  double matrix_flops_fp16 = 0;      // TFLOP/s, tensor-core dense fp16/bf16
  double vector_flops_fp32 = 0;      // TFLOP/s, CUDA-core fp32 (recorded, not used by the model)
  double vector_flops_fp16 = 0;      // TFLOP/s, CUDA-core fp16
  double hbm_bandwidth = 0;          // GB/s
  double hbm_capacity = 0;           // GB
  double nvlink_bandwidth = 0;       // GB/s per GPU, unidirectional, in the fast (NVLink) domain
  double nvlink_eff = 0;             // achievable fraction of nvlink_bandwidth
  double nvlink_latency = 0;         // s per ring step inside the fast domain
  double ib_bandwidth = 0;           // GB/s per NIC on the slow network (InfiniBand, Slingshot)
  double ib_eff = 0;                 // achievable fraction of ib_bandwidth
  double ib_latency = 0;             // s per ring step across fast domains
  std::int64_t nvlink_size = 1;      // GPUs per fast (NVLink) domain
  double nic_factor = 1;             // NICs per GPU (may be fractional, e.g. 0.5)
  bool empirical = false;            // reference switch for measured collectives (must be false)
  std::int64_t summa_nb = 4;         // default SUMMA block count (the 2d search overrides it)
  double element_size = 2e-9;        // GB per activation/weight element (fp16: 2 bytes)
  double mask_element_size = 1e-9;   // GB per dropout-mask element (1 byte)
  double flops_units = 1e-12;        // TFLOP per flop: all flop counts are in TFLOP
  // Collective times fitted to the cluster's nccl-tests runs (`comm fit`), used for the
  // collectives, placements and sizes they cover (model/collective.hpp: collective_time). Null:
  // the analytical model alone, as in the reference. Shared and immutable, so copies are cheap.
  std::shared_ptr<const comm::Calibration> calibration;
  std::string calibration_file;      // the system file's `calibration:` value as written; "" if none
};

// The numeric parameters in the reference's key order, for writers and readers of every format.
struct SystemNumberField {
  const char* name;
  double System::*member;
  const char* unit;
};
inline constexpr SystemNumberField kSystemNumberFields[] = {
    {"matrix_flops_fp16", &System::matrix_flops_fp16, "TFLOP/s"},
    {"vector_flops_fp32", &System::vector_flops_fp32, "TFLOP/s"},
    {"vector_flops_fp16", &System::vector_flops_fp16, "TFLOP/s"},
    {"hbm_bandwidth", &System::hbm_bandwidth, "GB/s"},
    {"hbm_capacity", &System::hbm_capacity, "GB"},
    {"nvlink_bandwidth", &System::nvlink_bandwidth, "GB/s"},
    {"nvlink_eff", &System::nvlink_eff, "1"},
    {"nvlink_latency", &System::nvlink_latency, "s"},
    {"ib_bandwidth", &System::ib_bandwidth, "GB/s"},
    {"ib_eff", &System::ib_eff, "1"},
    {"ib_latency", &System::ib_latency, "s"},
    {"nic_factor", &System::nic_factor, "NICs per GPU"},
    {"element_size", &System::element_size, "GB"},
    {"mask_element_size", &System::mask_element_size, "GB"},
    {"flops_units", &System::flops_units, "TFLOP per flop"},
};

}  // namespace perfsweep
