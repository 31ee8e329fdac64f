// Sequence balancing speed: 1,000 steps of a 256-GPU, 1M-token workload (Qwen3-30B-A3B, Ulysses
// CP 16, DP 16, 32 sequences of 1M tokens per step, long-tail documents: median 644, p99 71K,
// maximum 1M) under each of packing, wlb-llm, libra and global-pool, every step placed by the
// policy and run through the step balancer. Target: 60 s for all four.
#include "bench.hpp"
#include "models/hardware/step_params.hpp"

#include "models/training/balance.hpp"
#include "models/training/doc_lengths.hpp"
#include "policies/pipeline.hpp"
#include "policies/sequence.hpp"

#include <fmt/format.h>

namespace orrery::bench {

void bench_balance(Figures& out, bool quick) {
  models::StepScenario sc;
  sc.model = models::ModelCatalog::builtin().model("qwen3-30b-a3b");
  sc.gpu = models::HardwareCatalog::builtin().gpu("H100");
  sc.plan.tp = 1;
  sc.plan.cp = 16;
  sc.plan.cp_kind = models::CpKind::ulysses;
  sc.plan.dp = 16;
  sc.plan.ep = 8;
  sc.plan.global_batch = 32;
  sc.plan.seq_len = 1 << 20;
  sc.plan.recompute = models::Recompute::full;
  sc.plan.zero = 2;
  sc.topology = "dgx-h100:nodes=32";
  const auto schedule = policies::pipeline_schedules().create("1f1b", {}, {"bench", ""});
  const models::RooflineCostModel cost(sc.gpu, models::training_roofline_params(sc.gpu, models::step_context(sc.plan)));
  models::BalanceOptions bo;
  bo.jitter = 0.02;
  const models::StepBalancer balancer(sc, cost, *schedule, bo);
  const models::DocLengthModel lengths = models::DocLengthModel::lognormal_pareto(644, 71'000, 1 << 20);
  const std::int64_t budget = static_cast<std::int64_t>(balancer.shape().dp) * balancer.shape().micro_batches * balancer.shape().seq_len;
  const int steps = quick ? 50 : 1000;
  const auto start = std::chrono::steady_clock::now();
  double first_tps = 0;
  for (const char* name : {"packing", "wlb-llm", "libra", "global-pool"}) {
    auto policy = policies::sequence_policies().create(name, {}, {"bench", ""});
    models::DocSampler sampler(lengths, 1);
    double tokens = 0, time = 0;
    const auto policy_start = std::chrono::steady_clock::now();
    for (int k = 0; k < steps || policy->pending() > 0; ++k) {
      const std::vector<std::int64_t> docs = k < steps ? sampler.batch(budget) : std::vector<std::int64_t>{};
      const models::BatchPlacement p = policy->place(docs, balancer.shape());
      for (const auto& rank : p.ranks) {
        for (const auto& mb : rank) {
          for (const std::int64_t d : mb.docs) tokens += static_cast<double>(d);
        }
      }
      time += balancer.run(p, static_cast<std::uint64_t>(k)).step_s;
    }
    const double tps = tokens / time;
    if (first_tps == 0) first_tps = tps;
    out.push_back({fmt::format("balance.{}.wall", name), seconds_since(policy_start), fmt::format("s for {} steps", steps)});
    out.push_back({fmt::format("balance.{}.speedup", name), tps / first_tps, "x simulated tokens/s over packing"});
  }
  out.push_back({"balance.wall", seconds_since(start), "s, 4 policies (target < 60)"});
  out.push_back({"balance.peak_rss", peak_rss_gb(), "GB"});
}

}  // namespace orrery::bench
