#include "models/cluster/cluster_step.hpp"

#include "models/hardware/cost.hpp"
#include "models/hardware/step_params.hpp"
#include "models/hardware/hardware.hpp"
#include "models/training/llm.hpp"
#include "models/training/parallel.hpp"
#include "models/training/step.hpp"
#include "sim/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace orrery::models {

namespace {

// The server fabric of a GPU type for the emulator: DGX builders where one exists; other types
// on the same shape with their own per-GPU link rate: NVLink when they have it, else PCIe
// (Gen4 x16, 31.5 GB/s per direction, for A40/A10; Gen3 x16, 15.75 GB/s, for T4 and older:
// PCI-SIG base specifications 4.0 and 3.0).
std::string fabric_spec(const GpuSpec& gpu, std::string_view type, int nodes, int per_node) {
  for (const char* dgx : {"a100", "h100", "h200", "h800", "h20", "b200"}) {
    if (type == dgx) return fmt::format("dgx-{}:nodes={},gpus_per_node={}", dgx, nodes, per_node);
  }
  const double link = gpu.nvlink_bandwidth > 0 ? gpu.nvlink_bandwidth : (type == "t4" || type == "p100" || type == "k80" ? 15.75e9 : 31.5e9);
  return fmt::format("dgx-a100:nodes={},gpus_per_node={},nvlink={} GB/s", nodes, per_node, link / 1e9);
}

}  // namespace

StepThroughput::StepThroughput(const PipelineSchedule& schedule, StepThroughputOptions options)
    : schedule_(schedule), options_(std::move(options)) {
  ModelCatalog::builtin().model(options_.default_model, "<cluster scenario>", "/throughput/model");
  ORRERY_CHECK(options_.global_batch > 0 && options_.seq_len > 0, "step throughput needs a batch and a sequence length");
}

StepThroughput::Best StepThroughput::best(std::string_view model_name, int batch, std::string_view gpu_type, int gpus, int nodes) const {
  const auto key = std::make_tuple(std::string(model_name), batch, std::string(gpu_type), gpus, nodes);
  if (const auto it = cache_.find(key); it != cache_.end()) return it->second;
  Best best;
  const GpuSpec* found = HardwareCatalog::builtin().find(gpu_type);
  // The emulator's kernels are bf16; GPUs without it (V100, T4) trained in fp16 with loss
  // scaling (Megatron-LM on V100, Shoeybi et al. 2019), so their bf16 runs at the fp16 rate.
  std::optional<GpuSpec> gpu;
  if (found != nullptr) {
    gpu = *found;
    if (!gpu->supports(DType::bf16)) gpu->peak_flops[static_cast<std::size_t>(DType::bf16)] = gpu->peak_flops[static_cast<std::size_t>(DType::fp16)];
  }
  const ModelSpec* model = ModelCatalog::builtin().find(model_name);
  // The emulator's fabric holds the GPUs evenly: `nodes` servers of gpus / nodes each.
  if (gpu && gpu->supports(DType::bf16) && model != nullptr && gpus > 0 && nodes > 0 && gpus % nodes == 0) {
    const int per_node = gpus / nodes;
    const RooflineCostModel cost(*gpu, training_roofline_params(*gpu));
    const std::string topology = fabric_spec(*gpu, gpu_type, nodes, per_node);
    for (int tp = 1; tp <= std::min(per_node, 8); tp *= 2) {
      if (gpus % tp != 0 || model->heads % tp != 0) continue;
      for (int pp = 1; pp <= gpus / tp; ++pp) {
        if ((gpus / tp) % pp != 0 || model->layers % pp != 0) continue;
        const int dp = gpus / (tp * pp);
        if (batch % dp != 0) continue;
        for (const Recompute rc : {Recompute::none, Recompute::full}) {
          ParallelPlan plan;
          plan.tp = tp;
          plan.pp = pp;
          plan.dp = dp;
          plan.global_batch = batch;
          plan.seq_len = options_.seq_len;
          plan.recompute = rc;
          plan.sequence_parallel = tp > 1;
          try {
            const StepResult r = run_step({*model, plan, *gpu, topology}, cost, schedule_);
            if (r.oom) continue;
            const double s = r.step_time.to_seconds();
            if (best.step_s == 0 || s < best.step_s) {
              best.step_s = s;
              best.plan = fmt::format("tp{} pp{} dp{} recompute {}", tp, pp, dp, rc == Recompute::none ? "none" : "full");
            }
            break;  // recompute only helps a plan that does not fit
          } catch (const sim::InputError&) {
            // a plan the validator rejects (shape, micro-batches) is not a candidate
          }
        }
      }
    }
  }
  cache_.emplace(key, best);
  return best;
}

double StepThroughput::rate(const Job& job, std::string_view gpu_type, int gpus, int nodes) const {
  if (gpus < 1) return 0;
  // An uneven spread runs at the locality of the next even split (its fullest node sets the pace).
  while (gpus % std::max(1, nodes) != 0) ++nodes;
  const ModelSpec* m = ModelCatalog::builtin().find(job.model);
  const Best b = best(m != nullptr ? std::string_view(m->name) : std::string_view(options_.default_model),
                      job.batch > 0 ? job.batch : options_.global_batch, gpu_type, gpus, nodes);
  return b.step_s > 0 ? 1.0 / b.step_s : 0.0;
}

double StepThroughput::work(const Job& job) const {
  if (job.iterations > 0) return job.iterations;
  const std::string type = job.gpu_type.empty() ? options_.reference_gpu : job.gpu_type;
  const int per = std::max(1, options_.cluster.gpus_per_node(type) > 0 ? options_.cluster.gpus_per_node(type) : 8);
  return job.service_s * rate(job, type, job.gpus, (job.gpus + per - 1) / per);
}

}  // namespace orrery::models
