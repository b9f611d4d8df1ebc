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

// The MoE permutation's and router's kernels (LayerCost::routing): row gathers and scatters of
// the routed tokens, timed as the kernel calibration's embedding lookup, the one fitted kernel that
// gathers whole rows by index (its forward curve for both passes: the embedding's backward curve
// is the dense table gradient's, not a gather), else the elementwise class's roofline.
double routing_seconds(const System& s, const StreamWork& w) {
  if (const kernels::StreamModel* m = fitted_stream(s, kernels::StreamKind::Embedding)) {
    return stream_seconds(s, *m, w.kernels, w.gb);
  }
  return elementwise_seconds(s, w.kernels, w.gb);
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
  if (c.quant[pass].total_kernels() > 0 || c.quant[pass].total_gb() > 0) [[unlikely]] {
    p.cast = quantization_seconds(s, c.quant[pass]);
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
    // The set's first collective is the ring's step; any after it (a hierarchical exchange's
    // all-to-alls before and after the ring) run serially.
    const double steps = D(c.ring_steps);
    const Collective& ring = comms.items[0];
    const double transfer = time_collectives(s, comms.first(1), 1.0);
    const double step_compute = t_compute / steps;
    const double latency =
        transfer > 0 ? (ring.fast_domain > 1 ? s.nvlink_latency : network_path(s, CommType::P2P, 2, ring.stride).latency)
                     : 0.0;
    const double exposed = (steps - 1) * std::max(transfer - step_compute, 0.0);
    p.comm = latency + exposed;
    if (comms.count > 1) [[unlikely]] p.comm += time_collectives(s, comms.after(1), 1.0);
    p.hidden = (steps - 1) * transfer - exposed;
  } else {
    p.comm = time_collectives(s, comms, 1.0);
  }
  p.t = t_compute + p.comm;
  if (p.cast > 0) p.t += p.cast;  // the quantization kernels run before the GEMM, serially
  p.mem = std::max(t_compute - p.comp, 0.0);
  if (c.routing[pass].kernels > 0) [[unlikely]] {
    // memory time, after the pass's own kernel (a dispatch or combine with the permutation moves
    // no rows of its own: t_mem 0)
    const double routing = routing_seconds(s, c.routing[pass]);
    p.t += routing;
    p.mem += routing;
    p.intensity = p.comp / (t_mem + routing);
  }
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

namespace {
// 1D weight split (Linear, LinearSeqp): the local product, one reduce-scatter each way.
void split_1d_gemm(const System& s, GemmShape g, GemmComm comm, LayerCost& c) {
  const Units u(s);
  const Group ks = comm.k_split, ns = comm.n_split;
  require_1d(ns.gpus, ks.gpus, c.name);
  const I rows = g.rows, k = g.k, n = g.n;
  c.flops_fwd = dot_flops(rows * n, k, u);
  const double act_in = D(rows * k) * u.elem;
  const double act_out = D(rows * n) * u.elem;
  c.activation_buffer = D(rows * k) * u.elem;
  c.weights_mem = D(k * n) * u.elem;
  c.mem_fwd = act_in + act_out + c.weights_mem;
  c.comm_fwd = one(coll(ks.gpus > 1 ? D(rows * g.n_full) * u.elem : 0.0, CommType::ReduceScatter, ks.gpus, ks.nvlink));

  const double xgrad_flops = dot_flops(rows * k, n, u);
  const double wgrad_flops = dot_flops(k * n, rows, u);
  c.flops_bwd = xgrad_flops + wgrad_flops;
  c.weights_grad_mem = D(k * n) * u.elem;
  const double xgrad_mem = D(rows * k) * u.elem;
  const double ygrad_mem = D(rows * n) * u.elem;
  c.mem_bwd = c.weights_grad_mem + xgrad_mem + 2 * ygrad_mem + c.weights_mem + c.activation_buffer;
  c.comm_bwd = one(coll(ns.gpus > 1 ? D(rows * g.k_full) * u.elem : 0.0, CommType::ReduceScatter, ns.gpus, ns.nvlink));
}

// SUMMA (LinearSumma): the local product over the whole k in nb rounds, X's block of k / n_split
// columns and W's of k / k_split rows broadcast in each.
void summa_gemm(const System& s, GemmShape g, GemmComm comm, LayerCost& c) {
  const Units u(s);
  const I nb = comm.summa_nb;
  const I rows = g.rows, k = g.k, n = g.n;
  const I x_cols = k / comm.n_split.gpus, w_rows = k / comm.k_split.gpus;
  c.overlap = Overlap::Summa;
  c.summa_nb = nb;
  // k outer products and k additions across all SUMMA iterations
  c.flops_fwd = D(rows * n) * (D(k) * u.mult + D(k) * u.add);
  c.activation_buffer = D(rows * x_cols) * u.elem;
  c.weights_mem = D(w_rows * n) * u.elem;
  c.mem_fwd = D(rows * k + k * n + rows * n * nb) * u.elem;
  const Group xg = comm.n_split, wg = comm.k_split;
  const double x_bcast = xg.gpus > 1 ? D(rows * k) * u.elem : 0.0;
  const double w_bcast = wg.gpus > 1 ? D(k * n) * u.elem : 0.0;
  c.comm_fwd = list({coll(x_bcast, CommType::Broadcast, xg.gpus, xg.nvlink),
                     coll(w_bcast, CommType::Broadcast, wg.gpus, wg.nvlink)});

  const double xgrad_flops = dot_flops(rows * k, n, u);
  const double wgrad_flops = dot_flops(k * n, rows, u);
  c.flops_bwd = xgrad_flops + wgrad_flops;
  c.weights_grad_mem = D(w_rows * n) * u.elem;
  c.mem_bwd = D(n * k + rows * n * nb + rows * k) * u.elem;
  c.mem_bwd += D(k * rows + rows * n * nb + k * n) * u.elem;
  c.comm_bwd = list({coll(w_bcast, CommType::Broadcast, wg.gpus, wg.nvlink),
                     coll(x_bcast, CommType::Reduce, xg.gpus, xg.nvlink),
                     coll(x_bcast, CommType::Broadcast, xg.gpus, xg.nvlink),
                     coll(w_bcast, CommType::Reduce, wg.gpus, wg.nvlink)});
}
}  // namespace

// Y = XW on the local (rows x k)(k x n).
LayerCost gemm(const System& s, const char* name, GemmShape local, GemmComm comm) {
  LayerCost c;
  c.name = name;
  c.shape = {1, local.rows, local.k, local.n};
  if (comm.summa_nb > 0) {
    summa_gemm(s, local, comm, c);
  } else {
    split_1d_gemm(s, local, comm, c);
  }
  return c;
}

LayerCost bias(const System& s, const char* name, I rows, I width) {
  const Units u(s);
  LayerCost c;
  c.name = name;
  c.op = KernelOp::Bias;
  c.weights_mem = D(1 * width) * u.elem;
  c.flops_fwd = D(rows) * (D(width) * u.add);
  c.mem_fwd = D(rows * width + 1 * width) * u.elem;
  c.weights_grad_mem = D(1 * width) * u.elem;
  c.flops_bwd = D(rows * width) * u.add;
  c.mem_bwd = D(rows * width + 1 * width) * u.elem;
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

LayerCost softmax(const System& s, const char* name, I rows, I cols, bool recompute, bool remat) {
  const Units u(s);
  const I n = rows * cols;
  LayerCost c;
  c.name = name;
  c.op = KernelOp::Softmax;
  c.recompute = recompute;
  c.flops_fwd = D(n) * (u.exp + u.mult) + D(rows * (cols - 1)) * u.add;
  const double buffer = D(n) * u.elem;
  c.mem_fwd = D(n) * u.elem + D(n) * u.elem;
  c.flops_bwd = D(2 * rows * cols) * u.mult + D(rows * (cols - 1)) * u.add + D(n) * u.add;
  c.mem_bwd = D(2 * n) * u.elem + buffer;
  c.activation_buffer = remat ? 0.0 : buffer;
  return c;
}

namespace {
// Row statistics a norm keeps (LayerNorm: mean and std; RMSNorm: the reciprocal rms) and its
// weights per feature (scale, and LayerNorm's shift unless the model has no biases).
I norm_statistics(NormOptions o) { return o.kind == NormKind::LayerNorm ? 2 : 1; }
I norm_weights_per_feature(NormOptions o) { return o.kind == NormKind::LayerNorm && o.shift ? 2 : 1; }

// Norm flop counts on `rows` rows of `width` features (LayerNorm: the reference's "rough" backward).
// RMSNorm: squares, their sum, the normalization and the scale forward (3n multiplies, n adds);
// backward dgamma (n multiplies, n adds) and dx = rstd (g dy - x rstd^2 mean(g dy x)) (4n
// multiplies, 2n adds).
void layer_norm_flops(LayerCost& c, I rows, I width, const Units& u, NormOptions o) {
  const I n = rows * width;
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
  c.flops_bwd += D(5 * n) * u.mult + D(4 * rows * (width - 1)) * u.add;
}

void layer_norm_memory(LayerCost& c, I rows, I width, const Units& u, NormOptions o) {
  const I n = rows * width;
  double act_in = D(n) * u.elem;
  act_in += D(norm_statistics(o) * rows) * u.elem;  // row statistics
  const double act_out = D(n) * u.elem;
  c.activation_buffer = D(n) * u.elem;
  c.weights_mem = D(norm_weights_per_feature(o) * width) * u.elem;
  c.mem_fwd = act_in + act_out + c.weights_mem;
  c.weights_grad_mem = D(norm_weights_per_feature(o) * width) * u.elem;
  c.mem_bwd = D(4 * n) * u.elem + c.weights_grad_mem + c.activation_buffer;
}
}  // namespace

// LayerNorm and RMSNorm on the local block; the split's one collective per pass.
LayerCost layer_norm(const System& s, const char* name, NormShape local, NormComm comm, NormOptions norm) {
  const Units u(s);
  const I rows = local.rows, width = local.width;
  LayerCost c;
  c.name = name;
  c.op = norm.kind == NormKind::RmsNorm ? KernelOp::RmsNorm : KernelOp::Norm;
  const Group rs = comm.rows, fs = comm.features;
  c.shape = {1, rows, local.full_width / fs.gpus, 0};
  layer_norm_flops(c, rows, width, u, norm);
  layer_norm_memory(c, rows, width, u, norm);
  if (comm.plan == NormPlan::GatherRows) {
    const double full = rs.gpus > 1 ? D(local.full_rows * width) * u.elem : 0.0;
    c.comm_fwd = one(coll(full, CommType::AllGather, rs.gpus, rs.nvlink));
    c.comm_bwd = one(coll(full, CommType::ReduceScatter, rs.gpus, rs.nvlink));
    return c;
  }
  // forward: the row statistics; backward: the weight gradients and the rows' reductions
  const I stats = norm_statistics(norm), weights = norm_weights_per_feature(norm);
  const I fg = fs.gpus;
  c.comm_fwd = one(coll(fg > 1 ? D(stats * rows) * u.elem : 0.0, CommType::AllReduce, fg, fs.nvlink));
  c.comm_bwd =
      one(coll(fg > 1 ? D(weights * local.full_width / fg + stats * local.full_rows / rs.gpus) * u.elem : 0.0,
               CommType::AllReduce, fg, fs.nvlink));
  return c;
}

namespace {
// The keys' all-gather over the sequence split forward; all-gather and reduce-scatter of their
// gradients backward (the reference's *Seqp layers), the group's domains `stride` apart.
inline void gather_keys(LayerCost& c, double volume, const KvExchange& kv) {
  const auto stride = static_cast<std::int32_t>(kv.stride);
  const Collective gather{volume, CommType::AllGather, stride, kv.seq.gpus, kv.seq.nvlink};
  c.comm_fwd = one(gather);
  c.comm_bwd = list({gather, {volume, CommType::ReduceScatter, stride, kv.seq.gpus, kv.seq.nvlink}});
}
}  // namespace

// Scores Q K^T: (queries x head_dim)(head_dim x keys) per head.
LayerCost attention_scores(const System& s, const char* name, AttentionShape a, KvExchange kv, bool recompute) {
  const Units u(s);
  const I bh = a.b * a.heads, q = a.head_dim, lq = a.queries, lk = a.keys;
  LayerCost c;
  c.name = name;
  c.shape = {bh, lq, q, lk};
  c.recompute = recompute;
  c.flops_fwd = dot_flops(bh * lq * lk, q, u);
  double act_in = D(bh * lq * q) * u.elem;  // Q
  act_in += D(bh * lk * q) * u.elem;        // K, gathered where split
  const double act_out = D(bh * lq * lk) * u.elem;
  c.activation_buffer = D(2 * (bh * lq * q)) * u.elem;  // Q and the local K
  c.mem_fwd = act_in + act_out;
  c.flops_bwd = dot_flops(bh * lq * q, lk, u);   // dQ
  c.flops_bwd += dot_flops(bh * lk * q, lq, u);  // dK
  const double grad_mem = D(bh * lq * q + bh * lk * q) * u.elem;
  const double grad_att = D(2 * (bh * lq * lk)) * u.elem;
  c.mem_bwd = grad_mem + grad_att + c.activation_buffer;
  if (kv.source != KvSource::Local) gather_keys(c, kv.seq.gpus > 1 ? D(bh * lk * q) * u.elem : 0.0, kv);
  return c;
}

// Values P V: (queries x keys)(keys x head_dim) per head.
LayerCost attention_values(const System& s, const char* name, AttentionShape a, KvExchange kv, bool remat) {
  const Units u(s);
  const I bh = a.b * a.heads, q = a.head_dim, lq = a.queries, lk = a.keys;
  LayerCost c;
  c.name = name;
  c.shape = {bh, lq, lk, q};
  c.flops_fwd = dot_flops(bh * lq * q, lk, u);
  double act_in = D(bh * lq * lk) * u.elem;  // probabilities
  act_in += D(bh * lk * q) * u.elem;         // V, gathered where split
  const double act_out = D(bh * lq * q) * u.elem;
  const double attention_buffer = D(bh * lq * lk) * u.elem;
  const double value_buffer = D(bh * lq * q) * u.elem;
  c.mem_fwd = act_in + act_out;
  c.flops_bwd = dot_flops(bh * lq * lk, q, u);
  c.flops_bwd += dot_flops(bh * lk * q, lq, u);
  if (kv.source == KvSource::Local) {
    c.mem_bwd = D(3 * (bh * lq * q)) * u.elem + D(bh * lq * lk) * u.elem + attention_buffer + value_buffer;
  } else {
    // AttendSeqp's terms: the gradients, the probabilities and the gathered values
    const double grad_mem = D(2 * (bh * lq * q)) * u.elem + D(bh * lq * q) * u.elem;
    const double grad_att = D(bh * lq * lk) * u.elem;
    const double gathered = D(bh * (lq * lk + lk * q)) * u.elem;
    c.mem_bwd = grad_mem + grad_att + gathered;
    gather_keys(c, kv.seq.gpus > 1 ? D(bh * lk * q) * u.elem : 0.0, kv);
  }
  c.activation_buffer = (remat ? 0.0 : attention_buffer) + value_buffer;
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

// Flash attention. Sequence-split (Gathered, Ring): K and V all-gathered over the sequence split
// or passed round its ring, their gradients reduce-scattered or passed back. Causal: with the
// sequence split into 2 seq.gpus chunks and rank i holding chunks i and 2 seq.gpus - 1 - i (the
// load-balanced chunking of Megatron-Core's context parallelism, docs "context_parallel"),
// every rank computes half of its rows' score blocks.
LayerCost attention_core(const System& s, const char* name, AttentionShape a, KvExchange kv, AttentionCoreOptions o) {
  const Units u(s);
  const double tensor_core_factor = s.matrix_flops_fp16 / s.vector_flops_fp16;
  // q: the queries' and keys' features per head, v: the values' (and the output's), the same but
  // under MLA, so every count below is the reference's where they agree
  const I bh = a.b * a.heads, bkv = a.b * a.kv_heads, q = a.head_dim, v = a.values(), lq = a.queries, lk = a.keys;
  LayerCost c;
  c.name = name;
  c.op = KernelOp::Attention;
  c.shape = {bh, lq, q, lk, o.causal};
  if (v != q) c.shape.value_depth = v;
  c.flops_fwd = dot_flops(bh * lq * lk, q, u);                                  // logits
  c.flops_fwd += softmax_fwd_flops(bh, lq, lk, u) * tensor_core_factor;         // softmax
  if (o.dropout) c.flops_fwd += D(bh * lq * lk) * u.mult * tensor_core_factor;  // dropout
  c.flops_fwd += dot_flops(bh * lq * v, lk, u);                                 // attend

  double act_in = D(bh * lq * q) * u.elem;          // Q
  act_in += D(bkv * lk * q + bkv * lk * v) * u.elem;  // K and V, gathered where split
  act_in += D(bh * lq) * u.elem;                    // softmax statistics
  const double act_out = D(bh * lq * v) * u.elem;
  c.activation_buffer = D(bh * lq * q + (bkv * lq * q + bkv * lq * v)) * u.elem;  // Q and the local K, V
  if (o.dropout) c.activation_buffer += D(bh * lq) * u.elem;                      // dropout RNG state
  c.activation_buffer += D(bh * lq) * u.elem;                                     // softmax statistics
  c.activation_buffer += D(bh * lq * v) * u.elem;                                 // output, for the backward pass
  c.mem_fwd = act_in + act_out;

  // dQ and dK (FusedLA's one dot_flops(2 bh l q, l) where keys = queries: the same double)
  c.flops_bwd = dot_flops(bh * lq * q, lk, u);
  c.flops_bwd += dot_flops(bh * lk * q, lq, u);
  c.flops_bwd += softmax_bwd_flops(bh, lq, lk, u) * tensor_core_factor;
  if (o.dropout) c.flops_bwd += D(bh * lq * lk) * u.mult * tensor_core_factor;
  c.flops_bwd += dot_flops(bh * lq * lk, v, u);                                 // dA
  c.flops_bwd += dot_flops(bh * lk * v, lq, u);                                 // dV
  c.flops_bwd += dot_flops(bh * lq * lk, q, u);                                 // recomputed logits
  c.flops_bwd += softmax_fwd_flops(bh, lq, lk, u) * tensor_core_factor;         // recomputed softmax
  if (o.dropout) c.flops_bwd += D(bh * lq * lk) * u.mult * tensor_core_factor;  // recomputed dropout
  if (o.causal) {
    c.flops_fwd *= kCausalFraction;
    c.flops_bwd *= kCausalFraction;
  }
  if (o.window > 0) [[unlikely]] {
    // the window's band of the causal score matrix, over the whole sequence (the keys)
    const double share = window_share_of_causal(lk, o.window);
    c.flops_fwd *= share;
    c.flops_bwd *= share;
    c.shape.window = o.window;
  }
  if (o.sinks) [[unlikely]] {
    c.weights_mem = D(a.heads) * u.elem;
    c.weights_grad_mem = c.weights_mem;
  }
  if (kv.source == KvSource::Local || kv.source == KvSource::AllToAll) {
    c.mem_bwd = D((bh * lq * q + bh * lq * v) + (bkv * lk * q + bkv * lk * v)) * u.elem + c.activation_buffer;  // dQ, dOut, dK, dV
    if (kv.source == KvSource::AllToAll && kv.seq.gpus > 1) {
      // the rank's Q, K, V (and the output) before and after the exchange hold as many elements
      const double qkv = D(bh * lq * q + (bkv * lk * q + bkv * lk * v)) * u.elem, out = D(bh * lq * v) * u.elem;
      const auto stride = static_cast<std::int32_t>(kv.stride);
      const Collective a2a_qkv{qkv, CommType::AllToAll, stride, kv.seq.gpus, kv.seq.nvlink};
      const Collective a2a_out{out, CommType::AllToAll, stride, kv.seq.gpus, kv.seq.nvlink};
      c.comm_fwd = list({a2a_qkv, a2a_out});
      c.comm_bwd = list({a2a_out, a2a_qkv});  // dOut in, dQ, dK, dV back
    }
    return c;
  }
  double grad_mem = D(bkv * lk * q + bkv * lk * v) * u.elem;  // dK, dV before the reduce-scatter
  grad_mem += D(bh * lq * q + bh * lq * v) * u.elem;          // dQ, dOut
  c.mem_bwd = grad_mem + c.activation_buffer;
  // a hierarchical exchange (Ring with head_ranks > 1): the heads split over head_ranks GPUs of one
  // NVLink domain, the ring over the cp / head_ranks groups of them
  const I split = kv.source == KvSource::Ring ? kv.head_ranks : 1;
  const Group seq{kv.seq.gpus / split, kv.seq.nvlink / split};
  if (kv.source == KvSource::Gathered || (seq.gpus == 1 && split == 1)) {
    gather_keys(c, seq.gpus > 1 ? D(bkv * lk * q + bkv * lk * v) * u.elem : 0.0, kv);
    return c;
  }
  // one ring step: this rank's K and V (its queries' tokens) to the next rank; the step's slowest
  // link bounds it, NVLink only when the whole ring is in one domain
  const double step_kv = seq.gpus > 1 ? D(bkv * lq * q + bkv * lq * v) * u.elem : 0.0;
  const I fast = seq.nvlink == seq.gpus ? 2 : 1;
  const auto span = static_cast<std::int32_t>((seq.gpus / seq.nvlink - 1) * kv.stride);  // first domain to last
  c.comm_fwd = one({step_kv, CommType::P2P, std::max<std::int32_t>(span, 1), 2, fast});
  c.comm_bwd = one({2 * step_kv, CommType::P2P, std::max<std::int32_t>(span, 1), 2, fast});  // K, V and dK, dV
  c.overlap = Overlap::ContextRing;
  c.ring_steps = seq.gpus;
  if (split > 1) [[unlikely]] {
    // before the ring the rank's Q, K, V, after it the output all-to-all'ed over the head_ranks GPUs
    // (backward the output's gradient, then dQ, dK, dV), serially (time_pass)
    const double qkv = D(bh * lq * q + (bkv * lq * q + bkv * lq * v)) * u.elem, out = D(bh * lq * v) * u.elem;
    const Collective a2a_qkv{qkv, CommType::AllToAll, 1, split, split};
    const Collective a2a_out{out, CommType::AllToAll, 1, split, split};
    c.comm_fwd = list({c.comm_fwd.items[0], a2a_qkv, a2a_out});
    c.comm_bwd = list({c.comm_bwd.items[0], a2a_out, a2a_qkv});
  }
  return c;
}

LayerCost embedding(const System& s, const char* name, I tokens, I e, I v_local, Group vocab_split, I position_rows) {
  const Units u(s);
  LayerCost c;
  c.name = name;
  c.op = KernelOp::Embedding;
  c.weights_mem = D(v_local * e + position_rows * e) * u.elem;
  c.weights_grad_mem = c.weights_mem;
  const I own_rows = tokens * e / vocab_split.gpus;  // on average the tokens whose row is local
  c.flops_fwd = position_rows > 0 ? D(tokens * e) * u.add : 0.0;
  // the local rows read, the partial output written (and the position rows read and added)
  c.mem_fwd = D(own_rows + tokens * e + (position_rows > 0 ? 2 * tokens * e : 0)) * u.elem;
  const double volume = vocab_split.gpus > 1 ? D(tokens * e) * u.elem : 0.0;
  c.comm_fwd = one(coll(volume, CommType::ReduceScatter, vocab_split.gpus, vocab_split.nvlink));
  c.flops_bwd = D(own_rows + (position_rows > 0 ? tokens * e : 0)) * u.add;
  // the gathered output gradient read, the dense table gradient written
  c.mem_bwd = D(tokens * e) * u.elem + c.weights_grad_mem;
  c.comm_bwd = one(coll(volume, CommType::AllGather, vocab_split.gpus, vocab_split.nvlink));
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
  c.shape.batch *= experts;
  return c;
}

LayerCost grouped_experts(LayerCost gemm, I experts) {
  LayerCost c = repeated(gemm, experts);
  c.shape.grouped = true;
  return c;
}

LayerCost cross_entropy(const System& s, const char* name, I tokens, I v_local, Group vocab_split,
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
  const Group vs = vocab_split;
  c.comm_fwd = one(coll(vs.gpus > 1 ? D(3 * tokens) * 2 * u.elem : 0.0, CommType::AllReduce, vs.gpus, vs.nvlink));
  // softmax = exp / sum, minus the one-hot target
  c.flops_bwd = D(n) * u.mult + D(tokens) * u.add;
  c.mem_bwd = c.activation_buffer + D(n) * u.elem;
  return c;
}

}  // namespace perfsweep
