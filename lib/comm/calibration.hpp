#pragma once
// Fitting the calibrated collective model (model/comm_calibration.hpp: the model and how it
// predicts; config/calibration_file.hpp: its YAML file) to nccl-tests measurements.
#include <vector>

#include "comm/measurements.hpp"
#include "config/calibration_file.hpp"
#include "model/comm_calibration.hpp"

namespace perfsweep::comm {

// Fits the model to measurements of allreduce, allgather and reducescatter (repeated
// measurements of one point are averaged; single-GPU rows carry no communication and are
// skipped). Throws InputError if a node count of a placement has fewer than two message sizes.
Calibration fit(const std::vector<Measurement>& measurements);

}  // namespace perfsweep::comm
