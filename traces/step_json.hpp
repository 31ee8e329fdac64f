// Step scenarios (`orrery step scenario.json`): a model, a cluster, a parallel plan.
//   {"name": "llama3-8b on 4 DGX H100",
//    "model": "llama3-8b",                      // a catalog name, or an object (below)
//    "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=4"},
//    "plan": {"tp": 2, "pp": 2, "dp": 8, "micro_batch": 1, "global_batch": 256, "seq_len": 8192,
//             "schedule": "1f1b", "recompute": "selective", "zero": 1},
//    "calibration": "curves.json",              // optional: cost curves
//    "fail_on_oom": true,                       // optional: an OOM plan is an error
//    "workload": {"generator": "lognormal_pareto", "median": 644, "p99": 71000, "max": 1048576,
//                 "seed": 1, "jitter": 0.02}}      // or {"trace": "lengths.jsonl"}: for `orrery compare`
// Plan fields (defaults in models::ParallelPlan): tp pp vp dp cp ep cp_kind(ring|ulysses) zero
// micro_batch global_batch seq_len recompute(none|selective|full) sequence_parallel
// flash_attention overlap{grad_reduce,param_gather,tp_comm} schedule expert_imbalance moe_dispatch
// grad_reduce(fp32|bf16|fp16) precision(bf16|fp8|fp8-delayed|fp8-block|mxfp8|nvfp4)
// fp8_param_gather split_embedding_and_loss documents
// (lengths packed in every sequence, summing to seq_len); dp
// defaults to the cluster's GPUs / (tp pp cp).
// A model object: {"name", "base" (a catalog model to start from), "layers", "hidden", "heads",
// "kv_heads", "head_dim", "ffn_hidden", "vocab", "mlp" (swiglu|gelu), "tied_embeddings",
// "moe": {"experts", "top_k", "expert_ffn", "shared_experts", "dense_layers"},
// "mla": {"q_lora_rank", "kv_lora_rank", "qk_nope_dim", "qk_rope_dim", "v_head_dim"}, "source"}.
#pragma once

#include "models/hardware/hardware.hpp"
#include "models/training/step.hpp"

#include <string>
#include <string_view>

namespace orrery::traces {

class JsonNode;  // traces/json_input.hpp

// The documents of each step, for `orrery compare`: a trace file, or a seeded generator.
struct WorkloadSpec {
  std::string trace_path;  // .jsonl or .csv (traces/doclens.hpp), resolved against the scenario's folder
  std::string generator;   // "lognormal" or "lognormal_pareto" when no trace
  double median = 0, p99 = 0;
  std::int64_t max = 0;
  std::uint64_t seed = 1;
  double jitter = 0.0;     // log-sd of the per-GPU speed factor of a step
};

struct StepScenarioFile {
  std::string name;
  models::StepScenario scenario;
  std::string calibration_path;  // resolved against the scenario's folder; empty: roofline
  bool fail_on_oom = false;
  bool has_workload = false;
  WorkloadSpec workload;
};

// Reads and validates a scenario: unknown models and schedules, plans that do not fit the
// cluster, and micro-batches that do not divide the batch are errors naming the JSON pointer.
StepScenarioFile read_step_scenario(std::string_view json_text, const std::string& source,
                                    const models::HardwareCatalog& gpus = models::HardwareCatalog::builtin());
// The "model" and "cluster" parts of a step scenario, for other inputs that share them (plan
// search): a catalog name or a model object; {"gpu", "topology", "contention"} with the
// topology's GPU count.
models::ModelSpec read_step_model(const JsonNode& node);
struct StepCluster {
  models::GpuSpec gpu;
  std::string topology;
  int gpus = 0;
  models::Contention contention = models::Contention::isolated;  // "isolated" (default) or "fabric"
};
StepCluster read_step_cluster(const JsonNode& node, const models::HardwareCatalog& gpus = models::HardwareCatalog::builtin());

StepScenarioFile load_step_scenario(const std::string& path, const models::HardwareCatalog& gpus = models::HardwareCatalog::builtin());

}  // namespace orrery::traces
