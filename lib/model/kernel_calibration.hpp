#pragma once
// Kernel times fitted to one GPU kind's layer measurements (`validate fit-kernels`), named by a
// system file's `kernels:` key. Without it the roofline is the reference's (model/roofline.hpp).
// Every parameter is physical and bounded: efficiencies and bandwidth fractions in (0, 1], so a
// calibrated kernel is never faster than the peak FLOP/s or HBM bandwidth of the system it runs
// on (the system's peaks are not part of the calibration: an H200 predicted from an H100
// calibration keeps the H100's efficiencies at the H200's bandwidth).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>

#include "model/data_type.hpp"

namespace perfsweep {

// What a layer pass executes: the one label of a layer's kernel. Its KernelClass (model/roofline.hpp:
// kernel_class) picks the roofline's efficiencies; a kernel calibration times it finer: the shape-dependent GEMM and flash
// attention models and, for the memory-bound kernels, one achieved bandwidth curve each. The
// kinds after Softmax are the kernels of a training step beyond the reference's block (measured
// in validation/gpu/h100_kernels.json): RMSNorm, SwiGLU's gate, the embedding lookup and its
// table gradient, the loss on fp32 logits, the optimizer step and the bf16 weight casts.
enum class KernelOp : std::uint8_t {
  Gemm,
  Attention,
  Bias,
  Activation,
  Dropout,
  Norm,
  Softmax,
  Collective,  // all-to-all, data-parallel and pipeline transfers: the network model times them
  RmsNorm,
  GatedActivation,
  Embedding,
  CrossEntropy,
  Optimizer,
  Cast,
};


// Operand shape of a GEMM-like pass: `batch` independent products of (rows x depth)(depth x cols).
// Flash attention: batch = micro-batch x local heads, rows = query positions, cols = key
// positions, depth = head dimension (of the queries and keys).
struct KernelShape {
  std::int64_t batch = 1;
  std::int64_t rows = 0;
  std::int64_t depth = 0;
  std::int64_t cols = 0;
  bool causal = false;  // flash attention with a causal mask
  // A grouped GEMM (MoE experts, grouped_gemm_seconds): `batch` experts of `rows` tokens each in
  // one kernel, each expert's tokens padded to whole output tiles.
  bool grouped = false;
  // Flash attention beyond the reference's: a sliding window of `window` keys per query (causal;
  // 0: none), and the values' head dimension where it differs from the keys' (MLA; 0: depth).
  std::int64_t window = 0;
  std::int64_t value_depth = 0;
};

// The share of a causal score matrix's work that a sliding window of `window` keys leaves, for a
// sequence of `keys` tokens: a query at position i sees min(i + 1, window) keys, which in the
// continuous form that gives causal attention its 1/2 of the full matrix is
// (1 - (1 - w / l)^2) / 2 of it, and so 1 - (1 - w / l)^2 of causal attention's work (at 32K
// tokens a 4K window: 0.234). 1 when the window covers the sequence.
inline double window_share_of_causal(std::int64_t keys, std::int64_t window) {
  if (window <= 0 || window >= keys) return 1.0;
  const double open = 1.0 - static_cast<double>(window) / static_cast<double>(keys);
  return 1.0 - open * open;
}

namespace kernels {

inline constexpr std::size_t kFwd = 0, kBwd = 1;
inline constexpr std::array<const char*, 2> kPassNames{"fwd", "bwd"};

// The three GEMMs of a linear layer: the forward's product (fprop) and the backward's two,
// dX = dY W^T (dgrad: rows x depth, reduced over cols) and dW = X^T dY (wgrad: depth x cols,
// reduced over rows). FP8 training runs them differently (Transformer Engine's HYBRID recipe:
// fprop e4m3 x e4m3 with fast accumulation, dgrad and wgrad e5m2 x e4m3 with split
// accumulation), so each has its own parameters.
enum class GemmPass : std::uint8_t { Fprop, Dgrad, Wgrad };
inline constexpr std::size_t kGemmPassCount = 3;
inline constexpr std::array<const char*, kGemmPassCount> kGemmPassNames{"fprop", "dgrad", "wgrad"};


// The operand shape (rows x depth)(depth x cols) of one GEMM pass of a layer whose forward is
// (rows x depth)(depth x cols).
struct GemmDims {
  std::int64_t rows, depth, cols;
};
constexpr GemmDims gemm_dims(GemmPass g, std::int64_t rows, std::int64_t depth, std::int64_t cols) {
  switch (g) {
    case GemmPass::Fprop: return {rows, depth, cols};
    case GemmPass::Dgrad: return {rows, cols, depth};
    case GemmPass::Wgrad: return {depth, rows, cols};
  }
  return {rows, depth, cols};
}

// cuBLAS-style GEMM: the output is cut into tile_m x tile_n tiles, one per SM at a time, so the
// last wave leaves SMs idle (wave quantization); a short reduction depth k spends a larger share
// in prologue/epilogue, modelled as the factor k / (k + k_half).
//   t = launch_s + 2 batch rows depth cols / (peak x efficiency x wave(rows, cols) x k/(k + k_half))
// One model per GEMM pass and data type (Calibration::gemm).
struct GemmModel {
  double efficiency = 0.8;  // achieved fraction of the tensor-core peak on full waves of deep GEMMs
  double tile_m = 128;      // output tile rows
  double tile_n = 128;      // output tile columns
  double k_half = 0;        // reduction depth at which the depth factor is 1/2
  double launch_s = 0;      // fixed cost per GEMM, s
};

// Flash attention: 4 batch rows cols depth matmul flops forward (Q K^T, P V), 10 backward (Q K^T
// recomputed, dV, dP, dQ, dK); the softmax's exponentials and rescaling cost per score rather than
// per flop, which the head-dimension factor d / (d + head_dim_half) expresses.
// With `tile` = 0 (calibrations before format 3) the work is the flops: causal masking skips half
// of them and the rest runs at causal_efficiency of the non-causal speed.
// With `tile` > 0 the work is scheduled as the kernel runs it (FlashAttention-2, flash_api.cpp and
// flash_fwd/bwd_kernel.h): one thread block (CTA) per tile x head_dim block of queries (forward)
// or of keys (backward) of one sequence and head, looping over the other side's tiles (causal:
// those at or below the diagonal), one CTA per SM at a time. The makespan in tile products is
//   non-causal: ceil(CTAs / SMs) x L      (every CTA does L, the other side's tiles: waves)
//   causal:     max(L, W / SMs + tail x L) (W the causal half; CTAs dispatched in index order
//               start their longest rows last, so the last wave ends about `tail` of a longest
//               CTA after the average SM)
// and the forward splits the keys of each CTA over several CTAs when too few fill the GPU
// (FlashAttention-2's split-KV, attention_splits), so that few heads per GPU (tensor-parallel
// shards) and short sequences occupy the SMs they can.
struct AttentionModel {
  double efficiency = 0.8;       // achieved fraction of the tensor-core peak at large head dimension
  double head_dim_half = 0;      // head dimension at which the factor is 1/2
  double launch_s = 0;           // s per pass
  double causal_efficiency = 1;  // speed of a causal kernel's work relative to a non-causal one
  double tail = 0;               // the causal makespan's tail, in longest CTAs (tile > 0)
  double tile = 0;               // query (key) rows of a CTA; 0: the flop model
  // The speed of the split-KV forward's tile products relative to the regular kernel's (its
  // smaller query blocks and the pass that combines the splits' partial outputs).
  double split_efficiency = 1;
};

// A memory-bound kernel: t = launch_s + bytes / (hbm_bandwidth x bandwidth_fraction), bytes as
// the reference counts them (model/layer.cpp). Read with the fixed cost, the achieved bandwidth
// bytes / t is a saturating curve of the bytes moved: half of its limit at launch_s x bandwidth.
struct StreamModel {
  double bandwidth_fraction = 1;  // of hbm_bandwidth, for large tensors
  double launch_s = 0;            // s per pass
};

// The memory-bound kernels with their own curve, in file order. The first four are fitted to
// the block's layer measurements (h100_layers.json), the others to the kernels of a training
// step (h100_kernels.json, h100_kernels_fp8.json: `validate fit-kernels --kernel-measurements`);
// a calibration without the latter leaves those kernels to the kernel-class roofline. Bytes are
// what the layer costs of model/layer.cpp count for the pass; the optimizer moves 28 bytes per
// fp32 parameter (reads parameter, gradient and two moments, writes parameter and moments:
// PyTorch's fused AdamW), a cast 6 per element (fp32 read, bf16 written).
// The last four are quantization kernels, fitted to the fp8_cast measurements; bytes per element
// of the bf16 tensor quantized: amax (a reduction reading it: 2), quantize (it read, an FP8 copy
// written: 3), transpose (torch's copy of an FP8 tensor transposed: read 1, write 1) and
// cast_transpose (torch.compile's scaled cast and transposed copy after its amax: read 2, write
// 1 + 1). FP8 training's recipes (model/precision.hpp) run amax and quantize; the other two time
// the torch operations `validate kernels` compares.
enum class StreamKind : std::uint8_t { Bias, Activation, Dropout, Norm, RmsNorm, GatedActivation, Embedding,
                                       CrossEntropy, Optimizer, Cast, Amax, Quantize, Transpose, CastTranspose };
inline constexpr std::size_t kStreamKindCount = 14;
inline constexpr std::size_t kLayerStreamKinds = 4;  // fitted to layer measurements
inline constexpr std::array<const char*, kStreamKindCount> kStreamKindNames{
    "bias",     "activation", "dropout", "norm", "rmsnorm",  "gated_activation", "embedding",
    "cross_entropy", "optimizer", "cast", "amax", "quantize", "transpose",        "cast_transpose"};
inline constexpr double kAdamwBytesPerParameter = 28;
inline constexpr double kCastBytesPerElement = 6;

struct Calibration {
  std::int64_t sm_count = 132;  // streaming multiprocessors (waves of GEMM tiles and attention CTAs)
  // [data type][fprop, dgrad, wgrad]; a data type not fitted (gemm_fitted false) takes bf16's
  // parameters at its own peak.
  std::array<std::array<GemmModel, kGemmPassCount>, kGemmTypeCount> gemm{};
  std::array<bool, kGemmTypeCount> gemm_fitted{true, false};
  std::array<AttentionModel, 2> attention{};  // [fwd, bwd]
  std::array<std::array<StreamModel, 2>, kStreamKindCount> stream{};
  // Whether a stream kind was fitted (the layer kinds always are); the others keep the roofline.
  std::array<bool, kStreamKindCount> stream_fitted{true, true, true, true};
  // What one layer pass timed alone (CUDA events around one call) costs beyond the same pass
  // inside a stream of kernels, where the host launches ahead of the GPU: added to layer
  // predictions compared with per-layer measurements, never to a block or a step.
  std::array<double, 2> isolated_call_s{};
  // The host's time to issue one call (forward: one eager PyTorch operator; backward: one
  // torch.autograd.grad) and one call of a torch.compile'd function: calls repeated in a stream
  // run at the slower of the host and the GPU, so a call there takes at least this long. Fitted
  // to the in-stream measurements and used where `validate kernels` compares with them; a
  // step's host bound (the pytorch_amp runtime) uses isolated_call_s.
  std::array<double, 2> host_call_s{};
  double host_compiled_call_s = 0;
  // The fraction of its speed in a training step that a tensor-core kernel (GEMM, flash
  // attention) keeps when it is repeated back to back for tens of milliseconds, as the in-stream
  // measurements repeat it, per pass: the forward GEMMs of such a loop run several percent slower
  // than the same call timed alone, as the GPU lowers its clock under the continuous load, while
  // the backward's (dgrad, wgrad) do not; the layer measurements' blocks, composed as a step's,
  // run their forward GEMMs at the speed of the calls timed alone. The GEMM and attention models
  // are the step's; `validate kernels` divides their in-stream predictions by it. 1 where not
  // measured.
  std::array<double, 2> sustained_tensor_fraction{1, 1};
  // The block's kernels outside the reference's layers, on the residual stream: the residual
  // adds and the attention's head split and merge copies (and their gradients' adds in the
  // backward). HBM bytes per element of a sub-layer's residual stream (b x l/tp x e), at the
  // full hbm_bandwidth; each norm pass in a block carries its sub-layer's share.
  std::array<double, 2> residual_glue_bytes{};
  // What PyTorch's caching allocator holds beyond the peak of allocated memory, as a fraction of
  // it (peak_reserved / peak_allocated - 1 of whole training steps, `validate fit-kernels
  // --train-measurements`): a step fits when its peak times 1 + allocator_reserve fits.
  double allocator_reserve = 0;
  std::string source;     // what it was fitted from
  std::string file;       // path as loaded; "" if built in memory

