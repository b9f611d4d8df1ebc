#pragma once
// What every tool shares on its command line: --version, -q/-v, and a first log line naming the
// version, the command line, the rank count and the host (on stderr; -q silences it).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/build_info.hpp"
#include "core/human.hpp"

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

// The tool's logger on stderr (stdout carries the tool's tables), replacing the default one. A
// logger of its own each time, never one registered by name: a tool run in-process (the Python
// module) runs again in the same process, where a second logger of one name would be refused.
inline void set_stderr_logger(const char* tool) {
  spdlog::set_default_logger(
      std::make_shared<spdlog::logger>(tool, std::make_shared<spdlog::sinks::stderr_color_sink_mt>()));
  spdlog::set_pattern("[%l] %v");
}

// Logs to stderr at the level -q/-v ask for.
inline void use_stderr_log(const char* tool, const Verbosity& v) {
  set_stderr_logger(tool);
  spdlog::set_level(v.quiet ? spdlog::level::warn : v.verbose ? spdlog::level::debug : spdlog::level::info);
}

// The flag of `app` (or of its subcommands) nearest to `unknown`: one it begins, else one within
// a third of its length in edits; empty when none is near.
inline std::string nearest_flag(const CLI::App& app, const std::string& unknown) {
  const std::string given = unknown.substr(0, unknown.find('='));
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, given.size() / 3) + 1;
  auto consider = [&](const CLI::App& a) {
    for (const CLI::Option* o : a.get_options()) {
      for (const std::string& name : o->get_lnames()) {
        const std::string flag = "--" + name;
        const std::size_t d = flag.starts_with(given) ? 0 : edit_distance(given, flag);
        if (d < best_distance) {
          best_distance = d;
          best = flag;
        }
      }
    }
  };
  consider(app);
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) consider(*sub);
  return best;
}

// The program's name as its command line gave it, the last part of the path ("configs" of
// build/bin/configs): the TOOL of every tool's error messages.
inline std::string tool_name(const CLI::App& app) { return app.get_name().substr(app.get_name().rfind('/') + 1); }

// CLI11's message and exit code for a bad command line, in every tool's error form ("TOOL:
// error: ..."), after a hint for each unknown flag ("did you mean --global-batch-size?"). The one
// place every tool's parse errors go through.
inline int exit_for(CLI::App& app, const CLI::ParseError& e) {
  const std::string tool = tool_name(app);
  app.failure_message([tool](const CLI::App*, const CLI::Error& error) {
    return tool + ": error: " + error.what() + "\nRun with --help for more information.\n";
  });
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    for (const std::string& arg : app.remaining()) {
      if (!arg.starts_with("--")) continue;
      if (const std::string flag = nearest_flag(app, arg); !flag.empty()) {
        std::fprintf(stderr, "%s: error: unknown flag %s; did you mean %s?\n", tool.c_str(), arg.c_str(), flag.c_str());
      }
    }
  }
  return app.exit(e);
}

inline void log_start(int argc, char** argv, int n_ranks) {
  spdlog::info("{}; command line: {}; {} rank(s) on host {}", version_line(), command_line(argc, argv), n_ranks,
               host_name());
}

}  // namespace perfsweep::cli
