#pragma once
// Per-layer GPU measurements in the format of validation/gpu/h100_layers.json (measure_layers.py):
// `configs[i].cfg` = {id, b, l, e, f, h, tp}, `configs[i].layers[NAME]` = [forward_s, backward_s]
// for the 1D block's layers at one tensor-parallel shard's shapes, and `block` for the whole block.
#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace perfsweep::calib {

struct LayerConfig {
  std::string id;
  std::int64_t b = 0, l = 0, e = 0, f = 0, h = 0, tp = 1;  // micro-batch, sequence, embed, MLP hidden, heads
  std::vector<std::string> layer_names;                   // in the 1D block's order (model/block.cpp)
  std::vector<std::array<double, 2>> layer_s;             // [fwd, bwd] seconds, one per name
  std::array<double, 2> block_s{};                        // the whole block, [fwd, bwd]
};

// Reads and checks everything: each entry's cfg fields are positive integers (tp dividing h, e
// and f), every layer of the flash-attention 1D block and `block` are present as two finite,
// positive seconds. Other entries (fusedla:<backend>, block_compiled, block_saved_bytes) are
// ignored. Errors are InputErrors naming file, entry and field.
std::vector<LayerConfig> read_layer_measurements(const std::filesystem::path& file);

// The configurations whose id is (keep = true) or is not (keep = false) in the comma-separated
// `ids`; every listed id must exist.
std::vector<LayerConfig> select_configs(const std::vector<LayerConfig>& configs, const std::string& ids, bool keep);

}  // namespace perfsweep::calib
