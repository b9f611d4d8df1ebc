#include "model/module.hpp"

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
  return s;
}

namespace {
using I = std::int64_t;
// The reference passes parallelism {'dim1': m2, 'dim2': m1} and topology {'t1': t2, 't2': t1}
// to 2D layers: dim1 is the sequence (tp2) split, dim2 the feature/head (tp1) split.
Split2 grid(const TensorSplit& t) { return {t.tp2, t.tp1, t.nv2, t.nv1}; }
}  // namespace

Module mlp_1d(const System& s, I b, const Transformer& m, I tp, I nv) {
  const I l = m.l, e = m.e, f = m.f;
  Module mod;
  mod.add(s, linear(s, "fc1", b, l, e, f, {1, tp, 1, nv}));
  mod.add(s, bias(s, "fc1-bias", b, l, f, {1, tp, 1, nv}));
  mod.add(s, activation(s, "act1", b * l * (f / tp)));
  mod.add(s, dropout(s, "dpr1", b * l * (f / tp)));
  mod.add(s, linear(s, "fc2", b, l, f, e, {tp, 1, nv, 1}));
  mod.add(s, bias(s, "fc2-bias", b, l, e, {1, 1, 1, 1}));
  mod.add(s, dropout(s, "dpr2", b * (l / tp) * e));
  mod.add(s, layer_norm(s, "ln1", b, l, e, tp, nv));
  return mod;
}

Module mlp_2d(const System& s, I b, const Transformer& m, const TensorSplit& t) {
  const I l = m.l, e = m.e, f = m.f, m1 = t.tp1, m2 = t.tp2;
  const Split2 g = grid(t);
  Module mod;
  mod.add(s, linear_summa(s, "fc1", b, l, e, f, g, t.nb));
  mod.add(s, bias(s, "fc1-bias", b, l, f, g));
  mod.add(s, activation(s, "act1", b * (l / m2) * (f / m1)));
  mod.add(s, dropout(s, "dpr1", b * (l / m2) * (f / m1)));
  mod.add(s, linear_summa(s, "fc2", b, l, f, e, g, t.nb));
  mod.add(s, bias(s, "fc2-bias", b, l, e, g));
  mod.add(s, dropout(s, "dpr2", b * (l / m2) * (e / m1)));
  mod.add(s, layer_norm_2d(s, "ln1", b, l, e, g));
  return mod;
}

Module mlp_seqp(const System& s, I b, const Transformer& m, const TensorSplit& t) {
  const I l = m.l, e = m.e, f = m.f, m1 = t.tp1, m2 = t.tp2, t1 = t.nv1, t2 = t.nv2;
  Module mod;
  mod.add(s, linear_seqp(s, "fc1", b, l, e, f, {1, m1, 1, t1}, m2, t2));
  mod.add(s, bias(s, "fc1-bias", b, l, f, grid(t)));
  mod.add(s, activation(s, "act1", b * (l / m2) * (f / m1)));
  mod.add(s, dropout(s, "dpr1", b * (l / m2) * (f / m1)));
  mod.add(s, linear_seqp(s, "fc2", b, l, f, e, {m1, 1, t1, 1}, m2, t2));
  mod.add(s, bias(s, "fc2-bias", b, l / m2, e, {m1, 1, t1, 1}));
  mod.add(s, dropout(s, "dpr2", b * (l / (m1 * m2)) * e));
  mod.add(s, layer_norm(s, "ln1", b, l / m2, e, m1, t1));
  return mod;
}

Module sa_1d(const System& s, I b, const Transformer& m, I tp, I nv, bool flash, bool attention_recompute) {
  const I l = m.l, e = m.e, h = m.h;
  Module mod;
  mod.add(s, linear(s, "qkv", b, l, e, 3 * e, {1, tp, 1, nv}));
  if (flash) {
    mod.add(s, fused_la(s, "fusedla", b, l, e / h, h, tp));
  } else {
    const bool rc = attention_recompute;
    mod.add(s, logits(s, "logits", b, l, e / h, h, tp, rc));
    mod.add(s, softmax(s, "softmax", b, h, l, l, tp, rc, rc));
    mod.add(s, dropout(s, "dpr_at", b * (h / tp) * l * l, rc, rc));
    mod.add(s, attend(s, "attend", b, l, e / h, h, tp, rc));
  }
  mod.add(s, linear(s, "vproj", b, l, e, e, {tp, 1, nv, 1}));
  mod.add(s, bias(s, "vproj-bias", b, l, e, {1, 1, 1, 1}));
  mod.add(s, dropout(s, "dpr_v", b * (l / tp) * e));
  mod.add(s, layer_norm(s, "ln2", b, l, e, tp, nv));
  return mod;
}

