#include "search/estimate.hpp"

#include <optional>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "search/search.hpp"

namespace perfsweep {

Evaluation evaluate_request(EstimateRequest& r) {
  const std::int64_t cp = r.layout.tensor.cp;
  if (r.balance_stages) r.layout = with_balanced_stages(r.system, r.model, r.runtime, r.layout, r.global_batch);
  // Positivity of every degree is checked before placements are enumerated, the stages under the
  // runtime's partition; the precision against the runtime's recipe next, with the option lists
  // (check_runtime_choices: its message names the flag).
  Mechanisms stages;
  stages.stage_partition = r.runtime.mechanisms.stage_partition;
  validate_layout(r.system, r.model, r.layout, r.global_batch, stages);
  {
    ExecutionChoices one = choices_of(r.layout.exec, cp);
    check_runtime_choices(r.system, r.runtime, r.layout.strategy, one);
  }
  Evaluation ev;
  if (r.all_placed) {
    ev = evaluate(r.system, r.model, r.runtime, r.layout, r.global_batch);
  } else {
    std::optional<Evaluation> best = best_placement(r.system, r.model, r.layout, r.global_batch, r.placement,
                                                    r.runtime, r.balance_stages);
    if (!best) {
      throw ConfigError(no_placement_reason(r.layout, r.placement, r.system.nvlink_size));
    }
    ev = std::move(*best);
  }
  ev.budget = training_budget(ev.efficiency, r.layout.n_gpus(), r.global_batch, r.model.l, r.tokens, r.gpu_hour_cost);
  return ev;
}

}  // namespace perfsweep
