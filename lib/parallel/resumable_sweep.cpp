#include "parallel/resumable_sweep.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <optional>

#include "config/inputs.hpp"
#include "config/runtime_file.hpp"
#include "config/system_list.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/hash.hpp"
#include "core/human.hpp"
#include "core/text.hpp"
#include "core/limits.hpp"
#include "core/build_info.hpp"
#include "io/grid_h5.hpp"
#include "io/hw_summary.hpp"
#include "io/report.hpp"
#include "io/sweep_h5.hpp"
#include "model/comm_calibration.hpp"
#include "model/guards.hpp"
#include "model/parameters.hpp"
#include "parallel/journal.hpp"
#include "parallel/sweep_run.hpp"
#include "search/neighbours.hpp"
#include "search/search.hpp"

namespace perfsweep {
namespace {

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// A name as it may appear in a derived file name: no '/', no leading '.', nothing unprintable.
std::string file_name_part(const std::string& name) {
  std::string out;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '_' || c == '.' || c == '+';
    out += ok ? c : '_';
  }
  if (out.empty() || out.front() == '.') out.insert(out.begin(), '_');
  return out;
}

// GPU counts (or NVLink sizes) from a flag: bounded, without repeats.
std::vector<std::int64_t> counts_from_flag(const std::string& text, const std::string& flag, std::int64_t max_value) {
  std::vector<std::int64_t> out = parse_gpu_counts(text, flag, max_value);
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (std::find(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(i), out[i]) != out.begin() + static_cast<std::ptrdiff_t>(i)) {
      throw InputError(flag + " lists " + std::to_string(out[i]) + " twice, got '" + text + "'");
    }
  }
  return out;
}

SweepTarget make_target(const SweepOptions& o, Strategy strategy, const Transformer& model, const System& system,
                        std::string group, std::vector<std::string>& dropped) {
  SweepTarget t;
  t.problem.strategy = strategy;
  t.problem.model = model;
  t.problem.system = system;
  t.problem.global_batch = o.global_batch;
  t.problem.top_n = static_cast<std::size_t>(o.top_n);
  t.problem.exec = parse_execution_choices(o.exec);
  check_execution_for_model(t.problem.exec, model);
  t.problem.runtime = choose_runtime(o.exec.runtime, system, model);
  std::vector<std::string> lines;
  check_runtime_choices(system, t.problem.runtime, strategy, t.problem.exec, &lines);
  for (std::string& line : lines) {
    if (std::find(dropped.begin(), dropped.end(), line) == dropped.end()) dropped.push_back(std::move(line));
  }
  t.group = std::move(group);
  return t;
}

// Searches, output and memory within the limits; checked before any target is built.
void check_size(const SweepOptions& o, std::size_t n_targets, std::size_t n_counts, SweepPlan& plan) {
  const auto targets = static_cast<std::int64_t>(n_targets);
  const auto counts = static_cast<std::int64_t>(n_counts);
  std::int64_t searches = 0;
  if (__builtin_mul_overflow(targets, counts, &searches) || searches > o.max_points) {
    throw InputError(std::to_string(n_targets) + (o.sweep_file.empty() ? " systems" : " points") + " x " +
                     std::to_string(n_counts) + " GPU counts is more than --max-points=" +
                     std::to_string(o.max_points) + " searches; raise --max-points to run it");
  }
  // Per target about 20 kB of metadata and provenance; per kept configuration one row of ~40
  // 8-byte columns in the file and one Candidate in memory.
  const double rows = static_cast<double>(searches) * static_cast<double>(o.top_n);
  plan.searches = searches;
  plan.estimated_output_bytes = static_cast<double>(targets) * 20e3 + rows * 320.0;
  const double memory_bytes = rows * static_cast<double>(sizeof(Candidate));
  const double limit = o.max_output_gb * 1e9;
  if (plan.estimated_output_bytes > limit || memory_bytes > limit) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "the output would take about %.3g GB (%.3g GB of results in memory), more than --max-output-gb=%g; "
                  "raise --max-output-gb, or lower --top-n or the number of points",
                  plan.estimated_output_bytes / 1e9, memory_bytes / 1e9, o.max_output_gb);
    throw InputError(buf);
  }
}

// The runtime files the targets read (the built-in reference reads none).
void add_runtime_files(SweepPlan& plan) {
  for (const SweepTarget& t : plan.targets) {
    if (!t.problem.runtime.file.empty()) plan.input_files.push_back(t.problem.runtime.file);
  }
}

