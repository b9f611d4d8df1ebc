#pragma once
// The one configuration `estimate` costs, as its flags describe it, and its evaluation: what
// `estimate` prints and what `validate runs` compares with each measured run of a validation set
// (apps/common/estimate_options.hpp turns estimate's flags into a request; docs/validation.md).
#include <cstdint>

#include "model/runtime.hpp"
#include "model/step.hpp"
#include "model/system.hpp"
#include "model/transformer.hpp"
#include "search/configs.hpp"

namespace perfsweep {

struct EstimateRequest {
  Transformer model;
  System cluster;     // the system as read, with --nvs applied
  System system;      // the cluster at the job's scale (at_scale): what is evaluated
  Runtime runtime;
  // Degrees, micro-batch, execution options, attention and the NVLink shares given.
  Layout layout;
  std::int64_t global_batch = 0;
  // The NVLink shares given by axis, and whether the runtime's rank order places the others
  // (a framework's runtime with no share given) instead of the fastest of the reference's search.
  PlacementChoice placement;
  // Every placed axis's share given (an axis at its reference degree needs none): the layout as
  // given, no placement chosen.
  bool all_placed = false;
  // --first-stage-blocks / --last-stage-blocks auto: the partition that balances the slowest stage.
  bool balance_stages = false;
  // --tokens and --gpu-hour-cost: the training budget beside the step (0: none).
  double tokens = 0, gpu_hour_cost = 0;
};

// Checks the request's layout against its system, model and runtime (ConfigError for one the
// model cannot cost, InputError for a choice the runtime does not run) and evaluates it: as given
// where every share is given, else with the placement the rank order makes or the fastest the
// reference's search tries. `request.layout` becomes the layout evaluated (its stages and
// placement). ConfigError where no placement keeps the given shares.
Evaluation evaluate_request(EstimateRequest& request);

}  // namespace perfsweep
