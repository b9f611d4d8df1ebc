#include "search/pipeline_advice.hpp"

#include <algorithm>
#include <cstdio>

#include "core/error.hpp"

namespace perfsweep {

std::vector<PipelineAlternative> pipeline_alternatives(const System& system, const Transformer& model,
                                                       const Runtime& runtime, const Layout& layout,
                                                       const Evaluation& base, std::int64_t global_batch,
                                                       double min_bubble_frac, std::size_t limit) {
  std::vector<PipelineAlternative> out;
  const Execution& x = layout.exec;
  if (layout.pp < 2 || x.interleave > 1 || x.schedule != PipelineSchedule::OneFOneB ||
      !(base.totals.bubble_frac >= min_bubble_frac)) {
    return out;
  }
  auto try_layout = [&](Layout c, std::string flags) {
    try {
      Evaluation ev = evaluate(system, model, runtime, c, global_batch);  // validate_layout's ConfigError
      out.push_back({std::move(flags), std::move(c), std::move(ev)});
    } catch (const ConfigError&) {
      // the option does not apply to this layout (chunks, micro-batches, stage count)
    }
  };
  for (std::int64_t v = 2; v <= 16; ++v) {
    Layout c = layout;
    c.exec.interleave = v;
    // an uneven depth: the slotted partition where the given one does not cut into chunks
    const StageBlocks given = stage_blocks(model, c.pp, c.exec, runtime.mechanisms.stage_partition);
    if (!given.even() && !interleaved_chunks(given, c.pp, v).valid) {
      const StageBlocks slotted = slotted_stages(model.depth, c.pp, v);
      if (slotted.first == 0) continue;
      c.exec.first_stage_blocks = slotted.first;
      c.exec.last_stage_blocks = slotted.last;
    }
    try_layout(c, "--interleave " + std::to_string(v));
  }
  for (const PipelineSchedule s :
       {PipelineSchedule::ZeroBubbleH1, PipelineSchedule::ZeroBubbleH2, PipelineSchedule::DualPipe}) {
    Layout c = layout;
    c.exec.schedule = s;
    try_layout(c, std::string("--schedule ") + kScheduleNames[static_cast<std::size_t>(s)]);
  }
  // as configs ranks its rows: those that fit first, fastest first within each
  std::stable_sort(out.begin(), out.end(), [](const PipelineAlternative& a, const PipelineAlternative& b) {
    if (a.ev.fits != b.ev.fits) return a.ev.fits;
    return a.ev.throughput > b.ev.throughput;
  });
  if (out.size() > limit) out.resize(limit);
  return out;
}

std::string pipeline_alternatives_text(const Evaluation& base, const std::vector<PipelineAlternative>& alternatives) {
  if (alternatives.empty()) return {};
  char line[256];
  std::snprintf(line, sizeof line, "pipeline bubble %.1f%% of the step; the same layout with\n",
                100 * base.totals.bubble_frac);
  std::string out = line;
  for (const PipelineAlternative& a : alternatives) {
    const Evaluation& ev = a.ev;
    std::snprintf(line, sizeof line,
                  "  %-20s bubble %5.1f%%, %8.4g tokens/s per GPU, MFU %4.1f%%, memory %.4g of %.4g GB (%s)\n",
                  a.flags.c_str(), 100 * ev.totals.bubble_frac, ev.efficiency.tokens_per_s_per_gpu,
                  100 * ev.efficiency.mfu, ev.totals.mem, ev.totals.mem_limit, ev.fits ? "fits" : "does not fit");
    out += line;
  }
  return out;
}

}  // namespace perfsweep
