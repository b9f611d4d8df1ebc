#pragma once
// One training step of a parallel configuration: data- and pipeline-parallel communication and
// the step totals (the reference's DataParallel and PipelineParallel layers and execution.totals).
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "model/block_summary.hpp"
#include "model/efficiency.hpp"
#include "model/layout_rules.hpp"
#include "model/plan.hpp"
#include "model/runtime.hpp"
#include "model/schedule.hpp"
#include "model/stage_balance.hpp"
#include "model/stage_runtime.hpp"
#include "model/step_comm.hpp"
#include "model/step_memory.hpp"

namespace perfsweep {

// The reference's totals() stats, in its units (s, TFLOP, GB).
struct Totals {
  double t = 0, flops_per_gpu = 0, mem = 0;
  double t_comp = 0, t_mem = 0, t_tp_comm = 0, t_dp_comm = 0, t_pp_comm = 0, t_bubble = 0;
  double comp_frac = 0, tp_comm_frac = 0, dp_comm_frac = 0, pp_comm_frac = 0, bubble_frac = 0, mem_frac = 0;
  double wts_mem = 0, wts_grad_mem = 0, wts_optimizer_states_mem = 0, acts_mem = 0;
  // Beyond the reference's fields (0 under the reference runtime; kRuntimeTotalsFields):
  double t_optimizer = 0;  // s: the optimizer step, weight casts, gradient accumulation and zeroing
  double t_framework = 0;  // s: the host's floor beyond the GPU's work (runtime host_block_s, eager launches)
  double mem_limit = 0;    // GB: what the runtime can allocate of the GPU, before its allocator's reserve
  // Offload (Execution::offload; 0 without it; reports show them where it is on, docs/offload.md):
  double t_offload = 0;         // s: host-link transfers the GPU's compute does not hide
  double t_host_optimizer = 0;  // s: the optimizer step on the host CPU
  double host_mem = 0;          // GB: what the GPU keeps in host memory (at most the system's host_memory)
};

// A named double of a result struct with its unit: what writers of every format loop over.
template <typename T>
struct UnitField {
  const char* name;
  double T::*member;
  const char* unit;
};

// The Totals fields in the reference's order, with their units, for writers of every format.
using TotalsField = UnitField<Totals>;
inline constexpr std::array<TotalsField, 19> kTotalsFields{{
    {"t", &Totals::t, "s"},
    {"flops_per_gpu", &Totals::flops_per_gpu, "TFLOP"},
    {"mem", &Totals::mem, "GB"},
    {"t_comp", &Totals::t_comp, "s"},
    {"t_mem", &Totals::t_mem, "s"},
    {"t_tp_comm", &Totals::t_tp_comm, "s"},
    {"t_dp_comm", &Totals::t_dp_comm, "s"},
    {"t_pp_comm", &Totals::t_pp_comm, "s"},
    {"t_bubble", &Totals::t_bubble, "s"},
    {"comp_frac", &Totals::comp_frac, "1"},
    {"tp_comm_frac", &Totals::tp_comm_frac, "1"},
    {"dp_comm_frac", &Totals::dp_comm_frac, "1"},
    {"pp_comm_frac", &Totals::pp_comm_frac, "1"},
    {"bubble_frac", &Totals::bubble_frac, "1"},
    {"mem_frac", &Totals::mem_frac, "1"},
    {"wts_mem", &Totals::wts_mem, "GB"},
    {"wts_grad_mem", &Totals::wts_grad_mem, "GB"},
    {"wts_optimizer_states_mem", &Totals::wts_optimizer_states_mem, "GB"},
    {"acts_mem", &Totals::acts_mem, "GB"},
}};

// The runtime's fields of Totals, written where the runtime is not the reference.
inline constexpr std::array<TotalsField, 3> kRuntimeTotalsFields{{
    {"t_optimizer", &Totals::t_optimizer, "s"},
    {"t_framework", &Totals::t_framework, "s"},
    {"mem_limit", &Totals::mem_limit, "GB"},
}};

// The offload fields of Totals, written where the layout offloads (Execution::offload).
inline constexpr std::array<TotalsField, 3> kOffloadTotalsFields{{
    {"t_offload", &Totals::t_offload, "s"},
    {"t_host_optimizer", &Totals::t_host_optimizer, "s"},
    {"host_mem", &Totals::host_mem, "GB"},
}};

// Every field of Totals, for what must see each one (the journal's checks of a resumed record):
// the reference's, the runtime's and the offload's fields. A field added to Totals without a
// list here fails to compile.
template <std::size_t... N>
constexpr std::array<TotalsField, (N + ...)> joined_fields(const std::array<TotalsField, N>&... lists) {
  std::array<TotalsField, (N + ...)> all{};
  auto out = all.begin();
  ((out = std::copy(lists.begin(), lists.end(), out)), ...);
  return all;
}
inline constexpr auto kAllTotalsFields = joined_fields(kTotalsFields, kRuntimeTotalsFields, kOffloadTotalsFields);
static_assert(sizeof(Totals) == kAllTotalsFields.size() * sizeof(double),
              "every field of Totals is listed in kTotalsFields, kRuntimeTotalsFields or kOffloadTotalsFields");

// The layout of a result row: every configuration key (kConfigKeys, with the strategies that
// have it) and totals field, in order. Journals fingerprint it, so records written by a build
// with other columns are never read as this build's.
std::string result_schema();

// seqp: GPUs sharing the optimizer states beyond dp (tp2 for 2d-seqp, else 1).
// exec: interleaving divides the bubble by V; the ZeRO stage and parameter layout set memory.
Totals step_totals(const BlockSummary& block, double t_dp_comm, double t_pp_comm, std::int64_t depth, std::int64_t pp,
                   std::int64_t dp, std::int64_t seqp, std::int64_t micro_batches, const Execution& exec = {});

// The totals of one pipeline stage that runs `extra` layers (summed, one micro-batch) beside its
// `blocks` blocks and holds the activations of `in_flight` micro-batches; its bubble is pp - 1 of
// its own micro-batch slots. With blocks = depth / pp, no extra layers and in_flight =
// min(micro_batches, pp) it is step_totals, to the last bit.
Totals stage_totals(const BlockSummary& block, const ModuleSums& extra, double t_dp_comm, double t_pp_comm,
                    std::int64_t blocks, std::int64_t pp, std::int64_t dp, std::int64_t seqp,
                    std::int64_t micro_batches, std::int64_t in_flight, const Execution& exec = {},
                    const StageRuntime& runtime = {}, std::int64_t expert_tensor_replicas = 1);

// Model quantities beside the reference's totals (units: parameters, GB). compose_step fills the
// layout's; params and active_params depend on the model alone (count_parameters, filled by
// evaluate; a search counts them once).
struct ModelTotals {
  double params = 0;          // the whole model
  double active_params = 0;   // those one token passes through (differs with MoE)
  double params_per_gpu = 0;  // weights held by one GPU of the stage that bounds memory
  double embedding_mem = 0;   // GB per GPU: the input embedding's weights, gradients and optimizer states
  double logits_mem = 0;      // GB per GPU: the loss's logits of one micro-batch (b l V / tp elements)
  // The pipeline stage (0-based) whose time decides the step, and the one with the most memory,
  // which decides whether it fits; the middle stages of an uneven partition read 1 (all alike).
  std::int64_t time_stage = 0;
  std::int64_t memory_stage = 0;
};

using ModelTotalsField = UnitField<ModelTotals>;
inline constexpr std::array<ModelTotalsField, 5> kModelTotalsFields{{
    {"params", &ModelTotals::params, "parameters"},
    {"active_params", &ModelTotals::active_params, "parameters"},
    {"params_per_gpu", &ModelTotals::params_per_gpu, "parameters"},
    {"embedding_mem", &ModelTotals::embedding_mem, "GB"},
    {"logits_mem", &ModelTotals::logits_mem, "GB"},
}};

// The step around one block: DP and PP communication and the totals.
struct StepCosts {
  LayerResult dp_row, pp_row;
  Totals totals;
  ModelTotals model;
};

// The one composition of a step from a block's summary, used by evaluate and the search. With a
// vocabulary, the end stages (`ends`: stage_end_sums of this layout) add their layers; the
// slowest stage decides the time fields of the totals, the fullest the memory fields. With an
// uneven partition (stage_blocks) the first stage (its blocks, the embedding, min(micro-batches,
// pp) micro-batches in flight), a middle one (min(micro-batches, pp - 1) in flight) and the last
// (its blocks, the LM head and loss, one in flight) are costed, each with the data-parallel
// reduction of its own weights.
StepCosts compose_step(const System& s, const Transformer& m, const Layout& layout, const BlockSummary& block,
                       std::int64_t global_batch, const StageEndSums& ends = {});
// The same under a runtime: the layout's execution options with the runtime's mechanisms
// (Runtime::mechanisms) and its attention (runtime_attention).
StepCosts compose_step(const System& s, const Transformer& m, const Runtime& rt, const Layout& layout,
                       const BlockSummary& block, std::int64_t global_batch, const StageEndSums& ends = {});

// Everything about one configuration: the per-layer tables, DP and PP rows and totals.
struct Evaluation {
  Module mlp, sa;
  Module first_stage, last_stage;  // the vocabulary's layers (empty without a vocabulary)
  LayerResult dp_row, pp_row;
  Totals totals;
  ModelTotals model;
  // Whether reports carry the model section: for a model with options beyond the reference's,
  // so that a reference model's JSON and CSV stay the reference's.
  bool model_section = false;
  double throughput = 0;  // samples/s = global batch / step time
  bool fits = false;      // totals.mem <= totals.mem_limit (hbm_capacity under the reference runtime)
  // The runtime it was composed under, for reports (reference: the built-in, hash 0).
  std::string runtime = "reference";
  std::uint64_t runtime_hash = 0;
  // How the runtime splits the blocks over pipeline stages where the layout gives no counts
  // (Mechanisms::stage_partition), for reports' stages.
  StagePartition stage_partition = StagePartition::Even;
  // The parameter layout it was composed with, as reports name it (runtime.hpp: param_layout_text:
  // the --layout choice, or the runtime's own bytes per parameter).
  std::string param_layout;
  // The GPU's memory in GB as the runtime reads hbm_capacity (GiB where it says so, else the
  // number as given), before the driver's and the allocator's shares (totals.mem_limit is after).
  double capacity_gb = 0;
  bool capacity_in_gib = false;
  // Tokens per second, model FLOP/s per GPU and MFU (model/efficiency.hpp), and, when a tool is
  // given a token budget (--tokens), the time, GPU-hours and cost of training on it.
  Efficiency efficiency;
  TrainingBudget budget;
  bool under_runtime() const { return runtime != "reference" || runtime_hash != 0; }
};

Evaluation evaluate(const System& s, const Transformer& m, const Layout& layout, std::int64_t global_batch);
// Under a runtime: the layout with the runtime's attention, costed with its mechanisms, the same
// composition.
Evaluation evaluate(const System& s, const Transformer& m, const Runtime& rt, const Layout& layout,
                    std::int64_t global_batch);

// Whether the step's host memory fits the system's (always without offload).
inline bool fits_host(const System& s, const Totals& t) { return !(t.host_mem > s.host_memory); }

}  // namespace perfsweep
