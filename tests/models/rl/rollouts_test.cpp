#include "models/rl/rollouts.hpp"
#include "sim/error.hpp"
#include "approx.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

using namespace orrery;
using models::DocLengthModel;
using models::RolloutGenerator;
using models::RolloutLengthModel;

namespace {

RolloutLengthModel model(DocLengthModel output, double share = 0.5, double growth = 1) {
  RolloutLengthModel m{output, DocLengthModel::lognormal(300, 2'000, 8'192), share, growth, {}};
  return m;
}

std::vector<std::int64_t> outputs(const models::RolloutBatch& b) {
  std::vector<std::int64_t> out;
  for (const auto& g : b.groups) out.insert(out.end(), g.outputs.begin(), g.outputs.end());
  return out;
}

double quantile(std::vector<std::int64_t> v, double q) {
  std::sort(v.begin(), v.end());
  return static_cast<double>(v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))]);
}

// One-way ANOVA on ln L: the share of its variance that lies between prompts (the group means'
// variance less the within-group noise they carry, over the total).
double between_prompt_share(const models::RolloutBatch& b) {
  double n = 0, sum = 0, sum2 = 0, within = 0, means2 = 0, means = 0;
  const double size = static_cast<double>(b.groups[0].outputs.size());
  for (const auto& g : b.groups) {
    double s = 0, s2 = 0;
    for (const auto v : g.outputs) {
      const double x = std::log(static_cast<double>(v));
      s += x;
      s2 += x * x;
    }
    within += (s2 - s * s / size) / (size - 1);
    means += s / size;
    means2 += (s / size) * (s / size);
    n += size;
    sum += s;
    sum2 += s2;
  }
  const double groups = static_cast<double>(b.groups.size());
  within /= groups;
  const double between = means2 / groups - (means / groups) * (means / groups) - within / size;
  return between / (sum2 / n - (sum / n) * (sum / n));
}

}  // namespace

