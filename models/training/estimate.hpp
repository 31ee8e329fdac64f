// The analytical fast path: a closed-form step time for a step scenario, for sweeps and plan
// search. The same op costs as run_step (chunk_op_costs, the cost model's kernels), NCCL's
// closed form for every collective (nccl.hpp's nccl_cost: the same choice run_step runs as
// flows), each schedule's bubble formula, and the emulator's memory model; no task graph, no flows.
//   FabricCosts fabric(scenario.topology, CommModel::nccl_closed);   // reusable across plans
//   StepEstimate e = estimate_step(scenario, cost_model, *schedule, fabric);
#pragma once

#include "models/training/step.hpp"

namespace orrery::models {

struct StepEstimate {
  double step_time_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  double tflops_per_gpu = 0;
  // Textbook definitions, per stage then the mean: bubble = the schedule's idle time of the
  // pipeline (ramp-up and drain included), exposed comm = communication nothing hides.
  double bubble_fraction = 0;
  double exposed_comm_fraction = 0;
  double bubble_s = 0;           // of the bottleneck stage
  double pipeline_compute_s = 0; // m x its per-micro-batch op time (what the bubble is relative to)
  double pp_comm_s = 0;          // pipeline sends on the critical path
  double dp_head_s = 0;          // parameter gathers the first forward waits for
  double dp_tail_s = 0;          // gradient reduction after the last backward (+ gathers when not overlapped)
  double optimizer_s = 0;
  // How much the overlapped data-parallel collectives slow the bottleneck stage's compute (their
  // share that does not hide, CostModel::overlap_dp_efficiency); in pipeline_compute_s.
  double dp_interference_s = 0;
  int micro_batches = 0;
  MemoryEstimate memory;
  bool oom = false;
};

// Throws the same InputError as run_step for a plan that does not fit (validate_plan), a
// topology whose GPU count differs, or a schedule that rejects the shape. `fabric` must have
// been made for scenario.topology (any CommModel; the closed forms, nccl_closed and alpha_beta,
// are the fast ones). Without one: a fabric of closed_form_of(comm), NCCL's by default.
StepEstimate estimate_step(const StepScenario& scenario, const CostModel& cost, const PipelineSchedule& schedule, FabricCosts& fabric);
StepEstimate estimate_step(const StepScenario& scenario, const CostModel& cost, const PipelineSchedule& schedule,
                           CommModel comm = CommModel::nccl);

// The memory half alone (validation, the schedule's live micro-batches, MemoryEstimate): what
// plan search prunes with before estimating times.
MemoryEstimate estimate_step_memory(const StepScenario& scenario, const PipelineSchedule& schedule);

}  // namespace orrery::models
