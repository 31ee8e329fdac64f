#include "models/network/nccl.hpp"

#include "approx.hpp"
#include "bytes.hpp"
#include "input_error.hpp"
#include "sim/error.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string_view>

using namespace orrery;
using namespace orrery::models;
using orrery::testing::kGiB;

namespace {
CommShape shape(const char* spec, CollectiveOp op = CollectiveOp::all_reduce, int ranks = 0) {
  return comm_shape(build_topology(spec), op, ranks);
}
std::string pick(const CommShape& s, double bytes, const NcclRequest& r = {}) {
  const NcclCost c = nccl_cost(s, bytes, CommParams::nccl(), r);
  return std::string(to_string(c.algo)) + "/" + std::string(to_string(c.proto));
}
}  // namespace

TEST_CASE("comm_shape: NVLink domains, NICs and the GPU class of a topology") {
  const CommShape s = shape("dgx-h100:nodes=2");
  CHECK(s.ranks == 16);
  CHECK(s.nodes == 2);
  CHECK(s.ppn() == 8);
  CHECK(s.arch == GpuArch::hopper);
  CHECK_FALSE(s.arch_assumed);
  CHECK(s.nvlink_GBps == orrery::testing::Approx(450));
  CHECK(s.nics == 8);
  CHECK(s.net_GBps == orrery::testing::Approx(8 * 50));  // 400 Gb/s each
  CHECK(s.nvls);
  CHECK(s.net == NetKind::ib);
  // An NVL72 rack is one NCCL node (multi-node NVLink), whatever its trays.
  const CommShape rack = shape("nvl72:domains=2,gpus_per_domain=64,net=roce");
  CHECK(rack.nodes == 2);
  CHECK(rack.ppn() == 64);
  CHECK(rack.arch == GpuArch::blackwell);
  CHECK(rack.net == NetKind::roce);
  CHECK(shape("nvl72:domains=1").nodes == 1);
  CHECK(shape("dgx-a100:nodes=1").arch == GpuArch::ampere);
  CHECK_FALSE(shape("dgx-a100:nodes=1").nvls);
  // A NIC behind a slower PCIe link gives what the link carries.
  CHECK(shape("dgx-h100:nodes=2,pcie=25GB/s").net_GBps == orrery::testing::Approx(8 * 25));
  // 12 of 16 GPUs: 8 on one server, 4 on the other, 6 per node on average (as NCCL counts).
  CHECK(shape("dgx-h100:nodes=2", CollectiveOp::all_reduce, 12).ppn() == 6);
  CHECK(orrery::testing::error_of([] { (void)shape("dgx-h100:nodes=2", CollectiveOp::all_reduce, 1); }) ==
        "<command line>:--ranks: found 1 ranks, expected 2 to 16 (the GPUs of the topology)");
}

// tuning.cc's latencies: ring LL on one node of 8 is the base latency and 2(n-1) NVLink steps;
// a tree across 2 nodes climbs (ppn-1) NVLink and log2(nodes) network hops each way.
TEST_CASE("NCCL's latencies, as tuning.cc composes them") {
  const CommShape one = shape("dgx-h100:nodes=1");
  const CommParams nccl = CommParams::nccl();
  CHECK(nccl_cost_of(one, 8, NcclAlgo::ring, NcclProto::ll, nccl).latency_s == orrery::testing::Approx((6.6 + 14 * 0.6) * 1e-6).epsilon(1e-12));
  CHECK(nccl_cost_of(one, 8, NcclAlgo::ring, NcclProto::simple, nccl).latency_s == orrery::testing::Approx((8.4 + 14 * 3.4) * 1e-6).epsilon(1e-12));
  const CommShape two = shape("dgx-h100:nodes=2");
  CHECK(nccl_cost_of(two, 8, NcclAlgo::tree, NcclProto::ll, nccl).latency_s ==
        orrery::testing::Approx((6.8 + 2 * (7 * 0.6 + 1 * 5.0)) * 1e-6).epsilon(1e-12));
  // NVLS: one switch round trip, then NVLS-tree adds 2 log2(nodes) network steps.
  CHECK(nccl_cost_of(one, 8, NcclAlgo::nvls, NcclProto::simple, nccl).latency_s == orrery::testing::Approx(25e-6).epsilon(1e-12));
  CHECK(nccl_cost_of(shape("dgx-h100:nodes=4"), 8, NcclAlgo::nvls_tree, NcclProto::simple, nccl).latency_s ==
        orrery::testing::Approx((25 + 2 * 2 * (20.9 + 0)) * 1e-6).epsilon(1e-12));
  // The fitted model adds the launch and each network step's latency on top.
  const CommParams fitted = CommParams::fitted();
  CHECK(nccl_cost_of(one, 8, NcclAlgo::ring, NcclProto::ll, fitted).latency_s ==
        orrery::testing::Approx((6.6 + 14 * 0.6 + fitted.launch_us) * 1e-6).epsilon(1e-12));
}

