#include "io/sweep_h5.hpp"

#include "config/inputs.hpp"
#include "config/runtime_file.hpp"

#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/files.hpp"
#include "core/hash.hpp"
#include "io/h5.hpp"
#include "io/launch.hpp"
#include "io/report.hpp"
#include "model/comm_calibration.hpp"

namespace perfsweep {
void write_run_metadata(hid_t file, const RunMetadata& m) {
  h5::attr(file, "schema", std::string_view("perfsweep/1"));
  h5::attr(file, "software_version", std::string_view(m.software_version));
  h5::attr(file, "git_commit", std::string_view(m.git_commit));
  h5::attr(file, "host", std::string_view(m.host));
  h5::attr(file, "created", std::string_view(m.created));
  h5::attr(file, "command_line", std::string_view(m.command_line));
  h5::attr(file, "n_ranks", m.n_ranks);
  h5::attr(file, "strategy", strategy_name(m.strategy));
  h5::attr(file, "config_keys", config_key_names(m.strategy, KeyKind::Degree));
  h5::attr(file, "placement_keys", config_key_names(m.strategy, KeyKind::Placement));
  h5::attr(file, "model", std::string_view(m.model.name));
  h5::attr(file, "global_batch_size", m.global_batch);
  h5::attr(file, "top_n", m.top_n);
  h5::attr(file, "n_gpus_searched", m.n_gpus);
  h5::attr(file, "units", std::string_view("memory GB, time s, flops TFLOP, throughput samples/s"));
  h5::Handle model = h5::create_group(file, "model");
  h5::attr(model.id(), "name", std::string_view(m.model.name));
  h5::attr(model.id(), "seq_len", m.model.l);
  h5::attr(model.id(), "embed_dim", m.model.e);
  h5::attr(model.id(), "num_heads", m.model.h);
  h5::attr(model.id(), "depth", m.model.depth);
  h5::attr(model.id(), "ffn_dim", m.model.f);
  if (m.model.dataset_samples > 0) h5::attr(model.id(), "dataset_samples", m.model.dataset_samples);
  h5::Handle prov = h5::create_group(file, "provenance");
  h5::text(prov.id(), "model.yaml", m.model_yaml);
  h5::Handle systems = h5::create_group(prov.id(), "systems");
}

namespace {
// The framework whose launch line a runtime's configurations get in the file (docs/launch.md):
// the runtime's `launch` (megatron and megatron_tp_overlap Megatron-LM's, nemo NeMo's, fsdp
// torchtitan's; none for the others: the reference's, DeepSpeed's, nanotron's, PyTorch eager's,
// Meta's own).
std::optional<LaunchFramework> launch_framework_of(const Runtime& rt) {
  if (rt.launch < 0) return std::nullopt;
  return static_cast<LaunchFramework>(rt.launch);
}
}  // namespace

void write_target_group(hid_t group, const System& sys, const RunMetadata& meta, const std::vector<TopN>& tops,
                        const Runtime& runtime) {
  const Strategy strategy = meta.strategy;
  const std::vector<std::int64_t>& n_gpus = meta.n_gpus;
  h5::attr(group, "name", std::string_view(sys.name));
  h5::attr(group, "nvs", sys.nvlink_size);
  for (const SystemKey& f : kSystemKeys) h5::attr(group, f.name, sys.*f.member);
  h5::attr(group, "summa_nb", sys.summa_nb);
  // Whether the kernel times are fitted to measurements, what to know before trusting the results
  // (the paper's hypothetical systems say so), and the price of a GPU-hour the costs used.
  h5::attr(group, "calibration_status", calibration_status(sys));
  if (!sys.caveat.empty()) h5::attr(group, "caveat", std::string_view(sys.caveat));
  const double price = meta.prices.for_system(sys);
  if (price > 0) h5::attr(group, "gpu_hour_cost", price);
  // Attributes cannot carry attributes: the units of the ones above, as "name: unit" lines.
  std::string units = "nvs: GPUs per NVLink domain\n";
  for (const SystemKey& f : kSystemKeys) units += std::string(f.name) + ": " + f.unit + "\n";
  units += "summa_nb: blocks\n";
  h5::attr(group, "attribute_units", std::string_view(units));
  // Which collective model timed the results; a calibration travels with them, so the file
  // describes itself.
  if (sys.calibration) {
    const comm::Calibration& cal = *sys.calibration;
    h5::attr(group, "comm_model", "calibrated: " + cal.file);
    h5::attr(group, "calibration_file", std::string_view(cal.file));
    h5::attr(group, "calibration_fnv1a", fnv1a_hex(cal.file_text));
    h5::text_attr(group, "calibration_yaml", cal.file_text);
  } else {
    h5::attr(group, "comm_model", std::string_view("analytical"));
  }
  // The runtime the configurations were costed under (docs/runtimes.md), by name and content.
  h5::attr(group, "runtime", std::string_view(runtime.name));
  if (!runtime.is_reference()) {
    h5::attr(group, "runtime_file", std::string_view(runtime.file));
    h5::attr(group, "runtime_fnv1a", runtime_hash_hex(runtime));
    h5::text_attr(group, "runtime_yaml", read_text(runtime.file));
  }

  // The reference keeps GPU counts from the first feasible one; t_max/t_min only for feasible ones.
  std::size_t start = 0;
  while (start < tops.size() && tops[start].items().empty()) ++start;
  std::vector<std::int64_t> counts_kept;
  std::vector<double> t_max, t_min;
  for (std::size_t i = start; i < tops.size(); ++i) {
    counts_kept.push_back(n_gpus[i]);
    const auto& items = tops[i].items();
    if (!items.empty()) {
      t_max.push_back(items.front().throughput);
      t_min.push_back(items.back().throughput);
    }
  }
  h5::dataset(group, "n_gpus", counts_kept, "GPUs");
  // The best configuration of each GPU count as its framework's launch line (notes, then the
  // arguments; "" where the count has none), under a runtime whose framework has one.
  if (const std::optional<LaunchFramework> framework = launch_framework_of(runtime);
      framework && meta.strategy == Strategy::OneD) {
    std::vector<std::string> lines;
    for (std::size_t i = start; i < tops.size(); ++i) {
      const auto& items = tops[i].items();
      lines.push_back(items.empty() ? std::string()
                                    : launch_text(launch_line(*framework, {meta.model, items.front().layout, runtime,
                                                                           meta.global_batch, sys.nvlink_size})));
    }
    const h5::Handle launch = h5::dataset(group, "best_launch", lines);
    h5::attr(launch.id(), "framework", std::string_view(launch_framework_info(*framework).name));
    h5::attr(launch.id(), "description",
             std::string_view("the fastest configuration at each GPU count of n_gpus as the framework's launch line "
                              "(docs/launch.md)"));
  }
  h5::Handle t_max_ds = h5::dataset(group, "t_max", t_max, "samples/s");
  h5::attr(t_max_ds.id(), "description",
           std::string_view("throughput (samples/s, not time) of the fastest configuration at each feasible GPU count"));
  h5::Handle t_min_ds = h5::dataset(group, "t_min", t_min, "samples/s");
  h5::attr(t_min_ds.id(), "description",
           std::string_view("throughput (samples/s, not time) of the top_n-th fastest configuration at each feasible "
                            "GPU count (the reference's name)"));

  h5::Handle top = h5::create_group(group, "top");
  std::vector<std::int64_t> row_n, row_rank, count;
  std::vector<double> throughput, mem;
  std::vector<const Candidate*> rows;
  for (std::size_t i = start; i < tops.size(); ++i) {
    const auto& items = tops[i].items();
    count.push_back(static_cast<std::int64_t>(items.size()));
    for (std::size_t k = 0; k < items.size(); ++k) {
      row_n.push_back(n_gpus[i]);
      row_rank.push_back(static_cast<std::int64_t>(k));
      throughput.push_back(items[k].throughput);
      mem.push_back(items[k].mem);
      rows.push_back(&items[k]);
    }
  }
  h5::dataset(top.id(), "count", count, "rows per GPU count");
  h5::dataset(top.id(), "n_gpus", row_n, "GPUs");
  h5::dataset(top.id(), "rank", row_rank, "0 = fastest");
  h5::dataset(top.id(), "throughput", throughput, "samples/s");
  h5::dataset(top.id(), "mem", mem, "GB");
  // The strategy's configuration keys (model/plan.hpp kConfigKeys), so readers need no list of their own.
  h5::attr(top.id(), "config_keys", config_key_names(strategy, KeyKind::Degree));
  h5::attr(top.id(), "placement_keys", config_key_names(strategy, KeyKind::Placement));
  // Config and NVLink keys: names from a representative layout of the strategy.
  Layout probe;
  probe.strategy = strategy;
  const auto config_names = config_keys(probe, true);
  for (std::size_t k = 0; k < config_names.size(); ++k) {
    std::vector<std::int64_t> col;
    for (const Candidate* c : rows) col.push_back(config_keys(c->layout, true)[k].second);
    const std::string name = config_names[k].first;
    h5::dataset(top.id(), name, col, name == "mbs" ? "samples" : name == "nb" ? "blocks" : "GPUs");
  }
  const auto totals_column = [&](const TotalsField& f) {
    std::vector<double> col;
    for (const Candidate* c : rows) col.push_back(c->totals.*f.member);
    h5::dataset(top.id(), f.name, col, f.unit);
  };
  for (const TotalsField& f : kTotalsFields) {
    if (std::strcmp(f.name, "mem") != 0) totals_column(f);  // the `mem` column above is the same value
  }
  if (!runtime.is_reference()) {
    for (const TotalsField& f : kRuntimeTotalsFields) totals_column(f);
    // the host link's exposed transfers, the CPU optimizer, the host memory used
    if (meta.offload) {
      for (const TotalsField& f : kOffloadTotalsFields) totals_column(f);
    }
    // Tokens, model FLOP/s and MFU (model/efficiency.hpp; PaLM's 6N + 12 L e T per token).
    // With a token budget, its days, GPU-hours and cost (when priced) per row.
    // The headroom: what the runtime can still allocate (negative: over its limit by that much).
    std::vector<double> tokens, tflops, mfu, mfu_precision, days, gpu_hours, cost, cost_per_mtok, headroom;
    for (const Candidate* c : rows) {
      // the precision's peak as the runtime's recipe runs it (MXFP8 or FP8)
      const Precision peak = peak_precision(sys, c->layout.exec.precision, runtime.mechanisms.fp8.recipe);
      const Efficiency e = efficiency(meta.model, sys, c->layout.n_gpus(), meta.global_batch, c->totals.t, peak);
      tokens.push_back(e.tokens_per_s_per_gpu);
      tflops.push_back(e.model_tflops_per_gpu);
      mfu.push_back(e.mfu);
      mfu_precision.push_back(e.mfu_precision);
      cost_per_mtok.push_back(price / 3600 / e.tokens_per_s_per_gpu * 1e6);
      const TrainingBudget b = training_budget(e, c->layout.n_gpus(), meta.global_batch, meta.model.l, meta.tokens,
                                               price);
      days.push_back(b.days);
      gpu_hours.push_back(b.gpu_hours);
      cost.push_back(b.cost);
    }
    h5::dataset(top.id(), "tokens_per_s_per_gpu", tokens, "tokens/s");
    h5::dataset(top.id(), "model_tflops_per_gpu", tflops, "TFLOP/s");
    h5::Handle mfu_ds = h5::dataset(top.id(), "mfu", mfu, "1");
    h5::attr(mfu_ds.id(), "description", std::string_view("model FLOP/s over the dense bf16 peak (matrix_flops_fp16)"));
    h5::Handle own = h5::dataset(top.id(), "mfu_precision", mfu_precision, "1");
    h5::attr(own.id(), "description",
             std::string_view("model FLOP/s over the dense peak of the precision the linear layers run in (FP8's or "
                              "MXFP8's under precision fp8)"));
    for (const Candidate* c : rows) headroom.push_back(c->totals.mem_limit - c->totals.mem);
    h5::Handle room = h5::dataset(top.id(), "mem_headroom", headroom, "GB");
    h5::attr(room.id(), "description",
             std::string_view("mem_limit - mem: what the runtime could still allocate"));
    if (price > 0) h5::dataset(top.id(), "cost_per_mtok", cost_per_mtok, "currency per million tokens");
    if (meta.tokens > 0) {
      h5::attr(top.id(), "tokens", meta.tokens);
      h5::dataset(top.id(), "train_days", days, "days");
      h5::dataset(top.id(), "gpu_hours", gpu_hours, "GPU-h");
      if (price > 0) h5::dataset(top.id(), "cost", cost, "currency");
    }
  }
  const auto nv_names = nv_keys(probe, true);
  for (std::size_t k = 0; k < nv_names.size(); ++k) {
    std::vector<std::int64_t> col;
    for (const Candidate* c : rows) col.push_back(nv_keys(c->layout, true)[k].second);
    h5::dataset(top.id(), nv_names[k].first, col, "GPUs in the NVLink domain");
  }
  // Execution options (model/plan.hpp kConfigKeys, KeyKind::Execution): a named option (recompute,
  // layout, precision, schedule, cp_comm, offload, rank_order) and sp (off, on) as names, the flags'
  // spelling; the others (zero, interleave, ep, the stages' blocks, offload_percent) as integers. A
  // named column keeps the codes files before version 1.1 wrote in its place, in a `codes`
  // attribute ("0 none, 1 selective, 2 full"), so a reader of those can map the names back.
  h5::attr(top.id(), "execution_keys", config_key_names(strategy, KeyKind::Execution));
  for (const ConfigKey& k : kConfigKeys) {
    if (k.kind != KeyKind::Execution) continue;
    const ExecutionOption* o = find_execution_option(k.name);
    if (o == nullptr || o->values == OptionValues::Integer) {
      std::vector<std::int64_t> col;
      for (const Candidate* c : rows) col.push_back(k.value(c->layout));
      h5::dataset(top.id(), k.name, col, "1");
      continue;
    }
    std::vector<std::string> col;
    for (const Candidate* c : rows) col.push_back(option_value_name(*o, k.value(c->layout)));
    const h5::Handle column = h5::dataset(top.id(), k.name, col);
    std::string codes;
    for (std::size_t i = 0; i < o->names.size(); ++i) codes += (i ? ", " : "") + std::to_string(i) + " " + o->names[i];
    h5::attr(column.id(), "codes", codes);
  }
}

void write_sweep_file(const std::string& path, const RunMetadata& meta, const std::vector<SweepTarget>& targets,
                      const std::vector<TargetResult>& results, const std::vector<std::string>& system_yaml) {
  write_atomically(path, [&](const std::string& tmp) {
    h5::Handle file = h5::create_file(tmp);
    write_run_metadata(file.id(), meta);
    {
      h5::Handle systems = h5::open_group(file.id(), "provenance/systems");
      for (std::size_t t = 0; t < targets.size(); ++t) {
        h5::text(systems.id(), targets[t].group + ".yaml", system_yaml[t]);
        h5::Handle g = h5::create_group(file.id(), targets[t].group);
        write_target_group(g.id(), targets[t].problem.system, meta, results[t].tops,
                             targets[t].problem.runtime);
      }
    }
    h5::write_file(file, tmp);
  }, Temporary::kLockHeld);  // sweep holds the output's journal lock
}

}  // namespace perfsweep
