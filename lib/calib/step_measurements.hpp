#pragma once
// GPU measurements of a whole training step's pieces, in the formats of validation/gpu:
// h100_kernels.json (measure_kernels.py: one kernel kind and shape per entry, forward and
// backward seconds) and h100_train.json (measure_train.py: whole training steps on one GPU,
// step time and peak memory, or out of memory).
#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "model/transformer.hpp"

namespace perfsweep::calib {

// The quantization kernels of an fp8_cast measurement (measure_fp8.py), each on a bf16 tensor of
// rows x cols elements: a reduction for the amax, abs then max, the scaled cast to e4m3 (two
// kernels), the plain cast, the transposed copy of an e4m3 tensor, the scaled cast of an fp32
// copy, and amax + scaled cast + transposed copy in one torch.compile'd function.
enum class CastOp : std::uint8_t { Amax, AmaxUnfused, CastScaled, CastPlain, TransposeFp8, CastFromFp32, FusedCastTranspose };
inline constexpr std::size_t kCastOpCount = 7;
inline constexpr std::array<const char*, kCastOpCount> kCastOpNames{
    "amax", "amax_unfused", "cast_scaled", "cast_plain", "transpose_fp8", "cast_from_fp32", "fused_cast_transpose_amax"};

// One measured kernel. `kind` names what it runs and which shape fields it has:
//   rmsnorm (n, e), swiglu_gate (n, f), gemm (n, k, m), attention (b, h, kv, l, d, causal; lk the
//   keys where they differ from the queries, as a ring-attention chunk), embedding (V, e, n),
//   lm_head_loss (V, e, n; peak_extra_bytes), adamw (N, chunk), cast (N), fp8_gemm (n, k, m),
//   fp8_linear (n, k, m: one linear layer's fprop, dgrad and wgrad GEMMs in FP8 and in bf16),
//   fp8_cast (rows, cols: the quantization kernels of CastOp), grouped_gemm (experts, tokens, k,
//   m: `experts` products (tokens x k)(k x m) in one kernel, forward only; dtype bf16 or fp8).
//   An attention may give `dv`, the values' head dimension where it differs from d (multi-head
//   latent attention's 192 / 128), and `window`, a causal sliding window of keys per query.
// Times: `t` as the file gives it. A file that also gives `t_iso` timed each kernel two ways: `t`
// in-stream (calls back to back, the host's launch hidden behind the queue) and `t_iso` isolated
// (each call between its own CUDA events); an entry with `result.in_stream: true` gives `t`
// in-stream alone; a file with `t` alone timed it isolated (h100_kernels.json).
struct KernelMeasurement {
  std::string id, kind;
  std::int64_t n = 0, e = 0, f = 0, k = 0, m = 0;  // tokens, widths, GEMM (n x k)(k x m)
  std::int64_t b = 0, h = 0, kv = 0, l = 0, d = 0;  // attention
  std::int64_t lk = 0;                             // attention keys; 0: l
  std::int64_t dv = 0;                             // attention values' head dimension; 0: d
  std::int64_t window = 0;                         // attention's sliding window (causal); 0: none
  bool causal = false;
  std::int64_t experts = 0, tokens = 0;            // grouped_gemm: experts of tokens (x k)(k x m)
  bool fp8 = false;                                // grouped_gemm: dtype fp8 (else bf16)
  std::int64_t vocab = 0;                          // V
  std::int64_t elements = 0, chunk = 0;            // N, chunk (adamw, cast)
  std::int64_t rows = 0, cols = 0;                 // fp8_cast
  std::string model, layer;                        // fp8_linear: the run and layer the shard is from
  std::int64_t tp = 0;                             // fp8_linear: its tensor-parallel degree
  std::array<double, 2> t{};                       // [forward_s, backward_s]; backward 0 where none
  bool in_stream = false;                          // t timed in-stream (the entry has t_iso)
  std::array<double, 2> t_iso{};                   // isolated, where in_stream
  double peak_extra_bytes = 0;                     // lm_head_loss, 0 where not measured
  // fp8_linear: each GEMM timed in-stream, [bf16, fp8][fprop, dgrad, wgrad] (kernels::GemmType,
  // kernels::GemmPass)
  std::array<std::array<double, 3>, 2> gemm_s{};
  // fp8_cast: [in-stream, isolated] seconds per CastOp; has_cast_op false where not measured
  std::array<std::array<double, 2>, kCastOpCount> cast_s{};
  std::array<bool, kCastOpCount> has_cast_op{};
};

// Reads and checks every entry (fields of its kind positive integers, times finite and
// positive, a backward time for the kinds that have one). InputErrors name file, entry, field.
std::vector<KernelMeasurement> read_kernel_measurements(const std::filesystem::path& file);

// One measured training step (measure_train.py): the model of `cfg` on one GPU, `micro_batches`
// micro-batches of `b` samples per optimizer step.
struct TrainRun {
  std::string id;
  Transformer model;                // vocabulary, GQA, SwiGLU, RMSNorm, biases, dropout, causal
  std::int64_t b = 0;               // micro-batch
  std::int64_t micro_batches = 1;   // m: gradient accumulation
  bool full_recompute = false;      // recompute: full (every block checkpointed)
  std::int64_t params = 0;          // as measured
  bool oom = false;                 // torch.OutOfMemoryError was raised
  double step_s = 0;                // 0 when oom
  double peak_allocated_gb = 0;     // torch.cuda.max_memory_allocated (where it stopped when oom)
  double peak_reserved_gb = 0;      // 0 when oom
};

// Reads and checks every run; InputErrors name file, entry (runs[i] (id)) and field.
std::vector<TrainRun> read_train_measurements(const std::filesystem::path& file);

}  // namespace perfsweep::calib