// The choice NCCL makes by its model: LL for a few bytes, NVLS for large all-reduces on one
// NVSwitch node, NVLS-tree across nodes, the ring where NVLS is off or absent.
TEST_CASE("NCCL's choice of algorithm and protocol by size") {
  const CommShape one = shape("dgx-h100:nodes=1");
  CHECK(pick(one, 8) == "ring/ll");
  CHECK(pick(one, kGiB) == "nvls/simple");
  NcclRequest off;
  off.nvls_enable = false;
  CHECK(pick(one, kGiB, off) == "ring/simple");
  CHECK(pick(shape("dgx-a100:nodes=1"), kGiB) == "ring/simple");
  CHECK(pick(shape("dgx-h100:nodes=2"), kGiB) == "nvls-tree/simple");
  // Two A100 nodes: NCCL prices a tree by its NVLink graph up to 2 nodes, so it picks the tree.
  CHECK(pick(shape("dgx-a100:nodes=2,nic=50Gb/s"), kGiB) == "tree/simple");
  // Gathers: rings (and PAT with one GPU per node).
  CHECK(pick(shape("dgx-h100:nodes=2", CollectiveOp::all_gather), kGiB) == "ring/simple");
  const CommShape spread = shape("dgx-h100:nodes=16,gpus_per_node=1", CollectiveOp::all_gather);
  CHECK(pick(spread, 1 << 20) == "pat/simple");
  CHECK(pick(spread, kGiB) == "ring/simple");
  // A forced algorithm or protocol is honoured; one that cannot run is an input error.
  NcclRequest ring;
  ring.any_algo = false;
  ring.algo = NcclAlgo::ring;
  CHECK(pick(one, kGiB, ring) == "ring/simple");
  ring.any_proto = false;
  ring.proto = NcclProto::ll128;
  CHECK(pick(one, kGiB, ring) == "ring/ll128");
  NcclRequest nvls;
  nvls.any_algo = false;
  nvls.algo = NcclAlgo::nvls;
  CHECK(orrery::testing::error_of([&] { (void)pick(shape("dgx-a100:nodes=1"), kGiB, nvls); }).find("NVLS needs an NVSwitch") != std::string::npos);
  CHECK(nccl_unsupported(one, NcclAlgo::pat, NcclProto::simple) == "PAT runs only all-gather and reduce-scatter");
  CHECK(!nccl_unsupported(one, NcclAlgo::collnet_direct, NcclProto::simple).empty());
  CHECK(nccl_unsupported(one, NcclAlgo::nvls, NcclProto::ll) == "nvls runs only the simple protocol");
}

