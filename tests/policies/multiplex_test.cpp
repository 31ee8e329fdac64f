// GPU multiplexing: Mosaic's colocated modules (models/multiplex/colocation.hpp) and MuxTune's
// shared LoRA backbone (models/multiplex/peft.hpp), with their policies.
#include "models/hardware/hardware.hpp"
#include "models/multiplex/colocation.hpp"
#include "models/multiplex/peft.hpp"
#include "policies/multiplex.hpp"
#include "sim/error.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>

using namespace orrery;

namespace {

// Hand-made modules (no cost model): times, tiles and bytes chosen so the closed forms are plain.
models::ColocationProblem toy_modules(int gpus) {
  models::ColocationProblem p;
  p.gpu.sms = 100;
  p.gpu.hbm_bandwidth = 1e12;
  p.gpu.hbm_capacity = 80e9;
  p.gpu.bandwidth_sm_share = 0.5;
  p.gpu.colocation_penalty = 0.03;
  p.gpus = gpus;
  p.micro_batch = 4;
  p.source = "toy.json";
  // A large backbone that fills every SM, and two small encoders that fill 30 and 20 of 100.
  p.modules = {{"llm", 0.100, 2000, 10e9, 40e9}, {"vision", 0.020, 30, 2e9, 10e9}, {"audio", 0.010, 20, 1e9, 5e9}};
  return p;
}

const models::GpuSpec& h100() { return models::HardwareCatalog::builtin().gpu("H100"); }

models::PeftProblem toy_tasks(int n) {
  models::PeftProblem p;
  p.backbone = models::ModelCatalog::builtin().model("llama3-8b");
  p.gpu = h100();
  p.stages = 2;
  const std::vector<std::vector<std::int64_t>> lens = {{100, 300, 700, 90}, {1000, 50, 260, 128}, {512, 513, 40, 2000}, {64, 64, 64, 64}};
  for (int i = 0; i < n; ++i) {
    models::PeftTask t;
    t.name = "task" + std::to_string(i);
    t.rank = 8 << (i % 3);
    t.micro_batch = 2;
    t.micro_batches = 2;
    p.tasks.push_back(t);
    p.lengths.push_back(lens[static_cast<std::size_t>(i) % lens.size()]);
  }
  return p;
}

}  // namespace

TEST_CASE("colocation: a module alone at a 100% quota runs at its whole-GPU speed; time never grows with the quota") {
  const models::ColocationProblem p = toy_modules(4);
  for (const models::ColocModule& m : p.modules) {
    CHECK(models::quota_time(m, p.gpu, 1.0) == m.step_s);
    for (int k = 1; k < 100; ++k) CHECK(models::quota_time(m, p.gpu, (k + 1) / 100.0) <= models::quota_time(m, p.gpu, k / 100.0));
  }
  // The audio encoder fills 20 SMs: at a 20% quota its compute is one wave, as on the whole GPU;
  // only its memory-bound part (1e9 bytes at 1e12 B/s = 1 ms) slows, by 0.5 / 0.2.
  const models::ColocModule& audio = p.modules[2];
  CHECK(models::quota_time(audio, p.gpu, 0.2) == doctest::Approx(0.009 + 0.001 * 2.5));
  // The backbone's 2000 tiles take 20 waves on 100 SMs, 40 on 50.
  const models::ColocModule& llm = p.modules[0];
  CHECK(models::quota_time(llm, p.gpu, 0.5) == doctest::Approx(0.090 * 2 + 0.010));
}

TEST_CASE("colocation: pieces on one GPU share its HBM and pay the colocation penalty") {
  models::ColocationProblem p = toy_modules(1);
  // vision and audio at 50% each: demands 2 ms / 20 ms and 1 ms / 11.5 ms of the bandwidth (sum < 1),
  // so only the 3% penalty applies.
  const models::ColocPlacement two{{{1, 0, 0.5, 0.2}, {2, 0, 0.5, 0.1}}};
  const models::ColocationResult r = models::evaluate_colocation(p, two);
  CHECK(r.piece_s[0] == doctest::Approx(models::quota_time(p.modules[1], p.gpu, 0.5) * 1.03));
  CHECK(r.piece_s[1] == doctest::Approx(models::quota_time(p.modules[2], p.gpu, 0.5) * 1.03));
  // Memory-heavy modules: demands above the peak stretch their memory-bound parts by the sum.
  p.modules[1].hbm_bytes = 15e9;
  p.modules[2].hbm_bytes = 9e9;
  const models::ColocationResult s = models::evaluate_colocation(p, two);
  const double d1 = 15e-3 / models::quota_time(p.modules[1], p.gpu, 0.5), d2 = 9e-3 / models::quota_time(p.modules[2], p.gpu, 0.5);
  REQUIRE(d1 + d2 > 1);
  CHECK(s.piece_s[0] == doctest::Approx((models::quota_time(p.modules[1], p.gpu, 0.5) + 0.015 * (d1 + d2 - 1)) * 1.03));
}

