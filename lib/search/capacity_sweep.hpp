#pragma once
// Hardware sweeps over HBM capacity: capacity decides only which configurations fit (the step's
// time does not depend on it), so systems that differ in nothing else share one evaluation of
// every configuration (Searcher::run with several capacities) and each keeps its own top-N.
#include <cstddef>
#include <vector>

#include "search/search.hpp"

namespace perfsweep {

// True if every configuration costs the same under a and b: equal but for hbm_capacity.
bool same_but_capacity(const SearchProblem& a, const SearchProblem& b);

// The problems grouped by same_but_capacity: groups in order of their first member, members in
// the order given (indices into `problems`).
std::vector<std::vector<std::size_t>> capacity_groups(const std::vector<const SearchProblem*>& problems);

}  // namespace perfsweep
