#include "models/network/topology.hpp"
#include "sim/error.hpp"
#include "approx.hpp"

#include <doctest/doctest.h>

#include <set>

using namespace orrery;
using namespace orrery::models;

namespace {
std::vector<std::string> names_on(const Topology& t, const std::vector<LinkIndex>& route) {
  std::vector<std::string> out;
  for (const LinkIndex l : route) out.push_back(t.node(t.link(l).to).name);
  return out;
}
NodeIndex node(const Topology& t, std::string_view name) {
  const std::int64_t n = t.find(name);
  REQUIRE(n >= 0);
  return static_cast<NodeIndex>(n);
}
std::string topology_error(std::string_view spec) {
  try {
    build_topology(spec);
  } catch (const sim::InputError& e) {
    return e.what();
  }
  FAIL("no InputError for ", spec);
  return {};
}
}  // namespace

TEST_CASE("one DGX H100: 8 GPUs on an NVSwitch at 450 GB/s per direction") {
  const Topology t = build_topology("dgx-h100");
  CHECK(t.gpus().size() == 8);
  CHECK(t.servers() == 1);
  const auto r = t.route(t.gpus()[0], t.gpus()[5], 1);
  CHECK(names_on(t, r) == std::vector<std::string>{"s0.nvswitch", "s0.gpu5"});
  CHECK(t.link(r[0]).bandwidth.value() == 450e9);
  CHECK(t.link(r[0]).kind == LinkKind::nvlink);
  CHECK(t.node(node(t, "s0.nvswitch")).reduces_in_network());
  CHECK_FALSE(build_topology("dgx-a100").node(8).reduces_in_network());  // A100's NVSwitch has no NVLS
  CHECK(build_topology("dgx-a100").link(0).bandwidth.value() == 300e9);
  CHECK(build_topology("dgx-b200").link(0).bandwidth.value() == 900e9);
  // Full duplex: each direction is its own link.
  CHECK(t.link(r[0] ^ 1).from == t.link(r[0]).to);
}

TEST_CASE("rail-optimized fabric: same rail crosses one leaf, other rails a spine, never a GPU") {
  const Topology t = build_topology("dgx-h100:nodes=4");
  CHECK(t.gpus().size() == 32);
  const auto same_rail = t.route(node(t, "s0.gpu3"), node(t, "s2.gpu3"), 7);
  CHECK(names_on(t, same_rail) == std::vector<std::string>{"s0.nic3", "su0.rail3", "s2.nic3", "s2.gpu3"});
  CHECK(t.link(same_rail[1]).bandwidth.value() == 50e9);  // 400 Gb/s
  // Across rails: up to a spine. GPUs are endpoints only, so no path relays through another
  // GPU's NVLink (that would be PXN, a choice of the collective, not of routing).
  std::set<std::string> spines;
  for (std::uint64_t h = 0; h < 64; ++h) {
    const auto r = t.route(node(t, "s0.gpu1"), node(t, "s3.gpu6"), h);
    REQUIRE(r.size() == 6);
    for (std::size_t i = 0; i + 1 < r.size(); ++i) CHECK(t.node(t.link(r[i]).to).kind != NodeKind::gpu);
    spines.insert(t.node(t.link(r[2]).to).name);
    CHECK(t.route(node(t, "s0.gpu1"), node(t, "s3.gpu6"), h) == r);  // same hash, same path
  }
  CHECK(spines.size() > 8);  // ECMP spreads over the 32 spines
}

TEST_CASE("fat-tree oversubscription sets the uplink bandwidth") {
  const Topology t = build_topology("dgx-h100:nodes=8,fabric=fat-tree,oversubscription=2,leaf_ports=16");
  // 64 NICs on 4 leaves of 16 ports; each leaf has 16 x 50 GB/s down and half that up.
  double up = 0, down = 0;
  const NodeIndex leaf = node(t, "leaf0");
  for (const LinkIndex l : t.out_links(leaf)) {
    (t.node(t.link(l).to).kind == NodeKind::spine ? up : down) += t.link(l).bandwidth.value();
  }
  CHECK(down == orrery::testing::Approx(16 * 50e9));
  CHECK(up == orrery::testing::Approx(8 * 50e9));
}

