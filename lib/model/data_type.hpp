#pragma once
// The data types a GEMM runs in and the low-precision recipes that put a framework's linear layers
// in them, each one descriptor (a new data type or recipe is one entry here): a data type's name,
// the system's tensor-core peak for it, the GEMM calibration's parameters it runs with and the
// bytes its operands take; a recipe's data type, its quantization kernels (model/precision.hpp
// applies them) and its names in the frameworks' arguments.
#include <array>
#include <cstdint>
#include <iterator>

#include "model/system.hpp"

namespace perfsweep {

// The data type a GEMM runs in (model/precision.hpp). Bf16: the reference's one element size.
// Fp8: e4m3/e5m2 operands with per-tensor scales and bf16 output, as Transformer Engine runs the
// linear layers (the attention core, the router and, unless a runtime says, the LM head stay
// bf16); Mxfp8: the same with per-32-element block scales (the MXFP8 recipe's layers: a layout
// asking for mxfp8, or for fp8 under a runtime whose fp8_recipe is mxfp8); Nvfp4: e2m1 operands
// with an e4m3 scale per 16 elements and a per-tensor fp32 scale (NVIDIA's NVFP4, Blackwell; the
// NVFP4 recipe's layers: a layout asking for nvfp4, or for fp8 under a runtime whose fp8_recipe is
// nvfp4).
enum class Precision : std::uint8_t { Bf16, Fp8, Mxfp8, Nvfp4 };
inline constexpr std::array<const char*, 4> kPrecisionNames{"bf16", "fp8", "mxfp8", "nvfp4"};

// The data types with GEMM parameters of their own in a kernel calibration: bf16 and FP8 (per-
// tensor or block scales: an MXFP8 layer runs at the system's MXFP8 peak with the FP8 parameters).
namespace kernels {
enum class GemmType : std::uint8_t { Bf16, Fp8 };
inline constexpr std::size_t kGemmTypeCount = 2;
inline constexpr std::array<const char*, kGemmTypeCount> kGemmTypeNames{"bf16", "fp8"};
}  // namespace kernels

// How a framework runs FP8 (a runtime's fp8_* keys, model/runtime.hpp): its scaling recipe and
// the kernels around the FP8 GEMMs.
enum class Fp8Recipe : std::uint8_t {
  None,     // the framework runs no FP8
  Delayed,  // per-tensor scales from an amax history (Transformer Engine's DelayedScaling)
  Current,  // per-tensor scales from the tensor itself: an amax pass before each cast
            // (Float8CurrentScaling; torchao's dynamic scaling)
  Mxfp8,    // per-32-element block scales in the tensor cores (MXFP8BlockScaling, Blackwell)
  Nvfp4,    // NVFP4 (Transformer Engine's NVFP4BlockScaling, Blackwell): every linear GEMM in FP4
};

struct DataType {
  Precision id;
  const char* name;          // kPrecisionNames'
  double System::*peak;      // TFLOP/s: the system's dense tensor-core peak in it (0: none)
  const char* peak_key;      // that peak's key in a system file
  const char* tensor_cores;  // the tensor cores' name in messages ("no FP8 tensor cores")
  kernels::GemmType gemm;    // the kernel calibration's GEMM parameters it runs with
  double operand_share;      // a GEMM operand's bytes per element over bf16's
  // The recipe a layout asking for this data type runs (`--precision mxfp8`, `nvfp4`); None: the
  // runtime's fp8_recipe (fp8: delayed or current scaling as the framework runs it).
  Fp8Recipe recipe = Fp8Recipe::None;
};
inline constexpr DataType kDataTypes[] = {
    {.id = Precision::Bf16, .name = kPrecisionNames[0], .peak = &System::matrix_flops_fp16,
     .peak_key = "matrix_flops_fp16", .tensor_cores = "BF16", .gemm = kernels::GemmType::Bf16, .operand_share = 1.0},
    {.id = Precision::Fp8, .name = kPrecisionNames[1], .peak = &System::matrix_flops_fp8,
     .peak_key = "matrix_flops_fp8", .tensor_cores = "FP8", .gemm = kernels::GemmType::Fp8, .operand_share = 0.5},
    {.id = Precision::Mxfp8, .name = kPrecisionNames[2], .peak = &System::matrix_flops_mxfp8,
     .peak_key = "matrix_flops_mxfp8", .tensor_cores = "MXFP8", .gemm = kernels::GemmType::Fp8, .operand_share = 0.5,
     .recipe = Fp8Recipe::Mxfp8},
    // the FP8 GEMM parameters at the FP4 peak (assumed: no NVFP4 GEMM measured); 4 bits and a
    // scale byte per 16 elements: (0.5 + 1/16) / 2 of bf16's bytes
    {.id = Precision::Nvfp4, .name = kPrecisionNames[3], .peak = &System::matrix_flops_fp4,
     .peak_key = "matrix_flops_fp4", .tensor_cores = "FP4", .gemm = kernels::GemmType::Fp8,
     .operand_share = (0.5 + 1.0 / 16) / 2, .recipe = Fp8Recipe::Nvfp4},
};
static_assert(std::size(kDataTypes) == kPrecisionNames.size(), "a descriptor for every Precision");
constexpr const DataType& data_type(Precision p) { return kDataTypes[static_cast<std::size_t>(p)]; }
namespace kernels {
constexpr GemmType gemm_type(Precision p) { return data_type(p).gemm; }
}  // namespace kernels



// One quantization of a bf16 tensor into the recipe's data type: bytes moved per element and
// kernels launched, by the kind of kernel that runs them (kQuantKinds: amax, quantize).
struct Quantization {
  std::array<double, 2> bytes_per_element{};  // by kQuantKinds
  std::array<double, 2> kernels{};
  double total_bytes() const { return bytes_per_element[0] + bytes_per_element[1]; }
  double total_kernels() const { return kernels[0] + kernels[1]; }
};

// One recipe (docs/fp8.md; Transformer Engine's FP8 primer and performance guide: every FP8 GEMM
// on Hopper reads both operands in the layout it needs, so a tensor is quantized into a row-wise
// and a column-wise copy):
//   delayed: one fused cast-transpose kernel reads 2 bytes and writes both copies (1 + 1); the
//     amax comes with it. A norm's output quantized inside the norm (TE's LayerNormLinear): the
//     norm writes FP8 in place of bf16 and the saved copy is transposed in the backward (1 + 1).
//   current: an amax pass (read 2) before the same kernel; nothing fused into the norms.
//   mxfp8: one cast writes both copies and their e8m0 scales (1 + 1/32 each; Blackwell's tensor
//     cores read either layout, so nothing is transposed); fused into a norm, its scales (2/32).
//   nvfp4: an amax pass for the per-tensor scale (read 2), then one cast writing the row-wise and
//     the column-wise copy (the latter Hadamard-transformed for the weight gradient inside the
//     same kernel), 4 bits and an e4m3 scale per 16 elements each (0.5 + 1/16); nothing fused
//     into the norms. Assumed from the recipe's description, not measured.
inline constexpr double kNvfp4Bytes = 0.5 + 1.0 / 16;  // an element's bytes with its block scale
inline constexpr double kMxScale = 1.0 / 32;  // an e8m0 scale byte per 32 elements
struct LowPrecisionRecipe {
  Fp8Recipe id;
  const char* name;             // a runtime file's fp8_recipe
  Precision data_type;          // its GEMMs' (none: FP8, so a layout's peak is FP8's)
  Quantization input;           // a tensor quantized by its own kernels
  Quantization fused;           // a norm's output quantized inside the norm (fp8_fused_casts)
  bool fuses;                   // whether a norm can quantize its output
  bool fused_in_backward;       // the fused quantization's remaining work runs in the backward
  double cached_weight_bytes;   // per weight element kept between micro-batches (weight caching)
  const char* launch_kind;      // the frameworks' argument names: "fp8" (--fp8-format ...) or "fp4"
  const char* megatron_format;  // Megatron-LM's --fp8-format (NeMo's trainer.plugins.fp8)
  const char* megatron;         // Megatron-LM's --fp8-recipe (Megatron-Core's fp8_recipe)
};
inline constexpr LowPrecisionRecipe kLowPrecisionRecipes[] = {
    {.id = Fp8Recipe::None, .name = "none", .data_type = Precision::Fp8, .input = {}, .fused = {}, .fuses = false,
     .fused_in_backward = false, .cached_weight_bytes = 0, .launch_kind = "fp8", .megatron_format = "",
     .megatron = ""},
    {.id = Fp8Recipe::Delayed, .name = "delayed", .data_type = Precision::Fp8,
     .input = {.bytes_per_element = {0, 4}, .kernels = {0, 1}},
     .fused = {.bytes_per_element = {0, 2}, .kernels = {0, 1}}, .fuses = true, .fused_in_backward = true,
     .cached_weight_bytes = 2, .launch_kind = "fp8", .megatron_format = "hybrid", .megatron = "delayed"},
    {.id = Fp8Recipe::Current, .name = "current", .data_type = Precision::Fp8,
     .input = {.bytes_per_element = {2, 4}, .kernels = {1, 1}},
     .fused = {.bytes_per_element = {2, 4}, .kernels = {1, 1}}, .fuses = false, .fused_in_backward = false,
     .cached_weight_bytes = 2, .launch_kind = "fp8", .megatron_format = "hybrid", .megatron = "tensorwise"},
    {.id = Fp8Recipe::Mxfp8, .name = "mxfp8", .data_type = Precision::Mxfp8,
     .input = {.bytes_per_element = {0, 4 + 2 * kMxScale}, .kernels = {0, 1}},
     .fused = {.bytes_per_element = {0, 2 * kMxScale}, .kernels = {0, 0}}, .fuses = true, .fused_in_backward = false,
     .cached_weight_bytes = 2 + 2 * kMxScale, .launch_kind = "fp8", .megatron_format = "hybrid", .megatron = "mxfp8"},
    {.id = Fp8Recipe::Nvfp4, .name = "nvfp4", .data_type = Precision::Nvfp4,
     .input = {.bytes_per_element = {2, 2 + 2 * kNvfp4Bytes}, .kernels = {1, 1}},
     .fused = {.bytes_per_element = {2, 2 + 2 * kNvfp4Bytes}, .kernels = {1, 1}}, .fuses = false,
     .fused_in_backward = false, .cached_weight_bytes = 2 * kNvfp4Bytes, .launch_kind = "fp4",
     .megatron_format = "e2m1", .megatron = "nvfp4"},
};
constexpr const LowPrecisionRecipe& recipe_of(Fp8Recipe r) { return kLowPrecisionRecipes[static_cast<std::size_t>(r)]; }
// The recipe a layout's linear layers run: its data type's own (mxfp8, nvfp4), else the runtime's
// (`runtime_recipe`: fp8 as the framework runs it; bf16 runs none of them).
constexpr Fp8Recipe layout_recipe(Precision p, Fp8Recipe runtime_recipe) {
  const Fp8Recipe own = data_type(p).recipe;
  return own != Fp8Recipe::None ? own : runtime_recipe;
}

}  // namespace perfsweep
