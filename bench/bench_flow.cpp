// Network scale, on the built-in rail-optimized fabric (DGX H100 servers, 8 rails, 400 Gb/s
// NICs, leaf-spine):
//  - an all-to-all among 1,024 GPUs (128 servers): 1,047,552 flows at once, with adaptive
//    routing (spray) and with per-flow ECMP, whose hash collisions on the spines give every
//    flow its own rate, so that each departure re-solves tens of thousands of flows; ECMP
//    exactly, then with departures re-solved on a 1 us grid (FlowNetwork's departure quantum),
//    the two compared in the same run (wall time and simulated completion time);
//  - a hierarchical ring all-reduce of 1 GiB over 4,096 GPUs (512 servers): NVLink
//    reduce-scatter, 8 rail rings of 512, NVLink all-gather; 4.2M transfers in sequence;
//  - NCCL's choice (models::nccl_flows, the step emulator's default) against the line-rate flows
//    it ran before (`--comm line-rate`), in the same process: all-reduce of 16 MiB and 1 GiB
//    and all-gather of 1 GiB on 256 GPUs, all-to-all of 1 GB per rank on 1,024; the wall-time
//    ratio, both simulated times.
// Prints wall time, flows, re-solves and peak RSS (each benchmark group runs in its own process).
#include "bench.hpp"

#include "models/network/collectives.hpp"
#include "models/network/nccl.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

namespace orrery::bench {

double peak_rss_gb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0 / 1e9;  // ru_maxrss is in KiB on Linux
}

namespace {
struct Run {
  double wall;
  sim::Duration simulated;
};

Run run(Figures& out, const std::string& name, const std::string& topology_spec, models::CollectiveSpec spec, double wall_target) {
  const auto start = std::chrono::steady_clock::now();
  const models::Topology topology = models::build_topology(topology_spec);
  const models::CollectiveResult r = models::run_collective(topology, spec);
  const double wall = seconds_since(start);
  out.push_back({name + ".gpus", static_cast<double>(r.ranks), "GPUs"});
  out.push_back({name + ".flows", static_cast<double>(r.flows), "flows"});
  out.push_back({name + ".solves", static_cast<double>(r.solves), "re-solves"});
  out.push_back({name + ".simulated", r.time.to_seconds(), "s simulated"});
  out.push_back({name + ".busbw", r.busbw / 1e9, "GB/s"});
  out.push_back({name + ".wall", wall, wall_target > 0 ? fmt::format("s (target < {})", wall_target) : "s"});
  out.push_back({name + ".peak_rss", peak_rss_gb(), "GB"});
  return {wall, r.time};
}
}  // namespace

void bench_network_all_to_all(Figures& out, bool quick, std::string_view routing) {
  models::CollectiveSpec spec;
  spec.op = models::CollectiveOp::all_to_all;
  spec.algo = models::CollectiveAlgo::direct;
  spec.size = sim::Bytes(quick ? 128e6 : 1024e6);  // per rank: 1 MB to each peer
  run(out, fmt::format("network.all_to_all.{}", routing),
      fmt::format("dgx-h100:nodes={},routing={}", quick ? 16 : 128, routing), spec, 30);
  out.back().unit = "GB (target < 4)";
}

void bench_network_all_to_all_spray(Figures& out, bool quick) { bench_network_all_to_all(out, quick, "spray"); }

void bench_network_all_to_all_ecmp(Figures& out, bool quick) {
  models::CollectiveSpec spec;
  spec.op = models::CollectiveOp::all_to_all;
  spec.algo = models::CollectiveAlgo::direct;
  spec.size = sim::Bytes(quick ? 128e6 : 1024e6);
  const std::string topology = fmt::format("dgx-h100:nodes={},routing=ecmp", quick ? 16 : 128);
  const Run exact = run(out, "network.all_to_all.ecmp", topology, spec, 30);
  spec.quantum = sim::Duration::nanoseconds(1000);
  const Run deferred = run(out, "network.all_to_all.ecmp_quantum_1us", topology, spec, 30);
  out.push_back({"network.all_to_all.ecmp_quantum_1us.speedup", exact.wall / deferred.wall, "x the exact run's speed"});
  out.push_back({"network.all_to_all.ecmp_quantum_1us.time_error",
                 100.0 * (deferred.simulated.to_seconds() / exact.simulated.to_seconds() - 1.0), "% simulated time vs exact"});
  // The error is about a quantum, so it shows on a short collective: 256 GPUs, 4 MB per rank.
  models::CollectiveSpec small = spec;
  small.size = sim::Bytes(4e6);
  const models::Topology fabric = models::build_topology("dgx-h100:nodes=32,routing=ecmp");
  small.quantum = sim::Duration::zero();
  const double short_exact = models::run_collective(fabric, small).time.to_seconds();
  out.push_back({"network.all_to_all.ecmp_short.simulated", short_exact, "s simulated (256 GPUs, 4 MB per rank, exact)"});
  for (const std::int64_t q : {1000, 10000}) {
    small.quantum = sim::Duration::nanoseconds(q);
    const double t = models::run_collective(fabric, small).time.to_seconds();
    out.push_back({fmt::format("network.all_to_all.ecmp_short.quantum_{}us.time_error", q / 1000), 100.0 * (t / short_exact - 1.0),
                   "% simulated time vs exact"});
  }
}

