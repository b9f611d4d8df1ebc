#pragma once
// JSON inputs (a Hugging Face config.json, the reference's systems/config-*.json, GPU
// measurements) read as JSON (RFC 8259) rather than as YAML: its escapes (\uD83D\uDE00, the
// surrogate pair Python's json.dump writes for an emoji), its kinds (a string "4096" is text,
// never the number 4096), no key twice in an object, and a line and column in every syntax error.
// The result is the YAML::Node tree every reader takes: strings are tagged "!" as YAML's quoted
// scalars are, numbers, true, false plain ("?") as written, null a null node.
#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

namespace perfsweep {

// InputError "FILE: malformed JSON at line L, column C: ..." for text that is not one JSON value
// (or is not UTF-8), "FILE: duplicate key 'k' in PATH (line L, column C)" for a key given twice.
YAML::Node parse_json(std::string_view text, const std::string& file);

}  // namespace perfsweep
