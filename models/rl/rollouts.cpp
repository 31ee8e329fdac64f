#include "models/rl/rollouts.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <numbers>

namespace orrery::models {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// The copula table spans w in [-kTableEdge, kTableEdge]: Phi(8) = 1 - 6e-16, beyond any draw.
constexpr double kTableEdge = 8, kTableStep = 1.0 / 32;

std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// DocSampler's transforms (53-bit uniforms, Box-Muller) over std::mt19937_64's fixed sequence.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : gen_(seed) {}
  double uniform() { return (static_cast<double>(gen_() >> 11) + 1.0) * (1.0 / 9007199254740992.0); }  // in (0, 1]
  double normal() {
    if (have_spare_) {
      have_spare_ = false;
      return spare_;
    }
    const double r = std::sqrt(-2 * std::log(uniform())), t = 2 * std::numbers::pi * uniform();
    spare_ = r * std::sin(t);
    have_spare_ = true;
    return r * std::cos(t);
  }
  // A standard normal conditioned on z <= bound: redrawn while that is cheap, else by inversion.
  double normal_below(double bound) {
    for (int i = 0; i < 8; ++i) {
      const double z = normal();
      if (z <= bound) return z;
    }
    const double p = std::max(standard_normal_cdf(bound), 1e-300);
    return std::min(bound, standard_normal_quantile(std::min(uniform() * p, 1 - 1e-16)));
  }

 private:
  std::mt19937_64 gen_;
  bool have_spare_ = false;
  double spare_ = 0;
};

double median_of(const DocLengthModel& m) { return m.kind == DocLengthModel::Kind::lognormal ? std::exp(m.mu) : m.quantile(0.5); }

}  // namespace

EmpiricalLengths::EmpiricalLengths(std::vector<std::int64_t> lengths, double target_median, std::int64_t max) {
  if (lengths.empty()) throw sim::InputError("<workload>", "", "found no empirical lengths, expected at least one");
  std::sort(lengths.begin(), lengths.end());
  if (lengths.front() < 1) throw sim::InputError("<workload>", "", fmt::format("found empirical length {}, expected positive lengths", lengths.front()));
  const std::size_t n = lengths.size();
  const double median = 0.5 * static_cast<double>(lengths[(n - 1) / 2] + lengths[n / 2]);
  const double scale = target_median / median;
  for (const std::int64_t v : lengths) {
    if (scale * static_cast<double>(v) <= static_cast<double>(max)) sorted_.push_back(scale * static_cast<double>(v));
  }
  if (sorted_.empty()) throw sim::InputError("<workload>", "", fmt::format("every empirical length scaled to median {} exceeds the maximum {}", target_median, max));
}

double EmpiricalLengths::value(double u) const {
  const auto i = static_cast<std::size_t>(std::clamp(u, 0.0, 1.0) * static_cast<double>(sorted_.size()));
  return sorted_[std::min(i, sorted_.size() - 1)];
}

double EmpiricalLengths::cdf(double x) const {
  return static_cast<double>(std::upper_bound(sorted_.begin(), sorted_.end(), x) - sorted_.begin()) / static_cast<double>(sorted_.size());
}

std::int64_t EmpiricalLengths::draw(std::mt19937_64& rng) const {
  const double u = static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0);  // in [0, 1)
  return std::max<std::int64_t>(1, std::llround(value(u)));
}

std::string RolloutLengthModel::describe() const {
  const std::string out = empirical.empty() ? output.describe()
                                            : fmt::format("{} empirical lengths scaled to median {:.0f}, truncated at {}", empirical.size(),
                                                          median_of(output), output.max_length);
  return fmt::format("outputs {}; prompt share {:.2f}; median growth x{:.3g}; prompts {}", out, prompt_share, growth, prompt.describe());
}