// Spraying spreads every flow evenly over the spines: as one spine carrying each leaf's whole
// uplink capacity. Per-flow ECMP instead hashes each flow onto one of the 32 spines.
TEST_CASE("spray routing aggregates the spine tier") {
  const Topology t = build_topology("dgx-h100:nodes=64,routing=spray");
  std::size_t spines = 0;
  for (const TopoNode& n : t.nodes()) spines += n.kind == NodeKind::spine ? 1 : 0;
  CHECK(spines == 1);
  const NodeIndex leaf = node(t, "su0.rail0");
  for (const LinkIndex l : t.out_links(leaf)) {
    if (t.node(t.link(l).to).kind == NodeKind::spine) CHECK(t.link(l).bandwidth.value() == orrery::testing::Approx(32 * 50e9));
  }
  CHECK(topology_error("dgx-h100:nodes=64,routing=sprya").find("did you mean \"spray\"?") != std::string::npos);
  CHECK(topology_error("dgx-h100:nodes=64,routing=spray,fabric=fat-tree-3").find("two-level") != std::string::npos);
}

TEST_CASE("three-level fat-tree routes across pods through a core switch") {
  const Topology t = build_topology("dgx-h100:nodes=8,fabric=fat-tree-3,leaf_ports=8,pod_leaves=2");
  // 64 NICs, 8 leaves, 4 pods of 2 leaves.
  const auto r = t.route(node(t, "s0.gpu0"), node(t, "s7.gpu7"), 3);
  CHECK(r.size() == 8);
  bool via_core = false;
  for (const LinkIndex l : r) via_core = via_core || t.node(t.link(l).to).kind == NodeKind::core;
  CHECK(via_core);
}

TEST_CASE("multi-plane fabrics split each NIC over independent planes") {
  const Topology t = build_topology("dgx-h100:nodes=2,planes=2");
  const NodeIndex nic = node(t, "s0.nic0");
  int planes = 0;
  for (const LinkIndex l : t.out_links(nic)) {
    if (t.node(t.link(l).to).kind == NodeKind::leaf) {
      ++planes;
      CHECK(t.link(l).bandwidth.value() == 25e9);
    }
  }
  CHECK(planes == 2);
  std::set<std::string> first_leaf;
  for (std::uint64_t h = 0; h < 32; ++h) {
    first_leaf.insert(t.node(t.link(t.route(node(t, "s0.gpu0"), node(t, "s1.gpu0"), h)[1]).to).name);
  }
  CHECK(first_leaf == std::set<std::string>{"p0.su0.rail0", "p1.su0.rail0"});
}

TEST_CASE("NVL72: 72 GPUs in one NVLink domain at 900 GB/s") {
  const Topology t = build_topology("nvl72:domains=2");
  CHECK(t.gpus().size() == 144);
  const auto inside = t.route(node(t, "d0.gpu0"), node(t, "d0.gpu71"), 1);
  CHECK(inside.size() == 2);
  CHECK(t.link(inside[0]).bandwidth.value() == 900e9);
  CHECK(t.route(node(t, "d0.gpu0"), node(t, "d1.gpu0"), 1).size() == 4);
}

TEST_CASE("bad topology specs are named precisely") {
  CHECK(topology_error("dgx-h10:nodes=2").find("unknown topology \"dgx-h10\"; did you mean \"dgx-h100\"?") != std::string::npos);
  CHECK(topology_error("dgx-h100:node=2").find("unknown parameter \"node\"") != std::string::npos);
  CHECK(topology_error("dgx-h100:node=2").find("did you mean \"nodes\"?") != std::string::npos);
  CHECK(topology_error("dgx-h100:nodes=two").find("expected an integer") != std::string::npos);
  CHECK(topology_error("dgx-h100:nodes=0").find("expected a positive integer") != std::string::npos);
  CHECK(topology_error("dgx-h100:nodes=2,fabric=rial").find("did you mean \"rail\"?") != std::string::npos);
  CHECK(topology_error("dgx-h100:nodes=2,oversubscription=0.5").find("at least 1") != std::string::npos);
  CHECK(topology_error("dgx-h100:nodes=2,nic=400Gx/s").find("bad bandwidth \"400Gx/s\"") != std::string::npos);
  CHECK(topology_error("dgx-h100:nodes=2,nic=0Gb/s").find("must be positive") != std::string::npos);
  CHECK(topology_error("dgx-h100:nodes=2,nic=1e18B/s").find("parameter nic: found \"1e18B/s\", expected a bandwidth from 1 Gb/s to 1 PB/s") !=
        std::string::npos);
  CHECK(topology_error("dgx-h100:nodes").find("expected key=value") != std::string::npos);
  CHECK(topology_error("nvl72:gpu=h300").find("unknown GPU \"h300\"") != std::string::npos);
}

