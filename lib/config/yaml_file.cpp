#include "config/yaml_file.hpp"

#include <cstdio>

namespace perfsweep {

std::string yaml_double(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string yaml_quoted(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

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
