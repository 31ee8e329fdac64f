#include "sim/error.hpp"
#include "traces/topology_json.hpp"

#include <doctest/doctest.h>

using namespace orrery;

namespace {
std::string topology_error(std::string_view json) {
  try {
    traces::read_topology(json, "fabric.json");
  } catch (const sim::InputError& e) {
    CHECK(std::string(e.what()).find('\n') == std::string::npos);
    return e.what();
  }
  FAIL("no InputError for ", json);
  return {};
}
constexpr std::string_view kGood = R"({
  "name": "two GPUs on a switch",
  "nodes": [
    {"name": "g0", "kind": "gpu", "server": 0},
    {"name": "g1", "kind": "gpu", "server": 0},
    {"name": "sw", "kind": "nvswitch", "nvls_efficiency": 0.7}
  ],
  "links": [
    {"between": ["g0", "sw"], "bandwidth": "450 GB/s", "latency": "250 ns", "kind": "nvlink"},
    {"between": ["g1", "sw"], "bandwidth": "450 GB/s", "bandwidth_reverse": "400 GB/s", "latency": "1 us",
     "latency_reverse": "2 us", "kind": "nvlink"}
  ]
})";
}  // namespace

TEST_CASE("a topology file loads, and saving it loads back the same fabric") {
  const models::Topology t = traces::read_topology(kGood, "fabric.json");
  CHECK(t.gpus().size() == 2);
  CHECK(t.node(2).nvls_efficiency == 0.7);
  CHECK(t.link(0).bandwidth.value() == 450e9);
  CHECK(t.link(3).bandwidth.value() == 400e9);  // sw -> g1
  CHECK(t.link(0).latency.ns() == 250);
  CHECK(t.link(2).latency.ns() == 1000);  // g1 -> sw
  CHECK(t.link(3).latency.ns() == 2000);  // sw -> g1: each direction its own latency
  CHECK(traces::read_topology(traces::topology_json(t), "again.json").link(3).latency.ns() == 2000);
  CHECK(t.route(0, 1, 0).size() == 2);

  const models::Topology built = models::build_topology("dgx-h100:nodes=2,planes=2");
  const models::Topology again = traces::read_topology(traces::topology_json(built), "copy.json");
  REQUIRE(again.nodes().size() == built.nodes().size());
  REQUIRE(again.links().size() == built.links().size());
  for (models::LinkIndex l = 0; l < built.links().size(); ++l) {
    CHECK(again.link(l).from == built.link(l).from);
    CHECK(again.link(l).bandwidth == built.link(l).bandwidth);
    CHECK(again.link(l).latency == built.link(l).latency);
  }
  CHECK(traces::topology_json(again) == traces::topology_json(built));
  CHECK(again.route(again.gpus()[0], again.gpus()[15], 9) == built.route(built.gpus()[0], built.gpus()[15], 9));
}

TEST_CASE("bad topology files get precise errors") {
  // a duplicate name
  CHECK(topology_error(R"({"nodes": [{"name": "g", "kind": "gpu"}, {"name": "g", "kind": "gpu"}], "links": []})") ==
        "fabric.json:/nodes/1/name: duplicate name \"g\", first used at /nodes/0");
  // zero and negative bandwidth
  CHECK(topology_error(R"({"nodes": [{"name": "a", "kind": "gpu"}, {"name": "b", "kind": "gpu"}],
                     "links": [{"between": ["a", "b"], "bandwidth": "0 GB/s", "kind": "nvlink"}]})") ==
        "fabric.json:/links/0/bandwidth: found \"0 GB/s\", expected a positive bandwidth");
  CHECK(topology_error(R"({"nodes": [{"name": "a", "kind": "gpu"}, {"name": "b", "kind": "gpu"}],
                     "links": [{"between": ["a", "b"], "bandwidth": "-5 GB/s", "kind": "nvlink"}]})")
            .find("fabric.json:/links/0/bandwidth: bad bandwidth \"-5 GB/s\": it is negative") == 0);
  // a bandwidth beyond what the flow network holds
  CHECK(topology_error(R"({"nodes": [{"name": "a", "kind": "gpu"}, {"name": "b", "kind": "gpu"}],
                     "links": [{"between": ["a", "b"], "bandwidth": "1e17 B/s", "kind": "nvlink"}]})") ==
        "fabric.json:/links/0/bandwidth: found \"1e17 B/s\", expected a bandwidth from 1 Gb/s to 1 PB/s (slower links carry no "
            "training traffic; faster ones are not built)");
  // a disconnected GPU, named at its place in the file
  CHECK(topology_error(R"({"nodes": [{"name": "a", "kind": "gpu"}, {"name": "b", "kind": "gpu"}, {"name": "c", "kind": "gpu"},
                               {"name": "sw", "kind": "nvswitch"}],
                     "links": [{"between": ["a", "sw"], "bandwidth": "1 GB/s", "kind": "nvlink"},
                               {"between": ["b", "sw"], "bandwidth": "1 GB/s", "kind": "nvlink"}]})") ==
        "fabric.json:/nodes/2: GPU \"c\" is disconnected: it cannot reach GPU \"a\"");
  // unknown endpoint and kinds, self-link
  CHECK(topology_error(R"({"nodes": [{"name": "gpu0", "kind": "gpu"}], "links": [{"between": ["gpu0", "gpu9"], "bandwidth": "1 GB/s", "kind": "nvlink"}]})") ==
        "fabric.json:/links/0/between/1: unknown node \"gpu9\"; did you mean \"gpu0\"?");
  CHECK(topology_error(R"({"nodes": [{"name": "a", "kind": "gpx"}], "links": []})") ==
        "fabric.json:/nodes/0/kind: unknown kind \"gpx\"; did you mean \"gpu\"?; valid: gpu, nvswitch, nic, leaf, spine, core");
  CHECK(topology_error(R"({"nodes": [{"name": "a", "kind": "gpu"}], "links": [{"between": ["a", "a"], "bandwidth": "1 GB/s", "kind": "nvlink"}]})")
            .find("both ends are the same") != std::string::npos);
  CHECK(topology_error(R"({"nodes": [{"name": "a", "kind": "gpu", "nvls_efficiency": 0.5}], "links": []})")
            .find("only an nvswitch reduces in the network") != std::string::npos);
  CHECK(topology_error(R"({"nodes": [], "links": []})") == "fabric.json:/nodes: it has no GPU");
}