// Outputs, their temporaries, the journal and its lock must be regular files or absent, and none
// of them an input.
void check_output_paths(const SweepPlan& plan) {
  const std::pair<const char*, const char*> files[] = {{"", "output"},
                                                       {".partial", "temporary file"},
                                                       {".journal", "journal"},
                                                       {".journal.lock", "lock file"},
                                                       {".journal.partial", "temporary file"}};
  for (const auto& [suffix, role] : files) {
    require_regular_or_absent(plan.output + suffix, role);
    refuse_output_over_input(plan.output + suffix, plan.input_files);
  }
  if (plan.hardware_sweep) {
    const std::string xmf = xdmf_path_for(plan.output);
    require_regular_or_absent(xmf, "output");
    refuse_output_over_input(xmf, plan.input_files);
    require_regular_or_absent(xmf + ".partial", "temporary file");
    require_regular_or_absent(previous_path_for(plan.output), "temporary file");
  }
}

// The output and journal schema: a resumed journal must hold records of the same layout, and
// its results must go into a file of the same columns.
std::string schema_text(Strategy strategy) {
  std::string s = "perfsweep/1 journal PSWEEPJ3 candidate " + std::to_string(sizeof(Candidate)) + " counters " +
                  std::to_string(sizeof(SearchCounters)) + " totals";
  for (const TotalsField& f : kTotalsFields) s += std::string(" ") + f.name;
  Layout probe;
  probe.strategy = strategy;
  for (const auto& k : config_keys(probe, true)) s += std::string(" ") + k.first;
  for (const auto& k : nv_keys(probe, true)) s += std::string(" ") + k.first;
  return s + "\n" + result_schema();
}

bool same_bits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

// Whether a layout is one the search builds for the problem: its execution one of the
// combinations of the problem's choices (each searched option's value, the others at Execution's
// defaults), the attention as the runtime sets it, and the layout valid for the model and system
// under the runtime's mechanisms (validate_layout throws otherwise).
// Costing again cannot see a field the cost does not read (ep of a dense model, an option the
// runtime fixes), so such fields are checked here. The stages' blocks are the search's partition,
// which costing again checks.
bool searchable(const SearchProblem& p, const Layout& l) {
  const AttentionMode attention = runtime_attention(p.runtime, p.attention);
  if (attention.flash != l.attention.flash || attention.recompute != l.attention.recompute) return false;
  // what the search never sets, and the cost does not read (block_split derives the expert
  // and expert tensor-parallel groups from the execution; one SUMMA block outside 2d)
  if (l.tensor.ep != 1 || l.tensor.nv_ep != 1 || l.tensor.etp != 0 || l.tensor.nv_etp != 0) return false;
  if (!has_summa_blocks(plan_of(l.strategy)) && l.tensor.nb != 1) return false;
  Execution x = l.exec;
  x.first_stage_blocks = 0;
  x.last_stage_blocks = 0;
  // the searched options' values
  Execution expected;
  for (const ExecutionOption& o : kExecutionOptions) {
    if (o.searched()) o.set(expected, o.get(x));
  }
  if (!(expected == x)) return false;
  // each a value of the choices (the first where it does not apply), the context-parallel degree too
  if (!listed_in(p.exec, l)) return false;
  validate_layout(p.system, p.model, l, p.global_batch, p.runtime.mechanisms);
  return true;
}

// Whether every kept configuration of a journal record comes out of the model as the record says,
// to the last bit: the configuration it claims is costed again for the target at its GPU count
// (a few layouts, not a search). The checksum only proves that the bytes are the ones written;
// this proves that they are ones the search could have written.
bool reproduces(Searcher& searcher, const std::vector<std::int64_t>& n_gpus, const TargetResult& r) {
  const SearchProblem& p = searcher.problem();
  if (r.tops.size() != n_gpus.size()) return false;
  // every kept configuration is a feasible one the search counted
  std::int64_t kept = 0;
  for (const TopN& top : r.tops) kept += static_cast<std::int64_t>(top.items().size());
  if (kept > r.counters.candidates - r.counters.infeasible_memory) return false;
  for (std::size_t k = 0; k < n_gpus.size(); ++k) {
    const std::vector<Candidate>& items = r.tops[k].items();
    for (std::size_t i = 1; i < items.size(); ++i) {
      // the search keeps each configuration once: the list strictly ordered
      if (!ranks_before(items[i - 1], items[i])) return false;
    }
    for (const Candidate& c : items) {
      const Layout& l = c.layout;
      // the journal's decoding bounds each degree and their product by 2^30, mbs by 2^32
      if (l.strategy != p.strategy || l.n_gpus() != n_gpus[k] ||
          p.global_batch % (l.dp * l.mbs) != 0) {
        return false;
      }
      try {
        if (!searchable(p, l)) return false;
        bool fits = false;
        const Candidate again = searcher.evaluate(n_gpus[k], l, fits);
        if (!fits || !same_bits(again.throughput, c.throughput) || !same_bits(again.mem, c.mem) ||
            again.layout.exec.first_stage_blocks != l.exec.first_stage_blocks ||
            again.layout.exec.last_stage_blocks != l.exec.last_stage_blocks) {
          return false;
        }
        for (const TotalsField& f : kAllTotalsFields) {
          if (!same_bits(again.totals.*(f.member), c.totals.*(f.member))) return false;
        }
      } catch (const std::exception&) {
        return false;  // a layout the model refuses is not one the search kept
      }
    }
  }
  return true;
}

}  // namespace

