#pragma once
// Units a system file's value may be written with ("ib_bandwidth: 400 Gb/s", "hbm_capacity: 80
// GiB"), each as a factor to the key's own unit (GB/s = 1e9 bytes/s, GB = 1e9 bytes), which a bare
// number keeps.
#include <charconv>
#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace perfsweep {

struct UnitFactor {
  const char* name;
  double factor;  // value in the base unit per 1 of this unit
};

// Bandwidths, base GB/s: bytes (B) or bits (b) per second, decimal (k, M, G, T) or binary (GiB).
inline constexpr UnitFactor kBandwidthUnits[] = {
    {"GB/s", 1},       {"Gb/s", 0.125},   {"TB/s", 1e3},        {"Tb/s", 125},
    {"MB/s", 1e-3},    {"Mb/s", 1.25e-4}, {"GiB/s", 1.073741824},
};
// Memory sizes, base GB: decimal or binary (1 GiB = 2^30 bytes = 1.073741824 GB).
inline constexpr UnitFactor kMemoryUnits[] = {
    {"GB", 1}, {"GiB", 1.073741824}, {"TB", 1e3}, {"TiB", 1099.511627776}, {"MB", 1e-3}, {"MiB", 0.001048576},
};

// The units a key of base unit `base` may be written in ("GB/s", "GB"); none for any other.
inline std::span<const UnitFactor> units_for(std::string_view base) {
  if (base == "GB/s") return kBandwidthUnits;
  if (base == "GB") return kMemoryUnits;
  return {};
}

// "400 Gb/s" (the space optional) as its number and unit's text; nothing when the text does not
// begin with a finite number followed by a unit.
struct WrittenQuantity {
  double number = 0;
  std::string unit;
};
inline std::optional<WrittenQuantity> split_quantity(std::string_view text) {
  const char* end = text.data() + text.size();
  double v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr == text.data() || !std::isfinite(v)) return std::nullopt;
  std::string_view unit(ptr, static_cast<std::size_t>(end - ptr));
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  if (unit.empty()) return std::nullopt;
  return WrittenQuantity{v, std::string(unit)};
}

// "GB/s, Gb/s, TB/s, ...": for messages.
inline std::string unit_names(std::span<const UnitFactor> units) {
  std::string out;
  for (const UnitFactor& u : units) out += (out.empty() ? "" : ", ") + std::string(u.name);
  return out;
}

}  // namespace perfsweep
