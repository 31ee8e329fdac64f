// A cluster fabric: GPUs, NVSwitches, NICs and leaf/spine/core switches joined by full-duplex
// links (each direction its own resource). Routes are shortest paths with ECMP: among equal
// next hops, a deterministic hash of the flow picks one. Boost.Graph stays in the .cpp.
//   Topology t = build_topology("dgx-h100:nodes=4");
//   std::span<const LinkIndex> r = t.route(t.gpus()[0], t.gpus()[9], /*flow_hash=*/42);
#pragma once

#include "sim/units.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::models {

enum class NodeKind : std::uint8_t { gpu, nvswitch, nic, leaf, spine, core };
// What a link is made of: each kind has one efficiency factor in the collective models.
enum class LinkKind : std::uint8_t { nvlink, pcie, network };

std::string_view to_string(NodeKind kind);
std::string_view to_string(LinkKind kind);

using NodeIndex = std::uint32_t;
using LinkIndex = std::uint32_t;  // a directed link; full-duplex links come in pairs

struct TopoNode {
  std::string name;
  NodeKind kind;
  std::int32_t server = -1;   // the server (host) a GPU, NIC or NVSwitch belongs to
  // An NVSwitch with NVLink SHARP (NVLS) reduces in the network; this is the fraction of a
  // GPU port's line rate its reduction engine sustains (0: no NVLS). It differs by switch
  // generation, not by link, so it lives on the switch.
  double nvls_efficiency = 0;
  bool reduces_in_network() const { return nvls_efficiency > 0; }
};

struct TopoLink {
  NodeIndex from;
  NodeIndex to;
  sim::BytesPerSecond bandwidth;
  sim::Duration latency;
  LinkKind kind;
};

class Topology {
 public:
  Topology();
  ~Topology();
  Topology(Topology&&) noexcept;
  Topology& operator=(Topology&&) noexcept;

  NodeIndex add_node(std::string name, NodeKind kind, std::int32_t server = -1, double nvls_efficiency = 0);
  // Two directed links, a->b then b->a; returns the first (the reverse is its index + 1).
  LinkIndex connect(NodeIndex a, NodeIndex b, sim::BytesPerSecond bandwidth, sim::Duration latency, LinkKind kind);
  // The same with a different bandwidth (and latency) for b->a: each direction is its own resource.
  LinkIndex connect(NodeIndex a, NodeIndex b, sim::BytesPerSecond a_to_b, sim::BytesPerSecond b_to_a,
                    sim::Duration latency, LinkKind kind);
  LinkIndex connect(NodeIndex a, NodeIndex b, sim::BytesPerSecond a_to_b, sim::BytesPerSecond b_to_a,
                    sim::Duration latency_a_to_b, sim::Duration latency_b_to_a, LinkKind kind);

  const std::vector<TopoNode>& nodes() const { return nodes_; }
  const std::vector<TopoLink>& links() const { return links_; }
  const TopoNode& node(NodeIndex n) const { return nodes_[n]; }
  const TopoLink& link(LinkIndex l) const { return links_[l]; }
  // GPUs in the order they were added: rank r is gpus()[r].
  const std::vector<NodeIndex>& gpus() const { return gpus_; }
  std::size_t servers() const { return static_cast<std::size_t>(server_count_); }
  // Outgoing directed links of a node.
  std::span<const LinkIndex> out_links(NodeIndex n) const { return out_[n]; }
  // The index of a node by name, or -1.
  std::int64_t find(std::string_view name) const;

  // The directed links of a shortest path from src to dst; among equal-cost next hops the
  // hash picks one (ECMP), the same for the same hash. Searches from both ends meet in the middle
  // (topology.cpp). Empty when src == dst; an InternalError when dst cannot be reached (validate()
  // rules that out).
  std::vector<LinkIndex> route(NodeIndex src, NodeIndex dst, std::uint64_t flow_hash) const;
  // The same route found by the searches alone, without route()'s shortcut for paths of one or
  // two hops (tests compare the two).
  std::vector<LinkIndex> route_by_search(NodeIndex src, NodeIndex dst, std::uint64_t flow_hash) const;
  // Hops on a shortest path, or -1 when unreachable.
  int distance(NodeIndex src, NodeIndex dst) const;

