#include "models/network/collectives.hpp"
#include "sim/error.hpp"
#include "approx.hpp"
#include "bytes.hpp"
#include "collective_spec.hpp"
#include "input_error.hpp"

#include <fmt/format.h>

#include <doctest/doctest.h>

using namespace orrery;
using namespace orrery::models;
using orrery::testing::kGiB;

namespace {
CollectiveSpec spec(CollectiveOp op, CollectiveAlgo algo, double bytes, int channels = 0, int chunks = 1) {
  CollectiveSpec s = orrery::testing::collective_spec(op, algo, bytes);
  s.channels = channels;
  s.chunks = chunks;
  return s;
}
}  // namespace

// A ring all-reduce of S bytes on N GPUs at bandwidth B takes 2(N-1) steps of S/N bytes:
// 2(N-1)/N * S/B + 2(N-1) alpha. Here alpha is one NVSwitch hop (2 x 250 ns) and B the
// NVLink rate times its efficiency. Each of the 14 flows rounds up to the next ns.
TEST_CASE("ring all-reduce matches its closed form on an uncontended node") {
  const Topology t = build_topology("dgx-h100");
  const LinkEfficiency e;
  const double s = kGiB, n = 8, b = 450e9 * e.nvlink;
  const CollectiveResult r = run_collective(t, spec(CollectiveOp::all_reduce, CollectiveAlgo::ring, s, 1));
  const double expected = 2 * (n - 1) / n * s / b + 2 * (n - 1) * 500e-9;
  CHECK(r.time.to_seconds() == orrery::testing::Approx(expected).epsilon(1e-6));
  CHECK(std::abs(r.time.to_seconds() - expected) <= 14e-9);
  CHECK(r.busbw == orrery::testing::Approx(b).epsilon(0.005));  // busbw is the link rate (less latency), as NCCL defines it
  CHECK(r.flows == 14);  // the 8 GPUs are symmetric: one simulated (symmetry.hpp)
  CHECK(r.units == 8);
  CHECK(alpha_beta(t, spec(CollectiveOp::all_reduce, CollectiveAlgo::ring, s, 1)).to_seconds() ==
        orrery::testing::Approx(r.time.to_seconds()).epsilon(1e-6));
}

TEST_CASE("reduce-scatter and all-gather take N-1 steps of S/N") {
  const Topology t = build_topology("dgx-h100");
  const double b = 450e9 * LinkEfficiency{}.nvlink;
  for (const CollectiveOp op : {CollectiveOp::reduce_scatter, CollectiveOp::all_gather}) {
    const CollectiveResult r = run_collective(t, spec(op, CollectiveAlgo::ring, 8 * 64e6, 1));
    CHECK(r.time.to_seconds() == orrery::testing::Approx(7 * (64e6 / b + 500e-9)).epsilon(1e-6));
    CHECK(r.busbw == orrery::testing::Approx(b).epsilon(0.005));
  }
}

TEST_CASE("more channels share the same links: same time on one node") {
  const Topology t = build_topology("dgx-h100");
  const auto one = run_collective(t, spec(CollectiveOp::all_reduce, CollectiveAlgo::ring, kGiB, 1));
  const auto eight = run_collective(t, spec(CollectiveOp::all_reduce, CollectiveAlgo::ring, kGiB, 8));
  CHECK(eight.time.to_seconds() == orrery::testing::Approx(one.time.to_seconds()).epsilon(1e-6));
}

// Across servers, rail-aligned rings put one channel on each NIC: busbw approaches the
// server's NIC bandwidth, 8 x 50 GB/s x efficiency.
TEST_CASE("multi-node ring all-reduce is bound by the NICs") {
  const Topology t = build_topology("dgx-h100:nodes=4");
  const auto s = spec(CollectiveOp::all_reduce, CollectiveAlgo::ring, 4 * kGiB);
  const CollectiveResult r = run_collective(t, s);
  CHECK(r.channels == 8);
  CHECK(r.busbw == orrery::testing::Approx(8 * 50e9 * LinkEfficiency{}.network).epsilon(0.02));
  // The closed form's per-step NIC bound sits 2.1% above the time the flows reach here.
  CHECK(alpha_beta(t, s).to_seconds() == orrery::testing::Approx(r.time.to_seconds()).epsilon(0.025));
  // Half the NICs per server halves the bandwidth: the NIC is the bottleneck.
  const CollectiveResult half = run_collective(build_topology("dgx-h100:nodes=4,nic=200Gb/s"), s);
  CHECK(half.busbw == orrery::testing::Approx(r.busbw / 2).epsilon(0.02));
}

