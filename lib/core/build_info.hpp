#pragma once
// What built this binary and where it runs, for logs, --version and the outputs' root attributes.
#include <string>

namespace perfsweep {

// "0.1.0" (the CMake project version).
const char* software_version();
// The source tree's commit when CMake configured the build from a git repository ("" otherwise),
// with "-dirty" when it had uncommitted changes.
const char* git_commit();
// "perfsweep 0.1.0 (git 1a2b3c4d5e6f)".
std::string version_line();
// gethostname(), "" if unknown.
std::string host_name();
// argv joined by spaces.
std::string command_line(int argc, char** argv);

}  // namespace perfsweep
