// perfsweep's tools in-process for Python (pybind11): `_perfsweep.run("estimate", [args])` runs
// estimate's (or configs') own main with those arguments, its standard output and standard error
// captured, and returns (exit code, output, errors). The Python package (python/perfsweep/api.py)
// turns keyword arguments into the flags, parses the output and raises PerfsweepError with the
// tool's message, so what it returns is what the tool prints. Each run sets the tool's logger
// afresh (apps/common/cli.hpp), so a process runs the tools any number of times.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "model/execution_options.hpp"

int estimate_tool(int argc, char** argv);
int configs_tool(int argc, char** argv);

namespace {

// Standard error (file descriptor 2: the tool's log and error lines, spdlog's and fprintf's) into
// a temporary file while it is in scope; text() is what was written.
class StderrCapture {
 public:
  StderrCapture() : file_(std::tmpfile()) {
    std::fflush(stderr);
    if (file_ != nullptr) saved_ = ::dup(2);
    if (saved_ >= 0 && ::dup2(::fileno(file_), 2) < 0) {
      ::close(saved_);
      saved_ = -1;
    }
  }
  ~StderrCapture() {
    restore();
    if (file_ != nullptr) std::fclose(file_);
  }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;
  // Standard error back to where it was, and what the tool wrote meanwhile.
  std::string text() {
    restore();
    std::string out;
    if (file_ == nullptr) return out;
    std::rewind(file_);
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, file_)) > 0;) out.append(buf, n);
    return out;
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }
  std::FILE* file_;
  int saved_ = -1;
};

// Runs a tool's main on `args` (without the program name) with std::cout going to a string and
// standard error to another: (exit code, standard output, standard error). An exception the tool
// let escape is exit 2 with its message, as the tools' own handler gives it.
std::tuple<int, std::string, std::string> run(const std::string& tool, const std::vector<std::string>& args) {
  int (*entry)(int, char**) = nullptr;
  if (tool == "estimate") entry = estimate_tool;
  if (tool == "configs") entry = configs_tool;
  if (entry == nullptr) throw pybind11::value_error("no tool '" + tool + "' (estimate, configs)");
  std::vector<std::string> words;
  words.reserve(args.size() + 1);
  words.push_back(tool);
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::ostringstream captured;
  std::streambuf* const stdout_buf = std::cout.rdbuf(captured.rdbuf());
  StderrCapture errors;
  int code = 0;
  std::string escaped;
  try {
    code = entry(static_cast<int>(words.size()), argv.data());
  } catch (const std::exception& e) {
    code = 2;
    escaped = tool + ": error: unexpected error (bad input?): " + e.what() + "\n";
  } catch (...) {
    code = 2;
    escaped = tool + ": error: unexpected error of unknown type\n";
  }
  std::cout.rdbuf(stdout_buf);
  return {code, captured.str(), errors.text() + escaped};
}

}  // namespace

PYBIND11_MODULE(_perfsweep, m) {
  m.doc() = "perfsweep's estimate and configs run in-process";
  m.def("run", &run, pybind11::arg("tool"), pybind11::arg("args"),
        "Runs the tool with these arguments; returns (exit code, standard output, standard error).");
  m.def(
      "option_values",
      [] {
        // the execution options spelt with names (model/execution_options.hpp), each one's names by code
        std::map<std::string, std::vector<std::string>> out;
        for (const perfsweep::ExecutionOption& o : perfsweep::kExecutionOptions) {
          if (o.values == perfsweep::OptionValues::Integer) continue;
          out[o.key] = std::vector<std::string>(o.names.begin(), o.names.end());
        }
        return out;
      },
      "The execution options with named values ({'recompute': ['none', 'selective', 'full'], ...}), each one's "
      "names in the order of their codes.");
}
