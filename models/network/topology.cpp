#include "models/network/topology.hpp"

#include "sim/error.hpp"
#include "sim/flow_network.hpp"
#include "sim/registry.hpp"
#include "sim/unit_parse.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <unordered_map>

namespace orrery::models {

using sim::InputError;
using sim::quote;

std::string_view to_string(NodeKind kind) {
  switch (kind) {
    case NodeKind::gpu: return "gpu";
    case NodeKind::nvswitch: return "nvswitch";
    case NodeKind::nic: return "nic";
    case NodeKind::leaf: return "leaf";
    case NodeKind::spine: return "spine";
    case NodeKind::core: return "core";
  }
  return "?";
}

std::string_view to_string(LinkKind kind) {
  switch (kind) {
    case LinkKind::nvlink: return "nvlink";
    case LinkKind::pcie: return "pcie";
    case LinkKind::network: return "network";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------
// Graph and routing

namespace {
constexpr std::uint16_t kUnreached = std::numeric_limits<std::uint16_t>::max();
constexpr NodeIndex kNoNode = std::numeric_limits<NodeIndex>::max();
}  // namespace

// Routes meet in the middle: a breadth-first search from the source along the links and one from
// the destination against them, each grown a whole level at a time (the one with the smaller last
// level first) until they meet, give the route's length D; the route then walks from the source,
// taking at each hop the out-links one step closer (the ECMP choices). A node j hops from the
// source is D - j hops from the destination, which the destination's search knows when it reaches
// that far, and otherwise the source's search knows as "j hops from the source and on a shortest
// path" (some out-neighbour one level further on is). Both searches stay within a few hops of
// their ends, so a route across a spine costs what the two ends' neighbourhoods hold, not every
// node behind the spines once per destination (which made data-parallel rings quadratic in GPUs).
// Searches are cached per node and grown on demand; past a budget of cached nodes all are dropped.
namespace {

// The distances a search has found, by node: open addressing on the node index while the search
// is small, so that one that stops near its end (a few dozen nodes) costs that much, not a table
// of every node; a table of every node (2 bytes each) once it holds an eighth of them.
class Distances {
 public:
  explicit Distances(std::size_t nodes) : nodes_(nodes), slots_(16, Slot{kNoNode, 0}) {}
  std::uint16_t operator[](NodeIndex v) const {
    if (!dense_.empty()) return dense_[v];
    for (std::size_t i = home(v);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i].node == v) return slots_[i].d;
      if (slots_[i].node == kNoNode) return kUnreached;
    }
  }
  // Records a node not yet recorded.
  void add(NodeIndex v, std::uint16_t d) {
    if (!dense_.empty()) {
      dense_[v] = d;
      return;
    }
    if (8 * (size_ + 1) > nodes_) {
      dense_.assign(nodes_, kUnreached);
      for (const Slot& s : slots_) {
        if (s.node != kNoNode) dense_[s.node] = s.d;
      }
      dense_[v] = d;
      std::vector<Slot>().swap(slots_);
      return;
    }
    if (2 * (size_ + 1) > slots_.size()) {
      std::vector<Slot> old(slots_.size() * 2, Slot{kNoNode, 0});
      old.swap(slots_);
      for (const Slot& s : old) {
        if (s.node != kNoNode) place(s);
      }
    }
    place(Slot{v, d});
    ++size_;
  }

 private:
  struct Slot {
    NodeIndex node;
    std::uint16_t d;
  };
  std::size_t home(NodeIndex v) const { return static_cast<std::size_t>((std::uint64_t{v} * 0x9e3779b97f4a7c15ull) >> 40) & (slots_.size() - 1); }
  void place(Slot s) {
    std::size_t i = home(s.node);
    while (slots_[i].node != kNoNode) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = s;
  }
  std::size_t nodes_;
  std::vector<Slot> slots_;
  std::size_t size_ = 0;
  std::vector<std::uint16_t> dense_;  // every node's, once large
};

// Cached searches together may hold this many nodes (about 20 bytes each) before all are dropped
// and grown again as routes ask: a ring over 131,072 GPUs touches every GPU's neighbourhood.
constexpr std::size_t kSearchBudget = std::size_t{1} << 22;

}  // namespace

// A search from one node (its origin), along the links (from a source) or against them (to a
// destination). GPUs are endpoints, never relays: the search holds no GPU but its origin (a GPU's
// distance is one more than its nearest neighbour's: Topology::meet), so a GPU's search within its
// server is its NVSwitch and NIC, not the server's other GPUs.
struct Topology::Search {
  explicit Search(std::size_t nodes, NodeIndex origin) : d(nodes) {
    d.add(origin, 0);
    queue.push_back(origin);
  }
  Distances d;                       // kUnreached until discovered
  std::vector<NodeIndex> queue;      // discovered, in order of distance
  std::vector<std::uint32_t> level{0};  // level[r]: where the nodes at distance r begin in queue
  bool done = false;                 // every node it can reach is discovered
  // Every node at distance <= radius() is discovered (all of them once done).
  int radius() const { return static_cast<int>(level.size()) - 1; }
  std::span<const NodeIndex> last() const { return std::span<const NodeIndex>(queue).subspan(level.back()); }
  std::span<const NodeIndex> at(int r) const {
    const std::size_t end = r + 1 < static_cast<int>(level.size()) ? level[static_cast<std::size_t>(r) + 1] : queue.size();
    return std::span<const NodeIndex>(queue).subspan(level[static_cast<std::size_t>(r)], end - level[static_cast<std::size_t>(r)]);
  }
  bool knows(int r) const { return done || r <= radius(); }  // every node at distance r is discovered
};

struct Topology::Cache {
  std::mutex mutex;
  std::vector<std::unique_ptr<Search>> from;  // per source node
  std::vector<std::unique_ptr<Search>> to;    // per destination node
  std::size_t held = 0;                       // nodes the cached searches hold
  // Every node's in-links, for the searches to destinations (built with the first).
  std::vector<std::vector<LinkIndex>> in;
  std::vector<LinkIndex> candidates;  // a hop's choices, reused
  std::unordered_map<std::string, std::shared_ptr<const void>> memo;  // Topology::memo
};

Topology::Topology() : cache_(std::make_unique<Cache>()) {}
Topology::~Topology() = default;
Topology::Topology(Topology&&) noexcept = default;
Topology& Topology::operator=(Topology&&) noexcept = default;

NodeIndex Topology::add_node(std::string name, NodeKind kind, std::int32_t server, double nvls_efficiency) {
  const auto index = static_cast<NodeIndex>(nodes_.size());
  ORRERY_CHECK(nvls_efficiency >= 0 && nvls_efficiency <= 1, "NVLS efficiency {} outside [0, 1]", nvls_efficiency);
  nodes_.push_back(TopoNode{std::move(name), kind, server, nvls_efficiency});
  out_.emplace_back();
  if (kind == NodeKind::gpu) gpus_.push_back(index);
  server_count_ = std::max(server_count_, server + 1);
  forget_searches();
  cache_->memo.clear();
  return index;
}

LinkIndex Topology::connect(NodeIndex a, NodeIndex b, sim::BytesPerSecond bandwidth, sim::Duration latency,
                            LinkKind kind) {
  return connect(a, b, bandwidth, bandwidth, latency, kind);
}

LinkIndex Topology::connect(NodeIndex a, NodeIndex b, sim::BytesPerSecond a_to_b, sim::BytesPerSecond b_to_a,
                            sim::Duration latency, LinkKind kind) {
  return connect(a, b, a_to_b, b_to_a, latency, latency, kind);
}

LinkIndex Topology::connect(NodeIndex a, NodeIndex b, sim::BytesPerSecond a_to_b, sim::BytesPerSecond b_to_a,
                            sim::Duration latency_a_to_b, sim::Duration latency_b_to_a, LinkKind kind) {
  ORRERY_CHECK(a < nodes_.size() && b < nodes_.size() && a != b, "bad link {} - {}", a, b);
  ORRERY_CHECK(latency_a_to_b >= sim::Duration::zero() && latency_b_to_a >= sim::Duration::zero(), "negative latency");
  ORRERY_CHECK(a_to_b.value() > 0 && b_to_a.value() > 0, "link {} - {} has no bandwidth", nodes_[a].name,
               nodes_[b].name);
  if (std::max(a_to_b.value(), b_to_a.value()) > sim::FlowNetwork::kMaxCapacity) {
    // Builders derive some links (a leaf's uplinks from its ports): check what they made.
    throw sim::InputError("topology", fmt::format("link {} - {}", nodes_[a].name, nodes_[b].name),
                          fmt::format("bandwidth {:.3g} B/s is beyond any link; expected at most 1 PB/s", std::max(a_to_b.value(), b_to_a.value())));
  }
  const auto first = static_cast<LinkIndex>(links_.size());
  links_.push_back(TopoLink{a, b, a_to_b, latency_a_to_b, kind});
  links_.push_back(TopoLink{b, a, b_to_a, latency_b_to_a, kind});
  out_[a].push_back(first);
  out_[b].push_back(first + 1);
  forget_searches();
  cache_->memo.clear();
  cache_->in.clear();
  return first;
}

std::shared_ptr<const void> Topology::memo(const std::string& key) const {
  std::lock_guard<std::mutex> lock(cache_->mutex);
  const auto it = cache_->memo.find(key);
  return it == cache_->memo.end() ? nullptr : it->second;
}

void Topology::remember(const std::string& key, std::shared_ptr<const void> value) const {
  std::lock_guard<std::mutex> lock(cache_->mutex);
  if (cache_->memo.size() >= 256) cache_->memo.clear();
  cache_->memo[key] = std::move(value);
}

std::size_t Topology::memos() const {
  std::lock_guard<std::mutex> lock(cache_->mutex);
  return cache_->memo.size();
}

void Topology::forget_searches() const {
  cache_->from.clear();
  cache_->to.clear();
  cache_->held = 0;
}

void Topology::describe(std::string gpu, std::string net) {
  gpu_type_ = std::move(gpu);
  net_kind_ = std::move(net);
}

const std::vector<std::string_view>& net_kinds() {
  static const std::vector<std::string_view> kinds = {"ib", "roce", "efa", "tcpxo", "slingshot", "socket"};
  return kinds;
}

std::int64_t Topology::find(std::string_view name) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].name == name) return static_cast<std::int64_t>(i);
  }
  return -1;
}

