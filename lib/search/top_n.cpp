#include "search/top_n.hpp"

#include <algorithm>
#include <tuple>

namespace perfsweep {

namespace {
auto key(const Candidate& c) {
  const Layout& l = c.layout;
  const TensorSplit& t = l.tensor;
  return std::tuple(l.dp, t.tp1, t.tp2, l.pp, l.mbs, t.nb, t.nv1, t.nv2, l.nv_dp, l.nv_pp);
}
}  // namespace

bool ranks_before(const Candidate& a, const Candidate& b) {
  if (a.throughput != b.throughput) return a.throughput > b.throughput;
  return key(a) < key(b);
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
