// Layer counts ported from the reference's layers.py. Integer products are formed exactly (as
// Python's integers are) and converted to double where Python converts them: D(...) marks each
// such point, so the order of floating-point operations, and the last digits, match.
#include "model/layer.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "model/precision.hpp"
#include "model/roofline.hpp"

namespace perfsweep {
namespace {

using I = std::int64_t;
constexpr double D(I v) { return static_cast<double>(v); }

// Per-operation flop weights: every multiply, add and exp counts one flop (in TFLOP units).
struct Units {
  double mult, add, exp, elem, mask;
  explicit Units(const System& s)
      : mult(s.flops_units), add(s.flops_units), exp(s.flops_units), elem(s.element_size),
        mask(s.mask_element_size) {}
};

Collective coll(double volume, CommType type, I group, I fast) { return {volume, type, 1, group, fast}; }

CommSet one(Collective c) {
  CommSet s;
  s.items[0] = c;
  s.count = 1;
  s.is_list = false;
  return s;
}

CommSet list(std::initializer_list<Collective> cs) {
  CommSet s;
  if (cs.size() > s.items.size()) throw ConfigError("a layer pass issues at most 4 collectives");
  s.count = 0;
  for (const Collective& c : cs) s.items[s.count++] = c;
  s.is_list = true;
  return s;
}

// A GEMM's flops: `rows` dot products of length k (k multiplies, k-1 adds).
double dot_flops(I rows, I k, const Units& u) { return D(rows) * (D(k) * u.mult + D(k - 1) * u.add); }

// Seconds of a pass's collectives, each on 1/volume_divisor of its volume.
double time_collectives(const System& s, const CommSet& set, double volume_divisor) {
  double t = 0;
  if (s.calibration != nullptr) [[unlikely]] {
    for (std::uint8_t i = 0; i < set.count; ++i) {
      const Collective& c = set.items[i];
      t += collective_time(s, s.calibration.get(), c.type,
                           volume_divisor == 1.0 ? c.volume_gb : c.volume_gb / volume_divisor, c.group, c.fast_domain,
                           c.stride)
               .seconds;
    }
    return t;
  }
  for (std::uint8_t i = 0; i < set.count; ++i) {
    const Collective& c = set.items[i];
    t += analytical_collective_seconds(s, c.type, volume_divisor == 1.0 ? c.volume_gb : c.volume_gb / volume_divisor,
                                       c.group, c.fast_domain, c.stride);
  }
  return t;
}

// How many of a pass's collectives the system's calibration times (as time_pass asks for them:
// SUMMA layers one of nb blocks). Only called with a calibration, to keep time_pass lean without.
std::uint8_t calibrated_collectives(const System& s, const LayerCost& cost, const CommSet& set) {
  const double divisor = cost.overlap == Overlap::Summa ? D(cost.summa_nb) : 1.0;
  std::uint8_t n = 0;
  for (std::uint8_t i = 0; i < set.count; ++i) {
    const Collective& c = set.items[i];
    const CollectiveTime t = collective_time(s, s.calibration.get(), c.type,
                                             divisor == 1.0 ? c.volume_gb : c.volume_gb / divisor, c.group,
                                             c.fast_domain, c.stride);
    if (t.model == CommModel::Calibrated) ++n;
  }
  return n;
}

PassTime time_pass(const System& s, const LayerCost& c, std::size_t pass, double flops, double mem,
                   const CommSet& comms) {
  PassTime p;
  double t_mem = 0;
  double t_compute = 0;
  if (s.kernel_calibration != nullptr && calibrated_op(*s.kernel_calibration, c.op, c.shape)) [[unlikely]] {
    KernelSeconds k = calibrated_seconds(s, *s.kernel_calibration, c.op, c.shape, pass, flops, mem, c.precision);
    if (c.glue != Glue::Calibrated) k.glue = c.glue == Glue::ResidualFork ? fused_glue_seconds(s, c.shape, pass) : 0.0;
    p.comp = k.launch + k.compute;
    t_mem = k.memory;
    t_compute = k.total();
  } else {
    p.comp = compute_seconds(s, kernel_class(c.op), flops, c.precision);
    t_mem = memory_seconds(s, kernel_class(c.op), mem);
    t_compute = std::max(p.comp, t_mem);
  }
  if (c.cast_kernels[pass] > 0) [[unlikely]] {
    p.cast = quantization_seconds(s, c.cast_gb[pass], D(c.cast_kernels[pass]));
  }
  p.intensity = p.comp / t_mem;
  if (c.overlap == Overlap::Summa) {
    // LinearSumma/LogitsSumma/AttendSumma.compute_time_summa: the collectives of one of nb blocks
    // (each on 1/nb of the volume, so latencies count per block) are exposed; the other blocks'
    // collectives hide behind the compute as far as it lasts.
    const double nb = D(c.summa_nb);
    const double one_block = time_collectives(s, comms, nb);
    p.comm = one_block + std::max(one_block * nb - t_compute, 0.0);
  } else if (c.overlap == Overlap::ContextRing) {
    // Transformer Engine's ring (AttnFuncWithCPAndKVP2P): step i computes on the block received
    // at step i - 1 while the next block moves, so each of the steps - 1 transfers is exposed
    // only beyond one step's compute; the first transfer's latency is not hidden.
    const double steps = D(c.ring_steps);
    const double transfer = time_collectives(s, comms, 1.0);
    const double step_compute = t_compute / steps;
    const Collective& ring = comms.items[0];
    const double latency =
        transfer > 0 ? (ring.fast_domain > 1 ? s.nvlink_latency : network_path(s, CommType::P2P, 2, ring.stride).latency)
                     : 0.0;
    const double exposed = (steps - 1) * std::max(transfer - step_compute, 0.0);
    p.comm = latency + exposed;
    p.hidden = (steps - 1) * transfer - exposed;
  } else {
    p.comm = time_collectives(s, comms, 1.0);
  }
  p.t = t_compute + p.comm;
  if (p.cast > 0) p.t += p.cast;  // the quantization kernels run before the GEMM, serially
  p.mem = std::max(t_compute - p.comp, 0.0);
  return p;
}

void require_1d(I m1, I m2, const char* name) {
  if (m1 != 1 && m2 != 1) {
    throw ConfigError(std::string(name) + ": a 1D-parallel linear layer cannot shard both weight dimensions");
  }
}

}  // namespace

LayerResult time_layer(const System& system, const LayerCost& cost) {
  LayerResult r;
  r.cost = cost;
  if (cost.fused_away) return r;
  r.fwd = time_pass(system, cost, kernels::kFwd, cost.flops_fwd, cost.mem_fwd, cost.comm_fwd);
  r.bwd = time_pass(system, cost, kernels::kBwd, cost.flops_bwd, cost.mem_bwd, cost.comm_bwd);
  if (system.calibration != nullptr) [[unlikely]] {
    r.calibrated_fwd = calibrated_collectives(system, cost, cost.comm_fwd);
    r.calibrated_bwd = calibrated_collectives(system, cost, cost.comm_bwd);
  }
  if (cost.recompute) r.bwd.t += r.fwd.t;
  r.t = r.fwd.t + r.bwd.t;
  return r;
}

// Linear: Y = XW, (b,l,f) = (b,l,e)(e,f). dim1 shards e (reduce-scatter after the forward), dim2
// shards f (reduce-scatter of dX in the backward).
LayerCost linear(const System& s, const char* name, I b, I l, I e, I f, Split2 p) {
  const Units u(s);
  const I m2 = p.dim1, m1 = p.dim2, t2 = p.t1, t1 = p.t2;
  require_1d(m1, m2, name);
  const I f_local = f / m1, e_local = e / m2;
  LayerCost c;
  c.name = name;
  c.shape = {1, b * l, e_local, f_local};
  c.flops_fwd = dot_flops(b * l * f_local, e_local, u);
  const double act_in = D(b * l * e_local) * u.elem;
  const double act_out = D(b * l * f_local) * u.elem;
  c.activation_buffer = D(b * l * e_local) * u.elem;
  c.weights_mem = D(e_local * f_local) * u.elem;
  c.mem_fwd = act_in + act_out + c.weights_mem;
  c.comm_fwd = one(coll(m2 > 1 ? D(b * l * f) * u.elem : 0.0, CommType::ReduceScatter, m2, t2));

  const double xgrad_flops = dot_flops(b * l * e_local, f_local, u);
  const double wgrad_flops = dot_flops(e_local * f_local, b * l, u);
  c.flops_bwd = xgrad_flops + wgrad_flops;
  c.weights_grad_mem = D(e_local * f_local) * u.elem;
  const double xgrad_mem = D(b * l * e_local) * u.elem;
  const double ygrad_mem = D(b * l * f_local) * u.elem;
  c.mem_bwd = c.weights_grad_mem + xgrad_mem + 2 * ygrad_mem + c.weights_mem + c.activation_buffer;
  c.comm_bwd = one(coll(m1 > 1 ? D(b * l * e) * u.elem : 0.0, CommType::ReduceScatter, m1, t1));
  return c;
}

// Linear with the sequence split over dimseq GPUs on top of the 1D weight split.
LayerCost linear_seqp(const System& s, const char* name, I b, I l, I e, I f, Split2 p, I dimseq, I /*tseq*/) {
  const Units u(s);
  const I m2 = p.dim1, m1 = p.dim2, t2 = p.t1, t1 = p.t2;
  require_1d(m1, m2, name);
  const I f_local = f / m1, e_local = e / m2, l_local = l / dimseq;
  LayerCost c;
  c.name = name;
  c.shape = {1, b * l_local, e_local, f_local};
  c.flops_fwd = dot_flops(b * l_local * f_local, e_local, u);
  const double act_in = D(b * l_local * e_local) * u.elem;
  const double act_out = D(b * l_local * f_local) * u.elem;
  c.activation_buffer = D(b * l_local * e_local) * u.elem;
  c.weights_mem = D(e_local * f_local) * u.elem;
  c.mem_fwd = act_in + act_out + c.weights_mem;
  c.comm_fwd = one(coll(m2 > 1 ? D(b * l_local * f) * u.elem : 0.0, CommType::ReduceScatter, m2, t2));

  const double xgrad_flops = dot_flops(b * l_local * e_local, f_local, u);
  const double wgrad_flops = dot_flops(e_local * f_local, b * l_local, u);
  c.flops_bwd = xgrad_flops + wgrad_flops;
  c.weights_grad_mem = D(e_local * f_local) * u.elem;
  const double xgrad_mem = D(b * l_local * e_local) * u.elem;
  const double ygrad_mem = D(b * l_local * f_local) * u.elem;
  c.mem_bwd = c.weights_grad_mem + xgrad_mem + 2 * ygrad_mem + c.weights_mem + c.activation_buffer;
  c.comm_bwd = one(coll(m1 > 1 ? D(b * l_local * e) * u.elem : 0.0, CommType::ReduceScatter, m1, t1));
  return c;
}

// SUMMA linear: (b,l/m2,f/m1) = (b,l/m2,e/m1)(e/m2,f/m1) in nb rounds of broadcasts.
LayerCost linear_summa(const System& s, const char* name, I b, I l, I e, I f, Split2 p, I nb) {
  const Units u(s);
  const I m2 = p.dim1, m1 = p.dim2, t2 = p.t1, t1 = p.t2;
  const bool m1_par = m1 > 1, m2_par = m2 > 1;
  const I l_local = l / m2, f_local = f / m1, e_local_1 = e / m1, e_local_2 = e / m2;
  LayerCost c;
  c.name = name;
  c.shape = {1, b * l_local, e, f_local};
  c.overlap = Overlap::Summa;
  c.summa_nb = nb;
  // e outer products and e additions across all SUMMA iterations
  c.flops_fwd = D(b * l_local * f_local) * (D(e) * u.mult + D(e) * u.add);
  c.activation_buffer = D(b * l_local * e_local_1) * u.elem;
  c.weights_mem = D(e_local_2 * f_local) * u.elem;
  c.mem_fwd = D(b * l_local * e + e * f_local + b * l_local * f_local * nb) * u.elem;
  const double x_bcast = m1_par ? D(b * l_local * e) * u.elem : 0.0;
  const double w_bcast = m2_par ? D(e * f_local) * u.elem : 0.0;
  c.comm_fwd = list({coll(x_bcast, CommType::Broadcast, m1, t1), coll(w_bcast, CommType::Broadcast, m2, t2)});

  const double xgrad_flops = dot_flops(b * l_local * e, f_local, u);
  const double wgrad_flops = dot_flops(e * f_local, b * l_local, u);
  c.flops_bwd = xgrad_flops + wgrad_flops;
  c.weights_grad_mem = D(e_local_2 * f_local) * u.elem;
  c.mem_bwd = D(f_local * e + b * l_local * f_local * nb + b * l_local * e) * u.elem;
  c.mem_bwd += D(e * b * l_local + b * l_local * f_local * nb + e * f_local) * u.elem;
  c.comm_bwd = list({coll(w_bcast, CommType::Broadcast, m2, t2), coll(x_bcast, CommType::Reduce, m1, t1),
                     coll(x_bcast, CommType::Broadcast, m1, t1), coll(w_bcast, CommType::Reduce, m2, t2)});
  return c;
}

LayerCost bias(const System& s, const char* name, I b, I l, I f, Split2 p) {
  const Units u(s);
  const I m2 = p.dim1, m1 = p.dim2;
  const I l_local = l / m2, f_local = f / m1;
  LayerCost c;
  c.name = name;
  c.op = KernelOp::Bias;
  c.weights_mem = D(1 * f_local) * u.elem;
  c.flops_fwd = D(b * l_local) * (D(f_local) * u.add);
  c.mem_fwd = D(b * l_local * f_local + 1 * f_local) * u.elem;
  c.weights_grad_mem = D(1 * f_local) * u.elem;
  c.flops_bwd = D(b * l_local * f_local) * u.add;
  c.mem_bwd = D(b * l_local * f_local + 1 * f_local) * u.elem;
  return c;
}

// GELU: 8 flops per element forward, 13 backward (electra's flop table).
LayerCost activation(const System& s, const char* name, I m) {
  const Units u(s);
  LayerCost c;
  c.name = name;
  c.op = KernelOp::Activation;
  c.flops_fwd = D(m) * u.mult * 8;
  const double act_in = D(m) * u.elem;
  const double act_out = D(m) * u.elem;
  c.activation_buffer = D(m) * u.elem;
  c.mem_fwd = act_in + act_out;
  c.flops_bwd = D(m) * u.mult * 13;
  c.mem_bwd = D(2 * m) * u.elem + c.activation_buffer;
  return c;
}

// silu(g) x u (Shazeer 2020, "GLU Variants Improve Transformer"): silu(g) = g / (1 + exp(-g)) is
// an exp, an add, a divide and a multiply, then the product with u: 5 flops per output element.
// Backward: sigmoid again (3), silu'(g) = s (1 + g (1 - s)) (4), dg = dy u silu'(g) (2),
// du = dy silu(g) (2): 11 flops. The gate and up halves (2m) are kept for the backward.
LayerCost gated_activation(const System& s, const char* name, I m) {
  const Units u(s);
  LayerCost c;
  c.name = name;
  c.op = KernelOp::GatedActivation;
  c.flops_fwd = D(m) * u.mult * 5;
  c.activation_buffer = D(2 * m) * u.elem;
  c.mem_fwd = D(3 * m) * u.elem;  // read gate and up, write the product
  c.flops_bwd = D(m) * u.mult * 11;
  c.mem_bwd = D(3 * m) * u.elem + c.activation_buffer;  // dy in, d(gate, up) out
  return c;
}

LayerCost dropout(const System& s, const char* name, I m, bool recompute, bool remat) {
  const Units u(s);
  LayerCost c;
  c.name = name;
  c.op = KernelOp::Dropout;
  c.recompute = recompute;
  c.flops_fwd = D(m) * u.mult;
  double act_in = D(m) * u.elem;
  act_in += D(m) * u.mask;
  const double act_out = D(m) * u.elem;
  const double mask_buffer = D(m) * u.mask;
  c.mem_fwd = act_in + act_out;
  c.flops_bwd = D(m) * u.mult;
  c.mem_bwd = D(2 * m) * u.elem + mask_buffer;
  c.activation_buffer = remat ? 0.0 : mask_buffer;
  return c;
}

LayerCost bias_gelu(const System& s, const char* name, I rows, I f) {
  const Units u(s);
  const I m = rows * f;
  LayerCost c;
  c.name = name;
  c.op = KernelOp::Activation;
  c.flops_fwd = D(m) * u.add + D(m) * u.mult * 8;  // bias add, then GELU's 8
  c.activation_buffer = D(m) * u.elem;             // the projection's output, before the bias
  c.mem_fwd = D(2 * m + f) * u.elem;
  c.flops_bwd = D(m) * u.mult * 13 + D(m) * u.add;  // GELU's 13, then the bias gradient's sum
  c.mem_bwd = D(3 * m) * u.elem + D(m + f) * u.elem;
  return c;
}

LayerCost bias_dropout_add(const System& s, const char* name, I rows, I e, bool has_bias) {
  const Units u(s);
  const I m = rows * e;
  const I biases = has_bias ? e : 0;
  LayerCost c;
  c.name = name;
  c.op = KernelOp::Dropout;
  c.flops_fwd = D(m) * u.mult + D(m) * u.add + (has_bias ? D(m) * u.add : 0.0);
  c.mem_fwd = D(3 * m + biases) * u.elem + D(m) * u.mask;
  c.activation_buffer = D(m) * u.mask;
  c.flops_bwd = D(m) * u.mult + (has_bias ? D(m) * u.add : 0.0);
  c.mem_bwd = D(2 * m) * u.elem + D(m) * u.mask + (has_bias ? D(m + e) * u.elem : 0.0);
  return c;
}

LayerCost softmax(const System& s, const char* name, I b, I h, I l1, I l2, I m, bool recompute, bool remat) {
  const Units u(s);
  const I h_local = h / m;
  const I n = b * h_local * l1 * l2;
  LayerCost c;
  c.name = name;
  c.op = KernelOp::Softmax;
  c.recompute = recompute;
  c.flops_fwd = D(n) * (u.exp + u.mult) + D(b * h_local * l1 * (l2 - 1)) * u.add;
  const double buffer = D(n) * u.elem;
  c.mem_fwd = D(n) * u.elem + D(n) * u.elem;
  c.flops_bwd = D(2 * b * h_local * l1 * l2) * u.mult + D(b * h_local * l1 * (l2 - 1)) * u.add + D(n) * u.add;
  c.mem_bwd = D(2 * n) * u.elem + buffer;
  c.activation_buffer = remat ? 0.0 : buffer;
  return c;
}

namespace {
// Row statistics a norm keeps (LayerNorm: mean and std; RMSNorm: the reciprocal rms) and its
// weights per feature (scale, and LayerNorm's shift unless the model has no biases).
I norm_statistics(NormOptions o) { return o.kind == NormKind::LayerNorm ? 2 : 1; }
I norm_weights_per_feature(NormOptions o) { return o.kind == NormKind::LayerNorm && o.shift ? 2 : 1; }

// Norm flop counts shared by the 1D and 2D variants (LayerNorm: the reference's "rough" backward).
// RMSNorm: squares, their sum, the normalization and the scale forward (3n multiplies, n adds);
// backward dgamma (n multiplies, n adds) and dx = rstd (g dy - x rstd^2 mean(g dy x)) (4n
// multiplies, 2n adds).
void layer_norm_flops(LayerCost& c, I b, I l_local, I e_local, const Units& u, NormOptions o) {
  const I n = b * l_local * e_local;
  if (o.kind == NormKind::RmsNorm) {
    c.flops_fwd = D(3 * n) * u.mult + D(n) * u.add;
    c.flops_bwd = D(5 * n) * u.mult + D(3 * n) * u.add;
    return;
  }
  c.flops_fwd = D(2 * n) * u.add;                            // mean
  c.flops_fwd += D(2 * n) * u.add + D(n) * u.mult;           // variance
  c.flops_fwd += D(n) * u.add + D(n) * u.mult;               // normalize
  c.flops_fwd += D(n) * u.mult + D(n) * u.add;               // scale and shift
  c.flops_bwd = D(n) * u.mult + D(2 * n) * u.add;            // dgamma, dbeta
  c.flops_bwd += D(5 * n) * u.mult + D(4 * b * l_local * (e_local - 1)) * u.add;
}

void layer_norm_memory(LayerCost& c, I b, I l_local, I e_local, const Units& u, NormOptions o) {
  const I n = b * l_local * e_local;
  double act_in = D(n) * u.elem;
  act_in += D(norm_statistics(o) * (b * l_local)) * u.elem;  // row statistics
  const double act_out = D(n) * u.elem;
  c.activation_buffer = D(n) * u.elem;
  c.weights_mem = D(norm_weights_per_feature(o) * e_local) * u.elem;
  c.mem_fwd = act_in + act_out + c.weights_mem;
  c.weights_grad_mem = D(norm_weights_per_feature(o) * e_local) * u.elem;
  c.mem_bwd = D(4 * n) * u.elem + c.weights_grad_mem + c.activation_buffer;
}
}  // namespace

// LayerNorm on a sequence-sharded input (l/m); all-gather forward, reduce-scatter backward.
LayerCost layer_norm(const System& s, const char* name, I b, I l, I e, I m, I t, NormOptions norm) {
  const Units u(s);
  LayerCost c;
  c.name = name;
  c.op = norm.kind == NormKind::RmsNorm ? KernelOp::RmsNorm : KernelOp::Norm;
  c.shape = {1, b * (l / m), e, 0};
  layer_norm_flops(c, b, l / m, e, u, norm);
  layer_norm_memory(c, b, l / m, e, u, norm);
  const double full = m > 1 ? D(b * l * e) * u.elem : 0.0;
  c.comm_fwd = one(coll(full, CommType::AllGather, m, t));
  c.comm_bwd = one(coll(full, CommType::ReduceScatter, m, t));
  return c;
}

// LayerNorm on a (l/m2, e/m1) block: statistics all-reduced across m1. The reference takes the
// local embedding as l/m1 (not e/m1); kept, since its published numbers depend on it.
LayerCost layer_norm_2d(const System& s, const char* name, I b, I l, I e, Split2 p, NormOptions norm) {
  const Units u(s);
  const I m2 = p.dim1, m1 = p.dim2, t1 = p.t2;
  const I l_local = l / m2, e_local = l / m1;
  LayerCost c;
  c.name = name;
  c.op = norm.kind == NormKind::RmsNorm ? KernelOp::RmsNorm : KernelOp::Norm;
  c.shape = {1, b * l_local, e / m1, 0};
  layer_norm_flops(c, b, l_local, e_local, u, norm);
  layer_norm_memory(c, b, l_local, e_local, u, norm);
  // forward: the row statistics; backward: the weight gradients and the rows' reductions
  const I stats = norm_statistics(norm), weights = norm_weights_per_feature(norm);
  c.comm_fwd = one(coll(m1 > 1 ? D(stats * b * l_local) * u.elem : 0.0, CommType::AllReduce, m1, t1));
  c.comm_bwd = one(coll(m1 > 1 ? D(weights * e / m1 + stats * b * l / m2) * u.elem : 0.0, CommType::AllReduce, m1, t1));
  return c;
}

LayerCost logits(const System& s, const char* name, I b, I l, I q, I h, I m, bool recompute) {
  const Units u(s);
  const I h_local = h / m;
  LayerCost c;
  c.name = name;
  c.shape = {b * h_local, l, q, l};
  c.recompute = recompute;
  c.flops_fwd = dot_flops(b * h_local * l * l, q, u);
  double act_in = D(b * h_local * l * q) * u.elem;
  act_in += D(b * h_local * l * q) * u.elem;
  const double act_out = D(b * h_local * l * l) * u.elem;
  c.activation_buffer = D(2 * (b * h_local * l * q)) * u.elem;  // Q and K
  c.mem_fwd = act_in + act_out;
  c.flops_bwd = dot_flops(2 * b * h_local * l * q, l, u);
  c.mem_bwd = D(2 * (b * h_local * l * q)) * u.elem + D(2 * (b * h_local * l * l)) * u.elem + c.activation_buffer;
  return c;
}

LayerCost attend(const System& s, const char* name, I b, I l, I q, I h, I m, bool remat) {
  const Units u(s);
  const I h_local = h / m;
  LayerCost c;
  c.name = name;
  c.shape = {b * h_local, l, l, q};
  c.flops_fwd = dot_flops(b * h_local * l * q, l, u);
  double act_in = D(b * h_local * l * l) * u.elem;
  act_in += D(b * h_local * l * q) * u.elem;
  const double act_out = D(b * h_local * l * q) * u.elem;
  const double attention_buffer = D(b * h_local * l * l) * u.elem;
  const double value_buffer = D(b * h_local * l * q) * u.elem;
  c.mem_fwd = act_in + act_out;
  c.flops_bwd = dot_flops(b * h_local * l * l, q, u);
  c.flops_bwd += dot_flops(b * h_local * l * q, l, u);
  c.mem_bwd = D(3 * (b * h_local * l * q)) * u.elem + D(b * h_local * l * l) * u.elem + attention_buffer + value_buffer;
  c.activation_buffer = (remat ? 0.0 : attention_buffer) + value_buffer;
  return c;
}

// Context-parallel logits: heads over m1, queries over m2; keys all-gathered across m2.
LayerCost logits_seqp(const System& s, const char* name, I b, I l, I q, I h, Split2 p) {
  const Units u(s);
  const I m2 = p.dim1, m1 = p.dim2, t2 = p.t1;
  const I l_local = l / m2, h_local = h / m1;
  LayerCost c;
  c.name = name;
  c.shape = {b * h_local, l_local, q, l};
  c.flops_fwd = dot_flops(b * h_local * l_local * l, q, u);
  double act_in = D(b * h_local * l_local * q) * u.elem;
  act_in += D(b * h_local * l * q) * u.elem;
  const double act_out = D(b * h_local * l_local * l) * u.elem;
  c.activation_buffer = D(2 * (b * h_local * l_local * q)) * u.elem;
  c.mem_fwd = act_in + act_out;
  const double keys = m2 > 1 ? D(b * h_local * l * q) * u.elem : 0.0;
  c.comm_fwd = one(coll(keys, CommType::AllGather, m2, t2));
  c.flops_bwd = dot_flops(b * h_local * l_local * q, l, u);
  c.flops_bwd += dot_flops(b * h_local * l * q, l_local, u);
  const double grad_mem = D(b * h_local * l_local * q + b * h_local * l * q) * u.elem;
  const double grad_att = D(2 * (b * h_local * l_local * l)) * u.elem;
  c.mem_bwd = grad_mem + grad_att + c.activation_buffer;
  c.comm_bwd = list({coll(keys, CommType::AllGather, m2, t2), coll(keys, CommType::ReduceScatter, m2, t2)});
  return c;
}

LayerCost attend_seqp(const System& s, const char* name, I b, I l, I q, I h, Split2 p) {
  const Units u(s);
  const I m2 = p.dim1, m1 = p.dim2, t2 = p.t1;
  const I l_local = l / m2, h_local = h / m1;
  LayerCost c;
  c.name = name;
  c.shape = {b * h_local, l_local, l, q};
  c.flops_fwd = dot_flops(b * h_local * l_local * q, l, u);
  double act_in = D(b * h_local * l_local * l) * u.elem;
  act_in += D(b * h_local * l * q) * u.elem;
  const double act_out = D(b * h_local * l_local * q) * u.elem;
  c.activation_buffer = D(b * h_local * l_local * l) * u.elem;
  c.activation_buffer += D(b * h_local * l_local * q) * u.elem;
  c.mem_fwd = act_in + act_out;
  const double values = m2 > 1 ? D(b * h_local * l * q) * u.elem : 0.0;
  c.comm_fwd = one(coll(values, CommType::AllGather, m2, t2));
  c.flops_bwd = dot_flops(b * h_local * l_local * l, q, u);
  c.flops_bwd += dot_flops(b * h_local * l * q, l_local, u);
  const double grad_mem = D(2 * (b * h_local * l_local * q)) * u.elem + D(b * h_local * l_local * q) * u.elem;
  const double grad_att = D(b * h_local * l_local * l) * u.elem;
  const double gathered = D(b * h_local * (l_local * l + l * q)) * u.elem;
  c.mem_bwd = grad_mem + grad_att + gathered;
  c.comm_bwd = list({coll(values, CommType::AllGather, m2, t2), coll(values, CommType::ReduceScatter, m2, t2)});
  return c;
}

namespace {
// Flash attention on a (rows x l) score block per head: softmax and dropout run on vector units,
// so the reference scales their flops by matrix/vector peak to time them at tensor-core rate.
double softmax_fwd_flops(I bh, I rows, I l, const Units& u) {
  return D(bh * rows * l) * (u.exp + u.mult) + D(bh * rows * (l - 1)) * u.add;
}
double softmax_bwd_flops(I bh, I rows, I l, const Units& u) {
  return D(2 * bh * rows * l) * u.mult + D(bh * rows * (l - 1)) * u.add + D(bh * rows * l) * u.add;
}
}  // namespace

// Every flop of flash attention belongs to a score-matrix term (QK^T, softmax, dropout, PV, their
// gradients and the recomputed forward), so causal masking, which skips the blocks above the
// diagonal (FlashAttention-2, Dao 2023, section 3.1.1), halves all of them; the memory traffic
// (Q, K, V, O, statistics) is unchanged.
constexpr double kCausalFraction = 0.5;

LayerCost fused_la(const System& s, const char* name, I b, I l, I q, I h, I m, AttentionCoreOptions o) {
  const Units u(s);
  const double tensor_core_factor = s.matrix_flops_fp16 / s.vector_flops_fp16;
  const I h_local = h / m;
  const I bh = b * h_local;
  const I bkv = b * (o.kv_local > 0 ? o.kv_local : h_local);  // key/value heads (GQA)
  LayerCost c;
  c.name = name;
  c.op = KernelOp::Attention;
  c.shape = {bh, l, q, l, o.causal};
  c.flops_fwd = dot_flops(bh * l * l, q, u);                             // logits
  c.flops_fwd += softmax_fwd_flops(bh, l, l, u) * tensor_core_factor;   // softmax
  if (o.dropout) c.flops_fwd += D(bh * l * l) * u.mult * tensor_core_factor;  // dropout
  c.flops_fwd += dot_flops(bh * l * q, l, u);                           // attend

  double act_in = D(bh * l * q) * u.elem;       // Q
  act_in += D(2 * (bkv * l * q)) * u.elem;      // K and V
  act_in += D(bh * l) * u.elem;                 // softmax statistics
  const double act_out = D(bh * l * q) * u.elem;
  c.activation_buffer = D(bh * l * q + 2 * (bkv * l * q)) * u.elem;  // Q, K, V
  if (o.dropout) c.activation_buffer += D(bh * l) * u.elem;          // dropout RNG state
  c.activation_buffer += D(bh * l) * u.elem;          // softmax statistics
  c.activation_buffer += D(bh * l * q) * u.elem;      // output, for the backward pass
  c.mem_fwd = act_in + act_out;

  c.flops_bwd = dot_flops(2 * bh * l * q, l, u);                         // dQ, dK
  c.flops_bwd += softmax_bwd_flops(bh, l, l, u) * tensor_core_factor;
  if (o.dropout) c.flops_bwd += D(bh * l * l) * u.mult * tensor_core_factor;
  c.flops_bwd += dot_flops(bh * l * l, q, u);                            // dA
  c.flops_bwd += dot_flops(bh * l * q, l, u);                            // dV
  c.flops_bwd += dot_flops(bh * l * l, q, u);                            // recomputed logits
  c.flops_bwd += softmax_fwd_flops(bh, l, l, u) * tensor_core_factor;   // recomputed softmax
  if (o.dropout) c.flops_bwd += D(bh * l * l) * u.mult * tensor_core_factor;  // recomputed dropout
  c.mem_bwd = D(2 * (bh * l * q) + 2 * (bkv * l * q)) * u.elem + c.activation_buffer;  // dQ, dOut, dK, dV
  if (o.causal) {
    c.flops_fwd *= kCausalFraction;
    c.flops_bwd *= kCausalFraction;
  }
  return c;
}

// Context-parallel flash attention: K and V all-gathered over m2, their grads reduce-scattered.
// Causal: with the sequence split into 2 m2 chunks and rank i holding chunks i and 2 m2 - 1 - i
// (the load-balanced chunking of Megatron-Core's context parallelism, docs "context_parallel"),
// every rank computes half of its rows' score blocks.
LayerCost fused_la_seqp(const System& s, const char* name, I b, I l, I q, I h, Split2 p, AttentionCoreOptions o) {
  const Units u(s);
  const double tensor_core_factor = s.matrix_flops_fp16 / s.vector_flops_fp16;
  const I m2 = p.dim1, m1 = p.dim2, t2 = p.t1;
  const I l_local = l / m2, h_local = h / m1;
  const I bh = b * h_local;
  const I kv_local = o.kv_local > 0 ? o.kv_local : h_local;
  const I bkv = b * kv_local;
  LayerCost c;
  c.name = name;
  c.op = KernelOp::Attention;
  c.shape = {bh, l_local, q, l, o.causal};
  c.flops_fwd = dot_flops(bh * l_local * l, q, u);
  c.flops_fwd += softmax_fwd_flops(bh, l_local, l, u) * tensor_core_factor;
  if (o.dropout) c.flops_fwd += D(bh * l_local * l) * u.mult * tensor_core_factor;
  c.flops_fwd += dot_flops(bh * l_local * q, l, u);

  double act_in = D(bh * l_local * q) * u.elem;
  act_in += D(2 * (bkv * l * q)) * u.elem;  // gathered K and V
  act_in += D(bh * l_local) * u.elem;
  const double act_out = D(bh * l_local * q) * u.elem;
  c.activation_buffer = D(bh * l_local * q + 2 * (bkv * l_local * q)) * u.elem;
  if (o.dropout) c.activation_buffer += D(bh * l_local) * u.elem;
  c.activation_buffer += D(bh * l_local) * u.elem;
  c.activation_buffer += D(bh * l_local * q) * u.elem;
  c.mem_fwd = act_in + act_out;
  const double kv = m2 > 1 ? D(2 * b * kv_local * l * q) * u.elem : 0.0;
  c.comm_fwd = one(coll(kv, CommType::AllGather, m2, t2));

  c.flops_bwd = dot_flops(bh * l_local * q, l, u);
  c.flops_bwd += dot_flops(bh * l * q, l_local, u);
  c.flops_bwd += softmax_bwd_flops(bh, l_local, l, u) * tensor_core_factor;
  if (o.dropout) c.flops_bwd += D(bh * l_local * l) * u.mult * tensor_core_factor;
  c.flops_bwd += dot_flops(bh * l_local * l, q, u);
  c.flops_bwd += dot_flops(bh * l * q, l_local, u);
  c.flops_bwd += dot_flops(bh * l_local * l, q, u);
  c.flops_bwd += softmax_fwd_flops(bh, l_local, l, u) * tensor_core_factor;
  if (o.dropout) c.flops_bwd += D(bh * l_local * l) * u.mult * tensor_core_factor;
  double grad_mem = D(2 * (bkv * l * q)) * u.elem;  // dK, dV before the reduce-scatter
  grad_mem += D(2 * (bh * l_local * q)) * u.elem;  // dQ, dOut
  c.mem_bwd = grad_mem + c.activation_buffer;
  c.comm_bwd = list({coll(kv, CommType::AllGather, m2, t2), coll(kv, CommType::ReduceScatter, m2, t2)});
  if (o.causal) {
    c.flops_fwd *= kCausalFraction;
    c.flops_bwd *= kCausalFraction;
  }
  return c;
}

LayerCost fused_la_cp(const System& s, const char* name, I b, I l, I q, I h, I tp, I cp, I nv_cp, CpComm comm,
                      I domain_stride, AttentionCoreOptions o) {
  // fused_la_seqp's grid: the sequence (dim1) over cp, the heads (dim2) over tp
  LayerCost c = fused_la_seqp(s, name, b, l, q, h, {cp, tp, nv_cp, 1}, o);
  if (comm == CpComm::AllGather || cp == 1) {
    for (CommSet* set : {&c.comm_fwd, &c.comm_bwd}) {
      for (std::uint8_t i = 0; i < set->count; ++i) set->items[i].stride = static_cast<std::int32_t>(domain_stride);
    }
    return c;
  }
  const Units u(s);
  const I kv_local = o.kv_local > 0 ? o.kv_local : h / tp;
  // one ring step: this rank's K and V (l / cp tokens) to the next rank; the step's slowest link
  // bounds it, NVLink only when the whole ring is in one domain
  const double step_kv = D(2 * (b * kv_local * (l / cp) * q)) * u.elem;
  const I fast = nv_cp == cp ? 2 : 1;
  const auto span = static_cast<std::int32_t>((cp / nv_cp - 1) * domain_stride);  // first domain to last
  c.comm_fwd = one({step_kv, CommType::P2P, std::max<std::int32_t>(span, 1), 2, fast});
  c.comm_bwd = one({2 * step_kv, CommType::P2P, std::max<std::int32_t>(span, 1), 2, fast});  // K, V and dK, dV
  c.overlap = Overlap::ContextRing;
  c.ring_steps = cp;
  return c;
}

LayerCost embedding(const System& s, const char* name, I tokens, I e, I v_local, I vocab_split, I fast,
                    I position_rows) {
  const Units u(s);
  LayerCost c;
  c.name = name;
  c.op = KernelOp::Embedding;
  c.weights_mem = D(v_local * e + position_rows * e) * u.elem;
  c.weights_grad_mem = c.weights_mem;
  const I own_rows = tokens * e / vocab_split;  // on average the tokens whose row is local
  c.flops_fwd = position_rows > 0 ? D(tokens * e) * u.add : 0.0;
  // the local rows read, the partial output written (and the position rows read and added)
  c.mem_fwd = D(own_rows + tokens * e + (position_rows > 0 ? 2 * tokens * e : 0)) * u.elem;
  const double volume = vocab_split > 1 ? D(tokens * e) * u.elem : 0.0;
  c.comm_fwd = one(coll(volume, CommType::ReduceScatter, vocab_split, fast));
  c.flops_bwd = D(own_rows + (position_rows > 0 ? tokens * e : 0)) * u.add;
  // the gathered output gradient read, the dense table gradient written
  c.mem_bwd = D(tokens * e) * u.elem + c.weights_grad_mem;
  c.comm_bwd = one(coll(volume, CommType::AllGather, vocab_split, fast));
  return c;
}

LayerCost all_to_all(const System& s, const char* name, I elements, I group, I fast, I stride) {
  const Units u(s);
  LayerCost c;
  c.name = name;
  c.op = KernelOp::Collective;
  const double volume = D(elements) * u.elem;
  c.mem_fwd = 2 * volume;
  c.mem_bwd = 2 * volume;
  c.comm_fwd = one({group > 1 ? volume : 0.0, CommType::AllToAll, static_cast<std::int32_t>(stride), group, fast});
  c.comm_bwd = c.comm_fwd;  // the gradients travel back the same way
  return c;
}

LayerCost repeated(LayerCost c, I experts) {
  const double k = D(experts);
  for (double* v : {&c.flops_fwd, &c.mem_fwd, &c.activation_buffer, &c.weights_mem, &c.weights_grad_mem, &c.flops_bwd,
                    &c.mem_bwd}) {
    *v *= k;
  }
  for (CommSet* set : {&c.comm_fwd, &c.comm_bwd}) {
    for (std::uint8_t i = 0; i < set->count; ++i) set->items[i].volume_gb *= k;
  }
  c.shape.batch *= experts;  // a grouped GEMM: the calibration times every expert's product
  return c;
}

LayerCost cross_entropy(const System& s, const char* name, I tokens, I v_local, I vocab_split, I fast,
                        LogitsDtype logits_dtype) {
  const Units u(s);
  const double logit_size = logits_dtype == LogitsDtype::Fp32 ? 2 * u.elem : u.elem;
  const I n = tokens * v_local;
  LayerCost c;
  c.name = name;
  c.op = KernelOp::CrossEntropy;
  // maximum, subtract, exp, sum
  c.flops_fwd = D(n) * u.exp + D(3 * n) * u.add;
  c.activation_buffer = D(n) * logit_size;  // exp(logits - max), kept for the backward
  c.mem_fwd = D(n) * u.elem + c.activation_buffer;
  // three fp32 values per token: the maximum, the target's logit, the sum of exponentials
  c.comm_fwd = one(coll(vocab_split > 1 ? D(3 * tokens) * 2 * u.elem : 0.0, CommType::AllReduce, vocab_split, fast));
  // softmax = exp / sum, minus the one-hot target
  c.flops_bwd = D(n) * u.mult + D(tokens) * u.add;
  c.mem_bwd = c.activation_buffer + D(n) * u.elem;
  return c;
}

}  // namespace perfsweep
