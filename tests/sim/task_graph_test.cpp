#include "sim/task_graph.hpp"

#include <doctest/doctest.h>

using namespace orrery::sim;
using namespace orrery::sim::literals;

TEST_CASE("streams are interned by (device, name); tasks keep their names and kinds") {
  TaskGraph g;
  const StreamId a = g.add_stream("dev0", "compute");
  const StreamId b = g.add_stream("dev0", "comm");
  CHECK(g.add_stream("dev0", "compute") == a);
  CHECK(a != b);
  CHECK(g.stream_count() == 2);
  const TaskId t = g.add_compute("matmul", b, 3_us);
  const TaskId d = g.add_delay("wait", 1_us);
  CHECK(g.name(t) == "matmul");
  CHECK(g.name(d) == "wait");
  CHECK(g.kind(t) == TaskKind::compute);
  CHECK(g.kind(d) == TaskKind::delay);
  CHECK(g.stream(t) == b);
  CHECK_FALSE(g.stream(d).has_value());
  CHECK(g.duration(t) == 3_us);
  CHECK(g.stream_info(b).device == "dev0");
  CHECK(g.stream_info(b).name == "comm");
}

TEST_CASE("find_cycle returns nothing for a DAG") {
  TaskGraph g;
  const TaskId a = g.add_delay("a", 1_ns), b = g.add_delay("b", 1_ns), c = g.add_delay("c", 1_ns);
  g.add_dependency(a, b);
  g.add_dependency(a, c);
  g.add_dependency(b, c);
  CHECK(g.find_cycle().empty());
}

TEST_CASE("find_cycle returns exactly the tasks on a cycle, in dependency order") {
  TaskGraph g;
  const TaskId root = g.add_delay("root", 1_ns);
  const TaskId x = g.add_delay("x", 1_ns), y = g.add_delay("y", 1_ns), z = g.add_delay("z", 1_ns);
  const TaskId tail = g.add_delay("tail", 1_ns);
  g.add_dependency(root, x);
  g.add_dependency(x, y);
  g.add_dependency(y, z);
  g.add_dependency(z, x);    // closes x -> y -> z -> x
  g.add_dependency(z, tail); // behind the cycle, but not on it
  const std::vector<TaskId> cycle = g.find_cycle();
  REQUIRE(cycle.size() == 3);
  CHECK(cycle.front() == x);  // starts at its earliest task
  // Each depends on the one before it, and the first on the last.
  for (std::size_t i = 0; i < cycle.size(); ++i) {
    const TaskId before = cycle[(i + cycle.size() - 1) % cycle.size()];
    bool found = false;
    for (const auto& [from, to] : g.dependencies()) found = found || (from == before && to == cycle[i]);
    CHECK(found);
  }
}

TEST_CASE("a task depending on itself is a cycle of one") {
  TaskGraph g;
  g.add_delay("ok", 1_ns);
  const TaskId s = g.add_delay("self", 1_ns);
  g.add_dependency(s, s);
  CHECK(g.find_cycle() == std::vector<TaskId>{s});
}

TEST_CASE("adjacency lists keep insertion order") {
  TaskGraph g;
  const TaskId a = g.add_delay("a", 1_ns), b = g.add_delay("b", 1_ns), c = g.add_delay("c", 1_ns);
  g.add_dependency(a, c);
  g.add_dependency(a, b);
  g.add_dependency(b, c);
  const Adjacency succ = build_adjacency(g, true);
  const Adjacency pred = build_adjacency(g, false);
  CHECK(std::vector<std::uint32_t>(succ.of(0).begin(), succ.of(0).end()) == std::vector<std::uint32_t>{2, 1});
  CHECK(std::vector<std::uint32_t>(pred.of(2).begin(), pred.of(2).end()) == std::vector<std::uint32_t>{0, 1});
  CHECK(succ.of(2).empty());
}
