#pragma once
// A training framework's way of executing a layout, as data (runtimes/*.yaml, docs/runtimes.md):
// what it keeps per parameter, when ZeRO/FSDP gathers and reduces, which communication overlaps
// which compute, how it accounts activations, which kernels it runs around the layers, its
// host's floor per micro-batch, and how much of the GPU's memory it can allocate. The step
// composition (model/step.hpp: compose_step) reads it; the `reference` runtime is the paper's
// model and leaves every result of the reference bit-identical.
#include <cstdint>
#include <string>
#include <string_view>

#include "model/block.hpp"
#include "model/execution_options.hpp"

namespace perfsweep {

// Bytes per parameter the framework keeps between steps (and, for `casts`, during forward and
// backward). Sharding follows the ZeRO stage: master and moments (and zero_gradient_shard) from
// ZeRO-1, gradients and accumulator from ZeRO-2, weights from ZeRO-3.
struct StateBytes {
  double weights = 2;      // the weights the GEMMs read (bf16: 2; PyTorch autocast keeps fp32: 4)
  double gradients = 2;    // the gradients the backward writes (reduced over data parallelism)
  double accumulator = 0;  // a separate gradient accumulator (nanotron's fp32 one)
  double master = 4;       // fp32 master weights (0 where the weights are fp32 already)
  double moments = 8;      // Adam's two fp32 moments
  double casts = 0;        // bf16 copies of the weights made for the forward (autocast)
  // With ZeRO >= 1: an fp32 gradient per data-parallel shard, and an unsharded bf16 buffer the
  // updated shards are all-gathered into (nanotron's ZeRO-1).
  double zero_gradient_shard = 0;
  double zero_gather_buffer = 0;
  bool operator==(const StateBytes&) const = default;
};

// The bytes of a parameter layout (Execution::params): the reference's, Megatron's, autocast's.
StateBytes state_bytes(ParamLayout layout);

// How often a data-parallel collective runs in a step.
enum class Cadence : std::uint8_t {
  PerStep,        // once per optimizer step (Megatron's distributed optimizer, the reference)
  PerMicroBatch,  // for every micro-batch (FSDP and DeepSpeed ZeRO-3 gather the weights again)
};

// What a stage's data-parallel collectives run behind under an interleaved pipeline (virtual
// stages; with one chunk a stage the two are the same).
enum class DpOverlap : std::uint8_t {
  // Each layer's collective behind one layer's compute of one micro-batch, one collective exposed
  // (the reference's; PyTorch DDP's buckets, Megatron's schedule without interleaving).
  Layer,
  // Megatron-Core's interleaved schedule (pipeline_parallel/schedules.py): a virtual chunk's
  // gradients reduce once its last micro-batch's backward runs, queued behind the backward of
  // the chunks that finish later (pp backward steps between two chunks' last micro-batches);
  // the first two chunks' weights gather at the step's start, each later chunk's as the one
  // before it runs its first forward (param_sync_func, grad_sync_func).
  Chunk,
};

// Which activations the backward keeps.
enum class ActivationAccounting : std::uint8_t {
  Reference,  // the reference's per-layer buffers (52 sbh/t for GPT-3 with flash attention)
  Megatron,   // Megatron-LM's (Korthikanti et al. 2022, Table 2 generalized to GQA, SwiGLU)
  Autocast,   // PyTorch eager under bf16 autocast: the tensors its autograd saves, the weight casts
              // cached over the forward, the loss's fp32 buffers (model/autocast.hpp)
};

// The frameworks whose launch lines perfsweep writes (io/launch.hpp LaunchFramework, in its
// order): a runtime's `launch`.
inline constexpr const char* kLaunchFrameworkNames[] = {"megatron", "nemo", "torchtitan"};

struct Runtime {
  std::string name = "reference";
  std::string file;              // the file it was loaded from ("" for the built-in reference)
  std::uint64_t content_hash = 0;  // FNV-1a of the file's bytes (0 for the built-in reference)
  // The framework whose launch line a sweep file gives its best configurations (the runtime
  // file's `launch`, kLaunchFrameworkNames' index); -1: none.
  std::int8_t launch = -1;

