#pragma once
// Lists of systems to sweep (sweeps/paper.yaml): each entry a system name or path and the NVLink
// domain sizes to try.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace perfsweep {

struct SystemChoice {
  std::string system;               // name or path, resolved like --system
  std::vector<std::int64_t> nvs;    // NVLink domain sizes
};

// Reads `systems: [{system: A100, nvs: [4, 8, 64]}, ...]`; errors name the file, entry and key.
std::vector<SystemChoice> load_system_list(const std::filesystem::path& file);

// "8,16,32" -> {8, 16, 32}; "4:16384" -> powers of two from 4 to 16384. Positive integers up to
// max_value only (an InputError names the flag and the value otherwise).
inline constexpr std::int64_t kMaxListedCount = std::int64_t{1} << 40;
std::vector<std::int64_t> parse_gpu_counts(const std::string& text, const std::string& flag,
                                           std::int64_t max_value = kMaxListedCount);

}  // namespace perfsweep
