#pragma once
// One training step of a parallel configuration: data- and pipeline-parallel communication and
// the step totals (the reference's DataParallel and PipelineParallel layers and execution.totals).
#include <array>
#include <cstdint>

#include "model/plan.hpp"

namespace perfsweep {

// What a step needs of one block's modules.
struct BlockSummary {
  ModuleSums mlp;
  ModuleSums sa;
  double p2p_volume_gb = 0;  // activations sent between pipeline stages per micro-batch
};

BlockSummary summarize(const Module& mlp, const Module& sa, double p2p_volume_gb);

// Weight all-gather (forward) and gradient reduce-scatter (backward) across the data-parallel
// group, overlapped with the compute of the other layers of a stage: one collective is exposed,
// and the rest only by what they exceed one layer's compute.
// What the data-parallel group moves per block, relative to the block's weights in the
// reference's element size: parameters gathered (forward; with ZeRO-3 again in the backward)
// and gradients reduced (backward).
struct DataParallelTraffic {
  double gather_scale = 1;
  double reduce_scale = 1;
  bool gather_in_backward = false;  // ZeRO-3: the backward gathers the parameters again
};
DataParallelTraffic data_parallel_traffic(const Execution& exec);

LayerResult data_parallel(const System& s, const BlockSummary& block, std::int64_t layers_per_stage,
                          std::int64_t group, std::int64_t fast_domain, bool overlap = true,
                          const DataParallelTraffic& traffic = {});

// Point-to-point activation transfers between pipeline stages, for every micro-batch. Links inside
// the NVLink domain are fast; the reference times the others as free (its quirk, kept). Always
// the analytical model: nccl-tests calibrations cover allreduce, allgather and reducescatter.
// With V virtual stages per GPU (interleaved 1F1B) every micro-batch crosses V times as many
// stage boundaries.
LayerResult pipeline_parallel(const System& s, const BlockSummary& block, std::int64_t micro_batches,
                              std::int64_t pp, std::int64_t fast_domain, bool overlap = false,
                              std::int64_t interleave = 1);

// The reference's totals() stats, in its units (s, TFLOP, GB).
struct Totals {
  double t = 0, flops_per_gpu = 0, mem = 0;
  double t_comp = 0, t_mem = 0, t_tp_comm = 0, t_dp_comm = 0, t_pp_comm = 0, t_bubble = 0;
  double comp_frac = 0, tp_comm_frac = 0, dp_comm_frac = 0, pp_comm_frac = 0, bubble_frac = 0, mem_frac = 0;
  double wts_mem = 0, wts_grad_mem = 0, wts_optimizer_states_mem = 0, acts_mem = 0;
};

// The Totals fields in the reference's order, with their units, for writers of every format.
struct TotalsField {
  const char* name;
  double Totals::*member;
  const char* unit;
};
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

// Memory per GPU (GB) of a stage of depth/pp blocks: weights, their gradients, fp32 master
// weights and Adam moments (the reference: 6x the fp16 weights) sharded over dp x seqp as the
// ZeRO stage says, and the activations of at most pp micro-batches in flight (1F1B; interleaved,
// the first stage holds pp (1 + (pp - 1) / (pp V)) micro-batches' worth, Korthikanti et al. 2022
// sec. 4.2.3). It does not depend on the NVLink placement.
struct StepMemory {
  double weights = 0, weight_grads = 0, optimizer_states = 0, activations = 0, total = 0;
};
StepMemory step_memory(double weights_per_block, double activations_per_block, std::int64_t depth, std::int64_t pp,
                       std::int64_t dp, std::int64_t seqp, std::int64_t micro_batches, const Execution& exec = {});

// The layout of a result row: every configuration key (kConfigKeys, with the strategies that
// have it) and totals field, in order. Journals fingerprint it, so records written by a build
// with other columns are never read as this build's.
std::string result_schema();

// seqp: GPUs sharing the optimizer states beyond dp (tp2 for 2d-seqp, else 1).
// exec: interleaving divides the bubble by V; the ZeRO stage and parameter layout set memory.
Totals step_totals(const BlockSummary& block, double t_dp_comm, double t_pp_comm, std::int64_t depth, std::int64_t pp,
                   std::int64_t dp, std::int64_t seqp, std::int64_t micro_batches, const Execution& exec = {});

// The step around one block: DP and PP communication and the totals.
struct StepCosts {
  LayerResult dp_row, pp_row;
  Totals totals;
};

// The one composition of a step from a block's summary, used by evaluate and the search.
StepCosts compose_step(const System& s, const Transformer& m, const Layout& layout, const BlockSummary& block,
                       std::int64_t global_batch);

// Everything about one configuration: the per-layer tables, DP and PP rows and totals.
struct Evaluation {
  Module mlp, sa;
  LayerResult dp_row, pp_row;
  Totals totals;
  double throughput = 0;  // samples/s = global batch / step time
  bool fits = false;      // totals.mem <= hbm_capacity
};

// Checks the layout against the model (divisibility, NVLink sizes), throwing ConfigError with a
// readable reason when the reference could not express it.
void validate_layout(const System& s, const Transformer& m, const Layout& layout, std::int64_t global_batch);

Evaluation evaluate(const System& s, const Transformer& m, const Layout& layout, std::int64_t global_batch);

}  // namespace perfsweep
