#pragma once
// What every tool shares on its command line: --version, -q/-v, and a first log line naming the
// version, the command line, the rank count and the host (on stderr; -q silences it).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <string>

#include "core/build_info.hpp"

namespace perfsweep::cli {

struct Verbosity {
  bool quiet = false;
  bool verbose = false;
};

// --version, -q/--quiet and -v/--verbose.
inline void add_common_flags(CLI::App& app, Verbosity& v) {
  app.set_version_flag("--version", version_line(), "print the version (and git commit) and exit");
  app.add_flag("-q,--quiet", v.quiet, "warnings and errors only (no log lines)");
  app.add_flag("-v,--verbose", v.verbose, "debug logging");
}

// Logs to stderr (stdout carries the tool's tables) at the level -q/-v ask for.
inline void use_stderr_log(const char* tool, const Verbosity& v) {
  spdlog::set_default_logger(spdlog::stderr_color_mt(tool));
  spdlog::set_pattern("[%l] %v");
  spdlog::set_level(v.quiet ? spdlog::level::warn : v.verbose ? spdlog::level::debug : spdlog::level::info);
}

inline void log_start(int argc, char** argv, int n_ranks) {
  spdlog::info("{}; command line: {}; {} rank(s) on host {}", version_line(), command_line(argc, argv), n_ranks,
               host_name());
}

}  // namespace perfsweep::cli
