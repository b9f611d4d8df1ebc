#pragma once
// The --attention and --attention-recompute options of `estimate` and `configs` (checked against
// the strategy by parse_attention in io/report.hpp).
#include <CLI/CLI.hpp>
#include <string>

namespace perfsweep {

struct AttentionOptions {
  std::string mode = "flash";
  bool recompute = false;
};

inline void add_attention_options(CLI::App& app, AttentionOptions& o) {
  app.add_option("--attention", o.mode,
                 "attention kernels: flash (fused, as the reference's search) or unfused (logits, softmax, dropout, "
                 "attend)")
      ->check(CLI::IsMember({"flash", "unfused"}))
      ->capture_default_str();
  app.add_flag("--attention-recompute", o.recompute,
               "unfused attention (1d only): re-run logits, softmax and dropout in the backward pass instead of "
               "keeping the attention matrix");
}

}  // namespace perfsweep
