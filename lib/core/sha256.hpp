#pragma once
// SHA-256 (FIPS 180-4): the content hash that ties a hardware sweep's .xmf sidecar to the .h5 it
// belongs to, so that any reader (or `sha256sum`) can tell whether the two were published together.
#include <string>
#include <string_view>

namespace perfsweep {

// SHA-256 of the bytes, as 64 lower-case hex digits (as `sha256sum` prints it).
std::string sha256_hex(std::string_view bytes);

}  // namespace perfsweep
