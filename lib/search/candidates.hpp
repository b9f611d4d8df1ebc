#pragma once
// The reference's candidate generators (execution.py): divisors, tensor/pipeline/micro-batch
// degrees and NVLink-domain placements, in the reference's order.
#include <cmath>
#include <cstdint>
#include <vector>

namespace perfsweep {

// Divisors of n in ascending order.
std::vector<std::int64_t> divisors(std::int64_t n);

// Placements of the NVLink domain over the groups (tp, dp, pp): every (n1, n2, n3) with
// n1 n2 n3 = nvs dividing their groups, or the whole job when it fits in one domain.
template <typename F>
void for_each_nv_1d(std::int64_t tp, std::int64_t dp, std::int64_t pp, std::int64_t nvs, F&& f) {
  if (tp * dp * pp <= nvs) {
    f(tp, dp, pp);
    return;
  }
  for (std::int64_t n1 = 1; n1 <= nvs; ++n1) {
    if (nvs % n1) continue;
    const std::int64_t rem = nvs / n1;
    for (std::int64_t n2 = 1; n2 <= rem; ++n2) {
      if (rem % n2) continue;
      const std::int64_t n3 = rem / n2;
      if (tp % n1 == 0 && dp % n2 == 0 && pp % n3 == 0) f(n1, n2, n3);
    }
  }
}

// The same over (tp1, tp2, dp, pp).
template <typename F>
void for_each_nv_2d(std::int64_t tp1, std::int64_t tp2, std::int64_t dp, std::int64_t pp, std::int64_t nvs, F&& f) {
  if (tp1 * tp2 * dp * pp <= nvs) {
    f(tp1, tp2, dp, pp);
    return;
  }
  for (std::int64_t n1 = 1; n1 <= nvs; ++n1) {
    if (nvs % n1) continue;
    const std::int64_t rem = nvs / n1;
    for (std::int64_t n2 = 1; n2 <= rem; ++n2) {
      if (rem % n2) continue;
      const std::int64_t rem2 = rem / n2;
      for (std::int64_t n3 = 1; n3 <= rem2; ++n3) {
        if (rem2 % n3) continue;
        const std::int64_t n4 = rem2 / n3;
        if (tp1 % n1 == 0 && tp2 % n2 == 0 && dp % n3 == 0 && pp % n4 == 0) f(n1, n2, n3, n4);
      }
    }
  }
}

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
