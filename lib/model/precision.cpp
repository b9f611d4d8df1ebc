#include "model/precision.hpp"

#include "model/roofline.hpp"

namespace perfsweep {
namespace {
using I = std::int64_t;
constexpr double D(I v) { return static_cast<double>(v); }
constexpr double kMxScale = 1.0 / 32;  // an e8m0 scale byte per 32 elements
}  // namespace

Quantization input_quantization(Fp8Recipe recipe, bool fused) {
  switch (recipe) {
    case Fp8Recipe::None: return {};
    case Fp8Recipe::Delayed: return fused ? Quantization{2, 1} : Quantization{4, 1};
    case Fp8Recipe::Current: return {6, 2};
    case Fp8Recipe::Mxfp8: return fused ? Quantization{2 * kMxScale, 0} : Quantization{4 + 2 * kMxScale, 1};
  }
  return {};
}

Quantization weight_quantization(Fp8Recipe recipe) { return input_quantization(recipe, false); }

double cached_weight_bytes(Fp8Recipe recipe) {
  switch (recipe) {
    case Fp8Recipe::None: return 0;
    case Fp8Recipe::Delayed:
    case Fp8Recipe::Current: return 2;
    case Fp8Recipe::Mxfp8: return 2 + 2 * kMxScale;
  }
  return 0;
}

double quantization_seconds(const System& s, double gigabytes, double kernels) {
  const kernels::Calibration* cal = s.kernel_calibration.get();
  constexpr auto kCast = static_cast<std::size_t>(kernels::StreamKind::Cast);
  if (cal != nullptr && cal->stream_fitted[kCast]) {
    const kernels::StreamModel& m = cal->stream[kCast][kernels::kFwd];
    return kernels * m.launch_s + gigabytes / (s.hbm_bandwidth * m.bandwidth_fraction);
  }
  return kernels * s.kernel(KernelClass::Elementwise).launch_s + memory_seconds(s, KernelClass::Elementwise, gigabytes);
}

bool runs_fp8(const BlockLayer& y, const Fp8Policy& fp8) {
  if (fp8.recipe == Fp8Recipe::None) return false;
  switch (y.role) {
    case Role::ColumnProjection:
    case Role::QkvProjection:
    case Role::RowProjection: return true;
    case Role::VocabProjection: return fp8.lm_head;
    default: return false;
  }
}

void to_fp8(const System& s, const BlockLayer& y, const Fp8Policy& fp8, LayerCost& c) {
  const double wide = s.element_size;    // GB per bf16 element
  const double narrow = wide / 2;        // GB per FP8 element
  const KernelShape& k = c.shape;
  const double batch = D(k.batch);
  const double x = batch * D(k.rows) * D(k.depth);   // input elements
  const double yv = batch * D(k.rows) * D(k.cols);   // output elements
  const double w = batch * D(k.depth) * D(k.cols);   // weight elements
  c.precision = fp8.recipe == Fp8Recipe::Mxfp8 ? Precision::Mxfp8 : Precision::Fp8;
  // forward: X and W in FP8, Y in bf16; backward: dX = dY W^T and dW = X^T dY from FP8 operands,
  // dX and dW written in bf16
  c.mem_fwd = (x + w) * narrow + yv * wide;
  c.mem_bwd = (yv + w) * narrow + x * wide + (x + yv) * narrow + w * wide;
  if (fp8.saved_inputs && c.activation_buffer > 0) c.activation_buffer = x * narrow;
  // The norm before qkv and before a dense fc1 quantizes its output itself (LayerNormLinear).
  const bool after_norm = y.role == Role::QkvProjection || (y.role == Role::ColumnProjection && y.operand == Operand::Hidden &&
                                                            y.sublayer == Sublayer::Mlp);
  const bool fused = fp8.fused_casts && after_norm && fp8.recipe != Fp8Recipe::Current;
  const Quantization in = input_quantization(fp8.recipe, fused);
  const Quantization grad = input_quantization(fp8.recipe, false);
  // The input's quantization runs in the forward, but delayed scaling's fused one transposes the
  // saved copy in the backward; the output gradient's runs in the backward.
  const std::size_t input_pass = fused && fp8.recipe == Fp8Recipe::Delayed ? kernels::kBwd : kernels::kFwd;
  c.cast_gb = {};
  c.cast_kernels = {};
  c.cast_gb[input_pass] += in.bytes_per_element * x * narrow;
  c.cast_kernels[input_pass] = in.kernels;
  c.cast_gb[kernels::kBwd] += grad.bytes_per_element * yv * narrow;
  c.cast_kernels[kernels::kBwd] = static_cast<std::uint8_t>(c.cast_kernels[kernels::kBwd] + grad.kernels);
}

}  // namespace perfsweep
