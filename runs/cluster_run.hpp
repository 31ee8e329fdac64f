// A cluster scenario made ready to run: its cluster, its job trace (read once) and the throughput
// model; shared by `orrery cluster` and `orrery compare` on cluster scenarios.
#pragma once

#include "runs/policy_spec.hpp"
#include "models/cluster/cluster.hpp"
#include "models/training/pipeline.hpp"
#include "traces/cluster_json.hpp"

#include <functional>
#include <memory>
#include <string>

namespace orrery::runs {

struct ClusterSetup {
  traces::ClusterScenario scenario;
  std::unique_ptr<models::PipelineSchedule> schedule;  // source "step"
  std::string jobs_path;
  traces::JobTrace trace;
  std::unique_ptr<models::ThroughputModel> throughput;
  std::size_t unrunnable = 0;  // jobs left out with skip_bad_rows: no work, or no pool can run them
};

// Reads the scenario and its trace (`jobs_override` replaces the scenario's path), builds the
// throughput model, and rejects a job that no pool of the cluster can run.
ClusterSetup load_cluster_setup(const std::string& scenario_path, const std::string& jobs_override, bool skip_bad_rows);

// " (3 bad rows skipped; 2 jobs that cannot run here skipped)", or empty.
std::string skipped_note(const ClusterSetup& setup);
// "2000 GPUs in 1 pools; 82247 jobs from philly.csv" and the skipped note: the HTML pages' subtitle.
std::string cluster_subtitle(const ClusterSetup& setup);

struct ClusterRun {
  std::string policy;  // the scheduler's name
  models::ClusterResult result;
};
// `on_job_finished` (optional) is called as each job finishes: progress reports.
ClusterRun run_cluster(const ClusterSetup& setup, const PolicySpec& policy, std::string_view flag, bool record_allocations,
                       const std::function<void()>& on_job_finished = {});

}  // namespace orrery::runs
