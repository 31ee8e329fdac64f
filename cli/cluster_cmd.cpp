// `orrery cluster`: a job trace on a cluster under a scheduler.
#include "cli/commands.hpp"
#include "cli/policy_spec.hpp"

#include "models/cluster.hpp"
#include "policies/cluster.hpp"
#include "sim/error.hpp"
#include "traces/atomic_file.hpp"
#include "traces/cluster_json.hpp"
#include "traces/report.hpp"

#include <fmt/format.h>

#include <memory>
#include <ostream>

namespace orrery::cli {

void cluster(const ClusterOptions& o, std::ostream& out) {
  const traces::ClusterScenario sc = traces::load_cluster_scenario(o.scenario_path);
  const PolicySpec spec = parse_policy_spec(o.policy, "--policy");
  auto scheduler = policies::cluster_schedulers().create(spec.name, spec.params, {"<command line>", "--policy"});
  const std::string jobs_path = o.jobs_path.empty() ? sc.jobs_path : o.jobs_path;
  const traces::JobTrace trace = sc.jobs_format == "philly"     ? traces::read_philly_trace(jobs_path, o.skip_bad_rows)
                                 : sc.jobs_format == "arena"    ? traces::read_arena_trace(jobs_path, o.skip_bad_rows)
                                 : sc.jobs_format == "tiresias" ? traces::read_tiresias_trace(jobs_path, o.skip_bad_rows)
                                                                : traces::read_generic_trace(jobs_path, sc.columns, o.skip_bad_rows);

  std::unique_ptr<models::ThroughputModel> throughput;
  if (sc.throughput_source == "arena") {
    throughput = std::make_unique<traces::ArenaThroughput>(sc.table_path, sc.cluster);
  } else {
    throughput = std::make_unique<models::TraceDurationModel>(sc.scaling_exponent);
  }
  // A job that can run nowhere (more GPUs than any pool, or no throughput there) is an error.
  for (const models::Job& j : trace.jobs) {
    bool somewhere = false;
    for (const models::NodePool& p : sc.cluster.pools) {
      somewhere = somewhere || (p.nodes * p.gpus_per_node >= j.gpus && throughput->rate(j, p.gpu_type, j.gpus, sc.cluster.min_nodes(p.gpu_type, j.gpus)) > 0);
    }
    if (!somewhere) {
      throw sim::InputError(jobs_path, j.id, fmt::format("job asks for {} {} GPUs; no pool of the cluster can run it", j.gpus,
                                                         j.gpu_type.empty() ? "any" : j.gpu_type));
    }
  }
  models::ClusterOptions options;
  options.restart_overhead_s = sc.restart_overhead_s;
  models::ClusterSim sim(sc.cluster, trace.jobs, *throughput, *scheduler, options);
  const models::ClusterResult r = sim.run();

  out << fmt::format("cluster    {} GPUs in {} pools; policy {}; {} jobs from {}{}\n", sc.cluster.total_gpus(), sc.cluster.pools.size(),
                     scheduler->name(), trace.jobs.size(), jobs_path,
                     trace.skipped > 0 ? fmt::format(" ({} bad rows skipped)", trace.skipped) : "");
  out << fmt::format("completed  {}\n", r.completed);
  out << fmt::format("JCT        avg {:.0f} s, p50 {:.0f} s, p99 {:.0f} s\n", r.avg_jct_s, r.p50_jct_s, r.p99_jct_s);
  out << fmt::format("queueing   avg {:.0f} s\n", r.avg_queue_s);
  out << fmt::format("makespan   {:.0f} s; GPU utilisation {:.1f}%\n", r.makespan_s, 100 * r.gpu_utilization);
  if (!o.report_path.empty()) {
    traces::Report rep;
    rep.set("/policy", scheduler->name());
    rep.set("/jobs", static_cast<std::int64_t>(trace.jobs.size()));
    rep.set("/skipped_rows", static_cast<std::int64_t>(trace.skipped));
    rep.set("/jobs_completed", static_cast<std::int64_t>(r.completed));
    rep.set("/avg_jct_s", r.avg_jct_s);
    rep.set("/p50_jct_s", r.p50_jct_s);
    rep.set("/p99_jct_s", r.p99_jct_s);
    rep.set("/avg_queue_s", r.avg_queue_s);
    rep.set("/makespan_s", r.makespan_s);
    rep.set("/gpu_utilization", r.gpu_utilization);
    rep.set("/scheduler_calls", static_cast<std::int64_t>(r.scheduler_calls));
    rep.write(o.report_path);
  }
  if (!o.csv_path.empty()) {
    std::string csv = "job,arrival_s,start_s,end_s,gpus,gpu_type,restarts\n";
    for (const models::JobRecord& j : r.jobs) {
      csv += fmt::format("{},{},{},{},{},{},{}\n", j.id, j.arrival_s, j.start_s, j.end_s, j.gpus, j.gpu_type, j.restarts);
    }
    traces::write_file_atomically(o.csv_path, csv);
  }
}

}  // namespace orrery::cli
