#pragma once
// Text that comes from inputs: whether it is UTF-8, and how a message shows it. Every value an
// input gives may end up in an output (an HDF5 attribute, JSON, an HTML page, an XML sidecar) and
// in messages, so inputs are held to well-formed UTF-8 where they are read, and messages echo at
// most kShownBytes of a value, with control characters and stray bytes escaped: a 20 MB value or
// a terminal escape sequence in a file never reaches the terminal whole.
#include <cstddef>
#include <string>
#include <string_view>

namespace perfsweep {

// How many bytes of a value a message echoes.
inline constexpr std::size_t kShownBytes = 200;

// The offset of the first byte of `s` that does not belong to well-formed UTF-8 (RFC 3629: no
// overlong forms, no surrogates, nothing past U+10FFFF), or std::string::npos when all of it does.
std::size_t utf8_invalid_at(std::string_view s);

// Appends the UTF-8 bytes of the code point `cp` (at most U+10FFFF, not a surrogate).
void append_utf8(std::string& out, char32_t cp);

// `s` for a message: at most `max_bytes` of it (cut at a character's start), control characters
// and bytes that are not UTF-8 as \xNN, and what was left out counted ("... (20000000 bytes in
// all)").
std::string shown_text(std::string_view s, std::size_t max_bytes = kShownBytes);

// shown_text(s) between two `quote` characters: 'value'.
std::string quoted_text(std::string_view s, char quote = '\'');

// `&`, `<`, `>`, `"` and `'` as XML's (and HTML's) entities: for text and attribute values alike.
std::string xml_escaped(std::string_view text);

// "at byte N (0xNN)": where `s` stops being UTF-8, for messages; "" when it is UTF-8.
std::string utf8_error(std::string_view s);

}  // namespace perfsweep
