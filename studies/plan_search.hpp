// Plan search (`orrery plan`): enumerate parallel plans for a model on a cluster, prune by the
// divisibility rules and the memory model, rank the survivors with the closed-form estimate
// (models/training/estimate.hpp) and confirm the best with the step emulator.
//   PlanSearchSpec spec = read_plan_search(text, "plan.json");
//   PlanSearchResult r = search_plans(spec);
#pragma once

#include "models/training/estimate.hpp"
#include "runs/runs.hpp"
#include "models/hardware/hardware.hpp"
#include "traces/step_json.hpp"

#include <iosfwd>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::studies {

struct PlanSearchSpec {
  std::string source;  // the file, for errors
  std::string name;
  models::ModelSpec model;
  models::GpuSpec gpu;
  std::string topology;
  int gpus = 0;
  int global_batch = 0;
  std::int64_t seq_len = 4096;
  double memory_limit = 0;  // bytes per GPU; default (and at most) models::memory_budget(gpu).usable_bytes
  // Constraints: what is enumerated.
  int max_tp = 0;  // 0: the GPUs of one server (NVLink domain)
  int max_pp = 64;
  int max_cp = 1;
  int max_ep = 64;
  int max_vp = 8;
  std::vector<int> micro_batches = {1, 2, 4};
  std::vector<std::string> schedules = {"1f1b", "interleaved-1f1b", "zb-h1", "gpipe", "zb-h2", "zb-v", "dualpipe", "stp"};
  std::vector<models::Recompute> recompute = {models::Recompute::none, models::Recompute::selective, models::Recompute::full};
  std::vector<int> zero = {0, 1, 2, 3};
  bool overlap_tp_comm = false;
  std::string grad_reduce = "fp32";  // every plan's (models::ParallelPlan::grad_reduce)
  std::string precision = "bf16";    // every plan's (models::ParallelPlan::precision)
  int top_k = 5;  // confirmed with the emulator
  // "cluster_sizes": GPU counts to search at (the cluster's topology scaled to each,
  // models::topology_with_gpus); empty: the cluster as given.
  std::vector<int> cluster_sizes;
};

struct PlanCandidate {
  models::ParallelPlan plan;
  models::StepEstimate estimate;
  std::optional<models::StepResult> emulated;
};

struct PlanSearchResult {
  std::size_t enumerated = 0;
  std::size_t pruned_divisibility = 0;
  std::size_t pruned_memory = 0;
  std::size_t estimated = 0;
  std::size_t confirmed = 0;
  double search_s = 0;   // enumeration, pruning and estimates
  double confirm_s = 0;  // the emulator on the top k
  std::vector<PlanCandidate> top;  // best first (by estimate), distinct up to ZeRO/recompute ties
};

// Reads a plan-search file (format in traces/README.md); InputError naming the JSON pointer.
PlanSearchSpec read_plan_search(std::string_view json_text, const std::string& source, const models::HardwareCatalog& gpus);

// InputError (naming the file) when no plan divides the batch or none fits in memory.
PlanSearchResult search_plans(const PlanSearchSpec& spec);

// The spec at `gpus` GPUs: its topology scaled to them (InputError at (source, where) when the
// servers do not divide them).
PlanSearchSpec at_cluster_size(const PlanSearchSpec& spec, int gpus, std::string_view source, std::string_view where);

// "tp8 pp4 vp3 dp16 mb1 1f1b zero1 sel"
std::string plan_label(const models::ParallelPlan& plan);

struct PlanOptions {
  std::string plan_path;  // plan-search JSON (traces/README.md)
  std::string report_path;
  std::string gpus_path;
  std::optional<int> top_k;  // --top; unset: the file's (default 5)
  std::string train_tokens;  // --train-tokens "15T": the time to train on them, per plan
  std::string cluster_sizes; // --cluster-sizes "64,128,256": search at each GPU count
  std::string* report_json = nullptr;
};

// Plan search: enumerates parallel plans, prunes by divisibility and memory, ranks by the
// closed-form estimate, confirms the top k with the step emulator; prints the best plans.
void plan(const PlanOptions& options, std::ostream& out);

}  // namespace orrery::studies
