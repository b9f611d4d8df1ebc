// core/hash.hpp against the published FNV-1a 64-bit test vectors (the golden64a table of Go's
// hash/fnv tests, from the FNV authors' reference suite).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "core/hash.hpp"

namespace perfsweep {
namespace {

TEST(Fnv1a, PublishedVectors) {
  EXPECT_EQ(fnv1a(""), 0xcbf29ce484222325ull);  // the offset basis: nothing mixed in
  EXPECT_EQ(fnv1a("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a("ab"), 0x089c4407b545986aull);
  EXPECT_EQ(fnv1a("abc"), 0xe71fa2190541574bull);
  EXPECT_EQ(fnv1a("abcd"), 0xfc179f83ee0724ddull);
  EXPECT_EQ(fnv1a("foobar"), 0x85944171f73967e8ull);
}

// An embedded NUL is a byte like any other: the string_view's length, not strlen, bounds the hash.
TEST(Fnv1a, HashesEveryByteOfTheView) {
  const std::string with_nul("a\0", 2);
  EXPECT_NE(fnv1a(with_nul), fnv1a("a"));
  // One more round of FNV-1a on "a"'s hash with the byte 0: xor leaves it, the multiply mixes it.
  EXPECT_EQ(fnv1a(with_nul), 0xaf63dc4c8601ec8cull * 1099511628211ull);
}

// 16 lower-case hex digits, zero-padded: "ab" hashes to a value with a leading zero nibble.
TEST(Fnv1a, HexIsSixteenLowerCaseDigits) {
  EXPECT_EQ(fnv1a_hex(""), "cbf29ce484222325");
  EXPECT_EQ(fnv1a_hex("ab"), "089c4407b545986a");
  EXPECT_EQ(fnv1a_hex("abc"), "e71fa2190541574b");
}

}  // namespace
}  // namespace perfsweep
