#include "models/hardware/cost.hpp"
#include "models/hardware/step_params.hpp"
#include "models/training/estimate.hpp"
#include "models/training/llm.hpp"
#include "models/training/step.hpp"
#include "policies/pipeline.hpp"
#include "sim/error.hpp"

#include "input_error.hpp"
#include "approx.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

using namespace orrery;
using namespace orrery::models;

namespace {

StepScenario scenario(const char* model, int tp, int pp, int dp, int m_per_dp, const char* schedule = "1f1b", int vp = 1) {
  StepScenario sc;
  sc.model = ModelCatalog::builtin().model(model);
  sc.gpu = HardwareCatalog::builtin().gpu("H100");
  sc.plan.tp = tp;
  sc.plan.pp = pp;
  sc.plan.vp = vp;
  sc.plan.dp = dp;
  sc.plan.global_batch = m_per_dp * dp;
  sc.plan.seq_len = 4096;
  sc.plan.schedule = schedule;
  const int gpus = tp * pp * dp;
  sc.topology = gpus < 8 ? fmt::format("dgx-h100:nodes=1,gpus_per_node={}", gpus) : fmt::format("dgx-h100:nodes={}", gpus / 8);
  return sc;
}

struct Pair {
  StepResult emulated;
  StepEstimate estimated;
};

Pair both(const StepScenario& sc) {
  const auto schedule = policies::pipeline_schedules().create(sc.plan.schedule, {}, {"test", "/plan/schedule"});
  const RooflineCostModel cost(sc.gpu, training_roofline_params(sc.gpu, step_context(sc.plan)));
  return {run_step(sc, cost, *schedule), estimate_step(sc, cost, *schedule)};
}

}  // namespace

TEST_CASE("estimate: closed form within 10% of the emulator on small uncontended scenarios") {
  // The closed form uses the emulator's op costs; it leaves out contention between pipeline
  // sends and gradient buckets and the exact shape of the schedule, so small differences remain.
  for (const StepScenario& sc : {scenario("llama3-8b", 1, 1, 8, 4), scenario("llama3-8b", 2, 2, 2, 8), scenario("llama3-8b", 2, 4, 1, 16),
                                 scenario("llama3-8b", 1, 4, 2, 8, "interleaved-1f1b", 2), scenario("llama3-8b", 1, 4, 2, 8, "zb-h1"),
                                 scenario("llama3-8b", 1, 4, 2, 8, "gpipe")}) {
    const Pair r = both(sc);
    const double emulated = r.emulated.step_time.to_seconds();
    CAPTURE(sc.plan.schedule);
    CAPTURE(sc.plan.tp);
    CAPTURE(sc.plan.pp);
    CHECK(r.estimated.step_time_s == orrery::testing::Approx(emulated).epsilon(0.10));
    CHECK(r.estimated.micro_batches == r.emulated.micro_batches);
  }
}

TEST_CASE("estimate: the 1F1B bubble is (p-1)/m of the ideal time when the stages are equal") {
  // A model whose embedding and output layer are negligible (vocabulary 256), one server, no
  // data parallelism: every stage runs the same layers, so the bubble is (p - 1) t of the
  // ideal m t (Narayanan et al. 2021, sec. 2.2.1), and the emulator's step is (m + p - 1) t
  // plus the pipeline sends.
  StepScenario sc = scenario("llama3-8b", 1, 4, 1, 8);
  sc.model.vocab = 256;
  sc.model.layers = 16;
  const Pair r = both(sc);
  const int p = 4, m = 8;
  CHECK(r.estimated.bubble_s / r.estimated.pipeline_compute_s == orrery::testing::Approx(static_cast<double>(p - 1) / m).epsilon(0.01));
  const double t = r.estimated.pipeline_compute_s / m;
  // The pipeline sends add a little (about 1% here); the tail after the last pipeline op (the
  // optimizer step) is not part of the pipeline.
  const double pipeline = r.emulated.step_time.to_seconds() - r.emulated.tail_s;
  CHECK(pipeline == orrery::testing::Approx((m + p - 1) * t).epsilon(0.03));
  CHECK(r.emulated.step_time.to_seconds() > (m + p - 1) * t);
  CHECK(r.estimated.step_time_s == orrery::testing::Approx(r.emulated.step_time.to_seconds()).epsilon(0.01));
}

TEST_CASE("estimate: memory and OOM are the emulator's") {
  // Llama 3 70B on one server without ZeRO does not fit in 80 GB; 8B with ZeRO-1 does.
  StepScenario big = scenario("llama3-70b", 8, 1, 1, 4);
  big.plan.zero = 0;
  StepScenario fits = scenario("llama3-8b", 2, 2, 2, 8);
  for (const StepScenario& sc : {big, fits}) {
    const Pair r = both(sc);
    CHECK(r.estimated.oom == r.emulated.oom);
    CHECK(r.estimated.memory.total() == r.emulated.memory.total());
  }
  CHECK(both(big).estimated.oom);
  CHECK_FALSE(both(fits).estimated.oom);
}