TEST_CASE("hierarchical all-reduce: NVLink stages inside, a rail ring across") {
  const Topology t = build_topology("dgx-h100:nodes=4");
  const auto s = spec(CollectiveOp::all_reduce, CollectiveAlgo::hierarchical, kGiB, 1);
  const CollectiveResult r = run_collective(t, s);
  CHECK(alpha_beta(t, s).to_seconds() == orrery::testing::Approx(r.time.to_seconds()).epsilon(0.02));
}

// NVLS: each GPU moves S(n+1)/n through its switch port each way, pipelined in chunks.
TEST_CASE("NVLS all-reduce through the switch's reduction ports") {
  const Topology t = build_topology("dgx-h200");
  const CollectiveResult r = run_collective(t, spec(CollectiveOp::all_reduce, CollectiveAlgo::nvls, 16 * kGiB));
  const double port = 450e9 * t.node(8).nvls_efficiency;
  const double chunks = 32, n = 8;
  CHECK(r.algbw == orrery::testing::Approx(port * n / (n + 1) * chunks / (chunks + 1)).epsilon(0.001));
  CHECK_THROWS_AS(run_collective(build_topology("dgx-a100"), spec(CollectiveOp::all_reduce, CollectiveAlgo::nvls, kGiB)),
                  sim::InputError);
  CHECK_THROWS_AS(run_collective(build_topology("dgx-h100:nodes=2"), spec(CollectiveOp::all_reduce, CollectiveAlgo::nvls, kGiB)),
                  sim::InputError);
}

// NVLS all-gather: each GPU stores its slice once and the switch multicasts every slice to
// every GPU, S down each port; reduce-scatter the mirror image, S up. In 32 chunks (NVLS's
// default, as above) only the first chunk's slice S/(32n) goes before the busy direction
// starts: algbw = port / (1 + 1/(32n)).
TEST_CASE("NVLS all-gather and reduce-scatter: the multicast or the reduction port carries S") {
  const Topology t = build_topology("dgx-h200");
  const double port = 450e9 * t.node(8).nvls_efficiency;
  for (const CollectiveOp op : {CollectiveOp::all_gather, CollectiveOp::reduce_scatter}) {
    const CollectiveResult r = run_collective(t, spec(op, CollectiveAlgo::nvls, 16 * kGiB));
    CHECK(r.algbw == orrery::testing::Approx(port / (1 + 1.0 / (32 * 8))).epsilon(0.001));
  }
  CHECK_THROWS_AS(run_collective(t, spec(CollectiveOp::all_to_all, CollectiveAlgo::nvls, kGiB)), sim::InputError);
}

// Double binary tree: every rank's uplink carries 2S in all, so T -> 2S/B with deep pipelines.
TEST_CASE("tree all-reduce approaches 2S/B and matches its estimate") {
  const Topology t = build_topology("dgx-h100");
  const double b = 450e9 * LinkEfficiency{}.nvlink;
  const auto s = spec(CollectiveOp::all_reduce, CollectiveAlgo::tree, kGiB, 1, 128);
  const CollectiveResult r = run_collective(t, s);
  CHECK(r.time.to_seconds() == orrery::testing::Approx(2 * kGiB / b).epsilon(0.03));
  CHECK(alpha_beta(t, s).to_seconds() == orrery::testing::Approx(r.time.to_seconds()).epsilon(0.02));
}

TEST_CASE("send-recv, broadcast, reduce and all-to-all") {
  const Topology t = build_topology("dgx-h100");
  const double b = 450e9 * LinkEfficiency{}.nvlink;
  auto sr = spec(CollectiveOp::send_recv, CollectiveAlgo::direct, 1e9, 1);
  sr.peer = 3;
  CHECK(run_collective(t, sr).time.to_seconds() == orrery::testing::Approx(500e-9 + 1e9 / b).epsilon(1e-6));
  // A pipelined chain of 7 hops in 8 chunks: (7 - 1 + 8) chunk times.
  auto bc = spec(CollectiveOp::broadcast, CollectiveAlgo::ring, 1e9, 1, 8);
  bc.root = 5;
  const CollectiveResult broadcast = run_collective(t, bc);
  CHECK(broadcast.time.to_seconds() == orrery::testing::Approx(14 * (500e-9 + 1e9 / 8 / b)).epsilon(1e-6));
  auto rd = bc;
  rd.op = CollectiveOp::reduce;
  CHECK(run_collective(t, rd).time == broadcast.time);
  // All-to-all: each GPU sends S/8 to each of 7 peers out of its one NVLink port, all at once.
  const auto a2a = spec(CollectiveOp::all_to_all, CollectiveAlgo::direct, 8e9);
  const CollectiveResult x = run_collective(t, a2a);
  CHECK(x.time.to_seconds() == orrery::testing::Approx(500e-9 + 7e9 / b).epsilon(1e-6));
  CHECK(x.busbw == orrery::testing::Approx(b).epsilon(0.001));
  CHECK(alpha_beta(t, a2a).to_seconds() == orrery::testing::Approx(x.time.to_seconds()).epsilon(1e-6));
}

