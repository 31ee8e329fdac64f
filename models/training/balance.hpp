// Steps with unequal micro-batches: a sequence policy's placement (models/training/sequence.hpp) run
// through the step emulator's costs. Each data-parallel rank runs its own micro-batches through
// the pipeline schedule (attention costed per document with tile quantisation, context
// parallelism by its busiest worker, pool exchanges on the pool's links); a seeded
// multiplicative jitter per GPU; the step ends when the slowest rank's pipeline is done plus
// the gradient reduction and optimizer tail, as data parallelism synchronises there.
//   StepBalancer b(scenario, cost, schedule, {.jitter = 0.02});
//   BalanceStep s = b.run(policy.place(docs, b.shape()), /*step=*/k);
#pragma once

#include "models/hardware/cost.hpp"
#include "models/training/pipeline.hpp"
#include "models/training/sequence.hpp"
#include "models/training/step.hpp"

#include <cstdint>
#include <map>
#include <vector>

namespace orrery::models {

struct BalanceOptions {
  double jitter = 0.0;       // log-sd of each GPU's per-step speed factor (0.02: about 7% between the extremes of 256 GPUs)
  std::uint64_t seed = 1;
  int tile_heads = 4;        // pool policies' head chunks (their exchange pipelines over them)
};

struct BalanceStep {
  double step_s = 0;
  double attention_imbalance = 0;  // max / mean over data-parallel ranks of attention time
  std::vector<double> rank_s;      // each rank's pipeline end
  std::vector<OpSpan> spans;       // of the slowest rank (for timelines)
  int slowest_rank = 0;
};

class StepBalancer {
 public:
  StepBalancer(const StepScenario& scenario, const CostModel& cost, const PipelineSchedule& schedule, BalanceOptions options = {});
  // The shape a sequence policy places into (dp, cp, micro-batches, context, heads, costs).
  const SequenceShape& shape() const { return shape_; }
  BalanceStep run(const BatchPlacement& placement, std::uint64_t step) const;
  // The gradient reduction and optimizer after the last pipeline op (part of every step_s).
  double tail_s() const { return tail_s_; }
  // The uniform step's memory (its peak stage), and whether it exceeds the GPU.
  const MemoryEstimate& memory() const { return memory_; }
  bool oom() const { return oom_; }

 private:
  double attention_seconds(const std::vector<std::int64_t>& docs, Pass pass) const;
  StepScenario sc_;
  const CostModel& cost_;
  BalanceOptions options_;
  SequenceShape shape_;
  PipelinePlan plan_;
  PipelineShape pipe_;
  std::vector<LayerLinearCost> linear_;
  double tail_s_ = 0;
  MemoryEstimate memory_;
  bool oom_ = false;
  double p2p_s_ = 0;
  // ZeRO-3's per-micro-batch data-parallel collectives of one layer (as run_step issues them):
  // the parameter all-gather before each forward and backward, and the gradient reduce-scatter
  // after each backward, on one DP stream beside the compute.
  double layer_gather_s_ = 0, layer_reduce_s_ = 0;
  // ZeRO-1 and -2, overlapped: per virtual stage, its layers and the all-gather of one layer's
  // updated shards (one bucket per layer, issued in order at the step's start, run_step); the
  // chunk's first forward runs each layer after its bucket. Empty when nothing is gathered so.
  std::vector<int> chunk_layers_;
  std::vector<double> bucket_gather_s_;
  LinkRates rates_;
  // Per pool size (ranks): the bandwidth a rank gets in the pool's all-to-all, from a flow
  // simulation of one on the fabric.
  double pool_bandwidth(int pool_ranks) const;
  mutable std::map<int, double> pool_bandwidth_;
  std::int64_t heads_ = 0, kv_heads_ = 0;
};

}  // namespace orrery::models
