// Flow-network scale: an all-to-all among 1,024 hosts (1,047,552 flows) on a two-level
// leaf-spine (32 leaves of 32 hosts, 16 spines, 400 Gb/s everywhere; ECMP by flow index).
// Prints wall time, solves, the work they did, and peak RSS.
#include "bench.hpp"

#include "sim/flow_network.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <stdexcept>

namespace orrery::bench {

namespace {
double peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;  // ru_maxrss is in KiB on Linux
}
}  // namespace

void bench_flow_all_to_all(Figures& out, bool quick) {
  const std::uint32_t hosts = quick ? 128 : 1024, per_leaf = 32, spines = 16;
  const std::uint32_t leaves = hosts / per_leaf;
  const sim::BytesPerSecond bw(50e9);
  const auto latency = sim::Duration::nanoseconds(500);

  const auto start = std::chrono::steady_clock::now();
  sim::Engine engine;
  sim::FlowNetwork net(engine);
  std::vector<sim::LinkId> host_up, host_down, leaf_up, leaf_down;  // leaf_* indexed leaf*spines+spine
  for (std::uint32_t h = 0; h < hosts; ++h) {
    host_up.push_back(net.add_link(bw, latency));
    host_down.push_back(net.add_link(bw, latency));
  }
  for (std::uint32_t l = 0; l < leaves * spines; ++l) {
    leaf_up.push_back(net.add_link(bw, latency));
    leaf_down.push_back(net.add_link(bw, latency));
  }
  struct Count : sim::FlowObserver {
    std::uint64_t done = 0;
    void on_flow_complete(sim::FlowId, std::uint64_t, sim::Time) override { ++done; }
  } count;
  net.set_observer(&count);
  std::uint64_t flows = 0;
  std::vector<sim::LinkId> route;
  for (std::uint32_t s = 0; s < hosts; ++s) {
    for (std::uint32_t d = 0; d < hosts; ++d) {
      if (s == d) continue;
      route.clear();
      route.push_back(host_up[s]);
      const std::uint32_t ls = s / per_leaf, ld = d / per_leaf;
      if (ls != ld) {
        const std::uint32_t spine = (s * 7919u + d * 104729u) % spines;  // deterministic ECMP
        route.push_back(leaf_up[ls * spines + spine]);
        route.push_back(leaf_down[ld * spines + spine]);
      }
      route.push_back(host_down[d]);
      net.start(route, sim::Bytes(1 << 20), flows++);
    }
  }
  engine.run();
  const double wall = seconds_since(start);
  if (count.done != flows) throw std::logic_error("all-to-all lost flows");
  const std::string prefix = fmt::format("flow.all_to_all.hosts={}", hosts);
  out.push_back({prefix + ".flows", static_cast<double>(flows), "flows"});
  out.push_back({prefix + ".wall", wall, "s (target < 30)"});
  out.push_back({prefix + ".simulated", engine.now().since_start().to_seconds(), "s simulated"});
  out.push_back({prefix + ".solves", static_cast<double>(net.solves()), "re-solves"});
  out.push_back({prefix + ".solve_work", static_cast<double>(net.solve_work()), "flow-link visits"});
  out.push_back({prefix + ".peak_rss", peak_rss_bytes() / 1e9, "GB (target < 4)"});
}

}  // namespace orrery::bench