  // Bytes per parameter. Not given (the reference runtime): Execution::params decides.
  bool has_states = false;
  StateBytes states;

  // The framework's mechanisms on the layers and the step (p2p_scatter_gather, sp_backward_gather,
  // fused_elementwise, dp_after_backward, the fp8_* keys, stage_partition, moe_permutation): what
  // the block builders and the step's composition read beside the layout (model/block.hpp).
  Mechanisms mechanisms;
  // Whether it runs flash attention (false: every layout's attention unfused, runtime_attention).
  bool flash_attention = true;

  // ZeRO-3 weight gathers and ZeRO-2/3 gradient reductions.
  Cadence zero_gather = Cadence::PerStep;
  Cadence zero_reduce = Cadence::PerStep;
  // What the data-parallel collectives of a once-per-step reduction and gather run behind with
  // interleaving (dp_overlap: layer or chunk).
  DpOverlap dp_overlap = DpOverlap::Layer;
  // Fraction of the tensor-parallel collectives' time hidden behind the GEMMs they feed or follow
  // where the overlap is on (Megatron's --tp-comm-overlap with userbuffers); exposed: max(comm -
  // overlap x GEMM, (1 - overlap) x comm) per pass. 0: the framework has no such overlap.
  double tp_comm_overlap = 0;
  // Whether the overlap is on unless --tp-comm-overlap says (Execution::tp_comm_overlap's default;
  // tp_comm_overlap_default: false for a framework that has it off by default, as Megatron-LM).
  bool tp_comm_overlap_default = true;

  ActivationAccounting activations = ActivationAccounting::Reference;

  // Kernels around the layers, bytes per parameter: the optimizer step (read and written over
  // the GPU's optimizer shard), weight casts per micro-batch (over the GEMM weights: the forward's
  // copy, the copy a re-run block makes again, and the backward's cast of each GEMM weight's
  // gradient back to the parameter's type), gradient accumulation per micro-batch (over the
  // parameters), gradient zeroing per step.
  double optimizer_bytes = 0;
  double cast_bytes = 0;
  double accumulate_bytes = 0;
  double zero_grad_bytes = 0;

  // The host's floor per micro-batch and block of a stage (s): a micro-batch keeps a stage busy at
  // least blocks x (host_block_s + tp x host_block_per_tp_s with pp > 1 + (tensor-parallel NVLink
  // domains - 1) x host_block_per_tp_domain_s).
  double host_block_s = 0;
  double host_block_per_tp_s = 0;
  double host_block_per_tp_domain_s = 0;
  // Eager launch: a micro-batch keeps a stage busy at least as long as the host takes to issue
  // its layer passes one by one (the kernel calibration's isolated_call_s, forward and backward,
  // and a re-run forward per block with full recomputation). Without a calibration, nothing.
  bool host_kernel_calls = false;

  // Memory the framework can allocate: the vendor's capacity read as GiB, less the CUDA context
  // (driver_reserve_gib), and the caching allocator's reserve on top of the peak. The reference
  // compares its GB with the capacity's number as it is.
  bool capacity_in_gib = false;
  double driver_reserve_gib = 0;
  double allocator_reserve = 0;
  // The loss's transient logits (fp32 logits, their log-softmax and gradients, in logit-sized
  // buffers) and the optimizer step's (bytes per parameter of the shard), counted at the peak.
  double loss_transient_logits = 0;
  double optimizer_transient_bytes = 0;
  // The allocator's reserve fitted with the system's kernel calibration (validate fit-kernels
  // --train-measurements), where it has one, instead of allocator_reserve.
  bool allocator_reserve_from_kernels = false;
  // Every micro-batch's inputs and targets on the GPU from the step's start (token ids and
  // targets, int64; without a vocabulary fp32 features), as a script that moves the whole batch
  // before the step keeps them.
  bool batch_resident = false;

