// sweep: the fastest parallel configurations of a transformer for every system and GPU count
// (the reference's run_configs.py), distributed over MPI ranks, written to one HDF5 file.
#include <mpi.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "common/cli.hpp"
#include "config/hw_sweep.hpp"
#include "config/inputs.hpp"
#include "config/system_list.hpp"
#include "core/error.hpp"
#include "io/report.hpp"
#include "io/grid_h5.hpp"
#include "io/hw_summary.hpp"
#include "io/sweep_h5.hpp"
#include "model/comm_calibration.hpp"
#include "parallel/journal.hpp"
#include "parallel/sweep_run.hpp"

using namespace perfsweep;

namespace {

struct Options {
  std::string model = "gpt3_1T";
  std::string strat = "1d";
  std::string systems_file;
  std::string system;
  std::string nvs;
  std::int64_t global_batch = 4096;
  std::string n_gpus = "4:16384";
  std::int64_t top_n = 10;
  std::string out_dir = "outputs";
  std::string output;
  std::string sweep_file;
  bool resume = false;
  bool dry_run = false;
  bool force = false;
  cli::Verbosity verbosity;
};

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

void on_signal(int sig) {
  if (const char* p = partial_output_path()) unlink(p);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

struct Plan {
  std::vector<SweepTarget> targets;
  std::vector<std::string> system_yaml;
  Transformer model;
  std::vector<std::int64_t> n_gpus;
  std::string output;
  bool hardware_sweep = false;
  HardwareSweep sweep;  // when hardware_sweep
  std::string sweep_yaml;
};

SweepTarget make_target(const Options& o, Strategy strategy, const Transformer& model, const System& system,
                        std::string group) {
  SweepTarget t;
  t.problem.strategy = strategy;
  t.problem.model = model;
  t.problem.system = system;
  t.problem.global_batch = o.global_batch;
  t.problem.top_n = static_cast<std::size_t>(o.top_n);
  t.group = std::move(group);
  return t;
}

Plan make_plan(const Options& o) {
  Plan plan;
  if (o.global_batch < 1) throw InputError("--global-batch-size must be a positive integer, got " + std::to_string(o.global_batch));
  if (o.top_n < 1) throw InputError("--top-n must be a positive integer, got " + std::to_string(o.top_n));
  const Strategy strategy = parse_strategy(o.strat);
  plan.model = load_model_named(o.model);
  plan.n_gpus = parse_gpu_counts(o.n_gpus, "--n-gpus");

  if (!o.sweep_file.empty()) {
    if (!o.system.empty() || !o.systems_file.empty() || !o.nvs.empty()) {
      throw InputError("--sweep takes its base system from the sweep file; drop --system/--systems/--nvs");
    }
    const auto path = resolve_input(o.sweep_file, "sweeps");
    plan.hardware_sweep = true;
    plan.sweep = load_hardware_sweep(path);
    plan.sweep_yaml = read_text(path);
    for (std::size_t i = 0; i < plan.sweep.n_points(); ++i) {
      plan.targets.push_back(make_target(o, strategy, plan.model, plan.sweep.point(i), "points/" + std::to_string(i)));
    }
    plan.targets.push_back(make_target(o, strategy, plan.model, plan.sweep.base, "base"));
    for (const SweepTarget& t : plan.targets) plan.system_yaml.push_back(system_to_yaml(t.problem.system));
    plan.output = !o.output.empty() ? o.output
                                    : o.out_dir + "/sweep_" + plan.sweep.name + "_" + std::string(strategy_name(strategy)) +
                                          "_" + plan.model.name + ".h5";
    return plan;
  }
  std::vector<SystemChoice> choices;
  if (!o.system.empty()) {
    if (!o.systems_file.empty()) throw InputError("give either --system or --systems, not both");
    SystemChoice c{o.system, {}};
    if (o.nvs.empty()) {
      c.nvs.push_back(load_system_named(o.system).nvlink_size);
    } else {
      c.nvs = parse_gpu_counts(o.nvs, "--nvs");
    }
    choices.push_back(c);
  } else {
    if (!o.nvs.empty()) throw InputError("--nvs goes with --system");
    choices = load_system_list(resolve_input(o.systems_file.empty() ? "paper" : o.systems_file, "sweeps"));
  }
  for (const SystemChoice& c : choices) {
    const System base = load_system_named(c.system);
    for (std::int64_t nvs : c.nvs) {
      System sys = base;
      sys.nvlink_size = nvs;
      SweepTarget t = make_target(o, strategy, plan.model, sys, base.name + "-NVS" + std::to_string(nvs));
      for (const SweepTarget& other : plan.targets) {
        if (other.group == t.group) throw InputError("system group '" + t.group + "' appears twice");
      }
      plan.system_yaml.push_back(system_to_yaml(t.problem.system));
      plan.targets.push_back(std::move(t));
    }
  }
  // With --system, the system's name is part of the default name: runs on different systems do not collide.
  plan.output = !o.output.empty() ? o.output
                                  : o.out_dir + "/exec_" + std::string(strategy_name(strategy)) + "_" + plan.model.name +
                                        (o.system.empty() ? "" : "_" + std::filesystem::path(o.system).stem().string()) + ".h5";
  return plan;
}

int run(const Options& o, int argc, char** argv, int thread_level) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const Plan plan = make_plan(o);
  SweepRun sweep(plan.targets, plan.n_gpus, static_cast<std::size_t>(o.top_n));

  // The inputs that determine the results: a journal is only resumed by an identical run.
  std::string inputs = std::string("perfsweep ") + software_version() + "\n" + o.strat + "\n" + model_to_yaml(plan.model) +
                       "gbs " + std::to_string(o.global_batch) + " top " + std::to_string(o.top_n) + " n_gpus";
  for (std::int64_t n : plan.n_gpus) inputs += " " + std::to_string(n);
  for (const std::string& y : plan.system_yaml) inputs += "\n" + y;
  // The system YAML names a calibration by path; its content decides the collective times.
  const comm::Calibration* previous = nullptr;
  for (const SweepTarget& t : plan.targets) {
    const comm::Calibration* cal = t.problem.system.calibration.get();
    if (cal != nullptr && cal != previous) inputs += "\ncalibration " + fingerprint_hash(cal->file_text);
    previous = cal;
  }
  const std::string fingerprint = "perfsweep " + std::string(software_version()) + ", " + o.strat + ", model " +
                                  plan.model.name + ", " + std::to_string(plan.targets.size()) + " targets, inputs " +
                                  fingerprint_hash(inputs);
  const std::string journal_path = plan.output + ".journal";
  std::unique_ptr<Journal> journal;
  std::map<std::size_t, TargetResult> done;
  // A default name is never overwritten without --force; an explicit -o is, with a warning.
  if (!o.dry_run && !o.resume && std::filesystem::exists(plan.output)) {
    if (o.output.empty() && !o.force) {
      throw InputError(plan.output + " exists; pass --force to overwrite it, or -o to name another file");
    }
    if (rank == 0 && !o.force) spdlog::warn("{} exists and will be overwritten", plan.output);
  }
  if (!o.dry_run) {
    int status = 0;  // rank 0 reads the journal; every rank learns which targets to skip
    std::string error;
    if (rank == 0) {
      try {
        if (o.resume && std::filesystem::exists(journal_path)) {
          journal = std::make_unique<Journal>(journal_path, fingerprint, plan.n_gpus.size(),
                                              static_cast<std::size_t>(o.top_n), done);
          spdlog::info("resuming from {}: {} of {} {} already done", journal_path, done.size(), plan.targets.size(),
                       plan.hardware_sweep ? "points" : "systems");
        } else {
          if (o.resume) spdlog::warn("--resume: no journal {}; starting from the beginning", journal_path);
          if (std::filesystem::path(journal_path).has_parent_path()) {
            std::filesystem::create_directories(std::filesystem::path(journal_path).parent_path());
          }
          journal = std::make_unique<Journal>(journal_path, fingerprint);
        }
      } catch (const InputError& e) {
        status = 1;
        error = e.what();
      }
    }
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (status) throw InputError(rank == 0 ? error : "journal refused");
    std::vector<std::uint64_t> ids;
    for (const auto& kv : done) ids.push_back(kv.first);
    std::uint64_t n_done = ids.size();
    MPI_Bcast(&n_done, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    ids.resize(n_done);
    MPI_Bcast(ids.data(), static_cast<int>(n_done), MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (rank != 0) {
      for (std::uint64_t id : ids) done[static_cast<std::size_t>(id)] = TargetResult{};
    }
    sweep.preload(std::move(done));
  }

  if (o.dry_run) {
    if (rank == 0) {
      std::printf("%s %s, global batch %lld, top %lld: %zu %s x %zu GPU counts (%lld..%lld)\n", o.strat.c_str(),
                  plan.model.name.c_str(), static_cast<long long>(o.global_batch), static_cast<long long>(o.top_n),
                  plan.targets.size(), plan.hardware_sweep ? "points (with the base system)" : "systems",
                  plan.n_gpus.size(), static_cast<long long>(plan.n_gpus.front()),
                  static_cast<long long>(plan.n_gpus.back()));
      std::printf("%zu evaluation groups (targets differing only in HBM capacity share one), %zu work units "
                  "(one tensor split at one GPU count each)\n",
                  sweep.groups().size(), sweep.units().size());
      std::printf("output %s%s\nunits: memory GB, time s, throughput samples/s; -v lists the work units\n",
                  plan.output.c_str(), std::filesystem::exists(plan.output) ? " (exists)" : "");
      if (!o.verbosity.verbose) return 0;
      std::printf("%-6s %-16s %8s %6s %6s\n", "unit", "target", "n_gpus", "tp1", "tp2");
      for (std::size_t i = 0; i < sweep.units().size(); ++i) {
        const WorkUnit& u = sweep.units()[i];
        std::printf("%-6zu %-16s %8lld %6lld %6lld\n", i, plan.targets[u.target].group.c_str(),
                    static_cast<long long>(plan.n_gpus[u.n_index]), static_cast<long long>(u.split.tp1),
                    static_cast<long long>(u.split.tp2));
      }
    }
    return 0;
  }

  if (rank == 0) {
    spdlog::info("{} {} on {} targets x {} GPU counts: {} work units over {} rank(s)", o.strat, plan.model.name,
                 plan.targets.size(), plan.n_gpus.size(), sweep.units().size(), size);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const SearchCounters resumed = sweep.total_counters();  // journaled targets' counters
  const std::size_t targets_resumed = sweep.preloaded();
  const char* what = plan.hardware_sweep ? "points" : "systems";
  SweepCallbacks cb;
  if (journal) cb.on_target_complete = [&](std::size_t t, const TargetResult& r) { journal->append(t, r); };
  if (!o.verbosity.quiet) {
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
  sweep.run(MPI_COMM_WORLD, thread_level, cb);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  if (rank == 0) {
    SearchCounters c = sweep.total_counters();
    c.candidates -= resumed.candidates;
    c.infeasible_memory -= resumed.infeasible_memory;
    c.module_evaluations -= resumed.module_evaluations;
    spdlog::info("{} {} in {:.2f} s ({} resumed from the journal); searched {} candidates ({:.3g} candidates/s); "
                 "{} over HBM capacity; {} blocks costed",
                 plan.targets.size() - targets_resumed, what, seconds, targets_resumed, c.candidates,
                 static_cast<double>(c.candidates) / seconds, c.infeasible_memory, c.module_evaluations);
    RunMetadata meta;
    meta.software_version = software_version();
    meta.git_commit = git_commit();
    meta.host = host_name();
    meta.created = now_utc();
    for (int i = 0; i < argc; ++i) meta.command_line += (i ? " " : "") + std::string(argv[i]);
    meta.n_ranks = size;
    meta.strategy = plan.targets.empty() ? Strategy::OneD : plan.targets.front().problem.strategy;
    meta.model = plan.model;
    meta.model_yaml = model_to_yaml(plan.model);
    meta.global_batch = o.global_batch;
    meta.top_n = o.top_n;
    meta.n_gpus = plan.n_gpus;
    if (plan.hardware_sweep) {
      write_hw_sweep_file(plan.output, meta, plan.sweep, plan.sweep_yaml, plan.system_yaml.back(), plan.targets,
                          sweep.results());
      journal->remove();
      for (const std::string& line : hw_sweep_summary(plan.sweep, plan.n_gpus, sweep.results())) spdlog::info("{}", line);
      spdlog::info("wrote {} and its ParaView sidecar (.xmf)", plan.output);
      return 0;
    }
    write_sweep_file(plan.output, meta, plan.targets, sweep.results(), plan.system_yaml);
    journal->remove();
    for (std::size_t t = 0; t < plan.targets.size(); ++t) {
      const auto& tops = sweep.results()[t].tops;
      std::size_t first = 0;
      while (first < tops.size() && tops[first].items().empty()) ++first;
      if (first == tops.size()) {
        spdlog::info("{}: no feasible configuration", plan.targets[t].group);
      } else {
        spdlog::info("{}: feasible from {} GPUs; best {:.4g} samples/s at {} GPUs", plan.targets[t].group,
                     plan.n_gpus[first], tops.back().items().empty() ? 0.0 : tops.back().items().front().throughput,
                     plan.n_gpus.back());
      }
    }
    spdlog::info("wrote {}", plan.output);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int thread_level = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &thread_level);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);

  CLI::App app{"sweep: fastest parallel configurations per system and GPU count (MPI-parallel, HDF5 output)"};
  Options o;
  app.add_option("--model", o.model, "model name (models/NAME.yaml) or path")->capture_default_str();
  app.add_option("--strat", o.strat, "tensor-parallel strategy: 1d, 2d (SUMMA), 2d-seqp (context parallel; 2d-seq accepted)")
      ->capture_default_str();
  app.add_option("--systems", o.systems_file, "YAML list of systems and NVLink sizes (default: sweeps/paper.yaml, the paper's nine)");
  app.add_option("--system", o.system, "one system (name or path) instead of --systems");
  app.add_option("--nvs", o.nvs, "NVLink domain sizes for --system, e.g. 4,8,64 (default: the file's nvlink_size)");
  app.add_option("--sweep", o.sweep_file, "hardware design-space sweep (sweeps/NAME.yaml or path), e.g. bw_capacity");
  app.add_flag("--resume", o.resume, "continue an interrupted run from its journal (<output>.journal)");
  app.add_option("--global-batch-size", o.global_batch, "samples per optimizer step")->capture_default_str();
  app.add_option("--n-gpus", o.n_gpus, "GPU counts: a list 8,16,32 or a power-of-two range 4:16384")->capture_default_str();
  app.add_option("--top-n", o.top_n, "configurations kept per GPU count")->capture_default_str();
  app.add_option("--out", o.out_dir, "output directory (file exec_<strat>_<model>[_<system>].h5, sweep_<sweep>_<strat>_<model>.h5)")->capture_default_str();
  app.add_option("-o,--output", o.output, "output file path (overrides --out)");
  app.add_flag("--dry-run", o.dry_run, "print what would run (targets, GPU counts, work units, output) and exit; "
               "with -v also every work unit");
  app.add_flag("--force", o.force, "overwrite an existing output file of the default name");
  cli::add_common_flags(app, o.verbosity);
  app.footer("Runs alone, or under mpirun with any number of ranks; rank 0 writes the file, named *.partial until complete.\n"
             "An existing output of the default name is refused unless --force (-o overwrites, with a warning). Exit codes: 0 ok, 2 bad input, 1 other failure.");
  int code = 0;
  try {
    app.parse(argc, argv);
    spdlog::set_pattern(rank == 0 ? "[%Y-%m-%d %H:%M:%S] [%l] %v" : "[%Y-%m-%d %H:%M:%S] [rank " + std::to_string(rank) + "] [%l] %v");
    spdlog::set_level(o.verbosity.quiet     ? spdlog::level::warn
                      : o.verbosity.verbose ? spdlog::level::debug
                                            : spdlog::level::info);
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0 && !o.dry_run) cli::log_start(argc, argv, size);
    code = run(o, argc, argv, thread_level);
  } catch (const CLI::ParseError& e) {
    code = (rank == 0 ? app.exit(e) : e.get_exit_code()) == 0 ? 0 : 2;
  } catch (const InputError& e) {
    if (rank == 0) std::fprintf(stderr, "sweep: error: %s\n", e.what());
    code = 2;
  } catch (const ConfigError& e) {
    if (rank == 0) std::fprintf(stderr, "sweep: invalid configuration: %s\n", e.what());
    code = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sweep: rank %d failed: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return code;
}
