#pragma once
// One layer of a transformer block, forward and backward, on one GPU: the counts of the reference's
// layers.py classes as plain data, and the one timing function that turns them into seconds.
// Units: flops in TFLOP, memory in GB, time in s (the reference's units).
#include <array>
#include <cstdint>

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
enum class CpComm : std::uint8_t { P2P, AllGather };
inline constexpr const char* kCpCommNames[] = {"p2p", "all-gather"};

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
  // The FP8 quantization kernels this layer's pass runs beside its GEMM (the input's cast and
  // transpose in the forward, the output gradient's in the backward, and the amax passes of
  // current scaling): GB moved and kernels launched, timed as the calibration's cast kernel.
  std::array<double, 2> cast_gb{};
  std::array<std::uint8_t, 2> cast_kernels{};
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

// Shape and parallel split of a layer. Degrees follow the reference's `parallelism` dicts and
// fast-domain sizes its `topology` dicts: dim1/t1 and dim2/t2 as passed by the modules.
struct Split2 {
  std::int64_t dim1 = 1, dim2 = 1;  // parallel degrees
  std::int64_t t1 = 1, t2 = 1;      // of which in the NVLink domain
};

// Layer constructors (layers.py). b = micro-batch, l = sequence, e/f = in/out features,
// q = head dim, h = heads. nb = SUMMA block count.
LayerCost linear(const System& s, const char* name, std::int64_t b, std::int64_t l, std::int64_t e, std::int64_t f,
                 Split2 p);
LayerCost linear_seqp(const System& s, const char* name, std::int64_t b, std::int64_t l, std::int64_t e,
                      std::int64_t f, Split2 p, std::int64_t dimseq, std::int64_t tseq);
LayerCost linear_summa(const System& s, const char* name, std::int64_t b, std::int64_t l, std::int64_t e,
                       std::int64_t f, Split2 p, std::int64_t nb);
LayerCost bias(const System& s, const char* name, std::int64_t b, std::int64_t l, std::int64_t f, Split2 p);
LayerCost activation(const System& s, const char* name, std::int64_t m);
// SwiGLU's gate: silu(g) x u on m output elements, reading the 2m of the gated up-projection.
LayerCost gated_activation(const System& s, const char* name, std::int64_t m);
LayerCost dropout(const System& s, const char* name, std::int64_t m, bool recompute = false, bool remat = false);
// Megatron-LM's fused elementwise kernels (Execution::fused_elementwise):
// bias + GeLU on m = rows x f elements, one kernel: reads the projection's output and the f
// biases, writes m; the backward reads dy and the saved input, writes dx, and reduces dx over the
// rows for the bias gradient (one more read of m).
LayerCost bias_gelu(const System& s, const char* name, std::int64_t rows, std::int64_t f);
// bias + dropout + residual add on m = rows x e elements, one kernel: reads the projection's
// output, the e biases and the residual, writes the sum and the dropout mask; the backward reads
// dy and the mask, writes dx, and reduces dx over the rows for the bias gradient (the residual's
// gradient is dy itself). `has_bias`: without biases, dropout + residual add.
LayerCost bias_dropout_add(const System& s, const char* name, std::int64_t rows, std::int64_t e, bool has_bias);
LayerCost softmax(const System& s, const char* name, std::int64_t b, std::int64_t h, std::int64_t l1, std::int64_t l2,
                  std::int64_t m, bool recompute = false, bool remat = false);
// A norm's kind and whether it has a shift (LayerNorm's beta; RMSNorm never has one).
struct NormOptions {
  NormKind kind = NormKind::LayerNorm;
  bool shift = true;
};
LayerCost layer_norm(const System& s, const char* name, std::int64_t b, std::int64_t l, std::int64_t e, std::int64_t m,
                     std::int64_t t, NormOptions norm = {});
LayerCost layer_norm_2d(const System& s, const char* name, std::int64_t b, std::int64_t l, std::int64_t e, Split2 p,
                        NormOptions norm = {});
LayerCost logits(const System& s, const char* name, std::int64_t b, std::int64_t l, std::int64_t q, std::int64_t h,
                 std::int64_t m, bool recompute = false);
LayerCost attend(const System& s, const char* name, std::int64_t b, std::int64_t l, std::int64_t q, std::int64_t h,
                 std::int64_t m, bool remat = false);
