#pragma once
// The layer measurements' shapes (test/data/gpu/h100_layers.json) with the times a calibration
// predicts for them (validate_layers): measurements made by the model, for the fits' tests.
#include <memory>
#include <vector>

#include "calib/layer_measurements.hpp"
#include "calib/layer_validation.hpp"

namespace perfsweep::calib::test {

inline std::vector<LayerConfig> synthetic_layers(System s, const kernels::Calibration& cal) {
  s.kernel_calibration = std::make_shared<const kernels::Calibration>(cal);
  std::vector<LayerConfig> configs = read_layer_measurements(PERFSWEEP_TEST_DATA_DIR "/gpu/h100_layers.json");
  for (LayerConfig& c : configs) {
    const std::vector<ValidationRow> rows = validate_layers(s, {c});
    std::size_t i = 0;
    for (std::size_t layer = 0; layer < c.layer_s.size(); ++layer) {
      c.layer_s[layer][0] = rows[i++].predicted_s;
      c.layer_s[layer][1] = rows[i++].predicted_s;
    }
    c.block_s = {rows[i].predicted_s, rows[i + 1].predicted_s};
  }
  return configs;
}

}  // namespace perfsweep::calib::test
