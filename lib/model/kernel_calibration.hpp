#pragma once
// Kernel times fitted to one GPU kind's layer measurements (`validate fit-kernels`), named by a
// system file's `kernels:` key. Without it the roofline is the reference's (model/roofline.hpp).
// Every parameter is physical and bounded: efficiencies and bandwidth fractions in (0, 1], so a
// calibrated kernel is never faster than the peak FLOP/s or HBM bandwidth of the system it runs
// on (the system's peaks are not part of the calibration: an H200 predicted from an H100
// calibration keeps the H100's efficiencies at the H200's bandwidth).
#include <array>
#include <cmath>
#include <cstdint>
#include <string>

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

// The data type a GEMM runs in (model/precision.hpp). Bf16: the reference's one element size.
// Fp8: e4m3/e5m2 operands with per-tensor scales and bf16 output, as Transformer Engine runs the
// linear layers (the attention core, the router and, unless a runtime says, the LM head stay
// bf16); Mxfp8: the same with per-32-element block scales (a layer's data type under the MXFP8
// recipe; a layout asks for fp8).
enum class Precision : std::uint8_t { Bf16, Fp8, Mxfp8 };
inline constexpr std::array<const char*, 3> kPrecisionNames{"bf16", "fp8", "mxfp8"};

// Operand shape of a GEMM-like pass: `batch` independent products of (rows x depth)(depth x cols).
// Flash attention: batch = micro-batch x local heads, rows = query positions, cols = key
// positions, depth = head dimension.
struct KernelShape {
  std::int64_t batch = 1;
  std::int64_t rows = 0;
  std::int64_t depth = 0;
  std::int64_t cols = 0;
  bool causal = false;  // flash attention with a causal mask
};

