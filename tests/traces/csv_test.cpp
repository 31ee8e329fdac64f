#include "sim/error.hpp"
#include "traces/csv.hpp"

#include <doctest/doctest.h>

using namespace orrery;

TEST_CASE("CSV with quotes, doubled quotes, embedded commas and newlines") {
  const auto t = traces::parse_csv("a,b,c\n1,\"x, y\",363.3GBps\n\n2,\"say \"\"hi\"\"\",\"two\nlines\"\r\n3,,7\n", "t.csv");
  REQUIRE(t.rows.size() == 3);
  CHECK(t.at(0, "b") == "x, y");
  CHECK(t.number(0, "c") == 363.3);
  CHECK(t.at(1, "b") == "say \"hi\"");
  CHECK(t.at(1, "c") == "two\nlines");
  CHECK(t.lines == std::vector<std::size_t>{2, 4, 6});
  CHECK(t.at(2, "b").empty());
}

TEST_CASE("bad CSV names the file and the line") {
  const auto error_of = [](std::string_view text) {
    try {
      const auto t = traces::parse_csv(text, "t.csv");
      (void)t.number(0, "v");
    } catch (const sim::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error_of("k,v\n1,2\n3\n") == "t.csv:line 3: found 1 fields, expected 2 (as in the header)");
  CHECK(error_of("k,v\n1,\"2\n") == "t.csv:line 2: unterminated quoted field");
  CHECK(error_of("k,v\n1,fast\n") == "t.csv:line 2, column \"v\": found \"fast\", expected a number");
  CHECK(error_of("k,w\n1,2\n").find("t.csv:line 1: missing column \"v\"") == 0);
  CHECK(error_of("") == "t.csv:line 1: empty file, expected a header row");
}
