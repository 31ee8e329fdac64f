// CSV files (RFC 4180: quoted fields, doubled quotes, commas and newlines inside quotes) read
// into rows that remember their line, for precise errors.
//   CsvTable t = read_csv_file("trace.csv");
//   const std::string& v = t.at(row, "busbw");   // InputError naming file and line if absent
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace orrery::traces {

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
};

CsvTable parse_csv(std::string_view text, std::string source);
CsvTable read_csv_file(const std::string& path);

}  // namespace orrery::traces
