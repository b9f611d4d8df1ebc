#pragma once
// The report a person opens: one self-contained HTML page (inline CSS, SVG and a small script;
// nothing fetched, so it opens offline) of one or more sweep files (io/sweep_file.hpp), e.g. the
// files of `sweep --strat all`: the inputs, the best configuration per GPU count and system over
// all files, throughput and MFU against GPU count, where the step's time goes, memory against
// capacity and, for hardware sweeps, heatmaps of the speed-up over the base system. Hovering a
// mark shows its configuration. The same files give the same bytes.
#include <string>
#include <vector>

#include "io/sweep_file.hpp"

namespace perfsweep {

// InputError when the files are not of one model and global batch (their results would not
// compare), or none is given.
std::string html_report(const std::vector<SweepFile>& files);

}  // namespace perfsweep
