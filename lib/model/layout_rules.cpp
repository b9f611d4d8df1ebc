#include "model/layout_rules.hpp"

#include <algorithm>
#include <span>
#include <string>

#include "core/error.hpp"
#include "model/precision.hpp"
#include "model/schedule.hpp"

namespace perfsweep {
namespace {
using I = std::int64_t;

// A rule's check: the first failed condition's reason, thrown here and caught by the rule's
// wrapper (reason_of), so that a rule reads as the conditions in order.
struct Broken {
  std::string reason;
};
// The message is made only where the check fails (`configs` checks many layouts that pass).
template <typename What>
void require(bool ok, What&& what) {
  if (!ok) [[unlikely]] {
    throw Broken{std::string(what())};
  }
}
std::string str(I v) { return std::to_string(v); }
// The mechanisms the layout runs under: those given, else its runtime's, else the reference's.
const Mechanisms& mechanisms_of(const RuleInputs& in) {
  if (in.mechanisms != nullptr) return *in.mechanisms;
  return (in.runtime != nullptr ? *in.runtime : reference_runtime()).mechanisms;
}

// The stages' blocks of a layout with pp >= 1, or ConfigError naming the values that do not
// partition the depth (Megatron-LM's checks of --decoder-first/last-pipeline-num-layers).
StageBlocks validate_stage_blocks(const Transformer& m, const Layout& c, StagePartition partition) {
  const I first = c.exec.first_stage_blocks, last = c.exec.last_stage_blocks;
  require(first >= 0, [&] { return "first_stage_blocks must be >= 0 (0: an even share), got " + str(first); });
  require(last >= 0, [&] { return "last_stage_blocks must be >= 0 (0: an even share), got " + str(last); });
  const I pp = std::max<I>(c.pp, 1);
  if (first == 0 && last == 0 && pp > 1 && partition == StagePartition::Nanotron) {
    // the framework's own partition: any depth, no interleaving (nanotron has no interleaved schedule)
    require(c.exec.interleave == 1, [&] {
      return "the nanotron stage partition has no interleaved schedule (interleave=" + str(c.exec.interleave) + ")";
    });
    // stages past the blocks hold none (pp may exceed the depth): they pass the activations on
    return nanotron_stage_blocks(m, pp);
  }
  require(first == 0 || partition == StagePartition::Even || pp < 2, [&] {
    return "first_stage_blocks=" + str(first) + ": the runtime partitions the stages itself (stage_partition nanotron)";
  });
  require(last == 0 || partition == StagePartition::Even || pp < 2, [&] {
    return "last_stage_blocks=" + str(last) + ": the runtime partitions the stages itself (stage_partition nanotron)";
  });
  if (first == 0 && last == 0) {
    if (m.depth % pp != 0) {
      std::string dividing;
      for (I d = 1; d <= m.depth; ++d) {
        if (m.depth % d == 0) dividing += (dividing.empty() ? "" : ", ") + str(d);
      }
      throw Broken{"pp=" + str(pp) + " does not divide depth " + str(m.depth) +
                   ": give the end stages' blocks (--first-stage-blocks and --last-stage-blocks: numbers, or "
                   "auto to balance the stages) under a runtime that runs uneven stages, or a pp dividing " +
                   str(m.depth) + " (" + dividing + ")"};
    }
    return stage_blocks(m, pp, c.exec, partition);
  }
  const std::string given = (first > 0 ? "first_stage_blocks=" + str(first) : std::string()) +
                            (first > 0 && last > 0 ? " and " : "") +
                            (last > 0 ? "last_stage_blocks=" + str(last) : std::string());
  require(pp > 1, [&] { return given + " needs pipeline stages (pp > 1)"; });
  const I others = pp - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
  const I rest = m.depth - first - last;
  const std::string leave =
      given + (first > 0 && last > 0 ? " leave " : " leaves ") + str(rest) + " of depth " + str(m.depth) + " blocks";
  if (others == 0) {
    require(rest == 0, [&] { return given + " must add up to depth " + str(m.depth) + " with pp=2"; });
  } else {
    require(rest >= others, [&] {
      return leave + " for the other " + str(others) + " stages of pp=" + str(pp) + ", fewer than one each";
    });
    require(rest % others == 0, [&] {
      return leave + ", which the other " + str(others) + " stages of pp=" + str(pp) + " cannot share evenly";
    });
  }
  return stage_blocks(m, pp, c.exec, partition);
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

// ---- The rules of the model (validate_layout), in the order a layout is checked.

void positive_degrees(const RuleInputs& in) {
  const Layout& c = *in.layout;
  for_each_axis_own_first(plan_of(c.strategy), [&](const LayoutAxis& a, bool) {
    if (a.set_degree == nullptr) return;
    require(a.degree(c) >= 1,
            [&] { return std::string(a.name) + " must be a positive integer, got " + str(a.degree(c)); });
    if (a.placed())
      require(a.nv(c) >= 1, [&] { return std::string(a.nv_key) + " must be a positive integer, got " + str(a.nv(c)); });
  });
}

void cp_one_d(const RuleInputs& in) {
  const Layout& c = *in.layout;
  if (c.tensor.cp > 1) {
    require(c.strategy == Strategy::OneD, [&] {
      return "cp=" + str(c.tensor.cp) + ": context parallelism is modelled for 1d tensor parallelism only (" +
             plan_of(c.strategy).name + " splits the sequence its own way)";
    });
  }
}

void cp_splits(const RuleInputs& in) {
  const Layout& c = *in.layout;
  const Transformer& m = *in.model;
  const TensorSplit& t = c.tensor;
  if (t.cp <= 1) return;
  require(c.attention.flash,
          [&] { return "cp=" + str(t.cp) + ": context parallelism needs flash attention (ring attention's kernels)"; });
  // Megatron-Core's load-balanced causal split: 2 cp chunks, two on each rank
  require(cp_splits_sequence(m.l, t.cp), [&] {
    return "cp=" + str(t.cp) + ": seq_len " + str(m.l) + " does not split into 2 cp = " + str(2 * t.cp) +
           " chunks (each rank holds two of the load-balanced split)";
  });
  if (const I ranks = cp_head_ranks(m, t, c.exec.cp_comm); ranks > 1) {
    // the exchange splits each rank's heads over the cp group or part of it (TE: heads and
    // key/value groups divisible by it)
    const I heads = m.h / t.tp1, kv = kv_heads_per_gpu(m, t.tp1);
    require(cp_splits_heads(m, t.tp1, ranks), [&] {
      return "cp=" + str(t.cp) + " with cp_comm " + std::string(cp_exchange(c.exec.cp_comm).name) +
             " splits the heads over " + (ranks == t.cp ? std::string("the cp group") : str(ranks) + " of its ranks") +
             ": the " + str(heads) + " query heads and " + str(kv) +
             " key/value heads of a tensor-parallel rank must be multiples of " + (ranks == t.cp ? "it" : "them");
    });
  }
}

std::string offload_name(const Layout& c) {
  return std::string("offload ") + kOffloadNames[static_cast<std::size_t>(c.exec.offload)];
}

void offload_host_link(const RuleInputs& in) {
  const Layout& c = *in.layout;
  const System& s = *in.system;
  if (c.exec.offload == Offload::None) return;
  for (auto [key, v] : {std::pair{"host_bandwidth", s.host_bandwidth}, {"host_memory", s.host_memory}}) {
    require(v > 0, [&] {
      return offload_name(c) + ": system " + s.name + " gives no " + key + " (its host link; docs/offload.md)";
    });
  }
  require(c.exec.offload == Offload::Activations || s.host_cpu_bandwidth > 0, [&] {
    return offload_name(c) + ": system " + s.name + " gives no host_cpu_bandwidth (for the host's optimizer step)";
  });
}

void offload_layout(const RuleInputs& in) {
  const Layout& c = *in.layout;
  if (c.exec.offload == Offload::None) return;
  require(offload_runs_with(c.exec.offload, c), [&] {
    return c.exec.offload == Offload::Weights
               ? offload_name(c) + " streams ZeRO-3's weight shards: zero must be 3, got " + str(c.exec.zero)
               : offload_name(c) +
                     " runs without pipeline parallelism and recomputation (Megatron-Core's cpu_offloading), "
                     "got pp=" +
                     str(c.pp) + " recompute=" + recompute_name(c.exec.recompute);
  });
}

void fp8_one_d(const RuleInputs& in) {
  const Layout& c = *in.layout;
  if (c.exec.precision == Precision::Bf16) return;
  require(c.strategy == Strategy::OneD, [&] {
    return std::string(data_type(c.exec.precision).name) +
           " precision is modelled for 1d tensor parallelism (Transformer Engine's) only";
  });
}

void dispatcher_one_d(const RuleInputs& in) {
  const Layout& c = *in.layout;
  if (c.exec.moe_dispatcher == MoeDispatcher::AllToAll || c.exec.ep <= 1) return;
  require(c.strategy == Strategy::OneD, [&] {
    return std::string("moe_dispatcher=") + kMoeDispatcherNames[static_cast<std::size_t>(c.exec.moe_dispatcher)] +
           " is modelled for 1d tensor parallelism only";
  });
}

void fp8_tensor_cores(const RuleInputs& in) {
  const Layout& c = *in.layout;
  const System& s = *in.system;
  if (c.exec.precision == Precision::Bf16) return;
  // the layout's recipe: its precision's own, else the runtime's
  const DataType& type = data_type(recipe_of(layout_fp8(mechanisms_of(in), c.exec.precision).recipe).data_type);
  require(s.*type.peak > 0, [&] {
    return std::string(data_type(c.exec.precision).name) + " precision: system " + s.name + " gives no " +
           type.peak_key + " (no " + type.tensor_cores + " tensor cores)";
  });
}

void latent_attention(const RuleInputs& in) {
  const Layout& c = *in.layout;
  if (!in.model->is_mla()) return;
  require(c.strategy == Strategy::OneD, [&] {
    return "multi-head latent attention (mla) is modelled for 1d tensor parallelism only (Megatron-Core's), not " +
           std::string(plan_of(c.strategy).name);
  });
  require(c.attention.flash, [&] {
    return "multi-head latent attention (mla) needs flash attention (its values are narrower than "
           "its keys)";
  });
}

void tensor_split(const RuleInputs& in) {
  const Layout& c = *in.layout;
  const Transformer& m = *in.model;
  const TensorSplit& t = c.tensor;
  const bool one_d = c.strategy == Strategy::OneD;
  const std::string tp_name = one_d ? "tp" : "tp1";
  require(m.h % t.tp1 == 0, [&] { return tp_name + "=" + str(t.tp1) + " does not divide the " + str(m.h) + " heads"; });
  require(m.e % t.tp1 == 0, [&] { return tp_name + "=" + str(t.tp1) + " does not divide embed_dim " + str(m.e); });
  if (one_d) require(t.tp2 == 1 && t.nv2 == 1, [&] { return "1d tensor parallelism has no second dimension"; });
  if (c.strategy == Strategy::TwoD) {
    require(m.e % t.tp2 == 0, [&] { return "tp2=" + str(t.tp2) + " does not divide embed_dim " + str(m.e); });
    // A SUMMA block is at least one column of e; more blocks than that only overflow the counts.
    require(t.nb <= m.e,
            [&] { return "nb=" + str(t.nb) + " exceeds embed_dim " + str(m.e) + " (SUMMA blocks split e)"; });
  }
}

void attention_recompute(const RuleInputs& in) {
  const Layout& c = *in.layout;
  require(c.attention.flash || c.strategy == Strategy::OneD || !c.attention.recompute,
          [&] { return "attention recompute (unfused attention) is modeled for 1d only, as the reference's sa_1d"; });
  require(!(c.attention.flash && c.attention.recompute), [&] {
    return "attention recompute goes with unfused attention; flash attention recomputes inside its kernel";
  });
}

void key_value_heads(const RuleInputs& in) {
  const Transformer& m = *in.model;
  const I tp = in.layout->tensor.tp1;
  const std::string tp_name = in.layout->strategy == Strategy::OneD ? "tp" : "tp1";
  require(m.h % m.kv() == 0,
          [&] { return "num_kv_heads=" + str(m.kv()) + " does not divide the " + str(m.h) + " heads"; });
  require(m.kv() % tp == 0 || tp % m.kv() == 0, [&] {
    return tp_name + "=" + str(tp) + " neither divides nor is a multiple of the " + str(m.kv()) +
           " key/value heads (replicated key/value heads need tp to be a multiple of them)";
  });
}

void stages_and_experts(const RuleInputs& in) {
  const Layout& c = *in.layout;
  const Transformer& m = *in.model;
  require(c.exec.ep >= 1, [&] { return "ep must be a positive integer, got " + str(c.exec.ep); });
  const StageBlocks blocks = validate_stage_blocks(m, c, mechanisms_of(in).stage_partition);
  if (m.is_moe()) {
    require(m.moe.every >= 1, [&] { return "moe.every must be a positive integer, got " + str(m.moe.every); });
    // Each stage holds whole groups of `every` blocks, so every stage has the same mix of blocks.
    for (const auto& [stage, n] :
         {std::pair{"the first", blocks.first}, {"a middle", blocks.middle}, {"the last", blocks.last}}) {
      require(n % m.moe.every == 0, [&] {
        return "moe.every=" + str(m.moe.every) + " does not divide the " + str(n) + " blocks of " +
               (blocks.even() ? "a" : stage) +
               " stage (each stage holds whole groups of one MoE and every - 1 dense blocks)";
      });
    }
    require(c.strategy != Strategy::TwoD,
            [&] { return "mixture-of-experts blocks have no SUMMA (2d) sharding rule; use 1d or 2d-seqp"; });
    require(m.moe.experts % c.exec.ep == 0,
            [&] { return "ep=" + str(c.exec.ep) + " does not divide the " + str(m.moe.experts) + " experts"; });
    require(c.dp % c.exec.ep == 0, [&] {
      return "ep=" + str(c.exec.ep) + " does not divide dp=" + str(c.dp) +
             " (the expert-parallel group is drawn from the data-parallel ranks)";
    });
  } else {
    require(c.exec.ep == 1, [&] { return "ep=" + str(c.exec.ep) + " needs a mixture-of-experts model"; });
  }
}

// Megatron-Core's expert grid (parallel_state.py: RankGenerator(tp=etp, ep, dp=world / (etp ep
// pp))) needs etp x ep x pp to divide the GPUs; here each routed expert splits over the innermost
// etp ranks of the tensor group and ep is drawn from dp, so etp dividing tp1 (and ep dp) gives it.
void expert_tensor_split(const RuleInputs& in) {
  const Layout& c = *in.layout;
  const I etp = c.exec.etp, tp = c.tensor.tp1;
  require(etp >= 0, [&] { return "etp must be a positive integer (or 0 for tp), got " + str(etp); });
  if (etp == 0 || etp == tp) return;
  require(in.model->is_moe(), [&] { return "etp=" + str(etp) + " needs a mixture-of-experts model"; });
  require(tp % etp == 0, [&] {
    return "etp=" + str(etp) + " does not divide " + (c.strategy == Strategy::OneD ? "tp=" : "tp1=") + str(tp) +
           " (each routed expert splits over the innermost etp GPUs of the tensor-parallel group)";
  });
}

void zero_stage(const RuleInputs& in) {
  const I z = in.layout->exec.zero;
  require(z >= 0 && z <= 3, [&] { return "zero must be 0, 1, 2 or 3, got " + str(z); });
}

void sequence_parallel_off(const RuleInputs& in) {
  const Layout& c = *in.layout;
  require(c.exec.sequence_parallel || c.strategy == Strategy::OneD,
          [&] { return "sequence parallelism off (--sp off) is modelled for 1d only"; });
}

void selective_unfused(const RuleInputs& in) {
  const Layout& c = *in.layout;
  require(!(c.exec.recompute == Recompute::Selective && !c.attention.flash && c.strategy != Strategy::OneD), [&] {
    return "selective recomputation of unfused attention is modeled for 1d only, as the reference's sa_1d";
  });
}

void interleaving(const RuleInputs& in) {
  const Layout& c = *in.layout;
  const Execution& x = c.exec;
  require(x.interleave >= 1, [&] { return "interleave must be a positive integer, got " + str(x.interleave); });
  if (x.interleave == 1) return;
  require(c.pp > 1, [&] { return "interleave=" + str(x.interleave) + " needs pipeline stages (pp > 1)"; });
  const StageBlocks blocks = validate_stage_blocks(*in.model, c, mechanisms_of(in).stage_partition);
  if (x.layout_chunk_blocks != 0) {
    // a pipeline layout's chunks: each stage's total its chunks', the first and last stages'
    // end chunks holding what the regular chunks leave
    const I chunk = x.layout_chunk_blocks, rest = (x.interleave - 1) * chunk;
    require(chunk > 0 && (c.pp <= 2 || blocks.middle == x.interleave * chunk) && blocks.first >= rest &&
                blocks.last >= rest,
            [&] {
              return "layout_chunk_blocks=" + str(chunk) + " does not cut the stages' blocks (" + str(blocks.first) +
                     " on the first stage, " + str(blocks.middle) + " on a middle one, " + str(blocks.last) +
                     " on the last) into " + str(x.interleave) + " chunks";
            });
    return;
  }
  if (blocks.even()) {
    require(blocks.first % x.interleave == 0, [&] {
      return "interleave=" + str(x.interleave) + " does not divide the " + str(blocks.first) + " blocks of a stage";
    });
  } else {
    require(interleaved_chunks(blocks, c.pp, x.interleave).valid, [&] {
      return "interleave=" + str(x.interleave) + " cannot cut the stages' blocks (" + str(blocks.first) +
             " on the first stage, " + str(blocks.middle) + " on a middle one, " + str(blocks.last) +
             " on the last) into chunks as Megatron-LM does: each a multiple of " + str(x.interleave) +
             ", or k a stage (a multiple of " + str(x.interleave) +
             ") with the first and last holding k or k - 1, the embedding and the loss taking a slot";
    });
  }
}

// Whether the layout's data-parallel replicas split the batch (batch_split says why not), and
// its micro-batches where they do.
bool batch_splits(const RuleInputs& in) {
  const Layout& c = *in.layout;
  return c.dp > 0 && c.mbs > 0 && in.global_batch % c.dp == 0;
}
I micro_batches_of(const RuleInputs& in) { return in.global_batch / in.layout->dp / in.layout->mbs; }

void pipeline_schedule(const RuleInputs& in) {
  const Layout& c = *in.layout;
  const Execution& x = c.exec;
  const ScheduleKind& kind = schedule_kind(x.schedule);
  const std::string name = kind.name;
  require(!kind.needs_stages || c.pp > 1, [&] { return "schedule " + name + " needs pipeline stages (pp > 1)"; });
  require(!kind.one_chunk || x.interleave == 1,
          [&] { return "schedule " + name + " runs one chunk a stage, got interleave=" + str(x.interleave); });
  if (kind.paired_stages) {
    require(c.pp % 2 == 0, [&] {
      return "schedule " + name + " pairs stage k with stage pp - 1 - k: pp must be even, got " + str(c.pp);
    });
    if (batch_splits(in)) {
      const I micro_batches = micro_batches_of(in);
      // DeepSeek's DualPipe: an even count of at least 2 pp micro-batches (its step()'s check)
      require(micro_batches % 2 == 0 && micro_batches >= 2 * c.pp, [&] {
        return "schedule " + name +
               " feeds half the micro-batches from each end: needs an even count of at least 2 pp = " + str(2 * c.pp) +
               ", got " + str(micro_batches);
      });
    }
  }
}

void interleaved_micro_batches(const RuleInputs& in) {
  const Layout& c = *in.layout;
  if (c.exec.interleave <= 1 || !batch_splits(in)) return;
  const I micro_batches = micro_batches_of(in);
  require(micro_batches % c.pp == 0, [&] {
    return "interleave=" + str(c.exec.interleave) + " needs the micro-batches (" + str(micro_batches) +
           ") to be a multiple of pp=" + str(c.pp);
  });
}

void batch_split(const RuleInputs& in) {
  const Layout& c = *in.layout;
  require(in.global_batch % c.dp == 0,
          [&] { return "dp=" + str(c.dp) + " does not divide the global batch size " + str(in.global_batch); });
  const I local_batch = in.global_batch / c.dp;
  require(local_batch % c.mbs == 0,
          [&] { return "mbs=" + str(c.mbs) + " does not divide the local batch size " + str(local_batch); });
}

void nvlink_placement(const RuleInputs& in) {
  const Layout& c = *in.layout;
  // Each share divides its group (an axis the strategy lacks: at 1); the strategy's fill the domain.
  I fast = 1;
  for_each_axis_own_first(plan_of(c.strategy), [&](const LayoutAxis& a, bool own) {
    if (!a.placed()) return;
    require(a.degree(c) % a.nv(c) == 0, [&] {
      return std::string(a.nv_key) + "=" + str(a.nv(c)) + " does not divide " + a.name + "=" + str(a.degree(c));
    });
    if (own) fast *= a.nv(c);
  });
  require(fast <= in.system->nvlink_size, [&] {
    return "the NVLink placement uses " + str(fast) + " GPUs per domain, more than nvs=" + str(in.system->nvlink_size);
  });
}

// ---- The rules of the runtime (validate_runtime_layout): what its framework runs.

std::string runtime_named(const RuleInputs& in) { return "runtime " + in.runtime->name; }

void runtime_strategy(const RuleInputs& in) {
  require(in.runtime->runs(in.layout->strategy),
          [&] { return runtime_named(in) + " does not run strategy " + plan_of(in.layout->strategy).name; });
}

void runtime_zero(const RuleInputs& in) {
  if (in.runtime->runs_zero(in.layout->exec.zero)) return;
  std::string runs;
  for (I z = 0; z <= 3; ++z) {
    if (in.runtime->runs_zero(z)) runs += (runs.empty() ? "" : ", ") + str(z);
  }
  require(false, [&] {
    return runtime_named(in) + " does not run ZeRO stage " + str(in.layout->exec.zero) + " (it runs " + runs + ")";
  });
}

void runtime_recompute(const RuleInputs& in) {
  require(
      !(in.runtime->activations == ActivationAccounting::Autocast && in.layout->exec.recompute == Recompute::Selective),
      [&] { return runtime_named(in) + "'s autocast accounting models recompute none or full"; });
}

void runtime_fp8(const RuleInputs& in) {
  require(in.layout->exec.precision == Precision::Bf16 || in.runtime->mechanisms.fp8.recipe != Fp8Recipe::None,
          [&] { return runtime_named(in) + " runs no FP8 (its file gives no fp8_recipe)"; });
}

void runtime_tp_comm_overlap(const RuleInputs& in) {
  require(!in.layout->exec.tp_comm_overlap || in.runtime->tp_comm_overlap > 0, [&] {
    return runtime_named(in) + " has no tensor-parallel communication overlap (its file gives no tp_comm_overlap)";
  });
}

void runtime_sequence_parallel(const RuleInputs& in) {
  const Layout& c = *in.layout;
  require(!(in.runtime->mechanisms.sp_backward_gather && c.exec.sequence_parallel && c.strategy != Strategy::OneD),
          [&] { return runtime_named(in) + "'s sequence parallelism is modelled for 1d only"; });
}

void runtime_fused_elementwise(const RuleInputs& in) {
  require(!(in.runtime->mechanisms.fused_elementwise && in.layout->strategy != Strategy::OneD), [&] {
    return runtime_named(in) + "'s fused elementwise kernels (Megatron's) are modelled for 1d tensor parallelism only";
  });
}

void runtime_offload(const RuleInputs& in) {
  const Offload k = in.layout->exec.offload;
  require(in.runtime->runs_offload(k), [&] {
    return runtime_named(in) + " does not offload " + kOffloadNames[static_cast<std::size_t>(k)] +
           " (its offload key lists what it offloads; docs/offload.md)";
  });
}

void runtime_context_parallel(const RuleInputs& in) {
  const I cp = in.layout->tensor.cp;
  require(cp <= 1 || in.runtime->context_parallel != 0, [&] {
    return runtime_named(in) + " does not run context parallelism (cp=" + str(cp) +
           "; its context_parallel key lists what it runs; docs/context_parallel.md)";
  });
}

void runtime_cp_exchange(const RuleInputs& in) {
  const Layout& c = *in.layout;
  const Runtime& rt = *in.runtime;
  require(c.tensor.cp <= 1 || rt.context_parallel == 0 || rt.runs_cp(c.exec.cp_comm), [&] {
    return runtime_named(in) + " does not run context parallelism with cp_comm " +
           kCpCommNames[static_cast<std::size_t>(c.exec.cp_comm)] + " (cp=" + str(c.tensor.cp) +
           "; its context_parallel key lists what it runs; docs/context_parallel.md)";
  });
}

// A rule's check as the table holds it: its reason, or "" where the layout keeps to it.
template <void (*Check)(const RuleInputs&)>
std::string reason_of(const RuleInputs& in) {
  try {
    Check(in);
  } catch (const Broken& broken) {
    return broken.reason;
  }
  return {};
}

constexpr LayoutRule kLayoutRules[] = {
    {"positive_degrees", RuleSubject::Layout, RuleOwner::Model, reason_of<positive_degrees>},
    {"cp_one_d", RuleSubject::ContextParallel, RuleOwner::Model, reason_of<cp_one_d>},
    {"cp_splits", RuleSubject::Layout, RuleOwner::Model, reason_of<cp_splits>},
    {"offload_host_link", RuleSubject::Offload, RuleOwner::System, reason_of<offload_host_link>},
    {"offload_layout", RuleSubject::Layout, RuleOwner::Model, reason_of<offload_layout>},
    {"fp8_one_d", RuleSubject::Precision, RuleOwner::Model, reason_of<fp8_one_d>},
    {"dispatcher_one_d", RuleSubject::Layout, RuleOwner::Model, reason_of<dispatcher_one_d>},
    {"fp8_tensor_cores", RuleSubject::Precision, RuleOwner::System, reason_of<fp8_tensor_cores>},
    {"latent_attention", RuleSubject::Layout, RuleOwner::Model, reason_of<latent_attention>},
    {"tensor_split", RuleSubject::Layout, RuleOwner::Model, reason_of<tensor_split>},
    {"attention_recompute", RuleSubject::Layout, RuleOwner::Model, reason_of<attention_recompute>},
    {"key_value_heads", RuleSubject::Layout, RuleOwner::Model, reason_of<key_value_heads>},
    {"stages_and_experts", RuleSubject::Layout, RuleOwner::Model, reason_of<stages_and_experts>},
    {"expert_tensor_split", RuleSubject::Layout, RuleOwner::Model, reason_of<expert_tensor_split>},
    {"zero_stage", RuleSubject::Zero, RuleOwner::Model, reason_of<zero_stage>},
    {"sequence_parallel_off", RuleSubject::SequenceParallel, RuleOwner::Model, reason_of<sequence_parallel_off>},
    {"selective_unfused", RuleSubject::Layout, RuleOwner::Model, reason_of<selective_unfused>},
    {"interleaving", RuleSubject::Layout, RuleOwner::Model, reason_of<interleaving>},
    {"pipeline_schedule", RuleSubject::Layout, RuleOwner::Model, reason_of<pipeline_schedule>},
    {"interleaved_micro_batches", RuleSubject::Layout, RuleOwner::Model, reason_of<interleaved_micro_batches>},
    {"batch_split", RuleSubject::Layout, RuleOwner::Model, reason_of<batch_split>},
    {"nvlink_placement", RuleSubject::Layout, RuleOwner::System, reason_of<nvlink_placement>},
    {"runtime_strategy", RuleSubject::Strategy, RuleOwner::Runtime, reason_of<runtime_strategy>},
    {"runtime_zero", RuleSubject::Zero, RuleOwner::Runtime, reason_of<runtime_zero>},
    {"runtime_recompute", RuleSubject::Recompute, RuleOwner::Runtime, reason_of<runtime_recompute>},
    {"runtime_fp8", RuleSubject::Precision, RuleOwner::Runtime, reason_of<runtime_fp8>},
    {"runtime_tp_comm_overlap", RuleSubject::TpCommOverlap, RuleOwner::Runtime, reason_of<runtime_tp_comm_overlap>},
    {"runtime_sequence_parallel", RuleSubject::SequenceParallel, RuleOwner::Runtime,
     reason_of<runtime_sequence_parallel>},
    {"runtime_fused_elementwise", RuleSubject::Strategy, RuleOwner::Runtime, reason_of<runtime_fused_elementwise>},
    {"runtime_offload", RuleSubject::Offload, RuleOwner::Runtime, reason_of<runtime_offload>},
    {"runtime_context_parallel", RuleSubject::ContextParallel, RuleOwner::Runtime, reason_of<runtime_context_parallel>},
    {"runtime_cp_exchange", RuleSubject::CpComm, RuleOwner::Runtime, reason_of<runtime_cp_exchange>},
};

// The first rule of `owners` the layout breaks (in the table's order), as ConfigError.
void refuse_first(const RuleInputs& in, bool runtime_rules) {
  for (std::size_t i = 0; i < std::size(kLayoutRules); ++i) {
    const LayoutRule& rule = kLayoutRules[i];
    if ((rule.owner == RuleOwner::Runtime) != runtime_rules) continue;
    if (std::string reason = rule.reason(in); !reason.empty()) throw RuleError(i, reason);
  }
}
}  // namespace

std::span<const LayoutRule> layout_rules() { return kLayoutRules; }

std::string choice_refusal(RuleSubject subject, const RuleInputs& in) {
  // the runtime's rules first: what its framework does not run is the reason before what the
  // model or the system lacks
  for (const bool runtime_rules : {true, false}) {
    if (runtime_rules && in.runtime == nullptr) continue;
    for (const LayoutRule& rule : kLayoutRules) {
      if (rule.subject != subject || (rule.owner == RuleOwner::Runtime) != runtime_rules) continue;
      if (std::string reason = rule.reason(in); !reason.empty()) return reason;
    }
  }
  return {};
}

void validate_layout(const System& s, const Transformer& m, const Layout& c, I global_batch,
                     const Mechanisms& mechanisms) {
  refuse_first(RuleInputs{&s, &m, nullptr, &c, global_batch, &mechanisms}, false);
}

void validate_runtime_layout(const Runtime& rt, const Layout& c) {
  refuse_first(RuleInputs{nullptr, nullptr, &rt, &c, 0}, true);
}

}  // namespace perfsweep