RolloutGenerator::RolloutGenerator(RolloutLengthModel model, std::uint64_t seed) : model_(std::move(model)), seed_(seed) {
  const auto bad = [](std::string message) { throw sim::InputError("<workload>", "", std::move(message)); };
  if (!(model_.prompt_share >= 0 && model_.prompt_share <= 1)) bad(fmt::format("found prompt share {}, expected 0 to 1", model_.prompt_share));
  if (!(model_.growth > 0 && std::isfinite(model_.growth))) bad(fmt::format("found length growth {}, expected a positive factor", model_.growth));
  if (model_.output.max_length < 1 || model_.prompt.max_length < 1) bad("expected output and prompt models with a positive maximum length");
  if (!model_.empirical.empty()) {
    empirical_.emplace(model_.empirical, median_of(model_.output), model_.output.max_length);
  } else if (model_.output.kind == DocLengthModel::Kind::lognormal_pareto) {
    // ln Q(Phi(w)) by bisection in ln x (DocLengthModel::quantile's 200 linear steps per point
    // would take a fifth of a second for the table).
    const double top = std::log(static_cast<double>(model_.output.max_length));
    for (int i = 0; i <= static_cast<int>(2 * kTableEdge / kTableStep); ++i) {
      const double q = standard_normal_cdf(-kTableEdge + i * kTableStep);
      double lo = -60, hi = top;
      for (int step = 0; step < 60; ++step) {
        const double mid = (lo + hi) / 2;
        (model_.output.cdf(std::exp(mid)) < q ? lo : hi) = mid;
      }
      table_.push_back((lo + hi) / 2);
    }
  }
}

RolloutBatch RolloutGenerator::batch(int k, int iterations, int prompts, int group_size) const {
  ORRERY_CHECK(k >= 0 && k < iterations && prompts >= 0 && group_size >= 1, "rollout batch {} of {}: {} prompts x {}", k, iterations, prompts,
               group_size);
  const DocLengthModel& out = model_.output;
  const double g = iterations > 1 ? 1 + (model_.growth - 1) * k / (iterations - 1) : 1.0;
  const double max = static_cast<double>(out.max_length);
  // The latent cut c: a length is within the max exactly when w <= c.
  double c = kInf;
  if (empirical_) {
    const double share = empirical_->cdf(max / g);
    if (share <= 0) throw sim::InputError("<workload>", "", fmt::format("growth x{:.3g} puts every empirical length above the maximum {}", g, max));
    if (share < 1) c = standard_normal_quantile(share);
  } else if (out.kind == DocLengthModel::Kind::lognormal) {
    c = (std::log(max / g) - out.mu) / out.sigma;
  } else if (const double share = out.cdf(max / g); share < 1) {
    c = standard_normal_quantile(std::max(share, 1e-300));
  }
  const auto length = [&](double w) {
    double x = 0;
    if (empirical_) {
      x = g * empirical_->value(standard_normal_cdf(w));
    } else if (out.kind == DocLengthModel::Kind::lognormal) {
      x = g * std::exp(out.mu + out.sigma * w);
    } else {
      const double at = (std::clamp(w, -kTableEdge, kTableEdge) + kTableEdge) / kTableStep;
      const std::size_t i = std::min(static_cast<std::size_t>(at), table_.size() - 2);
      const double f = at - static_cast<double>(i);
      x = g * std::exp((1 - f) * table_[i] + f * table_[i + 1]);
    }
    // The clamp only absorbs rounding at the cut.
    return std::clamp<std::int64_t>(std::llround(x), out.min_length, out.max_length);
  };

  const std::uint64_t stream = splitmix(seed_ ^ splitmix(static_cast<std::uint64_t>(k)));
  Rng rng(stream);
  DocSampler prompt_lengths(model_.prompt, splitmix(stream + 1));
  const double a = std::sqrt(model_.prompt_share), b = std::sqrt(1 - model_.prompt_share);
  RolloutBatch batch;
  batch.groups.reserve(static_cast<std::size_t>(prompts));
  for (int p = 0; p < prompts; ++p) {
    RolloutGroup group{k * prompts + p, prompt_lengths.next(), {}};
    group.outputs.reserve(static_cast<std::size_t>(group_size));
    if (b == 0) {  // all variance per prompt: one length for the group, its prompt factor redrawn
      group.outputs.assign(static_cast<std::size_t>(group_size), length(rng.normal_below(c)));
    } else {
      const double z_prompt = a * rng.normal();
      for (int s = 0; s < group_size; ++s) group.outputs.push_back(length(z_prompt + b * rng.normal_below((c - z_prompt) / b)));
    }
    batch.groups.push_back(std::move(group));
  }
  return batch;
}

std::vector<RolloutBatch> RolloutGenerator::batches(int iterations, int prompts, int group_size) const {
  std::vector<RolloutBatch> out;
  for (int k = 0; k < iterations; ++k) out.push_back(batch(k, iterations, prompts, group_size));
  return out;
}

}  // namespace orrery::models
