#include "search/top_n.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

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

bool identical_lists(const std::vector<Candidate>& a, const std::vector<Candidate>& b) {
  const auto same = [](double x, double y) { return std::bit_cast<std::uint64_t>(x) == std::bit_cast<std::uint64_t>(y); };
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const Layout &x = a[i].layout, &y = b[i].layout;
    if (std::memcmp(&a[i].totals, &b[i].totals, sizeof(Totals)) != 0 || !same(a[i].throughput, b[i].throughput) ||
        !same(a[i].mem, b[i].mem) || !(x.exec == y.exec) || x.attention.flash != y.attention.flash ||
        x.attention.recompute != y.attention.recompute) {
      return false;
    }
    for (const ConfigKey& k : kConfigKeys) {
      if (k.value(x) != k.value(y)) return false;
    }
  }
  return true;
}

bool TopN::push(const Candidate& c) {
  if (capacity_ == 0) return false;
  if (has_floor_ && !ranks_before(c, floor_)) return false;
  const bool full = order_.size() == capacity_;
  if (full && !ranks_before(c, slots_[order_.back()])) return false;
  const auto pos = std::upper_bound(order_.begin(), order_.end(), c, [this](const Candidate& x, std::uint32_t slot) {
    return ranks_before(x, slots_[slot]);
  });
  const std::ptrdiff_t at = pos - order_.begin();
  std::uint32_t slot;
  if (full) {
    slot = order_.back();
    slots_[slot] = c;
  } else {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.push_back(c);
  }
  // the evicted (last) index moves to the new candidate's place
  if (full) order_.pop_back();
  order_.insert(order_.begin() + at, slot);
  items_current_ = false;
  return true;
}

double TopN::admission_throughput() const {
  if (capacity_ == 0) return std::numeric_limits<double>::infinity();
  double t = has_floor_ ? floor_.throughput : 0;
  if (order_.size() == capacity_) t = std::max(t, slots_[order_.back()].throughput);
  return t;
}

void TopN::merge(const TopN& other) {
  for (std::uint32_t slot : other.order_) push(other.slots_[slot]);
}

const std::vector<Candidate>& TopN::items() const {
  if (!items_current_) {
    items_.clear();
    for (std::uint32_t slot : order_) items_.push_back(slots_[slot]);
    items_current_ = true;
  }
  return items_;
}

}  // namespace perfsweep
