#pragma once
// The N fastest feasible configurations, under a strict total order so that any split of the
// candidate space, merged in any order, gives the same list.
#include <array>
#include <cstdint>
#include <vector>

#include "model/step.hpp"

namespace perfsweep {

// One evaluated configuration as the search keeps it (trivially copyable: sent over MPI as bytes).
struct Candidate {
  double throughput = 0;  // samples/s
  double mem = 0;         // GB per GPU
  Layout layout;
  Totals totals;
};

// Strict order: higher throughput first; equal throughputs by the configuration tuple
// (dp, tp1, tp2, pp, mbs, nb, nv_tp1, nv_tp2, nv_dp, nv_pp) ascending.
bool ranks_before(const Candidate& a, const Candidate& b);

class TopN {
 public:
  explicit TopN(std::size_t capacity = 10) : capacity_(capacity) { items_.reserve(capacity + 1); }
  // True if kept. Allocation-free once constructed.
  bool push(const Candidate& c);
  void merge(const TopN& other);
  // Would a candidate with this throughput be kept? (lets the search skip building a Candidate)
  bool admits(double throughput) const {
    return items_.size() < capacity_ || throughput >= items_.back().throughput;
  }
  const std::vector<Candidate>& items() const { return items_; }  // best first
  std::size_t capacity() const { return capacity_; }

 private:
  std::size_t capacity_;
  std::vector<Candidate> items_;
};

}  // namespace perfsweep
