// Source 3 of job speed: the training-step emulator. A job's rate on (GPU type, count, nodes) is
// 1 / the step time of the fastest parallel plan that fits in memory, searched over TP (within a
// node), PP and DP, with and without full recompute; results are cached per shape.
//   StepThroughput t(schedule, {.default_model = "llama3-8b", .global_batch = 256});
//   t.rate(job, "h100", 16, 2);  // steps per second
#pragma once

#include "models/cluster/cluster.hpp"
#include "models/training/pipeline.hpp"

#include <map>
#include <string>
#include <tuple>

namespace orrery::models {

struct StepThroughputOptions {
  std::string default_model = "llama3-8b";  // for jobs whose model is not in the LLM catalog
  int global_batch = 256;                     // sequences per step, for jobs with no batch
  std::int64_t seq_len = 2048;
  std::string reference_gpu = "v100";          // what a trace's durations were measured on, for jobs naming no type
  ClusterSpec cluster;                        // GPUs per node of each type
};

// Jobs whose work is a service time (trace durations) are converted to steps at their requested
// count and type: work = service_s x rate there, so the emulator sets how speed changes with
// count, type and locality while the trace sets how much there is to do.
class StepThroughput final : public ThroughputModel {
 public:
  StepThroughput(const PipelineSchedule& schedule, StepThroughputOptions options);
  double rate(const Job& job, std::string_view gpu_type, int gpus, int nodes) const override;
  double work(const Job& job) const override;
  // Plans searched so far (each shape once).
  std::size_t shapes() const { return cache_.size(); }

  // The fastest plan's step time on the shape (seconds; 0 when none fits), and the plan.
  struct Best {
    double step_s = 0;
    std::string plan;  // "tp2 pp1 dp4 recompute none"
  };
  Best best(std::string_view model, int batch, std::string_view gpu_type, int gpus, int nodes) const;

 private:
  const PipelineSchedule& schedule_;
  StepThroughputOptions options_;
  mutable std::map<std::tuple<std::string, int, std::string, int, int>, Best, std::less<>> cache_;
};

}  // namespace orrery::models
