// Cluster replay speed: the full Philly trace (Pollux's 82,247 jobs) on a 2,000-GPU cluster
// under FIFO and under Tiresias (target 10 s each); Arena and Gavel on Arena's 1,938 jobs
// (target 60 s). Needs ../shared/data (skipped without it).
#include "bench.hpp"

#include "models/cluster/cluster.hpp"
#include "models/cluster/cluster_step.hpp"
#include "policies/pipeline.hpp"
#include "policies/cluster.hpp"
#include "traces/cluster_json.hpp"

#include <filesystem>
#include <fmt/format.h>

namespace orrery::bench {

void bench_cluster(Figures& out, bool quick) {
  const std::string path = "../shared/data/pollux-adaptdl/traces/philly.csv";
  if (!std::filesystem::exists(path)) {
    fmt::print("cluster: skipped, {} is absent\n", path);
    return;
  }
  traces::JobTrace trace = traces::read_philly_trace(path, false);
  if (quick) trace.jobs.resize(5000);
  const models::ClusterSpec cluster{{{"v100", 250, 8}}};
  const models::TraceDurationModel rate(0.9);
  for (const char* policy : {"fifo", "tiresias"}) {
    auto s = policies::cluster_schedulers().create(policy, {}, {"bench", ""});
    models::ClusterResult r;
    const double wall = best_seconds(1, [&] {
      models::ClusterSim sim(cluster, trace.jobs, rate, *s);
      r = sim.run();
    });
    out.push_back({fmt::format("cluster.philly.{}.wall", policy), wall, fmt::format("s for {} jobs on 2,000 GPUs (target < 10)", trace.jobs.size())});
    out.push_back({fmt::format("cluster.philly.{}.scheduler_calls", policy), static_cast<double>(r.scheduler_calls), "calls"});
  }
  {
    // The shared fabric (16 nodes per leaf, 200 Gb/s NICs, 4:1 uplinks) on the same FIFO replay:
    // its cost as a ratio to the replay without it, measured here.
    auto s = policies::cluster_schedulers().create("fifo", {}, {"bench", ""});
    models::ClusterOptions plain, shared;
    shared.fabric = {16, 25e9, 4, 0.2};
    models::ClusterResult r;
    const double base = best_seconds(1, [&] {
      models::ClusterSim sim(cluster, trace.jobs, rate, *s, plain);
      sim.run();
    });
    const double wall = best_seconds(1, [&] {
      models::ClusterSim sim(cluster, trace.jobs, rate, *s, shared);
      r = sim.run();
    });
    out.push_back({"cluster.philly.fifo_fabric.wall", wall, fmt::format("s for {} jobs with the shared fabric", trace.jobs.size())});
    out.push_back({"cluster.philly.fifo_fabric.vs_plain", wall / base, "x the replay without the fabric"});
    out.push_back({"cluster.philly.fifo_fabric.solves", static_cast<double>(r.fabric_solves), "fabric re-solves"});
  }
  {
    // Job speed from the step emulator (a 1.7B GPT, best plan per shape): the first 2,000 Philly
    // jobs under FIFO on a V100/A100/H100 cluster; every distinct shape searched once.
    const auto schedule = policies::pipeline_schedules().create("1f1b", {}, {"bench", ""});
    models::StepThroughputOptions so;
    so.default_model = "megatron2021-1.7b";
    so.global_batch = 128;
    so.reference_gpu = "a100";
    so.cluster = models::ClusterSpec{{{"v100", 100, 8}, {"a100", 75, 8}, {"h100", 75, 8}}};
    std::vector<models::Job> jobs(trace.jobs.begin(), trace.jobs.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(2000, trace.jobs.size())));
    std::size_t shapes = 0;
    auto s = policies::cluster_schedulers().create("fifo", {}, {"bench", ""});
    const double wall = best_seconds(1, [&] {
      const models::StepThroughput t(*schedule, so);
      models::ClusterSim sim(so.cluster, jobs, t, *s);
      sim.run();
      shapes = t.shapes();
    });
    out.push_back({"cluster.philly2k.step_source.wall", wall, fmt::format("s for {} jobs, speed from the step emulator", jobs.size())});
    out.push_back({"cluster.philly2k.step_source.shapes", static_cast<double>(shapes), "shapes searched"});
  }
  // Arena on Arena's 1,938-job Philly-derived workload and 1,280-GPU cluster: target 60 s.
  const std::string arena_dir = "../shared/data/arena";
  if (std::filesystem::exists(arena_dir + "/simulate_trace_philly.csv")) {
    const models::ClusterSpec arena = traces::read_arena_cluster(arena_dir + "/sim_cluster_spec.json");
    const traces::JobTrace jobs = traces::read_arena_trace(arena_dir + "/simulate_trace_philly.csv", false);
    const traces::ArenaThroughput table(arena_dir + "/prof_database_optimal.csv", arena);
    models::ClusterOptions options;
    options.restart_overhead_s = 30;
    for (const char* policy : {"arena", "gavel"}) {
      auto s = policies::cluster_schedulers().create(policy, {}, {"bench", ""});
      const double wall = best_seconds(1, [&] {
        models::ClusterSim sim(arena, jobs.jobs, table, *s, options);
        sim.run();
      });
      out.push_back({fmt::format("cluster.arena_trace.{}.wall", policy), wall, fmt::format("s for {} jobs (target < 60)", jobs.jobs.size())});
    }
  }
  out.push_back({"cluster.peak_rss", peak_rss_gb(), "GB"});
}

}  // namespace orrery::bench