std::size_t drop_unreproduced(const SweepPlan& plan, std::map<std::size_t, TargetResult>& done) {
  std::size_t dropped = 0;
  std::unique_ptr<Searcher> searcher;
  for (auto it = done.begin(); it != done.end();) {
    const SearchProblem& problem = plan.targets[it->first].problem;
    if (searcher) {
      searcher->set_problem(problem);
    } else {
      searcher = std::make_unique<Searcher>(problem);
    }
    if (reproduces(*searcher, plan.n_gpus, it->second)) {
      ++it;
    } else {
      it = done.erase(it);
      ++dropped;
    }
  }
  return dropped;
}

namespace {
// A price given for a system by name must name one of the run's systems (a misspelt name would
// price nothing, silently).
void check_priced_systems(const SweepPlan& plan, const SweepOptions& o) {
  std::vector<std::string> names;
  for (const SweepTarget& t : plan.targets) {
    if (std::find(names.begin(), names.end(), t.problem.system.name) == names.end()) {
      names.push_back(t.problem.system.name);
    }
  }
  o.prices.check_systems(names);
}
}  // namespace

SweepPlan plan_sweep(const SweepOptions& o) {
  SweepPlan plan;
  check_count(o.global_batch, kMaxGlobalBatch, "--global-batch-size");
  check_count(o.top_n, kMaxTopN, "--top-n");
  if (o.max_points < 1) throw InputError("--max-points must be a positive integer, got " + std::to_string(o.max_points));
  if (!(o.max_output_gb > 0)) throw InputError("--max-output-gb must be > 0, got " + std::to_string(o.max_output_gb));
  if (o.resume && o.restart) throw InputError("--resume and --restart exclude each other: continue the journal, or discard it");
  plan.strategy = parse_strategy(o.strat);
  ModelInput model = read_model(o.model, o.seq_len);
  for (const std::string& w : model.warnings) spdlog::warn("{}", w);
  spdlog::info("model {}: {}", model.model.name, parameters_text(count_parameters(model.model), model.model.is_moe()));
  plan.model = std::move(model.model);
  plan.input_files.push_back(model_file(o.model).string());
  plan.n_gpus = counts_from_flag(o.n_gpus, "--n-gpus", kMaxGpuCount);
  const std::string model_part = file_name_part(plan.model.name);
  const std::string strat_part(strategy_name(plan.strategy));

  if (!o.sweep_file.empty()) {
    if (!o.system.empty() || !o.systems_file.empty() || !o.nvs.empty()) {
      throw InputError("--sweep takes its base system from the sweep file; drop --system/--systems/--nvs");
    }
    const auto path = resolve_input(o.sweep_file, "sweeps");
    plan.input_files.push_back(path.string());
    plan.hardware_sweep = true;
    plan.sweep = load_hardware_sweep(path);
    plan.sweep_yaml = read_text(path);
    check_size(o, plan.sweep.n_points() + 1, plan.n_gpus.size(), plan);
    for (std::size_t i = 0; i < plan.sweep.n_points(); ++i) {
      plan.targets.push_back(
          make_target(o, plan.strategy, plan.model, plan.sweep.point(i), "points/" + std::to_string(i), plan.dropped));
    }
    plan.targets.push_back(make_target(o, plan.strategy, plan.model, plan.sweep.base, "base", plan.dropped));
    for (const SweepTarget& t : plan.targets) plan.system_yaml.push_back(system_to_yaml(t.problem.system));
    add_runtime_files(plan);
    plan.output = !o.output.empty() ? o.output
                                    : o.out_dir + "/sweep_" + file_name_part(plan.sweep.name) + "_" + strat_part + "_" +
                                          model_part + ".h5";
    check_output_paths(plan);
    check_priced_systems(plan, o);
    return plan;
  }
  std::vector<SystemChoice> choices;
  if (!o.system.empty()) {
    if (!o.systems_file.empty()) throw InputError("give either --system or --systems, not both");
    SystemChoice c{o.system, {}};
    if (o.nvs.empty()) {
      c.nvs.push_back(load_system_named(o.system).nvlink_size);
    } else {
      c.nvs = counts_from_flag(o.nvs, "--nvs", kMaxNvlinkDomain);
    }
    choices.push_back(c);
  } else {
    if (!o.nvs.empty()) throw InputError("--nvs goes with --system");
    const auto list = resolve_input(o.systems_file.empty() ? "paper" : o.systems_file, "sweeps");
    plan.input_files.push_back(list.string());
    choices = load_system_list(list);
  }
  std::size_t n_targets = 0;
  for (const SystemChoice& c : choices) n_targets += c.nvs.size();
  check_size(o, n_targets, plan.n_gpus.size(), plan);
  for (const SystemChoice& c : choices) {
    const System base = load_system_named(c.system);
    plan.input_files.push_back(resolve_input(c.system, "systems").string());
    for (std::int64_t nvs : c.nvs) {
      System sys = base;
      sys.nvlink_size = nvs;
      SweepTarget t =
          make_target(o, plan.strategy, plan.model, sys, base.name + "-NVS" + std::to_string(nvs), plan.dropped);
      for (const SweepTarget& other : plan.targets) {
        if (other.group == t.group) throw InputError("system group '" + t.group + "' appears twice");
      }
      plan.system_yaml.push_back(system_to_yaml(t.problem.system));
      plan.targets.push_back(std::move(t));
    }
  }
  add_runtime_files(plan);
  // With --system, the system's name is part of the default name: runs on different systems do not collide.
  const std::string system_part =
      o.system.empty() ? "" : "_" + file_name_part(std::filesystem::path(o.system).stem().string());
  plan.output = !o.output.empty() ? o.output : o.out_dir + "/exec_" + strat_part + "_" + model_part + system_part + ".h5";
  check_output_paths(plan);
  check_priced_systems(plan, o);
  return plan;
}

