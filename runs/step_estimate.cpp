// `orrery step --estimate`: the closed-form step time of a scenario (models/training/estimate.hpp); and
// what step's two paths (and plan) print alike: the cost model, layers per stage, time to train.
#include "runs/step_cost.hpp"
#include "models/hardware/step_params.hpp"
#include "runs/report_out.hpp"
#include "runs/step_cost.hpp"

#include "models/training/estimate.hpp"
#include "sim/error.hpp"
#include "reports/report.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <ostream>
#include <utility>

namespace orrery::runs {

namespace {
// The roofline that costs the kernels no curve covers (all of them without curves).
const models::RooflineCostModel* roofline_of(const models::CostModel& cost) {
  if (const auto* c = dynamic_cast<const models::CalibratedCostModel*>(&cost)) return &c->fallback();
  return dynamic_cast<const models::RooflineCostModel*>(&cost);
}

bool training_calibration_assumed(const models::CostModel& cost, const models::GpuSpec& gpu) {
  const models::RooflineCostModel* roofline = roofline_of(cost);
  if (roofline == nullptr || models::has_training_calibration(gpu) || roofline->params().source.empty()) return false;
  const auto* c = dynamic_cast<const models::CalibratedCostModel*>(&cost);
  return c == nullptr || c->fallbacks() > 0;
}
}  // namespace

std::optional<double> parse_token_count(std::string_view text, std::string_view source, std::string_view where) {
  if (text.empty()) return std::nullopt;
  const auto bad = [&](std::string_view why) {
    return sim::InputError(std::string(source), std::string(where), fmt::format("found {}, expected {}", sim::quote(text), why));
  };
  std::string_view number = text;
  double scale = 1;
  switch (number.back()) {
    case 'K': case 'k': scale = 1e3; break;
    case 'M': scale = 1e6; break;
    case 'B': case 'G': scale = 1e9; break;
    case 'T': scale = 1e12; break;
    case 'P': scale = 1e15; break;
    default: break;
  }
  if (scale != 1) number.remove_suffix(1);
  const std::string digits(number);
  char* end = nullptr;
  const double v = digits.empty() || std::isspace(static_cast<unsigned char>(digits.front())) != 0 ? std::nan("") : std::strtod(digits.c_str(), &end);
  if (end == nullptr || end != digits.c_str() + digits.size() || !std::isfinite(v) || digits.find_first_of("xXpP") != std::string::npos) {
    throw bad("a token count such as 15T, 400B or 1.5e13 (suffixes K, M, B or G, T, P)");
  }
  const double tokens = v * scale;
  // 1e18 tokens is some 60,000 times Llama 3's 15T: beyond it a count is a typo.
  if (!(tokens >= 1 && tokens <= 1e18)) throw bad("1 to 1e18 tokens (a training run's data: Llama 3 saw 15T)");
  return tokens;
}

std::string token_count_text(double tokens) {
  for (const auto& [scale, suffix] : {std::pair{1e15, "P"}, {1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}}) {
    if (tokens >= scale) return fmt::format("{:.4g}{}", tokens / scale, suffix);
  }
  return fmt::format("{:.0f}", tokens);
}

std::string human_duration(double seconds) {
  if (seconds >= 2 * 86400) return fmt::format("{:.1f} days", seconds / 86400);
  if (seconds >= 3600) return fmt::format("{:.1f} hours", seconds / 3600);
  return fmt::format("{:.1f} minutes", seconds / 60);
}

void print_capacity_lines(std::ostream& out, const models::StepScenario& sc, double step_time_s, std::optional<double> train_tokens) {
  out << fmt::format("layers     {} on {} stage{}: {}\n", sc.model.layers, sc.plan.pp, sc.plan.pp == 1 ? "" : "s",
                     models::describe_stage_layers(sc.plan, sc.model));
  if (!train_tokens) return;
  const models::TrainingTime t = models::training_time(*train_tokens, sc.plan, step_time_s);
  out << fmt::format("training   {} tokens in {:.0f} steps: {}\n", token_count_text(t.tokens), t.steps, human_duration(t.seconds));
}

void set_capacity_report(reports::Report& rep, const models::StepScenario& sc, double step_time_s, std::optional<double> train_tokens) {
  const std::vector<std::vector<int>> stages = models::stage_layers(sc.plan, sc.model);
  for (std::size_t i = 0; i < stages.size(); ++i) {
    int layers = 0;
    for (const int l : stages[i]) layers += l;
    rep.set(fmt::format("/layers_per_stage/{}", i), static_cast<std::int64_t>(layers));
  }
  if (!train_tokens) return;
  const models::TrainingTime t = models::training_time(*train_tokens, sc.plan, step_time_s);
  rep.set("/train/tokens", t.tokens);
  rep.set("/train/steps", t.steps);
  rep.set("/train/time_s", t.seconds);
  rep.set("/train/days", t.seconds / 86400);
}

std::string cost_model_line(const models::CostModel& cost, const models::GpuSpec& gpu) {
  return cost.summary() +
         (training_calibration_assumed(cost, gpu) ? fmt::format(" (no training calibration for {}: the Hopper parameters are assumed)", gpu.name) : "");
}

void set_cost_model_report(reports::Report& rep, const models::CostModel& cost, const models::GpuSpec& gpu) {
  rep.set("/cost_model/name", cost.name());
  rep.set("/cost_model/training_calibration_assumed", training_calibration_assumed(cost, gpu));
  if (const models::RooflineCostModel* roofline = roofline_of(cost)) {
    // What the kernels' times come from: the set of fitted step parameters (their values are in
    // models/hardware/step_params.json; the console's cost-model line prints the main ones).
    rep.set("/cost_model/step_parameters", roofline->params().source);
    rep.set("/cost_model/kernel_overhead_s", roofline->params().kernel_overhead.to_seconds());
  }
  if (const auto* c = dynamic_cast<const models::CalibratedCostModel*>(&cost)) {
    rep.set("/cost_model/kernels_calibrated", static_cast<std::int64_t>(c->calibrated()));
    rep.set("/cost_model/kernels_fallback", static_cast<std::int64_t>(c->fallbacks()));
  }
  for (const auto& [name, value] : cost.counters()) rep.set("/cost_model/" + name, static_cast<std::int64_t>(value));
}

void step_estimate(const traces::StepScenarioFile& file, const std::string& source, const models::CostModel& cost,
                   const models::PipelineSchedule& schedule, const StepOptions& o, std::ostream& out) {
  const models::StepScenario& sc = file.scenario;
  const models::StepEstimate e =
      models::estimate_step(sc, cost, schedule, o.comm == "nccl" ? models::CommModel::nccl : models::CommModel::flows);
  check_fail_on_oom(file, source, e.memory, e.oom);
  const models::ParallelPlan& p = sc.plan;
  const auto gib = [](double b) { return b / 1073741824.0; };
  out << fmt::format("scenario   {}  (closed-form estimate, not emulated)\n", file.name.empty() ? source : file.name);
  out << fmt::format("model      {}\n", sc.model.name);
  out << fmt::format("cluster    {} x {} ({})\n", p.gpus(), sc.gpu.name, sc.topology);
  out << fmt::format("plan       {}\n", plan_line(p));
  out << fmt::format("step time  {:.4f} s  ({} micro-batches)\n", e.step_time_s, e.micro_batches);
  out << fmt::format("throughput {:.0f} tokens/s, {:.1f} TFLOP/s per GPU, MFU {:.1f}%{}\n", e.tokens_per_s, e.tflops_per_gpu, 100 * e.mfu,
                     p.precision == "bf16" ? "" : " of the dense bf16 peak");
  out << fmt::format("bubble     {:.1f}% of the step; exposed communication {:.1f}%\n", 100 * e.bubble_fraction, 100 * e.exposed_comm_fraction);
  out << fmt::format("terms      pipeline {:.4f} s + bubble {:.4f} s + sends {:.4f} s; DP gathers waited {:.4f} s, tail {:.4f} s; optimizer {:.4f} s\n",
                     e.pipeline_compute_s, e.bubble_s, e.pp_comm_s, e.dp_head_s, e.dp_tail_s, e.optimizer_s);
  out << fmt::format("memory     {:.1f} GiB peak per GPU (stage {}) of {}{}\n", gib(e.memory.total()), e.memory.stage, models::memory_budget(sc.gpu).describe(),
                     e.oom ? "  ** OUT OF MEMORY **" : "");
  const std::optional<double> train_tokens = parse_token_count(o.train_tokens, "<command line>", "--train-tokens");
  print_capacity_lines(out, sc, e.step_time_s, train_tokens);
  out << fmt::format("costed     model {}\n", cost_model_line(cost, sc.gpu));
  if (report_wanted(o.report_path, o.report_json)) {
    reports::Report rep;
    set_step_headline(rep, file.name.empty() ? source : file.name, sc,
                      {e.step_time_s, e.tokens_per_s, e.tflops_per_gpu, e.mfu, e.bubble_fraction, e.exposed_comm_fraction, e.micro_batches, e.memory,
                       e.oom});
    rep.set("/estimate", true);
    rep.set("/comm_model", o.comm);
    set_cost_model_report(rep, cost, sc.gpu);
    set_capacity_report(rep, sc, e.step_time_s, train_tokens);
    emit_report(rep, o.report_path, o.report_json);
  }
}

}  // namespace orrery::runs
