#pragma once
// The transformer block as data: one strategy-independent list of layers, each with a role and
// the shapes it gets from the model, and each strategy's sharding rules that turn a described
// layer into its per-GPU cost (the counts of model/layer.hpp). A new layer kind is an entry in
// describe_block and a case in each strategy's rule; a new strategy is one rule function.
#include <array>
#include <cstdint>
#include <vector>

#include "model/module.hpp"

namespace perfsweep {

// Which sub-layer of the block a layer belongs to (the reference's MLP and self-attention
// modules; reports keep them apart as "mlp" and "sa").
// FirstStage and LastStage hold the vocabulary's layers outside the blocks: the input embedding
// on the first pipeline stage, the final norm, LM head and loss on the last.
enum class Sublayer : std::uint8_t { Mlp, Attention, FirstStage, LastStage };

enum class Role : std::uint8_t {
  ColumnProjection,  // GEMM whose output features are split over tensor parallelism (fc1)
  QkvProjection,     // the column projection to (h + 2 kv) heads, key/value heads replicated when tp > kv
  RowProjection,     // GEMM whose input features are split; its output is reduced (fc2, vproj)
  Bias,              // bias add of a projection's output (`operand`: Hidden or Residual)
  Activation,        // GELU on the hidden features
  GatedActivation,   // silu(gate) x up: `out` features from the 2 `out` of a gated up-projection
  Dropout,           // dropout on `operand`
  Norm,              // layer norm of the sub-layer's output
  AttentionCore,     // flash attention: scores, softmax, dropout and weighted values in one kernel
  AttentionScores,   // unfused attention: Q K^T
  AttentionSoftmax,  // unfused attention: softmax over the scores
  AttentionValues,   // unfused attention: probabilities times V
  Embedding,         // vocabulary-parallel input embedding (`out` = vocabulary), first stage
  VocabProjection,   // LM head GEMM e -> vocabulary, columns split over tensor parallelism, last stage
  CrossEntropy,      // softmax cross-entropy on the vocabulary-split logits, last stage
  Router,            // MoE router GEMM e -> experts on every token (weights replicated)
  Dispatch,          // MoE all-to-all of the routed tokens to their experts' GPUs (expert parallelism)
  Combine,           // MoE all-to-all of the experts' outputs back to their tokens' GPUs
  HeadNorm,          // RMSNorm of each query or key head (QK-norm): `in` heads of `out` features, no collective
  // GEMM on the residual stream's rows as the GPU holds them, its weights whole on every GPU of
  // the tensor group and nothing communicated (MLA's down-projections, Megatron-Core's
  // "duplicated" TELinear)
  LatentProjection,
};

// What an elementwise layer (bias, dropout) acts on, which decides how it is sharded.
enum class Operand : std::uint8_t {
  Hidden,    // a column projection's output: features split over tensor parallelism
  Residual,  // a row projection's output, the block's residual stream (e wide)
  Scores,    // the attention probabilities (b x heads x l x l)
  Routed,    // an expert's layer on the tokens routed to it (MoE), for each local expert (GEMMs grouped)
};

struct BlockLayer {
  const char* name;
  Sublayer sublayer;
  Role role;
  Operand operand = Operand::Residual;  // Bias and Dropout
  std::int64_t in = 0;                  // input features (projections)
  std::int64_t out = 0;                 // output features (projections); width of elementwise layers
  // Its saved input is the activation a pipeline stage sends to the next (the reference times
  // the transfer with ln1's activation buffer).
  bool stage_input = false;
  // The LM head of a model with tied embeddings on a one-stage pipeline: its weights are the
  // embedding's, counted there.
  bool shares_weights = false;
  // A norm that stays on the rows the GPU holds, gathering nothing for a next GEMM (post-norms;
  // MLA's first norm, whose down-projections take the sequence-parallel rows).
  bool local_rows = false;
  // The attention core's sliding window (tokens; 0: the whole sequence).
  std::int64_t window = 0;
  // The share of the model's blocks this layer runs in (1: all). A layer of some blocks only (the
  // windowed and the global attention of alternating local and global layers) is costed once,
  // timed, and its counts and times scaled by its share, so the block is the model's mean block.
  double share = 1.0;
  // A norm whose gathered rows are the input of the next layer's GEMM: that layer's role (the
  // GEMM's data type is the gather's where the runtime quantizes before gathering,
  // Fp8Policy::quantized_gather). Norm: its rows feed no such GEMM (an MoE layer's router and
  // dispatch, a post-norm).
  Role gathered_for = Role::Norm;
};

// How attention runs: the reference's two modes (modules.py sa_*: flash_attention,
// attention_recompute). Its search uses flash attention.
struct AttentionMode {
  bool flash = true;
  bool recompute = false;  // unfused only: scores, softmax and dropout re-run in the backward, not kept
};

// Execution options (Megatron-LM's names; each default is what the reference models).
enum class Recompute : std::uint8_t {
  None,       // keep every layer's activations for the backward
  Selective,  // the attention core re-runs in the backward (Korthikanti et al. 2022): unfused
              // attention keeps no scores; flash attention does this inside its kernel already
  Full,       // every block re-runs its forward in the backward and keeps only its input
};
enum class ParamLayout : std::uint8_t {
  Reference,  // the reference: fp16 weights and gradients (2 + 2 bytes), optimizer 6x the weights
  Megatron,   // bf16 weights (2), fp32 gradient buffer (4), fp32 master weights and two moments (12)
  Amp,        // PyTorch autocast: fp32 weights and gradients (4 + 4), two fp32 moments (8), and
              // bf16 copies of the weights (2) alive during forward and backward
};
// The pipeline schedule (model/step.cpp: stage_totals, step_memory), each with the bubble, the
// activations in flight and the parameter copies of its paper:
//  OneFOneB      1F1B (PipeDream-Flush; Narayanan et al. 2021), interleaved with interleave > 1
//  ZeroBubbleH1  ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024): the backward
//                split into input (B) and weight (W) gradients, W filling the bubble;
//                (p - 1)(F + B - W), 1F1B's activations
//  ZeroBubbleH2  ZB-H2 (the same paper): (p - 1)(F + B - 2W) (at least 0), 2p - 1 micro-batches
//                of activations on the first stage
//  DualPipe      DeepSeek-V3's (DeepSeek-AI 2024, Table 2): micro-batches fed from both ends,
//                (p/2 - 1)(F&B + B - 3W) with F&B = F + B, two copies of the parameters, p + 1
//                micro-batches of activations
enum class PipelineSchedule : std::uint8_t { OneFOneB, ZeroBubbleH1, ZeroBubbleH2, DualPipe };
inline constexpr const char* kScheduleNames[] = {"1f1b", "zb-h1", "zb-h2", "dualpipe"};

// What a step keeps in host memory, moved over the host link (docs/offload.md; model/step.cpp:
// step_memory, stage_runtime). One choice a layout, as the frameworks offer them: weights
// offload includes the optimizer's (FSDP's CPUOffload(offload_params=True) and DeepSpeed's
// offload_param run the optimizer step on the host, where the parameters are).
//  None         everything on the GPU (the reference's)
//  Optimizer    fp32 master weights and Adam moments on the host; gradients copied there after the
//               reduction, the optimizer step on the host CPU, the updated weights copied back
//               (DeepSpeed's ZeRO-Offload, Megatron-Core's --optimizer-cpu-offload)
//  Weights      also the weights' shards and their gradients (ZeRO-3 only), streamed in for each
//               block's forward and backward behind the previous block's compute
//  Activations  the saved activations copied to the host after each block's forward and back
//               before its backward (Transformer Engine's cpu_offloading)
enum class Offload : std::uint8_t { None, Optimizer, Weights, Activations };
inline constexpr const char* kOffloadNames[] = {"none", "optimizer", "weights", "activations"};

// How a framework splits the blocks over pipeline stages (a runtime's stage_partition; model/plan.hpp:
// stage_blocks).
//  Even      depth / pp blocks each, or the first and last stages' counts given and the others
//            sharing the rest evenly (Megatron-LM's get_num_layers_to_build); a search may choose
//            the given counts (balanced_stages)
//  Nanotron  by compute cost in model order (nanotron's build_model): a decoder layer costs
//            4 e^2 + 3 f e, the LM head V e, the embedding, final norm and loss nothing; a stage
//            takes blocks until the cumulative cost passes its share of the total, so any
//            pp <= depth runs and the stages' counts may differ
enum class StagePartition : std::uint8_t { Even, Nanotron };
inline constexpr const char* kStagePartitionNames[] = {"even", "nanotron"};

// The order in which a framework numbers its ranks over the parallel axes, innermost first (a
// runtime's rank_order; model/grid.hpp: ParallelGrid): where a
// group's GPUs sit across NVLink domains and network tiers. It changes times only with a
// system's network_tiers.
//  DataInnerPipelineOuter  tp-cp-ep-dp-pp: tensor ranks innermost, then context, expert and data,
//                          pipeline stages outermost (Megatron-Core's default RankGenerator
//                          order, torchtitan's)
//  PipelineInnerDataOuter  tp-cp-ep-pp-dp: the pipeline's stages inside, data-parallel replicas
//                          outermost (Megatron-LM's --use-tp-pp-dp-mapping; Meta's [TP, CP, PP,
//                          DP] for Llama 3, arXiv 2407.21783 section 3.3.2)
enum class RankOrder : std::uint8_t { DataInnerPipelineOuter, PipelineInnerDataOuter };
inline constexpr const char* kRankOrderNames[] = {"tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp"};

// The memory-bound kernels around a MoE layer's experts (a runtime's moe_permutation; costed on
// the router, dispatch and combine layers, model/block.cpp: moe_routing_work). Megatron-Core's
// alltoall token dispatcher (megatron/core/transformer/moe/token_dispatcher.py
// MoEAlltoAllTokenDispatcher, moe_utils.py permute, unpermute, sort_chunks_by_idxs) and its
// TopKRouter (router.py; moe_utils.py topk_routing_with_score_function and the aux loss's scores):
//  None     not costed apart: the all-to-all layers' own read and write of the routed rows
//           (the reference's and every model before this mechanism)
//  Unfused  PyTorch's permutation (index_select, torch.cat, scatter_add_ into zeros; Megatron-LM's
//           default, --moe-permute-fusion off)
//  Fused    Transformer Engine's fused permute, sort and unpermute kernels (--moe-permute-fusion):
//           the same bytes in fewer kernels, no zero fill
enum class MoePermutation : std::uint8_t { None, Unfused, Fused };
inline constexpr const char* kMoePermutationNames[] = {"none", "unfused", "fused"};

// How a MoE layer's dispatch and combine move the routed tokens over the expert-parallel group
// (Execution::moe_dispatcher; model/moe_dispatch.hpp):
//  AllToAll  a copy of a token for each of its routed experts, to the GPU holding it (Megatron-Core's
//            alltoall token dispatcher: permute by expert, then all-to-all; the reference's)
//  DeepEp    a copy of a token for each GPU holding one of its experts, and across NVLink domains
//            one for each domain, forwarded over NVLink there; the combine sums a GPU's experts'
//            outputs of a token before it sends them back (DeepEP's normal kernels and HybridEP,
//            Megatron-Core's flex token dispatcher: --moe-token-dispatcher-type flex)
enum class MoeDispatcher : std::uint8_t { AllToAll, DeepEp };
inline constexpr const char* kMoeDispatcherNames[] = {"alltoall", "deepep"};

struct Fp8Policy {
  Fp8Recipe recipe = Fp8Recipe::None;
  // The casts of the norms' outputs into the GEMMs after them and of the activation's output
  // into fc2 run inside those kernels (TE's LayerNormLinear and LayerNormMLP), as does the cast
  // of fc1's output gradient inside the activation's backward; delayed and block scaling only.
  bool fused_casts = false;
  // Weights cast to FP8 once per step and kept for the other micro-batches (TE's
  // is_first_microbatch); else cast for every micro-batch.
  bool weight_cache = false;
  // The weights kept and gathered in FP8 (1 byte per parameter): the default of
  // Execution::fp8_params, which the step reads (runtime_defaults).
  bool weight_gather = false;
  bool lm_head = false;       // the LM head's GEMM in FP8 too
  bool saved_inputs = true;   // the GEMMs' inputs kept for the backward in FP8 (1 byte)
  // A low-precision GEMM's input gathered over the tensor-parallel ranks (sequence parallelism)
  // in its own data type, quantized on the rows each rank holds before the gather, in the forward
  // and in the backward's re-gather (Transformer Engine's LayerNormLinear and column-parallel
  // Linear: gather_along_first_dim of the quantized norm output); else gathered in bf16.
  bool quantized_gather = false;
  bool operator==(const Fp8Policy&) const = default;
};

// How a training framework runs a layout, beyond the user's choices (Execution): the mechanisms
// its runtime file sets (runtimes/*.yaml, model/runtime.hpp: Runtime::mechanisms), the same for
// every layout a search or a tool costs under it, read by the block builders and the step's
// composition beside the layout. Each default is the reference's (reference_runtime(): all off).
struct Mechanisms {
  // Megatron-LM's scatter/gather of pipeline transfers (Narayanan et al. 2021, sec. 4.1): without
  // sequence parallelism each tensor-parallel rank sends 1/tp of a stage's output, which the next
  // stage all-gathers over NVLink (not timed: 1/tp of a transfer at NVLink speed).
  bool p2p_scatter_gather = false;
  // Megatron-LM's sequence parallelism keeps only the l/tp shard of a column projection's input
  // and all-gathers it again in the backward for the weight gradient (its
  // LinearWithGradAccumulationAndAsyncCommunication): one more all-gather per column projection
  // (qkv, fc1, the LM head) in the backward, timed as every tensor-parallel collective is. 1d
  // with sequence parallelism only.
  bool sp_backward_gather = false;
  // Megatron-LM's fused elementwise kernels instead of one kernel per layer: the MLP's bias +
  // GeLU (bias_gelu), each sub-layer's output bias + dropout + residual add (bias_dropout_add),
  // so the bias layers run inside them, the residual add is no glue of its own and the MLP has
  // no dropout on its hidden features (Megatron's MLP applies none). Norms (apex's fused
  // LayerNorm) and the unfused attention's softmax (scale, mask and softmax in one kernel) are
  // one kernel each already. 1d only.
  bool fused_elementwise = false;
  // The data-parallel gradient reduction after the whole backward (Megatron-LM's local DDP)
  // instead of each layer's overlapping the next layer's backward (PyTorch DDP's buckets, the
  // reference's).
  bool dp_after_backward = false;
  // How it runs a low-precision layout (fp8_recipe and the fp8_* keys; recipe: its FP8 recipe,
  // None: it runs bf16 only). The recipe a layout runs is layout_fp8's.
  Fp8Policy fp8;
  // How it splits the blocks over pipeline stages where the layout's first_stage_blocks and
  // last_stage_blocks give no counts (stage_partition: even or nanotron; model/plan.hpp:
  // stage_blocks).
  StagePartition stage_partition = StagePartition::Even;
  // The MoE layer's permutation and router kernels (moe_permutation; 1d only). None: not costed
  // apart (the reference's).
  MoePermutation moe_permutation = MoePermutation::None;
  bool operator==(const Mechanisms&) const = default;
};

// The FP8 policy a layout of precision p runs under the mechanisms: the runtime's, with the
// recipe of p (layout_recipe: mxfp8's and nvfp4's own, else the runtime's FP8 recipe).
inline Fp8Policy layout_fp8(const Mechanisms& mech, Precision p) {
  Fp8Policy fp8 = mech.fp8;
  fp8.recipe = layout_recipe(p, mech.fp8.recipe);
  return fp8;
}

struct Execution {
  Recompute recompute = Recompute::None;
  // 1d: Megatron sequence parallelism, as the reference's 1D block already is (row projections
  // reduce-scatter, norms all-gather, dropout and norm on l/tp). Off: plain tensor parallelism
  // (all-reduces, norm and dropout on the whole sequence). Other strategies: on only.
  bool sequence_parallel = true;
  // ZeRO stage over the data-parallel group: 1 shards the optimizer states (the reference's
  // default), 2 also the gradients, 3 also the weights (all-gathered in forward and backward);
  // 0 shards nothing.
  std::int64_t zero = 1;
  std::int64_t interleave = 1;  // virtual pipeline stages per GPU (interleaved 1F1B)
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  // Blocks on the first and on the last pipeline stage (Megatron-LM's
  // --decoder-first-pipeline-num-layers and --decoder-last-pipeline-num-layers); the stages not
  // given share the other blocks evenly. 0: not given, so both 0 is depth / pp blocks a stage
  // (model/plan.hpp: stage_blocks).
  std::int64_t first_stage_blocks = 0;
  std::int64_t last_stage_blocks = 0;
  ParamLayout params = ParamLayout::Reference;
  // Expert parallelism (MoE models): the experts split over ep GPUs of the data-parallel group
  // (Megatron-Core draws the expert-parallel group from the data-parallel ranks); 1 otherwise.
  std::int64_t ep = 1;
  // Expert tensor parallelism (Megatron-Core's --expert-tensor-parallel-size): each routed expert's
  // weights split over etp GPUs, the innermost of the tensor-parallel group (etp divides tp1),
  // and replicated over its tp1 / etp such groups. 0: the tensor-parallel degree (Megatron-Core's
  // default, expert_tensor_parallel_size = tp); expert_tensor_degree resolves it.
  std::int64_t etp = 0;
  // The linear layers' data type (searched: `--precision bf16,fp8`); how they run it is the
  // runtime's (Mechanisms::fp8, layout_fp8).
  Precision precision = Precision::Bf16;
  // FP8 parameters (Megatron-LM's --fp8-param-gather, NeMo's fp8_params, MLPerf's FP8_PARAMS):
  // the FP8 GEMMs' weights kept in FP8 (the value and its transposed copy) in place of the bf16
  // weights and their cached FP8 copies, and gathered by the distributed optimizer in FP8.
  // With --precision fp8 only; the runtime's fp8_weight_gather unless --fp8-params says.
  bool fp8_params = false;
  // Tensor-parallel communication overlapped with the GEMMs (Megatron-LM's --tp-comm-overlap,
  // Transformer Engine's userbuffers; NeMo's tp_comm_overlap): the runtime's tp_comm_overlap of
  // each tensor-parallel collective hidden. The runtime's default (tp_comm_overlap_default) unless
  // --tp-comm-overlap says; on only where the runtime gives a fraction.
  bool tp_comm_overlap = false;
  // How context-parallel attention exchanges keys and values (TensorSplit::cp > 1 only; searched:
  // `--cp-comm p2p,all-gather`).
  CpComm cp_comm = CpComm::P2P;
  // What the step keeps in host memory (searched: `--offload none,optimizer`).
  Offload offload = Offload::None;
  // With offload optimizer: the percentage of the optimizer's parameters whose states and step are
  // on the host, the rest updated on the GPU (Megatron-Core's --optimizer-offload-fraction x 100,
  // HybridDeviceOptimizer; searched: `--offload-percent 25,50,100`). 100: all of them.
  std::int64_t offload_percent = 100;
  // The rank order: where the data-parallel and pipeline groups sit across NVLink domains under
  // network tiers (`--rank-order`; the runtime's rank_order unless given, runtime_defaults).
  RankOrder rank_order = RankOrder::DataInnerPipelineOuter;
  // How the MoE layer's dispatch and combine move the routed tokens (searched: `--moe-dispatcher
  // alltoall,deepep`; the runtime's moe_dispatcher where not given).
  MoeDispatcher moe_dispatcher = MoeDispatcher::AllToAll;
  // A pipeline layout's uneven interleaved chunks (Megatron-Core's pipeline_model_parallel_layout,
  // estimate's --pipeline-layout): the blocks of every chunk but the first stage's first and the
  // last stage's last, which hold the rest of their stages' blocks. 0: the chunks as
  // interleaved_chunks cuts the stages (model/plan.hpp).
  std::int64_t layout_chunk_blocks = 0;
  bool operator==(const Execution&) const = default;
};

// The block of `model` in the reference's layer order: the MLP (fc1, fc1-bias, act1, dpr1, fc2,
// fc2-bias, dpr2, ln1), then self-attention (qkv, the attention core, vproj, vproj-bias, dpr_v,
// ln2), where the core is fusedla with flash attention, else logits, softmax, dpr_at, attend.
// The model's options change the list: no bias layers without biases, no dropout layers with
// dropout 0, a gated fc1 (e -> 2f) and act1 with SwiGLU, a narrower qkv with fewer key/value
// heads; norms take the model's norm kind in their sharding rules.
std::vector<BlockLayer> describe_block(const Transformer& model, AttentionMode attention);

// With MoE every `moe.every` > 1 blocks, the dense blocks between: the model's block without its
// experts (a dense MLP of the model's ffn_dim). Their layers shard with the MoE model as any
// dense block's.
std::vector<BlockLayer> describe_dense_block(const Transformer& model, AttentionMode attention);

// The layers a pipeline's end stages run besides their blocks (none without a vocabulary):
// the first stage's input embedding, the last stage's final norm, LM head and loss, and with
// multi-token prediction its layers around each depth's block (each layer's share the depths;
// the block itself is one more block of the last stage, compose_step). Fixed capacity, so the
// search composes a step without allocating.
struct StageLayers {
  std::array<BlockLayer, 10> layers{};
  int count = 0;
};
struct StageEnds {
  StageLayers first, last;
};
StageEnds describe_stage_ends(const Transformer& model, std::int64_t pp);

// Key/value heads on one GPU of a tp-way head split: kv / tp, or one replicated head group
// when tp > kv (Megatron-Core since 0.16; before, num_query_groups had to be a multiple of tp,
// modelscope/ms-swift#8219), and the per-GPU qkv width that implies, times tp.
std::int64_t kv_heads_per_gpu(const Transformer& model, std::int64_t tp);
std::int64_t qkv_columns(const Transformer& model, std::int64_t tp);

// The expert tensor-parallel degree of an execution whose tensor-parallel degree is tp
// (Execution::etp; 0 is tp).
inline std::int64_t expert_tensor_degree(const Execution& x, std::int64_t tp) { return x.etp > 0 ? x.etp : tp; }

enum class Strategy : std::uint8_t { OneD, TwoD, TwoDSeqp };

// Tensor-parallel layout of one block: tp1 x tp2 GPUs (1d: tp1 = tp, tp2 = 1), of which
// nv1 x nv2 sit in the NVLink domain; nb SUMMA blocks (2d only).
struct TensorSplit {
  std::int64_t tp1 = 1, tp2 = 1;
  std::int64_t nv1 = 1, nv2 = 1;
  std::int64_t nb = 1;
  // MoE: experts split over ep GPUs of the data-parallel group, nv_ep of them in a domain.
  std::int64_t ep = 1, nv_ep = 1;
  // Each routed expert split over etp GPUs of the tensor group, nv_etp of them in a domain; 0: over
  // the tensor group (tp1, nv1), Execution::etp's default.
  std::int64_t etp = 0, nv_etp = 0;
  // Context parallelism (1d only): each micro-batch's sequence split over cp GPUs, nv_cp of them
  // in an NVLink domain; the weights are replicated over them (docs/context_parallel.md).
  std::int64_t cp = 1, nv_cp = 1;
};
// The ranks of the cp group over which exchange k splits a tensor-parallel rank's heads
// (CpExchange::head_ranks; 1: none).
std::int64_t cp_head_ranks(const Transformer& model, const TensorSplit& t, CpComm k);
// Whether an exchange that splits the heads (cp_comm a2a) can split a tensor-parallel rank's query
// heads and key/value heads over `ranks` of the cp group (Transformer Engine requires both to be
// multiples of them).
inline bool cp_splits_heads(const Transformer& m, std::int64_t tp, std::int64_t ranks) {
  return (m.h / tp) % ranks == 0 && kv_heads_per_gpu(m, tp) % ranks == 0;
}

// NVLink domains one tensor- and context-parallel group spans: in the rank order (tensor
// innermost, then context, data, pipeline; Megatron-Core's tp-cp-ep-dp-pp), the distance in
// domains between consecutive domains of a data-parallel (or expert-parallel) group. The
// expert-parallel group's in the order tp-cp-ep-pp-dp too (RankOrder::PipelineInnerDataOuter: the
// expert ranks inside the pipeline, as the order names them).
inline std::int64_t tensor_domains(const TensorSplit& t) {
  return (t.tp1 / t.nv1) * (t.tp2 / t.nv2) * (t.cp / t.nv_cp);
}

// Per-GPU cost of one described layer for a micro-batch of b samples under `strategy`'s sharding
// rules: 1d (Megatron tensor parallelism over tp1), 2d (SUMMA GEMMs on a tp1 x tp2 grid with
// context-parallel attention; execute_2d), 2d-seqp (1d weights over tp1, sequence over tp2;
// execute_seqp). Throws ConfigError for a layer a strategy cannot shard.
LayerCost shard_layer(const System& s, Strategy strategy, const BlockLayer& layer, std::int64_t b,
                      const Transformer& model, const TensorSplit& split, const AttentionMode& attention,
                      const Execution& exec = {}, const Mechanisms& mech = {});

// Saved activations (GB) of one block and micro-batch on one GPU, split as the block's modules,
// as a runtime accounts them (model/step.hpp: runtime_block_activations).
struct BlockActivations {
  double mlp = 0, sa = 0;
};

// Weights and saved activations (GB) of the block's MLP and attention for one micro-batch on one
// GPU: the same sums as the timed modules' (sum_module), without timing anything. They do not
// depend on the NVLink placement, so the search checks memory once for all placements.
struct BlockMemory {
  double mlp_weights = 0, mlp_activations = 0, sa_weights = 0, sa_activations = 0;
  // The routed experts' weights, part of mlp_weights: replicated over the expert-data-parallel
  // group (dp / ep GPUs), not the data-parallel group.
  double expert_weights = 0;
  // ZeRO-3 gathers one block's weights whole at a time: with blocks of two kinds (moe.every > 1)
  // the larger one's; 0 when every block is alike (then weights()).
  double whole_block_weights = 0;
  // With dense first blocks (moe.first_dense > 0): the MoE block's fields above and the dense
  // block's MLP here (cost_block_memory; least_stage_memory reads them).
  std::int64_t first_dense = 0;
  double dense_mlp_weights = 0, dense_mlp_activations = 0;
  double weights() const { return mlp_weights + sa_weights; }
  double activations() const { return mlp_activations + sa_activations; }
};
BlockMemory block_memory(const System& s, Strategy strategy, const std::vector<BlockLayer>& block, std::int64_t b,
                         const Transformer& model, const TensorSplit& split, const AttentionMode& attention,
                         const Execution& exec = {}, const Mechanisms& mech = {});

// What a built block gives beside its modules (GB, one GPU, one micro-batch): the activations a
// pipeline stage sends to the next (the stage_input layer's buffer) and the routed experts'
// weights (part of the MLP's).
struct BuiltBlock {
  double p2p_volume_gb = 0;
  double expert_weights_gb = 0;
};

// The block's MLP and attention modules for one micro-batch on one GPU, timed.
BuiltBlock build_block(const System& s, Strategy strategy, const std::vector<BlockLayer>& block, std::int64_t b,
                       const Transformer& model, const TensorSplit& split, const AttentionMode& attention,
                       Module& mlp, Module& sa, const Execution& exec = {}, const Mechanisms& mech = {});

// One end stage's extra layers for one micro-batch on one GPU, timed.
void build_stage(const System& s, Strategy strategy, const StageLayers& layers, std::int64_t b,
                 const Transformer& model, const TensorSplit& split, const AttentionMode& attention, Module& out,
                 const Execution& exec = {}, const Mechanisms& mech = {});

}  // namespace perfsweep