const std::vector<std::vector<LinkIndex>>& Topology::in_links() const {
  if (cache_->in.size() != nodes_.size()) {
    cache_->in.assign(nodes_.size(), {});
    for (LinkIndex l = 0; l < links_.size(); ++l) cache_->in[links_[l].to].push_back(l);
  }
  return cache_->in;
}

Topology::Search& Topology::search(NodeIndex origin, bool forward) const {
  // Called with the cache's mutex held.
  std::vector<std::unique_ptr<Search>>& cached = forward ? cache_->from : cache_->to;
  if (cached.size() != nodes_.size()) cached.resize(nodes_.size());
  if (!forward) (void)in_links();
  std::unique_ptr<Search>& slot = cached[origin];
  if (!slot) {
    slot = std::make_unique<Search>(nodes_.size(), origin);
    ++cache_->held;
  }
  return *slot;
}

void Topology::grow(Search& s, bool forward) const {
  // Called with the cache's mutex held. Expands the last level: discovers distance radius() + 1.
  if (s.done) return;
  const auto begin = static_cast<std::size_t>(s.level.back());
  const std::size_t end = s.queue.size();
  const auto next = static_cast<std::uint16_t>(s.radius() + 1);
  for (std::size_t i = begin; i < end; ++i) {
    for (const LinkIndex l : forward ? out_[s.queue[i]] : cache_->in[s.queue[i]]) {
      const NodeIndex v = forward ? links_[l].to : links_[l].from;
      if (nodes_[v].kind != NodeKind::gpu && s.d[v] == kUnreached) {
        s.d.add(v, next);
        s.queue.push_back(v);
      }
    }
  }
  cache_->held += s.queue.size() - end;
  if (s.queue.size() == end) {
    s.done = true;
  } else {
    s.level.push_back(static_cast<std::uint32_t>(end));
  }
}

