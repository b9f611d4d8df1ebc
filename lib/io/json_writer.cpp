#include "io/json_writer.hpp"

#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "core/published.hpp"
#include "core/text.hpp"

namespace perfsweep {

std::string format_double(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s(buf);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

void JsonWriter::newline() {
  if (indent_ <= 0) return;
  out_ += '\n';
  out_.append(first_.size() * static_cast<std::size_t>(indent_), ' ');
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
    newline();
  }
}

std::string JsonWriter::field() const {
  std::string path;
  for (const std::string& k : keys_) {
    if (k.empty()) continue;
    path += k;
    path += '.';
  }
  path += key_;
  return path;
}

JsonWriter& JsonWriter::begin_object() {
  keys_.push_back(after_key_ ? key_ : std::string());
  before_value();
  out_ += '{';
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  const bool empty = first_.back();
  first_.pop_back();
  keys_.pop_back();
  if (!empty) newline();
  out_ += '}';
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  keys_.push_back(after_key_ ? key_ : std::string());
  before_value();
  out_ += '[';
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  const bool empty = first_.back();
  first_.pop_back();
  keys_.pop_back();
  if (!empty) newline();
  out_ += ']';
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  before_value();
  key_ = k;
  write_string(k);
  out_ += indent_ > 0 ? ": " : ":";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(double v) {
  if (!publishable(v)) check_published(v, field());
  before_value();
  out_ += format_double(v);
  return *this;
}

JsonWriter& JsonWriter::value(std::int64_t v) {
  if (!publishable(v)) check_published(v, field());
  before_value();
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::value(bool v) {
  before_value();
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view v) {
  before_value();
  write_string(v);
  return *this;
}

void JsonWriter::write_string(std::string_view v) {
  // Inputs are held to UTF-8 where they are read (config/yaml_file.hpp); a string that is not
  // would make the whole document unreadable, so it is refused here, the last check.
  if (const std::string bad = utf8_error(v); !bad.empty()) {
    std::string message = "refusing to publish ";
    message += field();
    message += " = " + quoted_text(v) + ": not UTF-8 text (" + bad + "); nothing was written (check the inputs' names)";
    throw InputError(message);
  }
  std::string esc;
  for (char c : v) {
    switch (c) {
      case '"': esc += "\\\""; break;
      case '\\': esc += "\\\\"; break;
      case '\n': esc += "\\n"; break;
      case '\t': esc += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          esc += buf;
        } else {
          esc += c;
        }
    }
  }
  out_ += '"';
  out_ += esc;
  out_ += '"';
}

}  // namespace perfsweep
