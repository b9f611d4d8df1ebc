#pragma once
// FP8 training as Transformer Engine runs it (Execution::precision = Fp8, the runtime's
// Fp8Policy): which GEMMs run in FP8, what they move and keep, and the quantization kernels
// around them. Sources: Transformer Engine's FP8 primer and performance guide (docs/fp8.md):
// every FP8 GEMM on Hopper reads both operands in FP8 in the layout it needs (TN), so an input
// or output gradient is quantized into a row-wise and a column-wise (transposed) copy; weights
// are quantized into both once per step with is_first_microbatch (weight caching), else for
// every micro-batch; LayerNormLinear quantizes a norm's output inside the norm.
#include <array>
#include <cstdint>

#include "model/block.hpp"

namespace perfsweep {

// A recipe's quantizations (kLowPrecisionRecipes, model/data_type.hpp): a tensor's by its own
// kernels (`input`; a weight's likewise, once per step with weight caching, else per
// micro-batch), a norm's output inside the norm (`fused`), and the bytes per weight element its
// weight cache keeps.
// Transformer Engine's cast-transpose and FP8 transpose kernels transpose through shared memory,
// so their writes stream like a plain cast's: they are timed on the plain cast's curve
// (quantize, the measured cast_plain), not on torch's generic transposed copy (transpose_fp8) or
// torch.compile's fused function (fused_cast_transpose_amax), which `validate kernels` compares
// with their own curves (docs/fp8.md).

// `q` applied `times` to tensors of `elements_gb` GB (in their bf16 size over 2: GB at one byte
// per element), added to `work`.
void add_quantization(QuantWork& work, const Quantization& q, double elements_gb, double times = 1);

// Seconds of quantization kernels: each kind's launches and bytes as the kernel calibration's
// curve for it; a calibration without those curves times the totals as its cast kernel, and no
// calibration as the elementwise roofline's launch and bandwidth.
double quantization_seconds(const System& s, const QuantWork& work);

// Whether a described layer's GEMM runs in FP8 under the policy: the linear layers (column, qkv
// and row projections, the experts'), the LM head only with fp8.lm_head; never the router.
bool runs_fp8(const BlockLayer& layer, const Fp8Policy& fp8);
bool runs_fp8(Role role, const Fp8Policy& fp8);

// The share of its bf16 bytes a tensor-parallel gather of the input of a GEMM of role `next`
// moves: the data type's operand share (FP8 and MXFP8 1/2, NVFP4 (0.5 + 1/16)/2) where that GEMM
// runs in low precision and the runtime gathers it quantized (Fp8Policy::quantized_gather); else 1.
double gather_share(Precision precision, const Fp8Policy& fp8, Role next);

// The layer's cost with its GEMM in FP8 (a 1d linear layer's cost from model/layer.hpp): the
// data type (FP8 peak and calibration), operands read in FP8 (1 byte) and outputs written in
// bf16, the saved input kept in FP8 where the policy says, and the quantization kernels of the
// input (forward) and of the output gradient (backward).
void to_fp8(const System& s, const BlockLayer& layer, const Fp8Policy& fp8, LayerCost& cost);

}  // namespace perfsweep
