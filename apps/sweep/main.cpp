// sweep: the fastest parallel configurations of a transformer for every system and GPU count
// (the reference's run_configs.py), distributed over MPI ranks, written to one HDF5 file.
// The run itself (plan, lock, journal, progress, publishing) is parallel/resumable_sweep.
#include <mpi.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>

#include "common/budget_options.hpp"
#include "common/cli.hpp"
#include "common/execution_options.hpp"
#include "common/model_flags.hpp"
#include "common/tool.hpp"
#include "core/build_info.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "parallel/resumable_sweep.hpp"

using namespace perfsweep;

namespace {

void on_signal(int sig) {
  for (int slot = 0; slot < kPartialSlots; ++slot) {
    if (const char* p = partial_output_path(slot)) unlink(p);
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

int main(int argc, char** argv) {
  int thread_level = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &thread_level);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  // Past a file-size limit a write then fails with EFBIG, which is reported and cleaned up,
  // instead of killing the run mid-write (mpiexec restores the default action for its ranks).
  std::signal(SIGXFSZ, SIG_IGN);

  CLI::App app{"sweep: fastest parallel configurations per system and GPU count (MPI-parallel, HDF5 output)"};
  SweepOptions o;
  cli::Verbosity verbosity;
  cli::add_model_flags(app, o.model, o.seq_len);
  app.add_option("--strat", o.strat,
                 "tensor-parallel strategies: 1d, 2d (SUMMA), 2d-seqp (context parallel; 2d-seq accepted), a list "
                 "1d,2d-seqp, or all; one run and file per strategy, then the best over them")
      ->capture_default_str();
  app.add_option("--systems", o.systems_file, "YAML list of systems and NVLink sizes (default: sweeps/paper.yaml, the paper's nine)");
  app.add_option("--system", o.system, "one system (name or path) instead of --systems");
  app.add_option("--nvs", o.nvs, "NVLink domain sizes for --system, e.g. 4,8,64 (default: the file's nvlink_size)");
  app.add_option("--sweep", o.sweep_file, "hardware design-space sweep (sweeps/NAME.yaml or path), e.g. bw_capacity");
  app.add_flag("--resume", o.resume, "continue an interrupted run from its journal (<output>.journal)");
  app.add_flag("--restart", o.restart, "discard the journal of an interrupted run and start over");
  app.add_option("--global-batch-size", o.global_batch, "samples per optimizer step")->capture_default_str();
  app.add_option("--n-gpus", o.n_gpus, "GPU counts: a list 8,16,32 or a power-of-two range 4:16384")->capture_default_str();
  app.add_option("--top-n", o.top_n, "configurations kept per GPU count")->capture_default_str();
  add_execution_options(app, o.exec, true);
  cli::BudgetOptions budget;
  budget.add_to(app);
  app.add_option("--max-points", o.max_points, "refuse runs of more searches (targets x GPU counts) than this")
      ->capture_default_str();
  app.add_option("--max-output-gb", o.max_output_gb, "refuse runs whose output (or results in memory) would exceed this")
      ->capture_default_str();
  app.add_option("--out", o.out_dir,
                 "output directory (file exec_<strat>_<model>[_<system>].h5, sweep_<sweep>_<strat>_<model>.h5)")
      ->capture_default_str();
  app.add_option("-o,--output", o.output, "output file path (overrides --out; with several strategies, each's name before the extension)");
  app.add_flag("--dry-run", o.dry_run,
               "print what would run (targets, GPU counts, work units, output) and exit; with -v also every work unit");
  app.add_flag("--force", o.force, "overwrite an existing output file of the default name");
  cli::add_common_flags(app, verbosity);
  app.footer("Runs alone, or under mpirun with any number of ranks; rank 0 writes the file, named *.partial until complete.\n"
             "An existing output of the default name is refused unless --force (-o overwrites, with a warning).\n"
             "One run per output (<output>.journal.lock). Exit codes: 0 ok, 2 bad input or a journal to resume or\n"
             "restart, 1 other failure (output not written, output in use).");
  o.software_version = software_version();
  for (int i = 0; i < argc; ++i) o.command_line += (i ? " " : "") + std::string(argv[i]);
  // The budget's flags checked before the log starts (their errors first); the log on stdout with
  // time and rank, its first line rank 0's (none for --dry-run).
  auto start_log = [&] {
    budget.check();
    o.tokens = budget.tokens;
    o.prices = budget.prices;
    spdlog::set_pattern(rank == 0 ? "[%Y-%m-%d %H:%M:%S] [%l] %v" : "[%Y-%m-%d %H:%M:%S] [rank " + std::to_string(rank) + "] [%l] %v");
    o.quiet = verbosity.quiet;
    o.verbose = verbosity.verbose;
    spdlog::set_level(o.quiet ? spdlog::level::warn : o.verbose ? spdlog::level::debug : spdlog::level::info);
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0 && !o.dry_run) cli::log_start(argc, argv, size);
  };
  auto on_error = [&](const cli::ErrorExit& e) {
    if (!e.typed) {
      // Thrown on this rank only, perhaps while the others wait in a collective: this rank says
      // why and stops them all.
      std::fprintf(stderr, "sweep: error: rank %d failed: %s\n", rank, e.message.c_str());
      MPI_Abort(MPI_COMM_WORLD, e.code);
    }
    // The library's typed errors come from the inputs every rank reads alike, or from rank 0's
    // publishing after the last collective: rank 0 reports them and every rank exits.
    if (rank == 0) cli::print_error("sweep", e);
  };
  // A bad command line: rank 0 says why, every rank exits with its code.
  const int code = cli::run_tool("sweep", app, argc, argv, verbosity,
                                 {.report_parse_errors = rank == 0, .start_log = start_log, .on_error = on_error}, [&] {
                                   run_sweeps(o, MPI_COMM_WORLD, thread_level);
                                   return 0;
                                 });
  MPI_Finalize();
  return code;
}
