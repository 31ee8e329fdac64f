// RL generation: a model serving rollouts on a tensor-parallel group, with continuous batching.
//
// Every decode iteration runs one token for each running sequence: per layer the QKV, output
// and MLP GEMMs with m = the running batch (tile-padded, reading every weight once), the
// attention's read of the KV cache (memory-bound: the cached tokens' keys and values), and the
// TP all-reduces; then the LM head. The per-token latency PTL(batch) is therefore not a formula:
// it comes out of the cost model, flat while the weight reads dominate and rising once the
// GEMMs turn compute-bound. Prefill runs the prompts' GEMMs and causal attention.
//
// Continuous batching (vLLM-style): waiting requests are admitted in arrival order while the
// KV cache (the HBM left after the weights) holds their prompts; sequences leave as they finish;
// when the cache would overflow, the most recently admitted sequence is preempted and recomputed
// later. Between events (a sequence finishing, an admission) the batch is constant and the
// cached tokens grow by the batch each iteration, so the simulator sums those iterations in
// closed form: the run costs O(requests log requests), not O(tokens).
//   GenerationInstance g(config, cost, "scenario.json");
//   g.ptl(64, 2048);                              // seconds per token at batch 64, 2K context
//   auto done = g.run(requests, /*start=*/0.0);   // when each request finishes
#pragma once

#include "models/hardware/cost.hpp"
#include "models/hardware/hardware.hpp"
#include "models/training/llm.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::models {

struct GenerationConfig {
  ModelSpec model;
  GpuSpec gpu;
  int tp = 1;
  std::int64_t max_context = 32768;  // prompt + output, per sequence
  double memory_fraction = 0.9;      // of each GPU's HBM usable for weights and the KV cache
  int max_batch = 1024;              // running sequences at most (the serving engine's cap)
  double nvlink = 0;                 // bytes/s per GPU for the TP all-reduces (0: free)
  double reserved_bytes = 0;         // per GPU, held by something else (colocated training's states)
};

struct GenRequest {
  int id = 0;
  std::int64_t prompt = 0, output = 0;  // tokens
  double arrival = 0;                   // seconds (admitted at events at or after it)
};

struct GenFinish {
  int id = 0;
  double time = 0;
  int preemptions = 0;
};

class GenerationInstance {
 public:
  // InputError (at `source`) when the weights do not fit, or the KV cache cannot hold one
  // sequence of max_context tokens.
  GenerationInstance(GenerationConfig config, const CostModel& cost, std::string_view source);

  const GenerationConfig& config() const { return c_; }
  double kv_bytes_per_token() const { return kv_bytes_per_token_; }  // per GPU, all layers
  std::int64_t kv_capacity_tokens() const { return kv_capacity_; }
  // One decode iteration: `batch` sequences holding `kv_tokens` cached tokens in all.
  double decode_iteration_s(int batch, double kv_tokens) const;
  // Per-token latency at a batch with every sequence at `context` tokens.
  double ptl(int batch, double context) const { return decode_iteration_s(batch, static_cast<double>(batch) * context); }
  double prefill_s(const std::vector<std::int64_t>& prompts) const;
  // Runs the requests from `start`; InputError for a request longer than max_context.
  std::vector<GenFinish> run(std::vector<GenRequest> requests, double start, std::string_view source) const;

 private:
  double gemms_s(int batch) const;  // cached per batch
  GenerationConfig c_;
  const CostModel& cost_;
  double kv_bytes_per_token_ = 0;
  std::int64_t kv_capacity_ = 0;
  double attention_s_per_token_ = 0;  // KV read, per cached token, all layers
  double attention_fixed_s_ = 0;      // the attention kernels' launch overheads
  mutable std::vector<double> gemms_;
};

}  // namespace orrery::models
