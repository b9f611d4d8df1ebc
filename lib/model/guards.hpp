#pragma once
// Why a prediction should not be taken at its word: the checks every tool runs on what it
// recommends (estimate's configuration, configs' first row, a sweep's best), each a sentence for
// a warning. What the model has been checked against is docs/validation.md's: kernel times fitted
// to H100 measurements (and carried to Blackwell by the spec sheets), whole steps of the runs
// published by NVIDIA and MLPerf up to 11,616 GPUs, measured model FLOP utilization up to 94% of
// the bf16 peak (NVIDIA's GPT-3 175B FP8 on H100). The reference runtime reproduces the paper's
// model, which is checked against the paper's outputs, not measured runs: only the 100% check
// applies to it.
#include <cstdint>
#include <string>
#include <vector>

#include "model/efficiency.hpp"
#include "model/runtime.hpp"
#include "model/system.hpp"

namespace perfsweep {

// The largest GPU count of a run the model is validated on (MLPerf Training v4.0 GPT-3 on 11,616
// H100s, validation/mlperf/runs.csv; docs/validation.md, MLPerf Training).
inline constexpr std::int64_t kLargestValidatedGpus = 11616;
// The highest model FLOP utilization (of the dense bf16 peak) of a measured run (NVIDIA's published
// GPT-3 175B FP8 on H100: 932 model TFLOP/s of 989.4; test/data/published/nemo_h100.csv).
inline constexpr double kHighestMeasuredMfu = 932.0 / 989.4;

// The sentences that apply, empty when none: MFU above 100% of the precision's own peak (the
// system's peaks or the model are wrong); under a framework's runtime also a system without a
// kernel calibration, a GPU count beyond kLargestValidatedGpus and an MFU above
// kHighestMeasuredMfu. `what` names the prediction ("configuration 1", "H100-NVS8 at 512 GPUs").
std::vector<std::string> prediction_caveats(const std::string& what, const System& system, const Runtime& runtime,
                                            std::int64_t n_gpus, const Efficiency& efficiency, Precision precision);

}  // namespace perfsweep
