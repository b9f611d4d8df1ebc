#pragma once
// Hardware description of one GPU system, with the reference's keys and units
// (systems/config-*.json of transformer-perf-estimates).
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace perfsweep {

// GB (1e9 bytes) per GiB: an HBM part's vendor "GB" is GiB (an H100 80GB holds 80 GiB).
inline constexpr double kGbPerGib = 1.073741824;

namespace comm {
struct Calibration;  // model/comm_calibration.hpp
}
namespace kernels {
struct Calibration;  // model/kernel_calibration.hpp
}

// What a layer pass runs as, for the roofline (model/roofline.hpp): each class has its own
// achieved compute and memory efficiency and launch cost.
enum class KernelClass : std::uint8_t { Gemm, Attention, Elementwise, Norm, Optimizer, Collective };
inline constexpr std::size_t kKernelClassCount = 6;
inline constexpr std::array<const char*, kKernelClassCount> kKernelClassNames{
    "gemm", "attention", "elementwise", "norm", "optimizer", "collective"};

// A kernel class's achieved fractions of the peaks and its fixed cost. The defaults are the
// reference's roofline: 80% of peak FLOP/s and 20 us per kernel (estimates.py get_time_flops),
// the full HBM bandwidth (get_time_mem).
struct KernelEfficiency {
  double compute = 0.8;         // fraction of the class's peak FLOP/s
  double memory = 1.0;          // fraction of hbm_bandwidth
  double launch_s = 20 * 1E-6;  // s per kernel, added to its compute time
};

// The network between NVLink domains as a job of many nodes sees it: per job node count, the bus
// bandwidth an all-reduce over all the job's GPUs reaches (nccl-tests' busbw, GB/s), measured on
// the cluster. A job of N > 1 domains is costed with the per-NIC bandwidth that makes the model's
// all-reduce over N full domains reach that bus bandwidth: bus / (nvlink_size x ib_eff) (one ring
// per NIC of a domain). Between two measured counts log-log interpolation, beyond the largest
// the last two counts' slope, below the smallest its value.
struct NetworkScaling {
  std::vector<std::int64_t> nodes;         // ascending, > 1
  std::vector<double> allreduce_bus_GBps;  // at each
  std::string source;                      // where the numbers come from
  double bus_GBps(std::int64_t job_nodes) const;
};

// One switch tier of the network between NVLink domains, innermost first (docs/network.md): a
// rack's or leaf group's switches, a pod's spine, a data center's aggregation layer. A collective
// whose group spans several units of the tier below crosses this tier: every ring step waits for
// its slowest link, so the step's latency is the outermost crossed tier's, and where a tier is
// oversubscribed the links that leave a unit below share its uplinks (model/collective.hpp).
struct NetworkTier {
  std::string name;
  std::int64_t domains = 0;       // NVLink domains one unit of the tier joins; 0: all (the outermost)
  double latency = 0;             // s per ring step whose slowest link crosses this tier
  double oversubscription = 1;    // bandwidth into a unit of the tier below over its uplinks into this tier
};

struct System {
  std::string name;                  // label, e.g. "A100"; the file stem by default
  double matrix_flops_fp16 = 0;      // TFLOP/s, tensor-core dense fp16/bf16
  double matrix_flops_fp8 = 0;       // TFLOP/s, tensor-core dense FP8 (e4m3/e5m2, per-tensor scales); 0: none
  double matrix_flops_mxfp8 = 0;     // TFLOP/s, tensor-core dense MXFP8 (per-32-element block scales); 0: none
  double matrix_flops_fp4 = 0;       // TFLOP/s, tensor-core dense NVFP4 (the nvfp4 recipe's GEMMs); 0: none
  double vector_flops_fp32 = 0;      // TFLOP/s, CUDA-core fp32 (recorded, not used by the model)
  double vector_flops_fp16 = 0;      // TFLOP/s, CUDA-core fp16
  double hbm_bandwidth = 0;          // GB/s
  double hbm_capacity = 0;           // GB
  // hbm_capacity written with a unit ("80 GiB", "80 GB"): exact, so a runtime that reads a bare
  // capacity as GiB (capacity_in_gib, the datasheets' "80GB") takes it as it is
  bool hbm_capacity_exact = false;
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
  // The host beside each GPU, for offload (docs/offload.md); 0: not given, and no offload.
  double host_bandwidth = 0;         // GB/s per GPU, one direction, GPU to host memory (PCIe, NVLink-C2C)
  double host_memory = 0;            // GB of host memory per GPU
  double host_cpu_bandwidth = 0;     // GB/s per GPU: host memory bandwidth of its share of the CPUs (CPU Adam)
  // Collective times fitted to the cluster's nccl-tests runs (`comm fit`), used for the
  // collectives, placements and sizes they cover (model/collective.hpp: collective_time). Null:
  // the analytical model alone, as in the reference. Shared and immutable, so copies are cheap.
  std::shared_ptr<const comm::Calibration> calibration;
  std::string calibration_file;      // the system file's `calibration:` value as written; "" if none
  // Kernel times fitted to this GPU kind's layer measurements (`validate fit-kernels`), used by
  // time_layer in place of the kernel-class roofline for the layers it covers. Null: the
  // reference's roofline. Shared and immutable, like `calibration`.
  std::shared_ptr<const kernels::Calibration> kernel_calibration;
  std::string kernels_file;          // the system file's `kernels:` value as written; "" if none
  // The runtime (runtimes/) a tool uses on this system when --runtime is not given; "" for the
  // reference's.
  std::string runtime;
  // Price of one GPU-hour (`gpu_hour_cost:`, any one currency; --gpu-hour-cost overrides it); 0:
  // none. Shipped files leave it unset: prices differ by provider, contract and year.
  double gpu_hour_cost = 0;
  // What a reader must know before trusting results on this system (`caveat:`): the paper's
  // hypothetical systems say so (an H200 with an NVLink domain of 64 is no product). Shown wherever
  // the system is listed or used; "" none.
  std::string caveat;
  // The network's bandwidth by job size (`network_scaling:`); null: ib_bandwidth at any scale.
  std::shared_ptr<const NetworkScaling> network_scaling;
  // The switch tiers between NVLink domains (`network_tiers:`), innermost first; empty: one tier,
  // ib_bandwidth and ib_latency between any two domains (the reference's network). Shared and
  // immutable, like `calibration`.
  std::shared_ptr<const std::vector<NetworkTier>> network_tiers;
  // Per kernel class, indexed by KernelClass.
  std::array<KernelEfficiency, kKernelClassCount> kernels{};
  const KernelEfficiency& kernel(KernelClass k) const { return kernels[static_cast<std::size_t>(k)]; }
};

// Whether the system's kernel times are fitted to measurements (a kernel calibration, `kernels:`):
// what `validate` has checked predictions against. Without one, the reference's roofline (80% of
// peak, the full HBM bandwidth) times every kernel.
inline bool kernels_calibrated(const System& s) { return s.kernel_calibration != nullptr; }
// "calibrated (kernels: calibrations/h100_kernels.yaml)", "collectives calibrated, kernels
// uncalibrated (roofline)", or "uncalibrated (roofline)": for tables, headers and HDF5 attributes.
std::string calibration_status(const System& s);
// The caveat and the calibration status in one phrase, for a line that names the system:
// "uncalibrated (roofline); the paper's hypothetical ..." ("" for a calibrated system without a caveat).
std::string system_caveat_text(const System& s);

// The system as a job of n_gpus sees it: with a network_scaling, ib_bandwidth set from the bus
// bandwidth measured at the job's node count (n_gpus / nvlink_size domains); else the system.
System at_scale(const System& s, std::int64_t n_gpus);

// The registry of numeric system keys, in the reference's key order: the one list that loading,
// writing (YAML, HDF5 attributes), hardware-sweep axes and tests go through. A key's range is
// what a physical system can have; values outside are refused where they are read. Fractions and
// sizes the model divides by or scales with are bounded away from zero (and so from denormals).
struct SystemKey {
  const char* name;
  double System::*member;
  const char* unit;
  bool required;     // must appear in a system file (optional keys default to System's initializers)
  double min;        // smallest accepted value
  bool min_open;     // min itself refused (a value must be > min)
  double max;        // largest accepted value
  bool sweepable;    // may be an axis of a hardware sweep
  const char* what;  // one line for documentation and HDF5 attribute descriptions
  // 0 is accepted besides [min, max]: the key's "none" (no FP8 tensor cores, no host link), whose
  // absence the model checks before it divides; any other value is held to the floor `min`.
  bool zero_means_none = false;
};
inline constexpr SystemKey kSystemKeys[] = {
    {.name = "matrix_flops_fp16", .member = &System::matrix_flops_fp16, .unit = "TFLOP/s", .required = true,
     .min = 1e-3, .min_open = false, .max = 1e7, .sweepable = true, .what = "tensor-core dense fp16/bf16 peak"},
    {.name = "matrix_flops_fp8", .member = &System::matrix_flops_fp8, .unit = "TFLOP/s", .required = false, .min = 1e-3,
     .min_open = false, .max = 1e7, .sweepable = false,
     .what = "tensor-core dense FP8 peak with per-tensor scales (0: no FP8 tensor cores)", .zero_means_none = true},
    {.name = "matrix_flops_mxfp8", .member = &System::matrix_flops_mxfp8, .unit = "TFLOP/s", .required = false,
     .min = 1e-3, .min_open = false, .max = 1e7, .sweepable = false,
     .what = "tensor-core dense MXFP8 peak, FP8 with per-32-element block scales in hardware (0: none)",
     .zero_means_none = true},
    {.name = "matrix_flops_fp4", .member = &System::matrix_flops_fp4, .unit = "TFLOP/s", .required = false, .min = 1e-3,
     .min_open = false, .max = 1e7, .sweepable = false,
     .what = "tensor-core dense NVFP4 peak, FP4 with per-16-element block scales, the nvfp4 recipe's GEMMs (0: none)",
     .zero_means_none = true},
    {.name = "vector_flops_fp32", .member = &System::vector_flops_fp32, .unit = "TFLOP/s", .required = false,
     .min = 1e-3, .min_open = false, .max = 1e7, .sweepable = true,
     .what = "CUDA-core fp32 peak (recorded, not used by the model)", .zero_means_none = true},
    {.name = "vector_flops_fp16", .member = &System::vector_flops_fp16, .unit = "TFLOP/s", .required = true,
     .min = 1e-3, .min_open = false, .max = 1e7, .sweepable = true, .what = "CUDA-core fp16 peak"},
    {.name = "hbm_bandwidth", .member = &System::hbm_bandwidth, .unit = "GB/s", .required = true, .min = 1e-3,
     .min_open = false, .max = 1e9, .sweepable = true, .what = "HBM bandwidth"},
    {.name = "hbm_capacity", .member = &System::hbm_capacity, .unit = "GB", .required = true, .min = 1e-3,
     .min_open = false, .max = 1e9, .sweepable = true, .what = "HBM capacity per GPU"},
    {.name = "nvlink_bandwidth", .member = &System::nvlink_bandwidth, .unit = "GB/s", .required = true, .min = 1e-3,
     .min_open = false, .max = 1e9, .sweepable = true, .what = "NVLink bandwidth per GPU, one direction"},
    {.name = "nvlink_eff", .member = &System::nvlink_eff, .unit = "1", .required = true, .min = 1e-6, .min_open = false,
     .max = 1, .sweepable = true, .what = "achievable fraction of nvlink_bandwidth"},
    {.name = "nvlink_latency", .member = &System::nvlink_latency, .unit = "s", .required = true, .min = 0,
     .min_open = false, .max = 1, .sweepable = true, .what = "latency per ring step on NVLink"},
    {.name = "ib_bandwidth", .member = &System::ib_bandwidth, .unit = "GB/s", .required = true, .min = 1e-3,
     .min_open = false, .max = 1e9, .sweepable = true,
     .what = "bandwidth per NIC on the network between NVLink domains"},
    {.name = "ib_eff", .member = &System::ib_eff, .unit = "1", .required = true, .min = 1e-6, .min_open = false,
     .max = 1, .sweepable = true, .what = "achievable fraction of ib_bandwidth"},
    {.name = "ib_latency", .member = &System::ib_latency, .unit = "s", .required = true, .min = 0, .min_open = false,
     .max = 1, .sweepable = true, .what = "latency per ring step across domains"},
    {.name = "nic_factor", .member = &System::nic_factor, .unit = "NICs per GPU", .required = false, .min = 1e-3,
     .min_open = false, .max = 1e3, .sweepable = true, .what = "NICs per GPU"},
    {.name = "element_size", .member = &System::element_size, .unit = "GB", .required = false, .min = 1e-12,
     .min_open = false, .max = 1e-6, .sweepable = false, .what = "size of one activation or weight element"},
    {.name = "mask_element_size", .member = &System::mask_element_size, .unit = "GB", .required = false, .min = 1e-12,
     .min_open = false, .max = 1e-6, .sweepable = false, .what = "size of one dropout-mask element"},
    {.name = "flops_units", .member = &System::flops_units, .unit = "TFLOP per flop", .required = false, .min = 1e-15,
     .min_open = false, .max = 1, .sweepable = false, .what = "TFLOP per counted flop"},
    {.name = "host_bandwidth", .member = &System::host_bandwidth, .unit = "GB/s", .required = false, .min = 1e-3,
     .min_open = false, .max = 1e6, .sweepable = true,
     .what = "GPU to host memory bandwidth per GPU, one direction (PCIe, NVLink-C2C; 0: no host link, no offload)",
     .zero_means_none = true},
    {.name = "host_memory", .member = &System::host_memory, .unit = "GB", .required = false, .min = 1e-3,
     .min_open = false, .max = 1e6, .sweepable = true, .what = "host memory per GPU (offload)",
     .zero_means_none = true},
    {.name = "host_cpu_bandwidth", .member = &System::host_cpu_bandwidth, .unit = "GB/s", .required = false,
     .min = 1e-3, .min_open = false, .max = 1e6, .sweepable = true,
     .what = "host memory bandwidth of a GPU's share of the CPUs (the host optimizer step of offload)",
     .zero_means_none = true},
};

// The key named `name`, or null.
inline const SystemKey* find_system_key(std::string_view name) {
  for (const SystemKey& k : kSystemKeys) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

// Whether v lies in the key's range, or is its "none" (NaN never does).
inline bool in_range(const SystemKey& k, double v) {
  return (k.zero_means_none && v == 0) || ((k.min_open ? v > k.min : v >= k.min) && v <= k.max);
}

}  // namespace perfsweep
