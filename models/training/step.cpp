#include "models/training/step.hpp"

#include "models/network/collectives.hpp"
#include "models/network/expert_dispatch.hpp"
#include "models/network/nccl.hpp"
#include "models/network/topology.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <unordered_map>

namespace orrery::models {

namespace {

// ---------------------------------------------------------------------------------------
// Cluster spec: "builder:key=value,..." with its unit (server or NVLink domain) counts.

struct ClusterSpec {
  std::string builder;
  std::vector<std::pair<std::string, std::string>> params;
  bool domains = false;  // nvl72: domains x gpus_per_domain; else nodes x gpus_per_node
  Contention contention = Contention::isolated;

  std::string get(std::string_view key, std::string_view fallback) const {
    for (const auto& [k, v] : params) {
      if (k == key) return v;
    }
    return std::string(fallback);
  }
  std::string units_key() const { return domains ? "domains" : "nodes"; }
  std::string per_unit_key() const { return domains ? "gpus_per_domain" : "gpus_per_node"; }
  int units() const { return std::stoi(get(units_key(), "1")); }
  int per_unit() const { return std::stoi(get(per_unit_key(), domains ? "72" : "8")); }
  // The same fabric with `units` units of `per_unit` GPUs.
  std::string scaled(int units, int per_unit) const {
    std::string out = builder + ":" + units_key() + "=" + std::to_string(units) + "," + per_unit_key() + "=" + std::to_string(per_unit);
    for (const auto& [k, v] : params) {
      if (k != units_key() && k != per_unit_key()) out += "," + k + "=" + v;
    }
    return out;
  }
};

ClusterSpec parse_cluster(const std::string& spec) {
  ClusterSpec c;
  const std::size_t colon = spec.find(':');
  c.builder = spec.substr(0, colon);
  c.domains = c.builder == "nvl72";
  if (colon != std::string::npos) {
    std::string_view rest = std::string_view(spec).substr(colon + 1);
    while (!rest.empty()) {
      const std::size_t comma = std::min(rest.find(','), rest.size());
      const std::string_view item = rest.substr(0, comma);
      const std::size_t eq = item.find('=');
      if (eq != std::string_view::npos) c.params.emplace_back(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
      rest = comma < rest.size() ? rest.substr(comma + 1) : std::string_view{};
    }
  }
  return c;
}

// Per-GPU link rates of the cluster's servers: NVLink and NIC, each at its NCCL efficiency
// (models::LinkEfficiency), read from a two-unit instance of the fabric.
struct Rails {
  double nvlink = 0;
  double nic = 0;
};

Rails rails_of(const ClusterSpec& cluster) {
  const Topology t = build_topology(cluster.scaled(2, cluster.per_unit()));
  const LinkEfficiency e;
  Rails r;
  for (const TopoLink& l : t.links()) {
    if (l.kind == LinkKind::nvlink && t.nodes()[l.from].kind == NodeKind::gpu) r.nvlink = std::max(r.nvlink, l.bandwidth.value() * e.nvlink);
    if (l.kind == LinkKind::network && t.nodes()[l.from].kind == NodeKind::nic) r.nic = std::max(r.nic, l.bandwidth.value() * e.network);
  }
  ORRERY_CHECK(r.nvlink > 0 && r.nic > 0, "fabric {} has no NVLink or NIC links", cluster.builder);
  return r;
}

// ---------------------------------------------------------------------------------------
// Communication costs, each simulated once on the flow network of a topology that holds the
// group: GPUs `stride` ranks apart (rank order: tp fastest, then cp, dp, pp).

// Every collective a process has costed, by fabric instance and collective: a run_collective
// result depends only on the topology builder spec and the collective, so a sweep, a plan search
// or an RL policy's stage balancing, which cost the same groups over and over, simulate each one
// once. Results are the same with or without it (each entry holds the time and the flows that
// simulating it took, which CommCost counts as if it had simulated it). Threads share it.
class CollectiveMemo {
 public:
  struct Entry {
    double seconds = 0;
    std::uint64_t flows = 0;
    int mix = 0;  // contention=fabric (CommCost::collective): beside the other kinds 1 simulated together, 2 by link loads; 0 not mixed
  };
  static CollectiveMemo& process() {
    static CollectiveMemo memo;
    return memo;
  }
  template <class Compute>
  Entry get(const std::string& key, Compute&& compute) {
    {
      const std::lock_guard hold(mutex_);
      if (const auto it = entries_.find(key); it != entries_.end()) return it->second;
    }
    const Entry e = compute();  // outside the lock: two threads may both simulate one, with one result
    const std::lock_guard hold(mutex_);
    if (entries_.size() >= kMaxEntries) entries_.clear();  // a bound on memory, never on results
    entries_.emplace(key, e);
    return e;
  }

 private:
  static constexpr std::size_t kMaxEntries = 1u << 18;  // ~64 MiB at most
  std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
};

// The kinds of a plan's communication that cross its groups' GPUs: under contention=fabric
// each runs on the whole fabric together with one of each other kind (CommCost::set_mix).
enum class CommKind : std::uint8_t { none, dp, ep, cp, pp };
constexpr std::size_t kMixKinds = 4;  // dp, ep, cp, pp

class CommCost {
 public:
  explicit CommCost(ClusterSpec cluster, CommModel model = CommModel::nccl) : cluster_(std::move(cluster)), model_(model) {}

  // One collective of each kind a step repeats (its groups: n GPUs `stride` apart), which under
  // contention=fabric a collective of another kind meets on the fabric: all start together, and
  // the collective costs its own end (CollectiveResult::ends). Pipeline sends meet the others as
  // exchanges between stage pairs (each GPU sends to and receives from its partner, as in 1F1B's
  // steady state). Set before the first collective is costed.
  void set_mix(CommKind kind, CollectiveOp op, double bytes, int n, int stride) {
    ORRERY_CHECK(kind != CommKind::none && cache_.empty(), "set_mix after costing");
    if (n > 1 && bytes > 0) mix_[static_cast<std::size_t>(kind) - 1] = Member{op, bytes, n, stride};
  }
  // Whether collectives may be simulated by symmetry classes (CollectiveSpec::symmetry).
  void set_symmetry(bool on) { symmetry_ = on; }
  // The most transfers a kind's plan may hold in a mix simulated together (0: kMixTransfers);
  // past it the mix is costed by link loads.
  void set_mix_transfers(std::size_t most) { mix_transfers_ = most > 0 ? most : kMixTransfers; }

  // `unmixed`: one group's collective on the smallest fabric that holds it, even under
  // contention=fabric (a kind of collective kept out of the mixes).
  double collective(CollectiveOp op, double bytes, int n, int stride, CommKind kind = CommKind::none, bool unmixed = false) {
    if (n <= 1 || bytes <= 0) return 0;
    const bool fabric = cluster_.contention == Contention::fabric && !unmixed;
    // Alone, a group's cost depends on its stride only up to a unit's size; under fabric
    // contention its groups' placement depends on all of it.
    const int stride_key = fabric ? stride : std::min(stride, cluster_.per_unit());
    const auto key = std::make_tuple(static_cast<int>(op), bytes, n, stride_key, static_cast<int>(kind) + (unmixed ? 100 : 0));
    if (const auto it = cache_.find(key); it != cache_.end()) return it->second;
    // contention=fabric: the group's collective with all its copies on the whole fabric, and
    // one of each other kind of the plan beside it, all starting together (set_mix). Its
    // plan holds every transfer of every group of every kind (symmetry classes reduce the
    // run, not the plan; a long ring plans 2k of its steps, run_concurrent). Where a kind's
    // plan passes kMixTransfers, as at frontier scale where even 2k steps of every
    // data-parallel group's 64-channel ring are millions of transfers, the mix is costed by
    // link loads instead (ends_by_link_loads: each kind alone, whole_alone, and the streams the
    // kinds put on its links).
    // Pipeline sends take the whole fabric only beside another kind (alone, a stage pair's
    // send as before).
    const Member self{op, bytes, n, stride};
    const bool fits = fabric && whole_fits(self, kind) && (op != CollectiveOp::send_recv || kind == CommKind::pp);
    std::vector<CollectiveSpec> others;
    std::vector<std::size_t> other_kinds;  // every kind beside it, in or out of `others`
    std::string key_mix;
    bool left_out = false;
    if (fits && kind != CommKind::none) {
      for (std::size_t k = 0; k < kMixKinds; ++k) {
        const auto other = static_cast<CommKind>(k + 1);
        // A kind whose groups stay inside a server (NVLink only) and one with a GPU per server
        // (NIC to NIC) share no link: leaving it out is exact.
        if (other == kind || !mix_[k] || !whole_fits(*mix_[k], other) || disjoint(self, *mix_[k])) continue;
        if (!mix_specs_[k]) mix_specs_[k] = plan_alone(*mix_[k], true).spec;  // once per step: NCCL's choice for it
        other_kinds.push_back(k);
        key_mix += fmt::format("|{}:{}:{:a}:{}:{}", k, static_cast<int>(mix_[k]->op), mix_[k]->bytes, mix_[k]->n, mix_[k]->stride);
        if (too_large_[k] || planned_transfers(*mix_specs_[k]) > mix_transfers_) {
          left_out = true;
          continue;
        }
        others.push_back(*mix_specs_[k]);
      }
    }
    const bool whole = fits && (op != CollectiveOp::send_recv || !other_kinds.empty());
    // Alone, a group's cost depends only on the smallest fabric that holds it; on the whole
    // fabric, on its groups' placement (the stride) and the mix.
    const std::string memo_key =
        fmt::format("{}|{}|{}|{}|{:a}|{}|{}{}", whole ? cluster_.scaled(cluster_.units(), cluster_.per_unit()) : home_fabric(self),
                    static_cast<int>(model_), static_cast<int>(op), n, bytes, whole ? stride : 0, symmetry_ ? 1 : 0,
                    key_mix.empty() ? key_mix : fmt::format("{}|{}", mix_transfers_, key_mix));
    const CollectiveMemo::Entry e = CollectiveMemo::process().get(memo_key, [&] {
      if (model_ == CommModel::nccl_closed || model_ == CommModel::alpha_beta) {  // one group, uncontended, closed form
        CollectiveSpec spec;
        spec.op = op, spec.size = sim::Bytes(bytes), spec.ranks = n;
        place_split_tray(spec, self);
        const Topology& t = fabric_instance(home_fabric(self));
        if (model_ == CommModel::nccl_closed) {
          return CollectiveMemo::Entry{nccl_cost(comm_shape(t, op, pair_ranks(self), "<plan>", "", spec.stride), bytes).time_s, 0};
        }
        spec.algo = op == CollectiveOp::all_to_all || op == CollectiveOp::send_recv ? CollectiveAlgo::direct : CollectiveAlgo::ring;
        if (op == CollectiveOp::send_recv) spec.ranks = pair_ranks(self), spec.peer = spec.ranks - 1;
        return CollectiveMemo::Entry{alpha_beta(t, spec).to_seconds(), 0};
      }
      // Alone on the smallest fabric that holds a group: also every group's cost where its
      // groups stay inside servers and meet no other kind (they share no link: exact, and far
      // cheaper than every copy on the whole fabric).
      const auto alone = [&] {
        const Planned p = plan_alone(self, false);
        const CollectiveResult r = run_collective(fabric_instance(p.fabric), p.spec, p.efficiency);
        return CollectiveMemo::Entry{r.time.to_seconds(), r.flows};
      };
      if (!whole || (other_kinds.empty() && kind != CommKind::none && inside_unit(self))) return alone();
      const Topology& all = fabric_instance(cluster_.scaled(cluster_.units(), cluster_.per_unit()));
      const Planned mine = plan_alone(self, true);
      const auto apart = [&] {
        if (inside_unit(self) || op == CollectiveOp::send_recv) return alone();
        const CollectiveResult r = run_collective(all, mine.spec, mine.efficiency);
        return CollectiveMemo::Entry{r.time.to_seconds(), r.flows};
      };
      if (other_kinds.empty()) return apart();
      // Too large to simulate together: each kind alone (whole_alone) and the streams the kinds
      // put on its links.
      const auto by_loads = [&] {
        std::vector<Member> members{self};
        for (const std::size_t k : other_kinds) members.push_back(*mix_[k]);
        std::vector<std::shared_ptr<const LinkLoad>> loads;
        std::vector<const LinkLoad*> views;
        std::vector<double> scale;
        std::vector<sim::Duration> alone_ends;
        CollectiveMemo::Entry out;
        for (std::size_t j = 0; j < members.size(); ++j) {
          const Planned p = j == 0 ? mine : plan_alone(members[j], true);
          std::shared_ptr<const LinkLoad> load = load_of(p.spec, p.efficiency);
          if (!load && j == 0) return apart();  // even one step of its plan too large for its loads
          if (!load) continue;                   // that kind's, likewise: the mix without it
          // Only this collective's end is wanted: the others' alone times do not enter it.
          sim::Duration end = sim::Duration::max();
          if (j == 0) {
            const CollectiveMemo::Entry a = whole_alone(members[j], p, !load->lockstep());
            end = sim::ceil_duration_ns(a.seconds * 1e9);
            out.flows += a.flows;
          }
          views.push_back(load.get());
          scale.push_back(p.spec.size.value() / load->size);
          alone_ends.push_back(end);
          loads.push_back(std::move(load));
        }
        if (views.size() < 2) return apart();
        out.seconds = ends_by_link_loads(all, views, scale, alone_ends, mine.efficiency, 0).front().to_seconds();
        out.mix = 2;
        return out;
      };
      if (left_out || planned_transfers(mine.spec) > mix_transfers_) return by_loads();
      // The mix shares the links at this collective's efficiencies (NCCL's protocol and NIC
      // shares of the collective costed); the others are its load.
      std::vector<CollectiveSpec> specs{mine.spec};
      for (CollectiveSpec s : others) {
        s.link_latency = mine.spec.link_latency, s.quantum = mine.spec.quantum;
        specs.push_back(std::move(s));
      }
      for (CollectiveSpec& s : specs) s.max_transfers = mix_transfers_;
      try {
        const CollectiveResult r = run_concurrent(all, specs, mine.efficiency, 0);
        return CollectiveMemo::Entry{r.ends.front().to_seconds(), r.flows, 1};
      } catch (const sim::InputError&) {  // a plan past mix_transfers_ that planned_transfers did not foresee
        for (std::size_t j = 0; j < others.size(); ++j) {  // which: costed by loads in later mixes
          try {
            plan_collective(all, specs[j + 1]);
          } catch (const sim::InputError&) {
            too_large_[other_kinds[j]] = true;
          }
        }
        return by_loads();
      }
    });
    flows_ += e.flows;
    if (fabric && kind != CommKind::none) {
      // Beside every other kind on its links (simulated together, or by link loads), apart (even
      // one step of a kind's plan too large for its loads), with none on its links.
      ++mixes_[e.mix == 1 ? 0 : e.mix == 2 ? 1 : !other_kinds.empty() ? 2 : 3];
    }
    return cache_[key] = e.seconds;
  }
  double p2p(double bytes, int stride, CommKind kind = CommKind::none) { return collective(CollectiveOp::send_recv, bytes, 2, stride, kind); }
  // DeepEP's dispatch (or combine) of `tokens` per GPU over an EP group of n ranks `stride`
  // apart, at the line rates of the fabric that holds the group.
  double deepep(ExpertDispatch d, int stride, double tokens, double token_bytes) {
    if (d.ep <= 1 || tokens <= 0) return 0;
    const Topology& topology = fabric_instance(topology_spec_for(d.ep, stride));
    const CommShape shape = comm_shape(topology, CollectiveOp::all_to_all, d.ep);
    d.per_node = d.ep / shape.nodes;
    const double nic = shape.nics > 0 ? shape.net_GBps / shape.nics : 0.0;
    return deepep_dispatch(d, tokens, token_bytes, shape.nvlink_GBps, nic).time_s;
  }
  std::size_t flows() const { return flows_; }
  // Whether a group of n GPUs `stride` apart has a model on this fabric: an NVL72 fabric's
  // domains hold whole compute trays, so a group across domains needs a whole tray's GPUs in each
  // (topology_spec_for) or a share of one that divides it (split_tray_share).
  bool placeable(int n, int stride) const {
    const int g = cluster_.per_unit();
    if (!cluster_.domains || n <= 1 || static_cast<long>(stride) * n <= g || split_tray_share(n, stride) > 0) return true;
    return per_unit_of(stride) % kTray == 0;
  }
  // contention=fabric: how many of the plan's collectives (DP, EP, CP, PP; each size once) were
  // costed beside every other kind that shares their links, simulated together or (a plan past
  // kMixTransfers) by link loads, apart (even a kind's one-step plan too large for its loads),
  // and with no other kind on their links.
  std::array<int, 4> mixes() const { return mixes_; }

 private:
  static constexpr int kTray = 4;
  static constexpr std::size_t kMixTransfers = std::size_t{1} << 21;  // ~2M per kind: ~0.3 GB of plan and routes
  // A kind's plan for its link loads (one step of a ring): ~16M transfers, ~0.8 GB while it is read.
  static constexpr std::size_t kLoadTransfers = std::size_t{1} << 24;
  struct Member {
    CollectiveOp op;
    double bytes;
    int n;
    int stride;
  };
  struct Planned {
    std::string fabric;  // the builder spec of the fabric it runs on alone
    CollectiveSpec spec;
    LinkEfficiency efficiency;
  };
  int gpus() const { return cluster_.units() * cluster_.per_unit(); }
  // Whether each group of `m` is inside one server or NVLink domain (its transfers on NVLink
  // only), or has one GPU in each (NIC to NIC: a GPU's NIC hangs off PCIe, not NVLink).
  bool inside_unit(const Member& m) const {
    const long span = static_cast<long>(m.stride) * (m.op == CollectiveOp::send_recv ? 2 : m.n);
    return span <= cluster_.per_unit() && cluster_.per_unit() % span == 0;
  }
  bool one_per_unit(const Member& m) const { return m.stride >= cluster_.per_unit() && m.stride % cluster_.per_unit() == 0; }
  bool disjoint(const Member& a, const Member& b) const {
    return (inside_unit(a) && one_per_unit(b)) || (one_per_unit(a) && inside_unit(b));
  }
  // The transfers of a spec's plan as planned (about: trees and NVLS as two per rank and
  // channel), to leave a kind out of a mix before planning it; CollectiveSpec::max_transfers
  // stops the rest.
  std::size_t planned_transfers(const CollectiveSpec& s) const {
    const auto n = static_cast<std::size_t>(s.ranks), ch = static_cast<std::size_t>(s.channels > 0 ? s.channels : cluster_.per_unit());
    const auto chunks = static_cast<std::size_t>(std::max(1, s.chunks)), groups = static_cast<std::size_t>(s.groups);
    // Channels unset: a ring per NIC of a server (collectives.hpp), one NIC a GPU here.
    if (s.op == CollectiveOp::all_to_all) return groups * n * (n - 1);
    if (s.op == CollectiveOp::send_recv) return groups * ch;
    // A ring's planned steps (2k where it is extrapolated); a chain's hops.
    const int ring = s.algo == CollectiveAlgo::ring ? ring_steps_planned(s, s.ranks) : 2;
    const auto steps = static_cast<std::size_t>(ring > 0 ? ring : s.ranks - 1);
    return groups * n * steps * ch * chunks;
  }
  // A kind alone, as a mix by link loads needs it (ends_by_link_loads): a lockstep collective
  // (a ring, a tree) with all its groups on the whole fabric (`p`: plan_alone(m, true)); direct
  // sends (`direct`: expert all-to-alls, pipeline sends, rings of one step) and kinds inside
  // servers or NVLink domains as one group alone on the smallest fabric that holds it (for direct
  // sends, what their other groups cost them on shared links comes from the loads).
  CollectiveMemo::Entry whole_alone(const Member& m, const Planned& p, bool direct) {
    const std::string whole = cluster_.scaled(cluster_.units(), cluster_.per_unit());
    const bool one = (inside_unit(m) && m.op != CollectiveOp::send_recv) || direct;
    const std::string key = fmt::format("alone|{}|{}|{}|{}|{:a}|{}|{}", one ? home_fabric(m) : whole, static_cast<int>(model_), static_cast<int>(m.op), m.n,
                                        m.bytes, one ? 0 : m.stride, symmetry_ ? 1 : 0);
    return CollectiveMemo::process().get(key, [&] {
      if (one) {
        const Planned group = plan_alone(m, false);
        const CollectiveResult r = run_collective(fabric_instance(group.fabric), group.spec, group.efficiency);
        return CollectiveMemo::Entry{r.time.to_seconds(), r.flows};
      }
      const CollectiveResult r = run_collective(fabric_instance(whole), p.spec, p.efficiency);
      return CollectiveMemo::Entry{r.time.to_seconds(), r.flows};
    });
  }
  // What a kind with all its groups puts on the whole fabric's links (link_load), for its plan's
  // shape at any size; none where even one step of its plan passes kLoadTransfers.
  std::shared_ptr<const LinkLoad> load_of(const CollectiveSpec& spec, const LinkEfficiency& e) {
    // Efficiencies that differ in their last digits (NCCL's shares computed per size) share one.
    const std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{:.9g}|{:.9g}|{:.9g}", static_cast<int>(spec.op), static_cast<int>(spec.algo), spec.ranks,
                                        spec.groups, spec.stride, spec.channels, spec.chunks, spec.peer, spec.pair_bytes.size(), e.nvlink,
                                        e.pcie, e.network);
    if (const auto it = loads_.find(key); it != loads_.end()) return it->second;
    // At the efficiencies the key names, whichever size asked first (a load that does not depend
    // on the order of the calls).
    const auto rounded = [](double x) { return std::stod(fmt::format("{:.9g}", x)); };
    const LinkEfficiency at{rounded(e.nvlink), rounded(e.pcie), rounded(e.network)};
    CollectiveSpec one = spec;
    one.ring_steps = 1;
    if (planned_transfers(one) > kLoadTransfers) return loads_[key] = nullptr;
    const Topology& all = fabric_instance(cluster_.scaled(cluster_.units(), cluster_.per_unit()));
    one.max_transfers = kLoadTransfers;
    one.ring_steps = 0;
    try {
      return loads_[key] = std::make_shared<const LinkLoad>(link_load(all, one, at));
    } catch (const sim::InputError&) {  // a plan past kLoadTransfers that planned_transfers did not foresee
      return loads_[key] = nullptr;
    }
  }

  // The builder spec of the smallest instance of the fabric that holds one group of `m`: for a
  // pipeline send between NVLink domains, one GPU of the pair in each, two domains of one tray,
  // rank 0 sending to the other domain's first GPU (rank `tray`), NIC to NIC.
  std::string home_fabric(const Member& m) const {
    if (m.op == CollectiveOp::send_recv) return split_tray_pair(m.stride) ? cluster_.scaled(2, kTray) : topology_spec_for(m.n, m.stride);
    if (const int per = split_tray_share(m.n, m.stride); per > 0) return cluster_.scaled(m.n / per, kTray);
    return topology_spec_for(m.n, m.stride);
  }
  // A collective's group with fewer GPUs than a compute tray in each NVLink domain: the GPUs of it
  // each domain holds (one where the group's stride spans a domain), when they divide the tray and
  // the group; else 0. Such a group runs on one tray per domain, its ranks kTray / per apart
  // beside the tray's other GPUs in groups of their own, as the plan lays them out (an
  // expert-data-parallel group under wide expert parallelism inside each domain).
  int split_tray_share(int n, int stride) const {
    const int g = cluster_.per_unit();
    if (!cluster_.domains || g % kTray != 0 || static_cast<long>(stride) * n <= g) return 0;
    const int per = per_unit_of(stride);
    return per < kTray && kTray % per == 0 && n % per == 0 ? per : 0;
  }
  // Its ranks' stride (and the number of such groups at once) on that fabric.
  void place_split_tray(CollectiveSpec& spec, const Member& m) const {
    if (const int per = m.op == CollectiveOp::send_recv ? 0 : split_tray_share(m.n, m.stride); per > 0) spec.groups = spec.stride = kTray / per;
  }
  int pair_ranks(const Member& m) const { return m.op == CollectiveOp::send_recv && split_tray_pair(m.stride) ? kTray + 1 : m.n; }
  // Whether the groups of `m` tile the whole fabric (a pipeline send's stage pairs: an even
  // number of stages).
  bool whole_fits(const Member& m, CommKind kind) const {
    const long n = m.op == CollectiveOp::send_recv ? (kind == CommKind::pp ? 2 : 0) : m.n;
    const long span = static_cast<long>(m.stride) * n;
    return n > 1 && span <= gpus() && gpus() % span == 0;
  }
  // What one group of `m` runs (NCCL's choice and efficiencies for its shape on the smallest
  // fabric that holds it, or the line-rate ring or direct sends) and, with `whole`, with all its
  // groups on the whole fabric (a pipeline send as its stage pairs' exchanges).
  Planned plan_alone(const Member& m, bool whole) {
    Planned out;
    CollectiveSpec& spec = out.spec;
    spec.op = m.op;
    spec.size = sim::Bytes(m.bytes);
    spec.symmetry = symmetry_;
    out.fabric = home_fabric(m);
    spec.ranks = pair_ranks(m);
    spec.peer = spec.ranks - 1;
    place_split_tray(spec, m);  // NCCL's choice for its shape (the whole fabric's layout replaces it below)
    if (model_ == CommModel::nccl) {
      NcclFlows f = nccl_flows(fabric_instance(out.fabric), spec);
      spec = f.spec;
      out.efficiency = f.efficiency;
    } else {
      spec.algo = m.op == CollectiveOp::all_to_all || m.op == CollectiveOp::send_recv ? CollectiveAlgo::direct : CollectiveAlgo::ring;
    }
    if (whole) {
      if (m.op == CollectiveOp::send_recv) {  // both ways between stage pairs, its latency and efficiencies
        spec.op = CollectiveOp::all_to_all;
        spec.algo = CollectiveAlgo::direct;
        spec.size = sim::Bytes(2 * m.bytes);  // S/2 to the one peer
        spec.ranks = 2;
        spec.peer = 1;
      }
      spec.groups = gpus() / spec.ranks;
      spec.stride = m.stride;
    }
    return out;
  }
  // The GPUs of a group `stride` apart that one server or NVLink domain holds, for a group that
  // spans several.
  int per_unit_of(int stride) const {
    const int g = cluster_.per_unit();
    return stride >= g ? 1 : std::max(1, g / stride);
  }
  // A pair `stride` apart with one GPU in each NVLink domain of whole trays.
  bool split_tray_pair(int stride) const {
    const int g = cluster_.per_unit();
    return cluster_.domains && stride >= g && g % kTray == 0;
  }

  // The builder spec of the smallest instance of the fabric that holds the group.
  std::string topology_spec_for(int n, int stride) const {
    const int g = cluster_.per_unit();
    // An NVLink domain of whole compute trays (models/network/topology.cpp): a group inside one
    // takes the first n GPUs of whole trays; across domains, each domain's share must be trays.
    const int tray = cluster_.domains ? kTray : 1;
    if (static_cast<long>(stride) * n <= g) return cluster_.scaled(1, (n + tray - 1) / tray * tray);  // one server or domain
    const int per = per_unit_of(stride);  // GPUs of the group per server
    if (per % tray != 0) {
      throw sim::InputError("<plan>", "", fmt::format("a group of {} GPUs {} apart puts {} in each NVLink domain of {}; Orrery's NVL72 fabric "
                                                      "holds whole trays of {} GPUs: such a group is not modelled yet",
                                                      n, stride, per, cluster_.scaled(cluster_.units(), g), tray));
    }
    if (stride >= g) return cluster_.scaled(n, 1);  // one GPU per server
    return cluster_.scaled((n + per - 1) / per, per);  // a few per server
  }

  const Topology& fabric_instance(const std::string& spec) {
    auto it = topologies_.find(spec);
    if (it == topologies_.end()) it = topologies_.emplace(spec, std::make_unique<Topology>(build_topology(spec))).first;
    return *it->second;
  }

  ClusterSpec cluster_;
  CommModel model_;
  std::map<std::tuple<int, double, int, int, int>, double> cache_;
  std::array<std::optional<Member>, kMixKinds> mix_;
  std::array<std::optional<CollectiveSpec>, kMixKinds> mix_specs_;  // each on the whole fabric (plan_alone)
  bool symmetry_ = true;
  std::array<int, 4> mixes_{};
  std::array<bool, kMixKinds> too_large_{};  // kinds whose plan on the whole fabric passed kMixTransfers
  std::map<std::string, std::shared_ptr<const LinkLoad>> loads_;  // load_of, by plan shape
  std::size_t mix_transfers_ = kMixTransfers;
  std::map<std::string, std::unique_ptr<Topology>> topologies_;  // built for the collectives the memo lacked
  std::size_t flows_ = 0;
};

// ---------------------------------------------------------------------------------------
// Op costs

struct OpCost {
  double compute = 0;  // kernel time
  double comm = 0;     // exposed communication inside the op
  double flops = 0;    // executed by one GPU
  // Of comm, the tensor- and expert-parallel collectives a partner op's compute can hide when
  // the schedule pairs the op (PipeOp::paired).
  double pairable = 0;
  // Of comm, the expert-parallel all-to-alls (moved onto the links as flows by plan.ep_comm).
  double ep = 0;
  // The expert-parallel all-to-alls overlap_ep_comm hides behind the other micro-batch's opposite
  // pass: what an op that runs without such a partner pays besides comm (RankBuilder::alone).
  double alone = 0;
  // CPU time to issue the op's kernels, not yet weighed against the GPU's (issue_bound()).
  double host = 0;
  double seconds() const { return compute + comm; }
  OpCost& operator+=(const OpCost& o) {
    compute += o.compute;
    comm += o.comm;
    flops += o.flops;
    pairable += o.pairable;
    ep += o.ep;
    alone += o.alone;
    host += o.host;
    return *this;
  }
};

// The host issues kernels asynchronously: it runs ahead of the GPU until something makes it wait
// for the device, so over a stretch of work between two such waits the GPU is busy for the
// longer of its own time (kernels and the communication they wait on) and the host's. Issue
// time past the GPU's is added to the kernels' time, and the stretch ends.
void issue_bound(OpCost& c) {
  c.compute += std::max(0.0, c.host - (c.compute + c.comm));
  c.host = 0;
}

struct LayerCost {
  OpCost f, b, w;  // forward, input grads (B), weight grads (W)
};

// What an op's cost grew by since `before` (the forward kernels of a module, to rerun them).
OpCost since(const OpCost& now, const OpCost& before) {
  return {.compute = now.compute - before.compute, .comm = now.comm - before.comm, .flops = now.flops - before.flops,
          .pairable = now.pairable - before.pairable, .ep = now.ep - before.ep, .alone = now.alone - before.alone, .host = now.host - before.host};
}

// Which linear layer a GEMM is, for its precision and LoRA: the kLinearModules (Megatron's
// module names, ParallelPlan::module_precision), the multi-token prediction modules' projection,
// and the layers that stay in bf16 whatever the plan's precision (the router, the LM head).
// MLA's query and key-value projections take linear_qkv's precision but no LoRA adapter (their
// modules are linear_q_proj, linear_kv_down_proj and the like, which a linear_qkv target does not
// match).
enum class Linear : std::uint8_t { qkv, mla_qkv, proj, fc1, fc2, experts, shared_experts, latent, mamba_in, mamba_out, mtp_proj, bf16 };

std::string_view module_name(Linear l) {
  switch (l) {
    case Linear::qkv:
    case Linear::mla_qkv: return "linear_qkv";
    case Linear::proj: return "linear_proj";
    case Linear::fc1: return "linear_fc1";
    case Linear::fc2: return "linear_fc2";
    case Linear::experts: return "experts";
    case Linear::shared_experts: return "shared_experts";
    case Linear::latent: return "latent_proj";
    case Linear::mamba_in: return "mamba_in_proj";
    case Linear::mamba_out: return "mamba_out_proj";
    default: return "";
  }
}

struct Ctx {
  const ModelSpec& m;
  const ParallelPlan& p;
  const CostModel& cost;
  CommCost& comm;
  double tokens;      // per GPU in the tensor-parallel region (the micro-batch's sequence share)
  double seq_tokens;  // per GPU in the sequence region (split by sequence parallelism)
  std::int64_t heads_l, kv_l;
  PrecisionSpec prec;  // the linear layers' GEMMs and their casts
  double overlap;      // the cost model's overlap efficiency
  double overlap_ep;   // and the expert all-to-alls' beside the other micro-batch
  double host_link;    // the GPU's host link per direction, bytes/s (activation offload)
  double host_issue;   // the host's time to issue one kernel, seconds
  double host_launch;  // and each further GEMM of a grouped GEMM's loop
  bool bf16_layer;     // a layer kept in bf16 (plan.bf16_layers): every linear layer so

