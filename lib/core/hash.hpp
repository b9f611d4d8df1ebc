#pragma once
// 64-bit FNV-1a (offset basis 14695981039346656037, prime 1099511628211): checksums of journal
// records and fingerprints of run inputs, not for security.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace perfsweep {

inline std::uint64_t fnv1a(std::string_view bytes) {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

// 16 lower-case hex digits of a 64-bit value (hashes as outputs print them).
inline std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// FNV-1a of the bytes, as 16 lower-case hex digits.
inline std::string fnv1a_hex(std::string_view bytes) { return hex64(fnv1a(bytes)); }

}  // namespace perfsweep
