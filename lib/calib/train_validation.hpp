#pragma once
// Whole training steps against their measurements (`validate train`): each run of
// validation/gpu/h100_train.json predicted by the step composition (model/step.hpp: evaluate)
// under the pytorch_amp runtime on one GPU, and the allocator's reserve fitted to part of them.
#include <string>
#include <vector>

#include "calib/run_inputs.hpp"
#include "calib/step_measurements.hpp"
#include "model/plan.hpp"
#include "model/system.hpp"

namespace perfsweep::calib {

struct TrainRow {
  std::string id;
  bool oom_measured = false;
  double measured_step_s = 0, predicted_step_s = 0;    // measured 0 for a run out of memory
  double measured_peak_gb = 0, predicted_peak_gb = 0;  // allocated; measured: where it stopped when oom
  bool fits_predicted = false;
};

std::vector<TrainRow> validate_train(const System& system, const std::vector<TrainRun>& runs);
// A measured step's layout: one GPU, its micro-batch, recompute none or full, no ZeRO.
Layout train_layout(const TrainRun& run);
// The runs as estimate evaluates them under `runtime` (the pytorch_amp runtime validate_train
// uses), for write_inputs (`validate train --inputs DIR`).
std::vector<RunInput> train_inputs(const std::vector<TrainRun>& runs, const Runtime& runtime);

// CSV `id,measured_step_s,predicted_step_s,measured_peak_gb,predicted_peak_gb,oom_measured,fits_predicted`,
// the step values empty for a run that ran out of memory; predictions with 17 significant digits.
std::string train_csv(const std::vector<TrainRow>& rows);
// count, median, p90 and max |relative error| of the step time and the peak memory (runs that
// did not run out of memory), and how many runs fits_predicted gets right (fits = no OOM).
std::string train_summary(const std::vector<TrainRow>& rows);

// The allocator's reserve: the median over the runs that did not run out of memory of
// peak_reserved / peak_allocated - 1 (a median, so one fragmented run does not set it).
double fit_allocator_reserve(const std::vector<TrainRun>& runs);

}  // namespace perfsweep::calib