  // What the GPUs and NICs are, for the collective cost model (nccl.hpp): the GPU as
  // gpu_link_spec() names it ("h100"; empty when a topology file names none) and the NIC kind
  // (one of net_kinds()).
  void describe(std::string gpu, std::string net);
  const std::string& gpu_type() const { return gpu_type_; }
  const std::string& net_kind() const { return net_kind_; }

  // What other modules derive from this topology and keep with it (a collective's symmetry
  // reduction), by key; forgotten when the topology changes, and all of it past 256 entries.
  std::shared_ptr<const void> memo(const std::string& key) const;
  void remember(const std::string& key, std::shared_ptr<const void> value) const;
  std::size_t memos() const;

  // Problems a hand-written topology can have, as messages (empty when sound): a GPU that
  // cannot reach every other GPU.
  std::vector<std::string> problems() const;

 private:
  struct Search;
  // The cached search from `origin`, along the links (forward) or against them; grown one level;
  // the length of a shortest route (-1: none), growing the two ends' searches until they meet;
  // whether v, j hops from the source, is on a shortest route of `length` hops; all with the
  // cache's mutex held.
  Search& search(NodeIndex origin, bool forward) const;
  void grow(Search& s, bool forward) const;
  int meet(Search& from, Search& to, NodeIndex src, NodeIndex dst) const;
  bool on_route(NodeIndex v, int j, int length, const Search& from, const Search& to, NodeIndex dst) const;
  void forget_searches() const;
  // Every node's in-links, built on first use (called with the cache's mutex held).
  const std::vector<std::vector<LinkIndex>>& in_links() const;

  std::vector<TopoNode> nodes_;
  std::vector<TopoLink> links_;
  std::vector<std::vector<LinkIndex>> out_;
  std::vector<NodeIndex> gpus_;
  std::int32_t server_count_ = 0;
  std::string gpu_type_;
  std::string net_kind_ = "ib";
  struct Cache;
  std::unique_ptr<Cache> cache_;  // searches per source and destination, grown on demand
};

// GPU datasheet figures that the builders need. Sources are cited in topology.cpp.
struct GpuLinkSpec {
  std::string_view name;          // "h100"
  sim::BytesPerSecond nvlink;     // per GPU, per direction
  double nvls_efficiency;         // of its NVSwitch generation's reduction port; 0: no NVLS
};
const GpuLinkSpec& gpu_link_spec(std::string_view gpu, std::string_view source, std::string_view where);

// The NIC kinds a topology's `net` parameter takes: ib, roce, efa, tcpxo, slingshot, socket.
const std::vector<std::string_view>& net_kinds();

// The range of a link's bandwidth, per direction, in every topology (spec or file): 1 Gb/s is
// slower than any link that carries training traffic; 1 PB/s is beyond any link built (and the
// flow network's capacity limit). Within it no transfer of a bounded size outlasts the clock.
inline constexpr sim::BytesPerSecond kMinLinkBandwidth{1e9 / 8};
inline constexpr sim::BytesPerSecond kMaxLinkBandwidth{1e15};
inline constexpr std::string_view kLinkBandwidthRange = "slower links carry no training traffic; faster ones are not built";
// A link's latency, at most 1 s: light crosses the Earth in under 70 ms.
inline constexpr sim::Duration kMaxLinkLatency = sim::Duration::seconds(1);

// Builders, from a spec string "<kind>:key=value,...", e.g. "dgx-h100:nodes=4",
// "dgx-h100:nodes=64,fabric=fat-tree,oversubscription=2", "nvl72:domains=2". Unknown kinds
// and keys are InputErrors listing the valid ones. `source` names where the string came
// from ("<command line>" or a file) for messages.
// `where` is the JSON pointer of the spec in the file `source`; empty on the command line.
// Every numeric key has a range with its reason; a repeated key, a key the kind does not take
// and an integer not written in digits are errors.
Topology build_topology(std::string_view spec, std::string_view source = "<command line>", std::string_view where = "");

// What a spec describes, checked as build_topology checks it, without building the graph.
struct TopologySpecInfo {
  std::int64_t gpus = 0;
  std::int64_t units = 0;     // servers (dgx-*) or NVLink domains (nvl72)
  std::int64_t per_unit = 0;  // GPUs in each
  std::string gpu;            // the GPU its builder wires ("h100", "gb200")
};
TopologySpecInfo check_topology_spec(std::string_view spec, std::string_view source = "<command line>", std::string_view where = "");
// The spec kinds with their parameters, for --help.
std::string topology_help();

}  // namespace orrery::models