  void add(OpCost& c, const Kernel& k) const {
    c.compute += cost.time(k).to_seconds();
    c.flops += flops(k).value();
    // One module's issue time (its Python and the launches around it); a grouped GEMM run as a
    // GEMM per product adds its further products, issued by a C++ loop
    // (nvte_multi_stream_cublas_gemm), at host_launch each.
    c.host += host_issue + host_launch * static_cast<double>(launches(k) - 1);
  }
  static std::int64_t n(double v) { return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::llround(v))); }
  Kernel mem(KernelKind kind, double bytes) const { return Kernel::memory_bound(kind, sim::Bytes(bytes), DType::bf16); }
  // The precision a linear layer's GEMMs run in.
  PrecisionSpec precision_of(Linear l) const;
};

// bf16 in a layer kept so (plan.bf16_layers) and for the router and the LM head; else its
// module's precision (plan.module_precision) or the plan's.
PrecisionSpec Ctx::precision_of(Linear l) const {
  if (bf16_layer || l == Linear::bf16) return precision_spec("bf16");
  if (l == Linear::mtp_proj && p.bf16_mtp) return precision_spec("bf16");
  if (const auto it = p.module_precision.find(module_name(l)); it != p.module_precision.end()) return precision_spec(it->second);
  return prec;
}

