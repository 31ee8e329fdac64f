// Multimodal pipelines: PipeWeaver's schedule search for one 64-GPU VLM batch (target 1 s; the
// paper searches in under 10 s), and 100 steps x 3 policies on 64 GPUs (target 60 s).
#include "bench.hpp"
#include "models/hardware/step_params.hpp"

#include "models/hardware/hardware.hpp"
#include "models/multimodal/multimodal_pipeline.hpp"
#include "policies/multimodal.hpp"

#include <fmt/format.h>

namespace orrery::bench {

void bench_multimodal(Figures& out, bool quick) {
  const models::MultimodalModel& m = models::MultimodalCatalog::builtin().model("qwen2-vl-7b");
  const models::GpuSpec& gpu = models::HardwareCatalog::builtin().gpu("h100");
  const models::RooflineCostModel cost(gpu, models::training_roofline_params(gpu));
  const models::MultimodalSetup setup = models::multimodal_setup(m, cost, gpu, 2, 4, 8, 2, 50e9);  // Qwen2-VL-7B on 64 H100
  models::MultimodalMix mix;
  mix.samples = 256;
  mix.frames_p99 = 64;
  mix.frames_max = 96;
  {
    const models::ModuleCostCache costs(m, cost, setup.tp, setup.nvlink);
    auto pw = policies::multimodal_pipelines().create("pipeweaver", {}, {"bench", ""});
    models::MultimodalBatchGenerator gen(mix, 1);
    pw->prepare(setup, gen.next(), costs);
    const auto batch = gen.next();
    models::MultimodalStep s;
    const double wall = best_seconds(quick ? 1 : 3, [&] { s = models::multimodal_step(*pw, setup, batch, costs); });
    out.push_back({"multimodal.search_64gpu.wall", wall, "s to search one 64-GPU VLM batch's schedules (8 ranks; target < 1)"});
    out.push_back({"multimodal.search_64gpu.candidates", static_cast<double>(s.candidates), "candidate schedules evaluated"});
    out.push_back({"multimodal.search_64gpu.candidates_per_s", static_cast<double>(s.candidates) / wall, "candidates/s"});
  }
  const int steps = quick ? 10 : 100;
  double total = 0;
  for (const char* name : {"megatron-1f1b", "modality-static", "pipeweaver"}) {
    const models::ModuleCostCache costs(m, cost, setup.tp, setup.nvlink);
    auto policy = policies::multimodal_pipelines().create(name, {}, {"bench", ""});
    total += best_seconds(1, [&] {
      models::MultimodalBatchGenerator gen(mix, 1);
      policy->prepare(setup, gen.next(), costs);
      for (int k = 0; k < steps; ++k) models::multimodal_step(*policy, setup, gen.next(), costs);
    });
  }
  out.push_back({"multimodal.steps_x3_64gpu.wall", total, fmt::format("s for {} steps x 3 policies on 64 GPUs (target < 60)", steps)});
  // SEMU-style reuse: PipeWeaver's steps with every layer costed afresh, against the cache.
  double with = 0, without = 0;
  for (const bool reuse : {true, false}) {
    const models::ModuleCostCache costs(m, cost, setup.tp, setup.nvlink, reuse);
    auto pw = policies::multimodal_pipelines().create("pipeweaver", {}, {"bench", ""});
    (reuse ? with : without) = best_seconds(1, [&] {
      models::MultimodalBatchGenerator gen(mix, 1);
      pw->prepare(setup, gen.next(), costs);
      for (int k = 0; k < steps / 5; ++k) models::multimodal_step(*pw, setup, gen.next(), costs);
    });
  }
  out.push_back({"multimodal.reuse.speedup", without / with, fmt::format("x faster with cost reuse ({} pipeweaver steps: {:.2f} s vs {:.2f} s)", steps / 5, with, without)});
  out.push_back({"multimodal.peak_rss", peak_rss_gb(), "GB"});
}

}  // namespace orrery::bench
