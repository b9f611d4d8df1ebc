#pragma once
// Predicted against measured collective times: per-row comparison and relative-error summaries
// (`comm validate`).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "comm/calibration.hpp"
#include "comm/measurements.hpp"
#include "model/system.hpp"

namespace perfsweep::comm {

struct ValidationRow {
  Measurement measurement;
  std::optional<double> predicted_s;  // nullopt: no model answers for this row
  std::string model;                  // "calibrated", "analytical" or "none"

  // |predicted / measured - 1|; nullopt without a prediction.
  std::optional<double> relative_error() const;
};

// Predicts every measurement: with `calibration` where it answers, else with the analytical model
// of `system` (the collective over num_nodes x gpus_per_node GPUs, fast domain gpus_per_node,
// volume = size). Either pointer may be null.
std::vector<ValidationRow> validate(const std::vector<Measurement>& measurements, const System* system,
                                    const Calibration* calibration);

// Median and 90th percentile (linear interpolation between order statistics, as numpy's
// default) of relative errors.
struct ErrorStats {
  std::size_t count = 0;
  double median = 0;
  double p90 = 0;
};
ErrorStats error_stats(std::vector<double> relative_errors);

// Message-size band of nccl-tests' size: "<1MiB", "1MiB-64MiB", "64MiB-1GiB", ">=1GiB".
std::string size_band(double bytes);

// CSV with header op,num_nodes,gpus_per_node,size_bytes,measured_s,predicted_s,rel_error,model.
std::string validation_csv(const std::vector<ValidationRow>& rows);

// Human-readable summary: all rows, then by op, GPUs per node, size band, node count and model.
std::string validation_summary(const std::vector<ValidationRow>& rows);

}  // namespace perfsweep::comm
