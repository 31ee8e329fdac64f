#include "sim/error.hpp"
#include "traces/task_graph_json.hpp"

#include <doctest/doctest.h>

using namespace orrery;
using namespace orrery::traces;
using namespace orrery::sim::literals;

namespace {
std::string error_of(std::string_view json) {
  try {
    read_task_graph(json, "g.json");
  } catch (const sim::InputError& e) {
    CHECK(std::string(e.what()).find('\n') == std::string::npos);  // one line
    return e.what();
  }
  FAIL("no InputError for: ", json);
  return {};
}
}  // namespace

TEST_CASE("a valid graph, with forward references, delays and default names") {
  const LoadedGraph g = read_task_graph(R"({
    "name": "tiny", "description": "for a test",
    "nodes": [
      {"id": "b", "name": "second", "device": "d0", "stream": "compute", "duration": "2 ms", "deps": ["a", "w"]},
      {"id": "a", "device": "d0", "stream": "compute", "duration": "1.5 ms"},
      {"id": "w", "kind": "delay", "duration": "3 us", "deps": []},
      {"id": "c", "kind": "compute", "device": "d1", "stream": "comm", "duration": "0 s", "deps": ["b"]}
    ]})", "tiny.json");
  CHECK(g.name == "tiny");
  CHECK(g.graph.task_count() == 4);
  CHECK(g.graph.stream_count() == 2);
  CHECK(g.graph.dependency_count() == 3);
  CHECK(g.graph.name(sim::TaskId(0)) == "second");
  CHECK(g.graph.name(sim::TaskId(1)) == "a");  // name defaults to the id
  CHECK(g.graph.duration(sim::TaskId(1)) == 1500_us);
  CHECK(g.graph.kind(sim::TaskId(2)) == sim::TaskKind::delay);
  CHECK(g.graph.stream_info(*g.graph.stream(sim::TaskId(3))).name == "comm");
}

TEST_CASE("each kind of bad input is one precise line") {
  // malformed JSON: line and column
  CHECK(error_of("{\"nodes\": [\n  {\"id\": \"a\",}\n]}").find("g.json:line 2, column 14: malformed JSON") == 0);
  // an unknown key, with a suggestion
  CHECK(error_of(R"({"nodes": [{"id": "a", "device": "d", "stream": "s", "duration": "1 ms", "dpes": []}]})") ==
        "g.json:/nodes/0/dpes: unknown key \"dpes\"; did you mean \"deps\"?; valid keys here: id, name, kind, duration, "
        "device, stream, deps");
  CHECK(error_of(R"({"nodse": []})") == "g.json:/: missing required field \"nodes\" (is \"nodse\" a misspelling of it?)");
  // a wrong type
  CHECK(error_of(R"({"nodes": [{"id": 7, "device": "d", "stream": "s", "duration": "1 ms"}]})") ==
        "g.json:/nodes/0/id: found a number 7, expected a string");
  CHECK(error_of(R"({"nodes": {}})") == "g.json:/nodes: found an object, expected an array");
  CHECK(error_of(R"({"nodes": [{"id": "a", "device": "d", "stream": "s", "duration": 5}]})")
            .find("g.json:/nodes/0/duration: found a number 5, expected a duration string") == 0);
  // a missing field
  CHECK(error_of(R"({"nodes": [{"id": "a", "device": "d", "stream": "s"}]})") ==
        "g.json:/nodes/0: missing required field \"duration\"");
  CHECK(error_of(R"({"nodes": [{"id": "a", "stream": "s", "duration": "1 ms"}]})")
            .find("g.json:/nodes/0: missing required field \"device\"") == 0);
  CHECK(error_of(R"({})") == "g.json:/: missing required field \"nodes\"");
  // a negative duration
  CHECK(error_of(R"({"nodes": [{"id": "a", "device": "d", "stream": "s", "duration": "-2 ms"}]})")
            .find("g.json:/nodes/0/duration: bad duration \"-2 ms\": it is negative") == 0);
  // a dependency on an unknown node
  CHECK(error_of(R"({"nodes": [{"id": "load", "kind": "delay", "duration": "1 ms"},
                               {"id": "a", "device": "d", "stream": "s", "duration": "1 ms", "deps": ["laod"]}]})") ==
        "g.json:/nodes/1/deps/0: dependency on unknown node \"laod\"; did you mean \"load\"?");
  // a cycle, with the tasks on it
  CHECK(error_of(R"({"nodes": [{"id": "x", "kind": "delay", "duration": "1 ms", "deps": ["z"]},
                               {"id": "y", "kind": "delay", "duration": "1 ms", "deps": ["x"]},
                               {"id": "z", "kind": "delay", "duration": "1 ms", "deps": ["y"]},
                               {"id": "free", "kind": "delay", "duration": "1 ms"}]})")
            .find("dependency cycle: \"") != std::string::npos);
  CHECK(error_of(R"({"nodes": [{"id": "s", "kind": "delay", "duration": "1 ms", "deps": ["s"]}]})") ==
        "g.json:/nodes/0/deps: dependency cycle: \"s\" -> \"s\"; expected an acyclic graph");
  // a bad unit string
  CHECK(error_of(R"({"nodes": [{"id": "a", "device": "d", "stream": "s", "duration": "3 parsecs"}]})")
            .find("g.json:/nodes/0/duration: bad duration \"3 parsecs\": unknown unit \"parsecs\"") == 0);
}

TEST_CASE("ids, kinds and delay fields are checked") {
  CHECK(error_of(R"({"nodes": [{"id": "a", "kind": "delay", "duration": "1 ms"},
                               {"id": "a", "kind": "delay", "duration": "1 ms"}]})") ==
        "g.json:/nodes/1/id: duplicate id \"a\", first used at /nodes/0");
  CHECK(error_of(R"({"nodes": [{"id": "a", "kind": "dealy", "duration": "1 ms"}]})") ==
        "g.json:/nodes/0/kind: unknown task kind \"dealy\"; did you mean \"delay\"?; valid: compute, delay");
  CHECK(error_of(R"({"nodes": [{"id": "a", "kind": "delay", "device": "d", "duration": "1 ms"}]})")
            .find("g.json:/nodes/0/device: a delay runs on no device") == 0);
  CHECK(error_of(R"({"nodes": [{"id": "", "kind": "delay", "duration": "1 ms"}]})") ==
        "g.json:/nodes/0/id: found a string \"\", expected a non-empty id");
  CHECK(error_of(R"({"nodes": [{"id": "a", "kind": "delay", "duration": "1 ms"},
                               {"id": "b", "kind": "delay", "duration": "1 ms", "deps": ["a", "a"]}]})") ==
        "g.json:/nodes/1/deps/1: dependency on \"a\" is listed twice");
}

TEST_CASE("the cycle message lists the cycle in dependency order, from its first node") {
  CHECK(error_of(R"({"nodes": [{"id": "free", "kind": "delay", "duration": "1 ms"},
                               {"id": "x", "kind": "delay", "duration": "1 ms", "deps": ["z", "free"]},
                               {"id": "y", "kind": "delay", "duration": "1 ms", "deps": ["x"]},
                               {"id": "z", "kind": "delay", "duration": "1 ms", "deps": ["y"]}]})") ==
        "g.json:/nodes/1/deps: dependency cycle: \"x\" -> \"y\" -> \"z\" -> \"x\"; expected an acyclic graph");
}
