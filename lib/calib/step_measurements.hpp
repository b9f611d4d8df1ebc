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

// One measured kernel. `kind` names what it runs and which shape fields it has:
//   rmsnorm (n, e), swiglu_gate (n, f), gemm (n, k, m), attention (b, h, kv, l, d, causal),
//   embedding (V, e, n), lm_head_loss (V, e, n; peak_extra_bytes), adamw (N, chunk), cast (N),
//   fp8_gemm (n, k, m; read, not modelled).
struct KernelMeasurement {
  std::string id, kind;
  std::int64_t n = 0, e = 0, f = 0, k = 0, m = 0;  // tokens, widths, GEMM (n x k)(k x m)
  std::int64_t b = 0, h = 0, kv = 0, l = 0, d = 0;  // attention
  bool causal = false;
  std::int64_t vocab = 0;                          // V
  std::int64_t elements = 0, chunk = 0;            // N, chunk (adamw, cast)
  std::array<double, 2> t{};                       // [forward_s, backward_s]; backward 0 where none
  double peak_extra_bytes = 0;                     // lm_head_loss
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