// The exposed part of `comm` seconds of communication overlapped with `compute` seconds of
// kernels: what the compute does not cover, and at least the share (1 - overlap) that does not
// hide (the transfers' SMs and memory traffic slow the kernels they run beside).
double overlapped(double comm, double compute, double overlap) { return std::max(comm - compute, (1 - overlap) * comm); }

struct Gemm {
  double m;
  std::int64_t n, k;
};

// The casts a low-precision GEMM of an (m x k) input and (m x n) output needs (Transformer Engine's
// recipes, as this model states them): forward, the input cast (read bf16, write the quantized
// copy with its scales twice, row- and column-wise, for dgrad and wgrad); backward, the output
// gradient the same; per-tensor current scaling reads each tensor once more for its amax first.
// The weights' cast (k x n, once per step: the copy is reused by every micro-batch) is charged
// to each micro-batch as its share. A fused kernel that writes its output or its input gradient
// already quantized spares the next GEMM's cast: `input` and `grad` say which this GEMM pays.
struct CastSides {
  bool input = true;  // the forward's input cast
  bool grad = true;   // the backward's output-gradient cast
};
void add_casts(const Ctx& c, const PrecisionSpec& q, LayerCost& lc, double m, double n, double k, double weight_share, CastSides sides = {}) {
  const auto cast = [&](double elements) { return elements * (2 + 2 * q.bytes + (q.amax_pass ? 2 : 0)); };
  c.add(lc.f, c.mem(KernelKind::quantize, (sides.input ? cast(m * k) : 0) + weight_share * cast(k * n)));
  if (sides.grad) c.add(lc.b, c.mem(KernelKind::quantize, cast(m * n)));
}

bool lora_targets(const ParallelPlan& p, Linear t) {
  if (!p.lora.enabled) return false;
  switch (t) {
    case Linear::qkv: return p.lora.qkv;
    case Linear::proj: return p.lora.proj;
    case Linear::fc1: return p.lora.fc1;
    case Linear::fc2: return p.lora.fc2;
    default: return false;
  }
}

// A forward GEMM, and its backward: dgrad (B) and wgrad (W); a linear layer's runs in its
// precision (Ctx::precision_of: the plan's unless the plan says otherwise) with its casts, the
// router's and the LM head's in bf16. With LoRA the base weights are frozen (no wgrad) and a
// targeted layer adds its adapter in bf16: x A (k -> rank) then B (rank -> n) forward; backward
// both dgrads (B) and both wgrads (W).
void add_gemm(const Ctx& c, LayerCost& lc, const Gemm& g, double* gemm_f, double* gemm_bw, Linear target) {
  const PrecisionSpec q = c.precision_of(target);
  const DType t = q.gemm;
  const Kernel f = Kernel::gemm(Ctx::n(g.m), g.n, g.k, t);
  const Kernel b = Kernel::gemm(Ctx::n(g.m), g.k, g.n, t);
  const Kernel w = Kernel::gemm(g.k, g.n, Ctx::n(g.m), t);
  c.add(lc.f, f);
  c.add(lc.b, b);
  *gemm_f += c.cost.time(f).to_seconds();
  *gemm_bw += c.cost.time(b).to_seconds();
  if (!c.p.lora.enabled) {
    c.add(lc.w, w);
    *gemm_bw += c.cost.time(w).to_seconds();
  }
  if (lora_targets(c.p, target)) {
    const std::int64_t r = c.p.lora.rank, m = Ctx::n(g.m);
    for (const Kernel& k : {Kernel::gemm(m, r, g.k, DType::bf16), Kernel::gemm(m, g.n, r, DType::bf16)}) c.add(lc.f, k);
    for (const Kernel& k : {Kernel::gemm(m, r, g.n, DType::bf16), Kernel::gemm(m, g.k, r, DType::bf16)}) c.add(lc.b, k);
    for (const Kernel& k : {Kernel::gemm(r, g.n, m, DType::bf16), Kernel::gemm(g.k, r, m, DType::bf16)}) c.add(lc.w, k);
  }
  if (q.low()) {
    add_casts(c, q, lc, g.m, static_cast<double>(g.n), static_cast<double>(g.k), 1.0 / std::max(1, c.p.micro_batches()));
  }
}

// An MLP's activation over `rows` tokens of fc1's output `width` (each half, for a GLU): one fused
// kernel each way (forward reads fc1's output and writes its own; backward reads both and the
// gradient, writes fc1's output gradient). A clamped GLU (ModelSpec::glu_clamp: GPT-OSS) runs as
// Megatron-Core writes it before that kernel (weighted_bias_quick_geglu_impl,
// megatron/core/fusions/fused_bias_geglu.py, core_v0.16.0 to core_v0.19.0, its dense MLP alike):
// forward, each half clamped (read and written) and torch.cat copying both into a new input;
// backward, each half's masked gradient reads the gradient and its saved input and writes the
// gradient (cat's gradient is two views).
void add_activation(const Ctx& c, OpCost& op, Pass pass, double rows, double width, bool clamped) {
  const double glu = c.m.mlp == MlpKind::swiglu ? 1 : 0;
  const double half = rows * width * 2;  // bytes
  if (pass == Pass::forward) {
    if (clamped) {
      for (int h = 0; h < 2; ++h) c.add(op, c.mem(KernelKind::elementwise, 2 * half));
      c.add(op, c.mem(KernelKind::copy, 2 * 2 * half));
    }
    c.add(op, c.mem(KernelKind::elementwise, (2 + glu) * half));
  } else {
    c.add(op, c.mem(KernelKind::elementwise, (3 + 2 * glu) * half));
    if (clamped) {
      for (int h = 0; h < 2; ++h) c.add(op, c.mem(KernelKind::elementwise, 3 * half));
    }
  }
}

// A Mamba-2 mixer on this GPU (Megatron-Core's MambaMixer; heads and groups split by tp):
// in_proj to z, x, B, C and dt; the causal depthwise conv1d with SiLU over x, B and C; the SSD
// scan of Dao and Gu (arXiv 2405.21060, sec. 6) per chunk of Q tokens as batched GEMMs: C B^T
// per group, the chunk states B^T x, the intra-chunk outputs (C B^T o L) x and the outputs from
// the states C h, each of whose backward computes both operands' gradients; the states passed
// from chunk to chunk (fp32, read and written); the gated RMSNorm; out_proj.
void add_mamba(const Ctx& c, LayerCost& lc, double* gemm_f, double* gemm_bw) {
  const ModelSpec& m = c.m;
  const MambaSpec& s = m.mamba;
  const double T = c.tokens;
  const std::int64_t H = std::max(1, s.heads / c.p.tp), G = std::max(1, s.groups / c.p.tp);
  const std::int64_t P = s.head_dim, N = s.state_dim, Q = s.chunk;
  const std::int64_t inner = H * P, conv = inner + 2 * G * N;
  add_gemm(c, lc, {T, 2 * inner + 2 * G * N + H, m.hidden}, gemm_f, gemm_bw, Linear::mamba_in);
  c.add(lc.f, c.mem(KernelKind::elementwise, T * static_cast<double>(conv) * 2 * 2));
  c.add(lc.b, c.mem(KernelKind::elementwise, T * static_cast<double>(conv) * 2 * 3));
  const std::int64_t chunks = Ctx::n(T / static_cast<double>(Q));
  const Kernel cb = Kernel::gemm(Q, Q, N, DType::bf16, chunks * G);
  const Kernel states = Kernel::gemm(N, P, Q, DType::bf16, chunks * H);
  const Kernel intra = Kernel::gemm(Q, P, Q, DType::bf16, chunks * H);
  const Kernel from_states = Kernel::gemm(Q, P, N, DType::bf16, chunks * H);
  for (const Kernel& k : {cb, states, intra, from_states}) {
    c.add(lc.f, k);
    c.add(lc.b, k);
    c.add(lc.b, k);
  }
  const double state_bytes = static_cast<double>(chunks * H * P * N) * 4 * 2;
  c.add(lc.f, c.mem(KernelKind::elementwise, state_bytes));
  c.add(lc.b, c.mem(KernelKind::elementwise, 2 * state_bytes));
  c.add(lc.f, c.mem(KernelKind::norm, T * static_cast<double>(inner) * 2 * 3));
  c.add(lc.b, c.mem(KernelKind::norm, T * static_cast<double>(inner) * 2 * 5));
  add_gemm(c, lc, {T, m.hidden, inner}, gemm_f, gemm_bw, Linear::mamba_out);
}

// Per-layer CUDA graphs (plan.cuda_graphs naming parts of a layer): the kernels a graphed part
// added since `HostMark` are issued by one graph launch per pass, not one by one from the host.
struct HostMark {
  double f, b, w;
  explicit HostMark(const LayerCost& lc) : f(lc.f.host), b(lc.b.host), w(lc.w.host) {}
};

void graph_since(const Ctx& c, LayerCost& lc, const HostMark& mark, std::string_view scope) {
  if (!c.p.graphed(scope)) return;
  for (const auto& [op, before] : {std::pair{&lc.f, mark.f}, std::pair{&lc.b, mark.b}, std::pair{&lc.w, mark.w}}) {
    if (op->host > before) op->host = before + c.host_issue;
  }
}

