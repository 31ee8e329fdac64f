// Job-trace readers for the published cluster-scheduling datasets in ../shared/data (each
// <dir>/SOURCE.md documents the fields), returning the same `JobTrace` as cluster_json.hpp.
//   JobTrace t = read_gavel_trace("gavel/traces/msr/seed=0/6214e9.trace", /*skip_bad_rows=*/false);
//   GavelThroughput table("gavel/simulation_throughputs.json", cluster);   // throughput_tables.hpp
// Times are kept as the sources give them (all are seconds from the start of their trace).
// A bad row is an InputError "<file>:line N:column NAME: found X, expected Y"; with skip_bad_rows
// it is counted in JobTrace::skipped instead. A file with no usable job is an error. Numbers are
// checked against the ranges every format shares (cluster_json.hpp's TraceRange: times and
// durations 0 to 1e9 s, GPU counts 1 to 1e6, ...); a UTF-8 byte-order mark is dropped.
#pragma once

#include "models/cluster/cluster.hpp"
#include "traces/cluster_json.hpp"

#include <string>

namespace orrery::traces {

// Gavel's TSV job lists, no header (gavel/SOURCE.md). Per file, by field count:
//   7 fields  (traces/msr/seed=0/*.trace): job_type, command, num_steps_arg, needs_data_dir,
//             total_steps, arrival_time, scale_factor
//   10 fields (traces/physical_cluster/*.trace): job_type, command, working_directory,
//             num_steps_arg, needs_data_dir, total_steps, scale_factor, priority_weight, SLO,
//             arrival_time
// A row with the other count is a bad row. model = job_type exactly ("Transformer (batch size
// 128)", the key of GavelThroughput), batch = its "batch size" (0 when it has none), iterations =
// total_steps, gpus = scale_factor, any GPU type, id "gavel-<line>". priority and SLO are dropped.
JobTrace read_gavel_trace(const std::string& path, bool skip_bad_rows);

// Microsoft ITP traces as released with ElasticFlow (microsoft-itp-elasticflow/SOURCE.md), by header:
//   raw-traces/clusterNN.csv:   job_id, submission_time, duration, num_gpu
//   elasticflow-traces/*.csv:   + num_iteration, model_name, deadline, batch_size
// and ElasticFlow's own traces (elasticflow/traces_for_ElasticFlow: submit_time, iteration, ddl).
// service_s = duration (always); with a model column also model = model_name ("resnet50", the
// file names of ElasticFlowThroughput), batch = batch_size (global), iterations = num_iteration.
// Any GPU type; the deadline is not kept (Job has no field for it).
JobTrace read_itp_trace(const std::string& path, bool skip_bad_rows);

// Alibaba PAI 2023 "openb" pod lists (alibaba-pai-gpu-v2023/SOURCE.md): name, num_gpu, gpu_milli,
// gpu_spec, creation_time, deletion_time, scheduled_time (other columns ignored).
// - A pod with num_gpu 0 is a CPU pod, not a training job: left out, counted in cpu_pods.
// - A GPU-sharing pod (num_gpu 1, gpu_milli < 1000) gets one whole GPU (Job holds whole GPUs),
//   counted in shared_pods.
// - arrival = creation_time; service_s = deletion_time - scheduled_time; a pod never scheduled
//   (empty scheduled_time, phase Pending) gets deletion - creation, counted in unscheduled_pods.
// - gpu_type = the one type gpu_spec allows, lower case ("t4", "v100m32"); empty (any) when it
//   allows none or several ("V100M16|V100M32").
// openb_pod_list_multigpu50.csv has no time columns and is rejected (line 1, missing column).
struct PaiTrace {
  JobTrace trace;
  std::size_t cpu_pods = 0, shared_pods = 0, unscheduled_pods = 0;
};
PaiTrace read_pai_pods(const std::string& path, bool skip_bad_rows);
JobTrace read_pai_trace(const std::string& path, bool skip_bad_rows);  // read_pai_pods(...).trace
// The PAI node list (sn, cpu_milli, memory_mib, gpu, model): one pool per (model, GPUs per node),
// GPU type = lower-case model, nodes without GPUs left out; ordered by type, then GPUs per node.
models::ClusterSpec read_pai_cluster(const std::string& path);

// Sia's workloads (sia/workloads/{philly,saturn,newtrace}/*.csv) and Pollux's, which have the same
// format (pollux-adaptdl/workloads*/workload-N.csv): name, time, application, num_replicas,
// batch_size. id = name, arrival = time, model = application ("cifar10", the model folders of
// AdaptdlThroughput and ElasticFlow's T4 tables), gpus = num_replicas, batch = batch_size
// (global). The files hold no job length (Pollux and Sia stop a job at a target epoch from
// validation curves that are not in ../shared/data): iterations and service_s are 0, to be set
// by the caller before simulating.
JobTrace read_sia_trace(const std::string& path, bool skip_bad_rows);

}  // namespace orrery::traces