TEST_CASE("colocation: mosaic ranks above one module per GPU, deterministically, within every quota") {
  for (const int gpus : {3, 4, 5, 8}) {
    const models::ColocationProblem p = toy_modules(gpus);
    const auto one = policies::colocation_policies().create("one-per-gpu", {}, {"test", ""});
    const auto mosaic = policies::colocation_policies().create("mosaic", {}, {"test", ""});
    const models::ColocPlacement a = one->place(p), b = mosaic->place(p), c = mosaic->place(p);
    models::check_placement(p, b, "test", "/placement");  // quotas within (0, 1], sums at most 1
    const double ra = models::evaluate_colocation(p, a).samples_per_s, rb = models::evaluate_colocation(p, b).samples_per_s;
    CAPTURE(gpus);
    CHECK(rb > ra);
    CHECK(models::evaluate_colocation(p, c).samples_per_s == rb);
    CHECK(static_cast<int>(a.pieces.size()) == gpus);
  }
  // One module per GPU needs a GPU per module.
  CHECK_THROWS_WITH_AS(policies::colocation_policies().create("one-per-gpu", {}, {"test", ""})->place(toy_modules(2)),
                       doctest::Contains("toy.json:/colocation/gpus: found 2 GPUs for 3 modules"), sim::InputError);
}

TEST_CASE("colocation: temporal multiplexing runs a GPU's phases in turn; mosaic never plans below it") {
  const models::ColocationProblem p = toy_modules(4);
  const auto temporal = policies::colocation_policies().create("temporal", {}, {"test", ""});
  // Every GPU runs llm, vision and audio in turn at 100%: G / (0.100 + 0.020 + 0.010) micro-batches/s.
  const models::ColocationResult t = models::evaluate_colocation(p, temporal->place(p));
  CHECK(t.microbatches_per_s == doctest::Approx(4 / 0.130));
  // Two phases on one GPU: [vision 50% + audio 50%] then [llm 100%]; a turn is the slower of the
  // first phase's two pieces plus the llm's whole-GPU time.
  models::ColocationProblem one = toy_modules(1);
  const models::ColocPlacement phased{{{1, 0, 0.5, 0.2, 0}, {2, 0, 0.5, 0.1, 0}, {0, 0, 1.0, 0.6, 1}}};
  const models::ColocationResult r = models::evaluate_colocation(one, phased);
  const double first = std::max(models::quota_time(one.modules[1], one.gpu, 0.5), models::quota_time(one.modules[2], one.gpu, 0.5)) * 1.03;
  CHECK(r.microbatches_per_s == doctest::Approx(1 / (first + 0.100)));
  const auto mosaic = policies::colocation_policies().create("mosaic", {}, {"test", ""});
  CHECK(models::evaluate_colocation(p, mosaic->place(p)).microbatches_per_s >= t.microbatches_per_s);
}

TEST_CASE("colocation: bad placements name the piece and the field") {
  const models::ColocationProblem p = toy_modules(2);
  const auto bad = [&](models::ColocPlacement pl) { models::check_placement(p, pl, "s.json", "/colocation/placement"); };
  CHECK_THROWS_WITH_AS(bad({{{0, 0, 1.0, 0.6}, {1, 1, 1.2, 0.2}, {2, 1, 0.1, 0.1}}}),
                       doctest::Contains("s.json:/colocation/placement/1/sm: found a quota of 1.2 (120%), expected more than 0 and at most 1 (100%)"),
                       sim::InputError);
  CHECK_THROWS_WITH_AS(bad({{{0, 0, 1.0, 0.6}, {1, 1, 0.7, 0.2}, {2, 1, 0.4, 0.1}}}),
                       doctest::Contains("s.json:/colocation/placement/2/sm: the SM quotas on GPU 1 sum to 1.1 (110%), expected at most 1 (100%)"),
                       sim::InputError);
  CHECK_THROWS_WITH_AS(bad({{{0, 0, 1.0, 0.3}, {1, 1, 0.5, 0.2}, {2, 1, 0.4, 0.1}}}),
                       doctest::Contains("s.json:/colocation/placement/0/memory: found a memory quota of 0.3, expected at least 0.5"), sim::InputError);
  CHECK_THROWS_WITH_AS(bad({{{0, 0, 1.0, 0.6}, {1, 1, 0.5, 0.2}}}), doctest::Contains("module \"audio\" has no piece"), sim::InputError);
}

