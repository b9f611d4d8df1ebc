#pragma once
// One layer of a transformer block, forward and backward, on one GPU: the counts of the reference's
// layers.py classes as plain data, and the one timing function that turns them into seconds.
// Units: flops in TFLOP, memory in GB, time in s (the reference's units).
#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <numeric>

#include "model/collective.hpp"
#include "model/kernel_calibration.hpp"
#include "model/system.hpp"
#include "model/transformer.hpp"

namespace perfsweep {

// How context-parallel attention (1d, cp > 1) exchanges keys and values (docs/context_parallel.md):
//  P2P        ring attention (Megatron-Core's default cp_comm_type "p2p", Transformer Engine's
//             AttnFuncWithCPAndKVP2P): cp - 1 ring steps each passing one rank's K and V on,
//             overlapped with the attention of the block already received
//  AllGather  Llama 3's (Dubey et al. 2024, sec. 3.3.2; TE's AttnFuncWithCPAndKVAllGather): K and V
//             all-gathered before the attention, their gradients reduce-scattered, not overlapped
//  AllToAll   DeepSpeed-Ulysses's (Jacobs et al. 2023; Megatron-Core's cp_comm_type "a2a", TE's
//             AttnFuncWithCPAndQKVOA2A): Q, K and V all-to-all'ed from the rank's l / cp tokens of
//             every local head to all l tokens of 1/cp of the heads, the output back; not overlapped
//  AllToAllP2P  Megatron-Core's hierarchical "a2a+p2p" (TE's AttnFuncWithCPAndQKVOA2A inside
//             AttnFuncWithCPAndKVP2P): the a2a exchange over the a GPUs of the cp group's first
//             level, the ring over the cp / a groups of them; a is the largest count dividing the
//             cp group's NVLink share and the rank's heads (its all-to-alls stay in one domain)
enum class CpComm : std::uint8_t { P2P, AllGather, AllToAll, AllToAllP2P };
inline constexpr const char* kCpCommNames[] = {"p2p", "all-gather", "a2a", "a2a+p2p"};

// One collective issued by a layer: volume, kind, group size, how many of the group's GPUs
// share an NVLink domain, and how many domains apart the group's domains sit (network tiers).
struct Collective {
  double volume_gb = 0;
  CommType type = CommType::None;
  std::int32_t stride = 1;  // beside the type, so that the struct stays 32 bytes
  std::int64_t group = 0;
  std::int64_t fast_domain = 0;
};
static_assert(sizeof(Collective) == 32);

// The collectives of one pass. Most layers issue one (printed as a scalar); SUMMA and
// context-parallel layers issue several (printed as a list, as the reference does).
struct CommSet {
  std::array<Collective, 4> items{};
  std::uint8_t count = 1;
  bool is_list = false;
  // The first n collectives, and those after the first n.
  CommSet first(std::uint8_t n) const {
    CommSet s = *this;
    s.count = std::min(n, count);
    return s;
  }
  CommSet after(std::uint8_t n) const {
    CommSet s;
    s.count = 0;
    s.is_list = is_list;
    for (std::uint8_t i = n; i < count; ++i) s.items[s.count++] = items[i];
    return s;
  }
};

// How a layer's communication meets its computation.
enum class Overlap : std::uint8_t {
  Serial,  // t = max(compute, memory) + sum of collective times
  Summa,   // nb blocks: one block's collectives exposed, the rest hidden behind compute
  // Ring attention (context parallelism's p2p exchange): the pass's compute in ring_steps equal
  // steps, each of the ring_steps - 1 transfers (the pass's one P2P collective, one step's
  // volume) hidden behind one step's compute as far as it lasts, plus the first step's latency
  ContextRing,
};

enum class Glue : std::uint8_t { Calibrated, ResidualFork, None };

// FP8 quantization kernels of one pass, by the calibration's stream kind that times them
// (kQuantKinds: the amax reduction, and the cast writing the FP8 copies): GB moved and kernels
// launched of each. Without those kinds in the calibration the totals are timed as its cast
// kernel (model/precision.cpp: quantization_seconds).
inline constexpr std::array<kernels::StreamKind, 2> kQuantKinds{kernels::StreamKind::Amax, kernels::StreamKind::Quantize};
struct QuantWork {
  std::array<double, 2> gb{};
  std::array<double, 2> kernels{};
  double total_gb() const { return gb[0] + gb[1]; }
  double total_kernels() const { return kernels[0] + kernels[1]; }
};

// Memory-bound kernels a pass runs beside its own kernel (the MoE layer's permutation and router
// kernels, Mechanisms::moe_permutation): GB moved through HBM and kernels launched, timed after the
// pass's kernel, serially, as a row gather (model/layer.cpp: routing_seconds).
struct StreamWork {
  double gb = 0;
  double kernels = 0;
};

struct LayerCost {
  const char* name = "";
  // the kernel it runs: its roofline class (model/roofline.hpp: kernel_class) and, with a kernel
  // calibration, its calibrated model (model/kernel_calibration.hpp)
  KernelOp op = KernelOp::Gemm;
  KernelShape shape;                       // GEMM and attention operands, for the calibration
  double flops_fwd = 0;          // TFLOP
  double mem_fwd = 0;            // GB moved through HBM
  double activation_buffer = 0;  // GB kept for the backward pass (0 if rematerialized)
  double weights_mem = 0;        // GB
  double weights_grad_mem = 0;   // GB
  double flops_bwd = 0;
  double mem_bwd = 0;
  CommSet comm_fwd;
  CommSet comm_bwd;
  Overlap overlap = Overlap::Serial;
  std::int64_t summa_nb = 1;     // SUMMA blocks (Overlap::Summa only)
  std::int64_t ring_steps = 1;   // ring steps, the context-parallel degree (Overlap::ContextRing only)
  bool recompute = false;        // forward is run again in the backward pass
  // Its work runs inside a neighbouring layer's fused kernel, which counts its bytes: no time of
  // its own (weights and activations still count).
  bool fused_away = false;
  // The residual-stream kernels a norm pass carries with a kernel calibration: the calibration's
  // residual glue, or with the residual add inside a fused bias-dropout-add kernel only the
  // backward's gradient sum at the residual fork (model/roofline.hpp: fused_glue_seconds), or none.
  Glue glue = Glue::Calibrated;
  // The GEMM's data type: Fp8 runs at the system's FP8 peak with the calibration's FP8 GEMM
  // model (model/precision.hpp: to_fp8).
  Precision precision = Precision::Bf16;
  // The FP8 quantization kernels each pass runs beside its GEMM (the input's cast and transpose
  // in the forward, the output gradient's in the backward, and the amax passes of current
  // scaling), by the kernel kind that times them (model/precision.hpp).
  std::array<QuantWork, 2> quant{};
  // The MoE permutation's and router's kernels of each pass (model/block.cpp: moe_routing_work);
  // their time is memory time, part of the pass's `mem` and `t`.
  std::array<StreamWork, 2> routing{};
};

// Time of one pass (seconds) and its parts, as the reference reports them.
struct PassTime {
  double t = 0;          // total
  double comm = 0;       // exposed communication
  double comp = 0;       // compute (roofline flops term)
  double mem = 0;        // memory time exposed beyond compute
  double intensity = 0;  // compute time / memory time
  double cast = 0;       // FP8 quantization kernels (part of t)
  double hidden = 0;     // communication hidden behind compute (Overlap::ContextRing; not in t)
};

struct LayerResult {
  LayerCost cost;
  PassTime fwd;
  PassTime bwd;
  double t = 0;  // fwd.t + bwd.t
  // Of each pass's collectives, those timed from the system's calibration (0 without one).
  std::uint8_t calibrated_fwd = 0;
  std::uint8_t calibrated_bwd = 0;
};

LayerResult time_layer(const System& system, const LayerCost& cost);

// A group of GPUs one collective runs over: how many, and how many of them share an NVLink domain.
struct Group {
  std::int64_t gpus = 1;
  std::int64_t nvlink = 1;
};

// Layer constructors (layers.py), each for one kernel kind on the local shapes one GPU computes
// (block.cpp derives them from the tensor split), with the collectives of the split's groups.

// GEMM: the local product (rows x k)(k x n) = (rows x n), and the full widths of its input
// (k_full) and output (n_full), which the collectives move.
struct GemmShape {
  std::int64_t rows = 0, k = 0, n = 0;
  std::int64_t k_full = 0, n_full = 0;
};
// How a GEMM's split communicates.
// 1D weight split (summa_nb = 0; the reference's Linear and LinearSeqp, Megatron's row and column
// projections): k split over `k_split`, the partial outputs (rows x n_full) reduce-scattered over
// it forward; or n split over `n_split`, the input gradient's partials (rows x k_full)
// reduce-scattered over it backward. Never both. The rows may be split too (the sequence of
// 2d-seqp), which moves nothing.
// SUMMA (summa_nb > 0; the reference's LinearSumma): the rows and W's k rows split over `k_split`
// (the sequence split), X's k columns and the n columns over `n_split` (the feature split); the
// local product runs over the whole k (k = k_full) in nb rounds, each broadcasting a block of X
// across n_split and of W across k_split (Overlap::Summa). X keeps rows x k / n_split.gpus, W
// k / k_split.gpus x n.
struct GemmComm {
  Group k_split;
  Group n_split;
  std::int64_t summa_nb = 0;
};
LayerCost gemm(const System& s, const char* name, GemmShape local, GemmComm comm);

// Bias add on a (rows x width) block.
LayerCost bias(const System& s, const char* name, std::int64_t rows, std::int64_t width);
LayerCost activation(const System& s, const char* name, std::int64_t m);
// SwiGLU's gate: silu(g) x u on m output elements, reading the 2m of the gated up-projection.
LayerCost gated_activation(const System& s, const char* name, std::int64_t m);
LayerCost dropout(const System& s, const char* name, std::int64_t m, bool recompute = false, bool remat = false);
// Megatron-LM's fused elementwise kernels (Mechanisms::fused_elementwise):
// bias + GeLU on m = rows x f elements, one kernel: reads the projection's output and the f
// biases, writes m; the backward reads dy and the saved input, writes dx, and reduces dx over the
// rows for the bias gradient (one more read of m).
LayerCost bias_gelu(const System& s, const char* name, std::int64_t rows, std::int64_t f);
// bias + dropout + residual add on m = rows x e elements, one kernel: reads the projection's
// output, the e biases and the residual, writes the sum and the dropout mask; the backward reads
// dy and the mask, writes dx, and reduces dx over the rows for the bias gradient (the residual's
// gradient is dy itself). `has_bias`: without biases, dropout + residual add.
LayerCost bias_dropout_add(const System& s, const char* name, std::int64_t rows, std::int64_t e, bool has_bias);
// Softmax over `rows` local score rows (b x heads x queries) of `cols` keys each.
LayerCost softmax(const System& s, const char* name, std::int64_t rows, std::int64_t cols, bool recompute = false,
                  bool remat = false);
// A norm's kind and whether it has a shift (LayerNorm's beta; RMSNorm never has one).
struct NormOptions {
  NormKind kind = NormKind::LayerNorm;
  bool shift = true;
};
// A norm (LayerNorm, RMSNorm) on its local block: `rows` rows of `width` features, which its
// counts (flops, memory, weights) are taken on; `full_rows` the rows before the row split and
// `full_width` the features before the feature split, which the collectives move.
struct NormShape {
  std::int64_t rows = 0, width = 0;
  std::int64_t full_rows = 0, full_width = 0;
};
// Which collective a norm's split issues, one per pass (a zero-volume one on a single GPU):
//  GatherRows        sequence parallelism (1d, 2d-seqp; Megatron's): the rows split over `rows`,
//                    every row whole on its GPU; the output all-gathered forward for the next
//                    GEMM (full_rows x width), its gradient reduce-scattered backward.
//  ReduceStatistics  a feature split (2d): the features split over `features`, the rows over
//                    `rows` without a gather; each row's statistics (stats x rows) all-reduced
//                    over `features` forward; backward the weight gradients of the GPU's features
//                    (weights x full_width / features.gpus) and the statistics' gradients of its
//                    rows (stats x full_rows / rows.gpus), all-reduced over `features` (the
//                    reference's LayerNorm2D volume, integer division after each product).
enum class NormPlan : std::uint8_t { GatherRows, ReduceStatistics };
struct NormComm {
  NormPlan plan = NormPlan::GatherRows;
  Group rows;
  Group features;
};
// A norm on its local block, with the collectives `comm` plans. The counts take local.width, the
// calibrated kernel's shape the features the GPU holds (full_width / features.gpus); the two
// agree except in 2d, where block.cpp passes the reference's count width (l / tp1 where e / tp1
// is meant: its LayerNorm2D's, kept since its published numbers depend on it).
LayerCost layer_norm(const System& s, const char* name, NormShape local, NormComm comm, NormOptions norm = {});

// Attention on one GPU: b sequences, `heads` query heads and `kv_heads` key/value heads (GQA,
// MQA; flash attention only: unfused attention expands K and V to every query head) of
// dimension `head_dim`, `queries` local query tokens against `keys` key tokens; values of
// `value_dim` features per head where it differs from head_dim (MLA; flash attention only; 0:
// head_dim).
struct AttentionShape {
  std::int64_t b = 1, heads = 1, kv_heads = 1, head_dim = 1;
  std::int64_t queries = 0, keys = 0;
  std::int64_t value_dim = 0;
  std::int64_t values() const { return value_dim > 0 ? value_dim : head_dim; }
};
// Where the keys and values an attention reads come from:
//  Local     this GPU's own (keys = queries; the reference's LogitsLayer, AttendLayer, FusedLA)
//  Gathered  all-gathered over the sequence split `seq` forward, their gradients reduce-scattered
//            over it backward (the reference's *Seqp layers, 2d and 2d-seqp; Llama 3's all-gather
//            context parallelism)
//  Ring      ring attention (context parallelism's p2p exchange, flash attention only):
//            seq.gpus - 1 ring steps each passing one rank's K and V (queries tokens) on,
//            overlapped with the attention of the block already received (Overlap::ContextRing)
//  AllToAll  the heads split over `seq` (context parallelism's a2a exchange, flash attention
//            only): the shape is the rank's after the exchange (heads / seq.gpus, every token, so
//            keys = queries); forward one all-to-all of Q, K and V and one of the output, backward
//            one of the output's gradient and one of dQ, dK and dV, each moving the rank's
//            tensors (Transformer Engine batches Q, K and V in one exchange), not overlapped
// `stride`: NVLink domains between consecutive domains of the sequence group (network tiers).
enum class KvSource : std::uint8_t { Local, Gathered, Ring, AllToAll };

// One context-parallel exchange (CpComm) in one place: how the attention core receives keys and
// values, over how many ranks of the cp group it splits a tensor-parallel rank's heads (the
// rest of the group runs the kv_source exchange on the sequence; the layout rule cp_splits and
// the search's values require the heads to split), and its names in the frameworks' launch
// arguments.
struct CpExchange {
  CpComm id;
  const char* name;    // kCpCommNames'
  KvSource kv_source;  // the attention core's exchange
  // The ranks of the cp group (cp of them, nv_cp in one NVLink domain) over which a rank's
  // `heads` query heads and `kv_heads` key/value heads are split (Ulysses); 1: none.
  std::int64_t (*head_ranks)(std::int64_t cp, std::int64_t nv_cp, std::int64_t heads, std::int64_t kv_heads);
  const char* megatron;    // Megatron-Core's cp_comm_type (--cp-comm-type, NeMo's model.config.cp_comm_type)
  const char* torchtitan;  // torchtitan's context_parallel_rotate_method; null: no equivalent
  // Megatron-Core's --hierarchical-context-parallel-sizes: [head ranks, cp / head ranks]
  bool hierarchical = false;
};
constexpr std::int64_t no_head_split(std::int64_t, std::int64_t, std::int64_t, std::int64_t) { return 1; }
constexpr std::int64_t whole_group(std::int64_t cp, std::int64_t, std::int64_t, std::int64_t) { return cp; }
constexpr std::int64_t domain_heads(std::int64_t, std::int64_t nv_cp, std::int64_t heads, std::int64_t kv_heads) {
  return std::gcd(std::gcd(nv_cp, heads), kv_heads);
}
inline constexpr CpExchange kCpExchanges[] = {
    {CpComm::P2P, kCpCommNames[0], KvSource::Ring, no_head_split, "p2p", "alltoall"},
    {CpComm::AllGather, kCpCommNames[1], KvSource::Gathered, no_head_split, "allgather", "allgather"},
    {CpComm::AllToAll, kCpCommNames[2], KvSource::AllToAll, whole_group, "a2a", nullptr},
    {CpComm::AllToAllP2P, kCpCommNames[3], KvSource::Ring, domain_heads, "a2a+p2p", nullptr, true},
};
static_assert(std::size(kCpExchanges) == std::size(kCpCommNames), "a descriptor for every CpComm");
inline const CpExchange& cp_exchange(CpComm k) { return kCpExchanges[static_cast<std::size_t>(k)]; }
struct KvExchange {
  KvSource source = KvSource::Local;
  Group seq;
  std::int64_t stride = 1;
  // The ranks of `seq` the heads were split over before the attention (CpExchange::head_ranks):
  // seq.gpus under AllToAll, 1 without a split.
  std::int64_t head_ranks = 1;
};
// What flash attention does beyond the reference's kernel: causal masking (the masked half of
// every score-matrix term skipped, forward and backward), whether dropout runs on the
// probabilities, a sliding window of `window` keys per query (causal: the score work falls to
// window_share_of_causal of causal attention's, model/kernel_calibration.hpp; 0: none), and
// learned attention sinks (a logit per head in the softmax's denominator: weights of one element
// per local head).
struct AttentionCoreOptions {
  bool causal = false;
  bool dropout = true;
  std::int64_t window = 0;
  bool sinks = false;
};
// Flash attention (the reference's FusedLA and FusedLASeqp; docs/context_parallel.md for Ring).
LayerCost attention_core(const System& s, const char* name, AttentionShape local, KvExchange kv,
                         AttentionCoreOptions options = {});
// Unfused attention's scores Q K^T and values P V (LogitsLayer, AttendLayer and their Seqp forms).
LayerCost attention_scores(const System& s, const char* name, AttentionShape local, KvExchange kv,
                           bool recompute = false);
LayerCost attention_values(const System& s, const char* name, AttentionShape local, KvExchange kv,
                           bool remat = false);

// The vocabulary's layers (Megatron-LM megatron/core/tensor_parallel/layers.py
// VocabParallelEmbedding and cross_entropy.py _VocabParallelCrossEntropy): `tokens` tokens on
// this GPU, the vocabulary split over the group `vocab_split` (v_local = ceil(V / gpus) rows or
// columns each, Megatron's padded vocabulary).
//
// Input embedding: a masked lookup in the local rows, then the partial outputs reduce-scattered
// over the vocabulary group into the sequence-split residual stream (Megatron with sequence
// parallelism: reduce_scatter_to_sequence_parallel_region); the backward all-gathers the output
// gradient and scatter-adds it into the local rows. `position_rows` rows of a learned position
// table (replicated) are added to every token.
LayerCost embedding(const System& s, const char* name, std::int64_t tokens, std::int64_t e, std::int64_t v_local,
                    Group vocab_split, std::int64_t position_rows);
// Softmax cross-entropy on the vocabulary-split logits: the logits are read in `logits_dtype`
// and their exponentials kept for the backward (the activation buffer: tokens x v_local
// elements of that dtype, the peak of the loss); the maximum, the target's logit and the sum of
// exponentials of every token are all-reduced (fp32) over the vocabulary group.
LayerCost cross_entropy(const System& s, const char* name, std::int64_t tokens, std::int64_t v_local,
                        Group vocab_split, LogitsDtype logits_dtype);

// Mixture-of-experts token exchange (dispatch to the experts, combine back): an all-to-all of
// `elements` elements per GPU over `group` GPUs (`fast` in the NVLink domain), forward and backward
// (the gradients return the same way); the permutation reads and writes them once.
LayerCost all_to_all(const System& s, const char* name, std::int64_t elements, std::int64_t group, std::int64_t fast,
                     std::int64_t stride = 1);
// `experts` identical layers run back to back (the experts' elementwise kernels of one GPU):
// every count times `experts`.
LayerCost repeated(LayerCost cost, std::int64_t experts);
// The GEMM of `experts` experts of one GPU as one grouped GEMM (Megatron-Core's
// --moe-grouped-gemm): the counts of `repeated`, timed by a kernel calibration as one launch per
// GEMM pass with each expert's tokens padded to whole tiles and every expert's tiles in one set
// of waves (model/kernel_calibration.hpp: grouped_gemm_seconds). The roofline without a
// calibration has no tiles: it times the experts' summed flops, one launch per pass, as before.
LayerCost grouped_experts(LayerCost gemm, std::int64_t experts);

}  // namespace perfsweep
