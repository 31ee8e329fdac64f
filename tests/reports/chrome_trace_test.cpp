#include "reports/chrome_trace.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <map>

using namespace orrery;
using namespace orrery::sim::literals;

TEST_CASE("the timeline has a process per device, a thread per stream and a span per task") {
  sim::TaskGraph g;
  const sim::StreamId c0 = g.add_stream("gpu0", "compute");
  const sim::StreamId m0 = g.add_stream("gpu0", "comm");
  const sim::StreamId c1 = g.add_stream("gpu1", "compute");
  const sim::TaskId a = g.add_compute("fwd \"a\"", c0, 1500_ns);
  const sim::TaskId b = g.add_compute("send", m0, 2_us);
  const sim::TaskId c = g.add_compute("fwd b", c1, 1_us);
  const sim::TaskId d1 = g.add_delay("wait 1", 3_us);
  const sim::TaskId d2 = g.add_delay("wait 2", 3_us);  // overlaps d1
  g.add_dependency(a, b);
  g.add_dependency(b, c);
  g.add_dependency(a, d2);
  sim::Engine engine;
  sim::Executor executor(engine, g);
  executor.start();
  engine.run();

  const nlohmann::json trace = nlohmann::json::parse(reports::chrome_trace_json(g, executor.spans()));
  CHECK(trace["displayTimeUnit"] == "ns");
  std::map<int, std::string> processes;
  std::map<std::pair<int, int>, std::string> threads;
  std::vector<nlohmann::json> spans;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") processes[e["pid"]] = e["args"]["name"];
    if (e["ph"] == "M" && e["name"] == "thread_name") threads[{e["pid"], e["tid"]}] = e["args"]["name"];
    if (e["ph"] == "X") spans.push_back(e);
  }
  CHECK(processes == std::map<int, std::string>{{1, "gpu0"}, {2, "gpu1"}, {3, "delays and transfers"}});
  CHECK(threads.at({1, 1}) == "compute");
  CHECK(threads.at({1, 2}) == "comm");
  CHECK(threads.at({2, 3}) == "compute");
  REQUIRE(spans.size() == 5);
  // Timestamps are microseconds, exact to the nanosecond.
  CHECK(spans[0]["name"] == "fwd \"a\"");
  CHECK(spans[0]["ts"] == 0.0);
  CHECK(spans[0]["dur"] == 1.5);
  CHECK(spans[1]["pid"] == 1);
  CHECK(spans[1]["tid"] == 2);
  CHECK(spans[1]["ts"] == 1.5);
  CHECK(spans[2]["ts"] == 3.5);
  CHECK(spans[2]["pid"] == 2);
  // The two overlapping delays are on different lanes of the delays process.
  CHECK(spans[3]["pid"] == 3);
  CHECK(spans[4]["pid"] == 3);
  CHECK(spans[3]["tid"] != spans[4]["tid"]);
  (void)d1;
}

TEST_CASE("strings are escaped for JSON") {
  std::string out;
  reports::append_json_string(out, "a\"b\\c\nd\x01");
  CHECK(out == "\"a\\\"b\\\\c\\nd\\u0001\"");
  CHECK(nlohmann::json::parse(out) == "a\"b\\c\nd\x01");
}