// Channels: the graph's (twice what fits the NVLink share) and, for small sizes, fewer
// (enqueue.cc: a channel per 512 threads x 64 bytes of Simple).
TEST_CASE("channels of the graph and per size") {
  const CommShape one = shape("dgx-h100:nodes=1");
  const CommParams nccl = CommParams::nccl();
  // H100: 450 GB/s x 0.824 = 370.8; 60 GB/s channels fit 6 times, doubled to 12 of 30 GB/s.
  const NcclCost big = nccl_cost_of(one, 8 * kGiB, NcclAlgo::ring, NcclProto::simple, nccl);
  CHECK(big.channels == 12);
  CHECK(big.channels_used == 12);
  // 12 x 30 GB/s of bus bandwidth: 8 GiB in 2(n-1)/n x 8 GiB / 360 GB/s after the latency.
  CHECK(big.time_s == orrery::testing::Approx(big.latency_s + 8 * kGiB * 14 / 8 / 360e9).epsilon(1e-12));
  CHECK(nccl_cost_of(one, 65535, NcclAlgo::ring, NcclProto::simple, nccl).channels_used == 1);
  CHECK(nccl_cost_of(one, 65536, NcclAlgo::ring, NcclProto::simple, nccl).channels_used == 2);
  NcclRequest at_least;
  at_least.min_channels = 24;  // more than the graph has: capped at it
  CHECK(nccl_cost_of(one, 32768, NcclAlgo::ring, NcclProto::simple, nccl, at_least).channels_used == 12);
  // Fixed channels (NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS): fewer move less, more share
  // the graph's bandwidth.
  NcclRequest six, twenty;
  six.channels = 6;
  twenty.channels = 20;
  const auto data = [&](const NcclRequest& r) {
    const NcclCost c = nccl_cost_of(one, 8 * kGiB, NcclAlgo::ring, NcclProto::simple, nccl, r);
    return c.time_s - c.latency_s;
  };
  CHECK(data(six) == orrery::testing::Approx(data({}) * 12 / 6).epsilon(1e-12));
  CHECK(data(twenty) == orrery::testing::Approx(data({})).epsilon(1e-12));
  CHECK(nccl_cost_of(one, 8 * kGiB, NcclAlgo::ring, NcclProto::simple, nccl, twenty).channels == 20);
  // Across nodes, two channels per NIC.
  CHECK(nccl_cost_of(shape("dgx-h100:nodes=2"), kGiB, NcclAlgo::ring, NcclProto::simple, nccl).channels == 16);
}

// The fitted model keeps each algorithm within what its links carry: a tree's (and an
// NVLS-tree's) algorithm bandwidth within its node's NIC share, where NCCL's own model prices
// two-node trees at NVLink speed.
TEST_CASE("physical caps: a tree moves no more than its node's NICs") {
  const CommShape s = shape("dgx-a100:nodes=2,nic=50Gb/s,net=efa");
  const CommParams fitted = CommParams::fitted();
  const NcclCost c = nccl_cost(s, 8 * kGiB, fitted);
  CHECK(c.algo == NcclAlgo::tree);
  const double nic = s.net_GBps * 1e9 * fitted.net_share[static_cast<std::size_t>(NetKind::efa)];
  CHECK(8 * kGiB / c.time_s <= nic * (1 + 1e-12));
  CHECK(8 * kGiB / nccl_cost(s, 8 * kGiB, CommParams::nccl()).time_s > 2 * nic);
}

