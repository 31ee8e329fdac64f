#include "models/network/collectives.hpp"

#include "models/network/symmetry.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

namespace orrery::models {

using sim::InputError;
using sim::quote;

namespace {
constexpr std::array<std::pair<CollectiveOp, std::string_view>, 7> kOps = {{
    {CollectiveOp::all_reduce, "all-reduce"},   {CollectiveOp::reduce_scatter, "reduce-scatter"},
    {CollectiveOp::all_gather, "all-gather"},   {CollectiveOp::broadcast, "broadcast"},
    {CollectiveOp::reduce, "reduce"},           {CollectiveOp::all_to_all, "all-to-all"},
    {CollectiveOp::send_recv, "send-recv"},
}};
constexpr std::array<std::pair<CollectiveAlgo, std::string_view>, 7> kAlgos = {{
    {CollectiveAlgo::ring, "ring"}, {CollectiveAlgo::tree, "tree"}, {CollectiveAlgo::hierarchical, "hierarchical"},
    {CollectiveAlgo::nvls, "nvls"}, {CollectiveAlgo::nvls_tree, "nvls-tree"}, {CollectiveAlgo::pat, "pat"},
    {CollectiveAlgo::direct, "direct"},
}};

template <class E, std::size_t N>
E parse_name(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view text, std::string_view what,
             std::string_view source, std::string_view where) {
  std::vector<std::string> names;
  std::string listed;
  for (const auto& [value, name] : table) {
    if (name == text) return value;
    names.emplace_back(name);
    listed += (listed.empty() ? "" : ", ") + std::string(name);
  }
  throw InputError(std::string(source), std::string(where),
                   fmt::format("unknown {} {}{}; valid: {}", what, quote(text), sim::did_you_mean(text, names), listed));
}

std::uint64_t mix(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  std::uint64_t z = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull ^ c * 0x94d049bb133111ebull;
  z = (z ^ (z >> 31)) * 0xd6e8feb86659fd93ull;
  return z ^ (z >> 32);
}
}  // namespace

std::string_view to_string(CollectiveOp op) {
  for (const auto& [value, name] : kOps) {
    if (value == op) return name;
  }
  return "?";
}
std::string_view to_string(CollectiveAlgo algo) {
  for (const auto& [value, name] : kAlgos) {
    if (value == algo) return name;
  }
  return "?";
}
CollectiveOp parse_collective_op(std::string_view text, std::string_view source, std::string_view where) {
  return parse_name(kOps, text, "collective", source, where);
}
CollectiveAlgo parse_collective_algo(std::string_view text, std::string_view source, std::string_view where) {
  return parse_name(kAlgos, text, "algorithm", source, where);
}

double bus_factor(CollectiveOp op, int n) {
  const double nn = n;
  switch (op) {
    case CollectiveOp::all_reduce: return 2.0 * (nn - 1) / nn;
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_gather:
    case CollectiveOp::all_to_all: return (nn - 1) / nn;
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce:
    case CollectiveOp::send_recv: return 1.0;
  }
  return 1.0;
}

// ---------------------------------------------------------------------------------------
// Plans

namespace {

constexpr std::uint32_t kNone = 0xffffffffu;

struct Layout {
  std::vector<NodeIndex> ranks;             // GPU of each rank
  std::vector<std::vector<int>> by_server;  // ranks of each server, in rank order (uniform size or empty)
  int per_server = 0;
};

Layout layout_of(const Topology& t, std::vector<NodeIndex> gpus) {
  Layout l;
  const int n = static_cast<int>(gpus.size());
  l.ranks = std::move(gpus);
  std::map<std::int32_t, std::vector<int>> servers;
  for (int r = 0; r < n; ++r) servers[t.node(l.ranks[static_cast<std::size_t>(r)]).server].push_back(r);
  for (auto& [server, ranks] : servers) l.by_server.push_back(std::move(ranks));
  l.per_server = static_cast<int>(l.by_server.front().size());
  for (const auto& s : l.by_server) {
    if (static_cast<int>(s.size()) != l.per_server) {
      l.by_server.clear();  // uneven servers: no server-aware layout
      l.per_server = 0;
      break;
    }
  }
  return l;
}

// The first n GPUs.
Layout layout_of(const Topology& t, int n) { return layout_of(t, std::vector<NodeIndex>(t.gpus().begin(), t.gpus().begin() + n)); }

// The GPUs of group g of a spec's concurrent groups (CollectiveSpec::groups).
std::vector<NodeIndex> group_gpus(const Topology& t, const CollectiveSpec& s, int n, int g) {
  const std::int64_t base = static_cast<std::int64_t>(g / s.stride) * s.stride * n + g % s.stride;
  std::vector<NodeIndex> gpus;
  gpus.reserve(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) gpus.push_back(t.gpus()[static_cast<std::size_t>(base + static_cast<std::int64_t>(r) * s.stride)]);
  return gpus;
}

// What a plan may hold: at most `transfers` (0: no limit), with the sizes that made it.
struct PlanLimit {
  std::size_t transfers = 0;
  int ranks = 0, channels = 0, chunks = 0;
};

class PlanBuilder {
 public:
  PlanBuilder(CollectivePlan& plan, PlanLimit limit) : plan_(plan), limit_(limit) {}
  // A transfer after `deps` (kNone entries are ignored); returns its id.
  std::uint32_t add(NodeIndex src, NodeIndex dst, double bytes, std::uint64_t hash, std::initializer_list<std::uint32_t> deps,
                    bool nvls = false) {
    return add(src, dst, bytes, hash, deps.begin(), deps.end(), nvls);
  }
  std::uint32_t add(NodeIndex src, NodeIndex dst, double bytes, std::uint64_t hash, const std::vector<std::uint32_t>& deps,
                    bool nvls = false) {
    return add(src, dst, bytes, hash, deps.data(), deps.data() + deps.size(), nvls);
  }
  // Ring plans: the step the transfers added from now on belong to (Transfer::ring_step).
  void set_ring_step(int step) { ring_step_ = static_cast<std::uint32_t>(step); }
  // Marks transfers whose ends would release steps the plan leaves out (Transfer::horizon).
  void mark_horizon(std::span<const std::uint32_t> ids) {
    for (const std::uint32_t i : ids) {
      if (i != kNone) plan_.transfers[i].horizon = true;
    }
  }

