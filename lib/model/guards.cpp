#include "model/guards.hpp"

#include <cstdio>

#include "model/kernel_calibration.hpp"

namespace perfsweep {
namespace {
std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * fraction);
  return buf;
}
}  // namespace

std::vector<std::string> prediction_caveats(const std::string& what, const System& s, const Runtime& rt,
                                            std::int64_t n_gpus, const Efficiency& e, Precision precision) {
  std::vector<std::string> out;
  const std::string prec = kPrecisionNames[static_cast<std::size_t>(precision)];
  if (e.mfu_precision > 1) {
    out.push_back(what + ": MFU " + percent(e.mfu_precision) + " of " + s.name + "'s " + prec +
                  " peak is above 100%, which no GPU reaches: the system's peaks or the model's inputs are wrong");
  }
  if (rt.is_reference()) return out;
  if (!kernels_calibrated(s)) {
    out.push_back(what + ": " + s.name + " is " + calibration_status(s) +
                  (s.caveat.empty() ? "" : ", " + s.caveat) +
                  "; its predictions are not validated against measured runs (docs/validation.md)");
  }
  if (n_gpus > kLargestValidatedGpus) {
    out.push_back(what + ": " + std::to_string(n_gpus) + " GPUs is beyond the largest validated run (" +
                  std::to_string(kLargestValidatedGpus) + " H100s, MLPerf Training v4.0 GPT-3; docs/validation.md)");
  }
  if (e.mfu > kHighestMeasuredMfu && e.mfu_precision <= 1) {
    out.push_back(what + ": MFU " + percent(e.mfu) + " of the bf16 peak is above any measured run's (" +
                  percent(kHighestMeasuredMfu) + ", NVIDIA's GPT-3 175B FP8 on H100)");
  }
  return out;
}

}  // namespace perfsweep
