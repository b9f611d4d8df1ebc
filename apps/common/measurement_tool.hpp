#pragma once
// What the measurement tools (`comm`, `validate`) share around their subcommands: a stderr logger,
// -q, CLI parse errors as exit 2, and the library's typed errors logged and turned into exit 2.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <exception>

#include "common/cli.hpp"
#include "common/exit_codes.hpp"
#include "core/error.hpp"

namespace perfsweep {

inline void init_tool_logger(const char* name) {
  std::signal(SIGXFSZ, SIG_IGN);  // past a file-size limit, a write fails (reported) instead of killing
  cli::set_stderr_logger(name);
}

// Parses the command line, then runs `body`; returns its exit code, 1 after an output that could
// not be written, or 2 after a parse error or another exception ("TOOL: error: ..." on stderr).
template <class Body>
int run_tool(CLI::App& app, int argc, char** argv, const cli::Verbosity& verbosity, Body&& body) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = cli::exit_for(app, e);
    return code == 0 ? 0 : 2;
  }
  spdlog::set_level(verbosity.quiet     ? spdlog::level::warn
                    : verbosity.verbose ? spdlog::level::debug
                                        : spdlog::level::info);
  cli::log_start(argc, argv, 1);
  try {
    return body();
  } catch (...) {
    const cli::ErrorExit e = cli::current_error_exit();
    cli::print_error(app.get_name().substr(app.get_name().rfind('/') + 1).c_str(), e);
    return e.code;
  }
}

}  // namespace perfsweep