  // What the framework can run: bit s of strategies for Strategy s (1d, 2d, 2d-seqp), bit z of
  // zero_stages for ZeRO stage z. A search tries only these; estimate refuses others.
  std::uint8_t strategies = 0x7;
  std::uint8_t zero_stages = 0xF;
  bool runs(Strategy s) const { return (strategies >> static_cast<int>(s)) & 1u; }
  bool runs_zero(std::int64_t z) const { return z >= 0 && z <= 3 && ((zero_stages >> z) & 1u); }
  // Bit k: it runs context parallelism (cp > 1) with CpComm k. 0: none (the reference's 1d has
  // no context parallelism; its 2d-seqp is its own sequence split).
  std::uint8_t context_parallel = 0;
  bool runs_cp(CpComm k) const { return (context_parallel >> static_cast<int>(k)) & 1u; }
  // Bit k: it offloads Offload k to the host (`offload: [optimizer, weights]`; docs/offload.md).
  // Bit 0 (none) always.
  std::uint8_t offload = 1;
  bool runs_offload(Offload k) const { return (offload >> static_cast<int>(k)) & 1u; }
  // A run before nanotron's pipeline-engine fix (nanotron-before-fix): s added to every
  // micro-batch slot of a pipelined job that spans nodes.
  double host_slot_pipelined_multinode_s = 0;

  // The order it numbers ranks in (rank_order: tp-cp-ep-dp-pp or tp-cp-ep-pp-dp): where the
  // data-parallel and pipeline groups sit under network tiers; Execution::rank_order's default.
  RankOrder rank_order = RankOrder::DataInnerPipelineOuter;
  // How its MoE layers dispatch and combine tokens unless the layout says (moe_dispatcher:
  // alltoall, deepep; Execution::moe_dispatcher).
  MoeDispatcher moe_dispatcher = MoeDispatcher::AllToAll;

  bool is_reference() const { return file.empty() && name == "reference"; }
};

// The built-in reference runtime (the paper's model).
const Runtime& reference_runtime();

// The runtime's on-off mechanisms (Mechanisms' flags), by their runtime file keys.
struct MechanismFlag {
  const char* name;  // the runtime file's key
  bool Mechanisms::*member;
};
inline constexpr MechanismFlag kMechanismFlags[] = {
    {"p2p_scatter_gather", &Mechanisms::p2p_scatter_gather},
    {"sp_backward_gather", &Mechanisms::sp_backward_gather},
    {"fused_elementwise", &Mechanisms::fused_elementwise},
    {"dp_after_backward", &Mechanisms::dp_after_backward},
};

// The attention a layout runs under the runtime: unfused where the runtime runs no flash
// attention, else the layout's.
inline AttentionMode runtime_attention(const Runtime& rt, AttentionMode attention) {
  if (!rt.flash_attention) attention.flash = false;
  return attention;
}

// The FP8 policy a layout runs under the runtime (layout_fp8 of its mechanisms).
inline Fp8Policy layout_fp8(const Runtime& rt, const Execution& exec) {
  return layout_fp8(rt.mechanisms, exec.precision);
}

// The values the runtime gives the options whose default is the runtime's
// (ExecutionOption::runtime_default: rank_order), in an otherwise default execution.
Execution runtime_defaults(const Runtime& rt);
// Each such option's list left empty (not given) set to the runtime's value.
void fill_runtime_defaults(const Runtime& rt, ExecutionChoices& choices);

// The bytes per parameter a layout keeps under a runtime.
StateBytes runtime_state_bytes(const Runtime& rt, const Execution& exec);

// The parameter layout as reports name it (`layout=`): the --layout choice ("reference",
// "megatron", "amp"), or under a runtime whose file gives its bytes per parameter (states), which
// the choice then does not change, the runtime's own: "nemo (B/parameter: weights 2, gradients 2,
// master 4, moments 8)", naming also its accumulator, casts and ZeRO buffers where it has them.
std::string param_layout_text(const Runtime& rt, ParamLayout chosen);

}  // namespace perfsweep