Module sa_2d(const System& s, I b, const Transformer& m, const TensorSplit& t) {
  const I l = m.l, e = m.e, h = m.h, m1 = t.tp1, m2 = t.tp2;
  const Split2 g = grid(t);
  Module mod;
  mod.add(s, linear_summa(s, "qkv", b, l, e, 3 * e, g, t.nb));
  mod.add(s, logits_summa(s, "logits", b, l, e / h, h, g, t.nb));
  mod.add(s, softmax_2d(s, "softmax", b, h, l, l, g));
  mod.add(s, dropout(s, "dpr_at", b * h * (l / m2) * (l / m1)));
  mod.add(s, attend_summa(s, "attend", b, l, e / h, h, g, t.nb));
  mod.add(s, linear_summa(s, "vproj", b, l, e, e, g, t.nb));
  mod.add(s, bias(s, "vproj-bias", b, l, e, g));
  mod.add(s, dropout(s, "dpr_v", b * (l / m2) * (e / m1)));
  mod.add(s, layer_norm_2d(s, "ln2", b, l, e, g));
  return mod;
}

namespace {
// Context-parallel attention core shared by sa_2d_seqp and sa_seqp.
void seqp_attention(Module& mod, const System& s, I b, const Transformer& m, const TensorSplit& t, bool flash) {
  const I l = m.l, e = m.e, h = m.h, m1 = t.tp1, m2 = t.tp2;
  const Split2 g = grid(t);
  if (flash) {
    mod.add(s, fused_la_seqp(s, "fusedla", b, l, e / h, h, g));
  } else {
    mod.add(s, logits_seqp(s, "logits", b, l, e / h, h, g));
    mod.add(s, softmax(s, "softmax", b, h, l / m2, l, m1));
    mod.add(s, dropout(s, "dpr_at", b * (h / m1) * (l / m2) * l));
    mod.add(s, attend_seqp(s, "attend", b, l, e / h, h, g));
  }
}
}  // namespace

Module sa_2d_seqp(const System& s, I b, const Transformer& m, const TensorSplit& t, bool flash) {
  const I l = m.l, e = m.e, m1 = t.tp1, m2 = t.tp2;
  const Split2 g = grid(t);
  Module mod;
  mod.add(s, linear_summa(s, "qkv", b, l, e, 3 * e, g, t.nb));
  seqp_attention(mod, s, b, m, t, flash);
  mod.add(s, linear_summa(s, "vproj", b, l, e, e, g, t.nb));
  mod.add(s, bias(s, "vproj-bias", b, l, e, g));
  mod.add(s, dropout(s, "dpr_v", b * (l / m2) * (e / m1)));
  mod.add(s, layer_norm_2d(s, "ln2", b, l, e, g));
  return mod;
}

Module sa_seqp(const System& s, I b, const Transformer& m, const TensorSplit& t, bool flash) {
  const I l = m.l, e = m.e, m1 = t.tp1, m2 = t.tp2, t1 = t.nv1, t2 = t.nv2;
  Module mod;
  mod.add(s, linear_seqp(s, "qkv", b, l, e, 3 * e, {1, m1, 1, t1}, m2, t2));
  seqp_attention(mod, s, b, m, t, flash);
  mod.add(s, linear_seqp(s, "vproj", b, l, e, e, {m1, 1, t1, 1}, m2, t2));
  mod.add(s, bias(s, "vproj-bias", b, l, e, grid(t)));
  mod.add(s, dropout(s, "dpr_v", b * (l / (m1 * m2)) * e));
  mod.add(s, layer_norm(s, "ln2", b, l / m2, e, m1, t1));
  return mod;
}

void build_block(const System& s, Strategy strategy, I b, const Transformer& m, const TensorSplit& t, Module& mlp,
                 Module& sa) {
  switch (strategy) {
    case Strategy::OneD:
      mlp = mlp_1d(s, b, m, t.tp1, t.nv1);
      sa = sa_1d(s, b, m, t.tp1, t.nv1, true);
      return;
    case Strategy::TwoD:
      mlp = mlp_2d(s, b, m, t);
      sa = sa_2d_seqp(s, b, m, t, true);
      return;
    case Strategy::TwoDSeqp:
      mlp = mlp_seqp(s, b, m, t);
      sa = sa_seqp(s, b, m, t, true);
      return;
  }
}

}  // namespace perfsweep