LayerCost layer_cost(const Ctx& outer, LayerKind kind) {
  Ctx c = outer;
  c.bf16_layer = outer.bf16_layer || kind.bf16;
  const ModelSpec& m = c.m;
  const ParallelPlan& p = c.p;
  const double T = c.tokens, Ts = c.seq_tokens, h = static_cast<double>(m.hidden);
  const std::int64_t qk = m.qk_head_dim(), hv = m.v_head_dim();
  LayerCost lc;
  double gemm_f = 0, gemm_bw = 0;
  double ep_a2a = 0, ep_a2a_b = 0;  // the MoE's dispatch and combine, forward and backward
  const bool attention = kind.mixer == Mixer::attention;
  // Selective recompute's whole modules (mla_up_proj, mlp, moe): their forward kernels, rerun
  // before the backward.
  const RecomputeModules reruns = rerun_modules(p.recompute_modules, p.recompute);
  OpCost rerun;
  if (kind.mixer == Mixer::mamba) {
    const HostMark mark(lc);
    add_mamba(c, lc, &gemm_f, &gemm_bw);
    graph_since(c, lc, mark, "mamba");
  }
  const HostMark attn_mark(lc);
  // Attention projections.
  if (!attention) {
  } else if (m.mla.enabled()) {
    // The up-projections (from the latents: q_lora_rank, kv_lora_rank) are what mla_up_proj reruns.
    const auto up_proj = [&](const Gemm& g) {
      const OpCost before = lc.f;
      add_gemm(c, lc, g, &gemm_f, &gemm_bw, Linear::mla_qkv);
      if (reruns.mla_up_proj) rerun += since(lc.f, before);
    };
    if (m.mla.q_lora_rank > 0) {
      add_gemm(c, lc, {T, m.mla.q_lora_rank, m.hidden}, &gemm_f, &gemm_bw, Linear::mla_qkv);
      up_proj({T, c.heads_l * qk, m.mla.q_lora_rank});
    } else {
      add_gemm(c, lc, {T, c.heads_l * qk, m.hidden}, &gemm_f, &gemm_bw, Linear::mla_qkv);
    }
    add_gemm(c, lc, {T, m.mla.kv_lora_rank + m.mla.qk_rope_dim, m.hidden}, &gemm_f, &gemm_bw, Linear::mla_qkv);
    up_proj({T, c.heads_l * (m.mla.qk_nope_dim + m.mla.v_head_dim), m.mla.kv_lora_rank});
  } else {
    add_gemm(c, lc, {T, (c.heads_l + 2 * c.kv_l) * qk, m.hidden}, &gemm_f, &gemm_bw, Linear::qkv);
  }
  if (attention) add_gemm(c, lc, {T, m.hidden, c.heads_l * hv}, &gemm_f, &gemm_bw, Linear::proj);
  // Core attention: the micro-batch's sequences (one document each), this GPU's heads; ring
  // context parallelism gives each rank 1/cp of the pairs, Ulysses 1/cp of the heads.
  const bool ulysses = p.cp > 1 && p.cp_kind == CpKind::ulysses;
  const std::int64_t att_heads = ulysses ? c.heads_l / p.cp : c.heads_l;
  const std::int64_t att_kv = ulysses ? std::max<std::int64_t>(1, c.kv_l / p.cp) : c.kv_l;
  std::vector<std::int64_t> docs;
  for (int b = 0; b < p.micro_batch; ++b) {
    if (p.documents.empty()) {
      docs.push_back(p.seq_len);
    } else {
      docs.insert(docs.end(), p.documents.begin(), p.documents.end());
    }
  }
  const double share = p.cp > 1 && !ulysses ? 1.0 / p.cp : 1.0;
  const std::int64_t window = kind.windowed ? m.sliding_window : 0;
  const DType att_t = p.fp8_attention && !c.bf16_layer ? DType::fp8 : DType::bf16;  // a kept layer runs outside the FP8 autocast
  const Kernel af = Kernel::attention(Pass::forward, docs, att_heads, std::min(att_kv, att_heads), qk, true, att_t, hv, window);
  const Kernel ab = Kernel::attention(Pass::backward, docs, att_heads, std::min(att_kv, att_heads), qk, true, att_t, hv, window);
  OpCost att_fwd, att_bwd;  // core attention, forward and backward
  if (!attention) {
  } else if (p.flash_attention) {
    att_fwd = {.compute = c.cost.time(af).to_seconds() * share, .flops = flops(af).value() * share, .host = c.host_issue};
    att_bwd = {.compute = c.cost.time(ab).to_seconds() * share, .flops = flops(ab).value() * share, .host = c.host_issue};
  } else {
    // Unfused attention (Megatron-LM before flash attention): batched GEMMs over every
    // (query, key) pair of the sequence, the causal mask applied to the full s x s scores,
    // which go through memory in 16-bit: scores written by QK^T and read by the fused
    // scale-mask-softmax, its output read by dropout, which writes its output and a 1-byte
    // mask, read by the AV GEMM; backward the reverse. The tensors are those of Korthikanti
    // et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models", Sec. 4.1:
    // 2as^2b for QK^T and for softmax, as^2b for the mask, 2as^2b for dropout's output).
    const std::int64_t s_len = p.seq_len, batch = p.micro_batch * att_heads;
    const double scores = static_cast<double>(batch) * static_cast<double>(s_len) * static_cast<double>(s_len) * share;
    const std::int64_t ctx_heads = Ctx::n(static_cast<double>(batch) * share);
    c.add(att_fwd, Kernel::gemm(s_len, s_len, qk, DType::bf16, ctx_heads));  // QK^T
    c.add(att_fwd, c.mem(KernelKind::softmax, scores * (2 + 2)));
    c.add(att_fwd, c.mem(KernelKind::elementwise, scores * (2 + 2 + 1)));    // dropout
    c.add(att_fwd, Kernel::gemm(s_len, hv, s_len, DType::bf16, ctx_heads));  // AV
    c.add(att_bwd, Kernel::gemm(s_len, s_len, hv, DType::bf16, ctx_heads));  // dP = dO V^T
    c.add(att_bwd, Kernel::gemm(s_len, hv, s_len, DType::bf16, ctx_heads));  // dV = P^T dO
    c.add(att_bwd, c.mem(KernelKind::elementwise, scores * (2 + 1 + 2)));    // dropout
    c.add(att_bwd, c.mem(KernelKind::softmax, scores * (2 + 2 + 2)));
    c.add(att_bwd, Kernel::gemm(s_len, qk, s_len, DType::bf16, ctx_heads));  // dQ = dS K
    c.add(att_bwd, Kernel::gemm(s_len, qk, s_len, DType::bf16, ctx_heads));  // dK = dS^T Q
  }
  const double att_f = att_fwd.compute, att_b = att_bwd.compute;
  lc.f += att_fwd;
  lc.b += att_bwd;
  if (attention) graph_since(c, lc, attn_mark, "attn");
  // MLP.
  const double swiglu = m.mlp == MlpKind::swiglu ? 1 : 0;
  if (kind.ffn == Ffn::none) {
  } else if (kind.ffn == Ffn::dense) {
    const HostMark mark(lc);
    const OpCost before = lc.f;
    const std::int64_t f = m.ffn_hidden / p.tp;
    add_gemm(c, lc, {T, (1 + static_cast<std::int64_t>(swiglu)) * f, m.hidden}, &gemm_f, &gemm_bw, Linear::fc1);
    add_gemm(c, lc, {T, m.hidden, f}, &gemm_f, &gemm_bw, Linear::fc2);
    const bool clamped = m.glu_clamp > 0 && swiglu > 0;
    add_activation(c, lc.f, Pass::forward, T, static_cast<double>(f), clamped);
    add_activation(c, lc.b, Pass::backward, T, static_cast<double>(f), clamped);
    graph_since(c, lc, mark, "mlp");
    if (reruns.mlp) rerun += since(lc.f, before);
  } else {
    const auto& e = m.moe;
    const HostMark moe_mark(lc);
    const OpCost moe_before = lc.f;
    add_gemm(c, lc, {Ts, e.experts, m.hidden}, &gemm_f, &gemm_bw, Linear::bf16);  // router (replicated, bf16)
    // The router's score function and top-k, one fused kernel each way over the fp32 logits
    // (moe_router_fusion, as the performance recipes set it).
    const double logits = Ts * static_cast<double>(e.experts) * 4;
    c.add(lc.f, c.mem(KernelKind::elementwise, 2 * logits));
    c.add(lc.b, c.mem(KernelKind::elementwise, 2 * logits));
    graph_since(c, lc, moe_mark, "moe_router");
    // The dispatch's preprocessing: the routing map reduced to tokens per expert (the sizes the
    // host waits for) and the permutation's row indices.
    const HostMark preprocess_mark(lc);
    c.add(lc.f, c.mem(KernelKind::elementwise, Ts * static_cast<double>(e.experts) * 1 + static_cast<double>(e.experts) * 4));
    c.add(lc.f, c.mem(KernelKind::elementwise, Ts * static_cast<double>(e.experts) * (1 + 4)));
    graph_since(c, lc, preprocess_mark, "moe_preprocess");
    if (e.shared_experts > 0) {
      const std::int64_t fs = e.expert_ffn * e.shared_experts / p.tp;
      add_gemm(c, lc, {T, (1 + static_cast<std::int64_t>(swiglu)) * fs, m.hidden}, &gemm_f, &gemm_bw, Linear::shared_experts);
      add_gemm(c, lc, {T, m.hidden, fs}, &gemm_f, &gemm_bw, Linear::shared_experts);
    }
    // LatentMoE: each token projected down to the latent width before dispatch, up after combine.
    const std::int64_t width = e.latent > 0 ? e.latent : m.hidden;
    if (e.latent > 0) {
      add_gemm(c, lc, {Ts, e.latent, m.hidden}, &gemm_f, &gemm_bw, Linear::latent);
      add_gemm(c, lc, {Ts, m.hidden, e.latent}, &gemm_f, &gemm_bw, Linear::latent);
    }
    // Routed experts: this rank's experts get top_k copies of the EP group's tokens, the busiest
    // rank `expert_imbalance` times the mean.
    const int local = e.experts / p.ep;
    const double routed = Ts * experts_per_token(p, m) * p.expert_imbalance;
    const std::int64_t per_expert = Ctx::n(routed / local);
    const std::vector<std::int64_t> groups(static_cast<std::size_t>(local), per_expert);
    const std::int64_t up = (1 + static_cast<std::int64_t>(swiglu)) * e.expert_ffn;
    for (const auto& [nn, kk, fc1] : {std::tuple{up, width, true}, std::tuple{width, e.expert_ffn, false}}) {
      const PrecisionSpec eq = c.precision_of(Linear::experts);
      const DType t = eq.gemm;
      // Transformer Engine's grouped linear layer runs one GEMM per local expert, each issued by
      // the host (te_general_grouped_gemm, "For now, we only have multi-stream cublas backend":
      // nvte_multi_stream_cublas_gemm loops over them), forward, dgrad and wgrad alike; the fused
      // grouped MLP is one kernel.
      Kernel f = Kernel::grouped_gemm(groups, nn, kk, t);
      Kernel b = Kernel::grouped_gemm(groups, kk, nn, t);
      Kernel w = Kernel::gemm(kk, nn, per_expert, t, local);
      f.launch_per_product = b.launch_per_product = w.launch_per_product = !p.fused_moe_mlp;
      // The fused grouped MLP in MXFP8 (Transformer Engine's ForwardGroupedMLP_CuTeGEMMSwiGLU_MXFP8
      // and BackwardGroupedMLP_CuTeGEMMDSwiGLU_MXFP8, transformer_engine/pytorch/ops/fused/
      // {forward,backward}_grouped_mlp.py, v2.14 to v2.16; grouped_mlp.py from v2.17) still casts
      // fc1's input (tex.group_quantize before its kernel) and fc2's output gradient
      // (group_quantize, or bgrad_group_quantize with a bias); its GLU kernel writes fc2's input
      // quantized row- and column-wise, its dGLU kernel fc1's output gradient. In NVFP4 (v2.17)
      // both of those are cast apart again.
      if (eq.low()) {
        const bool spared = p.fused_moe_mlp && eq.gemm != DType::fp4;
        const CastSides sides = spared ? CastSides{.input = fc1, .grad = !fc1} : CastSides{};
        add_casts(c, eq, lc, routed, static_cast<double>(nn), static_cast<double>(kk), local / static_cast<double>(std::max(1, p.micro_batches())), sides);
      }
      c.add(lc.f, f);
      c.add(lc.b, b);
      gemm_f += c.cost.time(f).to_seconds();
      gemm_bw += c.cost.time(b).to_seconds();
      if (!p.lora.enabled) {  // LoRA: the experts frozen, without adapters
        c.add(lc.w, w);
        gemm_bw += c.cost.time(w).to_seconds();
      }
    }
    const double fe = static_cast<double>(e.expert_ffn);
    const bool clamped = m.glu_clamp > 0 && swiglu > 0 && !p.fused_moe_mlp;  // fused: clamped inside its kernel
    if (!p.fused_moe_mlp) {  // fused: the activation in the GEMMs' epilogues
      add_activation(c, lc.f, Pass::forward, routed, fe, clamped);
      add_activation(c, lc.b, Pass::backward, routed, fe, clamped);
    }
    // Recomputed (moe_act): the activation's forward again before fc2's backward.
    if (reruns.moe_act) add_activation(c, lc.b, Pass::forward, routed, fe, clamped);
    const double wd = static_cast<double>(width);
    c.add(lc.f, c.mem(KernelKind::copy, 2 * routed * wd * 2 * 2));  // permute and unpermute
    c.add(lc.b, c.mem(KernelKind::copy, 2 * routed * wd * 2 * 2));
    // Dispatch and combine over the EP group, forward and backward: NCCL's all-to-all of every
    // token copy, or DeepEP's forwarding kernels.
    const double a2a = p.moe_dispatch == "deepep"
                           ? c.comm.deepep({.ep = p.ep, .per_node = 1, .top_k = std::max(1, static_cast<int>(std::lround(experts_per_token(p, m)))), .max_nodes = 0,
                                             .imbalance = p.expert_imbalance},
                                            ep_stride(p), Ts, wd * 2)
                           : c.comm.collective(CollectiveOp::all_to_all, routed * wd * 2, p.ep, ep_stride(p), CommKind::ep);
    ep_a2a = ep_a2a_b = 2 * a2a;
    // Megatron-Core's all-to-all dispatcher (MoEAlltoAllTokenDispatcher, megatron/core/
    // transformer/moe/token_dispatcher.py, core_v0.15.0 to core_v0.19.0) runs more around those
    // all-to-alls than DeepEP's and HybridEP's fused calls: its preprocess all-gathers the token
    // counts per expert over the EP group (gather_from_sequence_parallel_region), the routing
    // probabilities take an all-to-all of their own beside the tokens' (and its gradient's
    // backward), and with several local experts sort_chunks_by_idxs regroups the received tokens
    // by expert after the dispatch and back before the combine: a kernel each, the probabilities
    // with the tokens, reading and writing every routed token, and each again backward.
    if (p.moe_dispatch != "deepep" && p.ep > 1) {
      const double probs = c.comm.collective(CollectiveOp::all_to_all, routed * 4, p.ep, ep_stride(p), CommKind::ep);
      const double counts = c.comm.collective(CollectiveOp::all_gather, static_cast<double>(e.experts) * 8 * p.ep, p.ep, ep_stride(p), CommKind::ep);
      ep_a2a += probs + counts;
      ep_a2a_b += probs;
      if (local > 1) {
        for (int sort = 0; sort < 2; ++sort) {
          c.add(lc.f, c.mem(KernelKind::copy, 2 * routed * wd * 2));
          c.add(lc.b, c.mem(KernelKind::copy, 2 * routed * wd * 2));
        }
      }
    }
    graph_since(c, lc, moe_mark, "moe");
    if (reruns.moe) rerun += since(lc.f, moe_before);
  }
  // Norms and residual adds, one per sublayer; rotary embedding (hybrid stacks use none:
  // Nemotron-H's attention has no position embedding).
  const double sub = kind.sublayers();
  c.add(lc.f, c.mem(KernelKind::norm, sub * 2 * Ts * h * 2));
  c.add(lc.b, c.mem(KernelKind::norm, sub * 3 * Ts * h * 2));
  // Recomputed (layernorm): the norms not fused into a linear layer, forward again in the backward.
  if (reruns.layernorm) {
    const int norms = unfused_norms(m, kind);
    if (norms > 0) c.add(lc.b, c.mem(KernelKind::norm, norms * 2 * Ts * h * 2));
  }
  c.add(lc.f, c.mem(KernelKind::elementwise, sub * 3 * Ts * h * 2));
  if (attention && m.layer_pattern.empty()) {
    const double rope = T * static_cast<double>(c.heads_l + c.kv_l) * static_cast<double>(qk) * 2 * 2;
    const OpCost before = lc.f;
    c.add(lc.f, c.mem(KernelKind::rope, rope));
    c.add(lc.b, c.mem(KernelKind::rope, rope));
    if (m.mla.enabled() && reruns.mla_up_proj) rerun += since(lc.f, before);
  }

  // Tensor-parallel communication of the layer: with sequence parallelism an all-gather before
  // and a reduce-scatter after attention and the MLP (backward: the reverse, plus the
  // all-gathers wgrad needs); without, an all-reduce after each. Overlap hides it behind GEMMs.
  if (p.tp > 1) {
    const double bytes = T * h * 2;
    double tf = 0, tb = 0;
    if (p.sequence_parallel) {
      const double ag = c.comm.collective(CollectiveOp::all_gather, bytes, p.tp, 1);
      const double rs = c.comm.collective(CollectiveOp::reduce_scatter, bytes, p.tp, 1);
      tf = sub * (ag + rs);
      tb = sub * (2 * ag + rs);
    } else {
      const double ar = c.comm.collective(CollectiveOp::all_reduce, bytes, p.tp, 1);
      tf = sub * ar;
      tb = sub * ar;
    }
    const double xf = p.overlap_tp_comm ? overlapped(tf, gemm_f, c.overlap) : tf;
    const double xb = p.overlap_tp_comm ? overlapped(tb, gemm_bw, c.overlap) : tb;
    lc.f.comm += xf, lc.f.pairable += xf;
    lc.b.comm += xb, lc.b.pairable += xb;
  }
  // Context parallelism: ring passes K and V around (cp - 1 steps, overlapped with the
  // attention steps), and K, V and their gradients backward; Ulysses re-shards heads and
  // sequence with four all-to-alls each way.
  if (p.cp > 1 && attention) {
    const double kv_bytes = T * static_cast<double>(c.kv_l) * static_cast<double>(qk + hv) * 2;
    if (!ulysses) {
      const double step = c.comm.p2p(kv_bytes, p.tp), step_b = c.comm.p2p(2 * kv_bytes, p.tp);
      lc.f.comm += overlapped((p.cp - 1) * step, att_f, c.overlap);
      lc.b.comm += overlapped((p.cp - 1) * step_b, att_b, c.overlap);
    } else {
      const double a2a = c.comm.collective(CollectiveOp::all_to_all, T * static_cast<double>(c.heads_l * qk) * 2, p.cp, p.tp, CommKind::cp);
      lc.f.comm += 4 * a2a;
      lc.b.comm += 4 * a2a;
    }
  }
  // Expert-parallel dispatch and combine: exposed, or with overlap_ep_comm beside the other
  // micro-batch's opposite pass (the forward's behind a backward, the backward's behind a forward).
  // A MoE layer rerun whole (moe) dispatches and combines again in its backward.
  const double ep_b = kind.ffn == Ffn::moe && reruns.moe ? ep_a2a + ep_a2a_b : ep_a2a_b;
  if (p.overlap_ep_comm) {
    const double exposed_f = overlapped(ep_a2a, lc.b.compute + lc.w.compute, c.overlap_ep);
    const double exposed_b = overlapped(ep_b, lc.f.compute, c.overlap_ep);
    lc.f.comm += exposed_f, lc.f.alone += ep_a2a - exposed_f;
    lc.b.comm += exposed_b, lc.b.alone += ep_b - exposed_b;
  } else if (p.ep_comm != "inline") {
    lc.f.comm += ep_a2a, lc.f.ep += ep_a2a;
    lc.b.comm += ep_b, lc.b.ep += ep_b;
  } else {
    lc.f.comm += ep_a2a, lc.f.pairable += ep_a2a;
    lc.b.comm += ep_b, lc.b.pairable += ep_b;
  }
  // A dropless MoE layer's forward makes the host wait for the device: the token counts per
  // expert (the all-to-all's split sizes, the grouped GEMM's groups) are copied to the host and
  // synchronised before the dispatch (Megatron-Core's MoEAlltoAllTokenDispatcher, megatron/core/
  // transformer/moe/token_dispatcher.py: cuda_sync_point "before_ep_alltoall" with EP,
  // "before_finish" without), so its issue time cannot hide behind the next layers' kernels.
  // The backward knows the counts.
  if (kind.ffn == Ffn::moe) issue_bound(lc.f);
  // Recompute: full reruns the layer's forward in the backward; selective reruns core
  // attention when its scores were not kept (flash attention recomputes them anyway).
  if (p.recompute == Recompute::full) {
    lc.b += lc.f;
  } else if (reruns.core_attn && !p.flash_attention) {
    lc.b += att_fwd;
  }
  lc.b += rerun;
  // Activation offload: the layer's kept activations go down the host link after its forward
  // and come back ahead of its backward, on a copy engine beside the compute (no SMs); what the
  // layer's own compute does not cover is exposed.
  if (p.activation_offload == "cpu") {
    const double copy = kind_activation_bytes(p, m, kind) / c.host_link;
    lc.f.comm += std::max(0.0, copy - lc.f.compute);
    lc.b.comm += std::max(0.0, copy - lc.b.compute);
  }
  return lc;
}

// Input embedding (first virtual stage) and output layer with the loss (last).
LayerCost embedding_cost(const Ctx& c) {
  LayerCost lc;
  const double h = static_cast<double>(c.m.hidden);
  c.add(lc.f, c.mem(KernelKind::embedding, 2 * c.seq_tokens * h * 2));
  if (!c.p.lora.enabled) c.add(lc.w, c.mem(KernelKind::embedding, 3 * c.seq_tokens * h * 4));  // frozen under LoRA
  if (c.p.tp > 1) {
    const double t = c.comm.collective(CollectiveOp::reduce_scatter, c.tokens * h * 2, c.p.tp, 1);
    lc.f.comm += t;
  }
  return lc;
}

