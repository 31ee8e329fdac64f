#include "models/training/doc_lengths.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numbers>

namespace orrery::models {

double standard_normal_cdf(double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); }

double standard_normal_quantile(double p) {
  ORRERY_CHECK(p > 0 && p < 1, "normal quantile of {}", p);
  double lo = -40, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (standard_normal_cdf(mid) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

namespace {

// Untruncated CDF of the mixture.
double raw_cdf(const DocLengthModel& m, double x) {
  if (x <= 0) return 0;
  const double body = standard_normal_cdf((std::log(x) - m.mu) / m.sigma);
  if (m.kind == DocLengthModel::Kind::lognormal) return body;
  const double tail = x < m.x_min ? 0.0 : 1.0 - std::pow(m.x_min / x, m.alpha);
  return (1 - m.tail_weight) * body + m.tail_weight * tail;
}

}  // namespace

double DocLengthModel::cdf(double x) const {
  const double top = raw_cdf(*this, static_cast<double>(max_length));
  return std::min(1.0, raw_cdf(*this, x) / top);
}

double DocLengthModel::quantile(double q) const {
  double lo = 0, hi = static_cast<double>(max_length);
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (cdf(mid) < q ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

DocLengthModel DocLengthModel::lognormal(double median, double p99, std::int64_t max) {
  ORRERY_CHECK(median > 0 && p99 > median && static_cast<double>(max) > p99, "lognormal needs 0 < median < p99 < max");
  DocLengthModel m;
  m.kind = Kind::lognormal;
  m.max_length = max;
  m.mu = std::log(median);
  // Solve sigma so that the truncated distribution's p99 is the target (the truncation moves it).
  double lo = 1e-3, hi = 20;
  for (int i = 0; i < 200; ++i) {
    m.sigma = (lo + hi) / 2;
    (m.cdf(p99) > 0.99 ? lo : hi) = m.sigma;
  }
  // With the p99 close to the maximum the truncation swallows the body: no sigma keeps the
  // median (mu stays the untruncated one), so say so rather than return something else.
  if (std::abs(m.cdf(median) - 0.5) > 0.01 || std::abs(m.cdf(p99) - 0.99) > 0.001) {
    throw sim::InputError("<workload>", "",
                          fmt::format("no truncated lognormal has median {}, p99 {} and maximum {}; keep the p99 further below the maximum",
                                      median, p99, max));
  }
  return m;
}

DocLengthModel DocLengthModel::lognormal_pareto(double median, double p99, std::int64_t max, double tail_weight, double body_sigma) {
  ORRERY_CHECK(median > 0 && p99 > median && static_cast<double>(max) > p99, "lognormal_pareto needs 0 < median < p99 < max");
  ORRERY_CHECK(tail_weight > 0 && tail_weight < 0.5 && body_sigma > 0, "tail weight in (0, 0.5), positive body sigma");
  DocLengthModel m;
  m.kind = Kind::lognormal_pareto;
  m.max_length = max;
  m.sigma = body_sigma;
  // For a tail weight: alternate the body's mu (for the median; the tail starts above it) and the
  // tail's alpha (for the p99) until both settle. A tail too light to reach the p99 even when
  // flat (alpha at its floor) gets more weight.
  for (m.tail_weight = tail_weight; m.tail_weight < 0.5; m.tail_weight += 0.01) {
    m.mu = std::log(median);
    m.alpha = 1;
    for (int round = 0; round < 50; ++round) {
      double lo = -20, hi = 40;
      for (int i = 0; i < 100; ++i) {
        m.mu = (lo + hi) / 2;
        m.x_min = std::exp(m.mu + m.sigma * standard_normal_quantile(0.95));
        (m.cdf(median) > 0.5 ? lo : hi) = m.mu;
      }
      double alo = 0.05, ahi = 20;
      for (int i = 0; i < 100; ++i) {
        m.alpha = (alo + ahi) / 2;
        (m.cdf(p99) > 0.99 ? ahi : alo) = m.alpha;
      }
    }
    if (std::abs(m.quantile(0.99) / p99 - 1) < 0.01 && std::abs(m.quantile(0.5) / median - 1) < 0.01) return m;
  }
  throw sim::InputError("<workload>", "", fmt::format("no lognormal body with a Pareto tail has median {}, p99 {} and maximum {}", median, p99, max));
}

std::string DocLengthModel::describe() const {
  if (kind == Kind::lognormal) return fmt::format("lognormal(mu={:.4f}, sigma={:.4f}) truncated at {}", mu, sigma, max_length);
  return fmt::format("lognormal(mu={:.4f}, sigma={:.4f}) + {:.0f}% Pareto(x_min={:.0f}, alpha={:.4f}) truncated at {}", mu, sigma,
                     100 * tail_weight, x_min, alpha, max_length);
}

double DocSampler::uniform() {
  // 53 random bits -> (0, 1].
  return (static_cast<double>(rng_() >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

double DocSampler::normal() {
  if (have_spare_) {
    have_spare_ = false;
    return spare_;
  }
  const double u = uniform(), v = uniform();
  const double r = std::sqrt(-2 * std::log(u));
  spare_ = r * std::sin(2 * std::numbers::pi * v);
  have_spare_ = true;
  return r * std::cos(2 * std::numbers::pi * v);
}

std::int64_t DocSampler::next() {
  for (;;) {
    double x = 0;
    if (model_.kind == DocLengthModel::Kind::lognormal_pareto && uniform() <= model_.tail_weight) {
      x = model_.x_min * std::pow(uniform(), -1.0 / model_.alpha);
    } else {
      x = std::exp(model_.mu + model_.sigma * normal());
    }
    const auto len = std::max<std::int64_t>(model_.min_length, static_cast<std::int64_t>(std::llround(x)));
    if (len <= model_.max_length) return len;
  }
}

std::vector<std::int64_t> DocSampler::batch(std::int64_t tokens) {
  std::vector<std::int64_t> docs;
  std::int64_t left = tokens;
  while (left > 0) {
    const std::int64_t d = std::min(next(), left);
    docs.push_back(d);
    left -= d;
  }
  return docs;
}

}  // namespace orrery::models
