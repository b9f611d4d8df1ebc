#pragma once
// Loads a YAML (or JSON) file, turning a missing file or a syntax error into an InputError that
// names the file.
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <string>

namespace perfsweep {

YAML::Node load_yaml_file(const std::filesystem::path& file);


}  // namespace perfsweep