LayerCost loss_cost(const Ctx& c) {
  LayerCost lc;
  double gemm_f = 0, gemm_bw = 0;
  const double h = static_cast<double>(c.m.hidden);
  const std::int64_t v = (c.m.vocab + c.p.tp - 1) / c.p.tp;
  c.add(lc.f, c.mem(KernelKind::norm, 2 * c.seq_tokens * h * 2));
  c.add(lc.b, c.mem(KernelKind::norm, 3 * c.seq_tokens * h * 2));
  add_gemm(c, lc, {c.tokens, v, c.m.hidden}, &gemm_f, &gemm_bw, Linear::bf16);  // the LM head stays in bf16
  const double logits = c.tokens * static_cast<double>(v);
  if (c.p.cross_entropy == "unfused") {
    // Megatron-Core's vocab-parallel cross entropy op by op (tensor_parallel/cross_entropy.py at
    // core_r0.8.0): bytes per logit forward: the fp32 copy (read 2, write 4), the max (4), the
    // in-place subtraction (8), exp (8), the sum (4), the division into the kept softmax (8);
    // backward: the in-place product with the loss's gradient (8) and the cast back to bf16
    // for the output layer (6).
    for (const double bytes : {6.0, 4.0, 8.0, 8.0, 4.0, 8.0}) c.add(lc.f, c.mem(KernelKind::cross_entropy, logits * bytes));
    for (const double bytes : {8.0, 6.0}) c.add(lc.b, c.mem(KernelKind::cross_entropy, logits * bytes));
  } else {
    c.add(lc.f, c.mem(KernelKind::cross_entropy, logits * (2 + 4)));
    c.add(lc.b, c.mem(KernelKind::cross_entropy, logits * (4 + 2)));
  }
  if (c.p.tp > 1 && c.p.sequence_parallel) {
    const double ag = c.comm.collective(CollectiveOp::all_gather, c.tokens * h * 2, c.p.tp, 1);
    const double rs = c.comm.collective(CollectiveOp::reduce_scatter, c.tokens * h * 2, c.p.tp, 1);
    lc.f.comm += ag;
    lc.b.comm += rs;
  }
  if (c.p.recompute == Recompute::full) lc.b += lc.f;
  return lc;
}

// The multi-token-prediction modules after the loss on the last virtual stage: per module, two
// norms and the input embedding of the shifted tokens, the 2h -> h projection, its block of
// layers (each costed by `layer`), then the shared output layer with its loss.
template <typename LayerFn>
LayerCost mtp_cost(const Ctx& c, const LayerFn& layer) {
  LayerCost lc;
  double gemm_f = 0, gemm_bw = 0;
  const double h = static_cast<double>(c.m.hidden);
  for (int k = 0; k < c.m.mtp_layers; ++k) {
    c.add(lc.f, c.mem(KernelKind::embedding, 2 * c.seq_tokens * h * 2));
    c.add(lc.f, c.mem(KernelKind::norm, 2 * 2 * c.seq_tokens * h * 2));
    c.add(lc.b, c.mem(KernelKind::norm, 2 * 3 * c.seq_tokens * h * 2));
    add_gemm(c, lc, {c.tokens, c.m.hidden / c.p.tp, 2 * c.m.hidden}, &gemm_f, &gemm_bw, Linear::mtp_proj);
    for (LayerKind kind : c.m.mtp_block()) {
      kind.bf16 = c.p.bf16_mtp;
      const LayerCost l = layer(kind);
      lc.f += l.f, lc.b += l.b, lc.w += l.w;
    }
    const LayerCost e = loss_cost(c);
    lc.f += e.f, lc.b += e.b, lc.w += e.w;
  }
  return lc;
}

Ctx make_ctx(const ModelSpec& m, const ParallelPlan& p, const CostModel& cost, CommCost& comm, const GpuSpec& gpu) {
  return Ctx{m, p, cost, comm,
             static_cast<double>(p.micro_batch) * static_cast<double>(p.seq_len) / p.cp,
             static_cast<double>(p.micro_batch) * static_cast<double>(p.seq_len) / p.cp / (p.sequence_parallel && p.tp > 1 ? p.tp : 1),
             m.heads / p.tp,
             std::max<std::int64_t>(1, m.kv_heads / p.tp),
             precision_spec(p.precision),
             cost.overlap_efficiency(),
             cost.overlap_ep_efficiency(),
             gpu.host_link_bandwidth,
             cost.host_issue_s(),
             cost.host_launch_s(),
             false};
}

// Under contention=fabric, what each kind of the step's communication meets on the fabric
// (CommCost::set_mix): one chunk's gradient reduction over the data-parallel group, one layer's
// expert dispatch over the expert-parallel group, Ulysses' all-to-all over the context-parallel
// group, and a micro-batch's activations between pipeline stages. Ring attention's sends
// stay inside their group's links: they are not part of the mix.
void set_step_mix(CommCost& comm, const Ctx& c) {
  const ModelSpec& m = c.m;
  const ParallelPlan& p = c.p;
  const CollectiveOp reduce = p.zero >= 1 ? CollectiveOp::reduce_scatter : CollectiveOp::all_reduce;
  comm.set_mix(CommKind::dp, reduce, trainable_params(m, p, 0).total() * grad_reduce_bytes(p), p.dp * p.cp, p.tp);
  if (m.moe.enabled() && p.ep > 1 && p.moe_dispatch != "deepep") {
    const double width = static_cast<double>(m.moe.latent > 0 ? m.moe.latent : m.hidden);
    comm.set_mix(CommKind::ep, CollectiveOp::all_to_all, c.seq_tokens * experts_per_token(p, m) * p.expert_imbalance * width * 2, p.ep, ep_stride(p));
  }
  if (p.cp > 1 && p.cp_kind == CpKind::ulysses) {
    comm.set_mix(CommKind::cp, CollectiveOp::all_to_all, c.tokens * static_cast<double>(c.heads_l * m.qk_head_dim()) * 2, p.cp, p.tp);
  }
  if (p.pp > 1) comm.set_mix(CommKind::pp, CollectiveOp::send_recv, pipeline_send_bytes(m, p), 2, p.tp * p.cp * p.dp);
}

// One micro-batch's ops of virtual stage vs: its layers (each costed by `layer(kind)`), plus the
// input embedding on the first virtual stage and the output layer with the loss (and the MTP
// modules) on the last.
template <typename LayerFn>
LayerCost chunk_cost(const Ctx& ctx, int vs, const LayerFn& layer) {
  const ModelSpec& m = ctx.m;
  const ParallelPlan& p = ctx.p;
  LayerCost total;
  const int first = first_layer_of(p, m, vs);
  for (int l = first; l < first + layers_of(p, m, vs); ++l) {
    LayerKind kind = m.layer_kind(l);
    kind.bf16 = l < p.bf16_layers_first || l >= m.layers - p.bf16_layers_last;
    const LayerCost lc = layer(kind);
    total.f += lc.f;
    total.b += lc.b;
    total.w += lc.w;
  }
  if (vs == 0) {
    const LayerCost e = embedding_cost(ctx);
    total.f += e.f, total.b += e.b, total.w += e.w;
  }
  if (vs == p.virtual_stages() - 1) {
    const LayerCost e = loss_cost(ctx);
    total.f += e.f, total.b += e.b, total.w += e.w;
    const LayerCost t = mtp_cost(ctx, layer);
    total.f += t.f, total.b += t.b, total.w += t.w;
  }
  // Each op (a micro-batch's pass over the chunk) is one stretch the host issues ahead: with
  // pipeline stages Megatron synchronises the device after each batch of sends and receives
  // (ModelParallelConfig.batch_p2p_sync, on by default), and without them the ops are alike, so
  // running ahead across them gains nothing.
  issue_bound(total.f), issue_bound(total.b), issue_bound(total.w);
  return total;
}

}  // namespace

// Parameters one GPU holds for virtual stage vs (dense ones split by tp, experts by ep).
DpShare chunk_params(const ModelSpec& m, const ParallelPlan& p, int vs) {
  const GpuParams g = chunk_gpu_params(m, p, vs);
  return {g.dense, g.expert};
}

DpShare trainable_params(const ModelSpec& m, const ParallelPlan& p, int vs) {
  const GpuParams g = chunk_gpu_params(m, p, vs);
  return p.lora.enabled ? DpShare{g.trainable, 0.0} : DpShare{g.dense, g.expert};
}

DpGroups dp_groups(const ParallelPlan& p) {
  DpGroups d{.dense = p.dp * p.cp, .dense_stride = p.tp};
  if (p.ep > 1) d.expert = static_cast<int>(std::lround(expert_dp(p))), d.expert_stride = ep_stride(p) * p.ep;
  else d.expert = d.dense, d.expert_stride = d.dense_stride;
  return d;
}

namespace {
// The plan's data-parallel groups as `comm` costs them: an experts' group that the fabric model
// cannot place (in each NVL72 domain a share of a compute tray that does not divide it, such as 3
// of its 4 GPUs) is costed as the dense parameters' group, its traffic spread over whole trays.
DpGroups placed_dp_groups(const ParallelPlan& p, const CommCost& comm) {
  DpGroups d = dp_groups(p);
  if (!comm.placeable(d.expert, d.expert_stride)) d.expert = d.dense, d.expert_stride = d.dense_stride;
  return d;
}
}  // namespace

double optimizer_params(const ParallelPlan& p, const DpShare& share) {
  if (p.zero < 1) return share.total();
  const DpGroups d = dp_groups(p);
  return share.dense / d.dense + share.expert / d.expert;
}

std::string_view to_string(Contention c) { return c == Contention::fabric ? "fabric" : "isolated"; }

CommModel closed_form_of(CommModel model) {
  if (model == CommModel::nccl) return CommModel::nccl_closed;
  if (model == CommModel::flows) return CommModel::alpha_beta;
  return model;
}

class FabricCosts::Impl {
 public:
  Impl(const std::string& spec, CommModel model) : comm(parse_cluster(spec), model) {}
  CommCost comm;
};

FabricCosts::FabricCosts(const std::string& topology_spec, CommModel model) : impl_(std::make_unique<Impl>(topology_spec, model)) {}
FabricCosts::~FabricCosts() = default;
double FabricCosts::collective(CollectiveOp op, double bytes, int n, int stride) { return impl_->comm.collective(op, bytes, n, stride); }
double FabricCosts::p2p(double bytes, int stride) { return impl_->comm.p2p(bytes, stride); }

DpGroups FabricCosts::dp_groups_of(const ParallelPlan& plan) const { return placed_dp_groups(plan, impl_->comm); }

double FabricCosts::dp_collective(CollectiveOp op, const DpShare& share, double bytes_per_param, const DpGroups& groups) {
  // Without expert parallelism the experts are replicated like the rest: one collective.
  if (!groups.experts_apart()) {
    return groups.dense > 1 ? impl_->comm.collective(op, share.total() * bytes_per_param, groups.dense, groups.dense_stride) : 0.0;
  }
  double t = share.dense > 0 && groups.dense > 1 ? impl_->comm.collective(op, share.dense * bytes_per_param, groups.dense, groups.dense_stride) : 0.0;
  if (share.expert > 0 && groups.expert > 1) {
    t += impl_->comm.collective(op, share.expert * bytes_per_param, groups.expert, groups.expert_stride, CommKind::none, true);
  }
  return t;
}

std::vector<ChunkOpCosts> chunk_op_costs(const StepScenario& sc, const CostModel& cost, FabricCosts& fabric) {
  const ModelSpec& m = sc.model;
  const ParallelPlan& p = sc.plan;
  const Ctx ctx = make_ctx(m, p, cost, fabric.impl_->comm, sc.gpu);
  std::map<int, LayerCost> cache;
  const auto layer = [&](LayerKind kind) {
    auto it = cache.find(kind.key());
    if (it == cache.end()) it = cache.emplace(kind.key(), layer_cost(ctx, kind)).first;
    return it->second;
  };
  const auto op = [](const OpCost& c) { return OpTime{c.compute, c.comm}; };
  std::vector<ChunkOpCosts> out;
  for (int vs = 0; vs < p.virtual_stages(); ++vs) {
    const LayerCost lc = chunk_cost(ctx, vs, layer);
    out.push_back({op(lc.f), op(lc.b), op(lc.w), lc.f.flops + lc.b.flops + lc.w.flops, layers_of(p, m, vs), chunk_params(m, p, vs),
                   trainable_params(m, p, vs)});
  }
  return out;
}

double pipeline_send_bytes(const ModelSpec& m, const ParallelPlan& p) {
  const double seq_tokens = static_cast<double>(p.micro_batch) * static_cast<double>(p.seq_len) / p.cp / (p.sequence_parallel && p.tp > 1 ? p.tp : 1);
  return seq_tokens * static_cast<double>(m.hidden) * 2;
}

std::vector<LayerLinearCost> layer_linear_costs(const StepScenario& sc, const CostModel& cost) {
  const ModelSpec& m = sc.model;
  const ParallelPlan& p = sc.plan;
  CommCost comm(parse_cluster(sc.topology));
  const Ctx ctx = make_ctx(m, p, cost, comm, sc.gpu);
  // The layer's attention as layer_cost() costs it, to take out.
  const std::vector<std::int64_t> docs(static_cast<std::size_t>(p.micro_batch), p.seq_len);
  const bool ulysses = p.cp > 1 && p.cp_kind == CpKind::ulysses;
  const std::int64_t heads = ulysses ? ctx.heads_l / p.cp : ctx.heads_l;
  const std::int64_t kv = std::min(ulysses ? std::max<std::int64_t>(1, ctx.kv_l / p.cp) : ctx.kv_l, heads);
  const double share = p.cp > 1 && !ulysses ? 1.0 / p.cp : 1.0;
  const double att_f = cost.time(Kernel::attention(Pass::forward, docs, heads, kv, m.qk_head_dim(), true, DType::bf16, m.v_head_dim())).to_seconds() * share;
  const double att_b = cost.time(Kernel::attention(Pass::backward, docs, heads, kv, m.qk_head_dim(), true, DType::bf16, m.v_head_dim())).to_seconds() * share;
  std::vector<LayerLinearCost> out;
  for (const bool moe : {false, true}) {
    if (moe && !m.moe.enabled()) continue;
    ParallelPlan q = p;
    q.recompute = Recompute::none;  // recompute is added back by the caller per micro-batch
    q.flash_attention = true;       // the attention taken out is the fused kernel's, costed per document by the caller
    const Ctx c2{m, q, cost, comm, ctx.tokens, ctx.seq_tokens, ctx.heads_l, ctx.kv_l, ctx.prec, ctx.overlap, ctx.overlap_ep, ctx.host_link, ctx.host_issue, ctx.host_launch, false};
    const LayerCost lc = layer_cost(c2, LayerKind{Mixer::attention, moe ? Ffn::moe : Ffn::dense, false});
    out.push_back({ctx.tokens, lc.f.seconds() - att_f, lc.b.seconds() - att_b, lc.w.seconds(), moe});
  }
  return out;
}

double collective_seconds(const std::string& topology_spec, CollectiveOp op, double bytes, int n, int stride) {
  CommCost comm(parse_cluster(topology_spec));
  return comm.collective(op, bytes, n, stride);
}

LinkRates link_rates(const std::string& topology_spec) {
  const ClusterSpec c = parse_cluster(topology_spec);
  const Rails r = rails_of(c);
  return {r.nvlink, r.nic, c.per_unit()};
}

int cluster_gpus(const std::string& topology_spec) {
  const ClusterSpec c = parse_cluster(topology_spec);
  return c.units() * c.per_unit();
}

double step_model_flops(const ModelSpec& m, const ParallelPlan& p) {
  const double s = static_cast<double>(p.seq_len);
  double pairs = 0;  // causal query-key pairs of one sequence
  if (p.documents.empty()) {
    pairs = s * (s + 1) / 2;
  } else {
    for (const std::int64_t d : p.documents) pairs += static_cast<double>(d) * static_cast<double>(d + 1) / 2;
  }
  // Attention layers (the MTP modules' too), windowed ones over their window's pairs.
  double windowed = 0;
  const auto window_pairs = [&](std::int64_t l) {
    const auto x = static_cast<double>(l), w = static_cast<double>(m.sliding_window);
    return l <= m.sliding_window ? x * (x + 1) / 2 : w * (w + 1) / 2 + (x - w) * w;
  };
  if (m.sliding_window > 0) {
    if (p.documents.empty()) windowed = window_pairs(p.seq_len);
    for (const std::int64_t d : p.documents) windowed += window_pairs(d);
  }
  double attention_pairs = 0;
  for (int l = 0; l < m.layers; ++l) {
    const LayerKind k = m.layer_kind(l);
    if (k.mixer == Mixer::attention) attention_pairs += k.windowed ? windowed : pairs;
  }
  for (const LayerKind k : m.mtp_block()) {
    if (k.mixer == Mixer::attention) attention_pairs += m.mtp_layers * pairs;
  }
  const double attention = attention_pairs * 2 * static_cast<double>(m.qk_head_dim() + m.v_head_dim()) * m.heads;
  const double matmul = s * 2 * static_cast<double>(m.active_matmul_params());
  if (!p.lora.enabled) return 3 * (matmul + attention) * p.global_batch;
  // LoRA: each adapter x A B (lora_layer_params on the whole model, tp 1) does 2 FLOPs a
  // parameter a token forward.
  ParallelPlan whole = p;
  whole.tp = 1;
  double adapters = 0;
  for (int l = 0; l < m.layers; ++l) adapters += lora_layer_params(m, whole, m.layer_kind(l));
  return (2 * matmul + 3 * attention + 3 * s * 2 * adapters) * p.global_batch;
}

