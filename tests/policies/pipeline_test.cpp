#include "models/training/parallel.hpp"
#include "models/training/pipeline.hpp"
#include "policies/pipeline.hpp"
#include "sim/error.hpp"
#include "approx.hpp"

#include <doctest/doctest.h>

using namespace orrery;
using models::PipelineShape;

namespace {
PipelineShape shape_of(const char* name, int p, int m, int v) {
  const auto s = policies::pipeline_schedules().create(name, {}, {"test", "/schedule"});
  return {p, m, v, s->placement()};
}
models::PipelinePlan plan(const char* name, const PipelineShape& shape) {
  const auto s = policies::pipeline_schedules().create(name, {}, {"test", "/schedule"});
  models::PipelinePlan out = s->plan(shape, "test", "/schedule");
  models::check_plan(out, shape);  // every op once, dependencies respected, no deadlock
  return out;
}
models::PipelinePlan plan(const char* name, int p, int m, int v = 1) { return plan(name, shape_of(name, p, m, v)); }
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

namespace {
struct Run {
  double makespan, idle;
  int peak;
};
Run run(const char* name, int p, int m, int v, double f, double b, double w) {
  PipelineShape shape = shape_of(name, p, m, v);
  shape.costs = {f, b, w};
  const models::PipelinePlan order = plan(name, shape);
  std::vector<models::OpSpan> spans;
  const double makespan = models::plan_makespan(order, shape, [&](const models::PipeOp& op, int) {
    switch (op.kind) {
      case models::PipeOpKind::forward: return f;
      case models::PipeOpKind::backward: return b + w;
      case models::PipeOpKind::backward_input: return b;
      case models::PipeOpKind::backward_weight: return w;
    }
    return 0.0;
  }, &spans);
  return {makespan, models::max_stage_idle(spans, p), models::peak_in_flight(order)};
}
}  // namespace

// Uniform costs, per stage F = B = W = 1 (a chunk of a two-chunk stage costs 1/2 each).
TEST_CASE("ZB-H2: a parallelogram, no idle inside a stage, twice 1F1B's activations") {
  for (const auto& [p, m] : {std::pair{4, 8}, {4, 16}, {8, 16}, {8, 32}, {6, 12}}) {
    CAPTURE(p);
    CAPTURE(m);
    const Run r = run("zb-h2", p, m, 1, 1, 1, 1);
    CHECK(r.idle == orrery::testing::Approx(0));
    CHECK(r.makespan == orrery::testing::Approx((p - 1) * 1.0 + m * 3.0));  // stage p-1 starts p-1 forwards late
    CHECK(r.peak == 2 * p - 1);
    // Below ZB-H1's (p-1)(F+B-W) with unequal costs too.
    const Run h1 = run("zb-h1", p, m, 1, 1, 1.5, 0.7), h2 = run("zb-h2", p, m, 1, 1, 1.5, 0.7);
    CHECK(h2.idle < h1.idle);
  }
}

TEST_CASE("ZB-V: V placement, no idle inside a stage, 1F1B's activation memory") {
  for (const auto& [p, m] : {std::pair{4, 8}, {4, 16}, {8, 16}, {8, 32}}) {
    CAPTURE(p);
    CAPTURE(m);
    const Run r = run("zb-v", p, m, 2, 0.5, 0.5, 0.5);
    CHECK(r.idle == orrery::testing::Approx(0));
    CHECK(r.makespan == orrery::testing::Approx((p - 1) * 0.5 + m * 3.0));  // only the first chunk's ramp
    CHECK(r.peak == 2 * p);  // chunks of half a stage: p micro-batches' worth, as 1F1B
    // Its bubble against 1F1B's (p-1)(F+B+W) and interleaved 1F1B's (p-1)(F+B+W)/2.
    const double one = run("1f1b", p, m, 1, 1, 1, 1).makespan - 3.0 * m, il = run("interleaved-1f1b", p, m, 2, 0.5, 0.5, 0.5).makespan - 3.0 * m;
    CHECK(r.makespan - 3.0 * m < il);
    CHECK(il < one);
  }
  // The V: virtual stages 0 and 2p-1 on stage 0, p-1 and p on the last.
  const PipelineShape v(4, 8, 2, models::PipelinePlacement::vee);
  CHECK(v.virtual_stage(0, 1) == 7);
  CHECK(v.virtual_stage(3, 0) == 3);
  CHECK(v.virtual_stage(3, 1) == 4);
  CHECK(v.slot(7, 0).stage == 0);
}

TEST_CASE("STP: braided pairs, no idle with uniform costs, 3p chunk activations") {
  for (const auto& [p, m] : {std::pair{4, 8}, {4, 16}, {8, 16}, {8, 32}}) {
    CAPTURE(p);
    CAPTURE(m);
    const Run r = run("stp", p, m, 2, 0.5, 0.5, 0.5);
    CHECK(r.idle == orrery::testing::Approx(0));
    CHECK(r.makespan == orrery::testing::Approx((p - 1) * 0.5 + m * 3.0));
    CHECK(r.peak == 3 * p);
    // Every braided forward is followed by its partner backward.
    const models::PipelinePlan order = plan("stp", shape_of("stp", p, m, 2));
    int paired = 0;
    for (const auto& ops : order) {
      for (std::size_t i = 0; i < ops.size(); ++i) {
        if (ops[i].paired && ops[i].kind == models::PipeOpKind::forward) {
          REQUIRE(i + 1 < ops.size());
          CHECK(ops[i + 1].paired);
          CHECK(ops[i + 1].kind == models::PipeOpKind::backward_input);
          ++paired;
        }
      }
    }
    CHECK(paired > p * m / 2);  // the steady state is braided
  }
}

TEST_CASE("DualPipe: bidirectional, bubble (p/2-1)(F+B-W) with uniform costs, p+1 activations, about half of ZB1P's") {
  for (const auto& [p, m] : {std::pair{4, 8}, {4, 16}, {8, 16}, {8, 32}, {6, 12}}) {
    CAPTURE(p);
    CAPTURE(m);
    const Run r = run("dualpipe", p, m, 2, 1, 1, 1);
    CHECK(r.idle == orrery::testing::Approx(p / 2 - 1));
    CHECK(r.makespan == orrery::testing::Approx(m * 3.0 + (p / 2 - 1)));
    CHECK(r.peak == p + 1);
    // ZB1P (ZB-H1): (p-1)(F+B-W); DualPipe's is at most half of it where B is near F, and below
    // it where the input gradients cost twice the forward.
    for (const auto& [f, b, w] : {std::tuple{1.0, 1.0, 1.0}, {1.0, 1.5, 0.7}, {1.0, 2.0, 1.0}}) {
      const Run zb = run("zb-h1", p, m, 1, f, b, w), dp = run("dualpipe", p, m, 2, f, b, w);
      CHECK(dp.idle <= (b < 2 ? zb.idle / 2 : zb.idle * 0.6) + 1e-9);
    }
  }
  // Each micro-batch runs one direction: the first half from stage 0, the second from the last.
  const PipelineShape d(4, 8, 2, models::PipelinePlacement::bidirectional);
  CHECK(d.slot(0, 0).stage == 0);
  CHECK(d.slot(0, 7).stage == 3);
  CHECK(d.virtual_stages() == 4);
}

TEST_CASE("new schedules: shapes they cannot run are one-line input errors") {
  const auto create = [](const char* name) { return policies::pipeline_schedules().create(name, {}, {"s.json", "/plan/schedule"}); };
  CHECK_THROWS_WITH_AS(create("zb-v")->plan(PipelineShape(4, 8, 3, models::PipelinePlacement::vee), "s.json", "/plan/schedule"),
                       "s.json:/plan/schedule: zb-v runs an even number of model chunks per stage in a V, found 3 (set vp to 2)", sim::InputError);
  CHECK_THROWS_WITH_AS(create("dualpipe")->plan(PipelineShape(3, 12, 2, models::PipelinePlacement::bidirectional), "s.json", "/plan/schedule"),
                       "s.json:/plan/schedule: dualpipe needs an even pipeline size, found pp=3", sim::InputError);
  CHECK_THROWS_WITH_AS(create("dualpipe")->plan(PipelineShape(4, 6, 2, models::PipelinePlacement::bidirectional), "s.json", "/plan/schedule"),
                       doctest::Contains("at least twice the pipeline size (8), found 6"), sim::InputError);
  CHECK_THROWS_WITH_AS(create("stp")->plan(PipelineShape(4, 8, 4, models::PipelinePlacement::vee), "s.json", "/plan/schedule"),
                       doctest::Contains("stp braids two model chunks per stage"), sim::InputError);
  CHECK_THROWS_WITH_AS(create("zb-h2")->plan(PipelineShape(4, 8, 2), "s.json", "/plan/schedule"), doctest::Contains("zb-h2 runs one model chunk"),
                       sim::InputError);
}

TEST_CASE("every registered schedule reports the placement the plan helpers give its name") {
  for (const std::string& name : policies::pipeline_schedules().names()) {
    models::ParallelPlan plan;
    plan.schedule = name;
    CHECK(policies::pipeline_schedules().create(name, {}, {"t", ""})->placement() == models::pipeline_placement(plan));
  }
}

// The heuristic orders every shape on any cost mix (check_plan: every op once, no deadlock),
// including shapes with fewer micro-batches than stages and ops of no cost (a frozen W).
TEST_CASE("ZB-H2, ZB-V and STP order every shape and cost mix") {
  for (const char* name : {"zb-h2", "zb-v", "stp"}) {
    const int v = std::string(name) == "zb-h2" ? 1 : 2;
    for (int p = 2; p <= 8; ++p) {
      for (int m = 1; m <= 3 * p; ++m) {
        for (const auto& [f, b, w] : {std::tuple{1.0, 1.0, 1.0}, {1.0, 1.5, 0.7}, {1.0, 2.0, 0.0}, {1.0, 0.3, 3.0}, {0.0, 0.0, 0.0}, {3.0, 1.0, 1.0}}) {
          CAPTURE(name);
          CAPTURE(p);
          CAPTURE(m);
          PipelineShape shape = shape_of(name, p, m, v);
          shape.costs = {f, b, w};
          const models::PipelinePlan order = plan(name, shape);
          if (v == 1) CHECK(models::peak_in_flight(order) <= 2 * p - 1);
        }
      }
    }
  }
}

TEST_CASE("the chunks per stage each schedule runs") {
  const auto runs = [](const char* name, int vp) { return policies::pipeline_schedules().create(name, {}, {"t", ""})->runs_chunks(vp); };
  for (const char* one : {"gpipe", "1f1b", "zb-h1", "zb-h2", "dualpipe"}) {
    CHECK(runs(one, 1));
    CHECK_FALSE(runs(one, 2));
  }
  CHECK(runs("interleaved-1f1b", 3));
  CHECK_FALSE(runs("interleaved-1f1b", 1));
  CHECK(runs("zb-v", 4));
  CHECK_FALSE(runs("zb-v", 3));
  CHECK(runs("stp", 2));
  CHECK_FALSE(runs("stp", 4));
}
