#pragma once
// The one place a tool turns the exception it caught into an exit code and a message, so no
// exception escapes a tool: 1 when an output could not be written (IoError, LockedError, out of
// memory), 2 for bad input (InputError, ConfigError) and for any other exception, which can only
// come from an input no check foresaw.
#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include "core/error.hpp"

namespace perfsweep::cli {

struct ErrorExit {
  int code = 2;
  const char* kind = "error";  // "error" or "invalid configuration"
  std::string message;
  bool typed = true;  // one of the library's error types (thrown alike on every MPI rank)
};

// Call only inside a catch block: classifies the exception being handled.
inline ErrorExit current_error_exit() noexcept {
  try {
    throw;
  } catch (const IoError& e) {
    return {1, "error", e.what(), true};
  } catch (const InputError& e) {
    return {2, "error", e.what(), true};
  } catch (const ConfigError& e) {
    return {2, "invalid configuration", e.what(), true};
  } catch (const std::bad_alloc&) {
    return {1, "error", "out of memory", false};
  } catch (const std::exception& e) {
    return {2, "error", std::string("unexpected error (bad input?): ") + e.what(), false};
  } catch (...) {
    return {2, "error", "unexpected error of unknown type", false};
  }
}

// Every tool's errors on stderr in one form: "TOOL: error: MESSAGE", and for a configuration the
// model refuses "TOOL: error: invalid configuration: MESSAGE".
inline void print_error(const char* tool, const ErrorExit& e) {
  const std::string kind = std::string(e.kind) == "error" ? "" : std::string(e.kind) + ": ";
  std::fprintf(stderr, "%s: error: %s%s\n", tool, kind.c_str(), e.message.c_str());
}

}  // namespace perfsweep::cli