TEST_CASE("estimate: a plan that does not fit throws run_step's InputError") {
  StepScenario sc = scenario("llama3-8b", 2, 2, 2, 8);
  sc.plan.tp = 3;
  sc.plan.dp = 1;
  const auto schedule = policies::pipeline_schedules().create("1f1b", {}, {"test", "/plan/schedule"});
  const RooflineCostModel cost(sc.gpu);
  const std::string emulated = testing::error_of([&] { run_step(sc, cost, *schedule); });
  CHECK(emulated != "no error");
  CHECK(testing::error_of([&] { estimate_step(sc, cost, *schedule); }) == emulated);
}

// ZeRO-2 reduce-scatters every micro-batch's gradients and ZeRO-3 also gathers every layer
// before each forward and backward (run_step); the closed form paces each op by its layers'
// collectives (ZeRO-3) and bounds the step by the data-parallel stream's busy time plus the
// edges it cannot hide, so it follows the emulator whether the collectives hide or not.
TEST_CASE("estimate: ZeRO-2 and -3 within 10% of the emulator, hidden or communication-bound") {
  const auto with = [](StepScenario sc, int zero, const char* nic, std::int64_t seq) {
    sc.plan.zero = zero;
    sc.plan.seq_len = seq;
    if (nic != nullptr) sc.topology += fmt::format(",nic={}", nic);
    return sc;
  };
  std::vector<double> slow;  // pure DP on 100 Gb/s NICs, ZeRO 1, 2, 3
  for (int zero = 1; zero <= 3; ++zero) {
    for (const StepScenario& sc : {with(scenario("llama3-8b", 1, 1, 8, 4), zero, nullptr, 4096),
                                   with(scenario("llama3-8b", 1, 1, 32, 8), zero, "100Gb/s", 2048),
                                   with(scenario("llama3-8b", 1, 2, 16, 8), zero, "200Gb/s", 2048),
                                   with(scenario("llama3-8b", 1, 2, 16, 8, "zb-h1"), zero, "200Gb/s", 4096)}) {
      const Pair r = both(sc);
      const double emulated = r.emulated.step_time.to_seconds();
      CAPTURE(zero);
      CAPTURE(sc.plan.schedule);
      CAPTURE(sc.topology);
      CHECK(r.estimated.step_time_s == orrery::testing::Approx(emulated).epsilon(0.10));
      if (sc.plan.pp == 1 && sc.plan.dp == 32) slow.push_back(r.estimated.step_time_s);
    }
  }
  // The plan search sees the cost: on the slow network the estimate orders ZeRO 3 > 2 > 1.
  REQUIRE(slow.size() == 3);
  CHECK(slow[1] > slow[0] * 1.2);
  CHECK(slow[2] > slow[1] * 1.2);
}

// The data-parallel collectives' unhidden share (overlap.dp) slows the compute in the closed form
// as in the emulator: ZeRO-1's gathers and buckets (the buckets through a pipeline's drain),
// ZeRO-2's per-micro-batch buckets and ZeRO-3's per-layer pacing; none at full overlap.
TEST_CASE("estimate: overlap.dp's slowdown within 3% of the emulator's") {
  const auto run = [](const StepScenario& sc, double overlap_dp) {
    const auto schedule = policies::pipeline_schedules().create(sc.plan.schedule, {}, {"test", "/plan/schedule"});
    RooflineParams p = training_roofline_params(sc.gpu, step_context(sc.plan));
    p.overlap_dp_efficiency = overlap_dp;
    const RooflineCostModel cost(sc.gpu, p);
    return Pair{run_step(sc, cost, *schedule), estimate_step(sc, cost, *schedule)};
  };
  for (int zero = 1; zero <= 3; ++zero) {
    for (StepScenario sc :
         {scenario("llama3-8b", 1, 1, 32, 4), scenario("llama3-8b", 1, 4, 8, 8), scenario("llama3-8b", 1, 4, 8, 8, "interleaved-1f1b", 2)}) {
      sc.plan.zero = zero;
      CAPTURE(zero);
      CAPTURE(sc.plan.pp);
      CAPTURE(sc.plan.schedule);
      const Pair hidden = run(sc, 1), slowed = run(sc, 0.5);
      CHECK(hidden.estimated.dp_interference_s == 0);
      const double emulated = slowed.emulated.step_time.to_seconds() - hidden.emulated.step_time.to_seconds();
      const double estimated = slowed.estimated.step_time_s - hidden.estimated.step_time_s;
      CHECK(emulated > 0);
      CHECK(estimated > 0);
      CHECK(slowed.estimated.step_time_s == orrery::testing::Approx(slowed.emulated.step_time.to_seconds()).epsilon(0.03));
    }
  }
}
