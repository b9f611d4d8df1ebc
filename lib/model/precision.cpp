#include "model/precision.hpp"

#include "model/roofline.hpp"

namespace perfsweep {
namespace {
using I = std::int64_t;
constexpr double D(I v) { return static_cast<double>(v); }
}  // namespace

void add_quantization(QuantWork& work, const Quantization& q, double elements_gb, double times) {
  for (std::size_t i = 0; i < kQuantKinds.size(); ++i) {
    work.gb[i] += q.bytes_per_element[i] * elements_gb * times;
    work.kernels[i] += q.kernels[i] * times;
  }
}

double quantization_seconds(const System& s, const QuantWork& w) {
  std::array<const kernels::StreamModel*, kQuantKinds.size()> own{};
  bool all = true;
  for (std::size_t i = 0; i < kQuantKinds.size(); ++i) {
    own[i] = fitted_stream(s, kQuantKinds[i]);
    all = all && own[i] != nullptr;
  }
  if (all) {
    double t = 0;
    for (std::size_t i = 0; i < kQuantKinds.size(); ++i) {
      if (w.kernels[i] == 0 && w.gb[i] == 0) continue;
      t += stream_seconds(s, *own[i], w.kernels[i], w.gb[i]);
    }
    return t;
  }
  if (const kernels::StreamModel* cast = fitted_stream(s, kernels::StreamKind::Cast)) {
    return stream_seconds(s, *cast, w.total_kernels(), w.total_gb());
  }
  return elementwise_seconds(s, w.total_kernels(), w.total_gb());
}

bool runs_fp8(const BlockLayer& y, const Fp8Policy& fp8) { return runs_fp8(y.role, fp8); }

bool runs_fp8(Role role, const Fp8Policy& fp8) {
  if (fp8.recipe == Fp8Recipe::None) return false;
  switch (role) {
    case Role::ColumnProjection:
    case Role::QkvProjection:
    case Role::RowProjection: return true;
    case Role::VocabProjection: return fp8.lm_head;
    default: return false;
  }
}

double gather_share(Precision p, const Fp8Policy& fp8, Role next) {
  if (p == Precision::Bf16 || !fp8.quantized_gather || !runs_fp8(next, fp8)) return 1.0;
  return data_type(recipe_of(fp8.recipe).data_type).operand_share;
}

void to_fp8(const System& s, const BlockLayer& y, const Fp8Policy& fp8, LayerCost& c) {
  const double wide = s.element_size;    // GB per bf16 element
  const LowPrecisionRecipe& recipe = recipe_of(fp8.recipe);
  const double narrow = wide * data_type(recipe.data_type).operand_share;  // GB per operand element
  const double byte = wide / 2;  // GB per element at one byte: the quantizations' unit
  const KernelShape& k = c.shape;
  const double batch = D(k.batch);
  const double x = batch * D(k.rows) * D(k.depth);   // input elements
  const double yv = batch * D(k.rows) * D(k.cols);   // output elements
  const double w = batch * D(k.depth) * D(k.cols);   // weight elements
  c.precision = recipe.data_type;
  // forward: X and W in FP8, Y in bf16; backward: dX = dY W^T and dW = X^T dY from FP8 operands,
  // dX and dW written in bf16
  c.mem_fwd = (x + w) * narrow + yv * wide;
  c.mem_bwd = (yv + w) * narrow + x * wide + (x + yv) * narrow + w * wide;
  if (fp8.saved_inputs && c.activation_buffer > 0) c.activation_buffer = x * narrow;
  // The norm before qkv and before a dense fc1 quantizes its output itself (LayerNormLinear).
  const bool after_norm = y.role == Role::QkvProjection || (y.role == Role::ColumnProjection && y.operand == Operand::Hidden &&
                                                            y.sublayer == Sublayer::Mlp);
  const bool fused = fp8.fused_casts && after_norm && recipe.fuses;
  const Quantization& in = fused ? recipe.fused : recipe.input;
  const Quantization& grad = recipe.input;
  // The input's quantization runs in the forward, but delayed scaling's fused one transposes the
  // saved copy in the backward; the output gradient's runs in the backward.
  const std::size_t input_pass = fused && recipe.fused_in_backward ? kernels::kBwd : kernels::kFwd;
  c.quant = {};
  add_quantization(c.quant[input_pass], in, x * byte);
  add_quantization(c.quant[kernels::kBwd], grad, yv * byte);
}

}  // namespace perfsweep