TEST_CASE("algorithms that do not fit are refused") {
  const Topology t = build_topology("dgx-h100");
  CHECK_THROWS_AS(plan_collective(t, spec(CollectiveOp::broadcast, CollectiveAlgo::tree, 1e6)), sim::InputError);
  CHECK_THROWS_AS(plan_collective(t, spec(CollectiveOp::all_to_all, CollectiveAlgo::ring, 1e6)), sim::InputError);
  CHECK_THROWS_AS(plan_collective(t, spec(CollectiveOp::all_reduce, CollectiveAlgo::hierarchical, 1e6)), sim::InputError);
  auto too_many = spec(CollectiveOp::all_reduce, CollectiveAlgo::ring, 1e6);
  too_many.ranks = 9;
  CHECK_THROWS_AS(plan_collective(t, too_many), sim::InputError);
  CHECK(bus_factor(CollectiveOp::all_reduce, 8) == 1.75);
  CHECK(bus_factor(CollectiveOp::all_gather, 8) == 0.875);
  CHECK(bus_factor(CollectiveOp::broadcast, 8) == 1.0);
}

TEST_CASE("a collective is deterministic") {
  const Topology t = build_topology("dgx-h100:nodes=2,fabric=fat-tree,oversubscription=2,leaf_ports=4");
  const auto s = spec(CollectiveOp::all_reduce, CollectiveAlgo::ring, 1e8);
  CHECK(run_collective(t, s).time == run_collective(t, s).time);
}

// All-to-allv: per-pair sizes. One busy sender is limited by its own NVLink port.
TEST_CASE("all-to-allv moves each pair's bytes") {
  const Topology t = build_topology("dgx-h100");
  const double b = 450e9 * LinkEfficiency{}.nvlink;
  auto s = spec(CollectiveOp::all_to_all, CollectiveAlgo::direct, 0);
  s.pair_bytes.assign(64, 0.0);
  for (int z = 1; z < 8; ++z) s.pair_bytes[static_cast<std::size_t>(z)] = 1e9;  // rank 0 sends 1 GB to everyone
  s.pair_bytes[3 * 8 + 4] = 2e9;                                                 // and rank 3 sends 2 GB to rank 4
  const CollectiveResult r = run_collective(t, s);
  CHECK(r.flows == 8);
  // Rank 0's port carries 7 GB; rank 4's downlink carries 1 + 2 GB, shared with rank 0's flow.
  CHECK(r.time.to_seconds() == orrery::testing::Approx(500e-9 + 7e9 / b).epsilon(1e-6));
  s.pair_bytes.resize(10);
  CHECK_THROWS_AS(run_collective(t, s), sim::InputError);
}

// NCCL's software latency (CollectiveSpec::latency) is paid before the first transfers: an
// uncontended collective ends exactly that much later.
TEST_CASE("a collective's latency delays it by exactly that much") {
  const Topology t = build_topology("dgx-h100:nodes=2");
  for (const CollectiveAlgo algo : {CollectiveAlgo::ring, CollectiveAlgo::tree, CollectiveAlgo::hierarchical}) {
    CAPTURE(to_string(algo));
    CollectiveSpec s = spec(CollectiveOp::all_reduce, algo, 4 << 20);
    const sim::Duration plain = run_collective(t, s).time;
    s.latency = sim::Duration::microseconds(50);
    CHECK((run_collective(t, s).time - plain).ns() == 50000);
  }
}

