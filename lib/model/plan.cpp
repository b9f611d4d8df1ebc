#include "model/plan.hpp"

namespace perfsweep {

const StrategyPlan& plan_of(Strategy strategy) {
  static constexpr StrategyPlan kPlans[] = {
      {Strategy::OneD, "1d", "tp", "nv_tp", false, false, false, false},
      {Strategy::TwoD, "2d", "tp1", "nv_tp1", true, true, true, false},
      {Strategy::TwoDSeqp, "2d-seqp", "tp1", "nv_tp1", true, false, false, true},
  };
  return kPlans[static_cast<std::size_t>(strategy)];
}

}  // namespace perfsweep
