// report: one self-contained HTML page of a sweep's HDF5 file (or of the files of one
// `sweep --strat all` run): its inputs, the best configuration per GPU count and system, where
// the time goes, memory against capacity and, for hardware sweeps, heatmaps.
#include <CLI/CLI.hpp>
#include <csignal>
#include <unistd.h>

#include "common/cli.hpp"
#include "common/tool.hpp"
#include "core/files.hpp"
#include "io/html_report.hpp"
#include "io/sweep_file.hpp"

using namespace perfsweep;

namespace {

void on_signal(int sig) {
  if (const char* p = partial_output_path(0)) unlink(p);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGXFSZ, SIG_IGN);  // past a file-size limit, a write fails (reported) instead of killing
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  CLI::App app{"report: one self-contained HTML page of sweep results (HDF5 files of `sweep`), to open in a browser"};
  std::vector<std::string> inputs;
  std::string output;
  cli::Verbosity verbosity;
  app.add_option("files", inputs,
                 "sweep HDF5 files of one model and global batch (several: e.g. the files of --strat all, the best "
                 "configuration taken over all of them)")
      ->required();
  app.add_option("-o,--output", output, "the HTML file to write (atomically)")->required();
  cli::add_common_flags(app, verbosity);
  app.footer("Example: report outputs/exec_1d_gpt3_1T.h5 -o report.html\n"
             "Exit codes: 0 ok, 2 bad input (a file that is not a sweep's, named with its field), 1 output not "
             "written.");
  return cli::run_tool("report", app, argc, argv, verbosity, [&] {
    require_regular_or_absent(output, "output");
    refuse_output_over_input(output, inputs);
    std::vector<SweepFile> files;
    for (const std::string& path : inputs) files.push_back(read_sweep_file_isolated(path));
    const std::string page = html_report(files);
    write_text_atomically(output, page);
    spdlog::info("wrote {} ({} bytes) from {} file(s)", output, page.size(), files.size());
    return 0;
  });
}
