#include "sim/error.hpp"
#include "traces/json_input.hpp"

#include <doctest/doctest.h>

#include "input_error.hpp"

using namespace orrery;
using namespace orrery::traces;

namespace {
using testing::error_of;
}  // namespace

TEST_CASE("malformed JSON names the line and column and what was expected") {
  const std::string m = error_of([] { parse_json("{\n  \"a\": 1,\n  \"b\": ]\n}", "bad.json"); });
  CHECK(m.find("bad.json:line 3, column 8: malformed JSON:") == 0);
  CHECK(m.find("unexpected ']'") != std::string::npos);
  const std::string eof = error_of([] { parse_json("{\"a\": [1, 2", "cut.json"); });
  CHECK(eof.find("cut.json:line 1, column") == 0);
  CHECK(eof.find("end of input") != std::string::npos);
}

TEST_CASE("a key repeated in one object is named by its pointer") {
  const std::string m = error_of([] { parse_json(R"({"nodes": [{"id": "a"}, {"id": "b", "id": "c"}]})", "dup.json"); });
  CHECK(m == "dup.json:/nodes/1/id: key \"id\" appears twice in one object");
  // The same key in sibling objects is fine.
  CHECK_NOTHROW(parse_json(R"({"x": {"id": 1}, "y": {"id": 2}, "z": [[{"id": 3}], {"id": 4}]})", "ok.json"));
}

TEST_CASE("required, optional and unknown keys") {
  const auto doc = parse_json(R"({"duration": "1 ms", "durtion": "2 ms", "count": 3})", "f.json");
  JsonObject obj = doc->root().as_object();
  CHECK(obj.required("duration").as_duration().ns() == 1'000'000);
  CHECK(obj.optional("count")->as_int() == 3);
  CHECK_FALSE(obj.optional("absent").has_value());
  const std::string unknown = error_of([&] { obj.finish(); });
  CHECK(unknown.find("f.json:/durtion: unknown key \"durtion\"; did you mean \"duration\"?") == 0);
  CHECK(unknown.find("valid keys here: duration, count, absent") != std::string::npos);
  const std::string missing = error_of([&] { JsonObject(doc->root()).required("deps"); });
  CHECK(missing == "f.json:/: missing required field \"deps\"");
}

TEST_CASE("wrong types say what was found and what was expected") {
  const auto doc = parse_json(R"({"s": 5, "i": 1.5, "a": {}, "b": "yes", "big": 18446744073709551615, "u": 7})", "t.json");
  JsonObject obj = doc->root().as_object();
  CHECK(error_of([&] { obj.required("s").as_string(); }) == "t.json:/s: found a number 5, expected a string");
  CHECK(error_of([&] { obj.required("i").as_int(); }) == "t.json:/i: found a number 1.5, expected an integer");
  CHECK(error_of([&] { obj.required("a").as_array(); }) == "t.json:/a: found an object, expected an array");
  CHECK(error_of([&] { obj.required("b").as_bool(); }) == "t.json:/b: found a string \"yes\", expected true or false");
  CHECK(error_of([&] { obj.required("s").as_duration(); }).find("found a number 5, expected a duration string") !=
        std::string::npos);
  CHECK(error_of([&] { obj.required("big").as_int(); }).find("fits in 64 bits") != std::string::npos);
  CHECK(obj.required("u").as_number() == 7.0);
}

TEST_CASE("array elements and escaped keys get exact pointers") {
  const auto doc = parse_json(R"({"a/b": [10, "x"]})", "p.json");
  JsonObject obj = doc->root().as_object();
  const std::vector<JsonNode> items = obj.required("a/b").as_array();
  CHECK(items[1].pointer() == "/a~1b/1");
  CHECK(error_of([&] { items[1].as_int(); }) == "p.json:/a~1b/1: found a string \"x\", expected an integer");
}

TEST_CASE("an unreadable file names itself") {
  CHECK(error_of([] { load_json_file("no/such/file.json"); }).find("no/such/file.json: cannot open file") == 0);
  CHECK(error_of([] { load_json_file("."); }).find("is a directory") != std::string::npos);
}

TEST_CASE("a number beyond what a double holds is an input error at its place, even in an unused field") {
  const std::string m = error_of([] { parse_json("{\"description\": 1e400,\n \"nodes\": []}", "big.json"); });
  CHECK(m.find("big.json:line 1, column 17: found the number \"1e400\", beyond what a double holds") == 0);
  CHECK(error_of([] { parse_json("[1, -2e999]", "neg.json"); }).find("neg.json:line 1, column 5: found the number \"-2e999\"") == 0);
  // A JSONL row names its own line.
  CHECK(error_of([] { parse_jsonl_row("{\"x\": 1e500}", "rows.jsonl", 7); }).find("rows.jsonl:line 7, column 7: found the number") == 0);
  // Errors at a pointer inside a row name the row's line, then the pointer.
  const auto row = parse_jsonl_row("{\"x\": [1, \"a\"]}", "rows.jsonl", 3);
  CHECK(error_of([&] { row->root().as_object().required("x").as_array()[1].as_int(); }) ==
        "rows.jsonl:line 3:/x/1: found a string \"a\", expected an integer");
  // Integers beyond 64 bits become doubles (nlohmann's rule), which as_int() then rejects.
  const auto doc = parse_json("{\"n\": 100000000000000000000000}", "n.json");
  CHECK(doc->root().as_object().required("n").json().is_number_float());
}

TEST_CASE("nesting deeper than a format needs is refused before it can exhaust a recursive reader") {
  const std::string deep = std::string(300, '[') + std::string(300, ']');
  CHECK(error_of([&] { parse_json(deep, "deep.json"); }).find("deep.json:/0/0/0/") == 0);
  CHECK(error_of([&] { parse_json(deep, "deep.json"); }).find("nested more than 256 deep") != std::string::npos);
  const std::string ok = std::string(200, '[') + std::string(200, ']');
  CHECK_NOTHROW(parse_json(ok, "ok.json"));
}

TEST_CASE("a repeated key deep inside arrays of objects is named by its full pointer") {
  const std::string m = error_of([] { parse_json(R"({"a": [{"b": [1, {"c": 1, "c": 2}]}]})", "p.json"); });
  CHECK(m == "p.json:/a/0/b/1/c: key \"c\" appears twice in one object");
}

TEST_CASE("a large array of objects parses into the same document as the text says") {
  // 200k objects: the parser once rescanned the parent array after each object (quadratic).
  // The time is the bench's to measure; here the content is checked.
  std::string text = "{\"nodes\": [";
  for (int i = 0; i < 200000; ++i) text += (i ? ",{\"id\":" : "{\"id\":") + std::to_string(i) + ",\"deps\":[]}";
  text += "]}";
  const auto doc = parse_json(text, "big.json");
  const auto nodes = doc->root().as_object().required("nodes").as_array();
  REQUIRE(nodes.size() == 200000);
  CHECK(nodes[199999].as_object().required("id").as_int() == 199999);
  CHECK(nodes[123456].pointer() == "/nodes/123456");
}
