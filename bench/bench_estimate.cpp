// Closed-form estimate speed (models/training/estimate.hpp): seconds per estimate for Llama 3 70B on
// 1,024 H100s and Llama 3 405B on 16,384 H100s, cold (a fresh fabric cache, as `orrery step
// --estimate`) and warm (a fabric cache shared across plans, as `orrery plan`); target 0.02 s
// per estimate (Calculon, Isaev et al. SC'23, takes about 0.26 s per estimate, as issue 10
// states); and the step emulator on the same scenario as the baseline.
#include "bench.hpp"

#include "models/hardware/cost.hpp"
#include "models/hardware/step_params.hpp"
#include "models/training/estimate.hpp"
#include "policies/pipeline.hpp"

#include <fmt/format.h>

namespace orrery::bench {

namespace {

void run(Figures& out, const std::string& name, const models::StepScenario& sc, bool quick) {
  const auto schedule = policies::pipeline_schedules().create(sc.plan.schedule, {}, {"bench", "/plan/schedule"});
  const models::RooflineCostModel cost(sc.gpu, models::training_roofline_params(sc.gpu, models::step_context(sc.plan)));
  const int repeats = quick ? 1 : 5;
  models::StepEstimate e;
  const double cold = best_seconds(repeats, [&] { e = models::estimate_step(sc, cost, *schedule); });
  models::FabricCosts fabric(sc.topology, models::CommModel::nccl_closed);
  e = models::estimate_step(sc, cost, *schedule, fabric);
  const int n = quick ? 10 : 200;
  const double warm = best_seconds(repeats, [&] {
                        for (int i = 0; i < n; ++i) e = models::estimate_step(sc, cost, *schedule, fabric);
                      }) /
                      n;
  models::StepResult r;
  const double emulated = best_seconds(1, [&] { r = models::run_step(sc, cost, *schedule); });
  out.push_back({name + ".gpus", static_cast<double>(sc.plan.gpus()), "GPUs"});
  out.push_back({name + ".cold", cold, "s per estimate, fresh fabric cache (target < 0.02; Calculon ~0.26)"});
  out.push_back({name + ".warm", warm, "s per estimate, shared fabric cache (plan search)"});
  out.push_back({name + ".per_minute", 60 / warm, "estimates per minute on one core (warm)"});
  out.push_back({name + ".emulator", emulated, "s for the step emulator on the same scenario"});
  out.push_back({name + ".speedup", emulated / cold, "x (emulator / cold estimate)"});
  out.push_back({name + ".error", e.step_time_s / r.step_time.to_seconds() - 1, "estimate / emulated - 1"});
}

models::StepScenario llama(const char* model, int pp, int vp, int dp, int global_batch, std::int64_t seq) {
  models::StepScenario sc;
  sc.model = models::ModelCatalog::builtin().model(model);
  sc.gpu = models::HardwareCatalog::builtin().gpu("H100");
  sc.plan.tp = 8;
  sc.plan.pp = pp;
  sc.plan.vp = vp;
  sc.plan.dp = dp;
  sc.plan.seq_len = seq;
  sc.plan.global_batch = global_batch;
  sc.plan.overlap_tp_comm = true;
  sc.plan.schedule = vp > 1 ? "interleaved-1f1b" : "1f1b";
  sc.topology = fmt::format("dgx-h100:nodes={}", sc.plan.gpus() / 8);
  return sc;
}

}  // namespace

void bench_estimate(Figures& out, bool quick) {
  run(out, "estimate.llama3_70b", llama("llama3-70b", 4, 5, quick ? 4 : 32, quick ? 64 : 1024, 8192), quick);
  run(out, "estimate.llama3_405b", llama("llama3-405b", 16, quick ? 2 : 7, quick ? 8 : 128, quick ? 256 : 4096, 4096), quick);
}

}  // namespace orrery::bench
