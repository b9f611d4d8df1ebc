#include "model/module.hpp"

#include <string>

#include "core/error.hpp"

namespace perfsweep {

double pandas_sum(const double* a, std::size_t n) {
  if (n < 8) {
    double res = 0.;
    for (std::size_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (std::size_t j = 0; j < 8; ++j) r[j] = a[j];
    std::size_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (std::size_t j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  std::size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pandas_sum(a, n2) + pandas_sum(a + n2, n - n2);
}

namespace {
// A timed layer's counts and times over `share` of the blocks.
void scale(LayerResult& r, double share) {
  LayerCost& c = r.cost;
  for (double* v : {&c.flops_fwd, &c.mem_fwd, &c.activation_buffer, &c.weights_mem, &c.weights_grad_mem, &c.flops_bwd,
                    &c.mem_bwd}) {
    *v *= share;
  }
  for (CommSet* set : {&c.comm_fwd, &c.comm_bwd}) {
    for (std::uint8_t i = 0; i < set->count; ++i) set->items[i].volume_gb *= share;
  }
  for (PassTime* p : {&r.fwd, &r.bwd}) {
    for (double* v : {&p->t, &p->comm, &p->comp, &p->mem, &p->cast, &p->hidden}) *v *= share;
  }
  r.t = r.fwd.t + r.bwd.t;
}
}  // namespace

void Module::add(const System& system, const LayerCost& cost, double share) {
  if (count >= kMaxModuleLayers) {
    throw ConfigError(std::string("a module holds at most ") + std::to_string(kMaxModuleLayers) + " layers; " +
                      cost.name + " is one more");
  }
  LayerResult& r = layers[static_cast<std::size_t>(count++)];
  r = time_layer(system, cost);
  if (share != 1.0) [[unlikely]] scale(r, share);
}

ModuleSums sum_module(const Module& module) {
  const std::size_t n = static_cast<std::size_t>(module.count);
  std::array<double, kMaxModuleLayers> col{};
  auto sum = [&](auto field) {
    for (std::size_t i = 0; i < n; ++i) col[i] = field(module.layers[i]);
    return pandas_sum(col.data(), n);
  };
  ModuleSums s;
  s.flops_fwd = sum([](const LayerResult& r) { return r.cost.flops_fwd; });
  s.flops_bwd = sum([](const LayerResult& r) { return r.cost.flops_bwd; });
  s.t_fwd = sum([](const LayerResult& r) { return r.fwd.t; });
  s.t_bwd = sum([](const LayerResult& r) { return r.bwd.t; });
  s.t_fwd_comm = sum([](const LayerResult& r) { return r.fwd.comm; });
  s.t_bwd_comm = sum([](const LayerResult& r) { return r.bwd.comm; });
  s.t_fwd_comp = sum([](const LayerResult& r) { return r.fwd.comp; });
  s.t_bwd_comp = sum([](const LayerResult& r) { return r.bwd.comp; });
  s.t_fwd_mem = sum([](const LayerResult& r) { return r.fwd.mem; });
  s.t_bwd_mem = sum([](const LayerResult& r) { return r.bwd.mem; });
  s.weights_mem = sum([](const LayerResult& r) { return r.cost.weights_mem; });
  s.activation_buffer = sum([](const LayerResult& r) { return r.cost.activation_buffer; });
  for (std::size_t i = 0; i < n; ++i) {
    const KernelOp op = module.layers[i].cost.op;
    if (op == KernelOp::Gemm || op == KernelOp::Bias) s.gemm_weights_mem += module.layers[i].cost.weights_mem;
    const LayerResult& r = module.layers[i];
    if (op == KernelOp::Gemm && r.cost.weights_mem > 0 && r.cost.flops_bwd > 0) {
      s.t_bwd_weight += (r.bwd.t - r.bwd.comm) * (r.cost.flops_fwd / r.cost.flops_bwd);
    }
    if (module.layers[i].cost.precision != Precision::Bf16) {
      s.fp8_weights_mem += module.layers[i].cost.weights_mem;
      s.fp8_gemms += 1;
    }
  }
  s.calls = static_cast<double>(n);
  return s;
}

}  // namespace perfsweep
