// `orrery step --estimate`: the closed-form step time of a scenario (models/estimate.hpp).
#include "cli/plan_search.hpp"
#include "cli/report_out.hpp"
#include "cli/step_cost.hpp"

#include "models/estimate.hpp"
#include "sim/error.hpp"
#include "traces/report.hpp"

#include <fmt/format.h>

#include <ostream>

namespace orrery::cli {

void step_estimate(const traces::StepScenarioFile& file, const std::string& source, const models::CostModel& cost,
                   const models::PipelineSchedule& schedule, const StepOptions& o, std::ostream& out) {
  const models::StepScenario& sc = file.scenario;
  const models::StepEstimate e = models::estimate_step(sc, cost, schedule);
  check_fail_on_oom(file, source, e.memory, e.oom);
  const models::ParallelPlan& p = sc.plan;
  const auto gib = [](double b) { return b / 1073741824.0; };
  out << fmt::format("scenario   {}  (closed-form estimate, not emulated)\n", file.name.empty() ? source : file.name);
  out << fmt::format("model      {}\n", sc.model.name);
  out << fmt::format("cluster    {} x {} ({})\n", p.gpus(), sc.gpu.name, sc.topology);
  out << fmt::format("plan       {}\n", plan_line(p));
  out << fmt::format("step time  {:.4f} s  ({} micro-batches)\n", e.step_time_s, e.micro_batches);
  out << fmt::format("throughput {:.0f} tokens/s, {:.1f} TFLOP/s per GPU, MFU {:.1f}%\n", e.tokens_per_s, e.tflops_per_gpu, 100 * e.mfu);
  out << fmt::format("bubble     {:.1f}% of the step; exposed communication {:.1f}%\n", 100 * e.bubble_fraction, 100 * e.exposed_comm_fraction);
  out << fmt::format("terms      pipeline {:.4f} s + bubble {:.4f} s + sends {:.4f} s; DP gathers waited {:.4f} s, tail {:.4f} s; optimizer {:.4f} s\n",
                     e.pipeline_compute_s, e.bubble_s, e.pp_comm_s, e.dp_head_s, e.dp_tail_s, e.optimizer_s);
  out << fmt::format("memory     {:.1f} GiB peak per GPU (stage {}) of {:.0f} GiB{}\n", gib(e.memory.total()), e.memory.stage, gib(sc.gpu.hbm_bytes),
                     e.oom ? "  ** OUT OF MEMORY **" : "");
  if (report_wanted(o.report_path, o.report_json)) {
    traces::Report rep;
    set_step_headline(rep, file.name.empty() ? source : file.name, sc,
                      {e.step_time_s, e.tokens_per_s, e.tflops_per_gpu, e.mfu, e.bubble_fraction, e.exposed_comm_fraction, e.micro_batches, e.memory,
                       e.oom});
    rep.set("/estimate", true);
    emit_report(rep, o.report_path, o.report_json);
  }
}

}  // namespace orrery::cli