int Topology::meet(Search& from, Search& to, NodeIndex src, NodeIndex dst) const {
  // Called with the cache's mutex held. The searches hold no GPU but their origins: a GPU
  // destination is one hop past the nearest of its in-neighbours the source's search knows (the
  // source itself when they are linked), a GPU source one hop before the nearest out-neighbour
  // the destination's search knows. Either is exact once one neighbour is known: the others are
  // farther than the search's radius.
  const auto ends = [&](NodeIndex a, NodeIndex b) {
    int best = std::numeric_limits<int>::max();
    if (from.d[b] != kUnreached) return static_cast<int>(from.d[b]);
    if (to.d[a] != kUnreached) return static_cast<int>(to.d[a]);
    for (const LinkIndex l : cache_->in[b]) {
      const NodeIndex u = links_[l].from;
      if (u == a) return 1;
      if (from.d[u] != kUnreached) best = std::min(best, from.d[u] + 1);
    }
    if (best != std::numeric_limits<int>::max()) return best;
    for (const LinkIndex l : out_[a]) {
      const NodeIndex w = links_[l].to;
      if (to.d[w] != kUnreached) best = std::min(best, to.d[w] + 1);
    }
    return best;
  };
  for (;;) {
    if (const int d = ends(src, dst); d != std::numeric_limits<int>::max()) return d;
    if (from.done || to.done) return -1;
    // Both ends are farther apart than either radius. A shortest route of length D <= a + b
    // (a, b the radii) has its node a hops from the source on the source's last level, D - a
    // hops from the destination; any node of that level the destination's search knows lies on
    // a route of a + d(v, dst) <= a + b hops: so the least over that level is D, and none means
    // D > a + b (the same from the destination's side).
    const int a = from.radius();
    const int b = to.radius();
    int best = std::numeric_limits<int>::max();
    const bool scan_from = from.last().size() <= to.last().size();
    for (const NodeIndex v : scan_from ? from.last() : to.last()) {
      const std::uint16_t other = scan_from ? to.d[v] : from.d[v];
      if (other != kUnreached) best = std::min(best, (scan_from ? a : b) + other);
    }
    if (best != std::numeric_limits<int>::max()) return best;
    grow(scan_from ? from : to, scan_from);
  }
}

bool Topology::on_route(NodeIndex v, int j, int length, const Search& from, const Search& to, NodeIndex dst) const {
  // v, an out-neighbour of a node j - 1 hops along a shortest route, is on one when it is
  // length - j hops from the destination: read there when that search reaches so far, else when
  // an out-neighbour j + 1 hops from the source is (v is then j hops from it, not fewer).
  if (v == dst) return j == length;
  if (nodes_[v].kind == NodeKind::gpu) return false;
  if (to.knows(length - j)) return to.d[v] == length - j;
  if (j + 1 == length) {  // one hop short: a link to the destination (its few in-links, not a switch's many out-links)
    for (const LinkIndex l : cache_->in[dst]) {
      if (links_[l].from == v) return true;
    }
    return false;
  }
  for (const LinkIndex l : out_[v]) {
    const NodeIndex w = links_[l].to;
    if (w == dst ? j + 1 == length : from.d[w] == j + 1 && on_route(w, j + 1, length, from, to, dst)) return true;
  }
  return false;
}

int Topology::distance(NodeIndex src, NodeIndex dst) const {
  if (src == dst) return 0;
  std::lock_guard<std::mutex> lock(cache_->mutex);
  if (cache_->held > kSearchBudget) forget_searches();
  Search& from = search(src, true);
  Search& to = search(dst, false);
  return meet(from, to, src, dst);
}

