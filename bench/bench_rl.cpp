// RL post-training: 50 iterations of Qwen2.5-7B GRPO on 128 H800 (512 prompts x 8 samples, 16K
// maximum output) under each of the four policies (target: 60 s in all), and the same
// generation's samples per wall-second against the per-token work it stands for.
#include "bench.hpp"

#include "policies/rl.hpp"

#include <fmt/format.h>

namespace orrery::bench {

void bench_rl(Figures& out, bool quick) {
  const int iterations = quick ? 5 : 50;
  models::RolloutLengthModel m;
  m.output = models::DocLengthModel::lognormal(400, 10000, 16384);
  m.prompt = models::DocLengthModel::lognormal(300, 1000, 2048);
  const models::RlSetup s = models::grpo_setup(models::ModelCatalog::builtin().model("qwen2.5-7b"),
                                               models::rl_pool(models::HardwareCatalog::builtin().gpu("h800"), 128, 2.0), m, iterations, 512, 8);
  double total = 0, tokens = 0;
  for (const char* name : {"colocated", "disaggregated-sync", "streamrl-sync", "streamrl-async"}) {
    policies::RlRun r;
    const double wall = best_seconds(1, [&] { r = policies::run_rl_policy(s, name, {}, iterations); });
    total += wall;
    tokens += r.tokens;
    out.push_back({fmt::format("rl.{}.wall", name), wall, fmt::format("s for {} iterations (512 x 8 samples, 128 H800)", iterations)});
  }
  out.push_back({"rl.iterations_x4_128gpu.wall", total, fmt::format("s for {} iterations x 4 policies (target < 60)", iterations)});
  out.push_back({"rl.decode_tokens_per_wall_s", tokens / total, "generated tokens simulated per wall-second (closed-form continuous batching)"});
  out.push_back({"rl.peak_rss", peak_rss_gb(), "GB"});
}

}  // namespace orrery::bench
