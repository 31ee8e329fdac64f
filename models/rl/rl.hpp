// RL post-training mechanisms: the pieces a policy (policies/rl) orchestrates into iterations of
// generate -> train -> sync weights.
//  - RlPool: GPUs of one type in one datacenter, with a price per GPU-hour.
//  - RolloutRanker: the only view of output lengths a scheduler gets: a noisy score per prompt
//    whose recall of the true top-alpha tail is the configured one.
//  - run_generation: a pool of identical generation instances (models/rl/generation.hpp), each
//    running the prompts a dispatch gave it; every sample's finish time, each instance's end.
//  - RlTrainer: the step emulator (models/training/balance.hpp) on a set of samples, placed by a
//    sequence policy, as one optimizer step or as a gradient-accumulation pass of a stream.
//  - weight_sync_seconds / reshard_seconds: trainer -> generators over the pools' links (a
//    broadcast tree: DP rank 0 -> remote root -> fan-out), and colocated resharding.
//   RlTrainer t(model, pool, plan, cost, schedule, policy, "rl.json");
//   double s = t.train(lengths, /*final_pass=*/true, /*step=*/k);
#pragma once

#include "models/training/balance.hpp"
#include "models/rl/generation.hpp"
#include "models/rl/rollouts.hpp"
#include "sim/registry.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::models {

struct RlPool {
  GpuSpec gpu;
  std::string fabric;            // the topology builder kind of its servers, e.g. "dgx-h800"
  int gpus = 0;
  int gpus_per_node = 8;
  double dollars_per_gpu_hour = 0;
  std::string datacenter = "dc0";
};

// A link between datacenters (the trainer's and the generators'), when they differ.
struct CrossDcLink {
  double bandwidth = 0;  // bytes/s
  double latency = 0;    // seconds
};

// Scores per prompt (higher: predicted longer). The truth is the group's mean output length; the
// score is ln(truth) + sigma z with z standard normal (seeded), sigma solved by bisection so that
// the top-alpha prompts by score hold `recall` of the true top-alpha prompts (1: a perfect ranker).
class RolloutRanker {
 public:
  RolloutRanker(double alpha, double recall, std::uint64_t seed) : alpha_(alpha), recall_(recall), seed_(seed) {}
  std::vector<double> scores(const RolloutBatch& batch, int iteration) const;
  // The recall of the top alpha that `scores` achieve on `batch`.
  static double tail_recall(const RolloutBatch& batch, const std::vector<double>& scores, double alpha);
  double alpha() const { return alpha_; }

 private:
  double alpha_, recall_;
  std::uint64_t seed_;
};

// Prompts (indices into the batch's groups) per instance, in admission order.
struct Dispatch {
  std::vector<std::vector<int>> instances;
  int long_tail_instances = 0;  // skewness-aware: instances given the predicted tail
  bool placed = false;          // the lists are for physical instances already (they weighed busy_for)
};

struct GenerationRun {
  std::vector<std::vector<double>> finish;  // [group][sample], absolute seconds
  std::vector<double> instance_start;       // when each instance began the batch
  std::vector<double> instance_end;         // when each instance ran out of work
  std::vector<int> instance_samples;        // samples each instance generated
  double end = 0;
  int preemptions = 0;
  double tokens = 0;                        // generated
};

// Every instance starts at `start` with all its prompts' samples waiting.
GenerationRun run_generation(const GenerationInstance& instance, const RolloutBatch& batch, const Dispatch& dispatch, double start,
                             std::string_view source);
// Instance i starts at starts[i] (a generation service whose instances move on to the next batch
// as soon as they are free).
GenerationRun run_generation(const GenerationInstance& instance, const RolloutBatch& batch, const Dispatch& dispatch,
                             const std::vector<double>& starts, std::string_view source);

struct RlTrainPlan {
  int tp = 1, pp = 1, cp = 1;
  std::int64_t micro_batch_tokens = 0;  // tokens per packed micro-batch sequence (>= the longest sample)
  Recompute recompute = Recompute::selective;
  int zero = 1;
};