TEST_CASE("peft: chunk alignment saves exactly the padding difference") {
  const models::PeftProblem p = toy_tasks(3);
  const models::PeftPlan slora = policies::peft_policies().create("slora", {}, {"test", ""})->plan(p);
  // Fused micro-batch 0: tasks' first two sequences {100, 300}, {1000, 50}, {512, 513}: 6 at the
  // longest (1000) = 6000 tokens; in 128-token chunks 128 + 384 + 1024 + 128 + 512 + 640 = 2816.
  const models::PeftMicroBatch& mb = slora.pipelines.front().front();
  CHECK(models::padded_tokens(mb, models::PeftPadding::longest, 1) == 6000);
  CHECK(models::padded_tokens(mb, models::PeftPadding::chunk, 128) == 2816);
  CHECK(models::padded_tokens(mb, models::PeftPadding::chunk, 1) == 2475);  // chunk 1: no padding
  // Over the step: what evaluate_peft counts moves by exactly that difference.
  const models::RooflineCostModel cost(h100());
  models::PeftPlan chunked = slora;
  chunked.padding = models::PeftPadding::chunk;
  chunked.chunk = 128;
  std::int64_t diff = 0;
  for (const auto& m : slora.pipelines.front()) diff += models::padded_tokens(m, models::PeftPadding::longest, 1) - models::padded_tokens(m, models::PeftPadding::chunk, 128);
  const models::PeftResult a = models::evaluate_peft(p, slora, cost), b = models::evaluate_peft(p, chunked, cost);
  CHECK(a.padded_tokens - b.padded_tokens == static_cast<double>(diff));
  CHECK(a.real_tokens == b.real_tokens);
  CHECK(b.step_s < a.step_s);  // fewer padded tokens, less work
}

TEST_CASE("peft: N fused tasks hold one backbone copy plus N adapters; instances hold N copies") {
  const models::RooflineCostModel cost(h100());
  for (const int n : {1, 2, 4}) {
    const models::PeftProblem p = toy_tasks(n);
    double adapters = 0;
    for (const auto& t : p.tasks) adapters += 16 * models::adapter_params(p.backbone, t) / p.stages;
    const double copy = 2.0 * static_cast<double>(p.backbone.params()) / p.stages;
    const auto mux = models::evaluate_peft(p, policies::peft_policies().create("muxtune", {}, {"test", ""})->plan(p), cost);
    const auto per = models::evaluate_peft(p, policies::peft_policies().create("per-task", {}, {"test", ""})->plan(p), cost);
    CHECK(mux.weights_bytes == doctest::Approx(copy));
    CHECK(mux.adapter_bytes == doctest::Approx(adapters));
    CHECK(per.weights_bytes == doctest::Approx(n * copy));
  }
  // Rank r on all four linear layers of Llama-3-8B (4096 wide, 1024-wide K and V, MLP 14336):
  // r x ((4096 + 6144) + (4096 + 4096) + (4096 + 28672) + (14336 + 4096)) per layer, 32 layers.
  models::PeftTask t;
  t.rank = 16;
  CHECK(models::adapter_params(models::ModelCatalog::builtin().model("llama3-8b"), t) == 16.0 * (10240 + 8192 + 32768 + 18432) * 32);
}

// S-LoRA-style fusion pads every sequence to the fused longest: with these tasks' lengths (40 to
// 2000 tokens) it loses to per-task instances, which pad only within a task; MuxTune beats both.
TEST_CASE("peft: muxtune above slora and per-task in throughput and memory") {
  const models::RooflineCostModel cost(h100());
  for (const int n : {2, 3, 4}) {
    const models::PeftProblem p = toy_tasks(n);
    const auto run = [&](const char* name) { return models::evaluate_peft(p, policies::peft_policies().create(name, {}, {"test", ""})->plan(p), cost); };
    const auto per = run("per-task"), slora = run("slora"), mux = run("muxtune");
    CAPTURE(n);
    CHECK(mux.tokens_per_s > slora.tokens_per_s);
    CHECK(mux.tokens_per_s > per.tokens_per_s);
    CHECK(slora.tokens_per_s < per.tokens_per_s);
    CHECK(mux.memory_bytes < per.memory_bytes);
    // (slora's activations, padded to the fused longest, can outgrow the instances' weights.)
    CHECK(run("muxtune").step_s == mux.step_s);  // deterministic
  }
  // One pipeline of equal micro-batches follows 1F1B's (m + p - 1) t.
  models::PeftProblem one = toy_tasks(1);
  one.lengths = {{256, 256, 256, 256}};
  const auto plan = policies::peft_policies().create("per-task", {}, {"test", ""})->plan(one);
  const double t = 16 * models::peft_layer_s(one, plan.pipelines[0][0], models::PeftPadding::longest, 1, cost);
  CHECK(models::evaluate_peft(one, plan, cost).step_s == doctest::Approx((2 + 2 - 1) * t));
}

TEST_CASE("multiplexing policies: documented parameters, bad values rejected") {
  CHECK(policies::colocation_policies().names() == std::vector<std::string>{"mosaic", "one-per-gpu", "temporal"});
  CHECK(policies::peft_policies().names() == std::vector<std::string>{"muxtune", "per-task", "slora"});
  CHECK_THROWS_WITH_AS(policies::colocation_policies().create("mosaic", {{"quota_step", 1.5}}, {"test", ""}),
                       doctest::Contains("mosaic/quota_step: found 1.5, expected a quota in (0, 1]"), sim::InputError);
  CHECK_THROWS_WITH_AS(policies::peft_policies().create("muxtune", {{"chunk", std::int64_t{0}}}, {"test", ""}),
                       doctest::Contains("muxtune/chunk: found 0"), sim::InputError);
  CHECK_THROWS_WITH_AS(policies::peft_policies().create("mux-tune", {}, {"test", ""}), doctest::Contains("unknown multi-task PEFT policy \"mux-tune\""),
                       sim::InputError);
}
