#include "search/top_n.hpp"

#include <algorithm>

namespace perfsweep {

// Higher throughput first; ties by the declared configuration keys that order ties (model/plan.hpp:
// dp, tp1, tp2, pp, mbs, nb, nv_tp1, nv_tp2, nv_dp, nv_pp), ascending.
bool ranks_before(const Candidate& a, const Candidate& b) {
  if (a.throughput != b.throughput) return a.throughput > b.throughput;
  for (const ConfigKey& k : kConfigKeys) {
    if (!k.orders_ties) continue;
    const std::int64_t x = k.value(a.layout), y = k.value(b.layout);
    if (x != y) return x < y;
  }
  return false;
}

bool TopN::push(const Candidate& c) {
  if (capacity_ == 0) return false;
  if (items_.size() == capacity_ && !ranks_before(c, items_.back())) return false;
  auto pos = std::upper_bound(items_.begin(), items_.end(), c, ranks_before);
  items_.insert(pos, c);
  if (items_.size() > capacity_) items_.pop_back();
  return true;
}

void TopN::merge(const TopN& other) {
  for (const Candidate& c : other.items_) push(c);
}

}  // namespace perfsweep