class RlTrainer {
 public:
  // InputError (at `source`, `where`) when `gpus` is not a multiple of tp x pp x cp, the model's
  // heads do not split by tp, or the plan does not fit the GPU's memory.
  RlTrainer(const ModelSpec& model, const RlPool& pool, int gpus, RlTrainPlan plan, const CostModel& cost, const PipelineSchedule& schedule,
            SequencePolicy& policy, std::string_view source, std::string_view where);
  // Seconds to run these samples (tokens each) through forward and backward; the gradient
  // reduction and optimizer (the step's tail) only when `final_pass`.
  double train(const std::vector<std::int64_t>& samples, bool final_pass, std::uint64_t step);
  int dp() const { return dp_; }
  int gpus() const { return gpus_; }
  // Per GPU: weights, gradients and optimizer states (what colocated generation must leave).
  double resident_bytes() const { return resident_; }
  // Tokens a stream must gather before a training pass saturates the pool: a micro-batch for
  // every pipeline stage on every data-parallel rank.
  double saturating_tokens() const;

 private:
  StepBalancer& balancer(int micro_batches);
  ModelSpec model_;
  RlPool pool_;
  int gpus_, dp_;
  RlTrainPlan plan_;
  const CostModel& cost_;
  const PipelineSchedule& schedule_;
  SequencePolicy& policy_;
  std::map<int, std::unique_ptr<StepBalancer>> balancers_;
  double resident_ = 0;
};

// Everything a policy (policies/rl) needs to run a scenario; traces/rl_json builds it.
struct RlSetup {
  std::string name, source;
  ModelSpec model;
  RlPool generation_pool, training_pool;  // the same pool when `shared`
  bool shared = true;
  int generation_gpus = 0;                 // shared pool: the split (0: searched)
  bool size_to_match = true;               // two pools: streaming policies hold only what matches the slower stage
  std::optional<CrossDcLink> cross_dc;     // when the pools are in different datacenters
  GenerationConfig generation;             // model, GPU and tp of an instance
  RlTrainPlan train;
  std::string sequence_policy = "sorted-greedy";
  std::string schedule = "1f1b";
  std::string dispatcher = "skewness-aware";
  sim::GivenParams dispatcher_params;
  double alpha = 0.2;    // the long-tail share the ranker marks
  double recall = 0.85;  // the ranker's recall of the true top-alpha prompts
  std::uint64_t seed = 1;
  std::vector<RolloutBatch> batches;       // one per iteration
};

// The server fabric (a models/topology builder kind) of a GPU type's pool: "dgx-h800" for an
// H800; empty for a type without one.
std::string server_fabric(const GpuSpec& gpu);
// A pool of `gpus` GPUs of one type on its server fabric, 8 per server.
RlPool rl_pool(const GpuSpec& gpu, int gpus, double dollars_per_gpu_hour, std::string datacenter = "dc0");
// A GRPO setup on one pool: `prompts` x `group_size` samples per iteration from `lengths`
// (seeded), vLLM's default of 256 running sequences, a context of the longest prompt plus the
// longest output, and verl-style training (ZeRO-3, full recompute, micro-batches of one context).
RlSetup grpo_setup(const ModelSpec& model, const RlPool& pool, const RolloutLengthModel& lengths, int iterations, int prompts, int group_size,
                   std::uint64_t seed = 1);

// The bf16 weights from the trainer's DP rank 0 to every generation instance, a broadcast tree:
// DP rank 0's tp x pp GPUs send their shards to a root instance (over the trainer's NICs and the
// root's, and the cross-datacenter link when the pools are apart); then each of the root's
// tensor-parallel ranks broadcasts its shard to the same rank of every other instance, simulated
// as flows on the generation pool's fabric (models/collectives: a pipelined broadcast).
double weight_sync_seconds(const ModelSpec& model, const RlPool& train, int train_tp, int train_pp, const RlPool& gen, int gen_gpus, int gen_tp,
                           const CrossDcLink* cross_dc);

// Colocated mode switch: each GPU gathers the weights of its generation tensor-parallel shard
// from the training shards (an all-gather over the GPUs that split the model for training, on
// the pool's fabric).
double reshard_seconds(const ModelSpec& model, const RlPool& pool, int train_shards, int gen_tp);

}  // namespace orrery::models
