#include "core/text.hpp"

#include <cstdio>

namespace perfsweep {
namespace {

// The length of the well-formed UTF-8 character at s[i], or 0 when the bytes there are not one
// (RFC 3629, table 3-7 of the Unicode standard: the second byte's range depends on the first).
std::size_t utf8_char_length(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;  // no overlong forms
    if (b0 == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
  } else {
    return 0;
  }
  if (s.size() - i < n) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return n;
}

void append_escaped_byte(std::string& out, unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(b));
  out += buf;
}

}  // namespace

std::size_t utf8_invalid_at(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_char_length(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string::npos;
}

void append_utf8(std::string& out, char32_t cp) {
  const auto put = [&](char32_t bits) { out += static_cast<char>(static_cast<unsigned char>(bits)); };
  if (cp < 0x80) {
    put(cp);
  } else if (cp < 0x800) {
    put(0xC0 | (cp >> 6));
    put(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    put(0xE0 | (cp >> 12));
    put(0x80 | ((cp >> 6) & 0x3F));
    put(0x80 | (cp & 0x3F));
  } else {
    put(0xF0 | (cp >> 18));
    put(0x80 | ((cp >> 12) & 0x3F));
    put(0x80 | ((cp >> 6) & 0x3F));
    put(0x80 | (cp & 0x3F));
  }
}

std::string shown_text(std::string_view s, std::size_t max_bytes) {
  std::string out;
  std::size_t i = 0;
  while (i < s.size() && i < max_bytes) {
    const auto b = static_cast<unsigned char>(s[i]);
    const std::size_t n = utf8_char_length(s, i);
    if (n == 0 || b < 0x20 || b == 0x7F) {
      append_escaped_byte(out, b);
      ++i;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  if (i < s.size()) out += "... (" + std::to_string(s.size()) + " bytes in all)";
  return out;
}

std::string quoted_text(std::string_view s, char quote) {
  std::string out(1, quote);
  out += shown_text(s);
  out += quote;
  return out;
}

std::string xml_escaped(std::string_view text) {
  std::string o;
  o.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string utf8_error(std::string_view s) {
  const std::size_t at = utf8_invalid_at(s);
  if (at == std::string::npos) return "";
  char buf[48];
  std::snprintf(buf, sizeof buf, "at byte %zu (0x%02x)", at, static_cast<unsigned>(static_cast<unsigned char>(s[at])));
  return buf;
}

}  // namespace perfsweep
