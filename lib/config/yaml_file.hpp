#pragma once
// Loads a YAML (or JSON) file, turning a missing file or a syntax error into an InputError that
// names the file.
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <string>

namespace perfsweep {

YAML::Node load_yaml_file(const std::filesystem::path& file);

// Writes `text` to a temporary file beside `file` and renames it, so an interrupted run never
// leaves a truncated file behind. Errors are InputErrors naming the file.
void write_file_atomically(const std::filesystem::path& file, const std::string& text);

}  // namespace perfsweep
