// Cluster scenarios and job traces for `orrery cluster`.
//   {"cluster": {"pools": [{"gpu": "a100", "nodes": 80, "gpus_per_node": 4}, ...]},
//    // or {"cluster": {"arena_spec": "path/sim_cluster_spec.json"}} (Arena's GPUs per node)
//    // or {"cluster": {"pai_nodes": "path/openb_node_list_gpu_node.csv"}} (PAI 2023's nodes)
//    "jobs": {"format": "philly" | "arena" | "tiresias" | "gavel" | "itp" | "pai", "path": "trace"},
//    // or {"format": "sia" | "pollux", "path": ..., "iterations": 10000} (these workloads hold
//    //     no job length: every job gets `iterations`)
//    // or {"format": "csv", "path": ..., "columns": {"arrival": "submit", "gpus": "n", "duration": "secs",
//    //     "id": "name", "gpu_type": "type", "min_gpus": "lo", "max_gpus": "hi"}}
//    //     (id, gpu_type and the elastic range optional)
//    // every format may add "elastic": true: jobs without an elastic range of their own may
//    //     then be resized by the policy (Arena: its grid sizes, at most twice the request when
//    //     placed). Without it such jobs keep the GPU count they ask for under every policy.
//    "throughput": {"source": "trace", "scaling_exponent": 0.9, "spread_factor": 1.0}
//               | {"source": "arena", "table": "path/prof_database_optimal.csv"}
//               | {"source": "gavel", "table": "path/simulation_throughputs.json"}
//               | {"source": "elasticflow", "root": "path/elasticflow"}   (throughputs_*/ inside)
//               | {"source": "pollux" | "sia", "traces": "path/traces"}     (<model>/placements*.csv)
//               | {"source": "step", "model": "llama3-8b", "global_batch": 256, "seq_len": 2048,
//                  "reference_gpu": "v100", "schedule": "1f1b"}  (all optional but source),
//    "restart_overhead_s": 30,
//    "fabric": {"nodes_per_leaf": 8, "nic": "200 Gb/s", "oversubscription": 2, "comm_fraction": 0.2}}
//    (optional: jobs on several nodes share leaf and spine links; models::SharedFabric)
// Job traces (cluster_traces.hpp has the other formats):
//   philly  Pollux's Philly trace (pollux-adaptdl/traces/philly.csv): timestamp, duration,
//           num_gpus, gpu_time, cluster; any GPU type; service time = duration
//   arena   Arena's simulation traces (arena/simulate_trace_*.csv): job_id, submission_time,
//           num_iteration, model_name, deadline, batch_size, num_gpu, gpu_type
// A bad row is an error naming file, line and column; with skip_bad_rows it is counted instead
// (a row with the wrong number of fields too).
// Every format's numbers are checked against the same ranges (TraceRange below): times and
// durations are seconds from 0 to 1e9, GPU counts whole from 1 to 1000000, and so on.
#pragma once

