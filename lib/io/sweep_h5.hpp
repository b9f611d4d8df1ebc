#pragma once
// The sweep's HDF5 output (schema "perfsweep/1"), mirroring the reference's npy outputs:
//   /                         schema, software_version, git_commit, host, created, command_line,
//                             n_ranks, strategy, model, global_batch_size, top_n, n_gpus_searched
//   /model                    the model's parameters as attributes
//   /provenance/model.yaml, /provenance/systems/<group>.yaml   resolved inputs as text
//   /<name>-NVS<nvs>          attributes nvs, every system parameter, and comm_model
//                             ("analytical", or "calibrated: <file>" with calibration_file,
//                             calibration_fnv1a and the file itself as calibration_yaml);
//       n_gpus, t_max, t_min  the npy's lists (GPU counts from the first feasible one; best and
//                             N-th best throughput of each feasible count)
//       top/<column>          one row per (GPU count, rank): n_gpus, rank, throughput, mem, the
//                             strategy's config keys, every totals() stat and nv_* key (under a
//                             runtime its totals and efficiency; searching offload, its totals);
//                             top/count
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "model/efficiency.hpp"
#include "model/step.hpp"
#include "search/sweep_target.hpp"

namespace perfsweep {

struct RunMetadata {
  std::string software_version;
  std::string git_commit;  // "" when not built from a repository
  std::string host;
  std::string created;  // ISO 8601 UTC
  std::string command_line;
  std::int64_t n_ranks = 1;
  Strategy strategy = Strategy::OneD;
  Transformer model;
  std::string model_yaml;
  std::int64_t global_batch = 4096;
  std::int64_t top_n = 10;
  std::vector<std::int64_t> n_gpus;  // GPU counts searched
  double tokens = 0;     // a token budget (0: none asked)
  GpuHourPrices prices;  // each system's price of a GPU-hour (GpuHourPrices::for_system; 0: none)
  bool offload = false;  // the search's choices offload (--offload other than none): top/ has its totals
};

void write_run_metadata(hid_t file, const RunMetadata& meta);

// One system (or sweep point): attributes, the npy lists and the top/ table.
// Under a runtime, also the runtime's totals and the efficiency columns (tokens/s per GPU, model
// TFLOP/s per GPU, MFU) of the run's model and global batch.
void write_target_group(hid_t group, const System& system, const RunMetadata& meta, const std::vector<TopN>& tops,
                        const Runtime& runtime = reference_runtime());

// The whole file of a plain sweep, published atomically (core/files.hpp): on failure (H5Error,
// IoError) no file appears at `path` and an earlier one is left as it was.
void write_sweep_file(const std::string& path, const RunMetadata& meta, const std::vector<SweepTarget>& targets,
                      const std::vector<TargetResult>& results, const std::vector<std::string>& system_yaml);

}  // namespace perfsweep
