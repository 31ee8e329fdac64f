#include "sim/registry.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <string>

using namespace orrery::sim;

namespace {

struct Shape {
  virtual ~Shape() = default;
  virtual double area() const = 0;
};
struct Square : Shape {
  double side;
  explicit Square(double s) : side(s) {}
  double area() const override { return side * side; }
};
struct Grid : Shape {
  std::int64_t n;
  bool doubled;
  explicit Grid(std::int64_t count, bool twice) : n(count), doubled(twice) {}
  double area() const override { return static_cast<double>(n * n) * (doubled ? 2.0 : 1.0); }
};

Registry<Shape> make_registry() {
  Registry<Shape> r("shape");
  r.add({"square", "a square", {{"side", ParamType::number, 1.0, "side length"}},
         [](const Params& p) { return std::make_unique<Square>(p.get_number("side")); }});
  r.add({"grid", "n x n cells",
         {{"cells", ParamType::integer, std::int64_t{4}, "cells per side"},
          {"double", ParamType::boolean, false, "count each cell twice"},
          {"label", ParamType::string, std::string("g"), "a name"}},
         [](const Params& p) { return std::make_unique<Grid>(p.get_int("cells"), p.get_bool("double")); }});
  return r;
}

std::string message_of(const Registry<Shape>& r, std::string_view name, const GivenParams& given) {
  try {
    r.create(name, given, InputLocation{"scenario.json", "/policy"});
  } catch (const InputError& e) {
    CHECK(e.source() == "scenario.json");
    return e.what();
  }
  FAIL("no InputError");
  return {};
}

}  // namespace

TEST_CASE("create uses defaults, and given parameters override them") {
  const Registry<Shape> r = make_registry();
  CHECK(r.create("square")->area() == 1.0);
  CHECK(r.create("square", {{"side", 3.0}})->area() == 9.0);
  CHECK(r.create("grid")->area() == 16.0);
  CHECK(r.create("grid", {{"cells", std::int64_t{3}}, {"double", true}})->area() == 18.0);
  CHECK(r.names() == std::vector<std::string>{"grid", "square"});
  CHECK(r.get("grid").params.size() == 3);
  CHECK(r.get("grid").description == "n x n cells");
}

TEST_CASE("integers widen to numbers, and whole numbers narrow to integers") {
  const Registry<Shape> r = make_registry();
  CHECK(r.create("square", {{"side", std::int64_t{2}}})->area() == 4.0);
  CHECK(r.create("grid", {{"cells", 5.0}})->area() == 25.0);
}

TEST_CASE("an unknown name lists the valid ones and suggests the closest") {
  const Registry<Shape> r = make_registry();
  const std::string m = message_of(r, "sqare", {});
  CHECK(m.find("scenario.json:/policy:") == 0);
  CHECK(m.find("unknown shape \"sqare\"") != std::string::npos);
  CHECK(m.find("did you mean \"square\"?") != std::string::npos);
  CHECK(m.find("valid: grid, square") != std::string::npos);
  CHECK(message_of(r, "hexagon", {}).find("did you mean") == std::string::npos);
}

TEST_CASE("unknown and mistyped parameters are named with their place") {
  const Registry<Shape> r = make_registry();
  const std::string unknown = message_of(r, "grid", {{"cels", std::int64_t{3}}});
  CHECK(unknown.find("scenario.json:/policy/cels:") == 0);
  CHECK(unknown.find("did you mean \"cells\"?") != std::string::npos);
  const std::string mistyped = message_of(r, "grid", {{"cells", 2.5}});
  CHECK(mistyped.find("/policy/cells") != std::string::npos);
  CHECK(mistyped.find("found a number 2.5, expected an integer") != std::string::npos);
  CHECK(message_of(r, "grid", {{"double", std::string("yes")}}).find("expected a boolean") != std::string::npos);
}

TEST_CASE("registering a name twice, or a default of the wrong type, is our bug") {
  Registry<Shape> r = make_registry();
  CHECK_THROWS_AS(r.add({"square", "again", {}, nullptr}), InternalError);
  CHECK_THROWS_AS(r.add({"bad", "x", {{"n", ParamType::integer, 1.5, "wrong default"}}, nullptr}), InternalError);
}

TEST_CASE("reading an undeclared parameter is our bug") {
  const Params p({{"a", std::int64_t{1}}});
  CHECK(p.get_int("a") == 1);
  CHECK_THROWS_AS(p.get_int("b"), InternalError);
  CHECK_THROWS_AS(p.get_number("a"), InternalError);
}

TEST_CASE("edit distance and suggestions") {
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("dpes", "deps") == 1);  // a transposition is one edit
  CHECK(closest_match("durtion", {"duration", "deps", "device"}) == "duration");
  CHECK(closest_match("zzz", {"duration", "deps"}).empty());
}
