// The `--html` pages of `orrery step`, `orrery compare` and `orrery cluster`: each assembles a
// traces::HtmlReport from a command's results and writes it atomically.
//   check_html_path(o.html_path);                      // before the run: a bad folder fails fast
//   ...
//   if (!o.html_path.empty()) write_step_html(o.html_path, title, scenario, result);
#pragma once

#include "cli/cluster_run.hpp"

#include <string>
#include <vector>

namespace orrery::models {
struct StepScenario;
struct StepResult;
}  // namespace orrery::models
namespace orrery::policies {
struct RlRun;
}  // namespace orrery::policies

namespace orrery::cli {

// InputError (<command line>:--html) when the file's folder does not exist or is not a folder.
// An empty path (no --html) passes.
void check_html_path(const std::string& path);

// `orrery step`: key figures, the breakdown per stage, memory, and a timeline of the simulated
// ranks' streams (the result must have kept its graph: StepOptions::keep_graph).
void write_step_html(const std::string& path, const std::string& title, const models::StepScenario& scenario, const models::StepResult& result);

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

// `orrery compare` on cluster scenarios; the runs recorded their allocations (utilisation over time).
void write_cluster_compare_html(const std::string& path, const std::string& title, const ClusterSetup& setup, const std::vector<ClusterRun>& runs);

// `orrery cluster`; the run recorded its allocations.
void write_cluster_html(const std::string& path, const std::string& title, const ClusterSetup& setup, const ClusterRun& run);

// `orrery compare` on RL scenarios: `labels` name the runs (policy and parameters).
void write_rl_compare_html(const std::string& path, const std::string& title, const std::vector<std::string>& labels,
                           const std::vector<policies::RlRun>& runs);

}  // namespace orrery::cli
