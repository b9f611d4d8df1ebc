#include "search/candidates.hpp"

namespace perfsweep {

std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> small, large;
  for (std::int64_t c = 1; c * c <= n; ++c) {
    if (n % c) continue;
    small.push_back(c);
    if (c != n / c) large.push_back(n / c);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

}  // namespace perfsweep
