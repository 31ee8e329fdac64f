// CSV files (RFC 4180: quoted fields, doubled quotes, commas and newlines inside quotes) read
// into rows that remember their line, for precise errors. A leading UTF-8 byte-order mark is
// dropped (spreadsheets write one; the JSON reader drops it too).
//   CsvTable t = read_csv_file("trace.csv");
//   const std::string& v = t.at(row, "busbw");   // InputError naming file and line if absent
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::traces {

// A header's column names for an error message: each quoted, at most 16 of them and 40
// characters each, then how many there are in all (a malformed header stays one short line).
std::string list_columns(const std::vector<std::string>& header);

struct CsvTable {
  std::string source;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::size_t> lines;  // the line each row starts on

  // The column's index; InputError naming the file and the header when it is missing.
  std::size_t column(std::string_view name) const;
  const std::string& at(std::size_t row, std::string_view name) const { return rows[row][column(name)]; }
  // The leading number of a cell such as "363.3GBps"; InputError naming file, line and column
  // when the cell does not start with one.
  double number(std::size_t row, std::string_view name) const;
  // For tables read with ragged rows: InputError naming the row's line when its field count is
  // not the header's.
  void check_width(std::size_t row) const;
};

// A row whose field count is not the header's is an InputError, or with `ragged` kept as it is
// (for readers that skip bad rows: call check_width(row) before reading one).
CsvTable parse_csv(std::string_view text, std::string source, bool ragged = false);
CsvTable read_csv_file(const std::string& path, bool ragged = false);

// The whole cell as a decimal number ("12", "-3.5", "1e6"); nullopt for anything else: an
// empty cell, trailing text ("12 s"), hexadecimal ("0x42"), inf, nan, or beyond double range.
std::optional<double> parse_decimal(std::string_view cell);

// The text with ASCII letters in lower case (GPU types, table names: matched case-blind).
std::string ascii_lower(std::string text);

}  // namespace orrery::traces