 private:
  std::uint32_t add(NodeIndex src, NodeIndex dst, double bytes, std::uint64_t hash, const std::uint32_t* first,
                    const std::uint32_t* last, bool nvls) {
    if (limit_.transfers > 0 && plan_.transfers.size() >= limit_.transfers) {
      throw InputError("<command line>", "--chunks",
                       fmt::format("{} ranks x {} channels x {} chunks make a plan of more than {} transfers; expected fewer "
                                   "--ranks, --channels or --chunks",
                                   limit_.ranks, limit_.channels, limit_.chunks, limit_.transfers));
    }
    const auto begin = static_cast<std::uint32_t>(plan_.deps.size());
    for (; first != last; ++first) {
      if (*first != kNone) plan_.deps.push_back(*first);
    }
    plan_.transfers.push_back(Transfer{src, dst, bytes, hash, nvls, false, begin, static_cast<std::uint32_t>(plan_.deps.size()) - begin, 0, ring_step_});
    return static_cast<std::uint32_t>(plan_.transfers.size() - 1);
  }
  CollectivePlan& plan_;
  PlanLimit limit_;
  std::uint32_t ring_step_ = 0;
};

// The ring order of channel c. Across servers, a ring enters server i at local GPU (c + i)
// and leaves it from local GPU (c + i + 1), which sends to the same local GPU of server i+1:
// every server-to-server hop stays on one rail, and channel c leaves server i through NIC
// (c + i + 1), so the channels spread over all NICs, as NCCL's rail-aware rings do.
std::vector<int> ring_order(const Layout& l, int channel) {
  const int n = static_cast<int>(l.ranks.size());
  std::vector<int> order;
  if (l.by_server.size() <= 1 || l.per_server == 0) {
    for (int i = 0; i < n; ++i) order.push_back((i + channel) % n);
    return order;
  }
  const int g = l.per_server;
  for (std::size_t i = 0; i < l.by_server.size(); ++i) {
    const int entry = (channel + static_cast<int>(i)) % g;
    const int exit = (entry + 1) % g;
    order.push_back(l.by_server[i][static_cast<std::size_t>(entry)]);
    for (int k = 2; k < g; ++k) order.push_back(l.by_server[i][static_cast<std::size_t>((entry + k) % g)]);
    if (g > 1) order.push_back(l.by_server[i][static_cast<std::size_t>(exit)]);
  }
  return order;
}

// `steps` ring steps over `order` (ranks), each moving `piece` bytes per chunk; a sender's
// transfers are sequential (one connection), and a step's piece moves on once received.
// Returns the ids of the last step's transfers. `start_after[p]` gates position p's first send.
// `stamp`: each transfer carries its step (Transfer::ring_step).
std::vector<std::uint32_t> add_ring(PlanBuilder& b, const Layout& l, const std::vector<int>& order, int steps, int chunks,
                                    double piece, std::uint64_t channel, const std::vector<std::uint32_t>& start_after = {},
                                    bool stamp = false) {
  const auto n = order.size();
  std::vector<std::uint32_t> prev(n * static_cast<std::size_t>(chunks), kNone);  // previous step, by position, chunk
  std::vector<std::uint32_t> cur(prev.size(), kNone);
  for (int k = 0; k < steps; ++k) {
    if (stamp) b.set_ring_step(k);
    for (std::size_t p = 0; p < n; ++p) {
      const NodeIndex src = l.ranks[static_cast<std::size_t>(order[p])];
      const NodeIndex dst = l.ranks[static_cast<std::size_t>(order[(p + 1) % n])];
      const std::uint64_t hash = mix(channel, src, dst);
      for (int q = 0; q < chunks; ++q) {
        const std::size_t at = p * static_cast<std::size_t>(chunks) + static_cast<std::size_t>(q);
        const std::uint32_t received = k == 0 ? kNone : prev[((p + n - 1) % n) * static_cast<std::size_t>(chunks) + static_cast<std::size_t>(q)];
        const std::uint32_t own_before = q > 0 ? cur[at - 1] : (k > 0 ? prev[p * static_cast<std::size_t>(chunks) + static_cast<std::size_t>(chunks - 1)] : kNone);
        const std::uint32_t gate = (k == 0 && q == 0 && !start_after.empty()) ? start_after[p] : kNone;
        cur[at] = b.add(src, dst, piece, hash, {received, own_before, gate});
      }
    }
    std::swap(prev, cur);
  }
  if (stamp) b.set_ring_step(0);
  return prev;
}

int ring_steps(CollectiveOp op, int n) { return op == CollectiveOp::all_reduce ? 2 * (n - 1) : n - 1; }

// What each transfer of a ring moves (all-reduce, reduce-scatter, all-gather).
double ring_piece(double size, int n, int channels, int chunks) { return size / (static_cast<double>(n) * channels * chunks); }

// An in-order binary tree over positions 1..n: position x with t trailing zeros has children
// x -/+ 2^(t-1) and its parent at level t+1; the root is the largest power of two <= n.
// Leaves are the odd positions, so a mirror (even n) or a shift by one (odd n) makes every
// leaf of one tree an inner node of the other: the double binary tree (Sanders, Speck and
// Traeff, "Two-tree algorithms for full bandwidth broadcast, reduction and scan", 2009).
struct Tree {
  std::vector<int> parent;                 // by rank; -1 for the root
  std::vector<std::vector<int>> children;  // by rank
  int root = 0;
  int depth = 0;
};

Tree binary_tree(int n, bool second) {
  const auto rank_of = [&](int x) {  // position 1..n -> rank
    if (!second) return x - 1;
    return n % 2 == 0 ? n - x : x % n;
  };
  Tree t;
  t.parent.assign(static_cast<std::size_t>(n), -1);
  t.children.assign(static_cast<std::size_t>(n), {});
  const int root_pos = static_cast<int>(std::bit_floor(static_cast<unsigned>(n)));
  t.root = rank_of(root_pos);
  for (int x = 1; x <= n; ++x) {
    if (x == root_pos) continue;
    const int level = std::countr_zero(static_cast<unsigned>(x));
    int p = ((x >> (level + 1)) % 2 == 0) ? x + (1 << level) : x - (1 << level);
    int up = level + 1;
    // Out of range: climb to the nearest ancestor inside 1..n.
    while (p > n) {
      p = ((p >> (up + 1)) % 2 == 0) ? p + (1 << up) : p - (1 << up);
      ++up;
    }
    t.parent[static_cast<std::size_t>(rank_of(x))] = rank_of(p);
    t.children[static_cast<std::size_t>(rank_of(p))].push_back(rank_of(x));
  }
  for (int r = 0; r < n; ++r) {
    int d = 0;
    for (int x = r; t.parent[static_cast<std::size_t>(x)] >= 0; x = t.parent[static_cast<std::size_t>(x)]) ++d;
    t.depth = std::max(t.depth, d);
  }
  return t;
}

// NCCL's trees across servers (src/graph/trees.cc, connectTrees): inside each server a chain of
// its GPUs from the one whose NIC channel c uses; across servers a (double) binary tree of the
// chains' heads. So each NIC carries one channel's tree traffic, not every channel's.
Tree server_tree(const Layout& l, int c, bool second) {
  const int m = static_cast<int>(l.by_server.size()), g = l.per_server;
  const auto n = l.ranks.size();
  Tree t;
  t.parent.assign(n, -1);
  t.children.assign(n, {});
  const Tree across = binary_tree(m, second);
  const auto head = [&](int i) { return l.by_server[static_cast<std::size_t>(i)][static_cast<std::size_t>(c % g)]; };
  for (int i = 0; i < m; ++i) {
    const auto& ranks = l.by_server[static_cast<std::size_t>(i)];
    int prev = head(i);
    for (int k = 1; k < g; ++k) {
      const int r = ranks[static_cast<std::size_t>((c + k) % g)];
      t.parent[static_cast<std::size_t>(r)] = prev;
      t.children[static_cast<std::size_t>(prev)].push_back(r);
      prev = r;
    }
    const int up = across.parent[static_cast<std::size_t>(i)];
    if (up >= 0) {
      t.parent[static_cast<std::size_t>(head(i))] = head(up);
      t.children[static_cast<std::size_t>(head(up))].push_back(head(i));
    }
  }
  t.root = head(across.root);
  for (std::size_t r = 0; r < n; ++r) {
    int d = 0;
    for (auto x = r; t.parent[x] >= 0; x = static_cast<std::size_t>(t.parent[x])) ++d;
    t.depth = std::max(t.depth, d);
  }
  return t;
}

int default_channels(const Topology& t, const Layout& l, const CollectiveSpec& s) {
  if (s.channels > 0) return s.channels;
  (void)t;
  return std::max(1, l.by_server.size() > 1 ? l.per_server : 1);
}

int default_chunks(const CollectiveSpec& s) {
  if (s.chunks > 1) return s.chunks;
  switch (s.algo) {
    case CollectiveAlgo::tree:
    case CollectiveAlgo::nvls: return 32;  // both pipeline through intermediate hops
    case CollectiveAlgo::nvls_tree: return 16;  // each chunk also rings across the domains
    default: return s.op == CollectiveOp::broadcast || s.op == CollectiveOp::reduce ? 8 : 1;
  }
}

[[noreturn]] void unsupported(const CollectiveSpec& s, std::string_view why) {
  throw InputError("<command line>", "--algo",
                   fmt::format("{} {} {}", to_string(s.algo), to_string(s.op), why));
}

NodeIndex nvls_switch(const Topology& t, const Layout& l, const CollectiveSpec& s) {
  std::int64_t sw = -1;
  for (const NodeIndex g : l.ranks) {
    std::int64_t found = -1;
    for (const LinkIndex e : t.out_links(g)) {
      if (t.node(t.link(e).to).kind == NodeKind::nvswitch) found = t.link(e).to;
    }
    if (found < 0 || !t.node(static_cast<NodeIndex>(found)).reduces_in_network()) {
      unsupported(s, fmt::format("needs every rank on an NVSwitch with NVLS; GPU {} has none", quote(t.node(g).name)));
    }
    if (sw >= 0 && found != sw) unsupported(s, "needs all ranks on one NVLink domain (one NVSwitch)");
    sw = found;
  }
  return static_cast<NodeIndex>(sw);
}

// The ranks a spec asks for: its own, or every GPU (0).
int ranks_of(const Topology& t, const CollectiveSpec& s) { return s.ranks > 0 ? s.ranks : static_cast<int>(t.gpus().size()); }

// The number of ranks the collective runs on, once the request is valid for the topology.
int checked_ranks(const Topology& t, const CollectiveSpec& s) {
  const int n = ranks_of(t, s);
  if (n < 2 || n > static_cast<int>(t.gpus().size())) {
    throw InputError("<command line>", "--ranks",
                     fmt::format("found {} ranks, expected 2 to {} (the GPUs of the topology)", n, t.gpus().size()));
  }
  if (s.stride < 1 || s.groups < 1) {
    throw InputError("<command line>", s.stride < 1 ? "--stride" : "--groups",
                     fmt::format("found {}, expected at least 1", s.stride < 1 ? s.stride : s.groups));
  }
  if (s.groups > 1 && s.groups % s.stride != 0) {
    throw InputError("<command line>", "--groups",
                     fmt::format("found {} groups {} apart, expected a multiple of the stride (whole blocks of stride x ranks GPUs)", s.groups, s.stride));
  }
  const std::int64_t span = s.groups > 1 ? static_cast<std::int64_t>(s.groups) * n : static_cast<std::int64_t>(n - 1) * s.stride + 1;
  if (span > static_cast<std::int64_t>(t.gpus().size())) {
    throw InputError("<command line>", s.groups > 1 ? "--groups" : "--stride",
                     fmt::format("{} group(s) of {} ranks {} apart span {} GPUs, expected at most {} (the GPUs of the topology)", s.groups, n,
                                 s.stride, span, t.gpus().size()));
  }
  if (!(s.size.value() > 0) && s.pair_bytes.empty()) throw InputError("<command line>", "--size", "expected a positive size");
  if (s.root < 0 || s.root >= n) throw InputError("<command line>", "--root", fmt::format("root {} is not a rank of 0..{}", s.root, n - 1));
  if (s.peer <= 0 || s.peer >= n) throw InputError("<command line>", "--peer", fmt::format("peer {} is not a rank of 1..{}", s.peer, n - 1));
  return n;
}

// What every algorithm's plan is made of: the request, its ranks' layout and its sizes.
struct PlanArgs {
  const CollectiveSpec& s;
  const Layout& l;
  int n;
  double size;
  int chunks;
  int channels;
};

// Broadcast and reduce on rings: a pipelined chain from the root (broadcast) or to it (reduce).
void plan_chain(PlanBuilder& b, const PlanArgs& a) {
  const auto& [s, l, n, size, chunks, channels] = a;
  for (int c = 0; c < channels; ++c) {
    std::vector<int> order = ring_order(l, c);
    // Broadcast flows from the root down the chain; reduce flows up it, ending at the root.
    std::rotate(order.begin(), std::find(order.begin(), order.end(), s.root), order.end());
    if (s.op == CollectiveOp::reduce) std::reverse(order.begin(), order.end());
    const double piece = size / (channels * chunks);
    std::vector<std::uint32_t> prev_hop(static_cast<std::size_t>(chunks), kNone);
    for (std::size_t p = 0; p + 1 < order.size(); ++p) {
      const NodeIndex src = l.ranks[static_cast<std::size_t>(order[p])];
      const NodeIndex dst = l.ranks[static_cast<std::size_t>(order[p + 1])];
      std::uint32_t own = kNone;
      for (int q = 0; q < chunks; ++q) {
        own = b.add(src, dst, piece, mix(static_cast<std::uint64_t>(c), src, dst), {prev_hop[static_cast<std::size_t>(q)], own});
        prev_hop[static_cast<std::size_t>(q)] = own;
      }
    }
  }
}

// Rings: all-reduce, reduce-scatter and all-gather around each channel's ring; broadcast and
// reduce along a chain.
void plan_ring(PlanBuilder& b, const PlanArgs& a) {
  const CollectiveSpec& s = a.s;
  if (s.op == CollectiveOp::all_to_all || s.op == CollectiveOp::send_recv) unsupported(s, "is not a ring collective; use --algo direct");
  if (s.op == CollectiveOp::broadcast || s.op == CollectiveOp::reduce) {
    plan_chain(b, a);
    return;
  }
  const int n = a.n, channels = a.channels, chunks = a.chunks;
  const int steps = s.ring_steps > 0 ? std::min(s.ring_steps, ring_steps(s.op, n)) : ring_steps(s.op, n);
  const double piece = ring_piece(a.size, n, channels, chunks);
  for (int c = 0; c < channels; ++c) {
    const std::vector<std::uint32_t> last = add_ring(b, a.l, ring_order(a.l, c), steps, chunks, piece, static_cast<std::uint64_t>(c), {}, true);
    if (steps < ring_steps(s.op, n)) b.mark_horizon(last);
  }
}

// Reduce up one tree of channel hash `ch`: rank r sends chunk q up once all its children sent q
// to it. `order` lists the ranks from the leaves up; returns each rank's transfers up, by chunk.
std::vector<std::vector<std::uint32_t>> tree_reduce(PlanBuilder& b, const PlanArgs& a, const Tree& tree, const std::vector<int>& order,
                                                    std::uint64_t ch, double piece) {
  const Layout& l = a.l;
  const int n = a.n, chunks = a.chunks;
  std::vector<std::vector<std::uint32_t>> up(static_cast<std::size_t>(n), std::vector<std::uint32_t>(static_cast<std::size_t>(chunks), kNone));
  for (const int r : order) {
    const int parent = tree.parent[static_cast<std::size_t>(r)];
    if (parent < 0) continue;
    const NodeIndex src = l.ranks[static_cast<std::size_t>(r)], dst = l.ranks[static_cast<std::size_t>(parent)];
    for (int q = 0; q < chunks; ++q) {
      std::vector<std::uint32_t> deps;
      for (const int child : tree.children[static_cast<std::size_t>(r)]) deps.push_back(up[static_cast<std::size_t>(child)][static_cast<std::size_t>(q)]);
      if (q > 0) deps.push_back(up[static_cast<std::size_t>(r)][static_cast<std::size_t>(q - 1)]);
      up[static_cast<std::size_t>(r)][static_cast<std::size_t>(q)] = b.add(src, dst, piece, mix(ch, src, dst), deps);
    }
  }
  return up;
}

// Broadcast down the same tree: from the root once a chunk is fully reduced there (`up`), then down.
void tree_broadcast(PlanBuilder& b, const PlanArgs& a, const Tree& tree, const std::vector<int>& order,
                    const std::vector<std::vector<std::uint32_t>>& up, std::uint64_t ch, double piece) {
  const Layout& l = a.l;
  const int n = a.n, chunks = a.chunks;
  std::vector<std::vector<std::uint32_t>> down(static_cast<std::size_t>(n), std::vector<std::uint32_t>(static_cast<std::size_t>(chunks), kNone));
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int r = *it;
    for (const int child : tree.children[static_cast<std::size_t>(r)]) {
      const NodeIndex src = l.ranks[static_cast<std::size_t>(r)], dst = l.ranks[static_cast<std::size_t>(child)];
      std::uint32_t own = kNone;
      for (int q = 0; q < chunks; ++q) {
        std::vector<std::uint32_t> deps{own};
        if (tree.parent[static_cast<std::size_t>(r)] >= 0) {
          deps.push_back(down[static_cast<std::size_t>(r)][static_cast<std::size_t>(q)]);
        } else {
          for (const int c2 : tree.children[static_cast<std::size_t>(r)]) deps.push_back(up[static_cast<std::size_t>(c2)][static_cast<std::size_t>(q)]);
        }
        own = b.add(src, dst, piece, mix(ch + 1000, src, dst), deps);
        down[static_cast<std::size_t>(child)][static_cast<std::size_t>(q)] = own;
      }
    }
  }
}

// Double binary trees (all-reduce only).
void plan_tree(PlanBuilder& b, const PlanArgs& a) {
  const auto& [s, l, n, size, chunks, channels] = a;
  if (s.op != CollectiveOp::all_reduce) unsupported(s, "is not supported; trees serve all-reduce (as in NCCL)");
  // Each tree of each channel carries half of the channel's data, in chunks: up the tree
  // (reduce) once a chunk has come from every child, then down it (broadcast).
  const double piece = a.size / (2.0 * channels * chunks);
  const bool servers = l.by_server.size() > 1 && l.per_server > 1;
  for (int c = 0; c < channels; ++c) {
    for (const bool second : {false, true}) {
      const Tree tree = servers ? server_tree(l, c, second) : binary_tree(n, second);
      const std::uint64_t ch = static_cast<std::uint64_t>(c) * 2 + (second ? 1 : 0);
      std::vector<int> order;  // ranks from the leaves up (deepest first)
      std::vector<int> depth(static_cast<std::size_t>(n), 0);
      for (int r = 0; r < n; ++r) {
        for (int x = r; tree.parent[static_cast<std::size_t>(x)] >= 0; x = tree.parent[static_cast<std::size_t>(x)]) ++depth[static_cast<std::size_t>(r)];
        order.push_back(r);
      }
      std::stable_sort(order.begin(), order.end(), [&](int x, int z) { return depth[static_cast<std::size_t>(x)] > depth[static_cast<std::size_t>(z)]; });
      const auto up = tree_reduce(b, a, tree, order, ch, piece);
      tree_broadcast(b, a, tree, order, up, ch, piece);
    }
  }
}

// The ranks of server i as a layout of their own, and their ring order for channel c.
std::pair<Layout, std::vector<int>> server_ring(const Layout& l, int i, int c) {
  const int g = l.per_server;
  Layout inner;
  for (const int r : l.by_server[static_cast<std::size_t>(i)]) inner.ranks.push_back(l.ranks[static_cast<std::size_t>(r)]);
  std::vector<int> order;
  for (int k = 0; k < g; ++k) order.push_back((k + c) % g);
  return {inner, order};
}

// Step 2 of the hierarchical all-reduce on channel c: an all-reduce of each 1/g slice across
// servers, among GPUs of one local index (one rail), once the server's reduce-scatter
// (`phase1_last`) is done. Returns each server's last transfers.
std::vector<std::vector<std::uint32_t>> rail_all_reduce(PlanBuilder& b, const PlanArgs& a, int c,
                                                        const std::vector<std::vector<std::uint32_t>>& phase1_last) {
  const Layout& l = a.l;
  const int g = l.per_server, chunks = a.chunks, channels = a.channels;
  const auto m = static_cast<int>(l.by_server.size());
  const double size = a.size;
  std::vector<std::vector<std::uint32_t>> phase2_last(static_cast<std::size_t>(m));
  for (int j = 0; j < g; ++j) {
    Layout rail;
    std::vector<int> order;
    std::vector<std::uint32_t> gates;
    for (int i = 0; i < m; ++i) {
      rail.ranks.push_back(l.ranks[static_cast<std::size_t>(l.by_server[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)])]);
      order.push_back(i);
      // Wait for the server's reduce-scatter: all of its last-step transfers.
      const auto& last = phase1_last[static_cast<std::size_t>(i)];
      gates.push_back(last.empty() ? kNone : b.add(rail.ranks.back(), rail.ranks.back(), 0, 0, last));
    }
    const auto last = add_ring(b, rail, order, 2 * (m - 1), chunks, size / (static_cast<double>(g) * m * channels * chunks),
                               static_cast<std::uint64_t>(c) * 131 + static_cast<std::uint64_t>(j), gates);
    for (int i = 0; i < m; ++i) {
      for (int q = 0; q < chunks; ++q) phase2_last[static_cast<std::size_t>(i)].push_back(last[static_cast<std::size_t>(i * chunks + q)]);
    }
  }
  return phase2_last;
}

