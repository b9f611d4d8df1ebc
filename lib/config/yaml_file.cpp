#include "config/yaml_file.hpp"

#include <algorithm>
#include <cstdio>
#include <unordered_set>

#include "config/json_file.hpp"
#include "core/files.hpp"
#include "core/text.hpp"

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

namespace {

// Nodes one document may have, counted as the check walks them: aliases let a small file stand
// for a tree of billions ("billion laughs"), which no reader should walk.
constexpr std::size_t kMaxNodes = std::size_t{1} << 22;

// Holds every node of a document to what every input must be: keys that are plain names, given
// once per mapping, and UTF-8 text. `path` names the node in messages ("moe", "axes[0]").
class DocumentCheck {
 public:
  explicit DocumentCheck(const std::string& file) : file_(file) {}

  void node(const YAML::Node& n, const std::string& path, int depth) {
    if (++visited_ > kMaxNodes || depth > 256) {
      throw InputError(file_ + ": more than " + std::to_string(kMaxNodes) +
                       " values or 256 levels of nesting (aliases that repeat a tree?)" + yaml_line(n));
    }
    if (n.IsScalar()) {
      text(n.Scalar(), path, n);
    } else if (n.IsSequence()) {
      std::size_t i = 0;
      for (const YAML::Node& item : n) node(item, path + "[" + std::to_string(i++) + "]", depth + 1);
    } else if (n.IsMap()) {
      map(n, path, depth);
    }
  }

 private:
  std::string at(const std::string& path) const { return file_ + ": " + (path.empty() ? "" : path + ": "); }

  void text(const std::string& s, const std::string& path, const YAML::Node& n) const {
    if (const std::string bad = utf8_error(s); !bad.empty()) {
      throw InputError(at(path) + "not UTF-8 text, " + bad + ": '" + shown_text(s) + "'" + yaml_line(n));
    }
  }

  void map(const YAML::Node& n, const std::string& path, int depth) {
    std::unordered_set<std::string> keys;
    for (const auto& kv : n) {
      const std::string key = yaml_scalar(kv.first, at(path) + "a key", "a plain name");
      text(key, path, kv.first);
      // a key is a name every message may echo: no control characters, no pages of text
      const auto control = [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; };
      const bool plain = key.size() <= kMaxNameBytes && std::none_of(key.begin(), key.end(), control);
      if (!plain) {
        throw InputError(at(path) + "a key must be a plain name (at most " + std::to_string(kMaxNameBytes) +
                         " bytes, no control characters), got '" + shown_text(key) + "'" + yaml_line(kv.first));
      }
      if (!keys.insert(key).second) {
        throw InputError(at(path) + "duplicate key '" + shown_text(key) + "'" + yaml_line(kv.first));
      }
      node(kv.second, path.empty() ? key : path + "." + key, depth + 1);
    }
  }

  const std::string& file_;
  std::size_t visited_ = 0;
};

}  // namespace

YAML::Node load_yaml_text(std::string_view text, const std::string& file) {
  YAML::Node root;
  if (std::filesystem::path(file).extension() == ".json") {
    root = parse_json(text, file);
  } else {
    try {
      root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
      throw InputError(file + ": malformed YAML at line " + std::to_string(e.mark.line + 1) + ", column " +
                       std::to_string(e.mark.column + 1) + ": " + shown_text(e.msg));
    }
  }
  DocumentCheck(file).node(root, "", 0);
  return root;
}

YAML::Node load_yaml_file(const std::filesystem::path& file) {
  return load_yaml_text(read_input_file(file.string(), kMaxInputBytes), file.string());
}

void check_name(const std::string& where, const std::string& name, NameUse use) {
  const bool group = use == NameUse::kGroup;
  const auto refuse = [&](const char* why) {
    throw InputError(where + " must be a name of 1 to " + std::to_string(kMaxNameBytes) +
                     " bytes of UTF-8 text without control characters" +
                     (group ? " or '/' (it names an HDF5 group)" : "") + ", got " + quoted_text(name) + ": " + why);
  };
  if (name.empty() || name.size() > kMaxNameBytes) refuse(name.empty() ? "empty" : "too long");
  if (utf8_invalid_at(name) != std::string::npos) refuse("not UTF-8");
  for (const char c : name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) refuse("a control character");
    if (group && c == '/') refuse("a '/'");
  }
  if (group && (name == "." || name == "..")) refuse("a folder's name");
}

std::string yaml_shown(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "nothing";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return quoted_text(n.Scalar());
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