#include "models/cluster/cluster.hpp"

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace orrery::traces {

// The range of a numeric job-trace field, shared by every reader (cluster_traces.hpp too).
struct TraceRange {
  double min = 0, max = 0;
  bool whole = false;
  std::string_view what;    // "seconds", "GPUs", ...
  std::string_view reason;  // why the maximum
  TraceRange at_least(double lo) const {
    TraceRange r = *this;
    r.min = lo;
    return r;
  }
  // The cell's value when it is a decimal number in the range (whole when asked); otherwise nullopt.
  std::optional<double> read(std::string_view cell) const;
  // "a whole number of at least 1 and at most 1000000 GPUs (more than any cluster holds)"
  std::string expected() const;
};

// Simulated time is int64 nanoseconds (292 years at most); 1e9 s keeps a trace's arrivals and
// durations, and the queueing after them, far inside that (and its double seconds exact to 1 us).
inline constexpr double kMaxTraceSeconds = 1e9;
inline constexpr TraceRange kTraceSeconds{0, kMaxTraceSeconds, false, "seconds", "1e9 s is 31.7 years; simulated time must stay within int64 nanoseconds, 292 years"};
inline constexpr TraceRange kTraceGpus{1, 1e6, true, "GPUs", "more than any cluster holds"};
inline constexpr TraceRange kTraceIterations{1, 1e12, true, "iterations", "more than any training run takes"};
inline constexpr TraceRange kTraceBatch{1, 1e8, true, "samples per batch", "more than any training batch holds"};

struct JobTrace {
  std::vector<models::Job> jobs;
  std::size_t skipped = 0;  // bad rows skipped
};

JobTrace read_philly_trace(const std::string& path, bool skip_bad_rows);
JobTrace read_arena_trace(const std::string& path, bool skip_bad_rows);
// Tiresias' job CSV (tiresias/60_job.csv): job_id, num_gpu, submit_time, iterations,
// model_name, duration, interval; any GPU type; service time = duration.
JobTrace read_tiresias_trace(const std::string& path, bool skip_bad_rows);
// Any CSV with a column mapping: which columns hold the arrival (s), the GPU count, the run time
// (s), and optionally the job id and the GPU type.
struct ColumnMap {
  std::string arrival, gpus, duration, id, gpu_type;
  std::string min_gpus, max_gpus;  // an elastic range (both or neither)
};
JobTrace read_generic_trace(const std::string& path, const ColumnMap& columns, bool skip_bad_rows);
// Arena's cluster spec: node counts per type, with Arena's GPUs per node (a100 4, v100 16, a40 2, a10 2).
models::ClusterSpec read_arena_cluster(const std::string& path);

// Arena's profiled iteration times: a job runs (1 / iteration time) iterations per second on the
// profiled placement of H hosts with G GPUs each that matches its GPU count and node span;
// when the table lacks it, the next larger profiled size of the model family at 1.8x per size
// step (Arena's simulator's rule); with neither, the job cannot run there.
class ArenaThroughput final : public models::ThroughputModel {
 public:
  ArenaThroughput(const std::string& table_path, const models::ClusterSpec& cluster);
  double rate(const models::Job& job, std::string_view gpu_type, int gpus, int nodes) const override;
  double work(const models::Job& job) const override { return job.iterations; }
  std::size_t entries() const { return iter_time_.size(); }

 private:
  static double param_count(std::string_view size);
  double lookup_rate(const models::Job& job, std::string_view gpu_type, int gpus, int nodes) const;
  std::map<std::string, double, std::less<>> iter_time_;  // "model_key|device_key" -> seconds
  std::map<std::string, int, std::less<>> per_node_;
  std::map<std::string, std::map<double, std::string>, std::less<>> sizes_;  // family -> param count -> "1.3B"
  // rate() by (model, batch, GPU type, GPUs, nodes): schedulers ask the same few placements
  // millions of times, and each answer formats and searches several table keys.
  mutable std::mutex memo_lock_;
  mutable std::unordered_map<std::string, double> memo_;
};

struct ClusterScenario {
  models::ClusterSpec cluster;
  std::string jobs_format;  // philly, arena, tiresias, csv
  std::string jobs_path;
  ColumnMap columns;        // csv
  double iterations = 0;    // sia, pollux: every job's length
  bool elastic = false;     // jobs without their own range may be resized (Job::resizable)
  std::string throughput_source = "trace";
  double scaling_exponent = 0.9;
  double spread_factor = 1.0;
  std::string table_path;    // arena, gavel: the table file; elasticflow, pollux, sia: the folder
  // source "step": the emulator's best plan per shape (models/cluster/cluster_step.hpp)
  std::string step_model = "llama3-8b";
  int step_global_batch = 256;
  std::int64_t step_seq_len = 2048;
  std::string reference_gpu = "v100";
  std::string step_schedule = "1f1b";
  double restart_overhead_s = 30;
  models::SharedFabric fabric;
};

ClusterScenario load_cluster_scenario(const std::string& path);
// Does the JSON file hold a cluster scenario (a top-level "jobs")? For commands that take several kinds.
bool is_cluster_scenario(const std::string& path);
// The scenario's trace, read by its format from `path`.
JobTrace read_job_trace(const ClusterScenario& scenario, const std::string& path, bool skip_bad_rows);


}  // namespace orrery::traces
