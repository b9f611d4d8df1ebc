// core/text.hpp: UTF-8 as RFC 3629 defines it (byte sequences from its table 3-7), and values
// echoed in messages at most kShownBytes long with control characters escaped.
#include "core/text.hpp"

#include <gtest/gtest.h>

#include <string>

namespace perfsweep {
namespace {

TEST(Text, WellFormedUtf8IsAccepted) {
  EXPECT_EQ(utf8_invalid_at(""), std::string::npos);
  EXPECT_EQ(utf8_invalid_at("A100-NVS8"), std::string::npos);
  EXPECT_EQ(utf8_invalid_at("caf\xC3\xA9"), std::string::npos);          // U+00E9
  EXPECT_EQ(utf8_invalid_at("\xE2\x82\xAC"), std::string::npos);         // U+20AC
  EXPECT_EQ(utf8_invalid_at("\xF0\x9F\x98\x80"), std::string::npos);     // U+1F600, an emoji
  EXPECT_EQ(utf8_invalid_at("\xF4\x8F\xBF\xBF"), std::string::npos);     // U+10FFFF, the last
}

TEST(Text, MalformedUtf8IsFoundAtItsFirstByte) {
  EXPECT_EQ(utf8_invalid_at("ab\xFF"), 2u);              // never a UTF-8 byte
  EXPECT_EQ(utf8_invalid_at("a\xC0\x80"), 1u);           // overlong NUL
  EXPECT_EQ(utf8_invalid_at("\xE0\x80\xAF"), 0u);        // overlong '/'
  EXPECT_EQ(utf8_invalid_at("x\xED\xA0\x80"), 1u);       // U+D800, a surrogate
  EXPECT_EQ(utf8_invalid_at("\xF4\x90\x80\x80"), 0u);    // past U+10FFFF
  EXPECT_EQ(utf8_invalid_at("ok\xF0\x9F\x98"), 2u);      // cut short
  EXPECT_EQ(utf8_invalid_at("\x80"), 0u);                // a continuation byte alone
  EXPECT_EQ(utf8_error("ab\xFF"), "at byte 2 (0xff)");
  EXPECT_EQ(utf8_error("ab"), "");
}

TEST(Text, EncodesCodePoints) {
  std::string s;
  for (const char32_t cp : {U'A', U'\u00E9', U'\u20AC', U'\U0001F600'}) append_utf8(s, cp);
  EXPECT_EQ(s, "A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
}

TEST(Text, ShownValuesAreShortAndPrintable) {
  EXPECT_EQ(shown_text("A100"), "A100");
  EXPECT_EQ(shown_text("a\x1b[31mb"), "a\\x1b[31mb");  // a terminal escape never reaches the terminal
  EXPECT_EQ(shown_text("a\xFFz"), "a\\xffz");
  const std::string big(20'000'000, 'x');
  EXPECT_EQ(shown_text(big), std::string(kShownBytes, 'x') + "... (20000000 bytes in all)");
  // cut at a character's start, never inside one
  const std::string emojis = std::string(kShownBytes - 1, 'x') + "\xF0\x9F\x98\x80" + "tail";
  EXPECT_EQ(shown_text(emojis), std::string(kShownBytes - 1, 'x') + "\xF0\x9F\x98\x80... (207 bytes in all)");
  EXPECT_EQ(quoted_text("x\ny"), "'x\\x0ay'");
}

}  // namespace
}  // namespace perfsweep