TEST_CASE("a GPU that cannot reach the others is a problem") {
  Topology t;
  const NodeIndex a = t.add_node("a", NodeKind::gpu), b = t.add_node("b", NodeKind::gpu);
  const NodeIndex sw = t.add_node("sw", NodeKind::nvswitch);
  t.add_node("lost", NodeKind::gpu);
  t.connect(a, sw, sim::BytesPerSecond(1e9), sim::Duration::zero(), LinkKind::nvlink);
  t.connect(b, sw, sim::BytesPerSecond(1e9), sim::Duration::zero(), LinkKind::nvlink);
  const auto problems = t.problems();
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("\"lost\"") != std::string::npos);
  CHECK(t.distance(a, b) == 2);
  // A GPU is no relay: a - b - c in a line leaves a and c unconnected.
  Topology line;
  const NodeIndex x = line.add_node("x", NodeKind::gpu), y = line.add_node("y", NodeKind::gpu), z = line.add_node("z", NodeKind::gpu);
  line.connect(x, y, sim::BytesPerSecond(1e9), sim::Duration::zero(), LinkKind::nvlink);
  line.connect(y, z, sim::BytesPerSecond(1e9), sim::Duration::zero(), LinkKind::nvlink);
  CHECK(line.distance(x, z) == -1);
  CHECK(line.distance(x, y) == 1);
}

namespace {
// Routes as the simplest correct method finds them: a whole breadth-first search from the
// destination against the links (GPUs other than the destination discovered, never expanded),
// then at each hop the out-links to nodes one closer that may relay (a GPU only if it is the
// destination), in link order, one picked by the same hash as Topology::route.
std::vector<LinkIndex> reference_route(const Topology& t, NodeIndex src, NodeIndex dst, std::uint64_t flow_hash) {
  const std::size_t n = t.nodes().size();
  std::vector<std::vector<LinkIndex>> in(n);
  for (LinkIndex l = 0; l < t.links().size(); ++l) in[t.link(l).to].push_back(l);
  std::vector<int> d(n, -1);
  std::vector<NodeIndex> queue{dst};
  d[dst] = 0;
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const NodeIndex x = queue[head];
    if (x != dst && t.node(x).kind == NodeKind::gpu) continue;
    for (const LinkIndex l : in[x]) {
      const NodeIndex v = t.link(l).from;
      if (d[v] < 0) d[v] = d[x] + 1, queue.push_back(v);
    }
  }
  std::vector<LinkIndex> path;
  NodeIndex at = src;
  std::uint64_t h = flow_hash;
  while (at != dst) {
    h += 0x9e3779b97f4a7c15ull;
    std::uint64_t z = h;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    std::vector<LinkIndex> next;
    for (const LinkIndex l : t.out_links(at)) {
      const NodeIndex w = t.link(l).to;
      if (d[w] == d[at] - 1 && (w == dst || t.node(w).kind != NodeKind::gpu)) next.push_back(l);
    }
    REQUIRE(!next.empty());
    path.push_back(next[z % next.size()]);
    at = t.link(path.back()).to;
  }
  return path;
}
}  // namespace

