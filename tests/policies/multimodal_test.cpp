#include "models/hardware.hpp"
#include "models/multimodal_pipeline.hpp"
#include "policies/multimodal.hpp"
#include "sim/error.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>

using namespace orrery;

namespace {

struct Fixture {
  const models::GpuSpec& gpu = models::HardwareCatalog::builtin().gpu("h100");
  models::RooflineCostModel cost{gpu, models::training_roofline_params(gpu)};
  models::MultimodalSetup setup;
  explicit Fixture(const models::MultimodalModel& m, int tp = 2, int pp = 4, int dp = 1, int micro_batch = 4) {
    setup.model = &m;
    setup.cost = &cost;
    setup.tp = tp;
    setup.pp = pp;
    setup.dp = dp;
    setup.micro_batch = micro_batch;
    setup.nvlink = 360e9;
    setup.p2p = 47e9;
    setup.hbm_bytes = 80e9;
  }
};

// Mean step time of a policy over `steps` batches of a mix.
std::map<std::string, double> mean_steps(const models::MultimodalModel& m, const models::MultimodalMix& mix, int steps, Fixture& fx) {
  std::map<std::string, double> out;
  for (const char* name : {"megatron-1f1b", "modality-static", "pipeweaver"}) {
    auto policy = policies::multimodal_pipelines().create(name, {}, {"test", ""});
    const models::ModuleCostCache costs(m, fx.cost, fx.setup.tp, fx.setup.nvlink);
    models::MultimodalBatchGenerator gen(mix, 11);
    policy->prepare(fx.setup, models::MultimodalBatchGenerator(mix, 99).next(), costs);
    double total = 0;
    for (int k = 0; k < steps; ++k) total += models::multimodal_step(*policy, fx.setup, gen.next(), costs).step_s;
    out[name] = total / steps;
  }
  return out;
}

}  // namespace

double speedup(const std::map<std::string, double>& r, const char* over) { return r.at(over) / r.at("pipeweaver"); }

TEST_CASE("multimodal pipelines: pipeweaver > modality-static > megatron-1f1b, the gain grows with the mix's variance") {
  const auto& m = models::MultimodalCatalog::builtin().model("qwen2-vl-7b");
  Fixture fx(m);
  // A constant mix (one 672 x 672 image and ~500 text tokens per sample), the default mix, and a
  // wide one (half text-only, 30% video, 3 images of 224 to 1344 pixels).
  models::MultimodalMix flat, wide;
  flat.text_only = 0;
  flat.video_fraction = 0;
  flat.images_mean = 1;
  flat.resolutions = {{672, 672}};
  flat.text_median = 500;
  flat.text_p99 = 520;
  wide.text_only = 0.5;
  wide.video_fraction = 0.3;
  wide.images_mean = 3;
  wide.resolutions = {{224, 224}, {448, 448}, {896, 896}, {1344, 1344}};
  const auto f = mean_steps(m, flat, 8, fx), d = mean_steps(m, models::MultimodalMix{}, 8, fx), w = mean_steps(m, wide, 8, fx);
  CHECK(d.at("pipeweaver") < d.at("modality-static"));
  CHECK(d.at("modality-static") < d.at("megatron-1f1b"));
  CHECK(w.at("pipeweaver") < w.at("modality-static"));
  CHECK(speedup(f, "modality-static") < speedup(d, "modality-static"));
  CHECK(speedup(d, "modality-static") < speedup(w, "modality-static"));
  CHECK(speedup(f, "megatron-1f1b") < speedup(w, "megatron-1f1b"));
  // With a constant mix PipeWeaver is close to the best static plan.
  CHECK(f.at("pipeweaver") <= 1.02 * std::min(f.at("modality-static"), f.at("megatron-1f1b")));
}