namespace kernels {

inline constexpr std::size_t kFwd = 0, kBwd = 1;
inline constexpr std::array<const char*, 2> kPassNames{"fwd", "bwd"};

// cuBLAS-style GEMM: the output is cut into tile_m x tile_n tiles, one per SM at a time, so the
// last wave leaves SMs idle (wave quantization); a short reduction depth k spends a larger share
// in prologue/epilogue, modelled as the factor k / (k + k_half).
//   t = launch_s + 2 batch rows depth cols / (peak x efficiency x wave(rows, cols) x k/(k + k_half))
// The backward pass is two GEMMs, dX = dY W^T (rows x depth, reduced over cols) and
// dW = X^T dY (depth x cols, reduced over rows), with the backward's own parameters.
struct GemmModel {
  double efficiency = 0.8;  // achieved fraction of the tensor-core peak on full waves of deep GEMMs
  double tile_m = 128;      // output tile rows
  double tile_n = 128;      // output tile columns
  double k_half = 0;        // reduction depth at which the depth factor is 1/2
  double launch_s = 0;      // fixed cost per pass (launches, prologue), s
};

// Flash attention: 4 batch rows cols depth matmul flops forward (Q K^T, P V), 10 backward (Q K^T
// recomputed, dV, dP, dQ, dK); the softmax's exponentials and rescaling cost per score rather than
// per flop, which the head-dimension factor d / (d + head_dim_half) expresses.
// Causal masking skips the score blocks above the diagonal, half of the arithmetic; the blocks
// on the diagonal are computed whole and masked, and the kernel's work is unevenly spread over
// its thread blocks, so the remaining half runs at causal_efficiency of the non-causal speed.
struct AttentionModel {
  double efficiency = 0.8;    // achieved fraction of the tensor-core peak at large head dimension
  double head_dim_half = 0;   // head dimension at which the factor is 1/2
  double launch_s = 0;        // s per pass
  double causal_efficiency = 1;  // speed of a causal kernel's unmasked half relative to a full one
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
// step (h100_kernels.json, `validate fit-kernels --kernel-measurements`); a calibration without
// the latter leaves those kernels to the kernel-class roofline. Bytes are what the layer costs
// of model/layer.cpp count for the pass; the optimizer moves 28 bytes per fp32 parameter (reads
// parameter, gradient and two moments, writes parameter and moments: PyTorch's fused AdamW), a
// cast 6 per element (fp32 read, bf16 written).
enum class StreamKind : std::uint8_t { Bias, Activation, Dropout, Norm, RmsNorm, GatedActivation, Embedding,
                                       CrossEntropy, Optimizer, Cast };
inline constexpr std::size_t kStreamKindCount = 10;
inline constexpr std::size_t kLayerStreamKinds = 4;  // fitted to layer measurements
inline constexpr std::array<const char*, kStreamKindCount> kStreamKindNames{
    "bias", "activation", "dropout", "norm", "rmsnorm", "gated_activation", "embedding", "cross_entropy",
    "optimizer", "cast"};
inline constexpr double kAdamwBytesPerParameter = 28;
inline constexpr double kCastBytesPerElement = 6;

struct Calibration {
  std::int64_t sm_count = 132;  // streaming multiprocessors (waves of GEMM tiles)
  std::array<GemmModel, 2> gemm{};            // [fwd, bwd]
  // FP8 GEMMs: the same model with its own parameters, fitted to FP8 GEMM measurements where the
  // calibration has them (gemm_fp8_fitted); else the bf16 parameters at the FP8 peak.
  std::array<GemmModel, 2> gemm_fp8{};
  bool gemm_fp8_fitted = false;
  std::array<AttentionModel, 2> attention{};  // [fwd, bwd]
  std::array<std::array<StreamModel, 2>, kStreamKindCount> stream{};
  // Whether a stream kind was fitted (the layer kinds always are); the others keep the roofline.
  std::array<bool, kStreamKindCount> stream_fitted{true, true, true, true};
  // What one layer pass timed alone (CUDA events around one call) costs beyond the same pass
  // inside a stream of kernels, where the host launches ahead of the GPU: added to layer
  // predictions compared with per-layer measurements, never to a block or a step.
  std::array<double, 2> isolated_call_s{};
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
};

// Fraction of the SMs busy over a GEMM's waves of output tiles.
inline double wave_efficiency(const Calibration& c, const GemmModel& g, std::int64_t batch, std::int64_t rows,
                              std::int64_t cols) {
  const double tiles = static_cast<double>(batch) * std::ceil(static_cast<double>(rows) / g.tile_m) *
                       std::ceil(static_cast<double>(cols) / g.tile_n);
  const double sms = static_cast<double>(c.sm_count);
  return tiles / (std::ceil(tiles / sms) * sms);
}

// Seconds of one GEMM's arithmetic at `peak_tflops` (launch excluded).
inline double gemm_compute_seconds(const Calibration& c, const GemmModel& g, double peak_tflops, double flops_units,
                                   std::int64_t batch, std::int64_t rows, std::int64_t depth, std::int64_t cols) {
  const double k = static_cast<double>(depth);
  const double flops = 2.0 * static_cast<double>(batch) * static_cast<double>(rows) * k * static_cast<double>(cols);
  const double eff = g.efficiency * wave_efficiency(c, g, batch, rows, cols) * (k / (k + g.k_half));
  return flops * flops_units / (peak_tflops * eff);
}

// Seconds of a flash-attention pass's arithmetic (launch excluded).
inline double attention_compute_seconds(const AttentionModel& a, std::size_t pass, double peak_tflops,
                                        double flops_units, const KernelShape& s) {
  const double d = static_cast<double>(s.depth);
  const double matmuls = pass == kFwd ? 4.0 : 10.0;
  const double flops = matmuls * static_cast<double>(s.batch) * static_cast<double>(s.rows) *
                       static_cast<double>(s.cols) * d;
  const double masked = s.causal ? 0.5 / a.causal_efficiency : 1.0;
  return masked * flops * flops_units / (peak_tflops * a.efficiency * (d / (d + a.head_dim_half)));
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

// Seconds of a memory-bound kernel of `kind` moving `gigabytes` (launch included).
inline double stream_seconds(const Calibration& c, StreamKind kind, std::size_t pass, double gigabytes,
                             double hbm_bandwidth) {
  const StreamModel& m = c.stream[static_cast<std::size_t>(kind)][pass];
  return m.launch_s + gigabytes / (hbm_bandwidth * m.bandwidth_fraction);
}

}  // namespace kernels
}  // namespace perfsweep