TEST_CASE("rollout output lengths hit the output model's median and p99") {
  // 25,000 prompts x 8 samples. Samples of a prompt share half their log-variance, so the
  // effective sample count is 200,000 / (1 + 7 x 0.5) = 44,000: the median's standard error is
  // 1.25 sigma / sqrt(44,000) = 0.6% x sigma (sigma = 1.41 here, so 0.8%) and the p99's is
  // sqrt(0.0099) / phi(2.33) / sqrt(44,000) x sigma = 2.5%. Tolerances are about 4 of those.
  const RolloutGenerator gen(model(DocLengthModel::lognormal(600, 16'000, 32'768)), 7);
  const auto lens = outputs(gen.batch(0, 1, 25'000, 8));
  const double p50 = quantile(lens, 0.5), p99 = quantile(lens, 0.99);
  MESSAGE("lognormal: p50 ", p50, ", p99/p50 ", p99 / p50);
  CHECK(p50 == orrery::testing::Approx(600).epsilon(0.04));
  CHECK(p99 / p50 == orrery::testing::Approx(16'000.0 / 600).epsilon(0.12));
  CHECK(*std::max_element(lens.begin(), lens.end()) <= 32'768);

  // The lognormal body with a Pareto tail goes through a Gaussian copula (a tabled quantile):
  // the same targets hold.
  const RolloutGenerator pareto(model(DocLengthModel::lognormal_pareto(600, 16'000, 32'768)), 7);
  const auto tail = outputs(pareto.batch(0, 1, 25'000, 8));
  MESSAGE("lognormal_pareto: p50 ", quantile(tail, 0.5), ", p99/p50 ", quantile(tail, 0.99) / quantile(tail, 0.5));
  CHECK(quantile(tail, 0.5) == orrery::testing::Approx(600).epsilon(0.04));
  CHECK(quantile(tail, 0.99) / quantile(tail, 0.5) == orrery::testing::Approx(16'000.0 / 600).epsilon(0.12));
}

TEST_CASE("rollout batches are a function of the seed and the iteration only") {
  const RolloutGenerator a(model(DocLengthModel::lognormal(600, 16'000, 32'768)), 11), b(model(DocLengthModel::lognormal(600, 16'000, 32'768)), 11);
  const auto third = a.batch(3, 10, 64, 8);
  // Another generator with the same seed, asked in another order, gives the same batch.
  (void)b.batch(5, 10, 64, 8);
  CHECK(outputs(b.batch(3, 10, 64, 8)) == outputs(third));
  CHECK(b.batch(3, 10, 64, 8).groups[5].prompt_tokens == third.groups[5].prompt_tokens);
  CHECK(third.groups[5].prompt == 3 * 64 + 5);
  CHECK(outputs(RolloutGenerator(a.model(), 12).batch(3, 10, 64, 8)) != outputs(third));
  CHECK(outputs(a.batch(4, 10, 64, 8)) != outputs(third));
}

TEST_CASE("rollout lengths grow by the growth factor and never pass the maximum") {
  // Far from the maximum, the median grows linearly to `growth` times the first's. 4,096 prompts
  // x 8 are 7,300 effective samples (design effect 4.5): each median has a standard error of
  // 1.25 x 1.41 / sqrt(7,300) = 2%, a ratio of two 3%; the tolerance is 10%.
  const RolloutGenerator free(model(DocLengthModel::lognormal(530, 14'000, 1 << 22), 0.5, 6000.0 / 530), 3);
  const auto median_at = [&](int k) { return quantile(outputs(free.batch(k, 50, 4'096, 8)), 0.5); };
  const double first = median_at(0), mid = median_at(25), last = median_at(49);
  MESSAGE("growth: median ", first, " -> ", mid, " -> ", last);
  CHECK(last / first == orrery::testing::Approx(6000.0 / 530).epsilon(0.1));
  CHECK(mid / first == orrery::testing::Approx(1 + (6000.0 / 530 - 1) * 25 / 49).epsilon(0.1));

  // simpleRL-Zoo's Mistral-7B run: means 530 -> 6000 tokens under max_response_length 8192. At the
  // end most prompts' medians are near the maximum; lengths are redrawn below it, never clipped
  // onto it, so no spike forms at 8192.
  const RolloutGenerator capped(model(DocLengthModel::lognormal(530, 4'000, 8'192), 0.5, 6000.0 / 530), 3);
  const auto end = outputs(capped.batch(49, 50, 512, 8));
  CHECK(*std::max_element(end.begin(), end.end()) <= 8'192);
  CHECK(std::count(end.begin(), end.end(), 8'192) < 10);
  CHECK(quantile(end, 0.5) > 3'000);
}

TEST_CASE("rollout samples of one prompt are correlated by the prompt share") {
  // The latent log-length is sqrt(s) z_prompt + sqrt(1 - s) z_sample, so the measured share of
  // ln L's variance between prompts is s (2,000 groups of 8: its standard error is about 0.02).
  for (const double share : {0.0, 0.3, 0.7}) {
    const RolloutGenerator gen(model(DocLengthModel::lognormal(600, 16'000, 1 << 22), share), 5);
    const double measured = between_prompt_share(gen.batch(0, 1, 2'000, 8));
    MESSAGE("prompt share ", share, ": measured ", measured);
    CHECK(std::abs(measured - share) < 0.06);
  }
  // All the variance per prompt: every sample of a group has the same length.
  const RolloutGenerator same(model(DocLengthModel::lognormal(600, 16'000, 32'768), 1.0), 5);
  for (const auto& g : same.batch(0, 1, 100, 8).groups) CHECK(std::count(g.outputs.begin(), g.outputs.end(), g.outputs[0]) == 8);
}

TEST_CASE("rollout lengths bootstrapped from real data keep the data's shape") {
  // A long-tailed source: median 129, p99/p50 about 40 (built here so the test needs no files).
  models::DocSampler source(DocLengthModel::lognormal_pareto(129, 5'000, 20'000), 1);
  std::vector<std::int64_t> real;
  for (int i = 0; i < 20'000; ++i) real.push_back(source.next());
  const double shape = quantile(real, 0.99) / quantile(real, 0.5);

  // Scaled to median 1,000 with room below the maximum, the bootstrap's p99/p50 is the source's.
  // 200,000 draws: the p99 in a Pareto tail of exponent alpha = 0.59 has a relative standard error
  // of sqrt(0.0099 / 200,000) / (0.01 alpha) = 3.8%; the tolerance is about 2.5 of those.
  const models::EmpiricalLengths boot(real, 1'000, 1 << 22);
  std::mt19937_64 rng(9);
  std::vector<std::int64_t> drawn;
  for (int i = 0; i < 200'000; ++i) drawn.push_back(boot.draw(rng));
  MESSAGE("bootstrap: source p99/p50 ", shape, ", drawn p50 ", quantile(drawn, 0.5), ", p99/p50 ", quantile(drawn, 0.99) / quantile(drawn, 0.5));
  CHECK(quantile(drawn, 0.5) == orrery::testing::Approx(1'000).epsilon(0.03));
  CHECK(quantile(drawn, 0.99) / quantile(drawn, 0.5) == orrery::testing::Approx(shape).epsilon(0.1));

  // In the generator the empirical quantile replaces the parametric one: the output model gives
  // the median and the maximum, the data the shape. Independent samples (share 0; the share does
  // not change the marginal) give the error budget of the bootstrap above.
  RolloutLengthModel m = model(DocLengthModel::lognormal(1'000, 16'000, 1 << 22), 0.0);
  m.empirical = real;
  const auto lens = outputs(RolloutGenerator(m, 4).batch(0, 1, 25'000, 8));
  MESSAGE("empirical generator: p50 ", quantile(lens, 0.5), ", p99/p50 ", quantile(lens, 0.99) / quantile(lens, 0.5));
  CHECK(quantile(lens, 0.5) == orrery::testing::Approx(1'000).epsilon(0.04));
  CHECK(quantile(lens, 0.99) / quantile(lens, 0.5) == orrery::testing::Approx(shape).epsilon(0.12));
  CHECK(RolloutGenerator(m, 4).model().describe().find("20000 empirical lengths scaled to median 1000") == 8);
}

TEST_CASE("rollout models reject bad parameters") {
  const auto error = [](double share, double growth) {
    try {
      RolloutGenerator(model(DocLengthModel::lognormal(600, 16'000, 32'768), share, growth), 1);
    } catch (const sim::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error(1.5, 1) == "<workload>: found prompt share 1.5, expected 0 to 1");
  CHECK(error(0.5, 0) == "<workload>: found length growth 0, expected a positive factor");
  CHECK_THROWS_AS(models::EmpiricalLengths({}, 100, 1000), sim::InputError);
}
