#pragma once
// Numbers as people write them: read with SI suffixes ("15T" tokens, "2.5e12"), written with
// thousands separators and k/M/B/T multipliers ("6.39M" rather than 6.393e+06), and the name of a
// list nearest to a misspelt one ("did you mean H100-calibrated?").
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace perfsweep {

// A non-negative number as a flag gives it: a decimal or scientific number ("15e12", "2.5e12",
// "2500000") or one with a multiplier suffix, k or K (1e3), M (1e6), B or G (1e9: billions, as
// token counts are spoken, or giga), T (1e12), P (1e15) ("15T", "1.5M", "300B"). nullopt for
// anything else: a sign, an empty text, trailing words, NaN, infinity, an unknown suffix.
std::optional<double> parse_si_number(std::string_view text);

// `v` for people: below 10,000 with up to `digits` significant digits and thousands separators
// ("1,665", "218.3", "0.0512"); from 10,000 up with a multiplier, three significant digits
// ("15.0k" is written "15k"; "6.39M", "1.2B", "15T"). Not finite: "-".
std::string human_number(double v, int digits = 4);

// A whole number with thousands separators: 9183444 -> "9,183,444".
std::string grouped_integer(long long v);

// Edit distance (insertions, deletions, substitutions), ASCII case-insensitively.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The name of `names` nearest to `given`: one it is a prefix of, or which differs only in case,
// else the nearest within a third of the longer name's length in edits (ties: the first listed);
// "" when none is near.
std::string nearest_name(std::string_view given, const std::vector<std::string>& names);

}  // namespace perfsweep
