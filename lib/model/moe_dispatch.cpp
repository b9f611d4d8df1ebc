// The expected reach of a token's experts over the expert-parallel group (model/moe_dispatch.hpp).
#include "model/moe_dispatch.hpp"

#include <algorithm>
#include <cmath>

namespace perfsweep {
namespace {
using I = std::int64_t;
constexpr double D(I v) { return static_cast<double>(v); }

// ln C(n, r) for 0 <= r <= n.
double log_choose(double n, double r) { return std::lgamma(n + 1) - std::lgamma(r + 1) - std::lgamma(n - r + 1); }

// The probability that `k` draws without repetition from `pool` items miss `held` of them:
// C(pool - held, k) / C(pool, k), as the product of the draws' odds (a top_k of a real model),
// else through ln C.
constexpr I kProductDraws = 64;
double miss(I pool, I held, I k) {
  if (pool - held < k) return 0.0;
  if (held <= 0) return 1.0;
  if (k <= kProductDraws) {
    double p = 1;
    for (I i = 0; i < k; ++i) p *= D(pool - held - i) / D(pool - i);
    return p;
  }
  return std::exp(log_choose(D(pool - held), D(k)) - log_choose(D(pool), D(k)));
}
}  // namespace

double expected_units_reached(const MoeOptions& o, I units) {
  if (units <= 1) return D(std::max<I>(units, 0));
  const I per_unit = o.experts / units;
  const I k = o.top_k;
  double missed = miss(o.experts, per_unit, k);
  if (o.groups > 0) {
    const I per_group = o.experts / o.groups, g = o.group_top_k, pool = g * per_group;
    if (per_unit <= per_group && per_group % per_unit == 0) {
      // inside one group: reached only where its group is drawn
      missed = 1.0 - D(g) / D(o.groups) * (1.0 - miss(pool, per_unit, k));
    } else if (per_unit % per_group == 0) {
      // whole groups: j of its c groups drawn (hypergeometric), then no draw on their experts
      const I c = per_unit / per_group;
      missed = 0;
      for (I j = std::max<I>(0, g - (o.groups - c)); j <= std::min(c, g); ++j) {
        const double drawn = std::exp(log_choose(D(c), D(j)) + log_choose(D(o.groups - c), D(g - j)) -
                                      log_choose(D(o.groups), D(g)));
        missed += drawn * miss(pool, j * per_group, k);
      }
    }
  }
  return D(units) * (1.0 - missed);
}

double dedup_dispatch_share(const MoeOptions& o, I ep, I nv_ep) {
  if (ep <= 1 || o.top_k <= 0) return 1.0;
  const I units = nv_ep >= ep ? ep : ep / std::max<I>(nv_ep, 1);
  return std::min(1.0, expected_units_reached(o, units) / D(o.top_k));
}

}  // namespace perfsweep