LayerCost logits_seqp(const System& s, const char* name, std::int64_t b, std::int64_t l, std::int64_t q,
                      std::int64_t h, Split2 p);
LayerCost attend_seqp(const System& s, const char* name, std::int64_t b, std::int64_t l, std::int64_t q,
                      std::int64_t h, Split2 p);
// What flash attention does beyond the reference's kernel: key/value heads per GPU (GQA, MQA;
// 0 = as many as query heads), causal masking (the masked half of every score-matrix term
// skipped, forward and backward), and whether dropout runs on the probabilities.
struct AttentionCoreOptions {
  std::int64_t kv_local = 0;
  bool causal = false;
  bool dropout = true;
};
LayerCost fused_la(const System& s, const char* name, std::int64_t b, std::int64_t l, std::int64_t q, std::int64_t h,
                   std::int64_t m, AttentionCoreOptions options = {});
LayerCost fused_la_seqp(const System& s, const char* name, std::int64_t b, std::int64_t l, std::int64_t q,
                        std::int64_t h, Split2 p, AttentionCoreOptions options = {});
// 1d context-parallel flash attention (docs/context_parallel.md): heads over tp, the l-token
// sequence over cp GPUs (nv_cp of them in an NVLink domain) in Megatron-Core's load-balanced
// causal split (each rank two chunks of l / (2 cp), so 1/cp of the causal work each). Counts are
// fused_la_seqp's (the local queries against every key). Keys and values move as `comm` says:
// P2P, cp - 1 ring steps of the local K and V (b kv_local (l / cp) q, two tensors) forward, of
// K, V and their gradients (twice that) backward, overlapped (Overlap::ContextRing);
// AllGather, fused_la_seqp's all-gather forward, all-gather and reduce-scatter backward.
// `domain_stride`: NVLink domains between consecutive domains of the cp group (those of a tensor
// group; network tiers): the all-gather's group sits that far apart, and a ring step waits for
// its slowest link, the one spanning the group's domains.
LayerCost fused_la_cp(const System& s, const char* name, std::int64_t b, std::int64_t l, std::int64_t q,
                      std::int64_t h, std::int64_t tp, std::int64_t cp, std::int64_t nv_cp, CpComm comm,
                      std::int64_t domain_stride, AttentionCoreOptions options = {});

// The vocabulary's layers (Megatron-LM megatron/core/tensor_parallel/layers.py
// VocabParallelEmbedding and cross_entropy.py _VocabParallelCrossEntropy): `tokens` tokens on
// this GPU, the vocabulary split over `vocab_split` GPUs (v_local = ceil(V / vocab_split) rows
// or columns each, Megatron's padded vocabulary), `fast` of them in the NVLink domain.
//
// Input embedding: a masked lookup in the local rows, then the partial outputs reduce-scattered
// over the vocabulary group into the sequence-split residual stream (Megatron with sequence
// parallelism: reduce_scatter_to_sequence_parallel_region); the backward all-gathers the output
// gradient and scatter-adds it into the local rows. `position_rows` rows of a learned position
// table (replicated) are added to every token.
LayerCost embedding(const System& s, const char* name, std::int64_t tokens, std::int64_t e, std::int64_t v_local,
                    std::int64_t vocab_split, std::int64_t fast, std::int64_t position_rows);
// Softmax cross-entropy on the vocabulary-split logits: the logits are read in `logits_dtype`
// and their exponentials kept for the backward (the activation buffer: tokens x v_local
// elements of that dtype, the peak of the loss); the maximum, the target's logit and the sum of
// exponentials of every token are all-reduced (fp32) over the vocabulary group.
// Mixture-of-experts token exchange (dispatch to the experts, combine back): an all-to-all of
// `elements` elements per GPU over `group` GPUs (`fast` in the NVLink domain), forward and backward
// (the gradients return the same way); the permutation reads and writes them once.
LayerCost all_to_all(const System& s, const char* name, std::int64_t elements, std::int64_t group, std::int64_t fast,
                     std::int64_t stride = 1);
// `experts` identical layers run back to back (the experts of one GPU, a grouped GEMM): every
// count times `experts`.
LayerCost repeated(LayerCost cost, std::int64_t experts);

LayerCost cross_entropy(const System& s, const char* name, std::int64_t tokens, std::int64_t v_local,
                        std::int64_t vocab_split, std::int64_t fast, LogitsDtype logits_dtype);

}  // namespace perfsweep
