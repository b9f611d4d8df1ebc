#include "search/capacity_sweep.hpp"

#include <cstring>

namespace perfsweep {

namespace {
// A sweep's targets share one model (the run's); its shape is compared as a guard.
bool same_model(const Transformer& a, const Transformer& b) {
  return a.name == b.name && a.l == b.l && a.e == b.e && a.h == b.h && a.depth == b.depth && a.f == b.f &&
         a.vocab_size == b.vocab_size && a.kv() == b.kv();
}

bool same_system_but_capacity(const System& a, const System& b) {
  for (const SystemKey& f : kSystemKeys) {
    if (std::strcmp(f.name, "hbm_capacity") == 0) continue;
    // Bitwise equality: the sweep sets values, it does not compute them.
    if (std::memcmp(&(a.*f.member), &(b.*f.member), sizeof(double)) != 0) return false;
  }
  return a.nvlink_size == b.nvlink_size && a.hbm_capacity_exact == b.hbm_capacity_exact && a.empirical == b.empirical &&
         a.summa_nb == b.summa_nb &&
         a.calibration == b.calibration && a.kernel_calibration == b.kernel_calibration &&
         std::memcmp(a.kernels.data(), b.kernels.data(), sizeof(a.kernels)) == 0;
}
}  // namespace

bool same_but_capacity(const SearchProblem& a, const SearchProblem& b) {
  return a.strategy == b.strategy && a.global_batch == b.global_batch && a.top_n == b.top_n &&
         a.attention.flash == b.attention.flash && a.attention.recompute == b.attention.recompute &&
         a.exec == b.exec && same_model(a.model, b.model) && same_system_but_capacity(a.system, b.system);
}

std::vector<std::vector<std::size_t>> capacity_groups(const std::vector<const SearchProblem*>& problems) {
  std::vector<std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < problems.size(); ++i) {
    bool placed = false;
    for (std::vector<std::size_t>& g : groups) {
      if (same_but_capacity(*problems[g.front()], *problems[i])) {
        g.push_back(i);
        placed = true;
        break;
      }
    }
    if (!placed) groups.push_back({i});
  }
  return groups;
}

}  // namespace perfsweep
