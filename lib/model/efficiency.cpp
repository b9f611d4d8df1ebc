#include "model/efficiency.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/human.hpp"
#include "core/text.hpp"
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
  if (m.mtp_layers > 0) {
    // multi-token prediction: its modules' weights a token passes through, and the LM head again
    // at each depth (Megatron-LM's num_floating_point_operations counts them so)
    n += D(p.mtp_active) + D(m.mtp_layers) * D(m.vocab_size) * D(m.e);
  }
  if (m.window == 0 && !m.is_mla()) return 6 * n + 12 * D(m.depth + m.mtp_layers) * D(m.h * m.head_dim()) * D(m.l);
  // The score terms per block, 6 h (qk + v) l as PaLM counts them (12 h head_dim l), a windowed
  // block's by its window's share of causal attention; a multi-token prediction block's whole.
  const double blocks = D(m.depth - m.windowed_blocks() + m.mtp_layers) +
                        D(m.windowed_blocks()) * window_share_of_causal(m.l, m.window);
  return 6 * n + 6 * blocks * D(m.h * (m.qk_head_dim() + m.value_head_dim())) * D(m.l);
}

Precision peak_precision(const System& s, Precision precision, Fp8Recipe recipe) {
  if (precision == Precision::Bf16) return Precision::Bf16;
  const Precision p = recipe_of(recipe).data_type;
  return s.*data_type(p).peak > 0 ? p : Precision::Bf16;
}

Efficiency efficiency(const Transformer& m, const System& s, std::int64_t n_gpus, std::int64_t global_batch,
                      double step_s, Precision peak) {
  Efficiency e;
  e.model_flops_per_token = model_flops_per_token(m);
  e.tokens_per_s = D(global_batch) * D(m.l) / step_s;
  e.tokens_per_s_per_gpu = e.tokens_per_s / D(n_gpus);
  e.model_tflops_per_gpu = e.model_flops_per_token * e.tokens_per_s_per_gpu * 1e-12;
  e.mfu = e.model_tflops_per_gpu / s.matrix_flops_fp16;
  e.peak_type = peak;
  e.mfu_precision = e.model_tflops_per_gpu / s.*data_type(peak).peak;
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

double GpuHourPrices::for_system(const System& s) const {
  for (const auto& [name, price] : by_system) {
    if (name == s.name) return price;
  }
  return all > 0 ? all : s.gpu_hour_cost;
}

void GpuHourPrices::check_systems(const std::vector<std::string>& names) const {
  for (const auto& [name, price] : by_system) {
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    const std::string near = nearest_name(name, names);
    throw InputError("--gpu-hour-cost prices " + quoted_text(name) + ", which is not a system of this run" +
                     (near.empty() ? "" : " (did you mean " + quoted_text(near) + "?)") + "; its systems: " + list);
  }
}

}  // namespace perfsweep
