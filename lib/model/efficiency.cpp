#include "model/efficiency.hpp"

#include "model/kernel_calibration.hpp"
#include "model/parameters.hpp"

namespace perfsweep {
namespace {
constexpr double D(std::int64_t v) { return static_cast<double>(v); }
}  // namespace

double model_flops_per_token(const Transformer& m) {
  const ParameterCount p = count_parameters(m);
  double n = D(p.active - p.embedding);
  if (m.vocab_size > 0 && p.head == 0) n += D(m.vocab_size) * D(m.e);  // a tied head multiplies by the table
  if (m.window == 0 && !m.is_mla()) return 6 * n + 12 * D(m.depth) * D(m.h * m.head_dim()) * D(m.l);
  // The score terms per block, 6 h (qk + v) l as PaLM counts them (12 h head_dim l), a windowed
  // block's by its window's share of causal attention.
  const double blocks = D(m.depth - m.windowed_blocks()) +
                        D(m.windowed_blocks()) * window_share_of_causal(m.l, m.window);
  return 6 * n + 6 * blocks * D(m.h * (m.qk_head_dim() + m.value_head_dim())) * D(m.l);
}

Efficiency efficiency(const Transformer& m, const System& s, std::int64_t n_gpus, std::int64_t global_batch,
                      double step_s) {
  Efficiency e;
  e.model_flops_per_token = model_flops_per_token(m);
  e.tokens_per_s = D(global_batch) * D(m.l) / step_s;
  e.tokens_per_s_per_gpu = e.tokens_per_s / D(n_gpus);
  e.model_tflops_per_gpu = e.model_flops_per_token * e.tokens_per_s_per_gpu * 1e-12;
  e.mfu = e.model_tflops_per_gpu / s.matrix_flops_fp16;
  return e;
}

TrainingBudget training_budget(const Efficiency& e, std::int64_t n_gpus, std::int64_t global_batch,
                               std::int64_t seq_len, double tokens, double gpu_hour_cost) {
  TrainingBudget b;
  if (!(tokens > 0)) return b;
  b.tokens = tokens;
  b.steps = tokens / (D(global_batch) * D(seq_len));
  b.seconds = tokens / e.tokens_per_s;
  b.days = b.seconds / 86400;
  b.gpu_hours = b.seconds / 3600 * D(n_gpus);
  b.gpu_hour_cost = gpu_hour_cost;
  b.cost = b.gpu_hours * gpu_hour_cost;
  return b;
}

}  // namespace perfsweep