TEST_CASE("routes from searches that meet in the middle equal a whole search's, on every builder") {
  for (const std::string_view spec :
       {"dgx-h100:nodes=6", "dgx-h100:nodes=8,leaf_ports=2", "dgx-h100:nodes=8,fabric=fat-tree,leaf_ports=8,oversubscription=2",
        "dgx-h100:nodes=8,fabric=fat-tree-3,leaf_ports=8,pod_leaves=2", "dgx-h100:nodes=4,planes=2,leaf_ports=2",
        "dgx-a100:nodes=4,fabric=fat-tree,routing=spray", "nvl72:domains=3,gpus_per_domain=8,leaf_ports=2"}) {
    CAPTURE(spec);
    const Topology t = build_topology(spec);
    int checked = 0;
    // Every ordered pair, three hashes each; routes asked in an order that grows searches unevenly.
    for (std::uint64_t h : {1ull, 77ull, 12345ull}) {
      for (std::size_t i = 0; i < t.gpus().size(); ++i) {
        for (std::size_t k = 0; k < t.gpus().size(); ++k) {
          const NodeIndex a = t.gpus()[(i * 7 + h) % t.gpus().size()];
          const NodeIndex b = t.gpus()[k];
          const std::vector<LinkIndex> r = t.route(a, b, h * 1000 + k);
          if (r != reference_route(t, a, b, h * 1000 + k)) FAIL_CHECK("route ", t.node(a).name, " -> ", t.node(b).name, " differs");
          CHECK(t.distance(a, b) == static_cast<int>(r.size()));
          ++checked;
        }
      }
    }
    CHECK(checked == 3 * static_cast<int>(t.gpus().size() * t.gpus().size()));
  }
  // A hand-made graph where NICs relay between two switches and a GPU is double-homed.
  Topology t;
  const sim::BytesPerSecond bw(1e9);
  const sim::Duration lat = sim::Duration::nanoseconds(1);
  std::vector<NodeIndex> gpu, sw;
  for (int i = 0; i < 6; ++i) gpu.push_back(t.add_node(fmt::format("g{}", i), NodeKind::gpu, i / 2));
  for (int i = 0; i < 4; ++i) sw.push_back(t.add_node(fmt::format("s{}", i), NodeKind::leaf));
  const NodeIndex nic = t.add_node("nic", NodeKind::nic, 0);
  for (std::size_t i = 0; i < 6; ++i) t.connect(gpu[i], sw[i % 3], bw, lat, LinkKind::network);
  t.connect(gpu[0], sw[3], bw, lat, LinkKind::network);
  t.connect(sw[0], nic, bw, lat, LinkKind::network);
  t.connect(nic, sw[1], bw, lat, LinkKind::network);
  t.connect(sw[1], sw[2], bw, lat, LinkKind::network);
  t.connect(sw[2], sw[3], bw, lat, LinkKind::network);
  t.connect(sw[3], sw[0], bw, lat, LinkKind::network);
  for (const NodeIndex a : gpu) {
    for (const NodeIndex b : gpu) {
      for (std::uint64_t h = 0; h < 8; ++h) CHECK(t.route(a, b, h) == reference_route(t, a, b, h));
    }
  }
}

TEST_CASE("a topology forgets its memo and its route searches when it changes") {
  Topology t = build_topology("dgx-h100:nodes=2");
  CHECK(t.route(t.gpus()[0], t.gpus()[9], 1).size() == 6);  // across the spine; searches cached on the way
  CHECK(t.memo("ring") == nullptr);
  t.remember("ring", std::make_shared<const int>(7));
  REQUIRE(t.memo("ring") != nullptr);
  CHECK(*std::static_pointer_cast<const int>(t.memo("ring")) == 7);
  CHECK(t.memos() == 1);
  // A new link changes routes and capacities: everything derived is forgotten.
  t.connect(t.gpus()[0], t.gpus()[9], sim::BytesPerSecond(1e9), sim::Duration::nanoseconds(1), LinkKind::network);
  CHECK(t.memos() == 0);
  CHECK(t.memo("ring") == nullptr);
  CHECK(t.route(t.gpus()[0], t.gpus()[9], 1).size() == 1);  // and the routes searched again
  t.remember("ring", std::make_shared<const int>(8));
  t.add_node("extra", NodeKind::leaf);
  CHECK(t.memo("ring") == nullptr);
}

// route() takes paths of one or two hops from the links at both ends, without the searches: the
// same path as the searches give (route_by_search), for every pair of GPUs and NICs of several
// fabrics and several hashes (GPUs never relay, parallel links and planes pick by hash).
TEST_CASE("routes of one or two hops: as the searches find them") {
  std::size_t short_paths = 0, compared = 0;
  for (const char* spec : {"dgx-h100:nodes=4,fabric=fat-tree,leaf_ports=16,oversubscription=2", "dgx-h100:nodes=4,planes=2",
                           "nvl72:domains=4,gpus_per_domain=16,leaf_ports=2", "dgx-a100:nodes=2", "dgx-h100:nodes=8,routing=spray"}) {
    const Topology t = build_topology(spec);
    std::vector<NodeIndex> ends;
    for (NodeIndex v = 0; v < t.nodes().size(); ++v) {
      if (t.node(v).kind == NodeKind::gpu || t.node(v).kind == NodeKind::nic) ends.push_back(v);
    }
    for (const NodeIndex a : ends) {
      for (const NodeIndex b : ends) {
        for (const std::uint64_t hash : {std::uint64_t{1}, std::uint64_t{0x9e3779b97f4a7c15}, std::uint64_t{12345}}) {
          const std::vector<LinkIndex> fast = t.route(a, b, hash);
          INFO(spec, ": ", t.node(a).name, " -> ", t.node(b).name, " hash ", hash);
          REQUIRE(fast == t.route_by_search(a, b, hash));
          short_paths += !fast.empty() && fast.size() <= 2;
          ++compared;
        }
      }
    }
  }
  CHECK(short_paths > 1000);
  MESSAGE(compared, " routes compared, ", short_paths, " of one or two hops");
}
