#include "policies/rl.hpp"
#include "sim/error.hpp"
#include "approx.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

using namespace orrery;

namespace {

// A small GRPO setup: Qwen2.5-7B on 16 H800s, 64 prompts x 4 samples of up to 4K tokens.
models::RlSetup small_setup(int iterations, double p99 = 2000) {
  models::RolloutLengthModel m;
  m.output = models::DocLengthModel::lognormal(200, p99, 4096);
  m.prompt = models::DocLengthModel::lognormal(200, 800, 1024);
  models::RlSetup s = models::grpo_setup(models::ModelCatalog::builtin().model("qwen2.5-7b"),
                                         models::rl_pool(models::HardwareCatalog::builtin().gpu("h800"), 16, 2.0), m, iterations, 64, 4, 3);
  s.source = "rl.json";
  return s;
}

double makespan_of(const models::RlSetup& s, const std::string& dispatcher, int instances) {
  const models::RooflineCostModel cost(s.generation.gpu);
  const models::GenerationInstance inst(s.generation, cost, s.source);
  const models::RolloutRanker ranker(s.alpha, s.recall, s.seed);
  double total = 0;
  std::vector<std::int64_t> history;
  for (std::size_t k = 0; k < s.batches.size(); ++k) {
    const std::vector<double> scores = ranker.scores(s.batches[k], static_cast<int>(k));
    const policies::DispatchContext ctx{inst, instances, scores, history, s.alpha, static_cast<int>(k), s.seed};
    const auto d = policies::rl_dispatchers().create(dispatcher)->dispatch(s.batches[k], ctx);
    total += models::run_generation(inst, s.batches[k], d, 0.0, "test").end;
    history.clear();
    for (const auto& g : s.batches[k].groups) history.insert(history.end(), g.outputs.begin(), g.outputs.end());
  }
  return total;
}

}  // namespace

TEST_CASE("rl ranker: the configured recall of the top-alpha prompts, exact when perfect") {
  const models::RlSetup s = small_setup(4);
  for (const double recall : {1.0, 0.85, 0.5}) {
    const models::RolloutRanker r(0.2, recall, 7);
    for (int k = 0; k < 4; ++k) {
      const double got = models::RolloutRanker::tail_recall(s.batches[static_cast<std::size_t>(k)], r.scores(s.batches[static_cast<std::size_t>(k)], k), 0.2);
      CAPTURE(recall);
      CHECK(got >= recall);
      CHECK(got <= recall + 1.0 / 13 + 1e-9);  // 13 prompts in the top 20% of 64: one step above the target at most
    }
  }
}

TEST_CASE("rl dispatch: every prompt once; skewness-aware with LPT beats random on loaded instances") {
  models::RlSetup s = small_setup(6, 3000);
  s.generation.max_batch = 16;  // each instance holds more samples than it runs at once
  const models::RooflineCostModel cost(s.generation.gpu);
  const models::GenerationInstance inst(s.generation, cost, s.source);
  const std::vector<double> scores = models::RolloutRanker(0.2, 0.85, 1).scores(s.batches[0], 0);
  const std::vector<std::int64_t> none;
  for (const std::string name : {"round-robin", "random", "skewness-aware"}) {
    const policies::DispatchContext ctx{inst, 4, scores, none, 0.2, 0, 1};
    const models::Dispatch d = policies::rl_dispatchers().create(name)->dispatch(s.batches[0], ctx);
    REQUIRE(d.instances.size() == 4);
    std::vector<int> all;
    for (const auto& b : d.instances) all.insert(all.end(), b.begin(), b.end());
    std::sort(all.begin(), all.end());
    CHECK(all.size() == 64);
    CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
  }
  // As a service: instances still busy get less new work, and the lists are for physical instances.
  {
    policies::DispatchContext ctx{inst, 4, scores, none, 0.2, 0, 1};
    ctx.busy_for = {0.0, 0.0, 0.0, 60.0};
    const models::Dispatch d = policies::rl_dispatchers().create("skewness-aware")->dispatch(s.batches[0], ctx);
    CHECK(d.placed);
    const auto work = [&](const std::vector<int>& prompts) {
      double w = 0;
      for (const int p : prompts) w += std::exp(scores[static_cast<std::size_t>(p)]);
      return w;
    };
    for (int i = 0; i < 3; ++i) CHECK(work(d.instances[3]) < work(d.instances[static_cast<std::size_t>(i)]));
  }
  const double random = makespan_of(s, "random", 4), skew = makespan_of(s, "skewness-aware", 4);
  MESSAGE("generation makespan over 6 iterations: random " << random << " s, skewness-aware " << skew << " s");
  CHECK(skew < random);
}

