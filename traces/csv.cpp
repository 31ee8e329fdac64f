#include "traces/csv.hpp"

#include "sim/error.hpp"
#include "traces/json_input.hpp"

#include <charconv>
#include <cmath>

namespace orrery::traces {

std::string list_columns(const std::vector<std::string>& header) {
  constexpr std::size_t kMaxNames = 16, kMaxChars = 40;
  std::string listed;
  for (std::size_t i = 0; i < header.size() && i < kMaxNames; ++i) {
    const std::string& h = header[i];
    std::string cell = sim::quote(std::string_view(h).substr(0, kMaxChars));
    if (h.size() > kMaxChars) cell.append("...");
    if (!listed.empty()) listed.append(", ");
    listed.append(cell);
  }
  if (header.size() > kMaxNames) listed += fmt::format(", ... ({} columns in all)", header.size());
  return listed;
}

std::size_t CsvTable::column(std::string_view name) const {
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return i;
  }
  throw sim::InputError(source, "line 1", fmt::format("missing column {}{}; found {}", sim::quote(name), sim::did_you_mean(name, header), list_columns(header)));
}

double CsvTable::number(std::size_t row, std::string_view name) const {
  const std::string& cell = at(row, name);
  double v = 0;
  const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
  if (ec != std::errc() || end == cell.data()) {
    throw sim::InputError(source, fmt::format("line {}, column {}", lines[row], sim::quote(name)),
                          fmt::format("found {}, expected a number", sim::quote(cell)));
  }
  return v;
}

void CsvTable::check_width(std::size_t row) const {
  if (rows[row].size() == header.size()) return;
  throw sim::InputError(source, fmt::format("line {}", lines[row]),
                        fmt::format("found {} fields, expected {} (as in the header)", rows[row].size(), header.size()));
}

std::string ascii_lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::optional<double> parse_decimal(std::string_view cell) {
  // from_chars takes no leading '+' or spaces and no "0x" prefix (it would read the "0" alone).
  double v = 0;
  const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
  if (cell.empty() || ec != std::errc() || end != cell.data() + cell.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

CsvTable parse_csv(std::string_view text, std::string source, bool ragged) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // UTF-8 byte-order mark
  CsvTable t;
  t.source = std::move(source);
  std::vector<std::string> row;
  std::string field;
  std::size_t line = 1, row_line = 1;
  bool quoted = false, field_started = false;
  const auto end_row = [&] {
    row.push_back(std::move(field));
    field.clear();
    field_started = false;
    const bool blank = row.size() == 1 && row[0].empty();
    if (!blank) {
      if (t.header.empty()) {
        t.header = std::move(row);
      } else {
        if (!ragged && row.size() != t.header.size()) {
          throw sim::InputError(t.source, fmt::format("line {}", row_line),
                                fmt::format("found {} fields, expected {} (as in the header)", row.size(), t.header.size()));
        }
        t.rows.push_back(std::move(row));
        t.lines.push_back(row_line);
      }
    }
    row.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
    } else if (c == '"' && !field_started) {
      quoted = true;
      field_started = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
      field_started = false;
    } else if (c == '\n') {
      end_row();
      row_line = ++line;
    } else if (c != '\r') {
      field += c;
      field_started = true;
    }
  }
  if (quoted) throw sim::InputError(t.source, fmt::format("line {}", row_line), "unterminated quoted field");
  if (field_started || !row.empty()) end_row();
  if (t.header.empty()) throw sim::InputError(t.source, "line 1", "empty file, expected a header row");
  return t;
}

CsvTable read_csv_file(const std::string& path, bool ragged) { return parse_csv(read_text_file(path), path, ragged); }

}  // namespace orrery::traces