// All-reduce in three steps per channel: inside each server, across servers on one rail, and
// inside each server again.
void plan_hierarchical(PlanBuilder& b, const PlanArgs& a) {
  const auto& [s, l, n, size, chunks, channels] = a;
  if (s.op != CollectiveOp::all_reduce) unsupported(s, "is not supported; the hierarchical algorithm serves all-reduce");
  if (l.by_server.size() < 2) unsupported(s, "needs ranks on at least two servers with equal GPU counts");
  const int g = l.per_server;
  const auto m = static_cast<int>(l.by_server.size());
  for (int c = 0; c < channels; ++c) {
    // 1. Reduce-scatter inside each server (NVLink ring).
    std::vector<std::vector<std::uint32_t>> phase1_last(static_cast<std::size_t>(m));
    for (int i = 0; i < m; ++i) {
      const auto [inner, order] = server_ring(l, i, c);
      phase1_last[static_cast<std::size_t>(i)] = g > 1 ? add_ring(b, inner, order, g - 1, chunks, size / (static_cast<double>(g) * channels * chunks), static_cast<std::uint64_t>(c))
                                                       : std::vector<std::uint32_t>();
    }
    // 2. All-reduce of each 1/g slice across servers, among GPUs of one local index (one rail).
    const std::vector<std::vector<std::uint32_t>> phase2_last = rail_all_reduce(b, a, c, phase1_last);
    // 3. All-gather inside each server once its slices are reduced everywhere.
    for (int i = 0; i < m; ++i) {
      if (g < 2) continue;
      const auto [inner, order] = server_ring(l, i, c);
      const std::uint32_t barrier = b.add(inner.ranks[0], inner.ranks[0], 0, 0, phase2_last[static_cast<std::size_t>(i)]);
      add_ring(b, inner, order, g - 1, chunks, size / (static_cast<double>(g) * channels * chunks), static_cast<std::uint64_t>(c),
               std::vector<std::uint32_t>(static_cast<std::size_t>(g), barrier));
    }
  }
}

// NVLink SHARP: the switch reduces (multimem loads) and multicasts (multimem stores): all-reduce,
// and since NCCL 2.19 all-gather and reduce-scatter inside one NVLink domain.
void plan_nvls(PlanBuilder& b, const PlanArgs& a, const Topology& t) {
  const CollectiveSpec& s = a.s;
  const Layout& l = a.l;
  const int n = a.n, chunks = a.chunks;
  if (s.op != CollectiveOp::all_reduce && s.op != CollectiveOp::all_gather && s.op != CollectiveOp::reduce_scatter) {
    unsupported(s, "is not supported; NVLS serves all-reduce, all-gather and reduce-scatter here");
  }
  const NodeIndex sw = nvls_switch(t, l, s);
  // All-reduce: each GPU pushes all its data into the switch (which reduces each slice) and
  // pulls its reduced slice, then pushes that slice once for the switch to multicast: S(n+1)/n
  // bytes up and down per GPU. All-gather (S the total): each GPU stores its slice S/n once and
  // the switch multicasts every slice to every GPU (S down). Reduce-scatter: the switch reads
  // every GPU's copy of each slice (S up) and each GPU loads its reduced slice (S/n down).
  // Pipelined in chunks; a chunk comes down once every GPU sent it up.
  const double nn = n;
  const double up_bytes = s.op == CollectiveOp::all_reduce ? a.size * (nn + 1) / nn : s.op == CollectiveOp::all_gather ? a.size / nn : a.size;
  const double down_bytes = s.op == CollectiveOp::all_reduce ? up_bytes : s.op == CollectiveOp::all_gather ? a.size : a.size / nn;
  const double piece = up_bytes / chunks, down_piece = down_bytes / chunks;
  std::vector<std::uint32_t> up_prev(static_cast<std::size_t>(n), kNone);
  for (int q = 0; q < chunks; ++q) {
    std::vector<std::uint32_t> ups;
    for (int r = 0; r < n; ++r) {
      const NodeIndex g = l.ranks[static_cast<std::size_t>(r)];
      up_prev[static_cast<std::size_t>(r)] = b.add(g, sw, piece, mix(7, g, sw), {up_prev[static_cast<std::size_t>(r)]}, true);
      ups.push_back(up_prev[static_cast<std::size_t>(r)]);
    }
    for (int r = 0; r < n; ++r) {
      const NodeIndex g = l.ranks[static_cast<std::size_t>(r)];
      b.add(sw, g, down_piece, mix(8, sw, g), ups, true);
    }
  }
}

// The NVLink domains of the ranks for NVLS-tree: the ranks on each NVLS switch, in rank order,
// the same number on each.
std::vector<std::pair<NodeIndex, std::vector<int>>> nvls_domains(const Topology& t, const Layout& l, const CollectiveSpec& s) {
  std::vector<std::pair<NodeIndex, std::vector<int>>> domains;
  for (int r = 0; r < static_cast<int>(l.ranks.size()); ++r) {
    const NodeIndex g = l.ranks[static_cast<std::size_t>(r)];
    std::int64_t sw = -1;
    for (const LinkIndex e : t.out_links(g)) {
      if (t.node(t.link(e).to).kind == NodeKind::nvswitch) sw = t.link(e).to;
    }
    if (sw < 0 || !t.node(static_cast<NodeIndex>(sw)).reduces_in_network()) {
      unsupported(s, fmt::format("needs every rank on an NVSwitch with NVLS; GPU {} has none", quote(t.node(g).name)));
    }
    auto it = std::find_if(domains.begin(), domains.end(), [&](const auto& d) { return d.first == static_cast<NodeIndex>(sw); });
    if (it == domains.end()) it = domains.insert(domains.end(), {static_cast<NodeIndex>(sw), {}});
    it->second.push_back(r);
  }
  if (domains.size() < 2) unsupported(s, "needs ranks on at least two NVLink domains (use nvls inside one)");
  for (const auto& d : domains) {
    if (d.second.size() != domains.front().second.size()) unsupported(s, "needs the same number of ranks on every NVLink domain");
  }
  return domains;
}

// NVLS-tree (NCCL's NVLS_TREE all-reduce across NVLink domains), chunk by chunk: in each
// domain every GPU pushes the chunk into the switch, which reduces it, and each GPU pulls its
// 1/g slice; the GPUs of one local index all-reduce their slice across the domains (a ring on
// their rail); each pushes the result back up once and the switch multicasts it to the
// domain. The chunks pipeline the three phases.
void plan_nvls_tree(PlanBuilder& b, const PlanArgs& a, const Topology& t) {
  const CollectiveSpec& s = a.s;
  const Layout& l = a.l;
  if (s.op != CollectiveOp::all_reduce) unsupported(s, "is not supported; NVLS-tree serves all-reduce");
  const auto domains = nvls_domains(t, l, s);
  const auto m = static_cast<int>(domains.size());
  const auto g = static_cast<int>(domains.front().second.size());
  const int chunks = a.chunks;
  const double chunk = a.size / chunks, slice = chunk / g;
  const auto gpu = [&](int i, int j) { return l.ranks[static_cast<std::size_t>(domains[static_cast<std::size_t>(i)].second[static_cast<std::size_t>(j)])]; };
  std::vector<std::uint32_t> last_up(static_cast<std::size_t>(m * g), kNone);
  for (int q = 0; q < chunks; ++q) {
    // 1. Reduce inside each domain: up the chunk, down each GPU's slice.
    std::vector<std::uint32_t> reduced(static_cast<std::size_t>(m * g), kNone);
    for (int i = 0; i < m; ++i) {
      const NodeIndex sw = domains[static_cast<std::size_t>(i)].first;
      std::vector<std::uint32_t> ups;
      for (int j = 0; j < g; ++j) {
        std::uint32_t& up = last_up[static_cast<std::size_t>(i * g + j)];
        up = b.add(gpu(i, j), sw, chunk, mix(7, gpu(i, j), sw), {up}, true);
        ups.push_back(up);
      }
      for (int j = 0; j < g; ++j) reduced[static_cast<std::size_t>(i * g + j)] = b.add(sw, gpu(i, j), slice, mix(8, sw, gpu(i, j)), ups, true);
    }
    // 2. Across domains, one ring per rail: 2(m - 1) steps of slice / m.
    std::vector<std::uint32_t> across(static_cast<std::size_t>(m * g), kNone);
    for (int j = 0; j < g; ++j) {
      Layout rail;
      std::vector<int> order;
      std::vector<std::uint32_t> gates;
      for (int i = 0; i < m; ++i) {
        rail.ranks.push_back(gpu(i, j));
        order.push_back(i);
        gates.push_back(reduced[static_cast<std::size_t>(i * g + j)]);
      }
      const auto last = add_ring(b, rail, order, 2 * (m - 1), 1, slice / m, static_cast<std::uint64_t>(q) * 131 + static_cast<std::uint64_t>(j), gates);
      for (int i = 0; i < m; ++i) across[static_cast<std::size_t>(i * g + j)] = last[static_cast<std::size_t>(i)];
    }
    // 3. Multicast inside each domain: each slice up once, down to every GPU.
    for (int i = 0; i < m; ++i) {
      const NodeIndex sw = domains[static_cast<std::size_t>(i)].first;
      for (int j = 0; j < g; ++j) {
        const std::uint32_t up = b.add(gpu(i, j), sw, slice, mix(9, gpu(i, j), sw), {across[static_cast<std::size_t>(i * g + j)]}, true);
        for (int k = 0; k < g; ++k) b.add(sw, gpu(i, k), slice, mix(10, sw, gpu(i, k)), {up}, true);
      }
    }
  }
}

// The steps of PAT (NCCL's Parallel Aggregated Trees for all-gather and reduce-scatter, one GPU
// per node), as this plan runs them: all-gather by recursive doubling, where at step k each
// rank sends the min(2^k, n - 2^k) blocks of S/n it holds to the rank 2^k after it, in
// ceil(log2 n) steps; reduce-scatter is the same steps in reverse, each rank sending the
// partial sums of the blocks its partner will own.
std::vector<int> pat_blocks(int n) {
  std::vector<int> blocks;
  for (int have = 1; have < n; have *= 2) blocks.push_back(std::min(have, n - have));
  return blocks;
}