std::string sweep_fingerprint(const SweepPlan& plan, const SweepOptions& o) {
  std::string inputs = "perfsweep " + o.software_version + "\nschema " + fnv1a_hex(schema_text(plan.strategy)) + "\n" +
                       execution_choices_text(parse_execution_choices(o.exec)) + "\n" +
                       o.strat + "\n" + model_to_yaml(plan.model) + "gbs " + std::to_string(o.global_batch) + " top " +
                       std::to_string(o.top_n) + " n_gpus";
  for (std::int64_t n : plan.n_gpus) inputs.append(" ").append(std::to_string(n));
  for (const std::string& y : plan.system_yaml) inputs.append("\n").append(y);
  // The runtime's name and content decide every time and memory (reference: the built-in, hash 0).
  for (const SweepTarget& t : plan.targets) {
    if (!t.problem.runtime.is_reference()) {
      inputs.append("\nruntime ").append(t.problem.runtime.name).append(" ").append(runtime_hash_hex(t.problem.runtime));
    }
  }
  // The system YAML names a calibration by path; its content decides the collective times.
  const comm::Calibration* previous = nullptr;
  for (const SweepTarget& t : plan.targets) {
    const comm::Calibration* cal = t.problem.system.calibration.get();
    if (cal != nullptr && cal != previous) inputs.append("\ncalibration ").append(fingerprint_hash(cal->file_text));
    previous = cal;
  }
  return "perfsweep " + o.software_version + ", " + o.strat + ", model " + plan.model.name + ", " +
         std::to_string(plan.targets.size()) + " targets, inputs " + fingerprint_hash(inputs);
}

