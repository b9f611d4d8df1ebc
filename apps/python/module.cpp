// perfsweep's tools in-process for Python (pybind11): `_perfsweep.run("estimate", [args])` runs
// estimate's (or configs') own main with those arguments, its standard output captured, and
// returns (exit code, output). The Python package (python/perfsweep/api.py) turns keyword
// arguments into the flags and parses the output, so what it returns is what the tool prints.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

int estimate_tool(int argc, char** argv);
int configs_tool(int argc, char** argv);

namespace {

// Runs a tool's main on `args` (without the program name) with std::cout going to a string.
std::pair<int, std::string> run(const std::string& tool, const std::vector<std::string>& args) {
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
  int code = 0;
  try {
    code = entry(static_cast<int>(words.size()), argv.data());
  } catch (...) {
    std::cout.rdbuf(stdout_buf);
    throw;
  }
  std::cout.rdbuf(stdout_buf);
  return {code, captured.str()};
}

}  // namespace

PYBIND11_MODULE(_perfsweep, m) {
  m.doc() = "perfsweep's estimate and configs run in-process";
  m.def("run", &run, pybind11::arg("tool"), pybind11::arg("args"),
        "Runs the tool with these arguments; returns (exit code, standard output).");
}
