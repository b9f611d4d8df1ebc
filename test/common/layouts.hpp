#pragma once
// Layouts the tests build by hand.
#include <cstdint>

#include "model/plan.hpp"

namespace perfsweep::test {

// 1d tensor parallelism over tp GPUs, dp data-parallel replicas, pp pipeline stages; the rest as
// Layout's defaults (micro-batch 1, every group placed by the caller or left at 1).
inline Layout one_d(std::int64_t tp, std::int64_t dp, std::int64_t pp) {
  Layout c;
  c.tensor.tp1 = tp;
  c.dp = dp;
  c.pp = pp;
  return c;
}

}  // namespace perfsweep::test
