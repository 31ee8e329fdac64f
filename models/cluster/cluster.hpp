// Cluster scheduling: a cluster of GPU node pools, a stream of training jobs, and a scheduler
// policy deciding which jobs run where; job speed from a ThroughputModel; preemption and
// migration pay a restart overhead. Event-driven on sim::Engine.
//   ClusterSpec c{{{"A100", 80, 4}, {"V100", 20, 16}}};
//   ClusterSim sim(c, jobs, throughput, scheduler, {.restart_overhead_s = 30});
//   ClusterResult r = sim.run();
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::models {

struct NodePool {
  std::string gpu_type;  // lower case: "a100", "v100", ...
  int nodes = 0;
  int gpus_per_node = 0;
};

struct ClusterSpec {
  std::vector<NodePool> pools;
  int total_gpus() const;
  // The most GPUs one node of the type holds (0: no such type).
  int gpus_per_node(std::string_view gpu_type) const;
  // The fewest nodes that can hold `gpus` GPUs of the type (best locality).
  int min_nodes(std::string_view gpu_type, int gpus) const;
};

struct Job {
  std::string id;
  double arrival_s = 0;
  int gpus = 1;                // requested
  std::string gpu_type;        // preferred (lower case), empty: any
  double service_s = 0;        // run time at the requested GPUs of the preferred type (trace durations)
  double iterations = 0;       // work in iterations (throughput tables), when service_s is 0
  std::string model;           // e.g. "bert__1.3B"
  int batch = 0;
  int min_gpus = 0, max_gpus = 0;  // elastic range a policy may resize within (0: not elastic)
  // Without a range: may a policy still pick its count (a scenario's "elastic": true)? If not,
  // the job runs on exactly the GPUs it asks for under every policy.
  bool resizable = false;
  bool elastic() const { return max_gpus > 0; }
  // May a policy run it on `count` GPUs? Its range; any count when resizable; else its request.
  bool allows(int count) const {
    if (elastic()) return count >= min_gpus && count <= max_gpus;
    return resizable ? count >= 1 : count == gpus;
  }
};

// Work per second a job makes on `gpus` GPUs of `gpu_type` spread over `nodes` servers, in the
// job's work units (seconds of its own service time, or iterations); 0 when it cannot run there.
class ThroughputModel {
 public:
  virtual ~ThroughputModel() = default;
  virtual double rate(const Job& job, std::string_view gpu_type, int gpus, int nodes) const = 0;
  // The job's total work in those units.
  virtual double work(const Job& job) const = 0;
};

// Source 1, the trace's own durations: a job makes 1 s of its service per second at its requested
// count and type; on g GPUs, (g / requested)^exponent of that (exponent 1: linear data-parallel
// scaling; below 1: sub-linear); on another type, times the ratio of the types' dense fp16 peaks
// (models/hardware/hardware.hpp), when both are known; spread over more nodes than the fewest that hold
// them (per `cluster`), times `spread_factor` (1: locality does not matter, as the trace's own
// durations already include whatever placement the job had).
class TraceDurationModel final : public ThroughputModel {
 public:
  explicit TraceDurationModel(double scaling_exponent = 0.9, double spread_factor = 1.0, ClusterSpec cluster = {})
      : exponent_(scaling_exponent), spread_(spread_factor), cluster_(std::move(cluster)) {}
  double rate(const Job& job, std::string_view gpu_type, int gpus, int nodes) const override;
  double work(const Job& job) const override { return job.service_s; }

 private:
  double exponent_, spread_;
  ClusterSpec cluster_;
};

struct Placement {
  std::string gpu_type;
  int gpus = 0;
  // On a running job kept at its type and count: migrate it onto fewer nodes when the simulator
  // can, and when the faster rate repays the restart overhead (defragmenting migration).
  bool consolidate = false;
};

// What a scheduler sees of a job.
struct JobState {
  const Job* job = nullptr;
  int index = 0;
  bool running = false;
  Placement placement;       // while running
  int nodes = 0;             // nodes it spans while running
  double attained_gpu_s = 0; // GPU-seconds received so far (Tiresias' attained service)
  double executed_s = 0;     // wall seconds run so far
  double remaining = 0;      // work left
  double waiting_since = 0;  // last time it was queued
};

struct ClusterView {
  double now = 0;
  const ClusterSpec* cluster = nullptr;
  std::map<std::string, int, std::less<>> free_gpus;  // per type, counting what running jobs hold as taken
  std::vector<const JobState*> active;                // arrived and not finished, in arrival order
  const ThroughputModel* throughput = nullptr;
  // The job's rate on `gpus` GPUs of the type at the best locality (the fewest nodes).
  double rate(const Job& job, std::string_view gpu_type, int gpus) const {
    return throughput->rate(job, gpu_type, gpus, cluster->min_nodes(gpu_type, gpus));
  }
};

// The policy: given the active jobs, the placement every job should have now (jobs left out are
// queued, or preempted if running). Placements must fit the cluster.
class ClusterScheduler {
 public:
  virtual ~ClusterScheduler() = default;
  virtual std::string_view name() const = 0;
  // > 0: also re-schedule every interval (rounds); otherwise only on arrivals and completions.
  virtual double interval_s() const { return 0; }
  virtual std::map<int, Placement> schedule(const ClusterView& view) = 0;
};

// A coarse shared fabric: nodes in pool order under leaf switches of `nodes_per_leaf` nodes,
// leaves joined by a spine through uplinks of nodes_per_leaf x nic / oversubscription per
// direction. A job on several nodes reduces its gradients in a ring over them: one flow per hop,
// each crossing the sender's NIC, the leaf uplink and downlink when the hop changes leaves, and
// the receiver's NIC. All jobs' rings share those links max-min fairly (sim::FlowNetwork). A
// job's ThroughputModel rate is its rate alone, with `comm_fraction` of its time in that
// communication at its full NIC rate; with a share s of it, that part takes 1/s as long:
//   rate = alone / ((1 - comm_fraction) + comm_fraction / s).
struct SharedFabric {
  int nodes_per_leaf = 0;     // 0: no shared fabric (jobs do not slow each other)
  double nic_bytes_per_s = 0;
  double oversubscription = 1;
  double comm_fraction = 0.2;
  bool enabled() const { return nodes_per_leaf > 0; }
};

// Each job's share (0, 1] of its NIC rate on the shared fabric; `grants` holds, per job, the
// (node, GPUs) it spans; jobs on one node (or none) get 1. Nodes are numbered in pool order.
std::vector<double> fabric_shares(const SharedFabric& fabric, int nodes, const std::vector<std::vector<std::pair<int, int>>>& grants);

struct ClusterOptions {
  double restart_overhead_s = 30;  // preemption, migration and resizing: checkpoint and restore
  bool record_allocations = false; // fill ClusterResult::allocations (for the node timeline)
  SharedFabric fabric;
  std::function<void()> on_job_finished;  // progress reports: called as each job finishes
};

struct JobRecord {
  std::string id;
  double arrival_s = 0, start_s = -1, end_s = -1;
  int gpus = 0;          // requested
  int end_gpus = 0;      // held at the end (a policy may have resized it)
  int restarts = 0;
  std::string gpu_type;  // where it finished
  int nodes = 0;         // nodes it spanned at the end
};

// One job's GPUs on one node over a time interval.
struct Allocation {
  int job = 0;   // index into ClusterResult::jobs
  int node = 0;  // index into ClusterResult::node_names
  int gpus = 0;
  double start_s = 0, end_s = 0;
};

struct ClusterResult {
  std::vector<JobRecord> jobs;
  int completed = 0;
  double avg_jct_s = 0, p50_jct_s = 0, p99_jct_s = 0, avg_queue_s = 0;
  double makespan_s = 0;       // from the first arrival to the last completion
  double gpu_utilization = 0;  // GPU-seconds held by jobs / (GPUs x makespan)
  std::size_t scheduler_calls = 0;
  std::size_t migrations = 0;    // defragmenting migrations
  std::size_t spread_starts = 0; // starts on more nodes than the fewest that could hold the job
  std::size_t fabric_solves = 0; // shared-fabric re-solves (when the set of multi-node jobs changed)
  double min_fabric_share = 1;   // the lowest bandwidth share any job had
  std::vector<std::string> node_names;   // "a100-0", ... in pool order
  std::vector<Allocation> allocations;   // with ClusterOptions::record_allocations
};

class ClusterSim {
 public:
  ClusterSim(ClusterSpec cluster, std::vector<Job> jobs, const ThroughputModel& throughput, ClusterScheduler& scheduler,
             ClusterOptions options = {});
  ClusterResult run();

 private:
  ClusterSpec cluster_;
  std::vector<Job> jobs_;
  const ThroughputModel& throughput_;
  ClusterScheduler& scheduler_;
  ClusterOptions options_;
};

// Does a placement fit the free GPUs of its type?
bool fits(const ClusterView& view, const Placement& p);

}  // namespace orrery::models
