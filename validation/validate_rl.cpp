// StreamRL's claims (arXiv 2504.15930; ../shared/reference/policies.md section 4) on the RL
// simulator: the policy ranking, skewness-aware dispatch against random, and heterogeneous
// cross-datacenter cost-efficiency.
#include "runs/runs.hpp"
#include "validation/validation.hpp"
#include "runs/policy_spec.hpp"
#include "policies/rl.hpp"
#include "traces/rollouts.hpp"

#include <fmt/format.h>

#include <ostream>

namespace orrery::validation {

using namespace runs;     // the runs each suite repeats

namespace {

models::RlPool pool_of(const char* gpu, int gpus, double dollars, const char* dc) {
  return models::rl_pool(models::HardwareCatalog::builtin().gpu(gpu), gpus, dollars, dc);
}

// Qwen2.5-7B GRPO: 512 prompts x 8 samples.
models::RlSetup grpo_7b(const models::RlPool& pool, const models::RolloutLengthModel& lengths, int iterations) {
  models::RlSetup s = models::grpo_setup(models::ModelCatalog::builtin().model("qwen2.5-7b"), pool, lengths, iterations, 512, 8);
  s.source = "<validation>";
  return s;
}

models::RolloutLengthModel lognormal_outputs(double median, double p99, std::int64_t max) {
  models::RolloutLengthModel m;
  m.output = models::DocLengthModel::lognormal(median, p99, max);
  m.prompt = models::DocLengthModel::lognormal(300, 1000, 2048);
  return m;
}

models::RlSetup grpo_7b(const models::RlPool& pool, double median, double p99, std::int64_t max, int iterations) {
  return grpo_7b(pool, lognormal_outputs(median, p99, max), iterations);
}

// Generation alone: the summed makespan of every batch on `instances` instances.
double generation_makespan(const models::RlSetup& s, const std::string& dispatcher, int instances, const sim::GivenParams& params = {}) {
  const models::RooflineCostModel cost(s.generation.gpu);
  const models::GenerationInstance inst(s.generation, cost, s.source);
  const models::RolloutRanker ranker(s.alpha, s.recall, s.seed);
  auto d = policies::rl_dispatchers().create(dispatcher, params);
  std::vector<std::int64_t> history;
  double total = 0;
  for (std::size_t k = 0; k < s.batches.size(); ++k) {
    const std::vector<double> scores = ranker.scores(s.batches[k], static_cast<int>(k));
    const policies::DispatchContext ctx{inst, instances, scores, history, s.alpha, static_cast<int>(k), s.seed};
    total += models::run_generation(inst, s.batches[k], d->dispatch(s.batches[k], ctx), 0.0, s.source).end;
    history.clear();
    for (const auto& g : s.batches[k].groups) history.insert(history.end(), g.outputs.begin(), g.outputs.end());
  }
  return total;
}

}  // namespace

RlValidationSummary validate_rl(const std::string& data_dir, std::string& md, std::ostream& out) {
  RlValidationSummary summary;
  const auto check = [&](bool holds) {
    ++summary.checks;
    summary.held += holds ? 1 : 0;
    return std::string(holds ? "holds" : "does not hold");
  };
  md += "## RL post-training: StreamRL's claims\n\n";
  md += "Claims of StreamRL (arXiv 2504.15930; ../shared/reference/policies.md section 4) on Orrery's RL simulator: generation instances\n"
        "decode with continuous batching on the roofline (per-token latency from the kernels), the trainer is the step emulator\n"
        "(ZeRO-3, full recompute, sorted-greedy packing), weights go over the pools' links. Qwen2.5-7B GRPO, 512 prompts x 8 samples.\n\n";

  // 1. Ranking.
  const int iters = 6;
  const models::RlSetup one = grpo_7b(pool_of("h800", 128, 2.0, "dc0"), 400, 10000, 16384, iters);
  md += fmt::format("**Ranking.** 128 H800 ($2/GPU-hour), outputs median 400, p99 10000, max 16384 tokens; {} iterations; the\n"
                    "two-pool policies search the split on the first batch (Algorithm 1).\n\n",
                    iters);
  md += "| policy | samples/s | iteration p50 | pipeline bubble | skewness bubble | staleness | split (gen / train) | vs colocated |\n|---|---|---|---|---|---|---|---|\n";
  std::map<std::string, double> sps;
  double colocated = 0;
  for (const std::string name : {"colocated", "disaggregated-sync", "streamrl-sync", "streamrl-async"}) {
    const policies::RlRun r = policies::run_rl_policy(one, name, {}, iters);
    sps[name] = r.samples_per_s;
    if (name == "colocated") colocated = r.samples_per_s;
    md += fmt::format("| {} | {:.2f} | {:.1f} s | {:.1f}% | {:.1f}% | {:.2f} | {} | {:.3f}x |\n", name, r.samples_per_s, percentile(r.iteration_s, 0.5),
                      100 * r.pipeline_bubble, 100 * r.skewness_bubble, r.staleness,
                      name == "colocated" ? std::string("all 128 alternate") : fmt::format("{} / {}", r.generation_gpus, r.training_gpus),
                      r.samples_per_s / colocated);
  }
  const bool ranked = sps["streamrl-async"] > sps["streamrl-sync"] && sps["streamrl-sync"] > sps["colocated"] && sps["colocated"] > sps["disaggregated-sync"];
  md += fmt::format("\nstreamrl-async > streamrl-sync > colocated > disaggregated-sync in throughput **{}** ({:.2f}x async over colocated; the\n"
                    "paper reports 1.30-2.66x, and 1.06-1.41x for sync, where Orrery's gap is smaller): within an iteration every\n"
                    "synchronous policy waits about 16K x PTL for its longest sample (the skewness bubble), and the 7B trainer is small next\n"
                    "to that; one-step asynchrony lets each generation instance start the next batch as soon as it is free.\n\n",
                    check(ranked), sps["streamrl-async"] / colocated);

  // 2. Dispatch.
  md += "**Skewness-aware dispatch vs random.** Generation alone on 16 H800 instances running at most 64 sequences each (256\n"
        "samples each, so instances queue work), ranker recall 0.85 of the top 20%; the mean makespan of 40 batches. skewness-aware\n"
        "predicts a split's latency with the paper's formula (PTL(BS) L ceil(M/BS), L = P90 / P50 of the last batch);\n"
        "`latency=simulate` is Orrery's variant, which runs each side's busiest instance on the instance model at the predicted lengths.\n\n"
        "| outputs (median / p99 / max) | p99/p50 | random | round-robin | skewness-aware | gain over random | skewness-aware, simulate | gain |\n"
        "|---|---|---|---|---|---|---|---|\n";
  std::vector<double> gains;
  bool all_win = true, all_win_simulated = true;
  const int batches = 40;
  // Rows: the tail's weight at a 16K maximum (p99/p50 7.5, 15, 25), then the same shape (p99/p50
  // 25) scaled to maxima of 8K and 32K.
  struct Row {
    double median, p99;
    std::int64_t max;
  };
  const std::vector<Row> rows = {{400, 3000, 16384}, {400, 6000, 16384}, {400, 10000, 16384}, {200, 5000, 8192}, {800, 20000, 32768}};
  for (const Row& row : rows) {
    const double median = row.median, p99 = row.p99;
    const std::int64_t max = row.max;
    models::RlSetup s = grpo_7b(pool_of("h800", 16, 2.0, "dc0"), median, p99, max, batches);
    s.generation.max_batch = 64;
    const double random = generation_makespan(s, "random", 16) / batches, rr = generation_makespan(s, "round-robin", 16) / batches,
                 skew = generation_makespan(s, "skewness-aware", 16) / batches,
                 simulated = generation_makespan(s, "skewness-aware", 16, {{"latency", std::string("simulate")}}) / batches;
    gains.push_back(random / skew);
    all_win = all_win && skew < random;
    all_win_simulated = all_win_simulated && simulated < random;
    md += fmt::format("| {:.0f} / {:.0f} / {} | {:.1f} | {:.1f} s | {:.1f} s | {:.1f} s | {:.3f}x | {:.1f} s | {:.3f}x |\n", median, p99, max, p99 / median, random, rr, skew,
                      gains.back(), simulated, random / simulated);
  }
  md += fmt::format("\nSkewness-aware beats random in every row **{}** (with `latency=simulate`: **{}**). The gap grows with the tail's weight\n"
                    "(p99/p50 7.5, 15, 25 at a 16K maximum) **{}**, and with the maximum length (8K, 16K, 32K at p99/p50 25) **{}**. Two\n"
                    "effects pull against each other in Orrery: skewness-aware dispatch wins by starting the longest samples first (LPT)\n"
                    "while instances queue work, but the batch's longest sample sets a floor, L_max x PTL at a small batch, that no dispatch\n"
                    "moves, and concentrating the tail on few instances raises their per-token latency with the KV reads of many long\n"
                    "contexts. The paper's latency formula sees neither the floor nor the KV reads, so its split can miss.\n\n",
                    check(all_win), all_win_simulated ? "holds" : "does not hold", check(gains[1] > gains[0] && gains[2] > gains[1]),
                    check(gains[2] > gains[3] && gains[4] > gains[2]));

  // 2b. Dispatch in the generation service.
  md += "**The same, as a service.** streamrl-async on 128 H800 with 64 generating (fixed), 24 iterations: instances move on\n"
        "to the next batch when free, so dispatch decides how evenly they finish rather than one batch's makespan.\n\n"
        "| outputs (median / p99 / max) | p99/p50 | random samples/s | skewness-aware samples/s | gain |\n|---|---|---|---|---|\n";
  std::vector<double> service;
  for (const Row& row : rows) {
    models::RlSetup s = grpo_7b(pool_of("h800", 128, 2.0, "dc0"), row.median, row.p99, row.max, 24);
    s.generation_gpus = 64;
    const double random = policies::run_rl_policy(s, "streamrl-async", {{"dispatcher", std::string("random")}}, 24).samples_per_s;
    const double skew = policies::run_rl_policy(s, "streamrl-async", {{"dispatcher", std::string("skewness-aware")}}, 24).samples_per_s;
    service.push_back(skew / random);
    md += fmt::format("| {:.0f} / {:.0f} / {} | {:.1f} | {:.2f} | {:.2f} | {:.3f}x |\n", row.median, row.p99, row.max, row.p99 / row.median, random, skew,
                      service.back());
  }
  md += fmt::format("\nAs a service, the gap grows with the tail's weight **{}** and with the maximum length **{}**.\n\n",
                    check(service[1] > service[0] && service[2] > service[1]), check(service[2] > service[3] && service[4] > service[2]));

  // 3. Cost.
  const int cost_iters = 4;
  models::RlSetup homo = grpo_7b(pool_of("h800", 96, 2.0, "dc-a"), 400, 10000, 16384, cost_iters);
  models::RlSetup hetero = homo;
  hetero.shared = false;
  hetero.generation_pool = pool_of("h20", 64, 1.0, "dc-b");
  hetero.training_pool = pool_of("h800", 32, 2.0, "dc-a");
  hetero.generation.gpu = hetero.generation_pool.gpu;
  hetero.generation.nvlink = hetero.generation_pool.gpu.nvlink_bandwidth;
  hetero.cross_dc = models::CrossDcLink{100e9 / 8, 0.01};
  const policies::RlRun h = policies::run_rl_policy(homo, "streamrl-async", {}, cost_iters);
  const policies::RlRun x = policies::run_rl_policy(hetero, "streamrl-async", {}, cost_iters);
  md += fmt::format("**Heterogeneous cross-datacenter cost.** streamrl-async, {} iterations. Homogeneous: 96 H800 at $2/GPU-hour (split {} / {}).\n"
                    "Heterogeneous: up to 64 H20 at $1/GPU-hour generating in one datacenter, up to 32 H800 at $2 training in another,\n"
                    "100 Gb/s and 10 ms between them, the faster side sized to match the slower (Algorithm 1 across datacenters; prices are\n"
                    "assumptions: set yours in the scenario).\n\n"
                    "| setting | GPUs held (gen / train) | samples/s | $/hour | samples per $ | weight sync |\n|---|---|---|---|---|---|\n"
                    "| homogeneous | {} / {} H800 | {:.2f} | {:.0f} | {:.1f} | {:.2f} s |\n| heterogeneous | {} H20 / {} H800 | {:.2f} | {:.0f} | {:.1f} | {:.2f} s |\n\n",
                    cost_iters, h.generation_gpus, h.training_gpus, h.generation_gpus, h.training_gpus, h.samples_per_s, h.dollars / h.makespan * 3600,
                    h.samples_per_dollar, h.weight_sync_s, x.generation_gpus, x.training_gpus, x.samples_per_s, x.dollars / x.makespan * 3600,
                    x.samples_per_dollar, x.weight_sync_s);
  md += fmt::format("Decode is memory-bound, and the H20 has more HBM bandwidth (4.0 TB/s) than the H800 (3.35) for a seventh of its\n"
                    "FLOP/s: cost-efficiency improves **{}** ({:.2f}x samples per dollar; StreamRL reports 1.23-1.33x). The cross-datacenter\n"
                    "sync of 15 GB takes {:.1f} s, off the critical path under one-step asynchrony.\n\n",
                    check(x.samples_per_dollar > h.samples_per_dollar), x.samples_per_dollar / h.samples_per_dollar, x.weight_sync_s);
  // 4. Real length shapes.
  md += "**Real length shapes.** Output lengths of real services (../shared/data: Azure's LLM inference trace, Mooncake's\n"
        "conversation trace) bootstrapped for their shape, scaled to a median of 400 tokens and cut at 16384; and simpleRL-Zoo's\n"
        "approximate mean response growth for Mistral-7B (rl-rollout-lengths, read from a plot). 128 H800, 4 iterations.\n\n"
        "| output lengths | source p50 | source p99/p50 | colocated samples/s | streamrl-async samples/s | async over colocated |\n"
        "|---|---|---|---|---|---|\n";
  bool async_wins = true;
  for (const std::string& name : traces::output_length_source_names()) {
    std::vector<std::int64_t> lengths = traces::load_output_lengths(name, data_dir);
    std::vector<double> sorted(lengths.begin(), lengths.end());
    const double p50 = percentile(sorted, 0.5), p99 = percentile(sorted, 0.99);
    models::RolloutLengthModel m = lognormal_outputs(400, 10000, 16384);
    m.empirical = std::move(lengths);
    const models::RlSetup s = grpo_7b(pool_of("h800", 128, 2.0, "dc0"), m, 4);
    const double c = policies::run_rl_policy(s, "colocated", {}, 4).samples_per_s, a = policies::run_rl_policy(s, "streamrl-async", {}, 4).samples_per_s;
    async_wins = async_wins && a > c;
    md += fmt::format("| {} | {:.0f} | {:.1f} | {:.2f} | {:.2f} | {:.3f}x |\n", name, p50, p99 / p50, c, a, a / c);
  }
  {
    const traces::LengthGrowth g = traces::load_length_growth("Mistral-7B-v0.1", data_dir);
    models::RolloutLengthModel m = lognormal_outputs(g.start_mean / 2, g.start_mean * 8, static_cast<std::int64_t>(g.max_length));
    m.growth = g.end_mean / g.start_mean;
    const models::RlSetup s = grpo_7b(pool_of("h800", 128, 2.0, "dc0"), m, 8);
    const policies::RlRun c = policies::run_rl_policy(s, "colocated", {}, 8), a = policies::run_rl_policy(s, "streamrl-async", {}, 8);
    async_wins = async_wins && a.samples_per_s > c.samples_per_s;
    md += fmt::format("| lognormal growing {:.1f}x over 8 iterations (Mistral-7B, mean {:.0f} to {:.0f}; max {}) | - | 16.0 | {:.2f} | {:.2f} | {:.3f}x |\n",
                      m.growth, g.start_mean, g.end_mean, g.max_length, c.samples_per_s, a.samples_per_s, a.samples_per_s / c.samples_per_s);
    md += fmt::format("\nWith growing lengths the colocated iteration goes from {:.1f} s to {:.1f} s.\n", c.iteration_s.front(), c.iteration_s.back());
  }
  md += fmt::format("\nstreamrl-async outruns colocated on every real shape **{}**.\n\n", check(async_wins));
  out << fmt::format("rl: {} of {} claims hold\n", summary.held, summary.checks);
  return summary;
}

}  // namespace orrery::validation
