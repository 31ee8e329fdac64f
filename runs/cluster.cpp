// `orrery cluster`: a job trace on a cluster under a scheduler.
#include "runs/runs.hpp"
#include "runs/options.hpp"
#include "runs/cluster_run.hpp"
#include "reports/html_pages.hpp"
#include "reports/cluster_outputs.hpp"
#include "reports/human.hpp"
#include "runs/policy_spec.hpp"
#include "runs/progress.hpp"
#include "runs/report_out.hpp"

#include "models/cluster/cluster.hpp"
#include "models/cluster/cluster_step.hpp"
#include "policies/pipeline.hpp"
#include "policies/cluster.hpp"
#include "sim/error.hpp"
#include "traces/atomic_file.hpp"
#include "traces/cluster_json.hpp"
#include "traces/throughput_tables.hpp"
#include "reports/report.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <ostream>

namespace orrery::runs {

ClusterSetup load_cluster_setup(const std::string& scenario_path, const std::string& jobs_override, bool skip_bad_rows) {
  ClusterSetup setup;
  setup.scenario = traces::load_cluster_scenario(scenario_path);
  const traces::ClusterScenario& sc = setup.scenario;
  setup.jobs_path = jobs_override.empty() ? sc.jobs_path : jobs_override;
  setup.trace = traces::read_job_trace(sc, setup.jobs_path, skip_bad_rows);
  if (sc.throughput_source == "arena") {
    setup.throughput = std::make_unique<traces::ArenaThroughput>(sc.table_path, sc.cluster);
  } else if (sc.throughput_source == "gavel") {
    setup.throughput = std::make_unique<traces::GavelThroughput>(sc.table_path, sc.cluster);
  } else if (sc.throughput_source == "elasticflow") {
    setup.throughput = std::make_unique<traces::ElasticFlowThroughput>(sc.table_path);
  } else if (sc.throughput_source == "pollux") {
    setup.throughput = std::make_unique<traces::AdaptdlThroughput>(traces::load_pollux_throughput(sc.table_path));
  } else if (sc.throughput_source == "sia") {
    setup.throughput = std::make_unique<traces::AdaptdlThroughput>(traces::load_sia_throughput(sc.table_path));
  } else if (sc.throughput_source == "step") {
    setup.schedule = policies::pipeline_schedules().create(sc.step_schedule, {}, {scenario_path, "/throughput/schedule"});
    models::StepThroughputOptions so;
    so.default_model = sc.step_model;
    so.global_batch = sc.step_global_batch;
    so.seq_len = sc.step_seq_len;
    so.reference_gpu = sc.reference_gpu;
    so.cluster = sc.cluster;
    setup.throughput = std::make_unique<models::StepThroughput>(*setup.schedule, so);
  } else {
    setup.throughput = std::make_unique<models::TraceDurationModel>(sc.scaling_exponent, sc.spread_factor, sc.cluster);
  }
  // A job that cannot run where it asks (its type, or any type when it names none), or that has
  // no work in the source's units, is an error: the baselines keep the requested type, so it
  // would wait forever. With skip_bad_rows such jobs are left out and counted.
  std::vector<models::Job> runnable;
  for (models::Job& j : setup.trace.jobs) {
    std::string why;
    if (!(setup.throughput->work(j) > 0)) {
      why = fmt::format("job has no work in the units of throughput source {} ({})", sim::quote(sc.throughput_source),
                        sc.throughput_source == "trace" ? "no duration" : "no iterations");
    } else {
      bool somewhere = false;
      for (const models::NodePool& p : sc.cluster.pools) {
        if (!j.gpu_type.empty() && p.gpu_type != j.gpu_type) continue;
        somewhere = somewhere || (p.nodes * p.gpus_per_node >= j.gpus &&
                                  setup.throughput->rate(j, p.gpu_type, j.gpus, sc.cluster.min_nodes(p.gpu_type, j.gpus)) > 0);
      }
      if (!somewhere) {
        why = fmt::format("job asks for {} {} GPUs; no pool of the cluster can run it{}", j.gpus, j.gpu_type.empty() ? "any" : j.gpu_type,
                          sc.throughput_source == "step"    ? " (too few GPUs, or no parallel plan fits in memory)"
                          : sc.throughput_source != "trace" ? " (the throughput table has no rate for it there)"
                                                            : "");
      }
    }
    if (why.empty()) {
      runnable.push_back(std::move(j));
    } else if (skip_bad_rows) {
      ++setup.unrunnable;
    } else {
      throw sim::InputError(setup.jobs_path, j.id, why + "; --skip-bad-rows leaves such jobs out");
    }
  }
  if (runnable.empty()) throw sim::InputError(setup.jobs_path, "", "no job of the trace can run on this cluster");
  setup.trace.jobs = std::move(runnable);
  return setup;
}

std::string skipped_note(const ClusterSetup& setup) {
  std::string note;
  if (setup.trace.skipped > 0) note += fmt::format("; {} bad rows skipped", setup.trace.skipped);
  if (setup.unrunnable > 0) note += fmt::format("; {} jobs that cannot run here skipped", setup.unrunnable);
  return note.empty() ? note : " (" + note.substr(2) + ")";
}

std::string cluster_subtitle(const ClusterSetup& setup) {
  return fmt::format("{} GPUs in {} pools; {} jobs from {}{}", setup.scenario.cluster.total_gpus(), setup.scenario.cluster.pools.size(),
                     setup.trace.jobs.size(), setup.jobs_path, skipped_note(setup));
}

ClusterRun run_cluster(const ClusterSetup& setup, const PolicySpec& policy, std::string_view flag, bool record_allocations,
                       const std::function<void()>& on_job_finished) {
  auto scheduler = policies::cluster_schedulers().create(policy.name, policy.params, {"<command line>", std::string(flag)});
  models::ClusterOptions options;
  options.restart_overhead_s = setup.scenario.restart_overhead_s;
  options.record_allocations = record_allocations;
  options.fabric = setup.scenario.fabric;
  options.on_job_finished = on_job_finished;
  models::ClusterSim sim(setup.scenario.cluster, setup.trace.jobs, *setup.throughput, *scheduler, options);
  return {std::string(scheduler->name()), sim.run()};
}

void cluster(const ClusterOptions& o, std::ostream& out) {
  check_outputs({{"--report", o.report_path}, {"--jobs-csv", o.csv_path}, {"--html", o.html_path}, {"--timeline", o.timeline_path},
                 {"--timeline", o.timeline_path.empty() ? "" : std::filesystem::path(o.timeline_path).replace_extension(".csv").string()}});
  const PolicySpec spec = parse_policy_spec(o.policy, "--policy");
  // The policy is checked before the trace is read: a typo fails fast.
  (void)policies::cluster_schedulers().create(spec.name, spec.params, {"<command line>", "--policy"});
  const ClusterSetup setup = load_cluster_setup(o.scenario_path, o.jobs_path, o.skip_bad_rows);
  const traces::ClusterScenario& sc = setup.scenario;
  Progress progress("cluster " + spec.name, static_cast<std::int64_t>(setup.trace.jobs.size()), "jobs");
  const ClusterRun run = run_cluster(setup, spec, "--policy", !o.timeline_path.empty() || !o.html_path.empty(), [&] { progress.advance(); });
  progress.finish();
  const models::ClusterResult& r = run.result;

  out << fmt::format("cluster    {} GPUs in {} pools; policy {}; {} jobs from {}{}\n", sc.cluster.total_gpus(), sc.cluster.pools.size(),
                     run.policy, setup.trace.jobs.size(), setup.jobs_path,
                     skipped_note(setup));
  out << fmt::format("completed  {}\n", r.completed);
  out << fmt::format("JCT        avg {}, p50 {}, p99 {}\n", reports::human::span(r.avg_jct_s), reports::human::span(r.p50_jct_s), reports::human::span(r.p99_jct_s));
  out << fmt::format("queueing   avg {}\n", reports::human::span(r.avg_queue_s));
  out << fmt::format("makespan   {}; GPU utilisation {}\n", reports::human::span(r.makespan_s), reports::human::percent(r.gpu_utilization));
  out << fmt::format("placement  {} starts spread over more nodes than needed; {} defragmenting migrations\n", r.spread_starts, r.migrations);
  if (sc.fabric.enabled()) {
    out << fmt::format("fabric     {} re-solves; lowest bandwidth share of a job {:.2f}\n", r.fabric_solves, r.min_fabric_share);
  }
  if (report_wanted(o.report_path, o.report_json)) {
    reports::Report rep;
    rep.set("/policy", run.policy);
    rep.set("/jobs", static_cast<std::int64_t>(setup.trace.jobs.size()));
    rep.set("/skipped_rows", static_cast<std::int64_t>(setup.trace.skipped));
    rep.set("/unrunnable_jobs", static_cast<std::int64_t>(setup.unrunnable));
    rep.set("/jobs_completed", static_cast<std::int64_t>(r.completed));
    rep.set("/avg_jct_s", r.avg_jct_s);
    rep.set("/p50_jct_s", r.p50_jct_s);
    rep.set("/p99_jct_s", r.p99_jct_s);
    rep.set("/avg_queue_s", r.avg_queue_s);
    rep.set("/makespan_s", r.makespan_s);
    rep.set("/gpu_utilization", r.gpu_utilization);
    rep.set("/scheduler_calls", static_cast<std::int64_t>(r.scheduler_calls));
    rep.set("/spread_starts", static_cast<std::int64_t>(r.spread_starts));
    rep.set("/migrations", static_cast<std::int64_t>(r.migrations));
    if (sc.fabric.enabled()) rep.set("/min_fabric_share", r.min_fabric_share);
    emit_report(rep, o.report_path, o.report_json);
  }
  if (!o.csv_path.empty()) traces::write_file_atomically(o.csv_path, reports::cluster_jobs_csv(r));
  if (!o.timeline_path.empty()) {
    traces::write_file_atomically(o.timeline_path, reports::cluster_timeline_json(r));
    const std::filesystem::path csv = std::filesystem::path(o.timeline_path).replace_extension(".csv");
    traces::write_file_atomically(csv.string(), reports::cluster_jobs_csv(r));
    out << fmt::format("timeline   {} (nodes, Perfetto) and {} (jobs)\n", o.timeline_path, csv.string());
  }
  if (!o.html_path.empty()) {
    reports::write_cluster_html(o.html_path,
                                {"Cluster replay of " + std::filesystem::path(o.scenario_path).filename().string(), cluster_subtitle(setup),
                                 setup.scenario.cluster.total_gpus()},
                                {run.policy, &run.result});
  }
}

}  // namespace orrery::runs
