#pragma once
// The reference's candidate generators (execution.py): divisors, tensor/pipeline/micro-batch
// degrees, in the reference's order (NVLink placements: model/axes.hpp for_each_nv_split).
#include <cmath>
#include <cstdint>
#include <vector>

#include "model/plan.hpp"

namespace perfsweep {

// Divisors of n in ascending order.
std::vector<std::int64_t> divisors(std::int64_t n);

// SUMMA block counts for a tp1 x tp2 grid (summa_nb_candidates): powers of two times
// max(tp1, tp2) that divide e and leave blocks of at least 512 columns, or just the smallest
// when even that leaves fewer.
template <typename F>
void for_each_summa_nb(std::int64_t tp1, std::int64_t tp2, std::int64_t e, F&& f) {
  const std::int64_t start = tp1 > tp2 ? tp1 : tp2;
  const double end = std::log2(static_cast<double>(e / start));
  constexpr std::int64_t max_dim = 512;
  if (!(end > 0)) return;  // numpy's arange(0, end) is empty: the reference has no candidate
  if (static_cast<double>(e) / static_cast<double>(start) < static_cast<double>(max_dim)) {
    f(start);
    return;
  }
  for (std::int64_t k = 0; static_cast<double>(k) < end; ++k) {
    const std::int64_t c = start << k;
    if (e % c == 0 && e / c >= max_dim) f(c);
  }
}

}  // namespace perfsweep