namespace {

// What rank 0 found when it took the output; the other ranks learn it by broadcast.
enum class SetupStatus : int { kOk = 0, kInput = 1, kLocked = 2, kIo = 3 };

void broadcast_setup(MPI_Comm comm, int rank, SetupStatus& status, std::string& message) {
  int code = static_cast<int>(status);
  MPI_Bcast(&code, 1, MPI_INT, 0, comm);
  status = static_cast<SetupStatus>(code);
  if (status == SetupStatus::kOk) return;
  if (rank != 0) message = "rank 0 could not take the output";
  switch (status) {
    case SetupStatus::kInput:
      throw InputError(message);
    case SetupStatus::kLocked:
      throw LockedError(message);
    default:
      throw IoError(message);
  }
}

void broadcast_done(MPI_Comm comm, int rank, std::map<std::size_t, TargetResult>& done) {
  std::vector<std::uint64_t> ids;
  for (const auto& kv : done) ids.push_back(kv.first);
  std::uint64_t n_done = ids.size();
  MPI_Bcast(&n_done, 1, MPI_UINT64_T, 0, comm);
  ids.resize(n_done);
  MPI_Bcast(ids.data(), static_cast<int>(n_done), MPI_UINT64_T, 0, comm);
  if (rank != 0) {
    for (std::uint64_t id : ids) done[static_cast<std::size_t>(id)] = TargetResult{};
  }
}

// "0.4 s", "12 s", "3.5 min", "2.1 h": a duration for people.
std::string duration_text(double s) {
  char buf[32];
  if (s < 10) std::snprintf(buf, sizeof buf, "%.2g s", s);
  else if (s < 90) std::snprintf(buf, sizeof buf, "%.0f s", s);
  else if (s < 5400) std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
  else std::snprintf(buf, sizeof buf, "%.1f h", s / 3600);
  return buf;
}

void print_dry_run(const SweepOptions& o, const SweepPlan& plan, const SweepRun& sweep) {
  std::printf("%s %s, global batch %lld, top %lld: %zu %s x %zu GPU counts (%lld..%lld)\n", o.strat.c_str(),
              plan.model.name.c_str(), static_cast<long long>(o.global_batch), static_cast<long long>(o.top_n),
              plan.targets.size(), plan.hardware_sweep ? "points (with the base system)" : "systems",
              plan.n_gpus.size(), static_cast<long long>(plan.n_gpus.front()), static_cast<long long>(plan.n_gpus.back()));
  std::printf("execution options searched: %s\n", execution_choices_text(parse_execution_choices(o.exec)).c_str());
  for (const std::string& line : plan.dropped) std::printf("%s\n", line.c_str());
  std::printf("%zu evaluation groups (targets differing only in HBM capacity share one), %zu work units "
              "(one tensor split at one GPU count each)\n",
              sweep.groups().size(), sweep.units().size());
  // How long it would take: a sample of the work units run here for about a second.
  std::size_t sampled = 0;
  const double cpu_s = sweep.estimate_cpu_seconds(std::chrono::duration<double>(1.0), sampled);
  const std::size_t units = sweep.units().size();
  std::printf("estimated time: about %s on one rank, 1/N of it on N ranks (%s of %s work units timed%s)\n",
              duration_text(cpu_s).c_str(), grouped_integer(static_cast<long long>(sampled)).c_str(),
              grouped_integer(static_cast<long long>(units)).c_str(), sampled == units ? ", all" : " here");
  std::printf("output %s%s\nunits: memory GB, time s, throughput samples/s; -v lists the work units\n",
              plan.output.c_str(), std::filesystem::exists(plan.output) ? " (exists)" : "");
  if (!o.verbose) {
    flush_stdout();
    return;
  }
  std::printf("%-6s %-16s %8s %6s %6s %6s\n", "unit", "target", "n_gpus", "tp1", "tp2", "cp");
  for (std::size_t i = 0; i < sweep.units().size(); ++i) {
    const WorkUnit& u = sweep.units()[i];
    std::printf("%-6zu %-16s %8lld %6lld %6lld %6lld\n", i, plan.targets[u.target].group.c_str(),
                static_cast<long long>(plan.n_gpus[u.n_index]), static_cast<long long>(u.split.tp1),
                static_cast<long long>(u.split.tp2), static_cast<long long>(u.split.cp));
  }
  flush_stdout();
}

std::string best_summary(const SweepBest& b, const SweepOptions& o) {
  const SearchProblem& p = b.problem;
  return configuration_summary(b.best.layout, b.best.totals, p.model, p.system, p.global_batch, p.runtime.name,
                               o.tokens, o.prices.for_system(p.system));
}

// Logs each target's first feasible GPU count and its best configuration at the largest GPU
// count that has one, whole; returns those.
std::vector<SweepBest> log_summary(const SweepPlan& plan, const SweepRun& sweep, const SweepOptions& o) {
  std::vector<SweepBest> bests;
  for (std::size_t t = 0; t < plan.targets.size(); ++t) {
    const auto& tops = sweep.results()[t].tops;
    std::size_t first = 0;
    while (first < tops.size() && tops[first].items().empty()) ++first;
    // why each GPU count without a feasible configuration has none (the search again at that count)
    for (std::size_t i = 0; i < tops.size(); ++i) {
      if (!tops[i].items().empty()) continue;
      const std::string why = infeasible_reason(plan.targets[t].problem, plan.n_gpus[i]);
      if (!why.empty()) spdlog::info("{}: no feasible configuration at {} GPUs: {}", plan.targets[t].group, plan.n_gpus[i], why);
    }
    if (first == tops.size()) {
      spdlog::info("{}: no feasible configuration", plan.targets[t].group);
      continue;
    }
    std::size_t last = tops.size() - 1;
    while (tops[last].items().empty()) --last;
    // the best at the largest GPU count with a feasible configuration (never "0 samples/s" at one without)
    spdlog::info("{}: feasible from {} GPUs; best {} samples/s at {} GPUs", plan.targets[t].group, plan.n_gpus[first],
                 human_number(tops[last].items().front().throughput), plan.n_gpus[last]);
    SweepBest b{plan.targets[t].group, plan.n_gpus[last], tops[last].items().front(), plan.targets[t].problem};
    spdlog::info("{}: best at {} GPUs: {}", b.group, b.n_gpus, best_summary(b, o));
    {
      const SearchProblem& p = b.problem;
      const Execution& x = b.best.layout.exec;
      const Precision peak = peak_precision(p.system, x.precision, p.runtime.mechanisms.fp8.recipe);
      const Efficiency e = efficiency(p.model, p.system, b.n_gpus, p.global_batch, b.best.totals.t, peak);
      for (const std::string& w : prediction_caveats(b.group + " at " + std::to_string(b.n_gpus) + " GPUs", p.system,
                                                     p.runtime, b.n_gpus, e, x.precision)) {
        spdlog::warn("{}", w);
      }
    }
    bests.push_back(std::move(b));
  }
  return bests;
}

}  // namespace