sim::InputError step_overflow(const StepScenario& sc, const sim::DurationOverflow& e) {
  const ParallelPlan& p = sc.plan;
  return sim::InputError(sc.source, "/plan",
                         fmt::format("{} with seq_len {}, micro_batch {} and global_batch {} on {}: {}; expected a shorter seq_len, "
                                     "a smaller batch or a faster GPU",
                                     sc.model.name, p.seq_len, p.micro_batch, p.global_batch, sc.gpu.name, e.what()));
}

namespace {
StepResult run_step_unchecked(const StepScenario& sc, const CostModel& cost, const PipelineSchedule& schedule, const StepOptions& options);
}  // namespace

StepResult run_step(const StepScenario& sc, const CostModel& cost, const PipelineSchedule& schedule, const StepOptions& options) {
  try {
    return run_step_unchecked(sc, cost, schedule, options);
  } catch (const sim::DurationOverflow& e) {
    throw step_overflow(sc, e);
  }
}

namespace {

// Checks the model and the plan on the cluster.
void check_scenario(const StepScenario& sc, const ClusterSpec& cluster) {
  const ModelSpec& m = sc.model;
  const ParallelPlan& p = sc.plan;
  validate_model(m, sc.source, "/model");
  validate_plan(p, m, cluster.units() * cluster.per_unit(), sc.source, "/plan");
  validate_precision(p, sc.gpu, sc.source, "/plan");
  validate_offload(p, m, sc.gpu, sc.source, "/plan");
}

// The schedule's order of ops per stage, on a valid scenario; `costs` are one chunk's mean op
// times (the schedules that simulate the pipeline to order it use them).
PipelinePlan scheduled_order(const StepScenario& sc, const PipelineSchedule& schedule, const PipelineShape::Costs& costs) {
  const ModelSpec& m = sc.model;
  const ParallelPlan& p = sc.plan;
  PipelineShape shape = pipeline_shape(p);
  shape.costs = costs;
  PipelinePlan order = schedule.plan(shape, sc.source, "/plan/schedule");
  if (p.activation_offload != "none") check_host_memory(estimate_memory(p, m, order, fp8_any_layout(sc.gpu)), p, m, sc.gpu, sc.source, "/plan");
  return order;
}

// Op costs per virtual stage, by pass. With reuse, a layer's cost is computed once per kind
// (LayerKind); without, every layer of every op of every rank is costed afresh.
class ChunkCosts {
 public:
  ChunkCosts(const Ctx& ctx, bool reuse) : ctx_(ctx), reuse_(reuse) {
    if (reuse_) {
      for (int vs = 0; vs < ctx_.p.virtual_stages(); ++vs) chunk_costs_.push_back(chunk(vs));
    }
  }
  // Virtual stage vs's ops for one micro-batch.
  LayerCost of(int vs) { return reuse_ ? chunk_costs_[static_cast<std::size_t>(vs)] : chunk(vs); }
  // A virtual stage's mean op times (B and W apart; W none when nothing is trained).
  PipelineShape::Costs mean() {
    PipelineShape::Costs c{0, 0, 0};
    const int n = ctx_.p.virtual_stages();
    for (int vs = 0; vs < n; ++vs) {
      const LayerCost lc = of(vs);
      c.f += lc.f.seconds() / n, c.b += lc.b.seconds() / n, c.w += lc.w.seconds() / n;
    }
    return c;
  }

 private:
  LayerCost chunk(int vs) {
    const auto layer = [&](LayerKind kind) {
      if (!reuse_) return layer_cost(ctx_, kind);
      auto it = layer_cache_.find(kind.key());
      if (it == layer_cache_.end()) it = layer_cache_.emplace(kind.key(), layer_cost(ctx_, kind)).first;
      return it->second;
    };
    return chunk_cost(ctx_, vs, layer);
  }

  const Ctx ctx_;
  const bool reuse_;
  std::map<int, LayerCost> layer_cache_;
  std::vector<LayerCost> chunk_costs_;
};

sim::Duration dur(double s) { return sim::ceil_duration_ns(s * 1e9); }

// The latency that makes a transfer of `wire_bytes` at `capacity`, alone, take `isolated_s`.
sim::Duration latency_for(double isolated_s, double wire_bytes, double capacity) {
  return dur(std::max(0.0, isolated_s - wire_bytes / capacity));
}

// A simulated GPU's own links, NVLink and NIC, one per direction.
struct RankLinks {
  sim::LinkId nvl_out, nvl_in, nic_out, nic_in;
};

// One simulated rank's tasks.
struct RankTasks {
  std::vector<sim::TaskId> f, b, w;  // by vs * mbs + mb (b: input grads or full backward; its end)
  std::vector<sim::TaskId> b_entry;  // the backward's first task (where its inputs arrive)
  std::vector<sim::TaskId> f_entry;
  sim::TaskId last_op{}, optimizer{};
  std::vector<std::pair<sim::TaskId, double>> ops;  // (task, exposed comm inside) for the breakdown
  std::vector<sim::TaskId> ep;                      // expert all-to-alls as flows (plan.ep_comm), between its ops
  double optimizer_s = 0;
};

// What the steps of one emulated training step share: the scenario and its costs, the task graph
// of the simulated ranks, and the flow network their transfers outside the ops run on.
struct StepGraph {
  StepGraph(const StepScenario& scenario, const CostModel& cost_model, const StepOptions& step_options, const ClusterSpec& cluster,
            const PipelinePlan& plan_order, CommCost& comm_cost, ChunkCosts& chunk_costs);

  std::size_t idx(int vs, int mb) const { return static_cast<std::size_t>(vs * mbs + mb); }
  // A data-parallel bucket on (stage, replica) over the dense parameters' group or the experts'
  // (DpGroups): a flow through the GPU's links that, alone, keeps them busy for exactly the
  // collective's simulated time (a ring keeps its NICs busy throughout), so that a pipeline send
  // on the same link shares it.
  sim::TaskId dp_transfer(std::string_view name, int stage, int r, CollectiveOp op, double bytes, bool experts, double* isolated_s = nullptr) {
    const int n = experts ? groups.expert : groups.dense;
    const int stride = experts ? groups.expert_stride : groups.dense_stride;
    // The experts' rings are costed alone (with their own tray's other groups): under
    // contention=fabric, only the dense parameters' meet the other kinds on the fabric.
    const double isolated = comm.collective(op, bytes, n, stride, CommKind::dp, experts);
    if (isolated_s != nullptr) *isolated_s += isolated;
    const sim::TaskId t = dp_transfer_task(name, stage, r, isolated, bytes, static_cast<long>(n) * stride > gpn);
    if (options.keep_graph) {  // the group: the stage's ranks `stride` apart from this one
      result.comms.push_back({.task = t, .p2p = false, .op = op, .bytes = bytes, .rank = global_rank(stage, r), .peer = 0,
                              .group_first = global_rank(stage, r % stride), .group_size = n, .group_stride = stride});
    }
    return t;
  }
  // What a compute task executes (kept with the graph, for the Chakra export).
  void note_work(sim::TaskId t, double flops, double bytes) {
    if (!options.keep_graph) return;
    const std::size_t i = sim::index_of(t);
    if (result.task_flops.size() <= i) result.task_flops.resize(i + 1, 0.0), result.task_bytes.resize(i + 1, 0.0);
    result.task_flops[i] = flops;
    result.task_bytes[i] = bytes;
  }
  // The global rank of replica r of a stage (replicas: tp fastest, then cp, dp).
  int global_rank(int stage, int r) const { return stage * p.tp * p.cp * p.dp + r; }
  sim::TaskId dp_transfer_task(std::string_view name, int stage, int r, double isolated, double bytes, bool over_nic) {
    if (r == 0) {
      dp_bytes[static_cast<std::size_t>(stage)] += bytes;
      dp_busy[static_cast<std::size_t>(stage)] += isolated;
    }
    const RankLinks& l = links[static_cast<std::size_t>(stage)][static_cast<std::size_t>(r)];
    const std::array<sim::LinkId, 2> route = over_nic ? std::array{l.nic_out, l.nic_in} : std::array{l.nvl_out, l.nvl_in};
    return g.add_transfer(name, route, sim::Bytes(isolated * (over_nic ? rails.nic : rails.nvlink)));
  }
  // One GPU's share of expert-parallel all-to-alls that take `isolated` seconds alone on the
  // fabric, as a flow on its NIC (the EP group spans servers) or NVLink; plan.ep_comm "lina"
  // gives it strict priority over the data-parallel buckets there (a weight of 10^4).
  sim::TaskId ep_transfer(std::string_view name, int stage, int r, double isolated) {
    const RankLinks& l = links[static_cast<std::size_t>(stage)][static_cast<std::size_t>(r)];
    const bool nic = static_cast<long>(p.ep) * ep_stride(p) > gpn;
    const std::array<sim::LinkId, 2> route = nic ? std::array{l.nic_out, l.nic_in} : std::array{l.nvl_out, l.nvl_in};
    return g.add_transfer(name, route, sim::Bytes(isolated * (nic ? rails.nic : rails.nvlink)), sim::Duration::zero(), p.ep_comm == "lina" ? 1e4 : 1.0);
  }
  // A transfer of the activations (forward) or their gradients (backward) from one stage's GPU
  // to the next's.
  sim::TaskId pp_send(std::string name, int from, int to, int r) {
    const RankLinks& a = links[static_cast<std::size_t>(from)][static_cast<std::size_t>(r)];
    const RankLinks& b = links[static_cast<std::size_t>(to)][static_cast<std::size_t>(r)];
    const std::array<sim::LinkId, 2> route = pp_over_nic ? std::array{a.nic_out, b.nic_in} : std::array{a.nvl_out, b.nvl_in};
    const sim::TaskId t = g.add_transfer(name, route, sim::Bytes(act_bytes), latency_for(p2p, act_bytes, pp_over_nic ? rails.nic : rails.nvlink));
    if (options.keep_graph) {
      result.comms.push_back({.task = t, .p2p = true, .op = CollectiveOp::send_recv, .bytes = act_bytes, .rank = global_rank(from, r),
                              .peer = global_rank(to, r)});
    }
    return t;
  }

  const StepScenario& sc;
  const ModelSpec& m;
  const ParallelPlan& p;
  const CostModel& cost;
  const StepOptions& options;
  const PipelinePlan& order;
  CommCost& comm;
  ChunkCosts& costs;
  const int mbs;
  const PipelineShape shape;  // where each virtual stage runs
  const int vstages;
  // Communication outside the ops: pipeline transfers and data-parallel gradients/parameters.
  const double act_bytes;
  const int pp_stride;
  const double p2p;
  const int dp_group;
  const DpGroups groups;
  // The task graph: one rank per stage (reuse) or every rank.
  StepResult result;
  sim::TaskGraph& g;
  const int replicas;
  // Transfers outside the ops (pipeline sends, data-parallel buckets) run as flows on each
  // simulated GPU's own links, NVLink and NIC, one per direction, so that what shares a link
  // slows down: a pipeline send behind a gradient bucket on the same NIC. Alone, each takes
  // exactly the time of its communication simulated on the fabric (above).
  sim::Engine engine;
  sim::FlowNetwork network;
  const Rails rails;
  const int gpn;
  const bool pp_over_nic;
  std::vector<std::vector<RankLinks>> links;
  std::vector<double> dp_bytes, dp_busy;  // the first replica's
  // The pipeline's fill before a stage's first forward: the earlier stages' first forwards and
  // their sends (computed once per stage: without reuse every rank asks).
  double fill_before(int stage) {
    if (fill_.empty()) {
      fill_.assign(static_cast<std::size_t>(p.pp), 0.0);
      for (int st = 1; st < p.pp; ++st) {
        const auto i = static_cast<std::size_t>(st);
        fill_[i] = fill_[i - 1] + costs.of(shape.virtual_stage(st - 1, 0)).f.seconds() + p2p;
      }
    }
    return fill_[static_cast<std::size_t>(stage)];
  }
  std::vector<double> fill_;
  const CollectiveOp reduce_op;
  std::vector<std::vector<RankTasks>> ranks;
  const bool split;
  double hw_flops = 0;
};

StepGraph::StepGraph(const StepScenario& scenario, const CostModel& cost_model, const StepOptions& step_options, const ClusterSpec& cluster,
                     const PipelinePlan& plan_order, CommCost& comm_cost, ChunkCosts& chunk_costs)
    : sc(scenario),
      m(scenario.model),
      p(scenario.plan),
      cost(cost_model),
      options(step_options),
      order(plan_order),
      comm(comm_cost),
      costs(chunk_costs),
      mbs(p.micro_batches()),
      shape(pipeline_shape(p)),
      vstages(p.virtual_stages()),
      act_bytes(pipeline_send_bytes(m, p)),
      pp_stride(p.tp * p.cp * p.dp),
      p2p(p.pp > 1 ? comm.p2p(act_bytes, pp_stride, CommKind::pp) : 0.0),
      dp_group(p.dp * p.cp),
      groups(placed_dp_groups(p, comm_cost)),
      g(result.graph),
      replicas(options.reuse ? 1 : p.tp * p.cp * p.dp),
      network(engine),
      rails(rails_of(cluster)),
      gpn(cluster.per_unit()),
      pp_over_nic(static_cast<long>(pp_stride) >= gpn),
      links(static_cast<std::size_t>(p.pp)),
      dp_bytes(static_cast<std::size_t>(p.pp), 0.0),
      dp_busy(static_cast<std::size_t>(p.pp), 0.0),
      reduce_op(p.zero >= 1 ? CollectiveOp::reduce_scatter : CollectiveOp::all_reduce),
      ranks(static_cast<std::size_t>(p.pp), std::vector<RankTasks>(static_cast<std::size_t>(replicas))),
      split(std::any_of(order.front().begin(), order.front().end(), [](const PipeOp& op) { return op.kind == PipeOpKind::backward_input; })) {
  result.micro_batches = mbs;
  for (int stage = 0; stage < p.pp; ++stage) {
    for (int r = 0; r < replicas; ++r) {
      links[static_cast<std::size_t>(stage)].push_back({network.add_link(sim::BytesPerSecond(rails.nvlink), sim::Duration::zero()),
                                                        network.add_link(sim::BytesPerSecond(rails.nvlink), sim::Duration::zero()),
                                                        network.add_link(sim::BytesPerSecond(rails.nic), sim::Duration::zero()),
                                                        network.add_link(sim::BytesPerSecond(rails.nic), sim::Duration::zero())});
    }
  }
}

// The compute stream of a simulated rank (recording its global rank when the graph is kept).
sim::StreamId add_rank_stream(StepGraph& step, const std::string& device, int stage, int replica) {
  const sim::StreamId s = step.g.add_stream(device, "compute");
  if (step.options.keep_graph) {
    step.result.stream_rank.resize(sim::index_of(s) + 1, -1);
    step.result.stream_rank[sim::index_of(s)] = step.options.reuse ? -1 : step.global_rank(stage, replica);
  }
  return s;
}

// One simulated rank's tasks, in stream order: its ops as the schedule orders them, each split
// into layer pieces where data-parallel buckets overlap it, the buckets themselves, then the
// gradient reduction left over, the optimizer and the parameter gather after it.
struct RankBuilder {
  RankBuilder(StepGraph& step, int stage_index, int replica);
  // Every task of the rank, top to bottom.
  void build() {
    add_step_start_gathers();
    for (std::size_t i = 0; i < ops.size(); ++i) add_op(i);
    add_step_end();
  }

