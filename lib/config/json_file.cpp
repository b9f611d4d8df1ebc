#include "config/json_file.hpp"

#include <unordered_set>
#include <vector>

#include "core/error.hpp"
#include "core/text.hpp"

namespace perfsweep {
namespace {

// Deeper nesting than any input needs; the parser recurses once per level.
constexpr int kMaxDepth = 256;

class JsonParser {
 public:
  JsonParser(std::string_view text, const std::string& file) : text_(text), file_(file) {}

  YAML::Node document() {
    if (text_.starts_with("\xEF\xBB\xBF")) pos_ = 3;  // a byte order mark, which RFC 8259 lets a reader ignore
    if (const std::size_t bad = utf8_invalid_at(text_); bad != std::string::npos) {
      pos_ = bad;
      fail("not UTF-8 text (byte 0x" + hex(static_cast<unsigned char>(text_[bad])) + ")");
    }
    YAML::Node root = value(0);
    skip_space();
    if (pos_ != text_.size()) fail("text after the JSON value");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(file_ + ": malformed JSON at " + position() + ": " + what);
  }

  // "line L, column C" of the reading position (columns count characters, not the bytes of one).
  std::string position() const {
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80) {
        ++column;
      }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
  }

  static std::string hex(unsigned value) {
    const char* digits = "0123456789abcdef";
    std::string out;
    for (int shift = 4; shift >= 0; shift -= 4) out += digits[(value >> shift) & 0xF];
    return out;
  }

  // What stands at the reading position, for messages.
  std::string here() const {
    if (pos_ >= text_.size()) return "the end of the file";
    return quoted_text(text_.substr(pos_, 1));
  }

  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool take(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  YAML::Node value(int depth) {
    if (depth > kMaxDepth) fail("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    skip_space();
    if (pos_ >= text_.size()) fail("a value expected, found the end of the file");
    const char c = text_[pos_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') {
      YAML::Node n(string());
      n.SetTag("!");
      return n;
    }
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    for (const std::string_view word : {"true", "false", "null"}) {
      if (text_.substr(pos_).starts_with(word)) {
        pos_ += word.size();
        if (word == "null") return YAML::Node(YAML::NodeType::Null);
        YAML::Node n{std::string(word)};
        n.SetTag("?");
        return n;
      }
    }
    fail("a value expected (an object, a list, a string, a number, true, false or null), found " + here());
  }

  YAML::Node object(int depth) {
    ++pos_;
    YAML::Node out(YAML::NodeType::Map);
    std::unordered_set<std::string> keys;
    skip_space();
    if (take('}')) return out;
    while (true) {
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != '"') fail("a key (a string) expected, found " + here());
      const std::size_t key_at = pos_;
      std::string key = string();
      if (!keys.insert(key).second) {
        pos_ = key_at;
        std::string where;
        for (const std::string& p : path_) where += (where.empty() || (!p.empty() && p.front() == '[') ? "" : ".") + p;
        throw InputError(file_ + ": duplicate key '" + shown_text(key) + "'" + (where.empty() ? "" : " in " + where) +
                         " (" + position() + ")");
      }
      skip_space();
      if (!take(':')) fail("':' expected after the key '" + shown_text(key) + "', found " + here());
      path_.push_back(shown_text(key));
      YAML::Node v = value(depth + 1);
      path_.pop_back();
      YAML::Node k(key);
      k.SetTag("!");
      out.force_insert(k, v);
      skip_space();
      if (take('}')) return out;
      if (!take(',')) fail("',' or '}' expected after a member, found " + here());
    }
  }

  YAML::Node array(int depth) {
    ++pos_;
    YAML::Node out(YAML::NodeType::Sequence);
    skip_space();
    if (take(']')) return out;
    for (std::size_t i = 0;; ++i) {
      std::string entry = "[";
      entry += std::to_string(i);
      path_.push_back(entry + "]");
      out.push_back(value(depth + 1));
      path_.pop_back();
      skip_space();
      if (take(']')) return out;
      if (!take(',')) fail("',' or ']' expected after a list entry, found " + here());
    }
  }

  // Four hex digits of a \u escape.
  char32_t hex4() {
    if (text_.size() - pos_ < 4) fail("four hex digits expected after \\u");
    char32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = text_[pos_++];
      v <<= 4;
      if (h >= '0' && h <= '9') v |= static_cast<char32_t>(h - '0');
      else if (h >= 'a' && h <= 'f') v |= static_cast<char32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') v |= static_cast<char32_t>(h - 'A' + 10);
      else {
        --pos_;
        fail("four hex digits expected after \\u, found " + here());
      }
    }
    return v;
  }

  std::string string() {
    ++pos_;  // the opening quote
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) fail("the string is not closed");
      const char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) fail("a control character (0x" + hex(static_cast<unsigned char>(c)) + ") in a string; write it as an escape");
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      ++pos_;
      if (pos_ >= text_.size()) fail("the string is not closed");
      const char e = text_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          char32_t cp = hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) fail("a low surrogate (\\u" + hex_code(cp) + ") without a high one before it");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            // UTF-16's surrogate pair for a code point past U+FFFF (what json.dump writes for an emoji)
            if (!(take('\\') && take('u'))) fail("a high surrogate (\\u" + hex_code(cp) + ") without a low one after it");
            const char32_t low = hex4();
            if (low < 0xDC00 || low > 0xDFFF) fail("a high surrogate (\\u" + hex_code(cp) + ") without a low one after it");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default:
          --pos_;
          fail("an unknown escape \\" + shown_text(text_.substr(pos_, 1)));
      }
    }
  }

  static std::string hex_code(char32_t cp) {
    return hex((static_cast<unsigned>(cp) >> 8) & 0xFF) + hex(static_cast<unsigned>(cp) & 0xFF);
  }

  // RFC 8259's number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, kept as written.
  YAML::Node number() {
    const std::size_t start = pos_;
    const auto digits = [&] {
      const std::size_t from = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      return pos_ - from;
    };
    take('-');
    if (take('0')) {
      if (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') fail("a number with a leading zero");
    } else if (digits() == 0) {
      fail("a digit expected in a number, found " + here());
    }
    if (take('.') && digits() == 0) fail("a digit expected after the decimal point, found " + here());
    if (take('e') || take('E')) {
      if (!take('+')) take('-');
      if (digits() == 0) fail("a digit expected in the exponent, found " + here());
    }
    YAML::Node n{std::string(text_.substr(start, pos_ - start))};
    n.SetTag("?");
    return n;
  }

  std::string_view text_;
  const std::string& file_;
  std::size_t pos_ = 0;
  std::vector<std::string> path_;  // the keys (and list positions) down to the value being read
};

}  // namespace

YAML::Node parse_json(std::string_view text, const std::string& file) { return JsonParser(text, file).document(); }

}  // namespace perfsweep
