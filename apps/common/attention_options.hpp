#pragma once
// The --attention and --attention-recompute options of `estimate` and `configs` (checked against
// the strategy by parse_attention, or parse_attentions for a list, in io/report.hpp).
#include <CLI/CLI.hpp>
#include <string>

namespace perfsweep {

struct AttentionOptions {
  std::string mode = "flash";
  bool recompute = false;
};

// lists: `configs`, which takes "flash,unfused" (each row with each), checked by parse_attentions.
inline void add_attention_options(CLI::App& app, AttentionOptions& o, bool lists = false) {
  CLI::Option* mode = app.add_option("--attention", o.mode,
                                     std::string("attention kernels: flash (fused, as the reference's search) or unfused "
                                                 "(logits, softmax, dropout, attend)") +
                                         (lists ? ", or the list flash,unfused" : ""))
                          ->capture_default_str();
  if (!lists) mode->check(CLI::IsMember({"flash", "unfused"}));
  app.add_flag("--attention-recompute", o.recompute,
               "unfused attention (1d only): re-run logits, softmax and dropout in the backward pass instead of "
               "keeping the attention matrix");
}

}  // namespace perfsweep
