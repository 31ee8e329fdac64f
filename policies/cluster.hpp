// Cluster schedulers, registered by name (models/cluster/cluster.hpp has the interface):
//   fifo       first come, first served, each job on its requested GPUs and type (any type when it
//              names none); `backfill`: later jobs may start when the head does not fit
//   sjf        shortest job first, with an oracle of job lengths (non-preemptive)
//   gavel      Gavel (OSDI'20): heterogeneity-aware max-min fairness; an LP over time fractions
//              per GPU type (COIN-OR CLP), realised round by round by priority
//   arena      Arena (EuroSys'26): grids (type, count) with the throughput of their best plans;
//              marginal-gain plan search that may shrink or move running jobs; upgrade trials
//   tiresias   Tiresias' discretised 2D-LAS (NSDI'19): jobs in queues by attained service
//              (GPUs x time) with `thresholds`; the lower queue runs first (FIFO inside); running
//              jobs are preempted when a higher-priority one needs their GPUs; a job that has
//              waited `promote_after` times its run time returns to the top queue
#pragma once

#include "models/cluster/cluster.hpp"
#include "sim/registry.hpp"

namespace orrery::policies {

const sim::Registry<models::ClusterScheduler>& cluster_schedulers();

}  // namespace orrery::policies
