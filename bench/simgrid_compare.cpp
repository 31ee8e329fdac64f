// Orrery's flow network against SimGrid 3.32, the reference flow-level simulator, on the same
// flows: a fat-tree of 1,024 hosts (32 leaves of 32, 32 spines, 400 Gb/s), routes chosen by
// Orrery's ECMP and handed to SimGrid explicitly, all latencies zero. Phase A: a random
// permutation, 1 GB per host. Phase B (after A): an all-to-all among 128 hosts spread over all
// leaves, 100 MB per flow. SimGrid runs CM02 with its TCP factors neutralised: bandwidth and
// latency factors 1, weight-S 0, TCP-gamma 0, no cross-traffic; with zero latency every flow's
// sharing penalty is 1 (network_cm02.cpp), i.e. plain max-min. Prints the largest relative
// difference of per-flow completion times and the wall-time ratio Orrery / SimGrid.
//   orrery_bench_simgrid [--quick] [--out figures.json --units-out units.tsv]  (orrery_bench runs it)
#include "models/network/topology.hpp"
#include "sim/flow_network.hpp"

#include <simgrid/s4u.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <tuple>
#include <numeric>
#include <random>
#include <set>

namespace sg4 = simgrid::s4u;
using namespace orrery;

namespace {

struct Flow {
  std::uint32_t src, dst;  // host (GPU) indices
  double bytes;
  int phase;
  std::vector<models::LinkIndex> route;
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Orrery: phase B starts when phase A's last flow ends. Returns completion time - phase start.
std::vector<double> run_orrery(const models::Topology& t, const std::vector<Flow>& flows, double& wall) {
  const auto start = std::chrono::steady_clock::now();
  sim::Engine engine;
  sim::FlowNetwork net(engine);
  for (const models::TopoLink& l : t.links()) net.add_link(l.bandwidth, sim::Duration::zero());
  struct Observer : sim::FlowObserver {
    const std::vector<Flow>* flows;
    sim::FlowNetwork* net;
    std::vector<double> done;
    std::size_t left_in_a = 0;
    double phase_start = 0;
    std::vector<sim::LinkId> route;
    void launch(int phase, double now) {
      phase_start = now;
      for (std::size_t i = 0; i < flows->size(); ++i) {
        const Flow& f = (*flows)[i];
        if (f.phase != phase) continue;
        route.clear();
        for (const auto l : f.route) route.push_back(sim::LinkId(l));
        net->start(route, sim::Bytes(f.bytes), i);
      }
    }
    void on_flow_complete(sim::FlowId, std::uint64_t tag, sim::Time now) override {
      done[tag] = now.since_start().to_seconds() - phase_start;
      if ((*flows)[tag].phase == 0 && --left_in_a == 0) launch(1, now.since_start().to_seconds());
    }
  } obs;
  obs.flows = &flows;
  obs.net = &net;
  obs.done.assign(flows.size(), -1);
  obs.left_in_a = static_cast<std::size_t>(std::count_if(flows.begin(), flows.end(), [](const Flow& f) { return f.phase == 0; }));
  net.set_observer(&obs);
  obs.launch(0, 0);
  engine.run();
  wall = seconds_since(start);
  return obs.done;
}

std::vector<double> run_simgrid(int argc, char** argv, const models::Topology& t, const std::vector<Flow>& flows, double& wall) {
  sg4::Engine e(&argc, argv);
  for (const char* cfg : {"network/model:CM02", "network/latency-factor:1", "network/bandwidth-factor:1", "network/weight-S:0",
                          "network/TCP-gamma:0", "network/crosstraffic:0", "maxmin/precision:1e-10", "surf/precision:1e-12"}) {
    sg4::Engine::set_config(cfg);
  }
  auto* zone = sg4::create_full_zone("fabric");
  std::vector<sg4::Host*> hosts;
  for (std::size_t g = 0; g < t.gpus().size(); ++g) hosts.push_back(zone->create_host(fmt::format("h{}", g), 1e9)->seal());
  // One split-duplex link per full-duplex pair (directed links 2k and 2k+1): UP is 2k, DOWN 2k+1.
  std::vector<sg4::SplitDuplexLink*> links;
  for (models::LinkIndex l = 0; l < t.links().size(); l += 2) {
    auto* link = zone->create_split_duplex_link(fmt::format("l{}", l / 2), t.link(l).bandwidth.value());
    link->set_latency(0);
    link->seal();
    links.push_back(link);
  }
  std::vector<std::size_t> host_of(t.nodes().size(), 0);
  for (std::size_t g = 0; g < t.gpus().size(); ++g) host_of[t.gpus()[g]] = g;
  std::set<std::pair<std::uint32_t, std::uint32_t>> routed;
  for (const Flow& f : flows) {
    if (!routed.insert({f.src, f.dst}).second) continue;
    std::vector<sg4::LinkInRoute> route;
    for (const auto l : f.route) {
      route.emplace_back(links[l / 2], l % 2 == 0 ? sg4::LinkInRoute::Direction::UP : sg4::LinkInRoute::Direction::DOWN);
    }
    zone->add_route(hosts[f.src]->get_netpoint(), hosts[f.dst]->get_netpoint(), nullptr, nullptr, route, false);
  }
  zone->seal();

  // Each comm's kernel finish time (get_finish_time), read after the phase: the completion
  // signal fires when the actor observes a comm in wait_all, which can be later.
  std::vector<double> done(flows.size(), -1);
  std::vector<sg4::CommPtr> all(flows.size());
  double phase_start = 0;
  sg4::Actor::create("driver", hosts[0], [&] {
    for (int phase = 0; phase < 2; ++phase) {
      phase_start = sg4::Engine::get_clock();
      std::vector<sg4::CommPtr> comms;
      for (std::size_t i = 0; i < flows.size(); ++i) {
        if (flows[i].phase != phase) continue;
        auto comm = sg4::Comm::sendto_init(hosts[flows[i].src], hosts[flows[i].dst]);
        comm->set_payload_size(static_cast<std::uint64_t>(flows[i].bytes));
        comm->set_name(fmt::format("f{}", i));
        comm->start();
        comms.push_back(comm);
        all[i] = comm;
      }
      sg4::Comm::wait_all(comms);
      for (std::size_t i = 0; i < flows.size(); ++i) {
        if (flows[i].phase == phase) done[i] = all[i]->get_finish_time() - phase_start;
      }
      all.assign(flows.size(), nullptr);
    }
  });
  const auto start = std::chrono::steady_clock::now();
  e.run();
  wall = seconds_since(start);
  return done;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::string out_path, units_path;
  std::vector<char*> simgrid_args{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      out_path = argv[++i];
    } else if (std::strcmp(argv[i], "--units-out") == 0 && i + 1 < argc) {
      units_path = argv[++i];
    } else {
      simgrid_args.push_back(argv[i]);  // SimGrid's own --cfg and --log flags
    }
  }
  argc = static_cast<int>(simgrid_args.size());
  argv = simgrid_args.data();
  const int hosts = quick ? 256 : 1024, a2a = quick ? 32 : 128;
  const models::Topology t = models::build_topology(fmt::format("dgx-h100:nodes={},gpus_per_node=1,fabric=fat-tree,leaf_ports=32", hosts));
  std::vector<Flow> flows;
  std::mt19937_64 rng(2024);
  std::vector<std::uint32_t> perm(static_cast<std::size_t>(hosts));
  std::iota(perm.begin(), perm.end(), 0u);
  do std::shuffle(perm.begin(), perm.end(), rng);
  while ([&] { for (std::uint32_t i = 0; i < perm.size(); ++i) if (perm[i] == i) return true; return false; }());
  for (std::uint32_t i = 0; i < perm.size(); ++i) flows.push_back({i, perm[i], 1e9, 0, {}});
  const std::uint32_t stride = static_cast<std::uint32_t>(hosts / a2a);
  for (std::uint32_t a = 0; a < static_cast<std::uint32_t>(a2a); ++a) {
    for (std::uint32_t b = 0; b < static_cast<std::uint32_t>(a2a); ++b) {
      if (a != b) flows.push_back({a * stride, b * stride, 1e8, 1, {}});
    }
  }
  for (std::size_t i = 0; i < flows.size(); ++i) flows[i].route = t.route(t.gpus()[flows[i].src], t.gpus()[flows[i].dst], i);

