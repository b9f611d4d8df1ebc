#include "model/precision.hpp"

#include "model/roofline.hpp"

namespace perfsweep {
namespace {
using I = std::int64_t;
constexpr double D(I v) { return static_cast<double>(v); }
constexpr double kMxScale = 1.0 / 32;  // an e8m0 scale byte per 32 elements
}  // namespace

Quantization input_quantization(Fp8Recipe recipe, bool fused) {
  // kQuantKinds: [amax, quantize]
  switch (recipe) {
    case Fp8Recipe::None: return {};
    case Fp8Recipe::Delayed: return fused ? Quantization{{0, 2}, {0, 1}} : Quantization{{0, 4}, {0, 1}};
    case Fp8Recipe::Current: return {{2, 4}, {1, 1}};
    case Fp8Recipe::Mxfp8: return fused ? Quantization{{0, 2 * kMxScale}, {0, 0}} : Quantization{{0, 4 + 2 * kMxScale}, {0, 1}};
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

void add_quantization(QuantWork& work, const Quantization& q, double elements_gb, double times) {
  for (std::size_t i = 0; i < kQuantKinds.size(); ++i) {
    work.gb[i] += q.bytes_per_element[i] * elements_gb * times;
    work.kernels[i] += q.kernels[i] * times;
  }
}

double quantization_seconds(const System& s, const QuantWork& w) {
  const kernels::Calibration* cal = s.kernel_calibration.get();
  if (cal != nullptr) {
    bool own = true;
    for (const kernels::StreamKind k : kQuantKinds) own = own && cal->stream_fitted[static_cast<std::size_t>(k)];
    if (own) {
      double t = 0;
      for (std::size_t i = 0; i < kQuantKinds.size(); ++i) {
        if (w.kernels[i] == 0 && w.gb[i] == 0) continue;
        const kernels::StreamModel& m = cal->stream[static_cast<std::size_t>(kQuantKinds[i])][kernels::kFwd];
        t += w.kernels[i] * m.launch_s + w.gb[i] / (s.hbm_bandwidth * m.bandwidth_fraction);
      }
      return t;
    }
    constexpr auto kCast = static_cast<std::size_t>(kernels::StreamKind::Cast);
    if (cal->stream_fitted[kCast]) {
      const kernels::StreamModel& m = cal->stream[kCast][kernels::kFwd];
      return w.total_kernels() * m.launch_s + w.total_gb() / (s.hbm_bandwidth * m.bandwidth_fraction);
    }
  }
  return w.total_kernels() * s.kernel(KernelClass::Elementwise).launch_s +
         memory_seconds(s, KernelClass::Elementwise, w.total_gb());
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
  c.quant = {};
  add_quantization(c.quant[input_pass], in, x * narrow);
  add_quantization(c.quant[kernels::kBwd], grad, yv * narrow);
}

}  // namespace perfsweep
