#pragma once
// Every tool's prologue and epilogue in one place: parse the command line (a bad one: CLI11's
// message and exit 2; --help, --version: exit 0), start the log on stderr at the level -q/-v ask
// for with its first line (log_start), run the tool's work, and turn any exception it throws into
// "TOOL: error: ..." and an exit code (exit_codes.hpp), so that no exception escapes a tool. What
// a tool does differently around it is one of ToolSteps' hooks.
#include <CLI/CLI.hpp>
#include <csignal>
#include <functional>
#include <optional>
#include <string>

#include "common/cli.hpp"
#include "common/exit_codes.hpp"

namespace perfsweep::cli {

struct ToolSteps {
  // Past a file-size limit a write then fails with EFBIG, which is reported, instead of the signal
  // killing the tool mid-write.
  bool ignore_file_size_signal = false;
  // false: a bad command line gives only its exit code (an MPI rank other than the first, whose
  // message rank 0 prints).
  bool report_parse_errors = true;
  // After parsing, before the log starts: an end of the run without a log line (estimate --axes);
  // its exit code, or nullopt to go on. Its errors are the tool's.
  std::function<std::optional<int>()> early_exit{};
  // Starts the log (sweep: its pattern with time and rank, after checks of its flags); its errors are
  // the tool's. Default: use_stderr_log and log_start(argc, argv, 1).
  std::function<void()> start_log{};
  // Reports the error the work (or start_log) ended with (sweep: MPI_Abort where the other ranks
  // must stop). Default: print_error.
  std::function<void(const ErrorExit&)> on_error{};
};

// name: the tool's, in its error messages; nullptr: the program's own (the last part of argv[0]).
// work: the tool's run, returning its exit code.
template <class Work>
int run_tool(const char* name, CLI::App& app, int argc, char** argv, const Verbosity& verbosity,
             const ToolSteps& steps, Work&& work) {
  if (steps.ignore_file_size_signal) std::signal(SIGXFSZ, SIG_IGN);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return (steps.report_parse_errors ? exit_for(app, e) : e.get_exit_code()) == 0 ? 0 : 2;
  }
  const std::string tool = name != nullptr ? std::string(name) : tool_name(app);
  try {
    if (steps.early_exit) {
      if (const std::optional<int> code = steps.early_exit()) return *code;
    }
    if (steps.start_log) {
      steps.start_log();
    } else {
      use_stderr_log(tool.c_str(), verbosity);
      log_start(argc, argv, 1);
    }
    return work();
  } catch (...) {
    const ErrorExit e = current_error_exit();
    if (steps.on_error) {
      steps.on_error(e);
    } else {
      print_error(tool.c_str(), e);
    }
    return e.code;
  }
}

template <class Work>
int run_tool(const char* name, CLI::App& app, int argc, char** argv, const Verbosity& verbosity, Work&& work) {
  return run_tool(name, app, argc, argv, verbosity, ToolSteps{}, std::forward<Work>(work));
}

}  // namespace perfsweep::cli
