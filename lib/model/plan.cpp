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

std::string config_key_names(Strategy strategy, KeyKind kind) {
  std::string out;
  const StrategyPlan& plan = plan_of(strategy);
  for (const ConfigKey& k : kConfigKeys) {
    if (k.kind != kind || !k.applies(plan)) continue;
    if (!out.empty()) out += ',';
    out += k.name;
  }
  return out;
}

}  // namespace perfsweep
