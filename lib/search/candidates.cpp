#include "search/candidates.hpp"

namespace perfsweep {

std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> small, large;
  // c <= n / c rather than c * c <= n: the square overflows for n near 2^63.
  for (std::int64_t c = 1; c <= n / c; ++c) {
    if (n % c) continue;
    small.push_back(c);
    if (c != n / c) large.push_back(n / c);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

}  // namespace perfsweep