namespace {
// A default name is never overwritten without --force (InputError); an explicit -o is, with a
// warning (on rank 0).
void check_output_free(const SweepPlan& plan, const SweepOptions& o, int rank) {
  if (o.resume || !std::filesystem::exists(plan.output)) return;
  if (o.output.empty() && !o.force) {
    throw InputError(plan.output + " exists; pass --force to overwrite it, or -o to name another file");
  }
  if (rank == 0 && !o.force) spdlog::warn("{} exists and will be overwritten", plan.output);
}
}  // namespace

std::vector<SweepBest> run_resumable_sweep(const SweepOptions& o, MPI_Comm comm, int thread_level) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const SweepPlan plan = plan_sweep(o);
  SweepRun sweep(plan.targets, plan.n_gpus, static_cast<std::size_t>(o.top_n));
  if (o.dry_run) {
    if (rank == 0) print_dry_run(o, plan, sweep);
    return {};
  }
  const char* what = plan.hardware_sweep ? "points" : "systems";
  check_output_free(plan, o, rank);
  if (rank == 0) {
    for (const std::string& line : plan.dropped) spdlog::info("{}", line);
  }

  // Rank 0 owns the output: its lock, then its journal, both held until the file is published.
  const std::string journal_path = plan.output + ".journal";
  std::unique_ptr<RunLock> lock;
  std::unique_ptr<Journal> journal;
  std::map<std::size_t, TargetResult> done;
  SetupStatus status = SetupStatus::kOk;
  std::string message;
  if (rank == 0) {
    try {
      require_regular_or_absent(journal_path, "journal");
      std::filesystem::path parent = std::filesystem::path(journal_path).parent_path();
      if (!parent.empty()) std::filesystem::create_directories(parent);
      lock = std::make_unique<RunLock>(journal_path + ".lock");
      const JournalMode mode = o.restart ? JournalMode::kRestart : o.resume ? JournalMode::kResume : JournalMode::kNew;
      journal = std::make_unique<Journal>(journal_path, sweep_fingerprint(plan, o), mode, plan.n_gpus.size(),
                                          static_cast<std::size_t>(o.top_n), done);
      std::erase_if(done, [&](const auto& kv) { return kv.first >= plan.targets.size(); });
      const std::size_t records = done.size();
      if (const std::size_t dropped = drop_unreproduced(plan, done); dropped > 0) {
        spdlog::warn("resume: {} of {} journal records did not re-evaluate bit for bit; their {} are recomputed",
                     dropped, records, what);
      }
      const JournalScan& scan = journal->scan();
      if (scan.damaged > 0 || scan.foreign > 0) {
        spdlog::warn("{}: {} records kept, {} damaged and {} of other inputs dropped ({} bytes); the dropped {} are "
                     "computed again",
                     journal_path, scan.kept, scan.damaged, scan.foreign, scan.dropped_bytes, what);
      } else if (scan.dropped_bytes > 0) {
        spdlog::info("{}: dropped a torn last record ({} bytes)", journal_path, scan.dropped_bytes);
      }
      if (o.resume && scan.existed) {
        spdlog::info("resuming from {}: {} of {} {} already done", journal_path, done.size(), plan.targets.size(), what);
      } else if (o.resume) {
        spdlog::warn("--resume: no journal {}; starting from the beginning", journal_path);
      } else if (o.restart && scan.existed) {
        spdlog::info("--restart: discarded the journal {}", journal_path);
      }
    } catch (const InputError& e) {
      status = SetupStatus::kInput;
      message = e.what();
    } catch (const LockedError& e) {
      status = SetupStatus::kLocked;
      message = e.what();
    } catch (const std::exception& e) {
      status = SetupStatus::kIo;
      message = e.what();
    }
  }
  broadcast_setup(comm, rank, status, message);
  broadcast_done(comm, rank, done);
  sweep.preload(std::move(done));

  if (rank == 0 && !plan.hardware_sweep) {
    // what a reader must know of each system: uncalibrated (the roofline), the paper's hypothetical ones
    std::vector<std::string> said;
    for (const SweepTarget& t : plan.targets) {
      const System& s = t.problem.system;
      const std::string caveat = system_caveat_text(s);
      if (caveat.empty() || std::find(said.begin(), said.end(), s.name) != said.end()) continue;
      said.push_back(s.name);
      spdlog::info("{}: {}", s.name, caveat);
    }
  }
  if (rank == 0) {
    spdlog::info("{} {} on {} targets x {} GPU counts: {} work units over {} rank(s)", o.strat, plan.model.name,
                 plan.targets.size(), plan.n_gpus.size(), sweep.units().size(), size);
    spdlog::info("{} searches ({} {} x {} GPU counts), output {} of about {:.3g} MB", plan.searches,
                 plan.targets.size(), what, plan.n_gpus.size(), plan.output, plan.estimated_output_bytes / 1e6);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const SearchCounters resumed = sweep.total_counters();  // journaled targets' counters
  const std::size_t targets_resumed = sweep.preloaded();
  // A journal that cannot be written (a full disk) stops journaling; the run goes on, and the
  // error is reported with the result of publishing.
  std::optional<std::string> journal_error;
  SweepCallbacks cb;
  if (journal) {
    cb.on_target_complete = [&](std::size_t t, const TargetResult& r) {
      if (journal_error) return;
      try {
        journal->append(t, r);
      } catch (const std::exception& e) {
        journal_error = e.what();
      }
    };
  }
  if (!o.quiet) {
    cb.on_progress = [&](std::size_t units_done, std::size_t units_total, std::size_t tdone, std::size_t ttotal) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      // The ETA follows work units (points differ in cost); the rate is in whole points.
      const double unit_rate = s > 0 ? static_cast<double>(units_done) / s : 0;
      const double eta = unit_rate > 0 ? static_cast<double>(units_total - units_done) / unit_rate : 0;
      const double rate = s > 0 ? static_cast<double>(tdone - targets_resumed) / s : 0;
      spdlog::info("progress {}/{} {} ({:.1f}%), {:.2f} {}/s, ETA {:.0f} s [{}/{} work units]", tdone, ttotal, what,
                   units_total ? 100.0 * static_cast<double>(units_done) / static_cast<double>(units_total) : 100.0,
                   rate, what, eta, units_done, units_total);
    };
  }
  sweep.run(comm, thread_level, cb);
  if (journal && !journal_error) {
    try {
      journal->sync();
    } catch (const std::exception& e) {
      journal_error = e.what();
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rank != 0) return {};

  SearchCounters c = sweep.total_counters();
  c.candidates -= resumed.candidates;
  c.infeasible_memory -= resumed.infeasible_memory;
  c.module_evaluations -= resumed.module_evaluations;
  c.pruned_candidates -= resumed.pruned_candidates;
  c.bound_exceeded -= resumed.bound_exceeded;
  spdlog::info("{} {} in {:.2f} s ({} resumed from the journal); searched {} candidates ({:.3g} candidates/s); "
               "{} over HBM capacity; {} skipped by the step-time bound; {} blocks costed",
               plan.targets.size() - targets_resumed, what, seconds, targets_resumed, c.candidates,
               static_cast<double>(c.candidates) / seconds, c.infeasible_memory, c.pruned_candidates,
               c.module_evaluations);
  if (c.bound_exceeded > 0) {
    spdlog::warn("{} costed steps came out below the search's step-time bound: its pruning may have lost a "
                 "configuration (a defect; SearchProblem::prune)",
                 c.bound_exceeded);
  }
  if (journal_error) spdlog::warn("journaling stopped: {}", *journal_error);
  RunMetadata meta;
  meta.software_version = o.software_version;
  meta.git_commit = git_commit();
  meta.host = host_name();
  meta.created = now_utc();
  meta.command_line = o.command_line;
  meta.n_ranks = size;
  meta.tokens = o.tokens;
  meta.prices = o.prices;
  for (const Offload k : parse_execution_choices(o.exec).offload) meta.offload = meta.offload || k != Offload::None;
  meta.strategy = plan.strategy;
  meta.model = plan.model;
  meta.model_yaml = model_to_yaml(plan.model);
  meta.global_batch = o.global_batch;
  meta.top_n = o.top_n;
  meta.n_gpus = plan.n_gpus;
  try {
    if (plan.hardware_sweep) {
      write_hw_sweep_file(plan.output, meta, plan.sweep, plan.sweep_yaml, plan.system_yaml.back(), plan.targets,
                          sweep.results());
    } else {
      write_sweep_file(plan.output, meta, plan.targets, sweep.results(), plan.system_yaml);
    }
  } catch (const InputError&) {
    throw;  // a result refused as nonsensical (core/published.hpp): the inputs' fault, exit 2
  } catch (const std::exception& e) {
    const std::string kept = " (the journal " + journal_path + " keeps the finished " + what +
                             "; rerun with --resume once the cause is fixed)";
    if (journal_error) throw IoError(std::string(e.what()) + "; earlier, " + *journal_error + kept);
    throw IoError(e.what() + kept);
  }
  journal->remove();
  lock->remove();
  if (plan.hardware_sweep) {
    for (const std::string& line : hw_sweep_summary(plan.sweep, plan.n_gpus, sweep.results())) spdlog::info("{}", line);
    spdlog::info("wrote {} and its ParaView sidecar (.xmf)", plan.output);
    return {};
  }
  std::vector<SweepBest> bests = log_summary(plan, sweep, o);
  spdlog::info("wrote {}", plan.output);
  return bests;
}