namespace {
// The choice at hop j of a flow: splitmix64 of its hash and the hop, independent at each hop.
std::uint64_t hop_choice(std::uint64_t flow_hash, int j) {
  constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15;
  std::uint64_t z = flow_hash + static_cast<std::uint64_t>(j) * kGolden;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

std::vector<LinkIndex> Topology::route(NodeIndex src, NodeIndex dst, std::uint64_t flow_hash) const {
  if (src == dst) return {};
  {
    // Paths of one or two hops (a GPU to its NVLink peers through their switch, to its NIC's
    // leaf): the same choices as the searches make (route_by_search), from the links at both
    // ends: the links that reach dst, or the links to a node (never a GPU) with a link to dst,
    // in link order, the flow's hash picking at each hop.
    std::lock_guard<std::mutex> lock(cache_->mutex);
    const std::span<const LinkIndex> into = in_links()[dst];
    std::vector<LinkIndex>& candidates = cache_->candidates;
    const auto reaching = [&](NodeIndex from) {  // the links from `from` to dst, in link order
      candidates.clear();
      for (const LinkIndex l : into) {
        if (links_[l].from == from) candidates.push_back(l);
      }
    };
    reaching(src);
    if (!candidates.empty()) return {candidates[static_cast<std::size_t>(hop_choice(flow_hash, 1) % candidates.size())]};
    for (const LinkIndex l : out_[src]) {
      const NodeIndex v = links_[l].to;
      if (nodes_[v].kind == NodeKind::gpu) continue;
      if (std::any_of(into.begin(), into.end(), [&](LinkIndex k) { return links_[k].from == v; })) candidates.push_back(l);
    }
    if (!candidates.empty()) {
      const LinkIndex first = candidates[static_cast<std::size_t>(hop_choice(flow_hash, 1) % candidates.size())];
      reaching(links_[first].to);
      return {first, candidates[static_cast<std::size_t>(hop_choice(flow_hash, 2) % candidates.size())]};
    }
  }
  return route_by_search(src, dst, flow_hash);
}

std::vector<LinkIndex> Topology::route_by_search(NodeIndex src, NodeIndex dst, std::uint64_t flow_hash) const {
  std::vector<LinkIndex> path;
  if (src == dst) return path;
  // One lock for the whole route: the searches may grow while they are read.
  std::lock_guard<std::mutex> lock(cache_->mutex);
  if (cache_->held > kSearchBudget) forget_searches();
  Search& from = search(src, true);
  Search& to = search(dst, false);
  const int length = meet(from, to, src, dst);
  ORRERY_CHECK(length >= 0, "no route from {} to {}", nodes_[src].name, nodes_[dst].name);
  path.reserve(static_cast<std::size_t>(length));
  std::vector<LinkIndex>& candidates = cache_->candidates;
  NodeIndex at = src;
  for (int j = 1; at != dst; ++j) {
    const std::uint64_t z = hop_choice(flow_hash, j);
    // The out-links to nodes one hop closer, in link order.
    candidates.clear();
    const int remaining = length - j;
    const std::span<const LinkIndex> out = out_[at];
    if (to.knows(remaining) && out.size() > to.at(remaining).size() * 4) {
      // A large switch (a spine, one NVSwitch of 512 GPUs): the nodes that far from the
      // destination are fewer than its links; their in-links from here, sorted to link order.
      for (const NodeIndex w : to.at(remaining)) {
        for (const LinkIndex l : cache_->in[w]) {
          if (links_[l].from == at) candidates.push_back(l);
        }
      }
      std::sort(candidates.begin(), candidates.end());
    } else {
      for (const LinkIndex l : out) {
        if (on_route(links_[l].to, j, length, from, to, dst)) candidates.push_back(l);
      }
    }
    ORRERY_CHECK(!candidates.empty(), "routing from {} to {} is stuck at {}", nodes_[src].name, nodes_[dst].name, nodes_[at].name);
    const LinkIndex l = candidates[static_cast<std::size_t>(z % candidates.size())];
    path.push_back(l);
    at = links_[l].to;
  }
  return path;
}

std::vector<std::string> Topology::problems() const {
  std::vector<std::string> out;
  if (gpus_.empty()) {
    out.emplace_back("it has no GPU");
    return out;
  }
  std::lock_guard<std::mutex> lock(cache_->mutex);
  Search& whole = search(gpus_.front(), false);
  while (!whole.done) grow(whole, false);
  for (const NodeIndex g : gpus_) {
    // A GPU reaches the first when one of its neighbours does (the search holds no other GPU).
    bool reaches = g == gpus_.front();
    for (const LinkIndex l : out_[g]) reaches = reaches || links_[l].to == gpus_.front() || whole.d[links_[l].to] != kUnreached;
    if (!reaches) {
      out.push_back(fmt::format("GPU {} cannot reach GPU {}: it is disconnected", quote(nodes_[g].name),
                                quote(nodes_[gpus_.front()].name)));
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Datasheet figures

const GpuLinkSpec& gpu_link_spec(std::string_view gpu, std::string_view source, std::string_view where) {
  // NVLink bandwidth per GPU, per direction: NVLink 3 (A100) 300 GB/s, NVLink 4 (H100, H200)
  // 450 GB/s, NVLink 5 (B200, GB200) 900 GB/s. Source: ../shared/data/ml-engineering/
  // nvlink_generations.csv (S. Bekman, ML Engineering Open Book, network/README.md), matching
  // NVIDIA's DGX A100/H100/B200 datasheets. NVLS (NVLink SHARP, reduction in the NVSwitch)
  // arrived with third-generation NVSwitch (H100). The share of a port's line rate that the
  // switch's reduction engine sustains is calibrated once per NVSwitch generation, each on one
  // measurement with this model's 32-chunk pipeline: third generation (H100, H200) on 8x H200
  // NVLS all-reduce at 16 GiB, 480.0 GB/s busbw (ml-engineering/nccl_collectives_8xH200_16GiB.csv);
  // fourth (B200, GB200) on 8x B200 at 8 GiB, 838.0 GB/s (nccl_allreduce_nvls_sharp_8GiB.csv).
  static const std::vector<GpuLinkSpec> specs = {
      {"a100", sim::BytesPerSecond(300e9), 0.0},   {"h100", sim::BytesPerSecond(450e9), 0.707},
      {"h200", sim::BytesPerSecond(450e9), 0.707}, {"b200", sim::BytesPerSecond(900e9), 0.617},
      {"gb200", sim::BytesPerSecond(900e9), 0.617},
      // H800 and H20 (models/hardware/hardware.cpp cites them): NVLink 4 behind third-generation NVSwitch,
      // the H800 with 200 GB/s per direction; NVLS share as H100's.
      {"h800", sim::BytesPerSecond(200e9), 0.707}, {"h20", sim::BytesPerSecond(450e9), 0.707},
  };
  for (const GpuLinkSpec& s : specs) {
    if (s.name == gpu) return s;
  }
  std::vector<std::string> names;
  for (const GpuLinkSpec& s : specs) names.emplace_back(s.name);
  throw InputError(std::string(source), std::string(where),
                   fmt::format("unknown GPU {}{}; valid: a100, h100, h200, h800, h20, b200, gb200", quote(gpu),
                               sim::did_you_mean(gpu, names)));
}

// ---------------------------------------------------------------------------------------
// Builders

namespace {

// Link latencies are assumptions of the order of magnitude (a hop through an NVSwitch or a
// PCIe switch is a few hundred ns; an InfiniBand switch hop plus cable is under a microsecond);
// they matter only for small messages, and calibration replaces them.
constexpr auto kNvlinkLatency = sim::Duration::nanoseconds(250);
constexpr auto kPcieLatency = sim::Duration::nanoseconds(250);
constexpr auto kNetworkLatency = sim::Duration::nanoseconds(500);

struct Fabric {
  std::string kind;            // rail, fat-tree, fat-tree-3
  sim::BytesPerSecond nic;     // per NIC, per direction
  std::int64_t leaf_down;      // NIC ports below a leaf (rail: servers per rail leaf)
  double oversubscription;     // leaf downlink bandwidth over uplink bandwidth
  std::int64_t planes;         // independent copies of the fabric; each NIC splits over them
  std::int64_t pod_leaves;     // fat-tree-3: leaves per pod
  bool spray;                  // adaptive routing / packet spraying instead of per-flow ECMP
  std::string net;             // what the NICs speak (net_kinds()): sets the collective model's parameters
};

// Connects NICs (nics[server][i]) to a switched fabric.
void attach_fabric(Topology& t, const std::vector<std::vector<NodeIndex>>& nics, const Fabric& f) {
  const auto servers = static_cast<std::int64_t>(nics.size());
  const auto per_server = servers == 0 ? 0 : static_cast<std::int64_t>(nics.front().size());
  if (servers * per_server == 0) return;
  const sim::BytesPerSecond port = f.nic / static_cast<double>(f.planes);
  // Each leaf has leaf_down ports down; its uplinks carry leaf_down * port / oversubscription
  // in all, spread evenly over the spines it connects to.
  // With spraying (adaptive routing) every flow spreads evenly over all spines: for a fluid
  // model that is one spine whose link from each leaf carries the leaf's whole uplink capacity.
  const auto spines = f.spray ? std::int64_t{1} : std::max<std::int64_t>(1, std::llround(static_cast<double>(f.leaf_down) / f.oversubscription));
  const sim::BytesPerSecond uplink = port * (static_cast<double>(f.leaf_down) / (f.oversubscription * static_cast<double>(spines)));

  for (std::int64_t p = 0; p < f.planes; ++p) {
    const std::string plane = f.planes > 1 ? fmt::format("p{}.", p) : "";
    // Which leaf each NIC port attaches to.
    std::vector<NodeIndex> leaves;
    std::vector<std::vector<NodeIndex>> leaf_of(static_cast<std::size_t>(servers));
    if (f.kind == "rail") {
      // Rail-optimized: the leaf of rail r in scalable unit u takes NIC r of the leaf_down
      // servers of u, so that same-rail traffic crosses one switch.
      const std::int64_t units = (servers + f.leaf_down - 1) / f.leaf_down;
      for (std::int64_t u = 0; u < units; ++u) {
        for (std::int64_t r = 0; r < per_server; ++r) {
          leaves.push_back(t.add_node(fmt::format("{}su{}.rail{}", plane, u, r), NodeKind::leaf));
        }
      }
      for (std::int64_t s = 0; s < servers; ++s) {
        for (std::int64_t r = 0; r < per_server; ++r) {
          leaf_of[static_cast<std::size_t>(s)].push_back(leaves[static_cast<std::size_t>((s / f.leaf_down) * per_server + r)]);
        }
      }
    } else {
      // Plain fat-tree: NIC ports fill leaves in order.
      const std::int64_t ports = servers * per_server;
      for (std::int64_t l = 0; l < (ports + f.leaf_down - 1) / f.leaf_down; ++l) {
        leaves.push_back(t.add_node(fmt::format("{}leaf{}", plane, l), NodeKind::leaf));
      }
      for (std::int64_t k = 0; k < ports; ++k) {
        leaf_of[static_cast<std::size_t>(k / per_server)].push_back(leaves[static_cast<std::size_t>(k / f.leaf_down)]);
      }
    }
    for (std::int64_t s = 0; s < servers; ++s) {
      for (std::int64_t r = 0; r < per_server; ++r) {
        t.connect(nics[static_cast<std::size_t>(s)][static_cast<std::size_t>(r)], leaf_of[static_cast<std::size_t>(s)][static_cast<std::size_t>(r)], port,
                  kNetworkLatency, LinkKind::network);
      }
    }

    if (f.kind != "fat-tree-3") {
      for (std::int64_t j = 0; j < spines; ++j) {
        const NodeIndex spine = t.add_node(fmt::format("{}spine{}", plane, j), NodeKind::spine);
        for (const NodeIndex leaf : leaves) t.connect(leaf, spine, uplink, kNetworkLatency, LinkKind::network);
      }
      continue;
    }
    // Three levels: pods of pod_leaves leaves, each with `spines` aggregation switches; spine
    // j of every pod connects to core group j, non-blocking above the leaves.
    const auto pods = (static_cast<std::int64_t>(leaves.size()) + f.pod_leaves - 1) / f.pod_leaves;
    const std::int64_t cores_per_group = f.pod_leaves;
    std::vector<NodeIndex> cores;
    for (std::int64_t j = 0; j < spines; ++j) {
      for (std::int64_t c = 0; c < cores_per_group; ++c) {
        cores.push_back(t.add_node(fmt::format("{}core{}.{}", plane, j, c), NodeKind::core));
      }
    }
    for (std::int64_t pod = 0; pod < pods; ++pod) {
      for (std::int64_t j = 0; j < spines; ++j) {
        const NodeIndex spine = t.add_node(fmt::format("{}pod{}.spine{}", plane, pod, j), NodeKind::spine);
        for (std::int64_t l = pod * f.pod_leaves; l < std::min<std::int64_t>((pod + 1) * f.pod_leaves, static_cast<std::int64_t>(leaves.size())); ++l) {
          t.connect(leaves[static_cast<std::size_t>(l)], spine, uplink, kNetworkLatency, LinkKind::network);
        }
        for (std::int64_t c = 0; c < cores_per_group; ++c) {
          t.connect(spine, cores[static_cast<std::size_t>(j * cores_per_group + c)], uplink, kNetworkLatency, LinkKind::network);
        }
      }
    }
  }
}

// Where a spec came from. On the command line the place is the spec itself ("<command line>:
// topology "dgx-h100:nodes=0" parameter nodes: ..."); in a file it is the JSON pointer of the
// string, and the message quotes the spec ("s.json:/cluster/topology: topology "..." parameter
// nodes: ...").
struct BuildContext {
  BuildContext(std::string_view src, std::string_view ptr, std::string quoted) : source(src), pointer(ptr), spec(std::move(quoted)) {}
  std::string_view source;
  std::string_view pointer;  // empty on the command line
  std::string spec;          // "topology \"dgx-h100:nodes=4\"", the user's own text quoted

  sim::InputLocation location(std::string_view param) const {
    where_ = pointer.empty() ? (param.empty() ? spec : fmt::format("{} parameter {}", spec, param)) : std::string(pointer);
    return {source, where_};
  }
  [[noreturn]] void fail(std::string_view param, const std::string& message) const {
    const sim::InputLocation at = location(param);
    if (!pointer.empty()) {
      throw InputError(std::string(source), std::string(pointer),
                       param.empty() ? fmt::format("{}: {}", spec, message) : fmt::format("{} parameter {}: {}", spec, param, message));
    }
    throw InputError(std::string(source), std::string(at.where), message);
  }

 private:
  mutable std::string where_;
};

// Every numeric parameter has a range, so that no spec builds a graph beyond memory or a link
// whose transfers outlast the clock.
// 131072 GPUs: above the largest training clusters reported (about 100,000 GPUs).
constexpr std::int64_t kMaxGpus = 131072;
// 576 GPUs: the largest NVLink domain announced (NVL576); one NVSwitch fabric per server or domain.
constexpr std::int64_t kMaxGpusPerUnit = 576;
// 512 ports: a 51.2 Tb/s switch at 100 Gb/s per port, the highest radix shipped.
constexpr std::int64_t kMaxSwitchPorts = 512;
// 8 planes: every plane is a full copy of the fabric.
constexpr std::int64_t kMaxPlanes = 8;

std::int64_t int_param(const sim::Params& p, std::string_view name, std::int64_t hi, std::string_view why, const BuildContext& at) {
  const std::int64_t v = p.get_int(name);
  if (v < 1 || v > hi) at.fail(name, fmt::format("found {}, expected a positive integer of at most {} ({})", v, hi, why));
  return v;
}

sim::BytesPerSecond bandwidth_param(const sim::Params& p, std::string_view name, const BuildContext& at) {
  const std::string& text = p.get_string(name);
  const sim::BytesPerSecond bw = sim::parse_bandwidth(text, at.location(name));
  if (bw.value() <= 0) at.fail(name, fmt::format("bandwidth must be positive, found {}", quote(text)));
  if (bw < kMinLinkBandwidth || bw > kMaxLinkBandwidth) {
    at.fail(name, fmt::format("found {}, expected a bandwidth from 1 Gb/s to 1 PB/s ({})", quote(text), kLinkBandwidthRange));
  }
  return bw;
}

Fabric fabric_params(const sim::Params& p, const BuildContext& at) {
  const std::string routing = p.get_string("routing");
  if (routing != "ecmp" && routing != "spray") {
    at.fail("routing", fmt::format("unknown routing {}{}; valid: ecmp, spray", quote(routing), sim::did_you_mean(routing, {"ecmp", "spray"})));
  }
  Fabric f{p.get_string("fabric"),
           bandwidth_param(p, "nic", at),
           int_param(p, "leaf_ports", kMaxSwitchPorts, "a 51.2 Tb/s switch has 512 ports of 100 Gb/s", at),
           p.get_number("oversubscription"),
           int_param(p, "planes", kMaxPlanes, "every plane is a full copy of the fabric", at),
           int_param(p, "pod_leaves", kMaxSwitchPorts, "a spine switch has at most 512 ports", at),
           routing == "spray",
           p.get_string("net")};
  const auto& kinds = net_kinds();
  if (std::find(kinds.begin(), kinds.end(), f.net) == kinds.end()) {
    std::vector<std::string> names(kinds.begin(), kinds.end());
    at.fail("net", fmt::format("unknown net {}{}; valid: {}", quote(f.net), sim::did_you_mean(f.net, names), fmt::join(kinds, ", ")));
  }
  if (f.spray && f.kind == "fat-tree-3") {
    at.fail("routing", "spray is modelled for two-level fabrics (rail, fat-tree); use ecmp with fat-tree-3");
  }
  if (f.kind != "rail" && f.kind != "fat-tree" && f.kind != "fat-tree-3") {
    at.fail("fabric", fmt::format("unknown fabric {}{}; valid: rail, fat-tree, fat-tree-3", quote(f.kind),
                                  sim::did_you_mean(f.kind, {"rail", "fat-tree", "fat-tree-3"})));
  }
  if (!(f.oversubscription >= 1.0)) {
    at.fail("oversubscription", fmt::format("found {}, expected a ratio of at least 1", f.oversubscription));
  }
  if (!(f.oversubscription <= static_cast<double>(f.leaf_down))) {
    at.fail("oversubscription", fmt::format("found {}, expected a ratio from 1 to leaf_ports = {} (a leaf keeps at least one uplink)",
                                            f.oversubscription, f.leaf_down));
  }
  // The leaf uplinks attach_fabric derives: spraying puts a leaf's whole uplink capacity on one link.
  const double port = f.nic.value() / static_cast<double>(f.planes);
  const double spines = f.spray ? 1.0 : std::max(1.0, std::round(static_cast<double>(f.leaf_down) / f.oversubscription));
  const double uplink = port * static_cast<double>(f.leaf_down) / (f.oversubscription * spines);
  if (uplink > kMaxLinkBandwidth.value()) {
    at.fail("nic", fmt::format("{} makes leaf uplinks of {}, expected at most 1 PB/s per link ({})", quote(p.get_string("nic")),
                               sim::to_string(sim::BytesPerSecond(uplink)), kLinkBandwidthRange));
  }
  return f;
}

std::vector<sim::ParamSpec> fabric_specs() {
  return {
      {"nic", sim::ParamType::string, std::string("400 Gb/s"), "bandwidth of each NIC, per direction (one NIC per GPU), 1 Gb/s to 1 PB/s"},
      {"fabric", sim::ParamType::string, std::string("rail"), "rail (rail-optimized leaf-spine), fat-tree (2 levels) or fat-tree-3"},
      {"leaf_ports", sim::ParamType::integer, std::int64_t{32}, "NIC ports per leaf switch (rail: servers per rail leaf), 1 to 512"},
      {"oversubscription", sim::ParamType::number, 1.0, "leaf downlink over uplink bandwidth (1 = non-blocking), 1 to leaf_ports"},
      {"planes", sim::ParamType::integer, std::int64_t{1}, "independent fabric planes; each NIC splits its bandwidth over them (1 to 8)"},
      {"pod_leaves", sim::ParamType::integer, std::int64_t{8}, "fat-tree-3: leaves per pod, 1 to 512"},
      {"routing", sim::ParamType::string, std::string("ecmp"),
       "ecmp (per-flow hash over equal-cost spines) or spray (adaptive routing: flows spread evenly)"},
      {"net", sim::ParamType::string, std::string("ib"),
       "what the NICs speak: ib (InfiniBand), roce, efa (AWS), tcpxo (GCP GPUDirect-TCPXO), slingshot (HPE) or socket (TCP); "
       "sets the NCCL model's network efficiency and latency"},
  };
}

// A spec's parameters, checked: what a builder needs, nothing built yet.
struct Shape {
  const GpuLinkSpec* gpu = nullptr;
  std::int64_t units = 0;     // servers or NVLink domains
  std::int64_t per_unit = 0;  // GPUs in each
  sim::BytesPerSecond nvlink;
  sim::BytesPerSecond pcie;
  Fabric fabric;
};

// The units x GPUs per unit of a spec, within kMaxGpus.
void check_gpu_count(const Shape& s, std::string_view units_key, std::string_view per_key, const BuildContext& at) {
  if (s.units * s.per_unit > kMaxGpus) {
    at.fail(units_key, fmt::format("{} x {} = {} x {} = {} GPUs, expected at most {} (above the largest training clusters built)",
                                   units_key, per_key, s.units, s.per_unit, s.units * s.per_unit, kMaxGpus));
  }
}

// GB200 NVL72: a compute tray holds 2 Grace CPUs and 4 Blackwell GPUs, each GPU with its own NIC.
constexpr std::int64_t kGpusPerTray = 4;

struct Builder {
  virtual ~Builder() = default;
  virtual Shape check(const BuildContext& at) const = 0;
  virtual Topology build(const Shape& shape) const = 0;
};

// HGX/DGX servers: `gpus` GPUs on one NVSwitch fabric (modelled as one non-blocking switch
// node), one NIC per GPU on PCIe, NICs on a switched fabric.
struct DgxBuilder : Builder {
  std::string gpu;
  sim::Params p;
  DgxBuilder(std::string g, sim::Params params) : gpu(std::move(g)), p(std::move(params)) {}
  Shape check(const BuildContext& at) const override {
    Shape s;
    s.gpu = &gpu_link_spec(gpu, at.source, at.location("").where);
    s.units = int_param(p, "nodes", kMaxGpus, "the GPUs of the largest training clusters built", at);
    s.per_unit = int_param(p, "gpus_per_node", kMaxGpusPerUnit, "the largest NVLink domain announced, NVL576", at);
    check_gpu_count(s, "nodes", "gpus_per_node", at);
    s.nvlink = p.get_string("nvlink").empty() ? s.gpu->nvlink : bandwidth_param(p, "nvlink", at);
    s.pcie = bandwidth_param(p, "pcie", at);
    s.fabric = fabric_params(p, at);
    return s;
  }
  Topology build(const Shape& s) const override {
    Topology t;
    std::vector<std::vector<NodeIndex>> nics(static_cast<std::size_t>(s.units));
    for (std::int64_t n = 0; n < s.units; ++n) {
      const auto server = static_cast<std::int32_t>(n);
      std::vector<NodeIndex> gpus;
      for (std::int64_t g = 0; g < s.per_unit; ++g) gpus.push_back(t.add_node(fmt::format("s{}.gpu{}", n, g), NodeKind::gpu, server));
      const NodeIndex nvswitch = t.add_node(fmt::format("s{}.nvswitch", n), NodeKind::nvswitch, server, s.gpu->nvls_efficiency);
      for (std::int64_t g = 0; g < s.per_unit; ++g) {
        t.connect(gpus[static_cast<std::size_t>(g)], nvswitch, s.nvlink, kNvlinkLatency, LinkKind::nvlink);
        const NodeIndex nic = t.add_node(fmt::format("s{}.nic{}", n, g), NodeKind::nic, server);
        t.connect(gpus[static_cast<std::size_t>(g)], nic, s.pcie, kPcieLatency, LinkKind::pcie);
        nics[static_cast<std::size_t>(n)].push_back(nic);
      }
    }
    if (s.units > 1) attach_fabric(t, nics, s.fabric);
    t.describe(std::string(s.gpu->name), s.fabric.net);
    return t;
  }
};

// NVL72-style domains: 72 GPUs on one NVLink switch domain, 4 GPUs per compute tray (the
// GB200 NVL72 layout: 18 trays of 4 GPUs), one NIC per GPU, domains joined by the fabric.
struct Nvl72Builder : Builder {
  sim::Params p;
  explicit Nvl72Builder(sim::Params params) : p(std::move(params)) {}
  Shape check(const BuildContext& at) const override {
    Shape s;
    s.gpu = &gpu_link_spec(p.get_string("gpu"), at.source, at.location("gpu").where);
    s.units = int_param(p, "domains", kMaxGpus, "the GPUs of the largest training clusters built", at);
    s.per_unit = int_param(p, "gpus_per_domain", kMaxGpusPerUnit, "the largest NVLink domain announced, NVL576", at);
    // A domain is whole compute trays of 4 GPUs (GB200 NVL72: 18 trays), each tray's NICs one
    // server on the fabric (fuzz_topology: 17 GPUs per domain left a tray of 2 and read past it).
    if (s.per_unit % kGpusPerTray != 0) {
      at.fail("gpus_per_domain", fmt::format("found {} GPUs per domain, expected a multiple of {} (whole compute trays of {} GPUs, as NVL36 and NVL72)",
                                             s.per_unit, kGpusPerTray, kGpusPerTray));
    }
    check_gpu_count(s, "domains", "gpus_per_domain", at);
    s.nvlink = s.gpu->nvlink;
    s.pcie = bandwidth_param(p, "pcie", at);
    s.fabric = fabric_params(p, at);
    return s;
  }
  Topology build(const Shape& s) const override {
    Topology t;
    std::vector<std::vector<NodeIndex>> nics;  // per tray of 4
    for (std::int64_t d = 0; d < s.units; ++d) {
      const NodeIndex nvswitch = t.add_node(fmt::format("d{}.nvswitch", d), NodeKind::nvswitch, -1, s.gpu->nvls_efficiency);
      for (std::int64_t g = 0; g < s.per_unit; ++g) {
        const auto tray = static_cast<std::int32_t>((d * s.per_unit + g) / kGpusPerTray);
        const NodeIndex gpu = t.add_node(fmt::format("d{}.gpu{}", d, g), NodeKind::gpu, tray);
        t.connect(gpu, nvswitch, s.nvlink, kNvlinkLatency, LinkKind::nvlink);
        const NodeIndex nic = t.add_node(fmt::format("d{}.nic{}", d, g), NodeKind::nic, tray);
        t.connect(gpu, nic, s.pcie, kPcieLatency, LinkKind::pcie);
        if (static_cast<std::size_t>(tray) >= nics.size()) nics.emplace_back();
        nics[static_cast<std::size_t>(tray)].push_back(nic);
      }
    }
    if (s.units > 1) attach_fabric(t, nics, s.fabric);
    t.describe(std::string(s.gpu->name), s.fabric.net);
    return t;
  }
};

const sim::Registry<Builder>& builders() {
  static const sim::Registry<Builder> registry = [] {
    sim::Registry<Builder> r("topology");
    // PCIe Gen5 x16: 32 GT/s x 16 lanes x 128b/130b = 63 GB/s per direction (PCI-SIG PCIe 5.0
    // specification); Gen4 (A100 systems) is half of it.
    const auto dgx_specs = [](std::string_view pcie) {
      std::vector<sim::ParamSpec> s = {
          {"nodes", sim::ParamType::integer, std::int64_t{1}, "servers (at most 131072 GPUs in all)"},
          {"gpus_per_node", sim::ParamType::integer, std::int64_t{8}, "GPUs per server, on one NVSwitch fabric (1 to 576)"},
          {"nvlink", sim::ParamType::string, std::string(), "NVLink bandwidth per GPU per direction, 1 Gb/s to 1 PB/s (default: the GPU's datasheet)"},
          {"pcie", sim::ParamType::string, std::string(pcie), "GPU-NIC PCIe bandwidth per direction"},
      };
      for (sim::ParamSpec& f : fabric_specs()) s.push_back(std::move(f));
      return s;
    };
    for (const std::string gpu : {"a100", "h100", "h200", "h800", "h20", "b200"}) {
      const std::string pcie = gpu == "a100" ? "31.5 GB/s" : "63 GB/s";
      r.add({"dgx-" + gpu, fmt::format("DGX/HGX {} servers of 8 GPUs on NVSwitch, a NIC per GPU", gpu), dgx_specs(pcie),
             [gpu](const sim::Params& p) { return std::make_unique<DgxBuilder>(gpu, p); }});
    }
    std::vector<sim::ParamSpec> nvl = {
        {"domains", sim::ParamType::integer, std::int64_t{1}, "NVLink domains (at most 131072 GPUs in all)"},
        {"gpus_per_domain", sim::ParamType::integer, std::int64_t{72}, "GPUs per NVLink domain (1 to 576)"},
        {"gpu", sim::ParamType::string, std::string("gb200"), "GPU type (sets the NVLink bandwidth)"},
        {"pcie", sim::ParamType::string, std::string("63 GB/s"), "GPU-NIC bandwidth per direction"},
    };
    for (sim::ParamSpec& f : fabric_specs()) nvl.push_back(std::move(f));
    r.add({"nvl72", "NVL72-style domains: 72 GPUs on one NVLink switch, a NIC per GPU", nvl,
           [](const sim::Params& p) { return std::make_unique<Nvl72Builder>(p); }});
    return r;
  }();
  return registry;
}

// The value of `key` in a spec, read as the parameter's declared type: integers in digits only
// ("1e0" and "1;x" are not server counts), numbers finite, booleans true or false.
sim::ParamValue param_value(const sim::ParamSpec& spec, std::string_view key, std::string_view text, const BuildContext& at) {
  const auto whole = [&](auto& value) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    return ec == std::errc() && end == text.data() + text.size();
  };
  switch (spec.type) {
    case sim::ParamType::integer: {
      std::int64_t i = 0;
      if (!whole(i)) at.fail(key, fmt::format("found {}, expected an integer (digits only)", quote(text)));
      return i;
    }
    case sim::ParamType::number: {
      double d = 0;
      if (!whole(d) || !std::isfinite(d)) at.fail(key, fmt::format("found {}, expected a finite number", quote(text)));
      return d;
    }
    case sim::ParamType::boolean:
      if (text != "true" && text != "false") at.fail(key, fmt::format("found {}, expected true or false", quote(text)));
      return text == "true";
    case sim::ParamType::string:
      if (text.empty()) at.fail(key, "found an empty value, expected one (or leave the key out for its default)");
      return std::string(text);
  }
  return std::string(text);
}

// Parses and checks a spec: its kind, every key known and given once, every value of its type
// and range. Nothing is built.
std::pair<std::unique_ptr<Builder>, Shape> checked_spec(std::string_view spec, const BuildContext& at) {
  const auto colon = spec.find(':');
  const std::string_view kind = spec.substr(0, colon);
  const auto& entry = builders().get(kind, at.location(""));
  sim::GivenParams given;
  if (colon != std::string_view::npos) {
    std::string_view rest = spec.substr(colon + 1);
    std::vector<std::string> keys;
    for (const sim::ParamSpec& p : entry.params) keys.push_back(p.name);
    while (true) {
      const auto comma = rest.find(',');
      const std::string_view item = rest.substr(0, comma);
      const auto eq = item.find('=');
      if (eq == std::string_view::npos || eq == 0) {
        at.fail("", fmt::format("found {}, expected key=value (e.g. \"dgx-h100:nodes=4,nic=400Gb/s\")", quote(item)));
      }
      const std::string_view key = item.substr(0, eq);
      const auto declared = std::find_if(entry.params.begin(), entry.params.end(), [&](const sim::ParamSpec& p) { return p.name == key; });
      if (declared == entry.params.end()) {
        std::string listed;
        for (const auto& k : keys) listed += (listed.empty() ? "" : ", ") + k;
        at.fail("", fmt::format("unknown parameter {} of topology {}{}; valid: {}", quote(key), quote(kind), sim::did_you_mean(key, keys), listed));
      }
      if (given.contains(key)) at.fail(key, "given twice; expected each parameter once");
      given.emplace(std::string(key), param_value(*declared, key, item.substr(eq + 1), at));
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
  }
  std::unique_ptr<Builder> builder = builders().create(kind, given, at.location(""));
  Shape shape = builder->check(at);
  return {std::move(builder), shape};
}

BuildContext context_of(std::string_view spec, std::string_view source, std::string_view where) {
  return BuildContext{source, where, fmt::format("topology {}", quote(spec))};
}

}  // namespace

TopologySpecInfo check_topology_spec(std::string_view spec, std::string_view source, std::string_view where) {
  const BuildContext at = context_of(spec, source, where);
  const auto [builder, shape] = checked_spec(spec, at);
  return {shape.units * shape.per_unit, shape.units, shape.per_unit, std::string(shape.gpu->name)};
}

Topology build_topology(std::string_view spec, std::string_view source, std::string_view where) {
  const BuildContext at = context_of(spec, source, where);
  const auto [builder, shape] = checked_spec(spec, at);
  Topology t = builder->build(shape);
  const std::vector<std::string> problems = t.problems();
  ORRERY_CHECK(problems.empty(), "builder {} made an unsound topology: {}", spec.substr(0, spec.find(':')), problems.front());
  return t;
}

std::string topology_help() {
  // Each kind's own parameters, then the fabric parameters they all share, once.
  std::vector<std::string> shared;
  for (const sim::ParamSpec& p : fabric_specs()) shared.push_back(p.name);
  const auto is_shared = [&](const std::string& name) { return std::find(shared.begin(), shared.end(), name) != shared.end(); };
  std::string out;
  for (const auto& [name, entry] : builders().entries()) {
    out += fmt::format("  {:<10} {}\n", name, entry.description);
    for (const sim::ParamSpec& p : entry.params) {
      if (!is_shared(p.name)) out += fmt::format("      {}={} ({})\n", p.name, sim::to_string(p.default_value), p.description);
    }
  }
  out += "  fabric parameters of every kind (used with more than one server or domain):\n";
  for (const sim::ParamSpec& p : fabric_specs()) {
    out += fmt::format("      {}={} ({})\n", p.name, sim::to_string(p.default_value), p.description);
  }
  return out;
}

}  // namespace orrery::models
