// The cost model a step scenario asks for: its calibration curves when it names them, else the
// roofline with the GPU type's training parameters. Shared by `orrery step` and `orrery compare`.
#pragma once

#include "models/hardware/cost.hpp"
#include "models/training/pipeline.hpp"
#include "models/training/parallel.hpp"
#include "models/training/step.hpp"
#include "reports/report.hpp"
#include "runs/runs.hpp"
#include "traces/step_json.hpp"

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace orrery::runs {

std::unique_ptr<models::CostModel> step_cost_model(const traces::StepScenarioFile& file);

// The cost model as step prints it after "model ": its summary (models::CostModel::summary: for
// calibrated curves, how many kernels came from the curves and how many from the training
// roofline), and when the GPU type has no fitted step parameters of its own, that Hopper's are
// assumed for the roofline's kernels.
std::string cost_model_line(const models::CostModel& cost, const models::GpuSpec& gpu);
// The report's /cost_model keys: name, training_calibration_assumed, the roofline's
// step_parameters and kernel_overhead_s (of the fallback for calibrated curves), and for curves
// kernels_calibrated, kernels_fallback and the per-kind counters.
void set_cost_model_report(reports::Report& report, const models::CostModel& cost, const models::GpuSpec& gpu);

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
void set_step_headline(reports::Report& report, const std::string& scenario_name, const models::StepScenario& scenario, const StepHeadline& h);

// A token count as --train-tokens takes it: a number with an optional suffix K, M, B (or G), T
// or P (powers of 1000), e.g. "15T", "1.5e13", "400B"; nullopt for an empty text. InputError at
// (source, where) for anything else, or a count outside 1 to 1e18 tokens.
std::optional<double> parse_token_count(std::string_view text, std::string_view source, std::string_view where);
// "15T": a token count as the console shows it.
std::string token_count_text(double tokens);
// A duration for the console: minutes, hours, or days from two days on ("42.1 days").
std::string human_duration(double seconds);

// The lines step prints after memory: how the layers fall on the stages, and with a token
// count, the time to train on it; and the report keys of the same (/layers_per_stage/i,
// /train/tokens, /train/steps, /train/time_s exact, /train/days).
void print_capacity_lines(std::ostream& out, const models::StepScenario& scenario, double step_time_s, std::optional<double> train_tokens);
void set_capacity_report(reports::Report& report, const models::StepScenario& scenario, double step_time_s, std::optional<double> train_tokens);

// "tp=2 pp=2 vp=1 dp=4 ... recompute=none": the plan as `orrery step` prints it.
std::string plan_line(const models::ParallelPlan& plan);

// `orrery step --estimate`: prints the closed-form figures (and the --report keys the emulated
// report shares, with "estimate": true).
void step_estimate(const traces::StepScenarioFile& file, const std::string& source, const models::CostModel& cost,
                   const models::PipelineSchedule& schedule, const StepOptions& options, std::ostream& out);

}  // namespace orrery::runs