void plan_pat(PlanBuilder& b, const PlanArgs& a) {
  const auto& [s, l, n, size, chunks, channels] = a;
  if (s.op != CollectiveOp::all_gather && s.op != CollectiveOp::reduce_scatter) unsupported(s, "is not supported; PAT serves all-gather and reduce-scatter");
  std::vector<int> blocks = pat_blocks(n);
  std::vector<int> strides;
  for (int k = 0, d = 1; k < static_cast<int>(blocks.size()); ++k, d *= 2) strides.push_back(d);
  if (s.op == CollectiveOp::reduce_scatter) {
    std::reverse(blocks.begin(), blocks.end());
    std::reverse(strides.begin(), strides.end());
  }
  const double block = size / n / channels;
  for (int c = 0; c < channels; ++c) {
    std::vector<std::uint32_t> received(static_cast<std::size_t>(n), kNone), sent(static_cast<std::size_t>(n), kNone);
    for (std::size_t k = 0; k < blocks.size(); ++k) {
      std::vector<std::uint32_t> now(static_cast<std::size_t>(n), kNone);
      for (int r = 0; r < n; ++r) {
        const int to = (r + strides[k]) % n;
        const NodeIndex src = l.ranks[static_cast<std::size_t>(r)], dst = l.ranks[static_cast<std::size_t>(to)];
        // A rank sends once what it received at the previous step is in (and its own send is done).
        now[static_cast<std::size_t>(to)] =
            b.add(src, dst, block * blocks[k], mix(static_cast<std::uint64_t>(c) * 977 + k, src, dst), {received[static_cast<std::size_t>(r)], sent[static_cast<std::size_t>(r)]});
        sent[static_cast<std::size_t>(r)] = now[static_cast<std::size_t>(to)];
      }
      received = now;
    }
  }
}

// Direct transfers: all-to-all(v) between every pair, send-recv from rank 0 to the peer.
// An all-to-all's sends among `ranks` (GPUs by rank) in plan order: each rank's peers in rotated
// order (x+1, x+2, ...), rank x's j-th send rank 0's shifted by x, the order in which symmetry
// classes (symmetry.hpp) match units; `send(x, z, src, dst, flow_hash)`.
template <class Send>
void all_to_all_sends(std::span<const NodeIndex> ranks, Send&& send) {
  const int n = static_cast<int>(ranks.size());
  for (int x = 0; x < n; ++x) {
    for (int d = 1; d < n; ++d) {
      const int z = (x + d) % n;
      const NodeIndex src = ranks[static_cast<std::size_t>(x)], dst = ranks[static_cast<std::size_t>(z)];
      send(x, z, src, dst, mix(9, src, dst));
    }
  }
}

void plan_direct(PlanBuilder& b, const PlanArgs& a) {
  const auto& [s, l, n, size, chunks, channels] = a;
  if (s.op == CollectiveOp::all_to_all) {
    // nccl-tests' all-to-all size is the per-rank buffer: S/n to each peer; all-to-allv
    // takes each pair's bytes from the matrix.
    const auto nn = static_cast<std::size_t>(n);
    if (!s.pair_bytes.empty() && s.pair_bytes.size() != nn * nn) {
      throw InputError("<command line>", "alltoallv", fmt::format("found {} pair sizes, expected {} x {} = {}", s.pair_bytes.size(), n, n, nn * nn));
    }
    all_to_all_sends(std::span(l.ranks).first(static_cast<std::size_t>(n)), [&](int x, int z, NodeIndex src, NodeIndex dst, std::uint64_t hash) {
      const double piece = s.pair_bytes.empty() ? size / n : s.pair_bytes[static_cast<std::size_t>(x) * nn + static_cast<std::size_t>(z)];
      if (!(piece >= 0) || !std::isfinite(piece)) {
        throw InputError("<command line>", "alltoallv", fmt::format("bytes from rank {} to rank {} are {}, expected a size >= 0", x, z, piece));
      }
      if (piece > 0) b.add(src, dst, piece, hash, {});
    });
  } else if (s.op == CollectiveOp::send_recv) {
    const NodeIndex src = l.ranks[0], dst = l.ranks[static_cast<std::size_t>(s.peer)];
    for (int c = 0; c < channels; ++c) b.add(src, dst, size / channels, mix(static_cast<std::uint64_t>(c), src, dst), {});
  } else {
    unsupported(s, "is not supported; direct serves all-to-all and send-recv");
  }
}

}  // namespace

CollectivePlan plan_collective(const Topology& t, const CollectiveSpec& s) {
  const int n = checked_ranks(t, s);
  CollectivePlan plan;
  plan.ranks = n;
  const double size = s.size.value();
  const int chunks = default_chunks(s);
  // Concurrent groups append their transfers to one plan (each group's ids are its own
  // builder calls' results, so dependencies stay inside the group).
  for (int g = 0; g < s.groups; ++g) {
    const Layout l = s.groups == 1 && s.stride == 1 ? layout_of(t, n) : layout_of(t, group_gpus(t, s, n, g));
    const int channels = default_channels(t, l, s);
    if (s.groups > 1) plan.group_begin.push_back(static_cast<std::uint32_t>(plan.transfers.size()));
    PlanBuilder b(plan, {s.max_transfers, n * s.groups, channels, chunks});
    plan.channels = channels;
    const PlanArgs a{s, l, n, size, chunks, channels};
    plan.distinct_connections = s.algo == CollectiveAlgo::ring && s.op != CollectiveOp::broadcast && s.op != CollectiveOp::reduce;
    switch (s.algo) {
      case CollectiveAlgo::ring: plan_ring(b, a); break;
      case CollectiveAlgo::tree: plan_tree(b, a); break;
      case CollectiveAlgo::hierarchical: plan_hierarchical(b, a); break;
      case CollectiveAlgo::nvls: plan_nvls(b, a, t); break;
      case CollectiveAlgo::nvls_tree: plan_nvls_tree(b, a, t); break;
      case CollectiveAlgo::pat: plan_pat(b, a); break;
      case CollectiveAlgo::direct: plan_direct(b, a); break;
    }
    if (g == 0 && s.groups > 1) {
      // The groups' plans are alike: room for all of them at once.
      plan.transfers.reserve(plan.transfers.size() * static_cast<std::size_t>(s.groups));
      plan.deps.reserve(plan.deps.size() * static_cast<std::size_t>(s.groups));
    }
  }
  return plan;
}

// ---------------------------------------------------------------------------------------
// Running a plan

namespace {

double efficiency_of(const LinkEfficiency& e, LinkKind kind) {
  switch (kind) {
    case LinkKind::nvlink: return e.nvlink;
    case LinkKind::pcie: return e.pcie;
    case LinkKind::network: return e.network;
  }
  return 1.0;
}

// The flow network's links for a topology: its links first (same indices) at their kind's
// efficiency, then one NVLS reduction port per GPU-switch link; and each transfer's route
// over them, found once per connection (a ring channel's steps share one).
class FabricLinks {
 public:
  FabricLinks(const Topology& t, const LinkEfficiency& e, bool link_latency) : topology_(t) {
    for (const TopoLink& link : t.links()) {
      capacity_.push_back(link.bandwidth.value() * efficiency_of(e, link.kind));
      latency_ns_.push_back(link_latency ? link.latency.ns() : 0);
      kind_.push_back(static_cast<std::uint32_t>(link.kind));
    }
    nvls_port_.assign(t.links().size(), kNone);
    for (LinkIndex l = 0; l < t.links().size(); ++l) {
      const TopoLink& link = t.link(l);
      const bool to_switch = t.node(link.to).reduces_in_network() && t.node(link.from).kind == NodeKind::gpu;
      const bool from_switch = t.node(link.from).reduces_in_network() && t.node(link.to).kind == NodeKind::gpu;
      if (to_switch || from_switch) {
        nvls_port_[l] = static_cast<std::uint32_t>(capacity_.size());
        capacity_.push_back(link.bandwidth.value() * t.node(to_switch ? link.to : link.from).nvls_efficiency);
        latency_ns_.push_back(0);
        kind_.push_back(kNvlsPort);
      }
    }
  }

  std::span<const double> capacity() const { return capacity_; }
  std::span<const std::int64_t> latency_ns() const { return latency_ns_; }
  // By link: its LinkKind, or one past them for an NVLS port (whose capacity no efficiency scales).
  std::span<const std::uint32_t> kinds() const { return kind_; }

  // The links a transfer crosses, in order (empty for a local copy); valid until the next call.
  std::span<const std::uint32_t> route(const Transfer& tr) {
    if (tr.src == tr.dst) return {};
    const RouteEntry key{tr.flow_hash, tr.src, tr.dst, 0, 0, tr.nvls, true};
    if (2 * (held_ + 1) > slots_.size()) grow();
    RouteEntry& slot = slots_[find(key)];
    if (!slot.used) {
      const RouteSpan found = append_route(tr);
      slot = key;
      slot.first = found.first;
      slot.count = found.count;
      ++held_;
    }
    return {pool_.data() + slot.first, slot.count};
  }
  // Every transfer's route found once, for the many passes over a plan that follow: route_of(i)
  // is then an index into a vector. A transfer after an earlier one of its own connection (a
  // ring's next step or chunk) takes that one's route; a plan of distinct connections needs no
  // table of them.
  void resolve(const CollectivePlan& plan) {
    by_transfer_.resize(plan.transfers.size());
    for (std::size_t i = 0; i < plan.transfers.size(); ++i) {
      const Transfer& tr = plan.transfers[i];
      const std::uint32_t* dep = plan.deps.data() + tr.deps_begin;
      const std::uint32_t* same = std::find_if(dep, dep + tr.deps_count, [&](std::uint32_t d) {
        const Transfer& o = plan.transfers[d];
        return d < i && o.src == tr.src && o.dst == tr.dst && o.flow_hash == tr.flow_hash && o.nvls == tr.nvls;
      });
      if (same != dep + tr.deps_count) {
        by_transfer_[i] = by_transfer_[*same];
      } else if (plan.distinct_connections) {
        by_transfer_[i] = tr.src == tr.dst ? RouteSpan{0, 0} : append_route(tr);
      } else {
        const std::span<const std::uint32_t> r = route(tr);
        by_transfer_[i] = {static_cast<std::uint32_t>(r.empty() ? 0 : r.data() - pool_.data()), static_cast<std::uint32_t>(r.size())};
      }
    }
  }
  std::span<const std::uint32_t> route_of(std::uint32_t i) const { return {pool_.data() + by_transfer_[i].first, by_transfer_[i].count}; }
  // A transfer's route, kept nowhere (for one pass over a plan too large for a table of them);
  // valid until the next call. Not with route(), resolve() or route_of() on the same object.
  std::span<const std::uint32_t> route_once(const Transfer& tr) {
    pool_.clear();
    if (tr.src != tr.dst) append_route(tr);
    return pool_;
  }