TEST_CASE("rl policies: all run, stream beats waiting, async overlaps at staleness <= 1, accounting adds up") {
  const models::RlSetup s = small_setup(4);
  std::map<std::string, policies::RlRun> runs;
  for (const std::string name : {"colocated", "disaggregated-sync", "streamrl-sync", "streamrl-async"}) {
    const policies::RlRun r = policies::run_rl_policy(s, name, {}, 4);
    CAPTURE(name);
    CHECK(r.samples == 4 * 64 * 4);
    CHECK(r.iteration_s.size() == 4);
    CHECK(r.makespan > 0);
    CHECK(r.pipeline_bubble >= 0);
    CHECK(r.skewness_bubble > 0);
    CHECK(r.pipeline_bubble + r.skewness_bubble < 1);
    CHECK(r.samples_per_dollar == orrery::testing::Approx(r.samples / (16 * 2.0 * r.makespan / 3600)));
    CHECK(!r.timeline.empty());
    if (name != "streamrl-async") CHECK(r.staleness == 0);
    if (name != "colocated") CHECK(r.generation_gpus + r.training_gpus == 16);
    runs[name] = r;
  }
  CHECK(runs["streamrl-async"].staleness > 0);
  CHECK(runs["streamrl-async"].staleness <= 1);
  CHECK(runs["streamrl-sync"].samples_per_s > runs["disaggregated-sync"].samples_per_s);
  CHECK(runs["streamrl-async"].samples_per_s >= runs["streamrl-sync"].samples_per_s);
  // Synchronous generation starts every instance at once; the asynchronous service starts each
  // as soon as it is free (and its weights are at most one step old).
  const auto starts = [](const policies::RlRun& r) {
    std::set<double> t;
    for (const auto& sp : r.timeline) {
      if (sp.lane.rfind("generation", 0) == 0) t.insert(sp.start);
    }
    return t.size();
  };
  CHECK(starts(runs["streamrl-sync"]) == 1);
  CHECK(starts(runs["streamrl-async"]) > 1);
  // Deterministic.
  const policies::RlRun again = policies::run_rl_policy(s, "streamrl-async", {}, 4);
  CHECK(again.makespan == runs["streamrl-async"].makespan);
}

TEST_CASE("rl weight sync and bad setups") {
  const models::RlSetup s = small_setup(2);
  const double local = models::weight_sync_seconds(s.model, s.training_pool, 1, 1, s.generation_pool, 8, 1, nullptr);
  const models::CrossDcLink slow{100e9 / 8, 0.01};
  const double remote = models::weight_sync_seconds(s.model, s.training_pool, 1, 1, s.generation_pool, 8, 1, &slow);
  // 15.2 GB of bf16 weights over a 100 Gb/s link: at least 1.2 s, and slower than inside one datacenter.
  CHECK(remote > 2.0 * static_cast<double>(s.model.params()) / slow.bandwidth);
  CHECK(remote > local);
  // The fan-out is a pipelined broadcast simulated on the fabric: four times the instances cost
  // little more; tensor parallelism halves the shard each rank carries.
  models::RlPool wide = s.generation_pool;
  wide.gpus = 64;
  const double sync16 = models::weight_sync_seconds(s.model, s.training_pool, 1, 1, wide, 16, 1, nullptr);
  const double sync64 = models::weight_sync_seconds(s.model, s.training_pool, 1, 1, wide, 64, 1, nullptr);
  const double sync64_tp2 = models::weight_sync_seconds(s.model, s.training_pool, 1, 1, wide, 64, 2, nullptr);
  MESSAGE("weight sync: 8 GPUs " << local << " s, 16: " << sync16 << " s, 64: " << sync64 << " s, 64 at tp 2: " << sync64_tp2 << " s, cross-DC " << remote
                                 << " s");
  CHECK(sync64 > sync16);
  CHECK(sync64 < 1.5 * sync16);
  CHECK(sync64_tp2 < 0.75 * sync64);
  models::RlSetup two = s;
  two.shared = false;
  two.generation_pool.gpus = 8;
  two.training_pool.gpus = 8;
  CHECK_THROWS_WITH_AS(policies::run_rl_policy(two, "colocated", {}, 2), doctest::Contains("rl.json:/generation_pool: colocated multiplexes one GPU pool"),
                       sim::InputError);
  CHECK_THROWS_WITH_AS(policies::run_rl_policy(s, "colocated", {}, 3), doctest::Contains("found 2 iterations of rollouts, 3 asked for"), sim::InputError);
  CHECK_THROWS_WITH_AS(policies::run_rl_policy(s, "streamrl-sync:x", {}, 2), doctest::Contains("unknown RL policy"), sim::InputError);
  models::RlSetup big = s;
  big.train.tp = 3;
  CHECK_THROWS_WITH_AS(policies::run_rl_policy(big, "colocated", {}, 2), doctest::Contains("expected a multiple of tp x pp x cp"), sim::InputError);
}

TEST_CASE("rl elastic stage balancing: GPUs move to generation as lengths grow, only where it pays") {
  models::RlSetup s = small_setup(8);
  s.generation_pool.gpus = s.training_pool.gpus = 32;
  s.generation_gpus = 8;  // start generation-starved
  models::RolloutLengthModel m;
  m.output = models::DocLengthModel::lognormal(200, 2000, 4096);
  m.prompt = models::DocLengthModel::lognormal(200, 800, 1024);
  m.growth = 6;
  s.batches = models::RolloutGenerator(m, 3).batches(8, 64, 4);
  const policies::RlRun fixed = policies::run_rl_policy(s, "streamrl-sync", {}, 8);
  const policies::RlRun elastic = policies::run_rl_policy(s, "streamrl-sync", {{"elastic", true}}, 8);
  MESSAGE("fixed " << fixed.samples_per_s << " samples/s at 8 / 24 GPUs; elastic " << elastic.samples_per_s << " samples/s, " << elastic.resizes
                   << " moves, ending at " << elastic.generation_gpus << " / " << elastic.training_gpus);
  CHECK(fixed.resizes == 0);
  CHECK(elastic.resizes > 0);
  CHECK(elastic.generation_gpus == 8 + 8 * elastic.resizes);
  CHECK(elastic.generation_gpus + elastic.training_gpus == 32);
  CHECK(elastic.samples_per_s > fixed.samples_per_s);
  models::RlSetup two = s;
  two.shared = false;
  two.generation_gpus = 0;
  two.generation_pool.gpus = 8;
  two.training_pool.gpus = 8;
  CHECK_THROWS_WITH_AS(policies::run_rl_policy(two, "streamrl-sync", {{"elastic", true}}, 2), doctest::Contains("found elastic with two pools"),
                       sim::InputError);
}

