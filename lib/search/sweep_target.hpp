#pragma once
// A sweep's units of result: one search problem (a system, or a point of a hardware sweep) and
// its best configurations at every GPU count. Plain data shared by lib/io (writing) and
// lib/parallel (computing, journaling), so that neither depends on the other's libraries.
#include <string>
#include <vector>

#include "search/search.hpp"

namespace perfsweep {

struct SweepTarget {
  std::string group;  // HDF5 group name, e.g. "A100-NVS4"
  SearchProblem problem;
};

struct TargetResult {
  std::vector<TopN> tops;  // one per GPU count of the sweep
  SearchCounters counters;
  std::size_t units_done = 0;
  std::size_t units_total = 0;
  bool complete() const { return units_done == units_total; }
};

}  // namespace perfsweep
