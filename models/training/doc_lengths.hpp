// Document-length workloads: seeded generators fitted to a median, a p99 and a maximum, and
// global batches of documents that fill a step's token budget.
//   DocLengthModel m = DocLengthModel::lognormal_pareto(644, 71'000, 1'000'000);
//   DocSampler s(m, /*seed=*/7);
//   std::vector<std::int64_t> batch = s.batch(/*tokens=*/32 * 1'048'576);
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace orrery::models {

struct DocLengthModel {
  enum class Kind { lognormal, lognormal_pareto } kind = Kind::lognormal;
  // Lognormal body: ln(length) ~ N(mu, sigma^2).
  double mu = 0, sigma = 1;
  // Pareto tail (lognormal_pareto): with probability tail_weight a length is
  // x_min * U^(-1/alpha), U uniform in (0, 1].
  double tail_weight = 0, x_min = 0, alpha = 1;
  std::int64_t max_length = 0;  // lengths are drawn again until <= max (a truncated distribution)
  std::int64_t min_length = 1;

  // ln L ~ N(ln median, sigma) with sigma from the p99; truncated at `max`.
  static DocLengthModel lognormal(double median, double p99, std::int64_t max);
  // A lognormal body (log-sd `body_sigma`) and a Pareto tail of weight `tail_weight` starting at
  // the body's 95th percentile; the body's median and the tail's exponent are solved so that the
  // truncated mixture's median and p99 are the targets.
  static DocLengthModel lognormal_pareto(double median, double p99, std::int64_t max, double tail_weight = 0.05,
                                         double body_sigma = 1.0);
  // The distribution's CDF at x (with the truncation), for tests and fitting.
  double cdf(double x) const;
  double quantile(double q) const;  // by bisection on cdf
  std::string describe() const;
};

// Draws lengths from a model; the same seed gives the same lengths on every platform (our own
// normal and uniform transforms over std::mt19937_64's fixed sequence).
class DocSampler {
 public:
  DocSampler(DocLengthModel model, std::uint64_t seed) : model_(model), rng_(seed) {}
  std::int64_t next();
  // Documents summing to exactly `tokens` (the last one cut to fit): one global batch.
  std::vector<std::int64_t> batch(std::int64_t tokens);

 private:
  double uniform();  // in (0, 1]
  double normal();
  DocLengthModel model_;
  std::mt19937_64 rng_;
  bool have_spare_ = false;
  double spare_ = 0;
};

double standard_normal_cdf(double x);
double standard_normal_quantile(double p);

}  // namespace orrery::models
