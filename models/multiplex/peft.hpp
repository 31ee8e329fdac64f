// Several LoRA fine-tuning tasks on one frozen backbone (MuxTune, arXiv 2603.02885): how a step
// of all tasks is laid out (which tasks' sequences share a micro-batch, how sequences are padded,
// whether the backbone is one copy or one per task) and what it costs on a pipeline of GPUs.
//   PeftProblem p{backbone, gpu, /*stages=*/2, tasks, lengths};
//   PeftResult r = evaluate_peft(p, plan, cost);   // r.tokens_per_s, r.memory_bytes
// Costs (the kernel cost model's roofline, so small GEMMs pay tile padding, the weights' HBM
// reads and the per-kernel overhead: the small-GEMM utilisation the paper attacks):
//   - per layer and micro-batch of T padded tokens: the backbone's four linear layers, forward
//     and input gradient only (frozen: no weight gradient), attention forward and backward over
//     the micro-batch's padded sequences, element-wise kernels moving 40 x T x hidden bytes
//     (norms, SwiGLU, residuals, forward and backward: an estimate);
//   - per task in it and targeted linear layer (k in, n out, rank r, its T_i tokens): the adapter's
//     x A and (x A) B forward, their two input gradients and two weight gradients (six GEMMs);
//   - a pipeline of p stages (layers split evenly) under 1F1B: sum of the micro-batches' stage
//     times plus (p - 1) x the largest (the closed form (m + p - 1) t for equal ones); separate
//     pipelines (one per task instance) run one after another on the same GPUs;
//   - memory per GPU: bf16 backbone weights (one copy, or one per instance), adapters at 16 bytes a
//     parameter (bf16 weights and gradients, fp32 master and Adam moments), activations of the
//     min(p, m) micro-batches 1F1B keeps on the first stage at 34 x hidden bytes per token and layer
//     (Korthikanti et al., arXiv 2205.05198); instances run in turn, so one's activations at a time.
// Not modelled: the embedding and loss, stage-to-stage transfers, the adapters' optimizer step.
#pragma once

#include "models/hardware/cost.hpp"
#include "models/training/llm.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace orrery::models {

struct PeftTask {
  std::string name;
  int rank = 16;
  bool qkv = true, proj = true, fc1 = true, fc2 = true;  // Megatron's LoRA targets
  int micro_batch = 4;       // sequences per micro-batch
  int micro_batches = 4;     // per step
};

struct PeftProblem {
  ModelSpec backbone;
  GpuSpec gpu;
  int stages = 1;                                   // pipeline stages (GPUs)
  std::vector<PeftTask> tasks;
  std::vector<std::vector<std::int64_t>> lengths;   // per task, its step's sequences in micro-batch order
};

enum class PeftPadding : std::uint8_t { longest, chunk };

// One micro-batch: sequences of one or more tasks, run through the backbone together.
struct PeftMicroBatch {
  struct Part {
    int task = 0;
    std::vector<std::int64_t> lengths;
  };
  std::vector<Part> parts;
};

struct PeftPlan {
  bool shared_backbone = true;                      // false: each task its own copy (instance)
  PeftPadding padding = PeftPadding::longest;
  std::int64_t chunk = 1;                           // PeftPadding::chunk: lengths round up to it
  std::vector<std::vector<PeftMicroBatch>> pipelines;  // run one after another
};

struct PeftResult {
  double step_s = 0;
  double tokens_per_s = 0;          // real (unpadded) tokens
  double real_tokens = 0, padded_tokens = 0;
  double memory_bytes = 0;          // the first stage's GPU (the peak)
  double weights_bytes = 0, adapter_bytes = 0, activation_bytes = 0;
  double bubble_fraction = 0;
  int micro_batches = 0;
};

// Tokens a micro-batch computes: longest, every sequence at the micro-batch's longest; chunk,
// each rounded up to a multiple of `chunk`.
std::int64_t padded_tokens(const PeftMicroBatch& mb, PeftPadding padding, std::int64_t chunk);
// Each part's padded sequence lengths, as the kernels see them.
std::vector<std::vector<std::int64_t>> padded_lengths(const PeftMicroBatch& mb, PeftPadding padding, std::int64_t chunk);
// Adapter parameters of a task over the whole backbone (rank x (in + out) per targeted linear layer).
double adapter_params(const ModelSpec& m, const PeftTask& t);
// Forward and backward seconds of one layer for a micro-batch.
double peft_layer_s(const PeftProblem& p, const PeftMicroBatch& mb, PeftPadding padding, std::int64_t chunk, const CostModel& cost);
PeftResult evaluate_peft(const PeftProblem& p, const PeftPlan& plan, const CostModel& cost);

// The decision: how a step of every task is laid out.
class PeftPolicy {
 public:
  virtual ~PeftPolicy() = default;
  virtual PeftPlan plan(const PeftProblem& p) const = 0;
};

}  // namespace orrery::models
