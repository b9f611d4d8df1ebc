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

// Whether two lists hold the same candidates in the same order, every number bit for bit (the
// totals, throughput and memory as stored, the configuration keys and execution options).
bool identical_lists(const std::vector<Candidate>& a, const std::vector<Candidate>& b);

class TopN {
 public:
  explicit TopN(std::size_t capacity = 10) : capacity_(capacity) {
    slots_.reserve(capacity);
    order_.reserve(capacity + 1);
    items_.reserve(capacity);
  }
  // True if kept. Allocation-free once constructed: a kept candidate is copied once into a slot
  // (the one it evicts when full) and only the slots' order moves.
  bool push(const Candidate& c);
  void merge(const TopN& other);
  // Empties the list and its floor, keeping its storage (a search reuses one TopN per capacity).
  void clear() {
    slots_.clear();
    order_.clear();
    items_.clear();
    items_current_ = true;
    has_floor_ = false;
  }
  // Turns away every candidate that does not rank before `floor`: the last of a full list of the
  // same search over another part of the space, so N candidates already rank before it and
  // none that ranks after it can be among the N best of the whole. The merged list is the same.
  void set_floor(const Candidate& floor) {
    floor_ = floor;
    has_floor_ = true;
  }
  // A candidate of lower throughput is turned away (push returns false): the floor's throughput or,
  // once the list is full, its last one's, whichever is higher; 0 while neither turns any away
  // (what the search's bound compares with: search.cpp).
  double admission_throughput() const;
  const std::vector<Candidate>& items() const;  // best first
  std::size_t capacity() const { return capacity_; }

 private:
  std::size_t capacity_;
  std::vector<Candidate> slots_;       // kept candidates, in no order
  std::vector<std::uint32_t> order_;   // slot indices, best first
  mutable std::vector<Candidate> items_;  // slots in order, made again after a change
  mutable bool items_current_ = true;
  Candidate floor_;
  bool has_floor_ = false;
};

}  // namespace perfsweep
