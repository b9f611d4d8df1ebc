#pragma once
// One training step of a parallel configuration: data- and pipeline-parallel communication and
// the step totals (the reference's DataParallel and PipelineParallel layers and execution.totals).
#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "model/efficiency.hpp"
#include "model/plan.hpp"
#include "model/runtime.hpp"

namespace perfsweep {

// What a step needs of one block's modules. With MoE every `moe.every` > 1 blocks, the mean
// block of a group of every blocks (mix_blocks).
struct BlockSummary {
  ModuleSums mlp;
  ModuleSums sa;
  double p2p_volume_gb = 0;  // activations sent between pipeline stages per micro-batch
  // The routed experts' weights (GB), part of mlp.weights_mem: sharded and reduced over the
  // expert-data-parallel group (dp / ep GPUs).
  double expert_weights_gb = 0;
  // ZeRO-3's whole block (GB): the larger kind's weights when blocks differ, else 0 (the block's).
  double whole_block_weights_gb = 0;
};

BlockSummary summarize(const Module& mlp, const Module& sa, const BuiltBlock& built);

// A stage of blocks of two kinds (MoE every `every` blocks, dense the others) holds whole groups
// of every blocks (validate_layout), so its sums are depth / pp times the group's mean block:
// (moe + (every - 1) dense) / every, field by field. The attention is the same in both; ZeRO-3
// gathers the larger block whole.
// With the first moe.first_dense blocks dense (DeepSeek's first_k_dense_replace) the mean is the
// model's, moe_blocks of depth blocks MoE, every stage costed with it (a stage's own mix of the
// two is not followed; docs/models.md).
BlockSummary mix_blocks(const BlockSummary& moe, const BlockSummary& dense, std::int64_t moe_blocks,
                        std::int64_t blocks);
BlockMemory mix_block_memory(const BlockMemory& moe, const BlockMemory& dense, std::int64_t moe_blocks,
                             std::int64_t blocks);

// The block a step is composed from, for one micro-batch on one GPU: the model's block (`block`:
// describe_block) timed into `mlp` and `sa`, and with MoE every `moe.every` > 1 blocks the dense
// block between (`dense_block`: describe_dense_block) mixed in. evaluate and the search both cost
// blocks with these, so their steps agree to the last bit.
BlockSummary cost_block(const System& s, const Transformer& m, const Layout& layout,
                        const std::vector<BlockLayer>& block, const std::vector<BlockLayer>& dense_block, Module& mlp,
                        Module& sa);
BlockMemory cost_block_memory(const System& s, const Transformer& m, const Layout& layout,
                              const std::vector<BlockLayer>& block, const std::vector<BlockLayer>& dense_block);

// Weight all-gather (forward) and gradient reduce-scatter (backward) across the data-parallel
// group, overlapped with the compute of the other layers of a stage: one collective is exposed,
// and the rest only by what they exceed one layer's compute.
// What the data-parallel group moves per block, relative to the block's weights in the
// reference's element size: parameters gathered (forward; with ZeRO-3 again in the backward)
// and gradients reduced (backward).
// With ep > 1 the routed experts' weights (BlockSummary::expert_weights_gb) are gathered and
// reduced over the expert-data-parallel group (expert_group GPUs, expert_fast of them in a
// domain) after the other weights' collective over the data-parallel group.
struct DataParallelTraffic {
  double gather_scale = 1;
  double reduce_scale = 1;
  bool gather_in_backward = false;  // ZeRO-3: the backward gathers the parameters again
  std::int64_t expert_group = 0;    // 0: the experts' weights move with the others
  std::int64_t expert_fast = 1;
  // NVLink domains between consecutive domains of the group and of the expert group (network
  // tiers: model/collective.hpp network_path).
  std::int64_t stride = 1;
  std::int64_t expert_stride = 1;
  // How many times a step runs each (the runtime's cadence: FSDP and DeepSpeed ZeRO-3 gather and
  // reduce for every micro-batch).
  std::int64_t gather_repeats = 1;
  std::int64_t reduce_repeats = 1;
};
DataParallelTraffic data_parallel_traffic(const Execution& exec);
// With a runtime: its bytes per parameter set the volumes (the gradients' and weights' dtypes
// relative to the reference's 2 bytes) and its cadence the repeats over `micro_batches`.
DataParallelTraffic data_parallel_traffic(const Runtime& rt, const Execution& exec, std::int64_t micro_batches);

LayerResult data_parallel(const System& s, const BlockSummary& block, std::int64_t layers_per_stage,
                          std::int64_t group, std::int64_t fast_domain, bool overlap = true,
                          const DataParallelTraffic& traffic = {});

// Point-to-point activation transfers between pipeline stages, for every micro-batch. Links inside
// the NVLink domain are fast; the reference times the others as free (its quirk, kept with
// `slow_links_free`; a framework's runtime times them over the network). Always
// the analytical model: nccl-tests calibrations cover allreduce, allgather and reducescatter.
// With V virtual stages per GPU (interleaved 1F1B) every micro-batch crosses V times as many
// stage boundaries. With network tiers, a link between stages in different domains (fast_domain
// 1) crosses the tiers between its two domains, consecutive stages `stride` domains apart: the
// links' mean time (model/collective.hpp link_path).
LayerResult pipeline_parallel(const System& s, const BlockSummary& block, std::int64_t micro_batches,
                              std::int64_t pp, std::int64_t fast_domain, bool slow_links_free = true,
                              std::int64_t interleave = 1, std::int64_t stride = 1);

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

// Memory per GPU (GB) of a stage of `blocks` blocks: weights, their gradients, fp32 master
// weights and Adam moments (the reference: 6x the fp16 weights) sharded over dp x seqp as the
// ZeRO stage says, and the activations of `in_flight` micro-batches (1F1B: min(micro-batches,
// pp) on the first stage; interleaved, the first stage holds pp (1 + (pp - 1) / (pp V))
// micro-batches' worth, Korthikanti et al. 2022 sec. 4.2.3). `extra_*`: the stage's layers beside
// its blocks (embedding, LM head). With ep > 1 the routed experts' weights
// (`expert_weights_per_block`) are replicated over dp x seqp / ep GPUs only (Megatron-Core's
// expert-data-parallel group), so their optimizer states (and with ZeRO-2/3 gradients and
// weights) shard over that many. ZeRO-3 keeps one block's weights whole: `whole_block_weights`,
// or weights_per_block when 0. It does not depend on the NVLink placement.
// With offload (Execution::offload) what moves to the host leaves the GPU's fields and is `host`.
struct StepMemory {
  double weights = 0, weight_grads = 0, optimizer_states = 0, activations = 0, total = 0;
  double host = 0;
};
// The pipeline schedule's bubble (seconds) from a micro-batch's slot on the stage (F + B + W, with
// its transfers and host floor), its backward (B + W) and weight gradients (W): the formulas of
// PipelineSchedule (model/block.hpp), interleaving aside (1F1B's (p - 1) slots), never below 0.
double schedule_bubble(PipelineSchedule schedule, std::int64_t pp, double slot_s, double backward_s, double weight_s);
// The schedule's activations in flight on the first stage relative to 1F1B's pp micro-batches:
// 1 (1F1B, ZB-H1), (2 pp - 1) / pp (ZB-H2), (pp + 1) / pp (DualPipe).
double schedule_activation_factor(PipelineSchedule schedule, std::int64_t pp);

StepMemory step_memory(double weights_per_block, double activations_per_block, std::int64_t blocks, std::int64_t pp,
                       std::int64_t dp, std::int64_t seqp, std::int64_t in_flight, const Execution& exec = {},
                       double extra_weights = 0, double extra_activations = 0, double expert_weights_per_block = 0,
                       double whole_block_weights = 0, const StateBytes* bytes = nullptr);

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
// What a runtime adds to a stage: its bytes per parameter, the host's floor per micro-batch, the
// kernels around the layers and the peak's transients (all zero under the reference runtime).
struct StageRuntime {
  const StateBytes* bytes = nullptr;  // null: Execution::params
  double floor_per_micro_batch_s = 0;
  double per_micro_batch_s = 0;  // the runtime's kernels of each micro-batch (casts, accumulation)
  double t_optimizer = 0;        // the runtime's kernels of the step, every micro-batch's included
  // memory beyond states and activations at the peak (less than 0 where FP8 parameters take the
  // place of bf16 weights the states count)
  double transient_gb = 0;
  // Offload: host-link transfers the compute does not hide, of each micro-batch (streamed weights,
  // activations) and of the step (the optimizer's gradients and weights), and the host's
  // optimizer step.
  double offload_per_micro_batch_s = 0;
  double offload_step_s = 0;
  double t_host_optimizer = 0;
};
Totals stage_totals(const BlockSummary& block, const ModuleSums& extra, double t_dp_comm, double t_pp_comm,
                    std::int64_t blocks, std::int64_t pp, std::int64_t dp, std::int64_t seqp,
                    std::int64_t micro_batches, std::int64_t in_flight, const Execution& exec = {},
                    const StageRuntime& runtime = {});

// The GB a runtime lets a step allocate on the system: hbm_capacity under the reference; else the
// capacity read as GiB less the driver's reserve, in GB, divided by 1 + the allocator's reserve.
double memory_limit_gb(const System& s, const Runtime& rt);

// A memory-bound pass over `gigabytes` on the system: the kernel calibration's curve of `kind`
// when fitted, else the roofline of `fallback`.
double stream_seconds(const System& s, kernels::StreamKind kind, KernelClass fallback, double gigabytes);

// Megatron-LM's saved activations of one block and micro-batch (GB per GPU, runtime activations:
// megatron), split as the block's modules: Korthikanti et al. 2022, Table 2 (34 sbh/t with
// sequence parallelism and flash attention for GPT-3), generalized to GQA, SwiGLU and no dropout.
BlockActivations megatron_block_activations(const Transformer& m, const Layout& layout);

// A block's saved activations as the runtime accounts them (megatron, autocast; 1d), or nullopt
// where the block's own buffers (the reference's accounting) stand. An MoE block's MLP keeps its
// own buffers either way.
std::optional<BlockActivations> runtime_block_activations(const Transformer& m, const Runtime& rt,
                                                          const Layout& layout);

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

// With a vocabulary, what the end stages run beside their blocks for one micro-batch: the
// embedding (first) and the final norm, LM head and loss (last), summed, and the loss's kept
// logits (GB). It depends on the layout only as a block does (micro-batch, tensor split and
// placement, execution options) and on whether the embedding and a tied head share one stage
// (pp = 1), so the search costs it once with each block. `first_stage` and `last_stage`, when
// given, receive the timed rows.
// tied_head_gb: with tied embeddings on several stages, the last stage's copy of the embedding
// (GB per GPU), whose gradient the first and last stage all-reduce after the backward
// (Megatron's embedding group), exposed on both.
struct StageEndSums {
  ModuleSums first, last;
  double logits_gb = 0;
  double tied_head_gb = 0;
};
StageEndSums stage_end_sums(const System& s, const Transformer& m, const Layout& layout,
                            Module* first_stage = nullptr, Module* last_stage = nullptr);

// The one composition of a step from a block's summary, used by evaluate and the search. With a
// vocabulary, the end stages (`ends`: stage_end_sums of this layout) add their layers; the
// slowest stage decides the time fields of the totals, the fullest the memory fields. With an
// uneven partition (stage_blocks) the first stage (its blocks, the embedding, min(micro-batches,
// pp) micro-batches in flight), a middle one (min(micro-batches, pp - 1) in flight) and the last
// (its blocks, the LM head and loss, one in flight) are costed, each with the data-parallel
// reduction of its own weights.
StepCosts compose_step(const System& s, const Transformer& m, const Layout& layout, const BlockSummary& block,
                       std::int64_t global_batch, const StageEndSums& ends = {});
// The same under a runtime (the layout's execution options with apply_runtime already applied).
StepCosts compose_step(const System& s, const Transformer& m, const Runtime& rt, const Layout& layout,
                       const BlockSummary& block, std::int64_t global_batch, const StageEndSums& ends = {});

// What the search's bound (search/search.cpp) knows of compose_step before a layout is costed.
// stage_totals times a stage of b blocks and m micro-batches as b m block_pass_seconds plus terms
// that are never negative (transfers, host floor, bubble, data-parallel communication, optimizer,
// offload), 1F1B's bubble being (pp - 1) / V of a micro-batch's slot; compose_step's step is its
// slowest costed stage, and the stage holding the most blocks is always among those it costs. So
// no layout with that block, micro-batches and pipeline steps faster than step_seconds_lower_bound.
// One block's forward and backward for one micro-batch as the step composes it: under a runtime
// with tensor-parallel overlap, what the GEMMs leave of its collectives (runtime_view).
double block_pass_seconds(const Runtime& rt, const BlockSummary& block);
// The fewest blocks the fullest of pp stages may hold under the partition: depth / pp for an even
// split, the nanotron partition's most, else (the balanced or slotted partition the search's leaf
// chooses) ceil(groups / pp) groups of moe.every, since the stages hold every block.
std::int64_t fullest_stage_blocks(const Transformer& m, std::int64_t pp, StagePartition partition);
// The bound (s) for a block pass of block_s, micro_batches, fullest_blocks and pp stages;
// one_f_one_b: the schedule is 1F1B with `interleave` virtual stages (else its bubble counts 0);
// less a relative 1e-9, so that the rounding of the sums it stands for never puts a step below it.
double step_seconds_lower_bound(double block_s, std::int64_t micro_batches, std::int64_t fullest_blocks,
                                std::int64_t pp, std::int64_t interleave, bool one_f_one_b);

// The partition of the model's blocks over the layout's pp > 1 stages that a search or
// `estimate --first-stage-blocks auto` takes: the first and last stages hold at least one block,
// the pp - 2 middle ones equally many, each a multiple of moe.every, and the slowest stage takes
// the least time per micro-batch. A stage's time is estimated from its blocks (`block`, with the
// runtime's tensor-parallel overlap and host floor per block) and its end layers (`ends`), so no
// block is costed again. Ties go to fewer blocks on the first stage (which holds the most
// micro-batches' activations), then on the last. ConfigError when no such partition exists
// (depth < pp, or moe.every not dividing the depth). With interleaving (V > 1) the one partition
// Megatron-LM cuts into V chunks a stage where the depth does not split evenly: slotted_stages's.
StageBlocks balanced_stages(const System& s, const Transformer& m, const Runtime& rt, const Layout& layout,
                            const BlockSummary& block, const StageEndSums& ends);
// The same from the times alone (seconds per micro-batch): a block's, its host floor, and the end
// layers' on the first and last stage; `every`: a stage's blocks come in groups of that many.
StageBlocks balanced_stages(std::int64_t depth, std::int64_t pp, std::int64_t every, double block_s,
                            double block_floor_s, double first_extra_s, double last_extra_s);

// The layout with the partition balanced_stages chooses for its block under the runtime (with
// pp = 1, the even split; with interleaving, the even split or slotted_stages's where the depth
// does not split evenly); ConfigError as validate_layout gives it.
Layout with_balanced_stages(const System& s, const Transformer& m, const Runtime& rt, const Layout& layout,
                            std::int64_t global_batch);
// The same with the block and end layers of the layout it balances (the runtime applied) from
// `costed` (configs' cache; cost_block and stage_end_sums of that layout, as they would give them).
struct CostedLayout {
  BlockSummary block;
  StageEndSums ends;
};
Layout with_balanced_stages(const System& s, const Transformer& m, const Runtime& rt, const Layout& layout,
                            std::int64_t global_batch, const std::function<CostedLayout(const Layout&)>& costed);

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

// Checks the layout against the model (divisibility, NVLink sizes), throwing ConfigError with a
// readable reason when the reference could not express it.
void validate_layout(const System& s, const Transformer& m, const Layout& layout, std::int64_t global_batch);

Evaluation evaluate(const System& s, const Transformer& m, const Layout& layout, std::int64_t global_batch);
// Under a runtime: apply_runtime on the layout, then the same composition.
Evaluation evaluate(const System& s, const Transformer& m, const Runtime& rt, const Layout& layout,
                    std::int64_t global_batch);

// The runtime's checks of a layout (strategies and ZeRO stages it runs), ConfigError otherwise.
void validate_runtime_layout(const Runtime& rt, const Layout& layout);

// Whether the step's host memory fits the system's (always without offload).
inline bool fits_host(const System& s, const Totals& t) { return !(t.host_mem > s.host_memory); }

}  // namespace perfsweep
