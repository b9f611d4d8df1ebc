#pragma once
// The rules a layout must follow to be costed: the model's, the system's and the runtime's.
#include <cstdint>

#include "model/plan.hpp"
#include "model/runtime.hpp"

namespace perfsweep {

// Checks the layout against the model (divisibility, NVLink sizes), throwing ConfigError with a
// readable reason when the reference could not express it.
void validate_layout(const System& s, const Transformer& m, const Layout& layout, std::int64_t global_batch);

// The runtime's checks of a layout (strategies and ZeRO stages it runs), ConfigError otherwise.
void validate_runtime_layout(const Runtime& rt, const Layout& layout);

}  // namespace perfsweep
