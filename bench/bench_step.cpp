// Step emulator speed: one training step of
//  - Llama 3 405B on 16,384 H100s (TP 8, PP 16, DP 128, interleaved schedule with 7 chunks
//    per stage, sequence 4096, 16M tokens per step as in Llama 3's pre-training): target 10 s
//    and 4 GB;
//  - GPT-3 175B on 1,024 H100s (TP 8, PP 8, DP 16, 1F1B, sequence 2048, batch 1536): target 1 s.
// Prints wall time, peak RSS, and the tasks and flows simulated.
#include "bench.hpp"

#include "models/hardware/cost.hpp"
#include "models/hardware/step_params.hpp"
#include "models/training/step.hpp"
#include "policies/pipeline.hpp"

#include <fmt/format.h>

namespace orrery::bench {

namespace {
void run(Figures& out, const std::string& name, models::StepScenario sc, double target, bool baseline) {
  const auto schedule = policies::pipeline_schedules().create(sc.plan.schedule, {}, {"bench", "/plan/schedule"});
  const models::RooflineCostModel cost(sc.gpu, models::training_roofline_params(sc.gpu, models::step_context(sc.plan)));
  models::StepResult r;
  const double wall = best_seconds(3, [&] { r = models::run_step(sc, cost, *schedule); });
  if (baseline) {
    // The same step with every rank simulated and every op costed afresh (no reuse).
    models::StepOptions full;
    full.reuse = false;
    models::StepResult f;
    const double full_wall = best_seconds(1, [&] { f = models::run_step(sc, cost, *schedule, full); });
    out.push_back({name + ".no_reuse.wall", full_wall, fmt::format("s ({} ranks, {} tasks; same step time: {})", f.ranks_simulated, f.tasks,
                                                                   f.step_time == r.step_time ? "yes" : "NO")});
    out.push_back({name + ".reuse_speedup", full_wall / wall, "x (no reuse / reuse, same run)"});
  }
  out.push_back({name + ".gpus", static_cast<double>(sc.plan.gpus()), "GPUs"});
  out.push_back({name + ".tasks", static_cast<double>(r.tasks), "tasks simulated"});
  out.push_back({name + ".flows", static_cast<double>(r.flows), "flows simulated"});
  out.push_back({name + ".step_time", r.step_time.to_seconds(), "s simulated"});
  out.push_back({name + ".mfu", r.mfu, "MFU"});
  out.push_back({name + ".wall", wall, fmt::format("s (target < {})", target)});
  out.push_back({name + ".peak_rss", peak_rss_gb(), "GB (target < 4)"});
}
}  // namespace

void bench_step_llama405b(Figures& out, bool quick) {
  models::StepScenario sc;
  sc.model = models::ModelCatalog::builtin().model("llama3-405b");
  sc.gpu = models::HardwareCatalog::builtin().gpu("H100");
  sc.plan.tp = 8;
  sc.plan.pp = 16;
  sc.plan.vp = quick ? 2 : 7;  // 112 virtual stages for 126 layers
  sc.plan.dp = quick ? 8 : 128;
  sc.plan.seq_len = 4096;
  sc.plan.global_batch = quick ? 256 : 4096;  // 16M tokens
  sc.plan.recompute = models::Recompute::none;
  sc.plan.overlap_tp_comm = true;
  sc.plan.schedule = "interleaved-1f1b";
  sc.topology = fmt::format("dgx-h100:nodes={}", sc.plan.gpus() / 8);
  run(out, "step.llama3_405b", sc, 10, false);
}

void bench_step_gpt3(Figures& out, bool quick) {
  models::StepScenario sc;
  sc.model = models::ModelCatalog::builtin().model("gpt3-175b");
  sc.gpu = models::HardwareCatalog::builtin().gpu("H100");
  sc.plan.tp = 8;
  sc.plan.pp = 8;
  sc.plan.dp = quick ? 2 : 16;
  sc.plan.seq_len = 2048;
  sc.plan.global_batch = quick ? 64 : 1536;
  sc.plan.recompute = models::Recompute::selective;
  sc.plan.schedule = "1f1b";
  sc.topology = fmt::format("dgx-h100:nodes={}", sc.plan.gpus() / 8);
  run(out, "step.gpt3_175b", sc, 1, true);
}

}  // namespace orrery::bench
