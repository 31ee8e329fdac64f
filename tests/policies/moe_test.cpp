#include "policies/moe.hpp"
#include "models/training/llm.hpp"
#include "models/training/parallel.hpp"
#include "sim/error.hpp"
#include "approx.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace orrery;

namespace {

models::ParallelPlan plan_of(int dp, int global_batch) {
  models::ParallelPlan p;
  p.dp = dp;
  p.ep = dp;
  p.global_batch = global_batch;
  return p;
}

std::vector<policies::RoutingStep> route(const char* spec_name, const sim::GivenParams& params, const char* model, int steps) {
  const auto r = policies::moe_routings().create(spec_name, params, {"test", "--policies"});
  return r->steps(models::ModelCatalog::builtin().model(model), plan_of(8, 64), steps, "s.json");
}

double mean_of(const std::vector<policies::RoutingStep>& steps, double policies::RoutingStep::* field) {
  double sum = 0;
  for (const auto& s : steps) sum += s.*field;
  return sum / static_cast<double>(steps.size());
}

}  // namespace

TEST_CASE("top-k routing: every token to the model's top-k, no skew") {
  for (const auto& s : route("top-k", {}, "mixtral-8x7b", 5)) {
    CHECK(s.experts_per_token == 2);
    CHECK(s.rank_skew == 1);
  }
}

// With the lead of the top-1 gate probability logit-normal around its median, a threshold at
// the median sends half the tokens to one expert: 1.5 experts per token for top-2, on average.
TEST_CASE("adaptive gating: fewer experts per token, set by the threshold, varying per step") {
  const auto at = [](double threshold) {
    return mean_of(route("adaptive-gating", {{"threshold", threshold}, {"gap_median", 0.1}}, "mixtral-8x7b", 200), &policies::RoutingStep::experts_per_token);
  };
  CHECK(at(0.1) == orrery::testing::Approx(1.5).epsilon(0.03));
  CHECK(at(0.02) < at(0.1));
  CHECK(at(0.1) < at(0.4));
  CHECK(at(0.4) < 2);
  const auto steps = route("adaptive-gating", {}, "mixtral-8x7b", 50);
  for (const auto& s : steps) {
    CHECK(s.experts_per_token >= 1);
    CHECK(s.experts_per_token <= 2);
    CHECK(s.rank_skew >= 1);
  }
  // The steps differ, and the same seed gives the same steps.
  CHECK(std::any_of(steps.begin(), steps.end(), [&](const auto& s) { return s.experts_per_token != steps.front().experts_per_token; }));
  const auto again = route("adaptive-gating", {}, "mixtral-8x7b", 50);
  CHECK(again.back().experts_per_token == steps.back().experts_per_token);
}

// The curriculum puts alike sequences in one step: the busiest rank is nearer the mean, and
// the run's experts per token are the same sequences' (the same mean over the run).
TEST_CASE("adaptive gating with a curriculum: less skew between the ranks, the same experts over the run") {
  const auto plain = route("adaptive-gating", {}, "mixtral-8x7b", 100);
  const auto ordered = route("adaptive-gating", {{"curriculum", true}}, "mixtral-8x7b", 100);
  CHECK(mean_of(ordered, &policies::RoutingStep::rank_skew) < mean_of(plain, &policies::RoutingStep::rank_skew));
  CHECK(mean_of(ordered, &policies::RoutingStep::experts_per_token) ==
        orrery::testing::Approx(mean_of(plain, &policies::RoutingStep::experts_per_token)).epsilon(1e-9));
}

TEST_CASE("adaptive gating: bad parameters and models without a top-2 are one-line errors") {
  CHECK_THROWS_WITH_AS(policies::moe_routings().create("adaptive-gating", {{"threshold", 1.0}}, {"test", "--policies"}),
                       "<policy>:adaptive-gating/threshold: found 1, expected a gap in (0, 1)", sim::InputError);
  CHECK_THROWS_WITH_AS(route("adaptive-gating", {}, "llama3-8b", 3), doctest::Contains("s.json:/model: adaptive gating sends a token to 1 to top-k experts"),
                       sim::InputError);
  models::ParallelPlan p = plan_of(8, 64);
  p.experts_per_token = 3;
  CHECK_THROWS_WITH_AS(models::validate_plan(p, models::ModelCatalog::builtin().model("mixtral-8x7b"), 8, "s.json", "/plan"),
                       doctest::Contains("/plan/experts_per_token: found 3, expected 1 to mixtral-8x7b's top-k of 2"), sim::InputError);
}

// Lina's expert packing: the all-to-all among ep / pack GPUs, each with pack times the experts.
TEST_CASE("lina: priority on the links, and expert packing by a divisor of ep") {
  models::ParallelPlan p = plan_of(64, 64);
  p.ep = 16;
  p.overlap_ep_comm = true;
  policies::ep_comm_policies().create("lina", {{"pack", std::int64_t{2}}}, {"test", "--policies"})->apply(p);
  CHECK(p.ep_comm == "lina");
  CHECK(p.ep == 8);
  CHECK_FALSE(p.overlap_ep_comm);
  p.ep = 16;
  CHECK_THROWS_WITH_AS(policies::ep_comm_policies().create("lina", {{"pack", std::int64_t{3}}}, {"test", "--policies"})->apply(p),
                       "<policy>:lina/pack: found 3, expected a divisor of the plan's ep=16", sim::InputError);
}