  // The GEMM parameters of data type `t`: its own where fitted, else bf16's.
  const std::array<GemmModel, kGemmPassCount>& gemm_of(GemmType t) const {
    return gemm_fitted[static_cast<std::size_t>(t)] ? gemm[static_cast<std::size_t>(t)] : gemm[0];
  }
};

// Fraction of the SMs busy over a GEMM's waves of output tiles.
inline double wave_efficiency(const Calibration& c, const GemmModel& g, std::int64_t batch, std::int64_t rows,
                              std::int64_t cols) {
  const double tiles = static_cast<double>(batch) * std::ceil(static_cast<double>(rows) / g.tile_m) *
                       std::ceil(static_cast<double>(cols) / g.tile_n);
  const double sms = static_cast<double>(c.sm_count);
  return tiles / (std::ceil(tiles / sms) * sms);
}

// Seconds of `batch` GEMMs' arithmetic (launch excluded) whose tiles cover `rows` output rows
// each and whose arithmetic counts `worked_rows` (rows, or rows padded to whole tiles).
inline double gemm_arithmetic_seconds(const Calibration& c, const GemmModel& g, double peak_tflops,
                                      double flops_units, std::int64_t batch, double worked_rows, std::int64_t rows,
                                      std::int64_t depth, std::int64_t cols) {
  const double k = static_cast<double>(depth);
  const double flops = 2.0 * static_cast<double>(batch) * worked_rows * k * static_cast<double>(cols);
  const double eff = g.efficiency * wave_efficiency(c, g, batch, rows, cols) * (k / (k + g.k_half));
  return flops * flops_units / (peak_tflops * eff);
}

// Seconds of one GEMM's arithmetic at `peak_tflops` (launch excluded).
inline double gemm_compute_seconds(const Calibration& c, const GemmModel& g, double peak_tflops, double flops_units,
                                   std::int64_t batch, std::int64_t rows, std::int64_t depth, std::int64_t cols) {
  return gemm_arithmetic_seconds(c, g, peak_tflops, flops_units, batch, static_cast<double>(rows), rows, depth, cols);
}

// Seconds of a grouped GEMM's arithmetic (launch excluded): `experts` products of
// (rows x depth)(depth x cols) in one kernel, as Megatron-Core runs the experts of a GPU with
// --moe-grouped-gemm (CUTLASS's grouped GEMM, torch._grouped_mm, Transformer Engine's
// GroupedLinear; DeepGEMM's m-grouped GEMMs likewise): each expert's output is cut into its own
// tile_m x tile_n tiles, the last row of tiles of an expert padded to tile_m rows, and every
// expert's tiles are scheduled together as one set of waves over the SMs (a persistent tile
// scheduler over the groups: CUTLASS's GroupProblemShape, DeepGEMM's grouped scheduler). A tile
// takes as long whether its rows hold tokens or padding, so
//   t = 2 experts ceil(rows / tile_m) tile_m depth cols / (peak x efficiency
//       x wave(experts x ceil(rows / tile_m) x ceil(cols / tile_n) tiles) x depth / (depth + k_half))
// the dense GEMM's model on the padded rows, its reduction depth as the dense model has it. One
// expert whose rows are a whole number of tiles is the dense GEMM; 128 experts of 16 tokens with
// 128-row tiles are 8 times the work of the dense GEMM of their 2048 tokens.
inline double grouped_gemm_seconds(const Calibration& c, const GemmModel& g, double peak_tflops, double flops_units,
                                   std::int64_t experts, std::int64_t rows, std::int64_t depth, std::int64_t cols) {
  const double padded_rows = std::ceil(static_cast<double>(rows) / g.tile_m) * g.tile_m;
  return gemm_arithmetic_seconds(c, g, peak_tflops, flops_units, experts, padded_rows, rows, depth, cols);
}

// Seconds of one GEMM pass's arithmetic of a layer whose forward is (rows x depth)(depth x cols).
// A grouped GEMM's forward and input gradient have the experts' tokens as output rows (padded
// per expert); its weight gradient (depth x cols per expert, reduced over the tokens) has none
// to pad: the dense model's, every expert's tiles in one set of waves.
inline double gemm_pass_seconds(const Calibration& c, const GemmModel& g, GemmPass pass, double peak_tflops,
                                double flops_units, const KernelShape& s) {
  const GemmDims d = gemm_dims(pass, s.rows, s.depth, s.cols);
  if (s.grouped && pass != GemmPass::Wgrad) [[unlikely]] {
    return grouped_gemm_seconds(c, g, peak_tflops, flops_units, s.batch, d.rows, d.depth, d.cols);
  }
  return gemm_compute_seconds(c, g, peak_tflops, flops_units, s.batch, d.rows, d.depth, d.cols);
}

// FlashAttention-2's number of splits of the keys in the forward (flash_api.cpp,
// num_splits_heuristic, over blocks of 64 queries and two CTAs per SM): 1 when the query blocks
// of every sequence and head fill 80% of the slots; else the fewest splits whose waves are at
// least 85% as full as the best count's, among counts that leave no split without keys.
inline std::int64_t attention_splits(std::int64_t batch_heads, std::int64_t queries, std::int64_t keys,
                                     std::int64_t head_dim, std::int64_t sm_count) {
  constexpr std::int64_t kMaxSplits = 128;
  const std::int64_t key_block = head_dim <= 64 ? 256 : (head_dim <= 128 ? 128 : 64);
  const std::int64_t blocks = batch_heads * ((queries + 63) / 64);
  const std::int64_t slots = 2 * sm_count;
  if (static_cast<double>(blocks) >= 0.8 * static_cast<double>(slots)) return 1;
  const std::int64_t key_blocks = (keys + key_block - 1) / key_block;
  const std::int64_t most = std::min(std::min(kMaxSplits, slots), key_blocks);
  const auto fill = [&](std::int64_t n) {
    const double waves = static_cast<double>(blocks * n) / static_cast<double>(slots);
    return waves / std::ceil(waves);
  };
  const auto eligible = [&](std::int64_t n) {
    return n == 1 || (key_blocks + n - 1) / n != (key_blocks + n - 2) / (n - 1);
  };
  double best = 0;
  for (std::int64_t n = 1; n <= most; ++n) {
    if (eligible(n)) best = std::max(best, fill(n));
  }
  for (std::int64_t n = 1; n <= most; ++n) {
    if (eligible(n) && fill(n) >= 0.85 * best) return n;
  }
  return 1;
}

// The makespan of a flash-attention pass in tile x tile products per SM (AttentionModel, tile > 0).
inline double attention_makespan_tiles(const AttentionModel& a, std::size_t pass, std::int64_t sm_count,
                                       const KernelShape& s) {
  const double tq = std::ceil(static_cast<double>(s.rows) / a.tile);
  const double tk = std::ceil(static_cast<double>(s.cols) / a.tile);
  const bool forward = pass == kFwd;
  const double owned = forward ? tq : tk;  // the side a CTA owns, per sequence and head
  const double other = forward ? tk : tq;  // the side it loops over
  const double sms = static_cast<double>(sm_count);
  const double splits =
      forward ? static_cast<double>(attention_splits(s.batch, s.rows, s.cols, s.depth, sm_count)) : 1.0;
  const double longest = std::ceil(other / splits);
  const double ctas = static_cast<double>(s.batch) * owned * splits;
  const double split = splits > 1 ? 1 / a.split_efficiency : 1.0;
  if (!s.causal) return split * std::ceil(ctas / sms) * longest;
  // Causal: half of the tile products and half of the diagonal's (tq (tq + 1) / 2 for a square
  // score matrix); where the sides differ (a context-parallel chunk of queries against the keys
  // of the whole sequence) the half a chunk sees on average, as the flop count halves it.
  double per_head = tq * tk / 2 + std::min(tq, tk) / 2;
  double longest_causal = longest;
  if (s.window > 0) [[unlikely]] {
    // a sliding window: the band of tiles under the diagonal the window reaches (the sequence is
    // the keys' side), the longest CTA at most the window's tiles and the diagonal's
    per_head *= window_share_of_causal(s.cols, s.window);
    longest_causal = std::min(longest, std::ceil(static_cast<double>(s.window) / a.tile) + 1);
  }
  return split * std::max(longest_causal, static_cast<double>(s.batch) * per_head / sms + a.tail * longest_causal);
}

// Seconds of a flash-attention pass's arithmetic (launch excluded).
inline double attention_compute_seconds(const AttentionModel& a, std::size_t pass, std::int64_t sm_count,
                                        double peak_tflops, double flops_units, const KernelShape& s) {
  double d = static_cast<double>(s.depth);
  if (s.value_depth > 0 && s.value_depth != s.depth) [[unlikely]] {
    // keys of depth d and values of depth dv: the forward's Q K^T runs on d, P V on dv; the
    // backward's recomputed Q K^T, dQ and dK on d, dP and dV on dv
    const double dv = static_cast<double>(s.value_depth);
    d = pass == kFwd ? (d + dv) / 2 : (3 * d + 2 * dv) / 5;
  }
  const double matmuls = pass == kFwd ? 4.0 : 10.0;
  const double rate = peak_tflops * a.efficiency * (d / (d + a.head_dim_half));
  if (a.tile > 0) {
    // One SM's share of the peak runs the makespan's tile products one after another.
    const double tile_flops = matmuls * a.tile * a.tile * d;
    const double causal = s.causal ? 1 / a.causal_efficiency : 1.0;
    return causal * attention_makespan_tiles(a, pass, sm_count, s) * tile_flops * flops_units *
           static_cast<double>(sm_count) / rate;
  }
  const double flops = matmuls * static_cast<double>(s.batch) * static_cast<double>(s.rows) *
                       static_cast<double>(s.cols) * d;
  double masked = s.causal ? 0.5 / a.causal_efficiency : 1.0;
  if (s.window > 0) [[unlikely]] masked *= window_share_of_causal(s.cols, s.window);
  return masked * flops * flops_units / rate;
}

inline StreamKind stream_kind(KernelOp op) {
  switch (op) {
    case KernelOp::Bias: return StreamKind::Bias;
    case KernelOp::Dropout: return StreamKind::Dropout;
    case KernelOp::Norm: return StreamKind::Norm;
    case KernelOp::RmsNorm: return StreamKind::RmsNorm;
    case KernelOp::GatedActivation: return StreamKind::GatedActivation;
    case KernelOp::Embedding: return StreamKind::Embedding;
    case KernelOp::CrossEntropy: return StreamKind::CrossEntropy;
    case KernelOp::Optimizer: return StreamKind::Optimizer;
    case KernelOp::Cast: return StreamKind::Cast;
    default: return StreamKind::Activation;  // GELU, and the unfused softmax (no own measurements)
  }
}

}  // namespace kernels
}  // namespace perfsweep