  // Data-parallel transfers of a rank run one after another (NCCL's one stream).
  sim::TaskId chain(sim::TaskId t) {
    if (last_dp) g.add_dependency(*last_dp, t);
    last_dp = t;
    return t;
  }
  // A data-parallel collective of `share`: the dense parameters' over their group, then, where
  // expert parallelism gives the routed experts a group of their own, theirs over it (Megatron-
  // Core reduces and gathers them in buckets of their own, after the dense ones).
  struct DpTasks {
    sim::TaskId first, last;
  };
  // `beside_compute`: the collective runs while the rank computes (overlapped buckets and
  // gathers), so the share of it that does not hide (overlap.dp) slows the compute pieces that
  // follow (slow_down).
  DpTasks dp_transfer(const std::string& name, CollectiveOp op, const DpShare& share, double bytes_per_param, bool beside_compute,
                      double* isolated_out = nullptr) {
    const DpGroups& gr = s.groups;
    const bool apart = gr.experts_apart();
    double isolated = 0;
    const sim::TaskId first = chain(s.dp_transfer(name, stage, r, op, (apart ? share.dense : share.total()) * bytes_per_param, false, &isolated));
    DpTasks out{first, first};
    if (apart && share.expert > 0 && gr.expert > 1) {
      out.last = chain(s.dp_transfer(name + " (experts)", stage, r, op, share.expert * bytes_per_param, true, &isolated));
    }
    if (beside_compute) interference += (1 - s.cost.overlap_dp_efficiency()) * isolated;
    if (isolated_out != nullptr) *isolated_out += isolated;
    return out;
  }
  // A compute piece of `seconds` that runs beside the data-parallel collectives issued before it:
  // longer by their unhidden share, at most (1 - overlap.dp) of its own time (a collective runs
  // beside the piece for no longer than the piece), the rest left to the pieces after it.
  // (The fit's finite differences step overlap.dp past 1, where the share turns negative and the
  // same bound applies from below.)
  double slow_down(double seconds) {
    const double bound = (1 - s.cost.overlap_dp_efficiency()) * seconds;
    const double extra = bound >= 0 ? std::min(interference, bound) : std::max(interference, bound);
    interference -= extra;
    return seconds + extra;
  }
  // The op that completes a chunk's gradients for its micro-batch: the backward, or W when
  // the schedule splits B and W.
  bool completes_grads(const PipeOp& op) const { return op.kind == PipeOpKind::backward || op.kind == PipeOpKind::backward_weight; }
  // ZeRO-3 also partitions the parameters: every forward and every backward (B) op gathers its
  // chunk's parameters again, for every micro-batch (ZeRO paper sec. 7.2.3; PyTorch FSDP
  // FULL_SHARD, Zhao et al. VLDB'23, which frees them after the forward). W needs only the
  // activations and the output gradients, not the weights, so it gathers nothing.
  bool gathers_params(const PipeOp& op) const { return zero3 && op.kind != PipeOpKind::backward_weight; }
  // Whether op i's layers each send their gradient bucket as soon as they are done.
  bool reduces_in_buckets(std::size_t i) const {
    const PipeOp& op = ops[i];
    return completes_grads(op) && (grads_per_micro_batch || i == last_grad_op[static_cast<std::size_t>(op.chunk)]) && p.overlap_grad_reduce &&
           dp_group > 1;
  }
  int pieces_of(std::size_t i) const {
    const PipeOp& op = ops[i];
    const int vs = s.shape.virtual_stage(stage, op.chunk);
    const bool buckets = reduces_in_buckets(i);
    const bool gated_zero3 = gathers_params(op) && p.overlap_param_gather;
    return buckets || gated_zero3 || ep_flows(op, vs) ? std::max(1, layers_of(p, m, vs)) : 1;
  }
  // Whether op i runs without a partner of the opposite pass to hide its expert all-to-alls
  // behind (overlap_ep_comm): Megatron-Core's combined 1F1B pairs each forward with the backward
  // of an earlier micro-batch, but runs the forwards before the rank's first backward (the
  // warm-up, with one micro-batch more than 1F1B's) and the backwards after its last forward
  // (the cool-down) alone ("The forward step for the first microbatch is executed alone, no a2a
  // overlapping": combined_1f1b_schedule_for_no_pipelining and _for_interleaved_pipelining,
  // megatron/core/pipeline_parallel/combined_1f1b.py, core_v0.19.0).
  bool alone(std::size_t i) const {
    const PipeOp& op = ops[i];
    if (op.kind == PipeOpKind::forward) return i < first_backward;
    return op.kind != PipeOpKind::backward_weight && (last_forward == ops.size() || i > last_forward);
  }
  // Whether op's expert-parallel all-to-alls run as flows beside the buckets, layer by layer.
  bool ep_flows(const PipeOp& op, int vs) const {
    if (p.ep_comm == "inline") return false;
    const LayerCost lc = s.costs.of(vs);
    return (op.kind == PipeOpKind::forward ? lc.f.ep : op.kind == PipeOpKind::backward_weight ? lc.w.ep : lc.b.ep + (op.kind == PipeOpKind::backward ? lc.w.ep : 0)) > 0;
  }

  void add_step_start_gathers();
  void issue_gather(std::size_t i, int piece, const sim::TaskId* after);
  void add_op(std::size_t i);
  void add_unoverlapped_gather(const PipeOp& op, const char* tag, int vs);
  void issue_zero3_gathers(std::size_t i, int piece, int pieces, bool gated_zero3);
  void record_op(const PipeOp& op, int vs, sim::TaskId entry, sim::TaskId t);
  void add_step_end();

  StepGraph& s;
  const ModelSpec& m;
  const ParallelPlan& p;
  sim::TaskGraph& g;
  const int stage;
  const int r;
  const int dp_group;
  RankTasks& rt;
  const std::string device;
  const sim::StreamId compute;
  // Parameter all-gathers of the updated shards (ZeRO-1 and -2) overlapped with the forward:
  // one bucket per layer, issued in order on the comm stream at the start of the step; the
  // chunk's first forward runs layer by layer, each layer after its bucket. ZeRO-3 gathers
  // before every op instead (below).
  const bool zero3;
  const bool gather_buckets;
  std::vector<std::vector<sim::TaskId>> gathers;
  std::optional<sim::TaskId> last_dp;
  std::vector<bool> first_forward_seen;
  // The chunk's last backward-side op (its gradients are then complete).
  std::vector<std::size_t> last_grad_op;
  // The rank's first backward and last forward op (ops.size() where it has none).
  std::size_t first_backward, last_forward;
  const std::vector<PipeOp>& ops;
  // ZeRO-2 and -3 partition the gradients, so each micro-batch's gradients are
  // reduce-scattered as soon as its backward produces them (Rajbhandari et al., "ZeRO", SC'20,
  // sec. 5.2; DeepSpeed stage 2 and 3 with gradient accumulation), not once per step from a
  // full accumulation buffer (ZeRO-1, Megatron's distributed optimizer).
  const bool grads_per_micro_batch;
  // ZeRO-3, overlapped: one all-gather per layer piece of each op. Prefetch is bounded one
  // piece ahead, as FSDP's forward/backward prefetch of the next unit with
  // `limit_all_gathers` (torch.distributed.fsdp API docs: memory of only the instance
  // computing and the next one, whose all-gather is prefetched): the gather for the
  // stage's j-th compute piece is issued when piece j-1 is (once piece j-2 is done), so at
  // most two layers' full parameters are in flight (estimate_memory counts them). Issued
  // before piece j-1's gradient bucket, so a backward's next gather is not stuck behind it.
  std::vector<sim::TaskId> pieces_done;                              // the stage's compute pieces so far, in stream order
  std::map<std::pair<std::size_t, int>, sim::TaskId> zero3_gathers;  // (op, piece) -> its gather
  std::optional<sim::TaskId> prev;
  std::vector<sim::TaskId> blocking;  // an unoverlapped collective the next op waits for (none or one)
  std::vector<sim::TaskId> reduces;
  // Seconds of overlapped data-parallel collectives' unhidden share not yet charged to a compute
  // piece (slow_down); what is left after the last piece slows nothing.
  double interference = 0;
};

RankBuilder::RankBuilder(StepGraph& step, int stage_index, int replica)
    : s(step),
      m(step.m),
      p(step.p),
      g(step.g),
      stage(stage_index),
      r(replica),
      dp_group(step.dp_group),
      rt(step.ranks[static_cast<std::size_t>(stage_index)][static_cast<std::size_t>(replica)]),
      device(step.options.reuse ? fmt::format("stage{}", stage_index) : fmt::format("stage{}.rank{}", stage_index, replica)),
      compute(add_rank_stream(step, device, stage_index, replica)),
      zero3(dp_traffic_stage(p) >= 3 && dp_group > 1),
      gather_buckets(p.zero >= 1 && !zero3 && p.overlap_param_gather && dp_group > 1),
      gathers(static_cast<std::size_t>(step.shape.chunks)),
      first_forward_seen(static_cast<std::size_t>(step.shape.chunks), false),
      last_grad_op(static_cast<std::size_t>(step.shape.chunks), 0),
      first_backward(step.order[static_cast<std::size_t>(stage_index)].size()),
      last_forward(step.order[static_cast<std::size_t>(stage_index)].size()),
      ops(step.order[static_cast<std::size_t>(stage_index)]),
      grads_per_micro_batch(dp_traffic_stage(p) >= 2 && dp_group > 1) {
  rt.f.assign(static_cast<std::size_t>(s.vstages * s.mbs), sim::TaskId{});
  rt.b = rt.f;
  rt.w = rt.f;
  rt.b_entry = rt.f;
  rt.f_entry = rt.f;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (completes_grads(ops[i])) last_grad_op[static_cast<std::size_t>(ops[i].chunk)] = i;
    if (ops[i].kind == PipeOpKind::forward) last_forward = i;
    const bool backward = ops[i].kind == PipeOpKind::backward || ops[i].kind == PipeOpKind::backward_input;
    if (backward && first_backward == ops.size()) first_backward = i;
  }
}

// ZeRO-1 and -2, overlapped: every chunk's parameter buckets, issued at the step's start. They
// slow this GPU's compute only once it has some: a later stage idles through the pipeline's fill
// (the earlier stages' first forwards and their sends) while its gathers run.
void RankBuilder::add_step_start_gathers() {
  if (!gather_buckets) return;
  double gathers_s = 0;
  for (int c = 0; c < s.shape.chunks; ++c) {
    const int vs = s.shape.virtual_stage(stage, c);
    const int n = std::max(1, layers_of(p, m, vs));
    const DpShare share = trainable_params(m, p, vs) / n;
    for (int piece = 0; piece < n; ++piece) {
      gathers[static_cast<std::size_t>(c)].push_back(dp_transfer(fmt::format("{} param all-gather vs{} bucket {}", device, vs, piece + 1),
                                                                 CollectiveOp::all_gather, share, param_gather_bytes(p), false, &gathers_s)
                                                         .last);
    }
  }
  interference += (1 - s.cost.overlap_dp_efficiency()) * std::max(0.0, gathers_s - s.fill_before(stage));
}

// ZeRO-3, overlapped: the gather of op i's layer piece, once, after `after` when given.
void RankBuilder::issue_gather(std::size_t i, int piece, const sim::TaskId* after) {
  if (i >= ops.size() || !gathers_params(ops[i]) || !p.overlap_param_gather || zero3_gathers.count({i, piece}) > 0) return;
  const PipeOp& op = ops[i];
  const int vs = s.shape.virtual_stage(stage, op.chunk);
  const int n = pieces_of(i);
  const DpTasks ag = dp_transfer(
      fmt::format("{} param all-gather {}{} vs{} bucket {}", device, op.kind == PipeOpKind::forward ? "F" : "B", op.micro_batch, vs, piece + 1),
      CollectiveOp::all_gather, chunk_params(m, p, vs) / n, param_gather_bytes(p), true);
  if (after != nullptr) g.add_dependency(*after, ag.first);
  zero3_gathers[{i, piece}] = ag.last;
}

// Op i of the stage: its compute pieces, the gathers they wait for and the buckets they send.
void RankBuilder::add_op(std::size_t i) {
  const PipeOp& op = ops[i];
  const int vs = s.shape.virtual_stage(stage, op.chunk);
  const LayerCost lc = s.costs.of(vs);
  OpCost oc;
  const char* tag = "F";
  switch (op.kind) {
    case PipeOpKind::forward: oc = lc.f; break;
    case PipeOpKind::backward: oc = lc.b, oc += lc.w, tag = "BW"; break;
    case PipeOpKind::backward_input: oc = lc.b, tag = "B"; break;
    case PipeOpKind::backward_weight: oc = lc.w, tag = "W"; break;
  }
  // A paired op's tensor- and expert-parallel collectives run while its partner of the opposite
  // pass computes (DualPipe's overlapped pairs, STP's braids).
  if (op.paired && oc.pairable > 0) {
    const double partner = op.kind == PipeOpKind::forward ? lc.b.compute : lc.f.compute;
    oc.comm += overlapped(oc.pairable, partner, s.cost.overlap_efficiency()) - oc.pairable;
    oc.pairable = 0;
  }
  if (alone(i)) oc.comm += oc.alone;
  s.hw_flops += oc.flops;
  // The op that completes a chunk's gradients runs layer by layer when gradient reduction
  // overlaps: each layer's bucket is reduced as soon as that layer is done (Megatron's
  // bucketed overlap), so only the last bucket waits after the backward. ZeRO-1 does this
  // for the chunk's last such op; ZeRO-2 and -3 for every micro-batch's.
  const bool buckets = reduces_in_buckets(i);
  const bool gated = op.kind == PipeOpKind::forward && gather_buckets && !first_forward_seen[static_cast<std::size_t>(op.chunk)];
  if (op.kind == PipeOpKind::forward) first_forward_seen[static_cast<std::size_t>(op.chunk)] = true;
  const bool gated_zero3 = gathers_params(op) && p.overlap_param_gather;
  const int pieces = gated ? std::max(1, layers_of(p, m, vs)) : pieces_of(i);
  // With plan.ep_comm, each piece's all-to-alls leave the op and run as a flow after it, on the
  // GPU's NVLink or NIC beside the gradient buckets; the next piece waits for them.
  const double ep_s = p.ep_comm == "inline" ? 0.0 : oc.ep;
  oc.comm -= ep_s;
  const DpShare bucket_params = trainable_params(m, p, vs) / pieces;
  if (gathers_params(op) && !p.overlap_param_gather) add_unoverlapped_gather(op, tag, vs);
  std::optional<sim::TaskId> entry;
  sim::TaskId t{}, last{};
  for (int piece = 0; piece < pieces; ++piece) {
    if (zero3 && p.overlap_param_gather) issue_zero3_gathers(i, piece, pieces, gated_zero3);
    t = g.add_compute(pieces == 1 ? fmt::format("{}{} vs{}", tag, op.micro_batch, vs) : fmt::format("{}{} vs{} part {}", tag, op.micro_batch, vs, piece + 1),
                      compute, dur(slow_down(oc.seconds() / pieces)));
    rt.ops.emplace_back(t, oc.comm / pieces);
    s.note_work(t, oc.flops / pieces, 0);
    if (!entry) entry = t;
    if (prev) g.add_dependency(*prev, t);
    prev = t;
    for (const sim::TaskId b : blocking) g.add_dependency(b, t);
    blocking.clear();
    pieces_done.push_back(t);
    if (gated) g.add_dependency(gathers[static_cast<std::size_t>(op.chunk)][static_cast<std::size_t>(piece)], t);
    if (gated_zero3) g.add_dependency(zero3_gathers.at({i, piece}), t);
    sim::TaskId done = t;  // what the next piece and the pipeline wait for: its compute, or its all-to-alls
    if (buckets) {
      const DpTasks red =
          dp_transfer(fmt::format("{} grad reduce vs{} bucket {}", device, vs, piece + 1), s.reduce_op, bucket_params, grad_reduce_bytes(p), true);
      g.add_dependency(t, red.first);
      reduces.push_back(red.last);
    }
    if (ep_s > 0) {
      done = s.ep_transfer(fmt::format("{} EP all-to-all {}{} vs{} part {}", device, tag, op.micro_batch, vs, piece + 1), stage, r, ep_s / pieces);
      g.add_dependency(t, done);
      prev = done;
      rt.ep.push_back(done);
    }
    last = done;
  }
  // ZeRO-2 and -3 without overlap: each micro-batch's gradients are reduce-scattered after
  // the op, and the next op waits for it.
  if (completes_grads(op) && grads_per_micro_batch && !p.overlap_grad_reduce) {
    const DpTasks red =
        dp_transfer(fmt::format("{} grad reduce {}{} vs{}", device, tag, op.micro_batch, vs), s.reduce_op, trainable_params(m, p, vs),
                    grad_reduce_bytes(p), false);
    g.add_dependency(t, red.first);
    reduces.push_back(red.last);
    blocking = {red.last};
  }
  record_op(op, vs, *entry, last);
}

