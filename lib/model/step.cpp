#include "model/step.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"

namespace perfsweep {
namespace {
using I = std::int64_t;
constexpr double D(I v) { return static_cast<double>(v); }

// DP and PP rows carry only communication; their compute and memory fields are zero.
LayerResult comm_row(const char* name, double volume, CommType fwd_type, CommType bwd_type, I group, I fast) {
  LayerResult r;
  r.cost.name = name;
  r.cost.kernel = KernelClass::Collective;
  r.cost.op = KernelOp::Other;
  r.cost.comm_fwd.items[0] = {volume, fwd_type, group, fast};
  r.cost.comm_bwd.items[0] = {volume, bwd_type, group, fast};
  return r;
}

PassTime comm_only(double seconds) {
  PassTime p;
  p.t = seconds;
  p.comm = seconds;
  return p;
}
}  // namespace

BlockSummary summarize(const Module& mlp, const Module& sa, double p2p_volume_gb) {
  BlockSummary b;
  b.mlp = sum_module(mlp);
  b.sa = sum_module(sa);
  b.p2p_volume_gb = p2p_volume_gb;
  return b;
}

LayerResult data_parallel(const System& s, const BlockSummary& block, I layers_per_stage, I group, I fast_domain,
                          bool overlap) {
  const double weights = block.mlp.weights_mem + block.sa.weights_mem;  // one layer's weights
  LayerResult r = comm_row("dp_comms", weights, CommType::AllGather, CommType::ReduceScatter, group, fast_domain);
  auto pass = [&](CommType type, double overlap_compute, std::uint8_t& calibrated) {
    double t = 0;
    if (s.calibration == nullptr) [[likely]] {
      t = analytical_collective_seconds(s, type, weights, group, fast_domain);
    } else {
      const CollectiveTime ct = collective_time(s, s.calibration.get(), type, weights, group, fast_domain);
      t = ct.seconds;
      if (ct.model == CommModel::Calibrated) calibrated = 1;
    }
    if (overlap) {
      t += std::max(t - overlap_compute, 0.0) * D(layers_per_stage - 1);
    } else {
      t *= D(layers_per_stage);
    }
    return comm_only(t);
  };
  r.fwd = pass(CommType::AllGather, block.mlp.t_fwd + block.sa.t_fwd, r.calibrated_fwd);
  r.bwd = pass(CommType::ReduceScatter, block.mlp.t_bwd + block.sa.t_bwd, r.calibrated_bwd);
  r.t = r.fwd.t + r.bwd.t;
  return r;
}

LayerResult pipeline_parallel(const System& s, const BlockSummary& block, I micro_batches, I pp, I fast_domain,
                              bool overlap) {
  const double volume = block.p2p_volume_gb;
  LayerResult r = comm_row("pp_comms", volume, CommType::P2P, CommType::P2P, 2, fast_domain);
  double t = 0;
  if (pp > 1) {
    if (fast_domain > 1) {
      const I total_links = pp - 1;
      const I slow_links = static_cast<I>(D(pp) / D(fast_domain) - 1);
      const I fast_links = total_links - slow_links;
      const double t_fast = analytical_collective_seconds(s, CommType::P2P, volume, 2, fast_domain);
      // The reference times a slow link as a "collective" over one GPU, which costs nothing.
      const double t_slow = analytical_collective_seconds(s, CommType::P2P, volume, 1, 1);
      t = D(fast_links) / D(total_links) * t_fast + D(slow_links) / D(total_links) * t_slow;
    } else if (fast_domain == 1) {
      t = analytical_collective_seconds(s, CommType::P2P, volume, 2, 1);
    } else {
      throw ConfigError("pipeline NVLink placement must be positive, got " + std::to_string(fast_domain));
    }
  }
  t = overlap ? 0.0 : t * D(micro_batches);
  r.fwd = comm_only(t);
  r.bwd = comm_only(t);
  r.t = r.fwd.t + r.bwd.t;
  return r;
}

std::string result_schema() {
  std::string out = "config";
  for (const ConfigKey& k : kConfigKeys) {
    out += std::string(" ") + k.name + "[";
    for (Strategy s : {Strategy::OneD, Strategy::TwoD, Strategy::TwoDSeqp}) {
      if (k.applies(plan_of(s))) out += std::string(plan_of(s).name) + ";";
    }
    out += k.orders_ties ? "]t" : "]";
  }
  out += "\ntotals";
  for (const TotalsField& f : kTotalsFields) out += std::string(" ") + f.name + "[" + f.unit + "]";
  return out;
}

StepMemory step_memory(double weights_per_block, double activations_per_block, I depth, I pp, I dp, I seqp,
                       I micro_batches) {
  const double layers = D(depth / pp);
  StepMemory x;
  x.weights = weights_per_block * layers;
  x.weight_grads = x.weights;
  // fp32 master weights, momentum and variance: 6x the fp16 weights, sharded over dp x seqp
  x.optimizer_states = 6 * (x.weights / D(dp * seqp));
  double acts = activations_per_block * layers;
  // 1F1B: at most pp micro-batches of activations are alive at once
  acts *= D(micro_batches >= pp ? pp : micro_batches);
  x.activations = acts;
  x.total = x.weights + x.weight_grads + x.optimizer_states + acts;
  return x;
}

Totals step_totals(const BlockSummary& b, double t_dp_comm, double t_pp_comm, I depth, I pp, I dp, I seqp,
                   I micro_batches) {
  const ModuleSums& m = b.mlp;
  const ModuleSums& a = b.sa;
  const double layers = D(depth / pp);
  const double nmb = D(micro_batches);
  Totals x;
  x.flops_per_gpu = (m.flops_fwd + m.flops_bwd + a.flops_fwd + a.flops_bwd) * layers * nmb;
  const double t_fwd = m.t_fwd + a.t_fwd;  // one layer, one micro-batch
  const double t_bwd = m.t_bwd + a.t_bwd;
  double t = (t_fwd + t_bwd) * nmb;
  t *= layers;
  x.t_pp_comm = t_pp_comm;
  t += t_pp_comm;
  x.t_bubble = D(pp - 1) * (t / nmb);
  t += x.t_bubble;
  x.t_dp_comm = t_dp_comm;
  t += t_dp_comm;
  x.t = t;

  const StepMemory mem = step_memory(m.weights_mem + a.weights_mem, m.activation_buffer + a.activation_buffer, depth,
                                     pp, dp, seqp, micro_batches);
  x.wts_mem = mem.weights;
  x.wts_grad_mem = mem.weight_grads;
  x.wts_optimizer_states_mem = mem.optimizer_states;
  x.acts_mem = mem.activations;
  x.mem = mem.total;

  x.t_tp_comm = (m.t_fwd_comm + m.t_bwd_comm + a.t_fwd_comm + a.t_bwd_comm) * nmb;
  x.t_tp_comm *= layers;
  x.t_comp = (m.t_fwd_comp + m.t_bwd_comp + a.t_fwd_comp + a.t_bwd_comp) * nmb;
  x.t_comp *= layers;
  x.t_mem = (m.t_fwd_mem + m.t_bwd_mem + a.t_fwd_mem + a.t_bwd_mem) * nmb;
  x.t_mem *= layers;

  x.comp_frac = x.t_comp / t;
  x.tp_comm_frac = x.t_tp_comm / t;
  x.dp_comm_frac = x.t_dp_comm / t;
  x.pp_comm_frac = x.t_pp_comm / t;
  x.bubble_frac = x.t_bubble / t;
  x.mem_frac = x.t_mem / t;
  return x;
}

namespace {
void require(bool ok, const std::string& what) {
  if (!ok) throw ConfigError(what);
}
std::string str(I v) { return std::to_string(v); }
}  // namespace

void validate_layout(const System& s, const Transformer& m, const Layout& c, I global_batch) {
  const TensorSplit& t = c.tensor;
  for (auto [name, v] : {std::pair{"dp", c.dp}, {"pp", c.pp}, {"mbs", c.mbs}, {"tp1", t.tp1}, {"tp2", t.tp2},
                         {"nb", t.nb}, {"nv_tp1", t.nv1}, {"nv_tp2", t.nv2}, {"nv_dp", c.nv_dp}, {"nv_pp", c.nv_pp}}) {
    require(v >= 1, std::string(name) + " must be a positive integer, got " + str(v));
  }
  const bool one_d = c.strategy == Strategy::OneD;
  const std::string tp_name = one_d ? "tp" : "tp1";
  require(m.h % t.tp1 == 0, tp_name + "=" + str(t.tp1) + " does not divide the " + str(m.h) + " heads");
  require(m.e % t.tp1 == 0, tp_name + "=" + str(t.tp1) + " does not divide embed_dim " + str(m.e));
  if (one_d) require(t.tp2 == 1 && t.nv2 == 1, "1d tensor parallelism has no second dimension");
  if (c.strategy == Strategy::TwoD) {
    require(m.e % t.tp2 == 0, "tp2=" + str(t.tp2) + " does not divide embed_dim " + str(m.e));
  }
  require(c.attention.flash || c.strategy == Strategy::OneD || !c.attention.recompute,
          "attention recompute (unfused attention) is modeled for 1d only, as the reference's sa_1d");
  require(!(c.attention.flash && c.attention.recompute),
          "attention recompute goes with unfused attention; flash attention recomputes inside its kernel");
  require(m.depth % c.pp == 0, "pp=" + str(c.pp) + " does not divide depth " + str(m.depth));
  require(global_batch % c.dp == 0,
          "dp=" + str(c.dp) + " does not divide the global batch size " + str(global_batch));
  const I local_batch = global_batch / c.dp;
  require(local_batch % c.mbs == 0,
          "mbs=" + str(c.mbs) + " does not divide the local batch size " + str(local_batch));
  auto nv_divides = [&](const char* nv_name, I nv, const std::string& group_name, I group) {
    require(group % nv == 0, std::string(nv_name) + "=" + str(nv) + " does not divide " + group_name + "=" + str(group));
  };
  nv_divides(one_d ? "nv_tp" : "nv_tp1", t.nv1, tp_name, t.tp1);
  nv_divides("nv_tp2", t.nv2, "tp2", t.tp2);
  nv_divides("nv_dp", c.nv_dp, "dp", c.dp);
  nv_divides("nv_pp", c.nv_pp, "pp", c.pp);
  const I fast = t.nv1 * t.nv2 * c.nv_dp * c.nv_pp;
  require(fast <= s.nvlink_size, "the NVLink placement uses " + str(fast) + " GPUs per domain, more than nvs=" +
                                     str(s.nvlink_size));
}

StepCosts compose_step(const System& s, const Transformer& m, const Layout& c, const BlockSummary& block,
                       I global_batch) {
  const StrategyPlan& plan = plan_of(c.strategy);
  const I micro_batches = global_batch / c.dp / c.mbs;
  StepCosts out;
  out.dp_row = data_parallel(s, block, m.depth / c.pp, dp_group(plan, c), dp_group_fast(plan, c));
  out.pp_row = pipeline_parallel(s, block, micro_batches, c.pp, c.nv_pp);
  out.totals = step_totals(block, out.dp_row.t, out.pp_row.t, m.depth, c.pp, c.dp,
                           optimizer_shards_beyond_dp(plan, c), micro_batches);
  return out;
}

Evaluation evaluate(const System& s, const Transformer& m, const Layout& c, I global_batch) {
  validate_layout(s, m, c, global_batch);
  Evaluation ev;
  const double p2p = build_block(s, c.strategy, describe_block(m, c.attention), c.mbs, m, c.tensor, c.attention,
                                 ev.mlp, ev.sa);
  StepCosts step = compose_step(s, m, c, summarize(ev.mlp, ev.sa, p2p), global_batch);
  ev.dp_row = step.dp_row;
  ev.pp_row = step.pp_row;
  ev.totals = step.totals;
  ev.throughput = D(global_batch) / ev.totals.t;
  ev.fits = !(ev.totals.mem > s.hbm_capacity);
  return ev;
}

}  // namespace perfsweep
