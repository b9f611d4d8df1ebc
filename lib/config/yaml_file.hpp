#pragma once
// Loads a YAML (or JSON) file, turning a missing file or a syntax error into an InputError that
// names the file; and reads its values so that a value of the wrong kind (a list where a name
// belongs) is an InputError naming the file, the line and the key, never a yaml-cpp exception.
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <string>
#include <utility>

#include "core/error.hpp"

namespace perfsweep {

YAML::Node load_yaml_file(const std::filesystem::path& file);

// A value for messages: the scalar in quotes, or "a list", "a mapping", "nothing".
std::string yaml_shown(const YAML::Node& n);

// " (line N)" of a node in its file (lines count from 1), or "" when the node has no position.
std::string yaml_line(const YAML::Node& n);

// The text of a non-empty scalar (a name, a path, a key); otherwise InputError
// "<where> must be <what>, got a list (line 3)".
std::string yaml_scalar(const YAML::Node& n, const std::string& where, const char* what = "a name");

// Writers' scalars: a double as "%.17g" (it reads back to the same double), and a string
// double-quoted with escapes, so that names such as "yes", "1e3" or "a: b" stay strings.
std::string yaml_double(double v);
std::string yaml_quoted(const std::string& s);

// Runs `read`, turning a yaml-cpp exception that escaped the readers' own checks (a conversion of
// a value of the wrong kind) into an InputError naming the file and the line.
template <class Read>
auto with_yaml_errors(const std::string& file, Read&& read) {
  try {
    return std::forward<Read>(read)();
  } catch (const YAML::Exception& e) {
    throw InputError(file + ": line " + std::to_string(e.mark.line + 1) + ": value of the wrong kind: " + e.msg);
  }
}

}  // namespace perfsweep