// The model's time grows with the size for every shape and op (with one parameter set for the
// choice and the time, the fastest pair's time cannot fall), and all-to-all pays the network for
// the peers beyond the node.
TEST_CASE("times grow with size; all-to-all and send/recv") {
  for (const char* spec : {"dgx-h100:nodes=1", "dgx-h100:nodes=4", "dgx-a100:nodes=2,nic=200Gb/s", "nvl72:domains=2", "dgx-b200:nodes=2,gpus_per_node=1"}) {
    for (const CollectiveOp op : {CollectiveOp::all_reduce, CollectiveOp::all_gather, CollectiveOp::reduce_scatter, CollectiveOp::all_to_all,
                                  CollectiveOp::send_recv, CollectiveOp::broadcast}) {
      CAPTURE(spec);
      CAPTURE(to_string(op));
      const CommShape s = shape(spec, op);
      double last = 0;
      for (double bytes = 8; bytes <= 16 * kGiB; bytes *= 4) {
        const double t = nccl_cost(s, bytes, CommParams::nccl()).time_s;
        CHECK(t >= last);
        CHECK(t > 0);
        last = t;
      }
    }
  }
  // 8 x 8 GPUs: 56 of 63 peers are across the network, at a GPU's NIC share.
  const CommShape a2a = shape("dgx-h100:nodes=8", CollectiveOp::all_to_all);
  const CommParams f = CommParams::fitted();
  const NcclCost c = nccl_cost(a2a, 8 * kGiB, f);
  const double nic = 50e9 * f.net_share[0];
  CHECK(c.time_s - c.latency_s == orrery::testing::Approx(8 * kGiB * 56 / 64 / nic).epsilon(1e-9));
}

// nccl_flows: NCCL's choice as flows. Alone on the fabric, the flows of a ring or a tree across
// servers take NCCL's closed-form time (the same latency, the same link shares; trees in NCCL's
// shape: a chain per server, a double binary tree of the chains' heads); a protocol below Simple
// slows the links.
TEST_CASE("nccl_flows: alone, the flows take the closed form's time") {
  for (const char* fabric : {"dgx-h100:nodes=2", "dgx-h100:nodes=4"}) {
    const Topology t = build_topology(fabric);
    for (const NcclAlgo algo : {NcclAlgo::ring, NcclAlgo::tree}) {
      for (const double bytes : {16e6, 256e6}) {
        CAPTURE(fabric);
        CAPTURE(to_string(algo));
        CAPTURE(bytes);
        CollectiveSpec spec;
        spec.op = CollectiveOp::all_reduce;
        spec.size = sim::Bytes(bytes);
        NcclRequest request;
        request.any_algo = false;
        request.algo = algo;
        request.any_proto = false;
        request.proto = NcclProto::simple;
        const NcclFlows f = nccl_flows(t, spec, request);
        CHECK(f.spec.algo == flow_algo(algo, CollectiveOp::all_reduce));
        CHECK(std::fabs(f.spec.latency.to_seconds() - f.nccl.latency_s) <= 1e-9);  // rounded up to a nanosecond
        CHECK(!f.spec.link_latency);
        const double flows = run_collective(t, f.spec, f.efficiency).time.to_seconds();
        CHECK(flows >= f.nccl.latency_s);
        if (algo == NcclAlgo::ring) {
          CHECK(flows == orrery::testing::Approx(f.nccl.time_s).epsilon(0.02));
        } else if (std::string_view(fabric) == "dgx-h100:nodes=4") {
          CHECK(flows == orrery::testing::Approx(f.nccl.time_s).epsilon(0.12));
        } else {
          // Two servers: each head NIC carries one channel up and down, faster than NCCL's
          // tree bandwidth (half its bus bandwidth) prices it.
          CHECK(flows < f.nccl.time_s);
          CHECK(flows > 0.7 * f.nccl.time_s);
        }
      }
    }
  }
  // LL128 at a mid size: below Simple's rate on every link kind.
  CollectiveSpec spec;
  spec.op = CollectiveOp::all_reduce;
  spec.size = sim::Bytes(16e6);
  NcclRequest ll128;
  ll128.any_algo = false;
  ll128.algo = NcclAlgo::ring;
  ll128.any_proto = false;
  ll128.proto = NcclProto::ll128;
  const NcclFlows f = nccl_flows(build_topology("dgx-a100:nodes=1"), spec, ll128);
  CHECK(f.efficiency.nvlink < CommParams::fitted().nvlink_share[static_cast<std::size_t>(GpuArch::ampere)]);
}
