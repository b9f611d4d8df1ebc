#pragma once
// The one reader of every YAML and JSON input: a file is read whole (it must be a regular file of
// at most kMaxInputBytes), parsed (a .json file as JSON, config/json_file.hpp; anything else as
// YAML) and held to what every input must be before any reader looks at it: no key twice in any
// mapping at any depth, keys that are plain names, text that is UTF-8. Errors are InputErrors
// naming the file, the key's path and the line. The readers then read its values so that a value
// of the wrong kind (a list where a name belongs) is an InputError naming the file, the line and
// the key, never a yaml-cpp exception.
#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

#include "core/error.hpp"

namespace perfsweep {

// The largest YAML or JSON input read (bytes): the largest shipped one is under 1 MB, and a
// parsed document takes several times its size in memory.
inline constexpr std::size_t kMaxInputBytes = std::size_t{64} << 20;

YAML::Node load_yaml_file(const std::filesystem::path& file);

// The same for `text`, the content of `file` (read already, e.g. to hash it), as JSON when
// `file` ends in .json.
YAML::Node load_yaml_text(std::string_view text, const std::string& file);

// Whether the node is text as written (a quoted YAML scalar, a JSON string): never a number or a
// boolean, whatever its characters.
inline bool yaml_is_text(const YAML::Node& n) { return n.IsScalar() && n.Tag() == "!"; }

// A name a file gives or is given by its file name (a system, model, runtime, sweep or network
// tier): it becomes an HDF5 attribute, XML, JSON and HTML, so it must be UTF-8 of 1 to
// kMaxNameBytes bytes without control characters; one that names an HDF5 group (a system's:
// "/A100-NVS8") also without '/' and not "." or "..". (A name that becomes part of a file name,
// a model's or a sweep's, is reduced to safe characters where the sweep names its output.)
// InputError "<where> must be ..., got '...'" otherwise.
inline constexpr std::size_t kMaxNameBytes = 256;
enum class NameUse { kLabel, kGroup };
void check_name(const std::string& where, const std::string& name, NameUse use);

// A value for messages: the scalar in quotes (at most kShownBytes of it, core/text.hpp), or "a
// list", "a mapping", "nothing".
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
