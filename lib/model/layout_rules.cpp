#include "model/layout_rules.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "model/precision.hpp"

namespace perfsweep {
namespace {
using I = std::int64_t;
constexpr double D(I v) { return static_cast<double>(v); }
}  // namespace

namespace {
void require(bool ok, const std::string& what) {
  if (!ok) throw ConfigError(what);
}
std::string str(I v) { return std::to_string(v); }

// The stages' blocks of a layout with pp >= 1, or ConfigError naming the values that do not
// partition the depth (Megatron-LM's checks of --decoder-first/last-pipeline-num-layers).
StageBlocks validate_stage_blocks(const Transformer& m, const Layout& c) {
  const I first = c.exec.first_stage_blocks, last = c.exec.last_stage_blocks;
  require(first >= 0, "first_stage_blocks must be >= 0 (0: an even share), got " + str(first));
  require(last >= 0, "last_stage_blocks must be >= 0 (0: an even share), got " + str(last));
  const I pp = std::max<I>(c.pp, 1);
  if (first == 0 && last == 0 && pp > 1 && c.exec.stage_partition == StagePartition::Nanotron) {
    // the framework's own partition: any depth, no interleaving (nanotron has no interleaved schedule)
    require(c.exec.interleave == 1, "the nanotron stage partition has no interleaved schedule (interleave=" +
                                        str(c.exec.interleave) + ")");
    // stages past the blocks hold none (pp may exceed the depth): they pass the activations on
    return nanotron_stage_blocks(m, pp);
  }
  require(first == 0 || c.exec.stage_partition == StagePartition::Even || pp < 2,
          "first_stage_blocks=" + str(first) + ": the runtime partitions the stages itself (stage_partition nanotron)");
  require(last == 0 || c.exec.stage_partition == StagePartition::Even || pp < 2,
          "last_stage_blocks=" + str(last) + ": the runtime partitions the stages itself (stage_partition nanotron)");
  if (first == 0 && last == 0) {
    if (m.depth % pp != 0) {
      std::string dividing;
      for (I d = 1; d <= m.depth; ++d) {
        if (m.depth % d == 0) dividing += (dividing.empty() ? "" : ", ") + str(d);
      }
      throw ConfigError("pp=" + str(pp) + " does not divide depth " + str(m.depth) +
                        ": give the end stages' blocks (--first-stage-blocks and --last-stage-blocks: numbers, or "
                        "auto to balance the stages) under a runtime that runs uneven stages, or a pp dividing " +
                        str(m.depth) + " (" + dividing + ")");
    }
    return stage_blocks(m, pp, c.exec);
  }
  const std::string given = (first > 0 ? "first_stage_blocks=" + str(first) : std::string()) +
                            (first > 0 && last > 0 ? " and " : "") +
                            (last > 0 ? "last_stage_blocks=" + str(last) : std::string());
  require(pp > 1, given + " needs pipeline stages (pp > 1)");
  const I others = pp - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
  const I rest = m.depth - first - last;
  const std::string leave = given + (first > 0 && last > 0 ? " leave " : " leaves ") + str(rest) + " of depth " +
                            str(m.depth) + " blocks";
  if (others == 0) {
    require(rest == 0, given + " must add up to depth " + str(m.depth) + " with pp=2");
  } else {
    require(rest >= others, leave + " for the other " + str(others) + " stages of pp=" + str(pp) +
                                ", fewer than one each");
    require(rest % others == 0,
            leave + ", which the other " + str(others) + " stages of pp=" + str(pp) + " cannot share evenly");
  }
  return stage_blocks(m, pp, c.exec);
}
}  // namespace

namespace {
// f(axis, own) for every axis (model/axes.hpp), the strategy's own first: a check fails under the
// name of the strategy's axis before that of another reading the same field (1d's tp before tp1).
template <typename F>
void for_each_axis_own_first(const StrategyPlan& plan, F&& f) {
  for (const bool own : {true, false}) {
    for (std::size_t i = 0; i < kAxisCount; ++i) {
      if (own == has_axis(plan, i)) f(kAxes[i], own);
    }
  }
}
}  // namespace

void validate_layout(const System& s, const Transformer& m, const Layout& c, I global_batch) {
  const TensorSplit& t = c.tensor;
  const StrategyPlan& plan = plan_of(c.strategy);
  // Every axis's degree and NVLink share positive.
  for_each_axis_own_first(plan, [&](const LayoutAxis& a, bool) {
    if (a.set_degree == nullptr) return;
    require(a.degree(c) >= 1, std::string(a.name) + " must be a positive integer, got " + str(a.degree(c)));
    if (a.placed()) require(a.nv(c) >= 1, std::string(a.nv_key) + " must be a positive integer, got " + str(a.nv(c)));
  });
  const bool one_d = c.strategy == Strategy::OneD;
  if (t.cp > 1) {
    require(one_d, "cp=" + str(t.cp) + ": context parallelism is modelled for 1d tensor parallelism only (" +
                       plan_of(c.strategy).name + " splits the sequence its own way)");
    require(c.attention.flash, "cp=" + str(t.cp) + ": context parallelism needs flash attention (ring attention's kernels)");
    // Megatron-Core's load-balanced causal split: 2 cp chunks, two on each rank
    require(cp_splits_sequence(m.l, t.cp), "cp=" + str(t.cp) + ": seq_len " + str(m.l) + " does not split into 2 cp = " +
                                       str(2 * t.cp) + " chunks (each rank holds two of the load-balanced split)");
    if (c.exec.cp_comm == CpComm::AllToAll) {
      // the exchange splits each rank's heads over the cp group (TE: heads and key/value groups
      // divisible by cp)
      const I heads = m.h / t.tp1, kv = kv_heads_per_gpu(m, t.tp1);
      require(cp_splits_heads(m, t.tp1, t.cp),
              "cp=" + str(t.cp) + " with cp_comm a2a splits the heads over the cp group: the " + str(heads) +
                  " query heads and " + str(kv) + " key/value heads of a tensor-parallel rank must be multiples of it");
    }
  }
  if (c.exec.offload != Offload::None) {
    const std::string what = std::string("offload ") + kOffloadNames[static_cast<std::size_t>(c.exec.offload)];
    for (auto [key, v] : {std::pair{"host_bandwidth", s.host_bandwidth}, {"host_memory", s.host_memory}}) {
      require(v > 0, what + ": system " + s.name + " gives no " + key + " (its host link; docs/offload.md)");
    }
    require(c.exec.offload == Offload::Activations || s.host_cpu_bandwidth > 0,
            what + ": system " + s.name + " gives no host_cpu_bandwidth (for the host's optimizer step)");
    require(offload_runs_with(c.exec.offload, c),
            c.exec.offload == Offload::Weights
                ? what + " streams ZeRO-3's weight shards: zero must be 3, got " + str(c.exec.zero)
                : what + " runs without pipeline parallelism and recomputation (Megatron-Core's cpu_offloading), got "
                         "pp=" + str(c.pp) + " recompute=" + recompute_name(c.exec.recompute));
  }
  if (c.exec.precision != Precision::Bf16) {
    require(one_d, "fp8 precision is modelled for 1d tensor parallelism (Transformer Engine's) only");
    const bool block_scaled = c.exec.fp8.recipe == Fp8Recipe::Mxfp8;
    require((block_scaled ? s.matrix_flops_mxfp8 : s.matrix_flops_fp8) > 0,
            "fp8 precision: system " + s.name + " gives no " + (block_scaled ? "matrix_flops_mxfp8" : "matrix_flops_fp8") +
                " (no " + (block_scaled ? "MXFP8" : "FP8") + " tensor cores)");
  }
  if (m.is_mla()) {
    require(one_d, "multi-head latent attention (mla) is modelled for 1d tensor parallelism only (Megatron-Core's), not " +
                       std::string(plan_of(c.strategy).name));
    require(c.attention.flash, "multi-head latent attention (mla) needs flash attention (its values are narrower than "
                               "its keys)");
  }
  const std::string tp_name = one_d ? "tp" : "tp1";
  require(m.h % t.tp1 == 0, tp_name + "=" + str(t.tp1) + " does not divide the " + str(m.h) + " heads");
  require(m.e % t.tp1 == 0, tp_name + "=" + str(t.tp1) + " does not divide embed_dim " + str(m.e));
  if (one_d) require(t.tp2 == 1 && t.nv2 == 1, "1d tensor parallelism has no second dimension");
  if (c.strategy == Strategy::TwoD) {
    require(m.e % t.tp2 == 0, "tp2=" + str(t.tp2) + " does not divide embed_dim " + str(m.e));
    // A SUMMA block is at least one column of e; more blocks than that only overflow the counts.
    require(t.nb <= m.e, "nb=" + str(t.nb) + " exceeds embed_dim " + str(m.e) + " (SUMMA blocks split e)");
  }
  require(c.attention.flash || c.strategy == Strategy::OneD || !c.attention.recompute,
          "attention recompute (unfused attention) is modeled for 1d only, as the reference's sa_1d");
  require(!(c.attention.flash && c.attention.recompute),
          "attention recompute goes with unfused attention; flash attention recomputes inside its kernel");
  require(m.h % m.kv() == 0, "num_kv_heads=" + str(m.kv()) + " does not divide the " + str(m.h) + " heads");
  require(m.kv() % t.tp1 == 0 || t.tp1 % m.kv() == 0,
          tp_name + "=" + str(t.tp1) + " neither divides nor is a multiple of the " + str(m.kv()) +
              " key/value heads (replicated key/value heads need tp to be a multiple of them)");
  require(c.exec.ep >= 1, "ep must be a positive integer, got " + str(c.exec.ep));
  const StageBlocks blocks = validate_stage_blocks(m, c);
  if (m.is_moe()) {
    require(m.moe.every >= 1, "moe.every must be a positive integer, got " + str(m.moe.every));
    // Each stage holds whole groups of `every` blocks, so every stage has the same mix of blocks.
    for (const auto& [stage, n] :
         {std::pair{"the first", blocks.first}, {"a middle", blocks.middle}, {"the last", blocks.last}}) {
      require(n % m.moe.every == 0, "moe.every=" + str(m.moe.every) + " does not divide the " + str(n) +
                                        " blocks of " + (blocks.even() ? "a" : stage) +
                                        " stage (each stage holds whole groups of one MoE and every - 1 dense blocks)");
    }
    require(c.strategy != Strategy::TwoD, "mixture-of-experts blocks have no SUMMA (2d) sharding rule; use 1d or 2d-seqp");
    require(m.moe.experts % c.exec.ep == 0,
            "ep=" + str(c.exec.ep) + " does not divide the " + str(m.moe.experts) + " experts");
    require(c.dp % c.exec.ep == 0, "ep=" + str(c.exec.ep) + " does not divide dp=" + str(c.dp) +
                                  " (the expert-parallel group is drawn from the data-parallel ranks)");
  } else {
    require(c.exec.ep == 1, "ep=" + str(c.exec.ep) + " needs a mixture-of-experts model");
  }
  const Execution& x = c.exec;
  require(x.zero >= 0 && x.zero <= 3, "zero must be 0, 1, 2 or 3, got " + str(x.zero));
  require(x.sequence_parallel || one_d, "sequence parallelism off (--sp off) is modeled for 1d only");
  require(!(x.recompute == Recompute::Selective && !c.attention.flash && !one_d),
          "selective recomputation of unfused attention is modeled for 1d only, as the reference's sa_1d");
  require(x.interleave >= 1, "interleave must be a positive integer, got " + str(x.interleave));
  if (x.interleave > 1) {
    require(c.pp > 1, "interleave=" + str(x.interleave) + " needs pipeline stages (pp > 1)");
    if (blocks.even()) {
      require(blocks.first % x.interleave == 0, "interleave=" + str(x.interleave) + " does not divide the " +
                                                    str(blocks.first) + " blocks of a stage");
    } else {
      require(interleaved_chunks(blocks, c.pp, x.interleave).valid,
              "interleave=" + str(x.interleave) + " cannot cut the stages' blocks (" + str(blocks.first) +
                  " on the first stage, " + str(blocks.middle) + " on a middle one, " + str(blocks.last) +
                  " on the last) into chunks as Megatron-LM does: each a multiple of " + str(x.interleave) +
                  ", or k a stage (a multiple of " + str(x.interleave) +
                  ") with the first and last holding k or k - 1, the embedding and the loss taking a slot");
    }
  }
  if (x.schedule != PipelineSchedule::OneFOneB) {
    const std::string name = kScheduleNames[static_cast<std::size_t>(x.schedule)];
    require(c.pp > 1, "schedule " + name + " needs pipeline stages (pp > 1)");
    require(x.interleave == 1, "schedule " + name + " runs one chunk a stage, got interleave=" + str(x.interleave));
    if (x.schedule == PipelineSchedule::DualPipe) {
      require(c.pp % 2 == 0, "schedule dualpipe pairs stage k with stage pp - 1 - k: pp must be even, got " + str(c.pp));
      if (c.dp > 0 && c.mbs > 0 && global_batch % c.dp == 0) {
        const I micro_batches = global_batch / c.dp / c.mbs;
        // DeepSeek's DualPipe: an even count of at least 2 pp micro-batches (its step()'s check)
        require(micro_batches % 2 == 0 && micro_batches >= 2 * c.pp,
                "schedule dualpipe feeds half the micro-batches from each end: needs an even count of at least 2 pp = " +
                    str(2 * c.pp) + ", got " + str(micro_batches));
      }
    }
  }
  if (x.interleave > 1 && c.dp > 0 && c.mbs > 0 && global_batch % c.dp == 0) {
    const I micro_batches = global_batch / c.dp / c.mbs;
    require(micro_batches % c.pp == 0, "interleave=" + str(x.interleave) + " needs the micro-batches (" +
                                           str(micro_batches) + ") to be a multiple of pp=" + str(c.pp));
  }
  require(global_batch % c.dp == 0,
          "dp=" + str(c.dp) + " does not divide the global batch size " + str(global_batch));
  const I local_batch = global_batch / c.dp;
  require(local_batch % c.mbs == 0,
          "mbs=" + str(c.mbs) + " does not divide the local batch size " + str(local_batch));
  // Each share divides its group (an axis the strategy lacks: at 1); the strategy's fill the domain.
  I fast = 1;
  for_each_axis_own_first(plan, [&](const LayoutAxis& a, bool own) {
    if (!a.placed()) return;
    require(a.degree(c) % a.nv(c) == 0, std::string(a.nv_key) + "=" + str(a.nv(c)) + " does not divide " + a.name +
                                            "=" + str(a.degree(c)));
    if (own) fast *= a.nv(c);
  });
  require(fast <= s.nvlink_size, "the NVLink placement uses " + str(fast) + " GPUs per domain, more than nvs=" +
                                     str(s.nvlink_size));
}

void validate_runtime_layout(const Runtime& rt, const Layout& c) {
  if (!rt.runs(c.strategy)) {
    throw ConfigError("runtime " + rt.name + " does not run strategy " + plan_of(c.strategy).name);
  }
  if (!rt.runs_zero(c.exec.zero)) {
    throw ConfigError("runtime " + rt.name + " does not run ZeRO stage " + std::to_string(c.exec.zero));
  }
  if (rt.activations == ActivationAccounting::Autocast && c.exec.recompute == Recompute::Selective) {
    throw ConfigError("runtime " + rt.name + "'s autocast accounting models recompute none or full");
  }
  if (c.exec.precision != Precision::Bf16 && rt.fp8.recipe == Fp8Recipe::None) {
    throw ConfigError("runtime " + rt.name + " runs no FP8 (its file gives no fp8_recipe)");
  }
  if (rt.sp_backward_gather && c.exec.sequence_parallel && c.strategy != Strategy::OneD) {
    throw ConfigError("runtime " + rt.name + "'s sequence parallelism is modelled for 1d only");
  }
  if (!rt.runs_offload(c.exec.offload)) {
    throw ConfigError("runtime " + rt.name + " does not offload " + kOffloadNames[static_cast<std::size_t>(c.exec.offload)] +
                      " (its offload key lists what it offloads; docs/offload.md)");
  }
  if (c.tensor.cp > 1 && !rt.runs_cp(c.exec.cp_comm)) {
    throw ConfigError("runtime " + rt.name + " does not run context parallelism" +
                      (rt.context_parallel != 0 ? std::string(" with cp_comm ") +
                                                      kCpCommNames[static_cast<std::size_t>(c.exec.cp_comm)]
                                                : std::string()) +
                      " (cp=" + std::to_string(c.tensor.cp) + "; its context_parallel key lists what it runs; " +
                      "docs/context_parallel.md)");
  }
}

}  // namespace perfsweep
