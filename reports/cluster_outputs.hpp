// A cluster run's outputs beside its report: the nodes' allocations as a Perfetto timeline and
// one CSV record per job.
//   write_file_atomically(path, reports::cluster_timeline_json(result));  // needs record_allocations
#pragma once

#include "models/cluster/cluster.hpp"

#include <string>

namespace orrery::reports {

// Each node's allocations over time as Chrome trace-event JSON (Perfetto): one process per node,
// one lane per concurrent allocation on it, one slice per (job, node) interval named after the
// job, with its GPUs as an argument. Needs ClusterOptions::record_allocations.
std::string cluster_timeline_json(const models::ClusterResult& result);
// One record per job: id, arrival, start, end, JCT, queueing, GPUs, type, nodes, restarts.
std::string cluster_jobs_csv(const models::ClusterResult& result);

}  // namespace orrery::reports