 private:
  // A connection (src, dst, flow hash, NVLS) and its route: its links in pool_ (one allocation for
  // all of them). Kept in an open-addressing table (linear probing, at most half full): a
  // frontier plan holds millions of connections, each looked up once per ring step.
  struct RouteEntry {
    std::uint64_t hash;
    NodeIndex src, dst;
    std::uint32_t first, count;
    bool nvls, used;
    bool same(const RouteEntry& o) const { return hash == o.hash && src == o.src && dst == o.dst && nvls == o.nvls; }
  };
  struct RouteSpan {
    std::uint32_t first, count;
  };
  // A transfer's route appended to pool_.
  RouteSpan append_route(const Transfer& tr) {
    const std::vector<LinkIndex> path = topology_.route(tr.src, tr.dst, tr.flow_hash);
    const auto first = static_cast<std::uint32_t>(pool_.size());
    for (const LinkIndex l : path) {
      // NVLS transfers also pass the switch's reduction port on the GPU side.
      if (tr.nvls && nvls_port_[l] != kNone && topology_.node(topology_.link(l).to).kind == NodeKind::nvswitch) {
        pool_.push_back(l);
        pool_.push_back(nvls_port_[l]);
      } else if (tr.nvls && nvls_port_[l] != kNone) {
        pool_.push_back(nvls_port_[l]);
        pool_.push_back(l);
      } else {
        pool_.push_back(l);
      }
    }
    return {first, static_cast<std::uint32_t>(pool_.size()) - first};
  }
  // The slot of `key`: where it is, or the empty slot where it goes.
  std::size_t find(const RouteEntry& key) const {
    std::uint64_t z = key.hash ^ (std::uint64_t{key.src} << 32 | key.dst) ^ (std::uint64_t{key.nvls} << 63);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = static_cast<std::size_t>(z) & mask;
    while (slots_[i].used && !slots_[i].same(key)) i = (i + 1) & mask;
    return i;
  }
  void grow() {
    std::vector<RouteEntry> old(std::max<std::size_t>(64, 2 * slots_.size()));
    old.swap(slots_);
    for (const RouteEntry& e : old) {
      if (e.used) slots_[find(e)] = e;
    }
  }
  const Topology& topology_;
  std::vector<double> capacity_;
  static constexpr std::uint32_t kNvlsPort = 3;
  std::vector<std::int64_t> latency_ns_;
  std::vector<std::uint32_t> kind_;
  std::vector<std::uint32_t> nvls_port_;
  std::vector<RouteEntry> slots_;  // size a power of two (or none yet)
  std::size_t held_ = 0;
  std::vector<std::uint32_t> pool_;
  std::vector<RouteSpan> by_transfer_;  // resolve()
};

// The links a Runner's flows cross: capacity (bytes/s) and latency (ns) by link, each
// transfer's route over them, and (optional) a latency of each transfer's own.
struct RunLinks {
  std::span<const double> capacity;
  std::span<const std::int64_t> latency_ns;
  std::function<std::span<const std::uint32_t>(std::uint32_t transfer)> route;
  std::span<const std::int64_t> transfer_latency_ns = {};
};

class Runner : public sim::FlowObserver {
 public:
  // `latency[k]`: collective k's software latency, paid before its first transfers.
  Runner(RunLinks links, const CollectivePlan& plan, bool loads, sim::Duration quantum, std::span<const sim::Duration> latency)
      : links_(std::move(links)), plan_(plan), net_(engine_), record_loads_(loads), start_latency_(latency.begin(), latency.end()),
        ends_(latency.size(), sim::Duration::zero()), horizons_(latency.size(), sim::Duration::max()) {
    net_.set_departure_quantum(quantum);
    for (std::size_t l = 0; l < links_.capacity.size(); ++l) {
      net_.add_link(sim::BytesPerSecond(links_.capacity[l]), sim::Duration::nanoseconds(links_.latency_ns[l]));
    }
    // Dependents, as compressed lists.
    const std::size_t n = plan.transfers.size();
    waiting_.assign(n, 0);
    offsets_.assign(n + 1, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const Transfer& tr = plan.transfers[i];
      waiting_[i] = tr.deps_count;
      for (std::uint32_t k = 0; k < tr.deps_count; ++k) ++offsets_[plan.deps[tr.deps_begin + k] + 1];
    }
    for (std::size_t i = 0; i < n; ++i) offsets_[i + 1] += offsets_[i];
    dependents_.resize(plan.deps.size());
    std::vector<std::uint32_t> fill(offsets_.begin(), offsets_.end() - 1);
    for (std::uint32_t i = 0; i < n; ++i) {
      const Transfer& tr = plan.transfers[i];
      for (std::uint32_t k = 0; k < tr.deps_count; ++k) dependents_[fill[plan.deps[tr.deps_begin + k]]++] = i;
    }
    net_.set_observer(this, loads);
  }

  CollectiveResult run() {
    for (std::uint32_t i = 0; i < waiting_.size(); ++i) {
      if (waiting_[i] == 0) launch(i);
    }
    engine_.run();
    ORRERY_CHECK(done_ == plan_.transfers.size(), "{} of {} transfers ran", done_, plan_.transfers.size());
    CollectiveResult r;
    r.time = engine_.now().since_start();
    r.flows = net_.flows_started();
    r.solves = net_.solves();
    r.solve_work = net_.solve_work();
    r.events = engine_.events_processed();
    r.ranks = plan_.ranks;
    r.channels = plan_.channels;
    r.link_loads = std::move(loads_);
    r.ends = ends_;
    r.horizons = horizons_;
    return r;
  }

  void on_flow_complete(sim::FlowId, std::uint64_t tag, sim::Time) override { finish(static_cast<std::uint32_t>(tag)); }
  void on_link_load(sim::LinkId link, sim::Time at, sim::BytesPerSecond load) override {
    if (record_loads_) loads_.push_back({link, at, load.value()});
  }

 private:
  void launch(std::uint32_t i) {
    const Transfer& tr = plan_.transfers[i];
    if (tr.bytes == 0 && tr.src == tr.dst) {
      // A barrier: no data, no latency of its own.
      engine_.schedule_after(tr.deps_count == 0 ? start_latency_[tr.collective] : sim::Duration::zero(), [this, i] { finish(i); });
      return;
    }
    route_.clear();
    for (const std::uint32_t l : links_.route(i)) route_.push_back(sim::LinkId(l));
    // The collective's latency is paid before its first transfers start (those that wait on
    // none): alone, the whole collective ends exactly that much later.
    sim::Duration latency = tr.deps_count == 0 ? start_latency_[tr.collective] : sim::Duration::zero();
    if (!links_.transfer_latency_ns.empty()) latency = latency + sim::Duration::nanoseconds(links_.transfer_latency_ns[i]);
    net_.start(route_, sim::Bytes(tr.bytes), i, 1.0, latency);
  }

  void finish(std::uint32_t i) {
    ++done_;
    const Transfer& tr = plan_.transfers[i];
    sim::Duration& end = ends_[tr.collective];
    end = std::max(end, engine_.now().since_start());
    if (tr.horizon) horizons_[tr.collective] = std::min(horizons_[tr.collective], engine_.now().since_start());
    for (std::uint32_t k = offsets_[i]; k < offsets_[i + 1]; ++k) {
      const std::uint32_t d = dependents_[k];
      if (--waiting_[d] == 0) launch(d);
    }
  }

  RunLinks links_;
  const CollectivePlan& plan_;
  sim::Engine engine_;
  sim::FlowNetwork net_;
  bool record_loads_;
  std::vector<std::uint32_t> waiting_, offsets_, dependents_;
  std::vector<sim::LinkId> route_;
  std::vector<LinkLoadSample> loads_;
  std::size_t done_ = 0;
  std::vector<sim::Duration> start_latency_;  // by collective
  std::vector<sim::Duration> ends_;           // by collective
  std::vector<sim::Duration> horizons_;       // by collective: the first horizon transfer's end
};

}  // namespace

namespace {

// A ring's steps repeat: every step moves the same pieces between the same neighbours on the
// same routes (a channel's ECMP hash is fixed), so once the pipeline is full each step adds the
// same time. A ring of many steps is costed from two runs of k and 2k of its steps,
// T(steps) = T(2k) + (steps - 2k) (T(2k) - T(k)) / k, with k = max(4, 2 x chunks) so that the
// pipeline of chunks is full in both; rings of up to 4k steps run in full. (Exact to the
// nanosecond on every case of tests/models/network/collectives_test.cpp, oversubscribed spines,
// planes and software latencies included.)
int ring_warm_steps(const CollectiveSpec& s) { return std::max(4, 2 * std::max(1, s.chunks)); }

bool extrapolable(const Topology& t, const CollectiveSpec& s, bool record_link_loads) {
  if (!s.extrapolate_rings || record_link_loads || s.algo != CollectiveAlgo::ring || !s.pair_bytes.empty() || s.ring_steps > 0) return false;
  if (s.op != CollectiveOp::all_reduce && s.op != CollectiveOp::reduce_scatter && s.op != CollectiveOp::all_gather) return false;
  return ring_steps(s.op, ranks_of(t, s)) > 4 * ring_warm_steps(s);
}

// A ring of `steps` steps that ended at `shorter` after k of them and at `longer` after 2k: each
// step past 2k adds what each of the k between them did.
sim::Duration extrapolated_end(sim::Duration shorter, sim::Duration longer, int k, int steps) {
  const double per_step = (longer - shorter).to_seconds() / k;
  return longer + sim::ceil_duration_ns(std::max(0.0, per_step) * (steps - 2 * k) * 1e9);
}

}  // namespace

int ring_steps_planned(const CollectiveSpec& s, int ranks) {
  if (s.algo != CollectiveAlgo::ring) return 0;
  if (s.op != CollectiveOp::all_reduce && s.op != CollectiveOp::reduce_scatter && s.op != CollectiveOp::all_gather) return 0;
  const int all = ring_steps(s.op, ranks);
  if (s.ring_steps > 0) return std::min(s.ring_steps, all);
  const int k = ring_warm_steps(s);
  return s.extrapolate_rings && s.pair_bytes.empty() && all > 4 * k ? 2 * k : all;
}

namespace {

// Dense unit numbers in order of first appearance (the first transfer's unit is 0).
int compact_units(std::vector<std::uint32_t>& unit_of, std::size_t key_count) {
  std::vector<std::uint32_t> dense(key_count, kNone);
  std::uint32_t units = 0;
  for (std::uint32_t& u : unit_of) {
    if (dense[u] == kNone) dense[u] = units++;
    u = dense[u];
  }
  return static_cast<int>(units);
}

// The servers whose NICs share server 0's first NIC's leaf switch (0 where there is none).
int servers_per_leaf(const Topology& t) {
  for (NodeIndex nic = 0; nic < t.nodes().size(); ++nic) {
    if (t.node(nic).kind != NodeKind::nic || t.node(nic).server != 0) continue;
    for (const LinkIndex up : t.out_links(nic)) {
      const NodeIndex leaf = t.link(up).to;
      if (t.node(leaf).kind != NodeKind::leaf) continue;
      std::vector<std::int32_t> servers;
      for (const LinkIndex down : t.out_links(leaf)) {
        if (t.node(t.link(down).to).kind == NodeKind::nic) servers.push_back(t.node(t.link(down).to).server);
      }
      std::sort(servers.begin(), servers.end());
      return static_cast<int>(std::unique(servers.begin(), servers.end()) - servers.begin());
    }
    return 0;
  }
  return 0;
}

// The plan reduced to one of its symmetric units (symmetry.hpp), or none. Units tried, finest
// first: the GPUs (a transfer belongs to its sender, or its receiver when a switch sends), their
// servers, blocks of the servers behind one leaf switch (then two, four, ... leaves), then the concurrent groups of
// CollectiveSpec::groups. `links`: the topology's, with the plan's routes resolved.
std::optional<SymmetricReduction> reduce(const Topology& t, FabricLinks& links, const CollectivePlan& plan) {
  if (plan.transfers.size() <= 1) return std::nullopt;
  const PlanLinks view{links.capacity(), links.latency_ns(), [&](std::uint32_t i) { return links.route_of(i); }, links.kinds()};
  const auto attempt = [&](std::vector<std::uint32_t> unit_of, std::size_t keys) {
    const int units = compact_units(unit_of, keys);
    return reduce_by_symmetry(plan, unit_of, units, view);
  };
  // A transfer's GPU: its sender, or its receiver when a switch sends.
  std::vector<std::uint32_t> by_gpu(plan.transfers.size());
  for (std::size_t i = 0; i < plan.transfers.size(); ++i) {
    const Transfer& tr = plan.transfers[i];
    by_gpu[i] = t.node(tr.src).kind == NodeKind::gpu ? tr.src : tr.dst;
  }
  bool servers_known = true;
  for (std::size_t i = 0; i < by_gpu.size() && servers_known; ++i) servers_known = t.node(by_gpu[i]).kind == NodeKind::gpu && t.node(by_gpu[i]).server >= 0;
  if (auto r = attempt(by_gpu, t.nodes().size())) return r;
  if (servers_known) {
    std::vector<std::uint32_t> by_server(by_gpu.size());
    for (std::size_t i = 0; i < by_gpu.size(); ++i) by_server[i] = static_cast<std::uint32_t>(t.node(by_gpu[i]).server);
    if (auto r = attempt(by_server, t.servers())) return r;
    // Blocks of the servers behind one leaf switch (a rail fabric's scalable unit), then of two,
    // four, ... leaves' servers: where an NVLink domain spans several leaves (an NVL72 rack's
    // 16 trays over two leaves of 32 ports) or a group does (an expert all-to-all across racks),
    // the pattern repeats only every few leaves.
    const int servers = static_cast<int>(t.servers());
    for (int block = std::max(1, servers_per_leaf(t)); block > 1 && servers / block >= 2; block *= 2) {
      std::vector<std::uint32_t> by_block = by_server;
      for (std::uint32_t& u : by_block) u /= static_cast<std::uint32_t>(block);
      if (auto r = attempt(std::move(by_block), t.servers())) return r;
    }
  }
  if (plan.group_begin.size() > 1) {
    std::vector<std::uint32_t> by_group(plan.transfers.size());
    for (std::size_t g = 0; g < plan.group_begin.size(); ++g) {
      const std::size_t end = g + 1 < plan.group_begin.size() ? plan.group_begin[g + 1] : plan.transfers.size();
      for (std::size_t i = plan.group_begin[g]; i < end; ++i) by_group[i] = static_cast<std::uint32_t>(g);
    }
    if (auto r = attempt(std::move(by_group), plan.group_begin.size())) return r;
  }
  return std::nullopt;
}

// One unit on one link per class; the latencies are the transfers' own (their physical routes').
CollectiveResult run_reduced(const SymmetricReduction& red, const CollectiveSpec& s, std::span<const sim::Duration> latency) {
  const std::vector<std::int64_t> no_latency(red.capacity.size(), 0);
  const RunLinks virtual_links{red.capacity, no_latency, [&](std::uint32_t j) {
                                 return std::span<const std::uint32_t>(red.routes.data() + red.route_begin[j], red.route_begin[j + 1] - red.route_begin[j]);
                               },
                               red.latency_ns};
  CollectiveResult r = Runner(virtual_links, red.plan, false, s.quantum, latency).run();
  r.units = red.units;
  return r;
}

// Runs a plan: one symmetric unit under the others' load where reduce() finds one, else every
// transfer. `latency`: each collective's (by Transfer::collective); `s` gives the rest of the
// run's settings; `links`: the topology's, with the plan's routes resolved; `reduced`: where
// the reduction goes, when one was used.
CollectiveResult simulate(const Topology& t, FabricLinks& links, const CollectivePlan& plan, const CollectiveSpec& s,
                          std::span<const sim::Duration> latency, bool loads, std::optional<SymmetricReduction>* reduced = nullptr) {
  if (s.symmetry && !loads) {
    if (std::optional<SymmetricReduction> red = reduce(t, links, plan)) {
      CollectiveResult r = run_reduced(*red, s, latency);
      if (reduced != nullptr) *reduced = std::move(red);
      return r;
    }
  }
  const RunLinks physical{links.capacity(), links.latency_ns(), [&](std::uint32_t i) { return links.route_of(i); }};
  return Runner(physical, plan, loads, s.quantum, latency).run();
}

CollectiveResult simulate(const Topology& t, const CollectivePlan& plan, const LinkEfficiency& e, const CollectiveSpec& s,
                          std::span<const sim::Duration> latency, bool loads) {
  FabricLinks links(t, e, s.link_latency);
  links.resolve(plan);
  return simulate(t, links, plan, s, latency, loads);
}

}  // namespace