void bench_network_hierarchical(Figures& out, bool quick) {
  models::CollectiveSpec spec;
  spec.op = models::CollectiveOp::all_reduce;
  spec.algo = models::CollectiveAlgo::hierarchical;
  spec.size = sim::Bytes(1073741824.0);
  spec.channels = 1;
  run(out, "network.hierarchical_all_reduce", quick ? "dgx-h100:nodes=32" : "dgx-h100:nodes=512", spec, 0);
}

void bench_network_nccl(Figures& out, bool quick) {
  // Rings over all 1,024 GPUs run 2 x 1,023 steps per channel (16.7M transfers): the all-reduce
  // and all-gather cases run on 256 GPUs, the all-to-all (1M flows at once) on 1,024.
  const models::Topology servers32 = models::build_topology(quick ? "dgx-h100:nodes=4" : "dgx-h100:nodes=32");
  // Adaptive routing (spray) for the all-to-all: per-flow ECMP's exact run is the
  // network.all_to_all.ecmp group's (minutes).
  const models::Topology servers128 = models::build_topology(quick ? "dgx-h100:nodes=16,routing=spray" : "dgx-h100:nodes=128,routing=spray");
  struct Case {
    const char* name;
    models::CollectiveOp op;
    double bytes;
    const models::Topology& topology;
  };
  const std::vector<Case> cases = {{"all_reduce_16MiB", models::CollectiveOp::all_reduce, 16777216.0, servers32},
                                   {"all_reduce_1GiB", models::CollectiveOp::all_reduce, 1073741824.0, servers32},
                                   {"all_gather_1GiB", models::CollectiveOp::all_gather, 1073741824.0, servers32},
                                   {"all_to_all_1GB", models::CollectiveOp::all_to_all, quick ? 128e6 : 1024e6, servers128}};
  for (const Case& c : cases) {
    const models::Topology& topology = c.topology;
    models::CollectiveSpec line;
    line.op = c.op;
    line.algo = c.op == models::CollectiveOp::all_to_all ? models::CollectiveAlgo::direct : models::CollectiveAlgo::ring;
    line.size = sim::Bytes(c.bytes);
    auto start = std::chrono::steady_clock::now();
    const models::CollectiveResult a = models::run_collective(topology, line);
    const double line_wall = seconds_since(start);
    start = std::chrono::steady_clock::now();
    const models::NcclFlows f = models::nccl_flows(topology, line);
    const models::CollectiveResult b = models::run_collective(topology, f.spec, f.efficiency);
    const double nccl_wall = seconds_since(start);
    const std::string name = fmt::format("network.nccl.{}", c.name);
    out.push_back({name + ".gpus", static_cast<double>(b.ranks), "GPUs"});
    out.push_back({name + ".line_rate.wall", line_wall, fmt::format("s ({} flows, simulated {})", a.flows, sim::to_string(a.time))});
    out.push_back({name + ".nccl.wall", nccl_wall,
                   fmt::format("s ({} flows, {}/{}, simulated {})", b.flows, models::to_string(f.nccl.algo), models::to_string(f.nccl.proto),
                               sim::to_string(b.time))});
    out.push_back({name + ".nccl.wall_ratio", nccl_wall / line_wall, "x the line-rate flows' wall time"});
  }
  out.push_back({"network.nccl.peak_rss", peak_rss_gb(), "GB"});
}

}  // namespace orrery::bench