// NVLS-tree across NVLink domains: the switch reduces and multicasts inside each, a ring per
// rail across; the chunks pipeline the phases, well ahead of the unpipelined hierarchical plan.
// The closed form is the pipeline's bound (every chunk at the busiest port's rate); the flows
// pay for a chunk's multicast sharing the ports with the next chunk's reduction (7-25% here).
TEST_CASE("NVLS-tree all-reduce across servers and racks") {
  for (const char* fabric : {"dgx-h100:nodes=2", "dgx-h100:nodes=4", "nvl72:domains=2,gpus_per_domain=8"}) {
    CAPTURE(fabric);
    const Topology t = build_topology(fabric);
    const CollectiveSpec s = spec(CollectiveOp::all_reduce, CollectiveAlgo::nvls_tree, kGiB);
    const CollectiveResult r = run_collective(t, s);
    CHECK(alpha_beta(t, s) <= r.time);
    CHECK(r.time.to_seconds() <= 1.3 * alpha_beta(t, s).to_seconds());
    CHECK(r.time < run_collective(t, spec(CollectiveOp::all_reduce, CollectiveAlgo::hierarchical, kGiB)).time);
  }
  // One domain is NVLS's; gathers are not NVLS-tree's.
  const Topology one = build_topology("dgx-h100:nodes=1");
  CHECK(orrery::testing::error_of([&] { (void)run_collective(one, spec(CollectiveOp::all_reduce, CollectiveAlgo::nvls_tree, kGiB)); })
            .find("needs ranks on at least two NVLink domains") != std::string::npos);
  const Topology a100 = build_topology("dgx-a100:nodes=2");
  CHECK(orrery::testing::error_of([&] { (void)run_collective(a100, spec(CollectiveOp::all_reduce, CollectiveAlgo::nvls_tree, kGiB)); })
            .find("needs every rank on an NVSwitch with NVLS") != std::string::npos);
}

// PAT (one GPU per node): ceil(log2 n) steps that move n-1 blocks of S/n per rank in all, so
// it matches the ring's bytes in far fewer steps (latency), for all-gather and reduce-scatter;
// non-powers of two end with a partial step.
TEST_CASE("PAT all-gather and reduce-scatter: log2 n steps, n-1 blocks") {
  for (const int nodes : {8, 6}) {
    CAPTURE(nodes);
    const Topology t = build_topology(fmt::format("dgx-h100:nodes={},gpus_per_node=1", nodes));
    for (const CollectiveOp op : {CollectiveOp::all_gather, CollectiveOp::reduce_scatter}) {
      CAPTURE(to_string(op));
      const CollectiveSpec s = spec(op, CollectiveAlgo::pat, 64 << 20, 1);
      const CollectivePlan plan = plan_collective(t, s);
      double bytes = 0;
      for (const Transfer& tr : plan.transfers) bytes += tr.src == t.gpus()[0] ? tr.bytes : 0;
      CHECK(bytes == orrery::testing::Approx((nodes - 1.0) / nodes * (64 << 20)).epsilon(1e-12));
      CHECK(plan.transfers.size() == static_cast<std::size_t>(nodes * 3));  // ceil(log2 n) = 3 for 8 and 6
      const CollectiveResult r = run_collective(t, s);
      CHECK(alpha_beta(t, s).to_seconds() == orrery::testing::Approx(r.time.to_seconds()).epsilon(0.02));
    }
  }
  // Gathers only.
  const Topology t = build_topology("dgx-h100:nodes=4,gpus_per_node=1");
  CHECK(orrery::testing::error_of([&] { (void)run_collective(t, spec(CollectiveOp::all_reduce, CollectiveAlgo::pat, 1 << 20)); })
            .find("PAT serves all-gather and reduce-scatter") != std::string::npos);
}

