#pragma once
// A step's memory per GPU: weights, gradients, optimizer states and activations by ZeRO stage,
// schedule and offload; the limit a runtime lets a step allocate; the activations a framework
// keeps.
#include <cstdint>
#include <optional>

#include "model/plan.hpp"
#include "model/runtime.hpp"

namespace perfsweep {

// Memory per GPU (GB) of a stage of `blocks` blocks: weights, their gradients, fp32 master
// weights and Adam moments (the reference: 6x the fp16 weights) sharded over dp x seqp as the
// ZeRO stage says, and the activations of `in_flight` micro-batches (1F1B: min(micro-batches,
// pp) on the first stage; interleaved, the first stage holds pp (1 + (pp - 1) / (pp V))
// micro-batches' worth, Korthikanti et al. 2022 sec. 4.2.3). `extra_*`: the stage's layers beside
// its blocks (embedding, LM head). With ep > 1, or expert tensor parallelism narrower than the
// tensor group (`expert_tensor_replicas` = tp1 / etp > 1), the routed experts' weights
// (`expert_weights_per_block`) are replicated over dp x seqp x expert_tensor_replicas / ep GPUs
// (Megatron-Core's expert-data-parallel group, world / (etp ep pp)), so their optimizer states
// (and with ZeRO-2/3 gradients and weights) shard over that many. ZeRO-3 keeps one block's weights whole: `whole_block_weights`,
// or weights_per_block when 0. It does not depend on the NVLink placement.
// With offload (Execution::offload) what moves to the host leaves the GPU's fields and is `host`.
struct StepMemory {
  double weights = 0, weight_grads = 0, optimizer_states = 0, activations = 0, total = 0;
  double host = 0;
};
StepMemory step_memory(double weights_per_block, double activations_per_block, std::int64_t blocks, std::int64_t pp,
                       std::int64_t dp, std::int64_t seqp, std::int64_t in_flight, const Execution& exec = {},
                       double extra_weights = 0, double extra_activations = 0, double expert_weights_per_block = 0,
                       double whole_block_weights = 0, const StateBytes* bytes = nullptr,
                       std::int64_t expert_tensor_replicas = 1);

// Bytes per parameter of the fp32 gradients the host optimizer reads.
inline constexpr double kHostGradientBytes = 4;

// The GB a runtime lets a step allocate on the system: hbm_capacity under the reference; else the
// capacity read as GiB less the driver's reserve, in GB, divided by 1 + the allocator's reserve.
double memory_limit_gb(const System& s, const Runtime& rt);

// Megatron-LM's saved activations of one block and micro-batch (GB per GPU, runtime activations:
// megatron), split as the block's modules: Korthikanti et al. 2022, Table 2 (34 sbh/t with
// sequence parallelism and flash attention for GPT-3), generalized to GQA, SwiGLU and no dropout;
// the GEMMs' inputs in FP8 where the layout's precision is low and the mechanisms keep them so
// (Fp8Policy::saved_inputs).
BlockActivations megatron_block_activations(const Transformer& m, const Layout& layout,
                                            const Mechanisms& mech = Mechanisms{});

// A block's saved activations as the runtime accounts them (megatron, autocast; 1d), or nullopt
// where the block's own buffers (the reference's accounting) stand. An MoE block's MLP keeps its
// own buffers either way.
std::optional<BlockActivations> runtime_block_activations(const Transformer& m, const Runtime& rt,
                                                          const Layout& layout);

}  // namespace perfsweep