namespace {

// Both runs of an extrapolated ring reduced to one symmetric unit. Rings that differ only in size
// (a step's gradient buckets, reduce-scatter beside all-gather) plan the same transfers, each
// moving the same piece, and their protocols only scale each kind of link (LinkEfficiency): the
// topology keeps the reductions (Topology::memo), so the next such ring runs unit 0 with its own
// piece and capacities instead of planning, routing and checking the whole fabric again. Same
// result as without: its classes are what the check would find (they never mix kinds of link,
// and within a kind equal capacities stay equal when scaled), so only their capacities change.
struct ReducedRing {
  SymmetricReduction shorter, longer;
  int channels = 0, chunks = 0;
};

// What determines an extrapolated ring's plan and reduction besides its size and efficiencies.
std::string ring_memo_key(const CollectiveSpec& s, int n, int k) {
  return fmt::format("ring n={} groups={} stride={} channels={} chunks={} k={} link_latency={}", n, s.groups, s.stride, s.channels,
                     default_chunks(s), k, s.link_latency);
}

// Every transfer of a plan moves `piece` bytes (what a ring's reduction may be kept for).
bool uniform(const CollectivePlan& p, double piece) {
  return std::all_of(p.transfers.begin(), p.transfers.end(), [&](const Transfer& tr) { return tr.bytes == piece; });
}

// Several collectives' plans as one (each transfer marked with its collective), and each
// collective's latency.
std::pair<CollectivePlan, std::vector<sim::Duration>> plan_mix(const Topology& t, std::span<const CollectiveSpec> specs) {
  CollectivePlan plan;
  std::vector<sim::Duration> latency;
  for (std::size_t k = 0; k < specs.size(); ++k) {
    const CollectiveSpec& s = specs[k];
    if (s.link_latency != specs[0].link_latency || s.quantum != specs[0].quantum) {
      throw InputError("<command line>", fmt::format("collectives/{}", k),
                       "found link latencies or a departure quantum that differ from the first collective's, expected the same for all");
    }
    CollectivePlan one = plan_collective(t, s);
    const auto offset = static_cast<std::uint32_t>(plan.transfers.size());
    const auto deps_offset = static_cast<std::uint32_t>(plan.deps.size());
    for (Transfer tr : one.transfers) {
      tr.deps_begin += deps_offset;
      tr.collective = static_cast<std::uint32_t>(k);
      plan.transfers.push_back(tr);
    }
    for (const std::uint32_t d : one.deps) plan.deps.push_back(d + offset);
    plan.ranks = std::max(plan.ranks, one.ranks);
    plan.channels = std::max(plan.channels, one.channels);
    // Two collectives may share a connection (routed twice then: the same route).
    plan.distinct_connections = (k == 0 || plan.distinct_connections) && one.distinct_connections;
    latency.push_back(s.latency);
  }
  return {std::move(plan), std::move(latency)};
}

// The collectives `only` shares links with, directly or through another (the rest cannot change
// its end), in order.
std::vector<std::size_t> linked_to(const CollectivePlan& plan, const FabricLinks& links, std::size_t count, std::size_t only) {
  std::vector<std::uint32_t> parent(count);
  for (std::uint32_t k = 0; k < parent.size(); ++k) parent[k] = k;
  const auto root = [&](std::uint32_t k) {
    while (parent[k] != k) k = parent[k] = parent[parent[k]];
    return k;
  };
  std::vector<std::uint32_t> owner(links.capacity().size(), kNone);
  for (std::uint32_t i = 0; i < plan.transfers.size(); ++i) {
    const Transfer& tr = plan.transfers[i];
    for (const std::uint32_t l : links.route_of(i)) {
      if (owner[l] == kNone) owner[l] = tr.collective;
      parent[root(owner[l])] = root(tr.collective);
    }
  }
  std::vector<std::size_t> kept;
  for (std::size_t k = 0; k < count; ++k) {
    if (root(static_cast<std::uint32_t>(k)) == root(static_cast<std::uint32_t>(only))) kept.push_back(k);
  }
  return kept;
}

// A result of the collectives `kept` as one of all `count` (the others' ends zero).
CollectiveResult widened(CollectiveResult part, const std::vector<std::size_t>& kept, std::size_t count) {
  CollectiveResult r = part;
  r.ends.assign(count, sim::Duration::zero());
  r.horizons.assign(count, sim::Duration::max());
  for (std::size_t j = 0; j < kept.size(); ++j) r.ends[kept[j]] = part.ends[j], r.horizons[kept[j]] = part.horizons[j];
  r.time = *std::max_element(r.ends.begin(), r.ends.end());
  return r;
}

// A mix's long rings reduced once from a plan of their first two steps (repeat_ring_steps): the
// mixes of k and 2k of their steps that run_concurrent runs are built from it. `reduction` is
// unit 0's, of the collectives `kept` (those `only` shares links with, or all of them).
struct TwoStepMix {
  bool tried = false;
  std::optional<SymmetricReduction> reduction;
  std::vector<std::size_t> kept;
  std::vector<char> ring;  // by kept collective: a truncated ring, whose steps repeat
  std::vector<sim::Duration> latency;  // by kept collective
};

// The mix of `specs` with each truncated ring (ring_steps > 0) planned for two steps, reduced.
void reduce_two_step_mix(const Topology& t, std::span<const CollectiveSpec> specs, const LinkEfficiency& e, std::optional<std::size_t> only,
                         TwoStepMix& two) {
  two.tried = true;
  std::vector<CollectiveSpec> planned(specs.begin(), specs.end());
  for (CollectiveSpec& s : planned) {
    if (s.ring_steps > 0) s.ring_steps = 2;
  }
  auto [plan, latency] = plan_mix(t, planned);
  auto links = std::make_unique<FabricLinks>(t, e, specs[0].link_latency);
  links->resolve(plan);
  two.kept.resize(specs.size());
  for (std::size_t k = 0; k < specs.size(); ++k) two.kept[k] = k;
  if (only && specs.size() > 1) {
    two.kept = linked_to(plan, *links, specs.size(), *only);
    if (two.kept.size() < specs.size()) {
      std::vector<CollectiveSpec> subset;
      for (const std::size_t k : two.kept) subset.push_back(planned[k]);
      std::tie(plan, latency) = plan_mix(t, subset);
      links = std::make_unique<FabricLinks>(t, e, specs[0].link_latency);
      links->resolve(plan);
    }
  }
  for (const std::size_t k : two.kept) two.ring.push_back(specs[k].ring_steps > 0 ? 1 : 0);
  two.latency = std::move(latency);
  two.reduction = reduce(t, *links, plan);
}

// An extrapolated ring's reductions at k and 2k steps from a plan of its first two steps
// (repeat_ring_steps; the ring as a mix of one), or none where that plan has no symmetric units.
std::optional<ReducedRing> reduce_ring(const Topology& t, CollectiveSpec s, const LinkEfficiency& e, int k) {
  s.ring_steps = k;
  TwoStepMix two;
  reduce_two_step_mix(t, {&s, 1}, e, std::nullopt, two);
  if (!two.reduction) return std::nullopt;
  // Unit 0's transfers move what every unit's do (reduce_by_symmetry checks), so the piece of
  // all of them.
  const int chunks = default_chunks(s);
  const CollectivePlan& unit = two.reduction->plan;
  if (!uniform(unit, ring_piece(s.size.value(), ranks_of(t, s), unit.channels, chunks))) return std::nullopt;
  std::optional<SymmetricReduction> shorter = repeat_ring_steps(*two.reduction, k), longer = repeat_ring_steps(*two.reduction, 2 * k);
  if (!shorter || !longer) return std::nullopt;
  return ReducedRing{std::move(*shorter), std::move(*longer), unit.channels, chunks};
}

}  // namespace

CollectiveResult run_collective(const Topology& t, const CollectiveSpec& spec, const LinkEfficiency& e, bool record_link_loads) {
  CollectivePlan plan;
  CollectiveResult r;
  if (extrapolable(t, spec, record_link_loads)) {
    const int n = ranks_of(t, spec);
    CollectiveSpec s = spec;
    const int k = ring_warm_steps(spec);
    CollectiveResult a;
    const std::string key = ring_memo_key(s, n, k);
    const auto memo = s.symmetry ? std::static_pointer_cast<const ReducedRing>(t.memo(key)) : nullptr;
    if (memo) {
      // A ring of the same shape ran on this topology: its reductions with this ring's piece.
      SymmetricReduction shorter = memo->shorter, longer = memo->longer;
      const FabricLinks links(t, e, s.link_latency);
      shorter.rescale(links.capacity());
      longer.rescale(links.capacity());
      const double piece = ring_piece(s.size.value(), n, memo->channels, memo->chunks);
      for (Transfer& tr : shorter.plan.transfers) tr.bytes = piece;
      for (Transfer& tr : longer.plan.transfers) tr.bytes = piece;
      plan.ranks = n;
      a = run_reduced(shorter, s, {&s.latency, 1});
      r = run_reduced(longer, s, {&s.latency, 1});
    } else if (std::optional<ReducedRing> ring = s.symmetry && s.repeat_ring_steps ? reduce_ring(t, s, e, k) : std::nullopt) {
      // Its first two steps reduced, the k and 2k steps' reductions repeat them.
      plan.ranks = n;
      a = run_reduced(ring->shorter, s, {&s.latency, 1});
      r = run_reduced(ring->longer, s, {&s.latency, 1});
      t.remember(key, std::make_shared<const ReducedRing>(std::move(*ring)));
    } else {
      // One route table for both runs: the longer one's connections are the shorter one's.
      FabricLinks links(t, e, s.link_latency);
      std::optional<SymmetricReduction> reduced_shorter, reduced_longer;
      s.ring_steps = k;
      {
        const CollectivePlan shorter = plan_collective(t, s);
        links.resolve(shorter);
        a = simulate(t, links, shorter, s, {&s.latency, 1}, false, &reduced_shorter);
      }
      s.ring_steps = 2 * k;
      plan = plan_collective(t, s);
      links.resolve(plan);
      r = simulate(t, links, plan, s, {&s.latency, 1}, false, &reduced_longer);
      const int chunks = default_chunks(s);
      if (reduced_shorter && reduced_longer && uniform(plan, ring_piece(s.size.value(), n, plan.channels, chunks))) {
        t.remember(key, std::make_shared<const ReducedRing>(ReducedRing{std::move(*reduced_shorter), std::move(*reduced_longer), plan.channels, chunks}));
      }
    }
    r.time = extrapolated_end(a.time, r.time, k, ring_steps(spec.op, n));
    r.flows += a.flows;
    r.solves += a.solves;
    r.solve_work += a.solve_work;
    r.events += a.events;
    r.extrapolated_steps = ring_steps(spec.op, n);
  } else {
    plan = plan_collective(t, spec);
    r = simulate(t, plan, e, spec, {&spec.latency, 1}, record_link_loads);
  }
  double size = spec.size.value();
  if (!spec.pair_bytes.empty()) {
    // All-to-allv: the busiest sender's bytes play the role of the per-rank buffer.
    const auto n = static_cast<std::size_t>(plan.ranks);
    size = 0;
    for (std::size_t a = 0; a < n; ++a) {
      double row = 0;
      for (std::size_t z = 0; z < n; ++z) row += a == z ? 0 : spec.pair_bytes[a * n + z];
      size = std::max(size, row * static_cast<double>(n) / static_cast<double>(n - 1));
    }
  }
  r.algbw = size / r.time.to_seconds();
  r.busbw = r.algbw * bus_factor(spec.op, plan.ranks);
  return r;
}

