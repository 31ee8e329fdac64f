// Collectives on a topology: each collective becomes a plan of transfers (src, dst, bytes,
// dependencies) which run as flows on the flow network, so contention is real; and each has
// a closed-form alpha-beta estimate. Bandwidths follow nccl-tests' definitions (algbw =
// size / time; busbw = algbw x 2(n-1)/n for all-reduce, (n-1)/n for reduce-scatter,
// all-gather and all-to-all, 1 for broadcast, reduce and send/recv).
//   CollectiveSpec spec{CollectiveOp::all_reduce, CollectiveAlgo::ring, sim::Bytes(1 << 30)};
//   CollectiveResult r = run_collective(topology, spec);   // r.time, r.busbw
#pragma once

#include "models/network/topology.hpp"
#include "sim/flow_network.hpp"

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::models {

enum class CollectiveOp { all_reduce, reduce_scatter, all_gather, broadcast, reduce, all_to_all, send_recv };
enum class CollectiveAlgo { ring, tree, hierarchical, nvls, nvls_tree, pat, direct };

std::string_view to_string(CollectiveOp op);
std::string_view to_string(CollectiveAlgo algo);
// Parse names as the CLI spells them ("all-reduce", "ring"); InputError listing valid ones.
CollectiveOp parse_collective_op(std::string_view text, std::string_view source, std::string_view where);
CollectiveAlgo parse_collective_algo(std::string_view text, std::string_view source, std::string_view where);

// The fraction of line rate NCCL's protocols reach on each kind of link: one factor per kind,
// each calibrated on one published measurement; every other row of docs/validation.md is a
// prediction.
struct LinkEfficiency {
  // 8x H200 ring all-reduce at 16 GiB: 367.2 GB/s busbw on 450 GB/s NVLink (ml-engineering
  // nccl_collectives_8xH200_16GiB.csv); an NCCL maintainer puts the protocol overhead at ~20%
  // (nccl-busbw/nccl_maintainer_reference_points.csv, nccl-tests#212).
  double nvlink = 0.816;
  // Not a bottleneck in any built-in topology (the NIC behind it is slower); no data.
  double pcie = 1.0;
  // "For NDR @ 400Gbps you should see 46-48GB/s per NIC" of 50 (nccl-tests#290): 47/50.
  double network = 0.94;
  // NVLS ports take their efficiency from their NVSwitch (TopoNode::nvls_efficiency).
};

struct CollectiveSpec {
  CollectiveOp op = CollectiveOp::all_reduce;
  CollectiveAlgo algo = CollectiveAlgo::ring;
  // nccl-tests' size: the per-rank buffer for all-reduce, broadcast, reduce, send/recv and
  // all-to-all (S/n to each peer); the total (all ranks' parts) for reduce-scatter and all-gather.
  sim::Bytes size{0};
  int ranks = 0;       // the first `ranks` GPUs; 0: all of them
  // Whole-fabric contention: `groups` copies of the collective at once, each of `ranks` GPUs
  // `stride` apart, as a parallel plan lays its groups out (rank order tp fastest: a
  // data-parallel group's members are tp x cp apart). Group g's rank r is GPU
  // (g / stride) * stride * ranks + g % stride + r * stride: `stride` groups interleave in each
  // block of stride x ranks GPUs. All of them run on the links together and the result is the
  // last group's end. groups = 1 and stride = 1: the first `ranks` GPUs, alone.
  int groups = 1;
  int stride = 1;
  int channels = 0;    // parallel rings/trees; 0: one per NIC of a server (at least 1)
  int chunks = 1;      // pipeline depth: each step's data in this many pieces
  int root = 0;        // broadcast and reduce
  int peer = 1;        // send/recv: rank 0 sends to this rank
  // All-to-allv: bytes from rank a to rank b at [a * ranks + b] (the diagonal is ignored);
  // empty for a uniform all-to-all. `size` is then the largest amount one rank sends.
  std::vector<double> pair_bytes;
  // The flow network re-solves departures on this grid (sim::FlowNetwork::set_departure_quantum);
  // zero: at once, exact.
  sim::Duration quantum = sim::Duration::zero();
  // The software latency of the whole collective (NCCL's, nccl.hpp), paid before its first
  // transfers take bandwidth, so an uncontended run ends `latency` later and a contended one
  // adds its queueing on top. Zero: the links' latencies only.
  sim::Duration latency = sim::Duration::zero();
  // Whether transfers also pay their links' own latencies. NCCL's latency (nccl_flows) already
  // holds the wire's, so its flows leave them out.
  bool link_latency = true;
  // The most transfers the plan may hold (0: no limit): an InputError naming --chunks beyond it.
  std::size_t max_transfers = 0;
  // Ring plans only: plan this many ring steps instead of the collective's own (0: all of them).
  // run_collective uses it to extrapolate long rings (ring_extrapolation).
  int ring_steps = 0;
  // Whether run_collective may cost a long ring from two shorter runs of it (exact on the ring's
  // steady state; tests/models/network/collectives_test.cpp checks it against the full run).
  bool extrapolate_rings = true;
  // Whether run_collective may simulate one unit (a server, or one of the groups) under the
  // load of the others where the plan's units provably share the fabric alike (symmetry.hpp:
  // the same completion time as the full run; checked, with the full run where it fails).
  bool symmetry = true;
  // Whether an extrapolated ring's symmetry reductions are built from a plan of its first two
  // steps, each later step repeating the second (repeat_ring_steps, symmetry.hpp): the same
  // reductions as from the plans of k and 2k steps, for a sixth of the transfers planned,
  // routed and checked. Off: those plans themselves (tests compare the two).
  bool repeat_ring_steps = true;
};

// One transfer of a plan: `bytes` from src to dst once every transfer in deps is done.
struct Transfer {
  NodeIndex src;
  NodeIndex dst;
  double bytes;
  std::uint64_t flow_hash;  // ECMP choice: the same for all steps of a channel's connection
  bool nvls;                // through the NVSwitch's reduction port
  // Its end would release steps the plan leaves out (a truncated ring's last step,
  // CollectiveSpec::ring_steps): until the first such end the plan runs as the whole would.
  bool horizon;
  std::uint32_t deps_begin; // into CollectivePlan::deps
  std::uint32_t deps_count;
  std::uint32_t collective = 0;  // run_concurrent: which of the collectives it belongs to
  std::uint32_t ring_step = 0;   // ring plans (all-reduce, reduce-scatter, all-gather): the step it belongs to
};

struct CollectivePlan {
  std::vector<Transfer> transfers;
  std::vector<std::uint32_t> deps;
  std::vector<std::uint32_t> group_begin;  // CollectiveSpec::groups > 1: each group's first transfer
  int ranks = 0;
  int channels = 0;
  // No two transfers share a connection (source, destination, flow hash, NVLS) unless the later
  // one depends on an earlier one of it (a ring's steps and chunks): routes are then found once
  // per connection without a table of them.
  bool distinct_connections = false;
};

// The plan of a collective; InputError when the algorithm does not fit the op or the
// topology (NVLS without an NVLS switch, a tree for broadcast, fewer than 2 ranks, ...).
CollectivePlan plan_collective(const Topology& topology, const CollectiveSpec& spec);

struct LinkLoadSample {
  sim::LinkId link;
  sim::Time at;
  double bytes_per_second;
};

struct CollectiveResult {
  sim::Duration time;
  double algbw = 0;  // bytes per second
  double busbw = 0;
  std::uint64_t flows = 0;
  std::uint64_t solves = 0;
  std::uint64_t solve_work = 0;  // flow-link incidences the re-solves visited
  std::uint64_t events = 0;
  int ranks = 0;
  int channels = 0;
  int extrapolated_steps = 0;  // a ring costed from two shorter runs of it: its steps (0: run in full)
  int units = 0;  // symmetric units of which one was simulated (0: the whole plan ran)
  std::vector<sim::Duration> ends;  // run_concurrent: each collective's end
  // By collective: the first end of a Transfer::horizon transfer (sim::Duration::max() if none).
  std::vector<sim::Duration> horizons;
  std::vector<LinkLoadSample> link_loads;  // when asked for
};

// The ring steps the largest plan of a ring collective holds when run_collective or
// run_concurrent costs it: 2k of them where a long ring is extrapolated (k doubles in a mix while
// the others outlast the shorter run), else all. 0 for other algorithms and ops.
int ring_steps_planned(const CollectiveSpec& spec, int ranks);

// Simulates the plan on the topology's links (capacity = bandwidth x efficiency of its kind).
CollectiveResult run_collective(const Topology& topology, const CollectiveSpec& spec, const LinkEfficiency& efficiency = {},
                                bool record_link_loads = false);

// Several collectives at once on one fabric, each with its concurrent groups, as the kinds of
// a parallel plan overlap in a step (data-parallel reductions, expert all-to-alls, pipeline
// sends): all start together and share the links; the result's `ends` holds each one's end
// and `time` the last. Symmetry classes apply to the whole mix (units of GPUs, servers or leaf
// blocks). A long ring beside others (CollectiveSpec::extrapolate_rings) is costed from two
// runs of the mix with k and 2k of its steps, as run_collective does alone, once every other
// collective ends before the k-step ring's first last-step transfer does (until then the
// truncated ring runs as the whole one: their ends are exact); k doubles until they do, and
// past the ring's own length the ring runs whole. The specs must agree on
// `link_latency` and `quantum` (an InputError otherwise); each pays its own `latency`.
// With `only`, just that collective's end is wanted: the collectives that share no link with
// it, directly or through another, are left out (exact: they cannot change it; their ends 0).
CollectiveResult run_concurrent(const Topology& topology, std::span<const CollectiveSpec> specs, const LinkEfficiency& efficiency = {},
                                std::optional<std::size_t> only = std::nullopt);

// What a collective with all its groups (CollectiveSpec::groups) puts on each link of the
// fabric over its whole run, alone, at `efficiency`: links as the flow network numbers them (the
// topology's, then one NVLS port per GPU-switch link). A ring's steps move the same pieces over
// the same connections, so a ring of reduce-scatter, all-gather or all-reduce is planned for one
// step and its bytes multiplied by its steps.
struct LinkLoad {
  std::vector<double> bytes;
  std::vector<std::uint32_t> connections;  // flows at once through the link
  // Lockstep collectives (a ring's or a tree's transfers wait on each other): each chain (a
  // group's channel, or a group) moves at the pace of its busiest link, where its collective's
  // bytes take the longest at full capacity (its wire time). By link: the rate at which its
  // chains pass it (bytes / their wire times), and the longest wire time of a chain through it.
  // Empty for direct sends (an all-to-all, a pipeline exchange, a ring of one step), whose
  // flows go each at their own pace.
  std::vector<double> rate;
  std::vector<double> chain_wire;
  double wire = 0;  // seconds: the collective's busiest link at full capacity
  double group_wire = 0;  // direct sends: the busiest link of its first group alone, at full capacity
  std::vector<std::uint32_t> used;  // the links it loads, in order
  double size = 0;  // the spec's size (CollectiveSpec::size); the same plan at another size scales bytes and wires
  bool lockstep() const { return !rate.empty(); }
};
LinkLoad link_load(const Topology& topology, const CollectiveSpec& spec, const LinkEfficiency& efficiency = {});

// Several collectives at once, each with all its groups, approximately, where their mix is too
// large to simulate flow by flow (run_concurrent): collective k ran alone in alone[k] and loaded
// the links with loads[k], its bytes and wire times times scale[k]. A lockstep collective ran
// with all its groups on the whole fabric; direct sends, one group alone (its other groups'
// flows are streams on its links as another collective's are: what a hashed spine that two of
// its groups share costs it comes from their loads). Its time beyond its wire time (its busiest
// link at full capacity, alone) is latency, which contention leaves alone. On each link they share, every
// collective is a stream of its bytes there and the link divides its capacity among the streams
// max-min fairly, each weighted by its connections through it, until each has moved its bytes:
// a lockstep collective's stream never passes its chains' rate there, and a chain through the
// link ends late by what the link adds to the stream's time; direct sends take what the link
// gives and end when their most delayed link has moved its bytes. Exact where no link is loaded
// past its capacity (each ends as alone); tests/models/network/symmetry_test.cpp measures it
// against run_concurrent on mixes small enough to run both. Returns each collective's end (with
// `only`, that one's, the others' zero).
std::vector<sim::Duration> ends_by_link_loads(const Topology& topology, std::span<const LinkLoad* const> loads,
                                              std::span<const double> scale, std::span<const sim::Duration> alone,
                                              const LinkEfficiency& efficiency = {}, std::optional<std::size_t> only = std::nullopt);

// Closed form for an uncontended run: steps x (alpha + bytes per step / bandwidth), with
// alpha the latency of one hop and the bandwidth that of the busiest link kind on the path.
sim::Duration alpha_beta(const Topology& topology, const CollectiveSpec& spec, const LinkEfficiency& efficiency = {});

// busbw / algbw for the op on n ranks (nccl-tests' factors).
double bus_factor(CollectiveOp op, int n);

// Names of the flow-network links run_collective builds: topology links, then NVLS ports.
std::string fabric_link_name(const Topology& topology, sim::LinkId link);

}  // namespace orrery::models
