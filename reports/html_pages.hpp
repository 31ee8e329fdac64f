// The `--html` pages of `orrery step`, `orrery compare` and `orrery cluster`: each assembles a
// HtmlReport from a command's results and writes it atomically.
//   ...
//   if (!o.html_path.empty()) write_step_html(o.html_path, title, scenario, result);
#pragma once

#include "models/cluster/cluster.hpp"
#include "sim/executor.hpp"
#include "sim/task_graph.hpp"

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace orrery::models {
struct StepScenario;
struct StepResult;
}  // namespace orrery::models
namespace orrery::policies {
struct RlRun;
}  // namespace orrery::policies

namespace orrery::reports {

// `orrery step`: key figures, the breakdown per stage, memory, and a timeline of the simulated
// ranks' streams (the result must have kept its graph: StepOptions::keep_graph).
void write_step_html(const std::string& path, const std::string& title, const models::StepScenario& scenario, const models::StepResult& result);

// `orrery replay --chakra` and `--kineto`: key figures, each rank's (or stream's) busy time, and
// the timeline of every stream and transfer of the replayed graph.
struct ReplayPage {
  std::string title, subtitle;
  std::vector<std::pair<std::string, std::string>> figures;
  std::string bars_title;           // per rank or per stream
  std::vector<std::string> bars;    // their names
  std::vector<double> busy_s, comm_s;  // comm_s may be empty
};
void write_replay_html(const std::string& path, const ReplayPage& page, const sim::TaskGraph& graph, const std::vector<sim::Span>& spans);

// `orrery compare` on step and multimodal scenarios: one row per policy.
struct PolicySteps {
  std::string name;
  std::vector<double> step_s;  // every step's time
  double throughput = 0;       // in StepComparePage::throughput_unit
  double bubble = -1;          // pipeline bubble share; < 0: not measured
  double imbalance = -1;       // < 0: not measured
};
struct StepComparePage {
  std::string title, subtitle;
  std::string throughput_unit = "tokens/s";
  std::vector<PolicySteps> policies;
};
void write_step_compare_html(const std::string& path, const StepComparePage& page);

// A scheduler's run on a cluster, as the cluster pages show it; `subtitle` says what ran on what
// (GPUs, pools, jobs), and the runs recorded their allocations (utilisation over time).
struct ClusterPageRun {
  std::string policy;
  const models::ClusterResult* result = nullptr;
};
struct ClusterPage {
  std::string title, subtitle;
  int total_gpus = 0;
};

// `orrery compare` on cluster scenarios.
void write_cluster_compare_html(const std::string& path, const ClusterPage& page, const std::vector<ClusterPageRun>& runs);

// `orrery cluster`.
void write_cluster_html(const std::string& path, const ClusterPage& page, const ClusterPageRun& run);

// `orrery sweep --html`: point statuses, the best points, a heatmap over the first two axes with
// few values and scaling curves over the numeric axes, of the objective (or the first numeric
// metric). `rows` are the results' JSON rows, `columns` their CSV columns.
struct SweepPage {
  std::string source, command, design;
  std::string objective;  // empty: the first numeric metric
  bool maximize = true;
  std::vector<std::string> axes;  // the axes' names
};
void write_sweep_html(const std::string& path, const SweepPage& page, const std::vector<std::string>& columns, const nlohmann::json& rows);

// `orrery compare` on RL scenarios: `labels` name the runs (policy and parameters).
void write_rl_compare_html(const std::string& path, const std::string& title, const std::vector<std::string>& labels,
                           const std::vector<policies::RlRun>& runs);

}  // namespace orrery::reports
