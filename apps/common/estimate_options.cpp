#include "common/estimate_options.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/cli.hpp"
#include "common/execution_options.hpp"
#include "common/model_flags.hpp"
#include "config/inputs.hpp"
#include "config/pipeline_layout.hpp"
#include "config/runtime_file.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"
#include "io/report.hpp"
#include "model/step.hpp"
#include "search/dimensions.hpp"

namespace perfsweep {

void add_estimate_flags(CLI::App& app, EstimateOptions& o) {
  cli::add_model_flags(app, o.model, o.seq_len);
  app.add_option("--system", o.system, "system name (systems/NAME.yaml) or path to a system YAML/JSON")
      ->capture_default_str();
  app.add_option("--nvs", o.nvs, "GPUs per NVLink domain (default: the system file's nvlink_size)");
  app.add_option("--strat", o.strat, "tensor-parallel strategy: 1d, 2d (SUMMA) or 2d-seqp (context parallel)")
      ->capture_default_str();
  app.add_option("--global-batch-size", o.global_batch, "samples per optimizer step")->capture_default_str();
  add_axis_options(app, o.axes, [](std::size_t) { return std::string(); }, "");
  app.add_option("--mbs", o.mbs, "micro-batch size")->capture_default_str();
  app.add_option("--nb", o.nb, "SUMMA blocks: required with --strat 2d, unused otherwise");
  add_attention_options(app, o.attention);
  add_execution_options(app, o.exec, false);
  o.budget.add_to(app);
  add_stage_options(app, o.exec);
  app.add_option("--pipeline-layout", o.pipeline_layout,
                 "the layers of each pipeline chunk as Megatron-Core's pipeline_model_parallel_layout spells them "
                 "(E embedding, t decoder block, m MTP layer, L loss, | between chunks, x*N and (...)*N repeat; "
                 "pp x interleave chunks, chunk i on stage i % pp), e.g. 'Et*4|(t*4|)*14tmL': the stages' blocks "
                 "and, interleaved, uneven chunks (not with --first/--last-stage-blocks)");
  app.add_flag("--train-step", o.train_step,
               "one GPU's whole training step as PyTorch eager with bf16 autocast runs it: --runtime pytorch_amp "
               "(its casts, gradient accumulation, optimizer, host launches and peak memory) with ZeRO 0 "
               "(docs/validation.md; --global-batch-size / --mbs micro-batches)");
}

EstimateRequest estimate_request(const EstimateOptions& o) {
  o.budget.check();
  EstimateRequest r;
  r.model = cli::read_model_logged(o.model, o.seq_len);
  r.system = load_system_named(o.system);
  o.budget.check_systems({r.system.name});
  if (o.nvs) {
    check_count(*o.nvs, kMaxNvlinkDomain, "--nvs");
    r.system.nvlink_size = *o.nvs;
  }
  check_count(o.global_batch, kMaxGlobalBatch, "--global-batch-size");
  r.global_batch = o.global_batch;
  // Each degree, and the GPU count they multiply to, within bounds (validate_layout checks the rest).
  std::int64_t gpus = 1;
  const std::int64_t cp = parse_context_parallel(o.exec);
  Layout& layout = r.layout;
  layout.strategy = parse_strategy(o.strat);
  const StrategyPlan& plan = plan_of(layout.strategy);
  check_axes_given(o.axes, plan.axes);
  auto count_gpus = [&](const std::string& flag, std::int64_t v) {
    check_count(v, kMaxGpuCount, flag);
    if (__builtin_mul_overflow(gpus, v, &gpus) || gpus > kMaxGpuCount) {
      throw InputError(std::string("the degrees multiply to more than ") + std::to_string(kMaxGpuCount) + " GPUs (at " +
                       flag + "=" + std::to_string(v) + ")");
    }
  };
  for (std::size_t i = 0; i < kAxisCount; ++i) {
    if (!kAxes[i].has_degree_flag() || !has_axis(plan, i)) continue;
    count_gpus(key_flag(kAxes[i].name), o.axes.degree[i]);
    kAxes[i].set_degree(layout, o.axes.degree[i]);
  }
  count_gpus("--cp", cp);
  // The network as a job of this many GPUs sees it (a system's network_scaling), as the search costs it.
  r.cluster = r.system;
  r.system = at_scale(r.cluster, gpus);
  check_count(o.mbs, kMaxGlobalBatch, "--mbs");
  layout.mbs = o.mbs;
  layout.tensor.cp = cp;
  if (layout.strategy == Strategy::TwoD) {
    if (o.nb == 0) throw InputError("--nb (SUMMA blocks) is required with --strat 2d");
    layout.tensor.nb = o.nb;
  }
  layout.attention = parse_attention(o.attention.mode, o.attention.recompute, layout.strategy);
  r.runtime = choose_runtime(o.train_step ? kTrainStepRuntime : o.exec.runtime, r.system, r.model);
  spdlog::debug("runtime: {}", runtime_label(r.runtime));
  layout.exec = parse_execution(o.exec, r.runtime);  // rank_order, unless given: the runtime's
  if (o.train_step) {
    // one GPU under PyTorch eager with autocast: the runtime validate train checks
    if (gpus != 1) throw InputError("--train-step models one GPU: dp, pp and tp must be 1");
    if (!o.exec.runtime.empty() && o.exec.runtime != kTrainStepRuntime) {
      throw InputError("--train-step is the " + std::string(kTrainStepRuntime) + " runtime, not --runtime " +
                       o.exec.runtime);
    }
    layout.exec.zero = 0;
  }
  // Every placed axis's share given (an axis beyond the reference's needs none at its reference
  // degree): the placement is the user's; else the fastest of those the search tries that keep the given.
  const PlacedAxes& placed = placed_axes(layout.strategy);
  r.all_placed = true;
  for (std::size_t k = 0; k < placed.count; ++k) {
    const LayoutAxis& a = kAxes[placed.axis[k]];
    const std::optional<std::int64_t>& nv = o.axes.nv[placed.axis[k]];
    if (nv) a.set_nv(layout, *nv);
    r.all_placed = r.all_placed && (nv || a.degree(layout) == a.omitted_at);
  }
  if (!o.pipeline_layout.empty()) {
    if (stage_blocks_given(o.exec)) {
      throw InputError("--pipeline-layout gives the stages' blocks: --first-stage-blocks and --last-stage-blocks "
                       "cannot be given with it");
    }
    const PipelineLayoutStages stages =
        pipeline_layout_stages(o.pipeline_layout, "--pipeline-layout", layout.pp, layout.exec.interleave, r.model);
    layout.exec.first_stage_blocks = stages.first_stage_blocks;
    layout.exec.last_stage_blocks = stages.last_stage_blocks;
    layout.exec.layout_chunk_blocks = stages.layout_chunk_blocks;
  }
  // --first-stage-blocks auto, or neither given where pp does not split the depth evenly under a
  // framework's runtime (as the search): balanced on evaluation for a given placement, else for each one tried.
  r.balance_stages = balances_stages(o.exec) || (!stage_blocks_given(o.exec) && o.pipeline_layout.empty() &&
                                                  balances_where_uneven(r.runtime, r.model, layout));
  if (r.balance_stages && !balances_stages(o.exec)) {
    spdlog::info("pp={} does not divide depth {}: the stages balanced (--first-stage-blocks and "
                 "--last-stage-blocks choose others)",
                 layout.pp, r.model.depth);
  }
  r.placement.nv = o.axes.nv;
  // Under a framework's runtime, with no share given, the placement its rank order makes.
  bool any_given = false;
  for (const std::optional<std::int64_t>& nv : o.axes.nv) any_given = any_given || nv.has_value();
  r.placement.rank_order = !r.runtime.is_reference() && !any_given;
  if (!r.all_placed) {
    spdlog::debug(r.placement.rank_order ? "NVLink placement: the runtime's rank order"
                                         : "NVLink placements not all given: choosing the fastest");
  }
  r.tokens = o.budget.tokens;
  r.gpu_hour_cost = o.budget.price_for(r.cluster);
  return r;
}

ParsedEstimateFlags parse_estimate_flags(const std::vector<std::string>& args) {
  ParsedEstimateFlags p;
  p.app = std::make_unique<CLI::App>("estimate");
  p.options = std::make_unique<EstimateOptions>();
  add_estimate_flags(*p.app, *p.options);
  // CLI11 parses a vector given in reverse order (its last element first).
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    p.app->parse(reversed);
  } catch (const CLI::ParseError& e) {
    std::string what;
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
      for (const std::string& extra : args) {
        const auto left = p.app->remaining();
        if (!extra.starts_with("--") || std::find(left.begin(), left.end(), extra) == left.end()) continue;
        what += (what.empty() ? "" : "; ") + std::string("unknown flag ") + extra;
        if (const std::string flag = cli::nearest_flag(*p.app, extra); !flag.empty()) what += " (did you mean " + flag + "?)";
      }
    }
    if (what.empty()) what = e.what();
    throw InputError(what);
  }
  return p;
}

}  // namespace perfsweep
