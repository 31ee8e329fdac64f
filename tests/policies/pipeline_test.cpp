#include "models/training/pipeline.hpp"
#include "policies/pipeline.hpp"
#include "sim/error.hpp"
#include "approx.hpp"

#include <doctest/doctest.h>

using namespace orrery;
using models::PipelineShape;

namespace {
models::PipelinePlan plan(const char* name, int p, int m, int v = 1) {
  const auto s = policies::pipeline_schedules().create(name, {}, {"test", "/schedule"});
  const PipelineShape shape{p, m, v};
  models::PipelinePlan out = s->plan(shape, "test", "/schedule");
  models::check_plan(out, shape);  // every op once, dependencies respected, no deadlock
  return out;
}
}  // namespace

// With uniform op costs, T = F + B + W per micro-batch and stage, the bubble of GPipe and 1F1B
// is (p-1) T, a fraction (p-1)/(m+p-1) of the step.
TEST_CASE("GPipe and 1F1B: bubble fraction (p-1)/(m+p-1)") {
  for (const char* name : {"gpipe", "1f1b"}) {
    for (const auto& [p, m] : {std::pair{4, 8}, {8, 32}, {2, 2}, {6, 5}}) {
      const double f = 1, b = 1.3, w = 0.7, t = f + b + w;
      const double makespan = models::plan_makespan(plan(name, p, m), {p, m, 1}, f, b, w);
      CAPTURE(name);
      CAPTURE(p);
      CAPTURE(m);
      CHECK(makespan == orrery::testing::Approx((m + p - 1) * t));
      CHECK((makespan - m * t) / makespan == orrery::testing::Approx(double(p - 1) / (m + p - 1)));
    }
  }
  // 1F1B holds at most p micro-batches' activations; GPipe all m.
  CHECK(models::peak_in_flight(plan("1f1b", 4, 16)) == 4);
  CHECK(models::peak_in_flight(plan("gpipe", 4, 16)) == 16);
}

TEST_CASE("interleaved 1F1B: about 1/v of 1F1B's bubble") {
  for (const auto& [p, m, v] : {std::tuple{4, 8, 2}, {4, 16, 4}, {8, 16, 2}, {8, 64, 3}}) {
    // A chunk is 1/v of the stage's layers: each op costs 1/v.
    const double t = 3.0;
    const double makespan = models::plan_makespan(plan("interleaved-1f1b", p, m, v), {p, m, v}, 1.0 / v, 1.0 / v, 1.0 / v);
    const double bubble = makespan - m * t;
    CAPTURE(p);
    CAPTURE(m);
    CAPTURE(v);
    CHECK(bubble == orrery::testing::Approx((p - 1) * t / v));
  }
  CHECK_THROWS_WITH_AS(plan("interleaved-1f1b", 4, 6, 2), doctest::Contains("needs the micro-batches (6) to be a multiple of the pipeline stages (4)"),
                       sim::InputError);
  CHECK_THROWS_WITH_AS(plan("1f1b", 4, 8, 2), doctest::Contains("1f1b runs one model chunk per stage"), sim::InputError);
}

TEST_CASE("ZB-H1: bubble (p-1)(F+B-W), activation memory as 1F1B") {
  for (const auto& [p, m] : {std::pair{4, 8}, {8, 16}, {8, 8}, {6, 12}}) {
    for (const auto& [f, b, w] : {std::tuple{1.0, 1.0, 1.0}, {1.0, 1.5, 0.7}, {1.0, 1.2, 1.0}}) {
      const double makespan = models::plan_makespan(plan("zb-h1", p, m), {p, m, 1}, f, b, w);
      CAPTURE(p);
      CAPTURE(m);
      CHECK(makespan - m * (f + b + w) == orrery::testing::Approx((p - 1) * (f + b - w)));
    }
  }
  CHECK(models::peak_in_flight(plan("zb-h1", 4, 16)) == 4);
  // With T_F = T_B = T_W the bubble rate is (p-1)/3m of 1F1B's... relative to the step: 1/3 of 1F1B's bubble.
  const double zb = models::plan_makespan(plan("zb-h1", 8, 32), {8, 32, 1}, 1, 1, 1) - 32 * 3;
  const double one = models::plan_makespan(plan("1f1b", 8, 32), {8, 32, 1}, 1, 1, 1) - 32 * 3;
  CHECK(zb == orrery::testing::Approx(one / 3));
}

TEST_CASE("unknown schedules are named with the valid ones") {
  CHECK_THROWS_WITH_AS(policies::pipeline_schedules().create("1f1f", {}, {"s.json", "/plan/schedule"}),
                       doctest::Contains("s.json:/plan/schedule"), sim::InputError);
}