namespace {

// run_concurrent with every ring run to the steps its spec asks (CollectiveSpec::ring_steps).
// `two`: where truncated rings all ask the same steps, build their mix from the reduction of
// its two-step plan (computed on the first call).
CollectiveResult run_mix(const Topology& t, std::span<const CollectiveSpec> specs, const LinkEfficiency& e, std::optional<std::size_t> only,
                         TwoStepMix* two = nullptr) {
  if (two != nullptr) {
    int steps = 0;
    bool alike = true;
    for (const CollectiveSpec& s : specs) {
      if (s.ring_steps > 0) alike = alike && (steps == 0 || steps == s.ring_steps), steps = s.ring_steps;
    }
    if (alike && steps >= 2) {
      if (!two->tried) reduce_two_step_mix(t, specs, e, only, *two);
      if (two->reduction) {
        if (const std::optional<SymmetricReduction> red = repeat_ring_steps(*two->reduction, steps, two->ring)) {
          CollectiveResult part = run_reduced(*red, specs[two->kept.front()], two->latency);
          return widened(std::move(part), two->kept, specs.size());
        }
      }
    }
  }
  auto [plan, latency] = plan_mix(t, specs);
  FabricLinks links(t, e, specs[0].link_latency);
  links.resolve(plan);
  if (only && specs.size() > 1) {
    const std::vector<std::size_t> index = linked_to(plan, links, specs.size(), *only);
    if (index.size() < specs.size()) {
      std::vector<CollectiveSpec> kept;
      for (const std::size_t k : index) kept.push_back(specs[k]);
      return widened(run_mix(t, kept, e, std::nullopt), index, specs.size());  // all of them linked: none to leave out
    }
  }
  CollectiveResult r = simulate(t, links, plan, specs[0], latency, false);
  r.time = *std::max_element(r.ends.begin(), r.ends.end());
  return r;
}

}  // namespace

CollectiveResult run_concurrent(const Topology& t, std::span<const CollectiveSpec> specs, const LinkEfficiency& e, std::optional<std::size_t> only) {
  if (specs.empty()) throw InputError("<command line>", "collectives", "found none, expected at least one collective to run");
  if (only && *only >= specs.size()) throw InputError("<command line>", "only", fmt::format("found {}, expected below {}", *only, specs.size()));
  std::vector<std::size_t> rings;
  for (std::size_t k = 0; k < specs.size(); ++k) {
    if (extrapolable(t, specs[k], false)) rings.push_back(k);
  }
  if (rings.empty() || specs.size() == 1) return run_mix(t, specs, e, only);
  // Long rings beside others: runs of the mix with k and 2k of their steps (run_collective's
  // extrapolation), once the others end before any ring's k-step plan could part from its whole.
  int k = 0;
  for (const std::size_t j : rings) k = std::max(k, ring_warm_steps(specs[j]));
  // The truncated mixes from one reduction of the two-step mix, where every collective allows it.
  TwoStepMix two_step;
  const bool repeat = std::all_of(specs.begin(), specs.end(), [](const CollectiveSpec& s) { return s.symmetry && s.repeat_ring_steps; });
  TwoStepMix* two = repeat ? &two_step : nullptr;
  for (;; k *= 2) {
    bool fits = true;
    for (const std::size_t j : rings) fits = fits && ring_steps(specs[j].op, ranks_of(t, specs[j])) > 4 * k;
    if (!fits) return run_mix(t, specs, e, only);  // the rings are short enough to run whole
    std::vector<CollectiveSpec> truncated(specs.begin(), specs.end());
    for (const std::size_t j : rings) truncated[j].ring_steps = k;
    const CollectiveResult a = run_mix(t, truncated, e, only, two);
    sim::Duration horizon = sim::Duration::max();
    for (const std::size_t j : rings) horizon = std::min(horizon, a.horizons[j]);
    bool before = true;
    for (std::size_t j = 0; j < specs.size(); ++j) {
      if (std::find(rings.begin(), rings.end(), j) == rings.end()) before = before && a.ends[j] <= horizon;
    }
    if (!before) continue;
    for (const std::size_t j : rings) truncated[j].ring_steps = 2 * k;
    CollectiveResult r = run_mix(t, truncated, e, only, two);
    r.extrapolated_steps = 0;
    for (const std::size_t j : rings) {
      const int steps = ring_steps(specs[j].op, ranks_of(t, specs[j]));
      r.extrapolated_steps = std::max(r.extrapolated_steps, steps);
      if (r.ends[j] == sim::Duration::zero()) continue;  // left out (`only`)
      r.ends[j] = extrapolated_end(a.ends[j], r.ends[j], k, steps);
      r.horizons[j] = sim::Duration::max();
    }
    for (std::size_t j = 0; j < specs.size(); ++j) {
      if (std::find(rings.begin(), rings.end(), j) == rings.end()) r.ends[j] = a.ends[j];  // exact in both runs
    }
    r.flows += a.flows;
    r.solves += a.solves;
    r.solve_work += a.solve_work;
    r.events += a.events;
    r.time = *std::max_element(r.ends.begin(), r.ends.end());
    return r;
  }
}

// ---------------------------------------------------------------------------------------
// Mixes by link loads

LinkLoad link_load(const Topology& t, const CollectiveSpec& spec, const LinkEfficiency& e) {
  CollectiveSpec s = spec;
  double repeat = 1;
  const bool ring_op = s.op == CollectiveOp::all_reduce || s.op == CollectiveOp::reduce_scatter || s.op == CollectiveOp::all_gather;
  const bool ring = s.algo == CollectiveAlgo::ring && ring_op && s.pair_bytes.empty();
  if (ring) {
    // Every step of a ring repeats the first's connections and pieces (plan_ring).
    repeat = ring_steps(s.op, ranks_of(t, s));
    s.ring_steps = 1;
  }
  FabricLinks links(t, e, false);
  const std::span<const double> capacity = links.capacity();
  LinkLoad out;
  out.bytes.assign(capacity.size(), 0.0);
  out.connections.assign(capacity.size(), 0);
  out.size = spec.size.value();
  const auto finish = [&] {
    for (std::size_t l = 0; l < capacity.size(); ++l) {
      if (out.bytes[l] <= 0 || capacity[l] <= 0) continue;
      out.wire = std::max(out.wire, out.bytes[l] / capacity[l]);
      out.used.push_back(static_cast<std::uint32_t>(l));
    }
    return out;
  };
  if (s.algo == CollectiveAlgo::direct && s.op == CollectiveOp::all_to_all && s.pair_bytes.empty()) {
    // A uniform all-to-all's transfers as plan_direct makes them (all_to_all_sends), each a
    // connection of its own, read without holding the plan (at frontier scale, millions of them).
    const int n = checked_ranks(t, s);
    std::map<std::uint32_t, double> first;  // group 0's bytes by link
    for (int g = 0; g < s.groups; ++g) {
      const std::vector<NodeIndex> gpus = s.groups == 1 && s.stride == 1 ? layout_of(t, n).ranks : group_gpus(t, s, n, g);
      all_to_all_sends(gpus, [&](int, int, NodeIndex src, NodeIndex dst, std::uint64_t hash) {
        const Transfer tr{src, dst, s.size.value() / n, hash, false, false, 0, 0};
        for (const std::uint32_t l : links.route_once(tr)) {
          out.bytes[l] += tr.bytes;
          ++out.connections[l];
          if (g == 0) first[l] += tr.bytes;
        }
      });
    }
    for (const auto& [l, bytes] : first) out.group_wire = capacity[l] > 0 ? std::max(out.group_wire, bytes / capacity[l]) : out.group_wire;
    return finish();
  }
  const CollectivePlan plan = plan_collective(t, s);
  // Each connection (source, destination, flow hash, NVLS) is one flow beside the others, however
  // many transfers it carries one after another (a ring's chunks, a tree's pipeline): counted at
  // its first transfer.
  std::vector<char> first_of_connection(plan.transfers.size(), 0);
  if (ring) {
    // A ring's chunk waits on the chunk before it of its own connection (add_ring).
    for (std::size_t i = 0; i < plan.transfers.size(); ++i) {
      const Transfer& tr = plan.transfers[i];
      const std::uint32_t* dep = plan.deps.data() + tr.deps_begin;
      first_of_connection[i] = std::none_of(dep, dep + tr.deps_count, [&](std::uint32_t d) {
        const Transfer& o = plan.transfers[d];
        return o.src == tr.src && o.dst == tr.dst && o.flow_hash == tr.flow_hash && o.nvls == tr.nvls;
      });
    }
  } else {
    std::vector<std::pair<std::uint64_t, std::uint32_t>> keys(plan.transfers.size());
    for (std::uint32_t i = 0; i < keys.size(); ++i) {
      const Transfer& tr = plan.transfers[i];
      keys[i] = {mix(tr.flow_hash ^ (std::uint64_t{tr.nvls} << 63), tr.src, tr.dst), i};
    }
    std::sort(keys.begin(), keys.end());
    for (std::size_t k = 0; k < keys.size(); ++k) {
      // Equal keys are one connection unless the transfers differ (a collision of the mix).
      const Transfer& tr = plan.transfers[keys[k].second];
      bool seen = false;
      for (std::size_t j = k; j-- > 0 && keys[j].first == keys[k].first;) {
        const Transfer& o = plan.transfers[keys[j].second];
        seen = seen || (o.src == tr.src && o.dst == tr.dst && o.flow_hash == tr.flow_hash && o.nvls == tr.nvls);
        if (seen) break;
      }
      first_of_connection[keys[k].second] = seen ? 0 : 1;
    }
  }
  const auto add = [&](std::size_t i, std::span<const std::uint32_t> route) {
    for (const std::uint32_t l : route) {
      out.bytes[l] += plan.transfers[i].bytes * repeat;
      out.connections[l] += static_cast<std::uint32_t>(first_of_connection[i]);
    }
  };
  // A ring of one step (two ranks) is sends on their own, as direct ones are.
  if (s.algo == CollectiveAlgo::direct || (ring && repeat == 1)) {
    std::map<std::uint32_t, double> first;  // group 0's bytes by link
    const std::size_t group0 = plan.group_begin.size() > 1 ? plan.group_begin[1] : plan.transfers.size();
    for (std::size_t i = 0; i < plan.transfers.size(); ++i) {
      const std::span<const std::uint32_t> route = links.route_once(plan.transfers[i]);
      add(i, route);
      if (i >= group0) continue;
      for (const std::uint32_t l : route) first[l] += plan.transfers[i].bytes * repeat;
    }
    for (const auto& [l, bytes] : first) out.group_wire = capacity[l] > 0 ? std::max(out.group_wire, bytes / capacity[l]) : out.group_wire;
    return finish();
  }
  links.resolve(plan);
  for (std::size_t i = 0; i < plan.transfers.size(); ++i) add(i, links.route_of(static_cast<std::uint32_t>(i)));
  // Chains: each channel of a ring's one step (plan_ring adds a channel's n x chunks transfers one
  // after another, in every group), else each group.
  std::vector<std::uint32_t> chain_of(plan.transfers.size());
  if (ring) {
    const std::size_t per_chain = static_cast<std::size_t>(ranks_of(t, s)) * static_cast<std::size_t>(default_chunks(s));
    for (std::size_t i = 0; i < chain_of.size(); ++i) chain_of[i] = static_cast<std::uint32_t>(i / per_chain);
  } else {
    std::uint32_t g = 0;
    for (std::size_t i = 0; i < chain_of.size(); ++i) {
      while (g + 1 < plan.group_begin.size() && plan.group_begin[g + 1] <= i) ++g;
      chain_of[i] = g;
    }
  }
  std::vector<double> chain(chain_of.empty() ? 0 : chain_of.back() + 1, 0.0);
  for (std::size_t i = 0; i < plan.transfers.size(); ++i) {
    for (const std::uint32_t l : links.route_of(static_cast<std::uint32_t>(i))) {
      if (capacity[l] > 0) chain[chain_of[i]] = std::max(chain[chain_of[i]], out.bytes[l] / capacity[l]);
    }
  }
  out.rate.assign(capacity.size(), 0.0);
  out.chain_wire.assign(capacity.size(), 0.0);
  for (std::size_t i = 0; i < plan.transfers.size(); ++i) {
    const double wire = chain[chain_of[i]];
    if (wire <= 0) continue;
    for (const std::uint32_t l : links.route_of(static_cast<std::uint32_t>(i))) {
      out.rate[l] += plan.transfers[i].bytes * repeat / wire;
      out.chain_wire[l] = std::max(out.chain_wire[l], wire);
    }
  }
  return finish();
}