  double orrery_wall = 0, simgrid_wall = 0;
  const std::vector<double> ours = run_orrery(t, flows, orrery_wall);
  const std::vector<double> theirs = run_simgrid(argc, argv, t, flows, simgrid_wall);
  double worst = 0;
  std::size_t compared = 0;
  for (std::size_t i = 0; i < flows.size(); ++i) {
    if (ours[i] < 0 || theirs[i] < 0) {
      fmt::print(stderr, "flow {} did not complete in {}\n", i, ours[i] < 0 ? "Orrery" : "SimGrid");
      return 1;
    }
    worst = std::max(worst, std::fabs(ours[i] - theirs[i]) / theirs[i]);
    ++compared;
  }
  const std::vector<std::tuple<std::string, double, std::string>> figures = {
      {"simgrid.hosts", hosts, "hosts (fat-tree, ECMP)"},
      {"simgrid.flows", static_cast<double>(compared), fmt::format("flows ({} permutation + {} all-to-all)", hosts, compared - static_cast<std::size_t>(hosts))},
      {"simgrid.max_relative_diff", worst, "per-flow completion time (target <= 1e-6)"},
      {"simgrid.orrery_wall", orrery_wall, "s"},
      {"simgrid.simgrid_wall", simgrid_wall, "s (SimGrid 3.32, CM02 as max-min)"},
      {"simgrid.wall_ratio", orrery_wall / simgrid_wall, "x Orrery / SimGrid (target <= 0.5)"},
  };
  std::string json = "{\n", units;
  for (std::size_t i = 0; i < figures.size(); ++i) {
    const auto& [name, value, unit] = figures[i];
    fmt::print("{:<28} {:>12.4g}  {}\n", name, value, unit);
    json += fmt::format("  \"{}\": {}{}\n", name, value, i + 1 < figures.size() ? "," : "");
    units += fmt::format("{}\t{}\n", name, unit);
  }
  json += "}\n";
  if (!out_path.empty()) std::ofstream(out_path) << json;
  if (!units_path.empty()) std::ofstream(units_path) << units;
  return worst <= 1e-6 ? 0 : 2;
}