std::vector<SweepOptions> options_per_strategy(const SweepOptions& o) {
  const std::vector<Strategy> strategies = parse_strategies(o.strat);
  if (strategies.size() == 1) return {o};  // as given (its spelling is part of the journal's fingerprint)
  std::vector<SweepOptions> out;
  for (Strategy s : strategies) {
    SweepOptions one = o;
    one.strat = strategy_name(s);
    if (!o.output.empty()) {
      const std::filesystem::path p(o.output);
      one.output = (p.parent_path() / (p.stem().string() + "_" + one.strat + p.extension().string())).string();
    }
    out.push_back(std::move(one));
  }
  return out;
}

void run_sweeps(const SweepOptions& o, MPI_Comm comm, int thread_level) {
  const std::vector<SweepOptions> listed = options_per_strategy(o);
  if (listed.size() == 1) {
    run_resumable_sweep(listed.front(), comm, thread_level);
    return;
  }
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // Every strategy's inputs and output checked before the first one runs; a strategy the runtime
  // does not run is left out (refused when none is left).
  std::vector<SweepOptions> runs;
  for (std::size_t k = 0; k < listed.size(); ++k) {
    try {
      const SweepPlan plan = plan_sweep(listed[k]);
      if (!listed[k].dry_run) check_output_free(plan, listed[k], -1);
    } catch (const StrategyNotRunError& e) {
      if (runs.empty() && k + 1 == listed.size()) throw;
      if (rank == 0) spdlog::info("--strat {} dropped: {}", listed[k].strat, e.what());
      continue;
    }
    runs.push_back(listed[k]);
  }
  // Per target group, the fastest best over the strategies (ties: the strategy listed first).
  std::vector<SweepBest> overall;
  std::vector<std::string> strategies;
  for (const SweepOptions& one : runs) {
    strategies.push_back(one.strat);
    for (SweepBest& b : run_resumable_sweep(one, comm, thread_level)) {
      auto it = std::find_if(overall.begin(), overall.end(), [&](const SweepBest& x) { return x.group == b.group; });
      if (it == overall.end()) {
        overall.push_back(std::move(b));
      } else if (b.n_gpus > it->n_gpus || (b.n_gpus == it->n_gpus && b.best.throughput > it->best.throughput)) {
        *it = std::move(b);
      }
    }
  }
  if (rank != 0 || o.dry_run) return;
  std::string names;
  for (const std::string& s : strategies) names += (names.empty() ? "" : ", ") + s;
  for (const SweepBest& b : overall) {
    spdlog::info("{}: best of {} at {} GPUs: {}", b.group, names, b.n_gpus, best_summary(b, o));
  }
}

}  // namespace perfsweep
