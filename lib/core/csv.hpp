#pragma once
// Text fields of measurement files: CSV records and numbers, shared by the readers of nccl-tests
// tables (comm/measurements) and of validation sets' runs (calib/validation_set).
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace perfsweep {

// The fields of one CSV record (RFC 4180 quoting, no line break inside quotes), each with its
// surrounding white space removed. InputError naming `where` for an unterminated quote.
std::vector<std::string> split_csv_line(std::string_view text, const std::string& where);

// A CSV file: a header line, then one record per line (RFC 4180 quoting, no line break inside
// quotes; a UTF-8 byte-order mark and CR line ends are accepted; blank lines skipped).
struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::size_t> lines;  // 1-based line of each row
};
// InputError naming the file (and the line) for an unreadable file, no header, no row after it, a
// record whose field count is not the header's, or an empty or repeated column name.
CsvTable read_csv_table(const std::filesystem::path& path);

// `text` as one CSV field: as it is, or within double quotes (inner ones doubled) where it holds a
// comma, a quote or a line break (RFC 4180), so split_csv_line reads it back.
std::string csv_field(std::string_view text);

// A flag's comma-separated values ("none,full" of --recompute): InputError naming `flag` for an
// empty or repeated one.
std::vector<std::string> split_flag_list(const std::string& text, const std::string& flag);

// `text` without leading and trailing white space.
std::string trim(std::string_view text);

// The whole of `text` as a finite number, or nothing.
std::optional<double> parse_finite(std::string_view text);

}  // namespace perfsweep
