#include "config/yaml_file.hpp"

namespace perfsweep {

YAML::Node load_yaml_file(const std::filesystem::path& file) {
  const std::string f = file.string();
  try {
    return YAML::LoadFile(f);
  } catch (const YAML::BadFile&) {
    throw InputError(f + ": cannot open (no such file, or unreadable)");
  } catch (const YAML::Exception& e) {
    throw InputError(f + ": malformed YAML: " + e.what());
  }
}

std::string yaml_shown(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "nothing";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "'" + n.Scalar() + "'";
}

std::string yaml_line(const YAML::Node& n) {
  if (!n.IsDefined() || n.Mark().is_null()) return "";
  return " (line " + std::to_string(n.Mark().line + 1) + ")";
}

std::string yaml_scalar(const YAML::Node& n, const std::string& where, const char* what) {
  if (n.IsDefined() && n.IsScalar() && !n.Scalar().empty()) return n.Scalar();
  throw InputError(where + " must be " + what + ", got " + yaml_shown(n) + yaml_line(n));
}

}  // namespace perfsweep
