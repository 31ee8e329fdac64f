// Rollout-length workloads for RL post-training (GRPO): each RL iteration samples a group of
// outputs per prompt; lengths are long-tailed, correlated within a group and grow over training.
//   RolloutLengthModel m{DocLengthModel::lognormal(600, 16'000, 32'768), DocLengthModel::lognormal(300, 2'000, 8'192)};
//   m.growth = 6000.0 / 530;                       // simpleRL-Zoo, Mistral-7B (traces/rollouts.hpp)
//   RolloutBatch b = RolloutGenerator(m, /*seed=*/7).batch(/*k=*/0, /*iterations=*/100, /*prompts=*/512, /*group_size=*/8);
#pragma once

#include "models/training/doc_lengths.hpp"

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace orrery::models {

struct RolloutGroup {  // one prompt's samples
  int prompt = 0;
  std::int64_t prompt_tokens = 0;
  std::vector<std::int64_t> outputs;
};

struct RolloutBatch {  // one RL iteration
  std::vector<RolloutGroup> groups;
  int line = 0;  // where it starts in its file; 0 if generated
};

// A bootstrap over real lengths, scaled so that their median is `target_median`; scaled lengths
// above `max` are dropped (truncation, as DocLengthModel's). The shape (p99/p50) is the source's.
class EmpiricalLengths {
 public:
  EmpiricalLengths(std::vector<std::int64_t> lengths, double target_median, std::int64_t max);
  std::int64_t draw(std::mt19937_64& rng) const;
  // The scaled length at quantile u in [0, 1) (not rounded).
  double value(double u) const;
  // The share of scaled lengths at most x.
  double cdf(double x) const;

 private:
  std::vector<double> sorted_;  // scaled, ascending, all <= max
};

struct RolloutLengthModel {
  DocLengthModel output;      // output length per sample
  DocLengthModel prompt;      // prompt length per prompt
  double prompt_share = 0.5;  // share of the latent log-variance that is per prompt (a hard prompt's samples are all long); 0..1
  double growth = 1.0;        // the output median's multiplier at the last iteration (linear from 1 at iteration 0)
  // When non-empty, outputs are drawn from these real lengths (EmpiricalLengths scaled to the
  // output model's median, truncated at its max_length) instead of the parametric model.
  std::vector<std::int64_t> empirical;
  std::string describe() const;
};

// Output lengths come from a latent normal w = sqrt(share) z_prompt + sqrt(1 - share) z_sample
// (one z_prompt per group) mapped through a monotone transform:
//   lognormal kind:   L = g exp(mu + sigma w)              (ln L = mu + sigma (...), as the model says)
//   lognormal_pareto: L = g Q(Phi(w))   Q the model's truncated quantile (a Gaussian copula; tabled)
//   empirical:        L = g E(Phi(w))   E the scaled empirical quantile
// where g grows linearly from 1 to `growth`. A length above max_length is drawn again by redrawing
// z_sample (sampled directly from the truncated normal when a rejection loop would be slow), so
// without growth the one-sample marginal is the source's (for the lognormal kind, redrawing only
// the sample leaves slightly more mass just below the max than a whole-draw truncation would).
// share = 1 gives every sample of a prompt the same length; then z_prompt is redrawn instead.
// Every batch depends only on (seed, k): the same on every platform and in any call order.
class RolloutGenerator {
 public:
  RolloutGenerator(RolloutLengthModel model, std::uint64_t seed);
  // Iteration k of `iterations`: `prompts` groups of `group_size` samples; prompt ids k*prompts + i.
  RolloutBatch batch(int k, int iterations, int prompts, int group_size) const;
  std::vector<RolloutBatch> batches(int iterations, int prompts, int group_size) const;
  const RolloutLengthModel& model() const { return model_; }

 private:
  RolloutLengthModel model_;
  std::uint64_t seed_;
  std::vector<double> table_;  // ln Q(Phi(w)) on a grid of w (lognormal_pareto)
  std::optional<EmpiricalLengths> empirical_;
};

}  // namespace orrery::models