namespace {

// On one link of capacity `c`, streams that all start at zero, each with bytes to move, a rate
// it never passes and a weight (its connections): the capacity goes to them max-min fairly by
// weight, each capped at its rate, until each has moved its bytes. Returns when stream 0 has.
struct Stream {
  double bytes, rate, weight;
};
double first_stream_end(std::vector<Stream> s, double c) {
  double now = 0;
  std::vector<double> rate(s.size());
  std::vector<std::size_t> order;
  for (;;) {
    // Weighted max-min with caps: by cap per weight, each stream takes its cap while that is
    // below the fair level of what is left, the rest that level.
    order.clear();
    for (std::size_t k = 0; k < s.size(); ++k) {
      if (s[k].bytes > 0) order.push_back(k);
    }
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return s[a].rate * s[b].weight < s[b].rate * s[a].weight; });
    double left = c, weight = 0;
    for (const std::size_t k : order) weight += s[k].weight;
    for (const std::size_t k : order) {
      rate[k] = std::max(0.0, std::min(s[k].rate, left / weight * s[k].weight));
      left -= rate[k], weight -= s[k].weight;
    }
    double step = std::numeric_limits<double>::infinity();
    for (const std::size_t k : order) {
      if (rate[k] > 0) step = std::min(step, s[k].bytes / rate[k]);
    }
    if (!std::isfinite(step)) return std::numeric_limits<double>::infinity();  // nothing moves (no capacity)
    now += step;
    for (const std::size_t k : order) s[k].bytes = s[k].bytes <= rate[k] * step * (1 + 1e-12) ? 0 : s[k].bytes - rate[k] * step;
    if (s[0].bytes == 0) return now;
  }
}

}  // namespace

std::vector<sim::Duration> ends_by_link_loads(const Topology& t, std::span<const LinkLoad* const> loads, std::span<const double> scale,
                                              std::span<const sim::Duration> alone, const LinkEfficiency& e, std::optional<std::size_t> only) {
  const std::size_t m = loads.size();
  ORRERY_CHECK(scale.size() == m && alone.size() == m, "{} loads, {} scales and {} times", m, scale.size(), alone.size());
  ORRERY_CHECK(!only || *only < m, "collective {} of {}", only.value_or(0), m);
  const FabricLinks links(t, e, false);
  const std::span<const double> capacity = links.capacity();
  std::vector<double> wire(m);
  for (std::size_t k = 0; k < m; ++k) {
    ORRERY_CHECK(loads[k]->bytes.size() == capacity.size(), "a link load of another fabric");
    wire[k] = std::min((loads[k]->lockstep() ? loads[k]->wire : loads[k]->group_wire) * scale[k], alone[k].to_seconds());
  }
  std::vector<double> late(m, 0.0);
  std::vector<Stream> streams;
  std::vector<std::size_t> who;
  // With `only`, the links it loads (no other link can delay it); else all of them.
  std::vector<std::uint32_t> every;
  if (!only) {
    every.resize(capacity.size());
    for (std::size_t l = 0; l < every.size(); ++l) every[l] = static_cast<std::uint32_t>(l);
  }
  for (const std::uint32_t l : only ? std::span<const std::uint32_t>(loads[*only]->used) : std::span<const std::uint32_t>(every)) {
    streams.clear(), who.clear();
    double total = 0;
    for (std::size_t k = 0; k < m; ++k) {
      const double bytes = loads[k]->bytes[l] * scale[k];
      if (bytes <= 0 || wire[k] <= 0) continue;
      const double rate = loads[k]->lockstep() ? loads[k]->rate[l] : capacity[l];
      if (rate <= 0) continue;
      streams.push_back({bytes, rate, static_cast<double>(std::max<std::uint32_t>(1, loads[k]->connections[l]))});
      who.push_back(k);
      total += rate;
    }
    if (capacity[l] <= 0) continue;
    if (streams.size() == 1 && !loads[who[0]]->lockstep()) {
      // Direct sends alone on a link: their one group's time was measured alone, so their own
      // groups' flows that meet here (a hashed spine) delay them as another kind's would.
      late[who[0]] = std::max(late[who[0]], streams[0].bytes / capacity[l] - wire[who[0]]);
      continue;
    }
    if (streams.size() < 2 || total <= capacity[l] * (1 + 1e-9)) continue;  // nobody waits here
    for (std::size_t j = 0; j < streams.size(); ++j) {
      if (only && who[j] != *only) continue;
      std::swap(streams[0], streams[j]);
      const double end = first_stream_end(streams, capacity[l]);
      std::swap(streams[0], streams[j]);
      const std::size_t k = who[j];
      const LinkLoad& load = *loads[k];
      // Lockstep: the link's chains end late by what it adds to their stream (alone, it moved
      // its bytes at its rate), from their own wire time; direct: its flows end with the stream.
      const double until = load.lockstep() ? end - streams[j].bytes / streams[j].rate + load.chain_wire[l] * scale[k] : end;
      late[k] = std::max(late[k], until - wire[k]);
    }
  }
  std::vector<sim::Duration> ends(m);
  for (std::size_t k = 0; k < m; ++k) ends[k] = only && k != *only ? sim::Duration::zero() : alone[k] + sim::ceil_duration_ns(late[k] * 1e9);
  return ends;
}

std::string fabric_link_name(const Topology& t, sim::LinkId link) {
  const std::uint32_t l = index_of(link);
  if (l < t.links().size()) return fmt::format("{}->{}", t.node(t.link(l).from).name, t.node(t.link(l).to).name);
  return fmt::format("nvls-port-{}", l - t.links().size());
}

// ---------------------------------------------------------------------------------------
// Alpha-beta

sim::Duration alpha_beta(const Topology& t, const CollectiveSpec& s, const LinkEfficiency& e) {
  const int n = ranks_of(t, s);
  if (n < 2) throw InputError("<command line>", "--ranks", "expected at least 2 ranks");
  const Layout l = s.groups == 1 && s.stride == 1 ? layout_of(t, n) : layout_of(t, group_gpus(t, s, n, 0));
  const int channels = default_channels(t, l, s);
  const int chunks = default_chunks(s);
  const double size = s.size.value();
  // One hop's latency and bandwidth between two ranks (the first hop of a route).
  const auto hop = [&](NodeIndex a, NodeIndex z) {
    double alpha = 0, bw = 1e300;
    for (const LinkIndex k : t.route(a, z, 0)) {
      if (s.link_latency) alpha += static_cast<double>(t.link(k).latency.ns()) * 1e-9;
      bw = std::min(bw, t.link(k).bandwidth.value() * efficiency_of(e, t.link(k).kind));
    }
    return std::pair{alpha, bw};
  };
  const bool multi = l.by_server.size() > 1;
  const NodeIndex first = l.ranks[0];
  const NodeIndex same_server = multi ? l.ranks[static_cast<std::size_t>(l.by_server[0][static_cast<std::size_t>(1 % l.per_server)])] : l.ranks[1];
  const auto [a_in, b_in] = hop(first, same_server);
  const auto [a_out, b_out] = multi ? hop(first, l.ranks[static_cast<std::size_t>(l.by_server[1][0])]) : hop(first, l.ranks[1]);
  double seconds = 0;
  switch (s.algo) {
    case CollectiveAlgo::ring: {
      if (s.op == CollectiveOp::broadcast || s.op == CollectiveOp::reduce) {
        // A chain of n-1 hops, pipelined in chunks: (n - 2 + chunks) chunk times.
        const double piece = size / (channels * chunks);
        seconds = (n - 2 + chunks) * (std::max(a_in, a_out) + piece * channels / std::min(b_in, b_out * (multi ? l.per_server : 1)));
        break;
      }
      const int steps = ring_steps(s.op, n);
      const double per_rank = size / n;  // bytes each rank sends per step, over all channels
      // Per step: each GPU sends per_rank over NVLink; across servers each NIC carries the
      // channels leaving through it, ceil(channels / g) of them, of per_rank / channels each.
      double step = per_rank / b_in;
      if (multi) step = std::max(step, per_rank / channels * std::ceil(static_cast<double>(channels) / l.per_server) / b_out);
      seconds = steps * ((multi ? a_out : a_in) + step / chunks) + (chunks - 1) * step / chunks;
      break;
    }
    case CollectiveAlgo::nvls: {
      // Up and down S(n+1)/n per GPU through the reduction port, pipelined in chunks.
      const NodeIndex sw = nvls_switch(t, l, s);
      double port = 0;
      for (const LinkIndex k : t.out_links(first)) {
        if (t.link(k).to == sw) port = t.link(k).bandwidth.value() * t.node(sw).nvls_efficiency;
      }
      const double bytes = size * (n + 1.0) / n;
      seconds = (chunks + 1) * (bytes / chunks / port) + 2 * a_in;
      break;
    }
    case CollectiveAlgo::pat: {
      // ceil(log2 n) steps, step k moving min(2^k, n - 2^k) blocks of S/n per rank.
      const auto [a_hop, b_hop] = hop(first, l.ranks[1 % static_cast<std::size_t>(n)]);
      const double bw = multi ? std::min(b_in, b_out) : b_hop;
      for (const int blocks : pat_blocks(n)) seconds += (multi ? a_out : a_hop) + size / n * blocks / bw;
      break;
    }
    case CollectiveAlgo::nvls_tree: {
      // Per chunk: up S/c and down S/(c g) through the reduction port, a ring of 2(m - 1) steps
      // of S/(c g m) on the rail, S/(c g) up and S/c down again. The chunks pipeline behind the
      // busiest link: each port direction carries S/c + S/(c g) per chunk.
      const auto domains = nvls_domains(t, l, s);
      const NodeIndex sw = domains.front().first;
      double port = 0;
      for (const LinkIndex k : t.out_links(first)) {
        if (t.link(k).to == sw) port = t.link(k).bandwidth.value() * t.node(sw).nvls_efficiency;
      }
      const auto m = static_cast<double>(domains.size());
      const auto g = static_cast<double>(domains.front().second.size());
      const double chunk = size / chunks, slice = chunk / g;
      const NodeIndex peer = l.ranks[static_cast<std::size_t>(domains[1].second.front())];
      const auto [a_rail, b_rail] = hop(first, peer);
      const double reduce = (chunk + slice) / port, rail = 2 * (m - 1) * (a_rail + slice / m / b_rail), multicast = (slice + chunk) / port;
      seconds = reduce + rail + multicast + (chunks - 1) * std::max((chunk + slice) / port, 2 * (m - 1) / m * slice / b_rail) + 4 * a_in;
      break;
    }
    case CollectiveAlgo::tree: {
      // In a double binary tree every rank is inner in one tree and a leaf in the other, so
      // its uplink carries S/2 up and S down in one tree and S/2 up in the other: 2S in all,
      // at the link's bandwidth. Filling and draining the pipeline of depth D adds about
      // (2D - 1)/2 chunk periods of S/(chunks B); each level adds a hop's latency up and down.
      // Across servers (NCCL's shape, server_tree) every GPU's NVLink carries 2S, and each
      // channel's NIC 2S / channels.
      const bool servers = multi && l.per_server > 1 && !l.by_server.empty();
      const int depth = servers ? server_tree(l, 0, false).depth : binary_tree(n, false).depth;
      const double bw = multi ? (servers ? std::min(b_in, b_out * channels) : std::min(b_in, b_out)) : b_in;
      const double alpha = std::max(a_in, a_out);
      seconds = 2.0 * depth * alpha + 2.0 * size / bw + (depth - 0.5) * size / (chunks * bw);
      break;
    }
    case CollectiveAlgo::hierarchical: {
      const int g = l.per_server;
      const int m = static_cast<int>(l.by_server.size());
      const double intra = (g - 1) * (a_in + size / g / b_in);
      const double inter = 2.0 * (m - 1) * (a_out + size / (static_cast<double>(g) * m) / b_out);
      seconds = 2 * intra + inter;
      break;
    }
    case CollectiveAlgo::direct: {
      if (s.op == CollectiveOp::send_recv) {
        const auto [a, bw] = hop(first, l.ranks[static_cast<std::size_t>(s.peer)]);
        seconds = a + size / bw;
      } else {
        // Each GPU sends S/n to each peer, all at once: (g-1)/n of S over NVLink inside its
        // server, (n-g)/n of S through its NIC.
        const double per_rank = size;
        double t_in = per_rank * (multi ? (l.per_server - 1.0) / n : (n - 1.0) / n) / b_in;
        double t_out = multi ? per_rank * (n - l.per_server) / static_cast<double>(n) / b_out : 0;
        seconds = (multi ? a_out : a_in) + std::max(t_in, t_out);
      }
      break;
    }
  }
  return sim::ceil_duration_ns(seconds * 1e9);
}

}  // namespace orrery::models