// ZeRO-3 without overlap: the op's whole chunk is gathered after the previous op ends, on
// the op's critical path.
void RankBuilder::add_unoverlapped_gather(const PipeOp& op, const char* tag, int vs) {
  const DpTasks ag = dp_transfer(fmt::format("{} param all-gather {}{} vs{}", device, tag, op.micro_batch, vs), CollectiveOp::all_gather,
                                 chunk_params(m, p, vs), param_gather_bytes(p), false);
  if (prev) g.add_dependency(*prev, ag.first);
  for (const sim::TaskId b : blocking) g.add_dependency(b, ag.first);
  blocking = {ag.last};
}

// ZeRO-3, overlapped, before piece `piece` of op i's `pieces`.
void RankBuilder::issue_zero3_gathers(std::size_t i, int piece, int pieces, bool gated_zero3) {
  // Piece j = pieces_done.size() is next: its gather (issued with piece j-1, except the
  // stage's first) and piece j+1's, which may start once piece j-1 is done.
  const sim::TaskId* before_prev = pieces_done.size() >= 2 ? &pieces_done[pieces_done.size() - 2] : nullptr;
  const sim::TaskId* before = pieces_done.empty() ? nullptr : &pieces_done.back();
  if (gated_zero3) issue_gather(i, piece, before_prev);
  if (piece + 1 < pieces) {
    if (gated_zero3) issue_gather(i, piece + 1, before);
  } else {
    issue_gather(i + 1, 0, before);
  }
}

// Where the pipeline's dependencies find the op: its first piece (entry) and its last (t).
void RankBuilder::record_op(const PipeOp& op, int vs, sim::TaskId entry, sim::TaskId t) {
  const std::size_t k = s.idx(vs, op.micro_batch);
  if (op.kind == PipeOpKind::forward) {
    rt.f[k] = t;
    rt.f_entry[k] = entry;
  } else if (op.kind == PipeOpKind::backward_weight) {
    rt.w[k] = t;
  } else {
    rt.b[k] = t;
    rt.b_entry[k] = entry;
  }
}

// After the last op: the gradient reduction not yet sent, the optimizer, and (ZeRO-1 and -2
// unoverlapped) the parameter gather.
void RankBuilder::add_step_end() {
  rt.last_op = *prev;
  if (!p.overlap_grad_reduce && !grads_per_micro_batch && dp_group > 1) {
    DpShare params;
    for (int c = 0; c < s.shape.chunks; ++c) params += trainable_params(m, p, s.shape.virtual_stage(stage, c));
    const DpTasks red = dp_transfer(fmt::format("{} grad reduce", device), s.reduce_op, params, grad_reduce_bytes(p), false);
    g.add_dependency(rt.last_op, red.first);
    reduces.push_back(red.last);
  }
  DpShare params;
  int layers = 0;
  for (int c = 0; c < s.shape.chunks; ++c) {
    const int vs = s.shape.virtual_stage(stage, c);
    params += trainable_params(m, p, vs), layers += layers_of(p, m, vs);
  }
  const double updated = optimizer_params(p, params);
  const Kernel opt = Kernel::optimizer(Ctx::n(updated));
  rt.optimizer_s = p.optimizer_offload == "cpu" ? offloaded_optimizer_seconds(p, s.sc.gpu, updated, layers) : s.cost.time(opt).to_seconds();
  rt.optimizer = g.add_compute("optimizer", compute, dur(rt.optimizer_s));
  s.note_work(rt.optimizer, 0, static_cast<double>(opt.params) * kAdamBytesPerParam);
  g.add_dependency(rt.last_op, rt.optimizer);
  for (const sim::TaskId red : reduces) g.add_dependency(red, rt.optimizer);
  // ZeRO-1 and -2 gather the updated shards after the optimizer when not overlapped; ZeRO-3
  // keeps its parameters sharded until the next step's first gather.
  if (p.zero >= 1 && !zero3 && !p.overlap_param_gather && dp_group > 1) {
    const DpTasks ag = dp_transfer(fmt::format("{} param all-gather", device), CollectiveOp::all_gather, params, param_gather_bytes(p), false);
    g.add_dependency(rt.optimizer, ag.first);
  }
}

// Pipeline dependencies between stages, through a transfer of the activations (forward) or
// their gradients (backward) from one stage's GPU to the next's.
void add_pipeline_sends(StepGraph& s) {
  sim::TaskGraph& g = s.g;
  for (int r = 0; r < s.replicas; ++r) {
    for (int vs = 0; vs < s.vstages; ++vs) {
      for (int mb = 0; mb < s.mbs; ++mb) {
        const int stage = s.shape.slot(vs, mb).stage;
        RankTasks& me = s.ranks[static_cast<std::size_t>(stage)][static_cast<std::size_t>(r)];
        const std::size_t k = s.idx(vs, mb);
        // Between two virtual stages on one GPU (the bottom of a V), nothing is sent.
        if (vs > 0) {
          const int from = s.shape.slot(vs - 1, mb).stage;
          RankTasks& up = s.ranks[static_cast<std::size_t>(from)][static_cast<std::size_t>(r)];
          if (from != stage) {
            const sim::TaskId send = s.pp_send(fmt::format("send F{} vs{}->{}", mb, vs - 1, vs), from, stage, r);
            g.add_dependency(up.f[s.idx(vs - 1, mb)], send);
            g.add_dependency(send, me.f_entry[k]);
          } else {
            g.add_dependency(up.f[s.idx(vs - 1, mb)], me.f_entry[k]);
          }
        }
        if (vs + 1 < s.vstages) {
          const int from = s.shape.slot(vs + 1, mb).stage;
          RankTasks& down = s.ranks[static_cast<std::size_t>(from)][static_cast<std::size_t>(r)];
          if (from != stage) {
            const sim::TaskId send = s.pp_send(fmt::format("send B{} vs{}->{}", mb, vs + 1, vs), from, stage, r);
            g.add_dependency(down.b[s.idx(vs + 1, mb)], send);
            g.add_dependency(send, me.b_entry[k]);
          } else {
            g.add_dependency(down.b[s.idx(vs + 1, mb)], me.b_entry[k]);
          }
        }
        g.add_dependency(me.f[k], me.b_entry[k]);
      }
    }
  }
}

// Runs the step's graph to its end (with each link's load over time when the graph is kept).
void execute(StepGraph& s, sim::Executor& exec, std::vector<LinkSample>& samples) {
  const StepOptions& options = s.options;
  const int replicas = s.replicas;
  if (options.keep_graph) {
    exec.set_link_load_sink([&samples, &options, replicas](sim::LinkId l, sim::Time at, sim::BytesPerSecond load) {
      const std::uint32_t i = sim::index_of(l);
      const auto per_rank = static_cast<std::uint32_t>(4 * replicas);
      const std::uint32_t stage = i / per_rank, r = (i % per_rank) / 4, which = i % 4;
      static constexpr std::array<const char*, 4> names = {"NVLink out", "NVLink in", "NIC out", "NIC in"};
      samples.push_back({options.reuse ? fmt::format("stage{} {}", stage, names[which]) : fmt::format("stage{}.rank{} {}", stage, r, names[which]),
                         at, load.value()});
    });
  }
  exec.start();
  s.engine.run();
  ORRERY_CHECK(exec.finished(), "step graph did not finish: {} of {} tasks", exec.completed(), s.g.task_count());
  s.result.step_time = exec.makespan();
}

// Breakdown per stage (the first replica stands for its stage), and the step's bubble, tail and
// exposed communication.
void add_breakdown(StepGraph& s, const sim::Executor& exec) {
  const ParallelPlan& p = s.p;
  StepResult& result = s.result;
  const double step = result.step_time.to_seconds();
  double bubble_sum = 0, exposed_sum = 0;
  for (int stage = 0; stage < p.pp; ++stage) {
    const RankTasks& rt = s.ranks[static_cast<std::size_t>(stage)][0];
    StageBreakdown b;
    b.stage = stage;
    // Summed in whole nanoseconds (the spans' own unit), so a stage without gaps has no bubble at all.
    sim::Duration busy_ns = sim::Duration::zero(), first_ns = s.result.step_time, last_ns = sim::Duration::zero();
    for (const auto& [t, comm_s] : rt.ops) {
      const sim::Span& span = exec.span(t);
      const sim::Duration len = span.end - span.start;
      busy_ns += len;
      b.exposed_comm_s += comm_s;
      b.compute_s += len.to_seconds() - comm_s;
      first_ns = std::min(first_ns, span.start.since_start());
      last_ns = std::max(last_ns, span.end.since_start());
    }
    // The expert all-to-alls between the ops are exposed communication, not bubble.
    sim::Duration ep_ns = sim::Duration::zero();
    for (const sim::TaskId t : rt.ep) ep_ns += exec.span(t).end - exec.span(t).start;
    const double busy = busy_ns.to_seconds(), first = first_ns.to_seconds(), last = last_ns.to_seconds(), ep_s = ep_ns.to_seconds();
    b.exposed_comm_s += ep_s;
    b.bubble_s = std::max(0.0, (last_ns - first_ns - busy_ns - ep_ns).to_seconds());
    const sim::Span& o = exec.span(rt.optimizer);
    b.optimizer_s = (o.end - o.start).to_seconds();
    const double waited_dp = std::max(0.0, o.start.since_start().to_seconds() - last) + first;  // reduce before, gathers after start
    b.exposed_comm_s += waited_dp;
    b.compute_s += b.optimizer_s;
    b.idle_s = std::max(0.0, step - (busy + ep_s + b.bubble_s + b.optimizer_s + waited_dp));
    b.dp_bytes = s.dp_bytes[static_cast<std::size_t>(stage)];
    b.dp_comm_s = s.dp_busy[static_cast<std::size_t>(stage)];
    bubble_sum += b.bubble_s;
    exposed_sum += b.exposed_comm_s;
    result.stages.push_back(b);
  }
  result.bubble_fraction = bubble_sum / p.pp / step;
  double last_op_end = 0;
  for (const auto& stage_ranks : s.ranks) {
    for (const RankTasks& rt : stage_ranks) last_op_end = std::max(last_op_end, exec.span(rt.last_op).end.since_start().to_seconds());
  }
  result.tail_s = step - last_op_end;
  result.exposed_comm_fraction = exposed_sum / p.pp / step;
}

// The step's throughput, FLOPs and utilisation, memory, and what simulating it took.
void add_figures(StepGraph& s, const sim::Executor& exec, std::vector<LinkSample>& samples) {
  const ModelSpec& m = s.m;
  const ParallelPlan& p = s.p;
  StepResult& result = s.result;
  const double step = result.step_time.to_seconds();
  result.tokens_per_s = static_cast<double>(p.global_batch) * static_cast<double>(p.seq_len) / step;
  result.model_flops = step_model_flops(m, p);
  // Every replica of a stage (tp x cp x dp ranks) executes what the simulated ones did.
  result.hardware_flops = s.hw_flops * (p.tp * p.cp * p.dp) / s.replicas;
  const double gpus = p.gpus();
  result.tflops_per_gpu = result.model_flops / step / gpus / 1e12;
  result.mfu = result.model_flops / step / gpus / s.sc.gpu.peak(DType::bf16).value();
  result.hfu = result.hardware_flops / step / gpus / s.sc.gpu.peak(DType::bf16).value();
  result.memory = estimate_memory(p, m, s.order, fp8_any_layout(s.sc.gpu));
  result.oom = out_of_memory(result.memory, s.sc.gpu);
  result.tasks = s.g.task_count();
  result.flows = s.comm.flows() + s.network.flows_started();
  result.comm_mixes = s.comm.mixes();
  result.ranks_simulated = static_cast<std::size_t>(p.pp * s.replicas);
  if (s.options.keep_graph) {
    result.spans = exec.spans();
    result.link_loads = std::move(samples);
  } else {
    result.graph = sim::TaskGraph();
  }
}

StepResult run_step_unchecked(const StepScenario& sc, const CostModel& cost, const PipelineSchedule& schedule, const StepOptions& options) {
  ClusterSpec cluster = parse_cluster(sc.topology);
  cluster.contention = sc.contention;
  check_scenario(sc, cluster);
  CommCost comm(cluster, options.comm);
  comm.set_symmetry(options.symmetry);
  comm.set_mix_transfers(options.mix_transfers);
  const Ctx ctx = make_ctx(sc.model, sc.plan, cost, comm, sc.gpu);
  if (cluster.contention == Contention::fabric) set_step_mix(comm, ctx);
  ChunkCosts costs(ctx, options.reuse);
  const PipelinePlan order = scheduled_order(sc, schedule, costs.mean());
  StepGraph step(sc, cost, options, cluster, order, comm, costs);
  for (int stage = 0; stage < sc.plan.pp; ++stage) {
    for (int r = 0; r < step.replicas; ++r) RankBuilder(step, stage, r).build();
  }
  add_pipeline_sends(step);
  sim::Executor exec(step.engine, step.g, &step.network);
  std::vector<LinkSample> samples;
  execute(step, exec, samples);
  add_breakdown(step, exec);
  add_figures(step, exec, samples);
  return std::move(step.result);
}
}  // namespace

std::vector<std::vector<int>> stage_layers(const ParallelPlan& p, const ModelSpec& m) {
  std::vector<std::vector<int>> out(static_cast<std::size_t>(std::max(1, p.pp)));
  const PipelineShape shape = pipeline_shape(p);
  for (int stage = 0; stage < std::max(1, p.pp); ++stage) {
    for (int c = 0; c < shape.chunks; ++c) out[static_cast<std::size_t>(stage)].push_back(layers_of(p, m, shape.virtual_stage(stage, c)));
  }
  return out;
}

std::string describe_stage_layers(const ParallelPlan& p, const ModelSpec& m) {
  std::vector<std::string> stages;
  for (const std::vector<int>& chunks : stage_layers(p, m)) stages.push_back(fmt::format("{}", fmt::join(chunks, "+")));
  if (stages.size() <= 8) return fmt::format("{}", fmt::join(stages, ","));
  // Deep pipelines: runs of equal stages, "2x62,1x2".
  std::vector<std::string> runs;
  for (std::size_t i = 0; i < stages.size();) {
    std::size_t j = i;
    while (j < stages.size() && stages[j] == stages[i]) ++j;
    runs.push_back(j - i == 1 ? stages[i] : fmt::format("{}x{}", stages[i], j - i));
    i = j;
  }
  return fmt::format("{}", fmt::join(runs, ","));
}

TrainingTime training_time(double tokens, const ParallelPlan& p, double step_time_s) {
  TrainingTime t;
  t.tokens = tokens;
  const double per_step = static_cast<double>(p.global_batch) * static_cast<double>(p.seq_len);
  ORRERY_CHECK(per_step > 0 && tokens >= 0 && step_time_s >= 0, "training time of {} tokens at {} tokens per step", tokens, per_step);
  t.steps = std::ceil(tokens / per_step);
  t.seconds = t.steps * step_time_s;
  return t;
}

std::string topology_with_gpus(const std::string& spec, int gpus, std::string_view source, std::string_view where) {
  const ClusterSpec c = parse_cluster(spec);
  const int per_unit = c.per_unit();
  if (gpus < 1 || gpus % per_unit != 0) {
    throw sim::InputError(std::string(source), std::string(where),
                          fmt::format("found {} GPUs, expected a positive multiple of the {} GPUs per {} of {}", gpus, per_unit,
                                      c.domains ? "NVLink domain" : "server", sim::quote(spec)));
  }
  return c.scaled(gpus / per_unit, per_unit);
}

MemoryBudget memory_budget(const GpuSpec& gpu) {
  MemoryBudget b;
  b.hbm_bytes = gpu.hbm_bytes;
  b.reserve_bytes = std::min(gpu.hbm_bytes, kMemoryReserveFixedBytes + kMemoryReserveFraction * gpu.hbm_bytes);
  b.usable_bytes = gpu.hbm_bytes - b.reserve_bytes;
  return b;
}

std::string MemoryBudget::describe() const {
  const auto gib = [](double bytes) { return bytes / 1073741824.0; };
  return fmt::format("{:.1f} GiB usable ({:.1f} GiB HBM less a {:.1f} GiB reserve)", gib(usable_bytes),
                     gib(hbm_bytes), gib(reserve_bytes));
}

bool out_of_memory(const MemoryEstimate& memory, const GpuSpec& gpu) { return memory.total() > memory_budget(gpu).usable_bytes; }

}  // namespace orrery::models
