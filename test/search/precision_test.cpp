// FP8 precision (model/precision.hpp, Execution::precision, the runtimes' fp8_* keys): the bytes
// and kernels of a GEMM in FP8 derived by hand from the recipes, the layers that run in FP8,
// a runtime's FP8 keys inert at bf16, the weight quantization per step or per micro-batch, the
// checks that refuse what cannot run FP8, and the search trying both precisions as evaluate
// costs them.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/layouts.hpp"
#include "config/inputs.hpp"
#include "config/runtime_file.hpp"
#include "core/error.hpp"
#include "io/launch.hpp"
#include "model/precision.hpp"
#include "model/roofline.hpp"
#include "model/runtime.hpp"
#include "model/step.hpp"
#include "search/search.hpp"

namespace perfsweep {
namespace {

const std::filesystem::path kRoot = PERFSWEEP_SOURCE_DIR;

System h100() { return load_system(kRoot / "systems" / "H100.yaml"); }

using test::one_d;

// fc1 of a 4096 -> 16384 MLP over 2048 tokens, tensor-parallel over 4: (2048 x 4096)(4096 x 4096).
constexpr std::int64_t kRows = 2048, kDepth = 4096, kCols = 4096;
const BlockLayer kFc1{"fc1", Sublayer::Mlp, Role::ColumnProjection, Operand::Hidden, 4096, 16384};
const BlockLayer kVproj{"vproj", Sublayer::Attention, Role::RowProjection, Operand::Residual, 4096, 4096};

// column-parallel: the 16384 output features over 4 GPUs, all 4 in the NVLink domain
LayerCost fc1(const System& s) { return gemm(s, "fc1", {kRows, 4096, 16384 / 4, 4096, 16384}, {{}, {4, 4}}); }

TEST(Fp8, GemmBytesAndQuantizationByHand) {
  const System s = h100();
  const double x = kRows * kDepth, y = kRows * kCols, w = kDepth * kCols;  // elements
  LayerCost c = fc1(s);
  ASSERT_EQ(c.shape.rows, kRows);
  ASSERT_EQ(c.shape.depth, kDepth);
  ASSERT_EQ(c.shape.cols, kCols);
  ASSERT_DOUBLE_EQ(c.activation_buffer, x * 2e-9);
  // Delayed scaling, the norm's output quantized inside the norm: no forward kernel; in the
  // backward the output gradient's cast-transpose (read 2, write 1 + 1) and the saved input's
  // transpose (read 1, write 1).
  to_fp8(s, kFc1, Fp8Policy{Fp8Recipe::Delayed, true}, c);
  EXPECT_EQ(c.precision, Precision::Fp8);
  EXPECT_DOUBLE_EQ(c.mem_fwd, (x + w) * 1e-9 + y * 2e-9);                               // X, W in FP8; Y bf16
  EXPECT_DOUBLE_EQ(c.mem_bwd, (y + w) * 1e-9 + x * 2e-9 + (x + y) * 1e-9 + w * 2e-9);  // dgrad, wgrad
  EXPECT_DOUBLE_EQ(c.activation_buffer, x * 1e-9);                                      // saved in FP8
  // per pass, [amax, quantize] (kQuantKinds)
  using Parts = std::array<double, 2>;
  const auto expect_parts = [](const QuantWork& work, Parts gb, Parts launched) {
    for (std::size_t i = 0; i < 2; ++i) {
      EXPECT_DOUBLE_EQ(work.gb[i], gb[i]) << kernels::kStreamKindNames[static_cast<std::size_t>(kQuantKinds[i])];
      EXPECT_EQ(work.kernels[i], launched[i]) << kernels::kStreamKindNames[static_cast<std::size_t>(kQuantKinds[i])];
    }
  };
  // Transformer Engine's cast-transpose and FP8 transpose both on the plain cast's curve
  expect_parts(c.quant[0], {0, 0}, {0, 0});
  expect_parts(c.quant[1], {0, (4 * y + 2 * x) * 1e-9}, {0, 2});
  EXPECT_DOUBLE_EQ(c.quant[1].total_gb(), (4 * y + 2 * x) * 1e-9);
  // Without the fused norm: the input's cast-transpose in the forward (4 bytes an element).
  c = fc1(s);
  to_fp8(s, kFc1, Fp8Policy{Fp8Recipe::Delayed, false}, c);
  expect_parts(c.quant[0], {0, 4 * x * 1e-9}, {0, 1});
  expect_parts(c.quant[1], {0, 4 * y * 1e-9}, {0, 1});
  // Current scaling: an amax pass (read 2) before each cast-transpose, never fused; inputs kept
  // in bf16 where the policy says so.
  c = fc1(s);
  to_fp8(s, kFc1, Fp8Policy{Fp8Recipe::Current, true, false, false, false, false}, c);
  expect_parts(c.quant[0], {2 * x * 1e-9, 4 * x * 1e-9}, {1, 1});
  expect_parts(c.quant[1], {2 * y * 1e-9, 4 * y * 1e-9}, {1, 1});
  EXPECT_DOUBLE_EQ(c.quant[0].total_gb(), 6 * x * 1e-9);
  EXPECT_DOUBLE_EQ(c.activation_buffer, x * 2e-9);
  // MXFP8 on the output projection (no norm before it): both copies and a scale byte per 32
  // elements of each, one plain cast (nothing transposed).
  c = gemm(s, "vproj", {kRows, 4096 / 4, 4096, 4096, 4096}, {{4, 4}, {}});  // row-parallel over 4
  const double xv = kRows * 1024.0, yv = kRows * 4096.0;
  to_fp8(s, kVproj, Fp8Policy{Fp8Recipe::Mxfp8, true}, c);
  EXPECT_EQ(c.precision, Precision::Mxfp8);
  expect_parts(c.quant[0], {0, (4 + 2.0 / 32) * xv * 1e-9}, {0, 1});
  expect_parts(c.quant[1], {0, (4 + 2.0 / 32) * yv * 1e-9}, {0, 1});
}

// The quantization kernels timed by recipe on a calibration with the quantization kinds: each
// kind's launches plus its bytes at its bandwidth, by hand; without them, the totals on the cast
// curve (a calibration fitted before the fp8_cast measurements).
TEST(Fp8, QuantizationSecondsByRecipe) {
  System s = h100();
  kernels::Calibration cal;
  const auto set = [&](kernels::StreamKind k, double fraction, double launch) {
    cal.stream[static_cast<std::size_t>(k)] = {kernels::StreamModel{fraction, launch}, kernels::StreamModel{fraction, launch}};
    cal.stream_fitted[static_cast<std::size_t>(k)] = true;
  };
  set(kernels::StreamKind::Cast, 0.9, 20e-6);
  s.kernel_calibration = std::make_shared<const kernels::Calibration>(cal);
  QuantWork w;
  add_quantization(w, recipe_of(Fp8Recipe::Current).input, 1.0);  // a tensor of 1e9 elements
  // no quantization kinds: 6 GB and 2 kernels on the cast curve
  EXPECT_DOUBLE_EQ(quantization_seconds(s, w), 2 * 20e-6 + 6 / (3350 * 0.9));
  set(kernels::StreamKind::Amax, 0.8, 9e-6);
  set(kernels::StreamKind::Quantize, 0.9, 6e-6);
  s.kernel_calibration = std::make_shared<const kernels::Calibration>(cal);
  // current scaling: the amax pass (2 GB) and the cast-transpose (4 GB), each on its curve
  EXPECT_DOUBLE_EQ(quantization_seconds(s, w), (9e-6 + 2 / (3350 * 0.8)) + (6e-6 + 4 / (3350 * 0.9)));
  QuantWork m;
  add_quantization(m, recipe_of(Fp8Recipe::Mxfp8).input, 1.0);
  EXPECT_DOUBLE_EQ(quantization_seconds(s, m), 6e-6 + (4 + 2.0 / 32) / (3350 * 0.9));
}

TEST(Fp8, WhichLayersRunInFp8) {
  const Fp8Policy te{Fp8Recipe::Delayed, true, true};
  const Transformer m = load_model(kRoot / "models" / "llama3_8b.yaml");
  int fp8 = 0;
  for (const BlockLayer& y : describe_block(m, {})) fp8 += runs_fp8(y, te) ? 1 : 0;
  EXPECT_EQ(fp8, 4);  // fc1, fc2, qkv, vproj; not the attention core, norms or the activation
  const StageEnds ends = describe_stage_ends(m, 2);
  EXPECT_FALSE(runs_fp8(ends.last.layers[1], te));  // the LM head in bf16 by default
  Fp8Policy head = te;
  head.lm_head = true;
  EXPECT_TRUE(runs_fp8(ends.last.layers[1], head));
  EXPECT_FALSE(runs_fp8(kFc1, Fp8Policy{}));  // a runtime without a recipe runs none
  const BlockLayer router{"router", Sublayer::Mlp, Role::Router, Operand::Residual, 4096, 8};
  EXPECT_FALSE(runs_fp8(router, te));
}

// Transformer Engine gathers a sequence-parallel GEMM input in the GEMM's data type
// (Fp8Policy::quantized_gather): Llama 3 8B, one sequence, tp 4. The norm before qkv gathers
// l x e elements (8192 x 4096) at 2 bytes in bf16 and 1 in FP8, the column projection's re-gather
// in the backward likewise, while the reduce-scatters of the gradients stay bf16; NVFP4 gathers
// 4 bits and an e4m3 scale per 16 elements (0.5625 bytes). An MoE layer's norm feeds its router and
// token dispatcher, which gather in bf16; the final norm gathers in FP8 only with the LM head.
TEST(Fp8, GathersTheQuantizedInput) {
  const Transformer m = load_model(kRoot / "models" / "llama3_8b.yaml");
  ASSERT_EQ(m.l, 8192);
  ASSERT_EQ(m.e, 4096);
  const double elements = 8192.0 * 4096;
  const std::vector<BlockLayer> block = describe_block(m, {});
  const auto named = [&](const std::vector<BlockLayer>& layers, const char* name) {
    for (const BlockLayer& y : layers) {
      if (std::string(y.name) == name) return y;
    }
    throw ConfigError(std::string("no layer ") + name);
  };
  const TensorSplit split{4, 1, 4, 1, 1};
  Execution x;
  x.precision = Precision::Fp8;
  Mechanisms gathered;
  gathered.sp_backward_gather = true;
  gathered.fp8 = Fp8Policy{Fp8Recipe::Delayed, true};
  Mechanisms quantized = gathered;
  quantized.fp8.quantized_gather = true;
  const System s = h100();
  const auto cost = [&](const BlockLayer& y, const Mechanisms& mech, const Execution& e) {
    return shard_layer(s, Strategy::OneD, y, 1, m, split, {}, e, mech);
  };
  for (const char* norm : {"ln1", "ln2"}) {
    const LayerCost plain = cost(named(block, norm), gathered, x), fp8 = cost(named(block, norm), quantized, x);
    ASSERT_EQ(fp8.comm_fwd.items[0].type, CommType::AllGather);
    EXPECT_DOUBLE_EQ(plain.comm_fwd.items[0].volume_gb, elements * 2e-9) << norm;
    EXPECT_DOUBLE_EQ(fp8.comm_fwd.items[0].volume_gb, elements * 1e-9) << norm;
    EXPECT_DOUBLE_EQ(fp8.comm_bwd.items[0].volume_gb, elements * 2e-9) << norm;  // the gradient's reduce-scatter
  }
  for (const char* gemm : {"qkv", "fc1"}) {
    const LayerCost fp8 = cost(named(block, gemm), quantized, x);
    ASSERT_EQ(fp8.comm_bwd.count, 2);
    EXPECT_EQ(fp8.comm_bwd.items[0].type, CommType::ReduceScatter);
    EXPECT_DOUBLE_EQ(fp8.comm_bwd.items[0].volume_gb, elements * 2e-9) << gemm;
    EXPECT_EQ(fp8.comm_bwd.items[1].type, CommType::AllGather);
    EXPECT_DOUBLE_EQ(fp8.comm_bwd.items[1].volume_gb, elements * 1e-9) << gemm;
  }
  // bf16 layouts and runtimes that gather in bf16 move 2 bytes
  Execution bf16 = x;
  bf16.precision = Precision::Bf16;
  EXPECT_DOUBLE_EQ(cost(named(block, "ln1"), quantized, bf16).comm_fwd.items[0].volume_gb, elements * 2e-9);
  EXPECT_DOUBLE_EQ(cost(named(block, "qkv"), quantized, bf16).comm_bwd.items[1].volume_gb, elements * 2e-9);
  Execution nvfp4 = x;
  nvfp4.precision = Precision::Nvfp4;
  Mechanisms nvfp4_quantized = quantized;
  nvfp4_quantized.fp8.recipe = Fp8Recipe::Nvfp4;
  nvfp4_quantized.fp8.fused_casts = false;
  EXPECT_DOUBLE_EQ(cost(named(block, "ln1"), nvfp4_quantized, nvfp4).comm_fwd.items[0].volume_gb,
                   elements * 0.5625e-9);
  // the final norm: bf16 for a bf16 LM head, FP8 for an FP8 one
  const BlockLayer ln_f = describe_stage_ends(m, 2).last.layers[0];
  ASSERT_EQ(std::string(ln_f.name), "ln_f");
  EXPECT_DOUBLE_EQ(cost(ln_f, quantized, x).comm_fwd.items[0].volume_gb, elements * 2e-9);
  Mechanisms head = quantized;
  head.fp8.lm_head = true;
  EXPECT_DOUBLE_EQ(cost(ln_f, head, x).comm_fwd.items[0].volume_gb, elements * 1e-9);
  // an MoE layer's norm before its router
  const Transformer moe = load_model(kRoot / "models" / "mixtral_8x7b.yaml");
  const BlockLayer moe_norm = named(describe_block(moe, {}), "ln2");
  const LayerCost moe_cost = shard_layer(s, Strategy::OneD, moe_norm, 1, moe, split, {}, x, quantized);
  EXPECT_DOUBLE_EQ(moe_cost.comm_fwd.items[0].volume_gb, static_cast<double>(moe.l * moe.e) * 2e-9);
}

// A runtime's FP8 keys change nothing while the layout is bf16.
TEST(Fp8, RuntimeKeysAreInertAtBf16) {
  const System s = load_system(kRoot / "systems" / "H100-calibrated.yaml");
  const Transformer m = load_model(kRoot / "models" / "llama3_8b.yaml");
  Runtime plain = load_runtime_named("megatron");
  const Runtime with_fp8 = plain;
  plain.mechanisms.fp8 = Fp8Policy{};
  const Layout c = one_d(2, 4, 1);
  const Evaluation a = evaluate(s, m, plain, c, 64), b = evaluate(s, m, with_fp8, c, 64);
  for (const TotalsField& f : kTotalsFields) EXPECT_EQ(a.totals.*f.member, b.totals.*f.member) << f.name;
  for (const TotalsField& f : kRuntimeTotalsFields) EXPECT_EQ(a.totals.*f.member, b.totals.*f.member) << f.name;
  EXPECT_EQ(a.throughput, b.throughput);
}

// FP8 on a calibrated H100: faster GEMMs, smaller activations, the quantization kernels counted;
// without weight caching the weights are quantized for every micro-batch instead of once.
TEST(Fp8, StepOnCalibratedH100) {
  const System s = load_system(kRoot / "systems" / "H100-calibrated.yaml");
  ASSERT_TRUE(s.kernel_calibration->gemm_fitted[static_cast<std::size_t>(kernels::GemmType::Fp8)]);
  const Transformer m = load_model(kRoot / "models" / "llama3_8b.yaml");
  const Runtime rt = load_runtime_named("megatron");
  Layout c = one_d(2, 4, 1);
  const Evaluation bf16 = evaluate(s, m, rt, c, 64);
  c.exec.precision = Precision::Fp8;
  const Evaluation fp8 = evaluate(s, m, rt, c, 64);
  EXPECT_LT(fp8.totals.t, bf16.totals.t);
  EXPECT_GT(fp8.totals.t, bf16.totals.t / 2);  // far from the spec sheet's 2x
  EXPECT_LT(fp8.totals.acts_mem, bf16.totals.acts_mem);
  EXPECT_GT(fp8.totals.t_optimizer, bf16.totals.t_optimizer);  // the weights' quantization
  // Weight quantization per micro-batch: 16 micro-batches instead of once per step.
  Runtime no_cache = rt;
  no_cache.mechanisms.fp8.weight_cache = false;
  const Evaluation every = evaluate(s, m, no_cache, c, 64);
  const double fp8_params = 8030261248.0 / 2;  // an upper bound: all of a tp=2 GPU's parameters
  QuantWork weights;
  add_quantization(weights, recipe_of(rt.mechanisms.fp8.recipe).input, fp8_params * 1e-9);
  for (double& k : weights.kernels) k *= 4 * 32;
  const double once = quantization_seconds(s, weights);
  EXPECT_GT(every.totals.t_optimizer - fp8.totals.t_optimizer, 0);
  EXPECT_LT(every.totals.t_optimizer - fp8.totals.t_optimizer, 15 * once);
  // and the cached FP8 copies are gone from the peak
  EXPECT_LT(every.totals.mem, fp8.totals.mem);
}

// FP8 parameters (--fp8-params, Megatron-LM's --fp8-param-gather): the FP8 GEMMs' bf16 weights
// are not kept, their FP8 value and transposed copy are the weights. Llama 3 8B's FP8 GEMMs per
// block, worked by hand: qkv 4096 x (4096 + 2 x 1024), proj 4096 x 4096, fc1 4096 x 2 x 14336
// (SwiGLU), fc2 14336 x 4096 = 218,103,808; 32 blocks, tp 2: 3,489,660,928 per GPU, 2 bytes each
// (nemo's bf16 weights) less at the peak. The distributed optimizer gathers them in FP8: the step
// is no slower. Off under ZeRO 0 (Megatron-LM needs the distributed optimizer) and at bf16.
TEST(Fp8, Fp8ParamsReplaceTheBf16WeightsByHand) {
  const System s = load_system(kRoot / "systems" / "H100-calibrated.yaml");
  const Transformer m = load_model(kRoot / "models" / "llama3_8b.yaml");
  const Runtime rt = load_runtime_named("nemo");
  ASSERT_FALSE(runtime_defaults(rt).fp8_params);  // nemo's fp8_weight_gather
  Layout c = one_d(2, 4, 1);
  c.exec.precision = Precision::Fp8;
  const Evaluation plain = evaluate(s, m, rt, c, 64);
  c.exec.fp8_params = true;
  const Evaluation params = evaluate(s, m, rt, c, 64);
  const double fp8_gemm_params = 32.0 * 218103808 / 2;
  EXPECT_NEAR(plain.totals.mem - params.totals.mem, 2 * fp8_gemm_params * 1e-9, 1e-9);
  EXPECT_LE(params.totals.t, plain.totals.t);
  c.exec.zero = 0;
  Layout z0 = c;
  z0.exec.fp8_params = false;
  EXPECT_EQ(evaluate(s, m, rt, c, 64).totals.mem, evaluate(s, m, rt, z0, 64).totals.mem);
  c.exec.zero = 1;
  c.exec.precision = Precision::Bf16;
  z0 = c;
  z0.exec.fp8_params = false;
  EXPECT_EQ(evaluate(s, m, rt, c, 64).totals.mem, evaluate(s, m, rt, z0, 64).totals.mem);
}

std::string config_error(const System& s, const Transformer& m, const Runtime& rt, const Layout& c) {
  try {
    evaluate(s, m, rt, c, 64);
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return {};
}

TEST(Fp8, RefusedWhereItCannotRun) {
  const Transformer m = load_model(kRoot / "models" / "llama3_8b.yaml");
  Layout c = one_d(2, 4, 1);
  c.exec.precision = Precision::Fp8;
  const Runtime mg = load_runtime_named("megatron");
  EXPECT_NE(config_error(load_system(kRoot / "systems" / "A100.yaml"), m, mg, c).find("matrix_flops_fp8"),
            std::string::npos);
  EXPECT_NE(config_error(h100(), m, load_runtime_named("deepspeed"), c).find("runs no FP8"), std::string::npos);
  Runtime mx = mg;
  mx.mechanisms.fp8.recipe = Fp8Recipe::Mxfp8;
  EXPECT_NE(config_error(h100(), m, mx, c).find("matrix_flops_mxfp8"), std::string::npos);
  c.strategy = Strategy::TwoDSeqp;
  c.tensor.tp2 = 1;
  Runtime any = mg;
  any.strategies = 0x7;
  EXPECT_NE(config_error(h100(), m, any, c).find("1d"), std::string::npos);
  EXPECT_THROW(parse_option_value(*find_execution_option("precision"), "fp16", "--precision"), InputError);
}

// NVFP4 (a runtime's fp8_recipe nvfp4, Transformer Engine's NVFP4BlockScaling) on the output
// projection of the test above: the GEMM's data type and its peak are FP4's (B200's 10 PFLOP/s, a
// spec sheet's, twice its FP8 peak), operands at 4 bits plus an e4m3 scale per 16 elements
// (0.5625 bytes an element), outputs bf16; each tensor an amax pass (read 2) and one cast
// writing both copies (read 2, write 2 x 0.5625); the saved input kept at 0.5625 bytes.
TEST(Fp8, Nvfp4ByHand) {
  const System s = load_system(kRoot / "systems" / "B200.yaml");
  LayerCost c = gemm(s, "vproj", {kRows, 4096 / 4, 4096, 4096, 4096}, {{4, 4}, {}});
  const double x = kRows * 1024.0, y = kRows * 4096.0, w = 1024.0 * 4096;
  const double bf16_compute = compute_seconds(s, KernelClass::Gemm, c.flops_fwd * 1e-12, Precision::Bf16);
  to_fp8(s, kVproj, Fp8Policy{Fp8Recipe::Nvfp4, true, false, false, false, true}, c);
  EXPECT_EQ(c.precision, Precision::Nvfp4);
  EXPECT_EQ(tensor_peak(s, c.precision), s.matrix_flops_fp4);
  EXPECT_EQ(s.matrix_flops_fp4, 2 * s.matrix_flops_fp8);
  EXPECT_LT(compute_seconds(s, KernelClass::Gemm, c.flops_fwd * 1e-12, c.precision), bf16_compute);
  const double b = 0.5625e-9;  // GB an element
  EXPECT_DOUBLE_EQ(c.mem_fwd, (x + w) * b + y * 2e-9);
  EXPECT_DOUBLE_EQ(c.mem_bwd, (y + w) * b + x * 2e-9 + (x + y) * b + w * 2e-9);
  EXPECT_DOUBLE_EQ(c.activation_buffer, x * b);
  for (const auto& [pass, elements] : {std::pair<std::size_t, double>{0, x}, std::pair<std::size_t, double>{1, y}}) {
    EXPECT_DOUBLE_EQ(c.quant[pass].gb[0], 2 * elements * 1e-9);
    EXPECT_DOUBLE_EQ(c.quant[pass].gb[1], (2 + 2 * 0.5625) * elements * 1e-9);
    EXPECT_EQ(c.quant[pass].kernels[0], 1);
    EXPECT_EQ(c.quant[pass].kernels[1], 1);
  }
  // a layout under such a runtime: refused where the system gives no FP4 peak, and its
  // Megatron-LM line in FP4's arguments
  const Transformer m = load_model(kRoot / "models" / "llama3_8b.yaml");
  Layout l = one_d(2, 4, 1);
  l.exec.precision = Precision::Fp8;
  Runtime rt = load_runtime_named("megatron");
  rt.mechanisms.fp8.recipe = Fp8Recipe::Nvfp4;
  EXPECT_NE(config_error(h100(), m, rt, l).find("gives no matrix_flops_fp4 (no FP4 tensor cores)"), std::string::npos);
  const Evaluation fp4 = evaluate(s, m, rt, l, 64);
  Runtime mx = rt;
  mx.mechanisms.fp8.recipe = Fp8Recipe::Mxfp8;
  EXPECT_LT(fp4.totals.t_comp, evaluate(s, m, mx, l, 64).totals.t_comp);
  // its MFU of the FP4 peak, named as the data type (the report's "% of the nvfp4 peak")
  EXPECT_EQ(fp4.efficiency.peak_type, Precision::Nvfp4);
  EXPECT_DOUBLE_EQ(fp4.efficiency.mfu_precision, fp4.efficiency.model_tflops_per_gpu / s.matrix_flops_fp4);
  const std::string line = launch_arguments_text(launch_line(LaunchFramework::Megatron, {m, l, rt, 64, 8}));
  EXPECT_NE(line.find("--fp4-format e2m1 --fp4-recipe nvfp4"), std::string::npos) << line;
  EXPECT_EQ(line.find("--fp8-"), std::string::npos) << line;
}

// A data type asked for by name (--precision nvfp4, mxfp8) runs its own recipe under the runtime's
// other FP8 settings: bit for bit the layout asking for fp8 under a runtime whose fp8_recipe is
// that recipe; refused (naming the data type and the peak) on a system without its tensor cores, and
// dropped from a search's list there; its launch line the recipe's arguments.
TEST(Fp8, DataTypeByNameRunsItsRecipe) {
  const System b200 = load_system(kRoot / "systems" / "B200-calibrated.yaml");
  const Transformer m = load_model(kRoot / "models" / "llama3_8b.yaml");
  const Runtime nemo = load_runtime_named("nemo");
  ASSERT_EQ(nemo.mechanisms.fp8.recipe, Fp8Recipe::Current);
  for (const auto& [type, recipe] : {std::pair{Precision::Nvfp4, Fp8Recipe::Nvfp4}, std::pair{Precision::Mxfp8, Fp8Recipe::Mxfp8}}) {
    SCOPED_TRACE(kPrecisionNames[static_cast<std::size_t>(type)]);
    Layout named = one_d(2, 4, 1);
    named.exec.precision = type;
    Layout fp8 = named;
    fp8.exec.precision = Precision::Fp8;
    Runtime as_recipe = nemo;
    as_recipe.mechanisms.fp8.recipe = recipe;
    const Evaluation a = evaluate(b200, m, nemo, named, 64), b = evaluate(b200, m, as_recipe, fp8, 64);
    for (const TotalsField& f : kTotalsFields) EXPECT_EQ(a.totals.*f.member, b.totals.*f.member) << f.name;
    EXPECT_EQ(a.efficiency.peak_type, type);
  }
  Layout fp4 = one_d(2, 4, 1);
  fp4.exec.precision = Precision::Nvfp4;
  EXPECT_NE(config_error(h100(), m, nemo, fp4).find("nvfp4 precision: system H100 gives no matrix_flops_fp4 (no FP4 tensor cores)"),
            std::string::npos)
      << config_error(h100(), m, nemo, fp4);
  ExecutionChoices c;
  c.precision = {Precision::Bf16, Precision::Fp8, Precision::Nvfp4};
  std::vector<std::string> dropped;
  check_runtime_choices(h100(), nemo, Strategy::OneD, c, &dropped);
  EXPECT_EQ(c.precision, (std::vector<Precision>{Precision::Bf16, Precision::Fp8}));
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_NE(dropped[0].find("--precision nvfp4 dropped for 1d"), std::string::npos) << dropped[0];
  const std::string line = launch_arguments_text(launch_line(LaunchFramework::Megatron, {m, fp4, nemo, 64, 8}));
  EXPECT_NE(line.find("--fp4-format e2m1 --fp4-recipe nvfp4"), std::string::npos) << line;
  EXPECT_EQ(line.find("--fp8-"), std::string::npos) << line;
}

// Before any work (sweep, configs, estimate): fp8 is dropped from a list where the runtime, the
// strategy or the system cannot run it, and refused when nothing is left.
TEST(Fp8, ChoicesCheckedBeforeTheSearch) {
  const System a100 = load_system(kRoot / "systems" / "A100.yaml");
  const Runtime mg = load_runtime_named("megatron");
  ExecutionChoices both;
  both.precision = {Precision::Bf16, Precision::Fp8};
  ExecutionChoices c = both;
  check_runtime_choices(h100(), mg, Strategy::OneD, c);
  EXPECT_EQ(c.precision, both.precision);
  c = both;
  check_runtime_choices(a100, mg, Strategy::OneD, c);
  EXPECT_EQ(c.precision, std::vector<Precision>{Precision::Bf16});
  auto refusal = [&](const System& s, const Runtime& rt, Strategy strategy) -> std::string {
    ExecutionChoices only;
    only.precision = {Precision::Fp8};
    try {
      check_runtime_choices(s, rt, strategy, only);
    } catch (const InputError& e) {
      return e.what();
    }
    ADD_FAILURE() << "accepted";
    return {};
  };
  EXPECT_NE(refusal(a100, mg, Strategy::OneD).find("matrix_flops_fp8"), std::string::npos);
  EXPECT_NE(refusal(h100(), load_runtime_named("deepspeed"), Strategy::OneD).find("runs no FP8"), std::string::npos);
  Runtime any = mg;
  any.strategies = 0x7;
  EXPECT_NE(refusal(h100(), any, Strategy::TwoD).find("1d"), std::string::npos);
  EXPECT_EQ(parse_option_value(*find_execution_option("precision"), "fp8", "--precision"),
            static_cast<std::int64_t>(Precision::Fp8));
}

// The search tries bf16 and fp8 and ranks each configuration as evaluate costs it.
TEST(Fp8, SearchTriesBothPrecisions) {
  SearchProblem p;
  p.model = load_model(kRoot / "models" / "llama3_8b.yaml");
  p.system = load_system(kRoot / "systems" / "H100-calibrated.yaml");
  p.global_batch = 128;
  p.runtime = load_runtime_named("megatron");
  p.exec.precision = {Precision::Bf16, Precision::Fp8};
  Searcher searcher(p);
  SearchCounters counters;
  const TopN top = searcher.run_all(16, counters);
  ASSERT_FALSE(top.items().empty());
  EXPECT_EQ(top.items().front().layout.exec.precision, Precision::Fp8);
  for (const Candidate& c : top.items()) {
    const Evaluation ev = evaluate(p.system, p.model, p.runtime, c.layout, p.global_batch);
    EXPECT_EQ(ev.throughput, c.throughput);
    for (const TotalsField& f : kTotalsFields) EXPECT_EQ(ev.totals.*f.member, c.totals.*f.member) << f.name;
  }
}

}  // namespace
}  // namespace perfsweep
