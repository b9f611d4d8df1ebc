#include "core/csv.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <set>

#include "core/error.hpp"
#include "core/files.hpp"

namespace perfsweep {

std::string trim(std::string_view text) {
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  return std::string(text);
}

std::vector<std::string> split_csv_line(std::string_view text, const std::string& where) {
  std::vector<std::string> out;
  std::string cell;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cell += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(trim(cell));
      cell.clear();
    } else {
      cell += c;
    }
  }
  if (quoted) throw InputError(where + ": unterminated quoted field");
  out.push_back(trim(cell));
  return out;
}

std::optional<double> parse_finite(std::string_view text) {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p != end || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"') out += '"';
    out += ch;
  }
  out += '"';
  return out;
}

std::vector<std::string> split_flag_list(const std::string& text, const std::string& flag) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) throw InputError(flag + ": an empty value in '" + text + "'");
    if (std::find(out.begin(), out.end(), item) != out.end()) {
      throw InputError(flag + " lists " + item + " twice, got '" + text + "'");
    }
    out.push_back(std::move(item));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

CsvTable read_csv_table(const std::filesystem::path& path) {
  const std::string file = path.string();
  require_input_file(file);  // a FIFO would block the read, a folder read as empty
  std::ifstream in(path);
  if (!in) throw InputError(file + ": cannot open (no such file, or unreadable)");
  CsvTable t;
  std::string text;
  std::size_t line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (line == 1 && text.starts_with("\xEF\xBB\xBF")) text.erase(0, 3);
    if (trim(text).empty()) continue;
    const std::string where = file + ":" + std::to_string(line);
    std::vector<std::string> cells = split_csv_line(text, where);
    if (t.header.empty()) {
      t.header = std::move(cells);
      continue;
    }
    if (cells.size() != t.header.size()) {
      throw InputError(where + ": " + std::to_string(cells.size()) + " fields, the header has " +
                       std::to_string(t.header.size()));
    }
    t.rows.push_back(std::move(cells));
    t.lines.push_back(line);
  }
  if (t.header.empty()) throw InputError(file + ": empty file, no header line");
  if (t.rows.empty()) throw InputError(file + ": no rows after the header");
  std::set<std::string> seen;
  for (const std::string& h : t.header) {
    if (h.empty()) throw InputError(file + ": an empty column name in the header");
    if (!seen.insert(h).second) throw InputError(file + ": column '" + h + "' twice in the header");
  }
  return t;
}

}  // namespace perfsweep