// A long ring is costed from two short runs of it (its steps repeat); against the full flow
// simulation, within 0.1%, on symmetric and asymmetric fabrics, every ring op, with channels,
// chunks, a software latency, an oversubscribed spine and planes.
TEST_CASE("ring extrapolation equals the full simulation within 0.1%") {
  struct Case {
    const char* topology;
    CollectiveOp op;
    int ranks, channels, chunks;
    double latency_us;
  };
  const std::vector<Case> cases = {
      {"dgx-h100:nodes=1,gpus_per_node=256", CollectiveOp::all_reduce, 0, 1, 1, 0},
      {"dgx-h100:nodes=1,gpus_per_node=256", CollectiveOp::all_gather, 0, 2, 4, 20},
      {"dgx-h100:nodes=16", CollectiveOp::all_reduce, 0, 8, 1, 0},
      {"dgx-h100:nodes=16", CollectiveOp::reduce_scatter, 0, 8, 2, 50},
      {"dgx-h100:nodes=32,fabric=fat-tree,leaf_ports=16,oversubscription=2", CollectiveOp::all_reduce, 0, 8, 1, 0},
      {"dgx-h100:nodes=32,fabric=fat-tree,leaf_ports=16,oversubscription=2", CollectiveOp::all_gather, 0, 4, 1, 0},
      {"dgx-h100:nodes=16,planes=2", CollectiveOp::all_reduce, 0, 8, 1, 10},
      {"dgx-h100:nodes=16,oversubscription=4", CollectiveOp::all_reduce, 96, 8, 1, 0},
      {"dgx-b200:nodes=12", CollectiveOp::reduce_scatter, 0, 4, 1, 0},
      {"dgx-a100:nodes=20", CollectiveOp::all_reduce, 150, 2, 1, 0},
  };
  for (const Case& c : cases) {
    CAPTURE(c.topology);
    CAPTURE(to_string(c.op));
    const Topology t = build_topology(c.topology);
    CollectiveSpec s;
    s.op = c.op;
    s.algo = CollectiveAlgo::ring;
    s.size = sim::Bytes(256e6);
    s.ranks = c.ranks;
    s.channels = c.channels;
    s.chunks = c.chunks;
    s.latency = sim::Duration::nanoseconds(static_cast<std::int64_t>(c.latency_us * 1e3));
    const CollectiveResult fast = run_collective(t, s);
    s.extrapolate_rings = false;
    const CollectiveResult full = run_collective(t, s);
    CHECK(fast.extrapolated_steps > 0);
    CHECK(full.extrapolated_steps == 0);
    CHECK(fast.flows < full.flows);
    CHECK(fast.time.to_seconds() == orrery::testing::Approx(full.time.to_seconds()).epsilon(1e-3));
  }
}

// Whole-fabric contention (CollectiveSpec::groups): the data-parallel rings of a plan with tensor
// parallelism 8 are 8 groups of one GPU per server, group g on local GPU g. Packet spraying
// spreads every leaf's traffic evenly over its uplinks, so the closed forms are exact: on rails
// the groups never share a link; on a fat-tree of one server per leaf every ring hop leaves its
// leaf, 8 flows on 4 uplinks at 2:1 (each flow half a NIC).
TEST_CASE("concurrent groups: apart on rails, sharing an oversubscribed spine") {
  CollectiveSpec s = spec(CollectiveOp::all_reduce, CollectiveAlgo::ring, 256e6);
  s.ranks = 8;
  s.stride = 8;
  s.symmetry = false;  // every flow simulated (the classes have tests of their own)
  const auto ratio = [&](const char* topology) {
    const Topology t = build_topology(topology);
    CollectiveSpec one = s, all = s;
    all.groups = 8;
    const CollectiveResult a = run_collective(t, one), b = run_collective(t, all);
    CHECK(b.flows == 8 * a.flows);
    return b.time.to_seconds() / a.time.to_seconds();
  };
  CHECK(ratio("dgx-h100:nodes=8") == 1.0);  // rail-optimized: group g on rail g alone
  CHECK(ratio("dgx-h100:nodes=8,fabric=fat-tree,leaf_ports=8,routing=spray") == orrery::testing::Approx(1.0).epsilon(1e-6));
  const double two = ratio("dgx-h100:nodes=8,fabric=fat-tree,leaf_ports=8,oversubscription=2,routing=spray");
  CHECK(two > 1.95);  // bandwidth-bound: 2x, less the links' latencies that do not double
  CHECK(two <= 2.0);
  // Hashed ECMP puts some uplinks under two flows at once: never faster than spraying.
  CHECK(ratio("dgx-h100:nodes=8,fabric=fat-tree,leaf_ports=8,oversubscription=2") >= two * (1 - 1e-9));
}