TEST_CASE("multimodal pipelines: uniform costs reduce to 1F1B's closed form") {
  // A one-module model (an LLM alone) and identical samples: every stage's op takes the same time.
  models::MultimodalModel llm = models::MultimodalCatalog::builtin().model("qwen2-vl-7b");
  llm.modules = {llm.modules[2]};
  llm.edges = {};
  models::validate_multimodal(llm, "test", "/llm");
  Fixture fx(llm, 1, 4, 1, 2);
  fx.setup.p2p = 0;
  models::MultimodalSample s;
  s.text_tokens = 2048;
  const std::vector<models::MultimodalSample> batch(16, s);
  const models::ModuleCostCache costs(llm, fx.cost, 1, 0);
  const models::LayerSeconds one = costs.layer(0, {s}), two = costs.layer(0, {s, s});
  // 28 layers over 4 stages: 7 each. 1F1B: (m + p - 1)(F + B) with m = 8 micro-batches of 2.
  auto megatron = policies::multimodal_pipelines().create("megatron-1f1b", {}, {"test", ""});
  megatron->prepare(fx.setup, batch, costs);
  const auto r = models::multimodal_step(*megatron, fx.setup, batch, costs);
  CHECK(r.step_s == doctest::Approx((8 + 4 - 1) * 7 * two.total()).epsilon(1e-9));
  CHECK(r.bubble_fraction == doctest::Approx(3.0 / 11.0).epsilon(1e-9));
  // PipeWeaver with sub-micro-batches of one sample (efficiency 0.01) and one segment: the same
  // law with m = 16.
  auto pw = policies::multimodal_pipelines().create("pipeweaver", {{"efficiency", 0.01}, {"extra_segments", std::int64_t{0}}}, {"test", ""});
  pw->prepare(fx.setup, batch, costs);
  const auto q = models::multimodal_step(*pw, fx.setup, batch, costs);
  CHECK(q.step_s == doctest::Approx((16 + 4 - 1) * 7 * one.total()).epsilon(1e-9));
}

TEST_CASE("multimodal pipelines: cost reuse never changes a result") {
  const auto& m = models::MultimodalCatalog::builtin().model("qwen2-vl-7b");
  Fixture fx(m, 2, 4, 2, 4);
  models::MultimodalBatchGenerator gen(models::MultimodalMix{}, 5);
  const auto profile = gen.next();
  const auto batch = gen.next();
  for (const char* name : {"megatron-1f1b", "modality-static", "pipeweaver"}) {
    CAPTURE(name);
    const models::ModuleCostCache with(m, fx.cost, 2, fx.setup.nvlink, true), without(m, fx.cost, 2, fx.setup.nvlink, false);
    auto a = policies::multimodal_pipelines().create(name, {}, {"test", ""});
    auto b = policies::multimodal_pipelines().create(name, {}, {"test", ""});
    a->prepare(fx.setup, profile, with);
    b->prepare(fx.setup, profile, without);
    const auto x = models::multimodal_step(*a, fx.setup, batch, with), y = models::multimodal_step(*b, fx.setup, batch, without);
    CHECK(x.step_s == y.step_s);
    CHECK(x.run.busy == y.run.busy);
    CHECK(with.hits() > 0);
    CHECK(without.hits() == 0);
    CHECK(with.misses() < without.misses());
  }
}

TEST_CASE("multimodal pipelines: a partition that cannot fit memory, too many stages") {
  const auto& m = models::MultimodalCatalog::builtin().model("qwen2-vl-72b");
  Fixture fx(m, 1, 2, 1, 4);
  const models::ModuleCostCache costs(m, fx.cost, 1, 0);
  const auto batch = models::MultimodalBatchGenerator(models::MultimodalMix{}, 1).next();
  for (const char* name : {"megatron-1f1b", "modality-static", "pipeweaver"}) {
    auto p = policies::multimodal_pipelines().create(name, {}, {"test", ""});
    CHECK_THROWS_WITH_AS(p->prepare(fx.setup, batch, costs), doctest::Contains("a partition that cannot fit memory: stage "), sim::InputError);
  }
  const auto& small = models::MultimodalCatalog::builtin().model("qwen2-vl-7b");
  Fixture many(small, 1, 64, 1, 4);
  const models::ModuleCostCache c2(small, many.cost, 1, 0);
  auto megatron = policies::multimodal_pipelines().create("megatron-1f1b", {}, {"test", ""});
  CHECK_THROWS_WITH_AS(megatron->prepare(many.setup, batch, c2), doctest::Contains("found 64 pipeline parts for 61 layers: more stages than the model"), sim::InputError);
}
