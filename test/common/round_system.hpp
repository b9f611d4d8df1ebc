#pragma once
// The made-up system (and model) of the hand-derived model tests: round parameters, so that every
// expected time can be worked out on paper.
//   tensor cores 100 TFLOP/s, vector units 10 TFLOP/s (80 and 8 achieved at the reference's 80%),
//   20 us per kernel launch; HBM 1000 GB/s, 80 GB;
//   NVLink 100 GB/s x eff 0.5 = 50 GB/s per GPU, 1e-6 s per ring step, 4 GPUs per domain;
//   IB 10 GB/s x eff 0.5 = 5 GB/s per NIC, 1e-5 s per ring step, 1 NIC per GPU.
#include <string>

#include "core/error.hpp"
#include "model/system.hpp"
#include "model/transformer.hpp"

namespace perfsweep::test {

inline System round_system() {
  System s;
  s.name = "round";
  s.matrix_flops_fp16 = 100;
  s.vector_flops_fp16 = 10;
  s.hbm_bandwidth = 1000;
  s.hbm_capacity = 80;
  s.nvlink_bandwidth = 100;
  s.nvlink_eff = 0.5;
  s.nvlink_latency = 1e-6;
  s.ib_bandwidth = 10;
  s.ib_eff = 0.5;
  s.ib_latency = 1e-5;
  s.nic_factor = 1;
  s.nvlink_size = 4;
  return s;
}

// The made-up model of the layout checks: 16 heads of 64 over e = 1024, f = 4096, 2048 tokens,
// 8 blocks.
inline Transformer small_model() {
  return {.name = "small", .l = 2048, .e = 1024, .h = 16, .depth = 8, .f = 4096, .moe = {}};
}

// The message of the ConfigError that f() throws, or "" if it throws none.
template <typename F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace perfsweep::test