TEST_CASE("concurrent groups: one group alone is the plain collective, and bad layouts are refused") {
  const Topology t = build_topology("dgx-h100:nodes=4");
  CollectiveSpec s = spec(CollectiveOp::reduce_scatter, CollectiveAlgo::ring, 64e6);
  s.ranks = 8;
  s.symmetry = false;  // every flow simulated
  const CollectiveResult plain = run_collective(t, s);
  s.groups = 1;
  s.stride = 1;
  CHECK(run_collective(t, s).time == plain.time);
  // Groups interleave within blocks of stride x ranks GPUs: 4 groups of 8, 2 apart, fill 32.
  s.stride = 2;
  const CollectiveResult one = run_collective(t, s);  // GPUs 0, 2, ..., 14: two servers, four NICs each
  CHECK(one.channels == 4);
  s.groups = 4;
  CHECK(run_collective(t, s).flows == 4 * one.flows);
  s.groups = 3;  // not whole blocks
  CHECK(orrery::testing::error_of([&] { (void)run_collective(t, s); }).find("multiple of the stride") != std::string::npos);
  s.groups = 8;  // 64 GPUs on 32
  CHECK(orrery::testing::error_of([&] { (void)run_collective(t, s); }).find("span 64 GPUs, expected at most 32") != std::string::npos);
  s.groups = 1;
  s.stride = 0;
  CHECK(orrery::testing::error_of([&] { (void)run_collective(t, s); }).find("expected at least 1") != std::string::npos);
}

// Rings that differ only in size, op (reduce-scatter, all-gather, all-reduce) and link
// efficiencies reuse the first one's symmetry reduction, kept with the topology: each result
// equals, to the nanosecond, the same ring costed on a fresh instance of the topology.
TEST_CASE("rings of one shape reuse their reduction across sizes and efficiencies, with the same results") {
  struct Case {
    const char* topology;
    int ranks, groups, stride;
  };
  const std::vector<Case> cases = {
      {"dgx-h100:nodes=16", 0, 1, 1},
      {"dgx-h100:nodes=16,fabric=fat-tree,leaf_ports=16,oversubscription=2,routing=spray", 32, 4, 1},
      {"nvl72:domains=8,gpus_per_domain=16", 64, 2, 1},
      {"dgx-h100:nodes=32,planes=2", 32, 8, 8},
  };
  for (const Case& c : cases) {
    const std::string name = c.topology;
    CAPTURE(name);
    const Topology kept = build_topology(c.topology);
    int runs = 0;
    for (const CollectiveOp op : {CollectiveOp::reduce_scatter, CollectiveOp::all_gather, CollectiveOp::all_reduce}) {
      for (const double bytes : {256e6, 1e9 / 3}) {
        for (const double share : {1.0, 0.8}) {
          CollectiveSpec s = spec(op, CollectiveAlgo::ring, bytes);
          s.ranks = c.ranks;
          s.groups = c.groups;
          s.stride = c.stride;
          s.latency = sim::Duration::microseconds(20);
          LinkEfficiency e;
          e.nvlink *= share;
          e.network *= share * share;
          const CollectiveResult reused = run_collective(kept, s, e);
          const CollectiveResult fresh = run_collective(build_topology(c.topology), s, e);
          CHECK(reused.extrapolated_steps > 0);
          CHECK(reused.units > 1);
          CHECK(reused.time == fresh.time);
          CHECK(reused.flows == fresh.flows);
          CHECK(reused.units == fresh.units);
          CHECK(reused.busbw == fresh.busbw);
          ++runs;
        }
      }
    }
    CHECK(runs == 12);
    CHECK(kept.memos() == 1);  // one shape: every run after the first reused it
  }
}

// An extrapolated ring's reductions built from a plan of its first two steps
// (CollectiveSpec::repeat_ring_steps) give, to the nanosecond, what the plans of k and 2k steps
// give, on rails, sprayed and hashed spines, planes and NVL72 racks, alone and in groups.
TEST_CASE("rings reduced from their first two steps end as the reductions of k and 2k steps") {
  int reduced = 0;
  for (const orrery::testing::RingCase& c : orrery::testing::ring_cases()) {
    CAPTURE(c.topology);
    CollectiveSpec s = spec(c.op, CollectiveAlgo::ring, 512e6);
    s.ranks = c.ranks;
    s.groups = c.groups;
    s.stride = c.stride;
    s.chunks = c.chunks;
    s.latency = sim::Duration::microseconds(20);
    const CollectiveResult two = run_collective(build_topology(c.topology), s);
    s.repeat_ring_steps = false;
    const CollectiveResult longer = run_collective(build_topology(c.topology), s);
    CHECK(two.extrapolated_steps == longer.extrapolated_steps);
    CHECK(two.time == longer.time);
    CHECK(two.flows == longer.flows);
    CHECK(two.units == longer.units);
    CHECK(two.busbw == longer.busbw);
    reduced += two.extrapolated_steps > 0 && two.units > 1;
  }
  CHECK(reduced >= 10);  // rings long enough to extrapolate, on fabrics with symmetric units
}
