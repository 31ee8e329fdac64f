// RL post-training policies: how generation and training share (or split) GPUs and hand samples
// and weights to each other, and how prompts are dispatched to generation instances.
//   colocated           verl-style: one pool alternates generation and training; the mode switch
//                       gathers the generation shards of the weights (models::reshard_seconds)
//   disaggregated-sync  two pools; training waits for the whole batch, generation for training
//                       and the weight sync
//   streamrl-sync       StreamRL's stream generation: samples go to the trainer as they finish,
//                       which trains in dynamically sized passes once enough have arrived
//   streamrl-async      one-step asynchrony: generation of step t runs beside training of t-1 on
//                       weights at most one step old; the weight sync leaves the critical path
// Dispatchers (rl_dispatchers): round-robin, random, and StreamRL's skewness-aware dispatch
// (Algorithm 2: the ranker's top alpha go to a few instances sized to minimise the predicted
// latency; LPT inside each instance). For two policies on one pool the generation/training split
// is searched (StreamRL's Algorithm 1, on a profile of the first batch) unless the scenario fixes it.
//   RlSetup setup = ...;                       // traces/rl_json builds it from a scenario file
//   RlRun r = rl_policies().create("streamrl-async")->run(setup, {gen_cost, train_cost}, 50);
#pragma once

#include "models/hardware/cost.hpp"
#include "models/rl/rl.hpp"
#include "sim/registry.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::policies {

using models::RlSetup;

struct DispatchContext {
  const models::GenerationInstance& instance;
  int instances = 1;
  const std::vector<double>& scores;         // the ranker's, per prompt
  const std::vector<std::int64_t>& history;  // output lengths of the previous iteration (empty at first)
  double alpha = 0.2;
  int iteration = 0;
  std::uint64_t seed = 1;
  // A generation service (streamrl-async): seconds until each instance is free of its previous
  // batch; empty when every instance starts together.
  std::vector<double> busy_for = {};
};

class RlDispatcher {
 public:
  virtual ~RlDispatcher() = default;
  virtual std::string_view name() const = 0;
  virtual models::Dispatch dispatch(const models::RolloutBatch& batch, const DispatchContext& ctx) = 0;
};
const sim::Registry<RlDispatcher>& rl_dispatchers();

struct RlSpan {
  std::string lane;  // "generation 3", "trainer", "weight sync"
  std::string name;
  double start = 0, end = 0;
};

struct RlRun {
  std::string policy, dispatcher;
  int generation_gpus = 0, training_gpus = 0;  // at the end (elastic moves some); colocated: both the whole pool
  int instances = 0;
  std::vector<double> iteration_s;  // between consecutive ends of training
  double makespan = 0;
  double samples = 0, tokens = 0;   // tokens: generated
  double samples_per_s = 0, tokens_per_s = 0;
  double gpu_seconds = 0;           // all GPUs held, over the makespan
  double pipeline_bubble = 0;       // shares of gpu_seconds: a stage waiting on the other (or on a mode switch / sync)
  double skewness_bubble = 0;       // generation instances idle while others finish their long tails
  double dollars = 0;
  double samples_per_dollar = 0;
  double staleness = 0;             // mean weight versions between generation and training
  double weight_sync_s = 0;         // one sync (colocated: one reshard)
  double generation_s = 0;          // per iteration: from the first instance's start to the batch's last sample
  double training_s = 0;            // per iteration: the trainer's busy time
  int preemptions = 0;
  int training_passes = 0;
  int resizes = 0;                  // elastic: units moved from training to generation
  std::vector<RlSpan> timeline;     // the last iteration
};

// Generation kernels on the generation pool's GPU, training on the training pool's.
struct RlCosts {
  const models::CostModel& generation;
  const models::CostModel& training;
};

// Every RL policy takes "dispatcher" (empty: the scenario's).
class RlPolicy {
 public:
  virtual ~RlPolicy() = default;
  virtual std::string_view name() const = 0;
  // InputError for a setup the policy cannot run (colocated, or elastic, on two pools); run()
  // checks it first, and a caller may check before printing anything.
  virtual void check(const RlSetup& setup) const = 0;
  virtual RlRun run(const RlSetup& setup, const RlCosts& costs, int iterations) = 0;
};
const sim::Registry<RlPolicy>& rl_policies();

// One policy on a setup with the default costs: the isolated roofline for generation kernels on
// the generation GPU, the training roofline (models::training_roofline_params) on the trainer's.
RlRun run_rl_policy(const RlSetup& setup, std::string_view policy, const sim::GivenParams& params, int iterations,
                    sim::InputLocation at = {"<command line>", "--policies"});

}  // namespace orrery::policies
