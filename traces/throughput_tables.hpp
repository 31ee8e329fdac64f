// Measured throughput tables of published cluster schedulers, as models::ThroughputModel: a job
// makes `rate` iterations per second on a placement; its work is job.iterations.
//   GavelThroughput gavel("gavel/simulation_throughputs.json", cluster);
//   double r = gavel.rate(job, "v100", 4, 1);   // 0: not measured there
// Model names are those of the matching trace readers (cluster_traces.hpp). A malformed table
// is an InputError naming the file and the JSON pointer or "line N:column NAME".
#pragma once

#include "models/cluster/cluster.hpp"

#include <map>
#include <string>
#include <string_view>
#include <utility>

namespace orrery::traces {

// Gavel's measured throughputs (gavel/simulation_throughputs.json, gavel/SOURCE.md): worker type
// -> "('<job_type>', <scale_factor>)" -> "null" = iterations per second of the job alone. The key
// is built from the job's model and the GPU count it runs on, so another count uses that count's
// entry (0 when there is none). On more nodes than the fewest of `cluster` that hold the GPUs,
// the "<type>_unconsolidated" entry. Co-location pairs are ignored. Worker types: k80, p100, v100.
class GavelThroughput final : public models::ThroughputModel {
 public:
  GavelThroughput(const std::string& path, models::ClusterSpec cluster);
  double rate(const models::Job& job, std::string_view gpu_type, int gpus, int nodes) const override;
  double work(const models::Job& job) const override { return job.iterations; }
  std::size_t entries() const { return table_.size(); }

 private:
  std::map<std::string, double, std::less<>> table_;  // "<worker type>|<job key>" -> iterations/s
  models::ClusterSpec cluster_;
};

// ElasticFlow's profiled throughputs (elasticflow/SOURCE.md): <root>/throughputs_<GPU>/<model>.csv,
// columns global_batch_size, then one per GPU count (1, 2, 4, ... 64); a cell is iterations per
// second of the job at that global batch on that many GPUs; empty, "nan" or 0 = infeasible.
// GPU type = lower-case <GPU> ("a100", "t4"); model = file stem ("resnet50", "cifar10"). The
// row is the job's batch; a batch or GPU count not in the table gives 0. No locality term (the
// table has none): `nodes` is ignored.
class ElasticFlowThroughput final : public models::ThroughputModel {
 public:
  ElasticFlowThroughput() = default;
  explicit ElasticFlowThroughput(const std::string& root);  // every throughputs_* folder under root
  void add_table(const std::string& csv_path, std::string model, std::string gpu_type);
  double rate(const models::Job& job, std::string_view gpu_type, int gpus, int nodes) const override;
  double work(const models::Job& job) const override { return job.iterations; }
  std::size_t tables() const { return tables_.size(); }

 private:
  // "<model>|<gpu type>" -> (global batch, GPUs) -> iterations/s
  std::map<std::string, std::map<std::pair<int, int>, double>, std::less<>> tables_;
};

// Pollux's and Sia's measured step times (adaptdl simulator traces; pollux-adaptdl/SOURCE.md,
// sia/SOURCE.md): per model and GPU type, placements.csv (placement "22" = 2 nodes x 2 GPUs,
// local_bsz, step_time, sync_time) and scalability.csv (num_nodes, num_replicas, ...).
// rate = 1 / (step + accum * (step - sync)) iterations/s at the job's global batch, following
// Sia's Application.get_throughput_with_accum (sia-simulator/applications.py): local batch =
// ceil(batch / gpus); gradient accumulation when it exceeds the largest measured local batch
// of that (nodes, GPUs) (else of larger profiled sizes); step and sync times interpolated
// linearly in local batch among the profiles of the same (nodes, GPUs), placements averaged
// by (nodes, GPUs) and merged with the scalability rows. An unprofiled (nodes, GPUs) is
// interpolated linearly between profiled GPU counts at the same node count, else between the
// nearest profiled node counts at the same GPUs per node (Pollux and Sia use one 3-D linear
// interpolation over all points there); outside the profiles, or below the smallest measured
// local batch, the rate is 0. The Sia rules that need
// the (not copied) validation curves (init/max batch size) are not applied.
class AdaptdlThroughput final : public models::ThroughputModel {
 public:
  void add_profile(const std::string& placements_csv, const std::string& scalability_csv, const std::string& model,
                   const std::string& gpu_type);
  double rate(const models::Job& job, std::string_view gpu_type, int gpus, int nodes) const override;
  double work(const models::Job& job) const override { return job.iterations; }
  std::size_t profiles() const { return profiles_.size(); }

  struct Point {
    double step_s = 0, sync_s = 0;
  };
  // (nodes, GPUs) -> local batch -> step and sync time
  using Profile = std::map<std::pair<int, int>, std::map<double, Point>>;

 private:
  std::map<std::string, Profile, std::less<>> profiles_;  // "<model>|<gpu type>"
};

// pollux-adaptdl/traces/<model>/{placements,scalability}.csv, all measured on T4 (16 AWS
// g4dn.12xlarge nodes of 4 T4: pollux-adaptdl/SOURCE.md): GPU type "t4".
AdaptdlThroughput load_pollux_throughput(const std::string& traces_dir);
// sia/traces/<model>/{placements,scalability}-<cluster>.csv for each cluster suffix -> GPU type
// (sia/SOURCE.md, from Sia's simulator_config.py). gpt_pmp (pipeline-parallel, profiled with a
// different step-time meaning) is left out.
std::map<std::string, std::string> sia_clusters();  // aws t4, azure v100, dgx-ext a100, quad rtx6000, rtx rtx2080ti
AdaptdlThroughput load_sia_throughput(const std::string& traces_dir,
                                      const std::map<std::string, std::string>& clusters = sia_clusters());

}  // namespace orrery::traces
