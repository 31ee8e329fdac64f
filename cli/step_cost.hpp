// The cost model a step scenario asks for: its calibration curves when it names them, else the
// roofline with the GPU type's training parameters. Shared by `orrery step` and `orrery compare`.
#pragma once

#include "models/cost.hpp"
#include "models/parallel.hpp"
#include "models/step.hpp"
#include "traces/report.hpp"
#include "traces/step_json.hpp"

#include <memory>
#include <string>

namespace orrery::cli {

std::unique_ptr<models::CostModel> step_cost_model(const traces::StepScenarioFile& file);

// A scenario with fail_on_oom set whose step does not fit: an InputError at /plan naming the
// stage, its memory and the GPU's. Shared by the emulated and the estimated step.
void check_fail_on_oom(const traces::StepScenarioFile& file, const std::string& source, const models::MemoryEstimate& memory, bool oom);

// The keys an emulated and an estimated step report share: scenario, model, gpu(s), step time,
// tokens/s, TFLOP/s per GPU, MFU, bubble and exposed-communication fractions, peak memory and its
// parts, oom, micro-batches.
struct StepHeadline {
  double step_time_s = 0, tokens_per_s = 0, tflops_per_gpu = 0, mfu = 0, bubble_fraction = 0, exposed_comm_fraction = 0;
  int micro_batches = 0;
  models::MemoryEstimate memory;
  bool oom = false;
};
void set_step_headline(traces::Report& report, const std::string& scenario_name, const models::StepScenario& scenario, const StepHeadline& h);

// "tp=2 pp=2 vp=1 dp=4 ... recompute=none": the plan as `orrery step` prints it.
std::string plan_line(const models::ParallelPlan& plan);

}  // namespace orrery::cli
