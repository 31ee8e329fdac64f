// Multimodal scenarios for `orrery compare`:
//   {"name": "...",
//    "multimodal": {"model": "qwen2-vl-7b" | {custom module graph, below},
//                   "gpu": "H100", "tp": 2, "pp": 4, "dp": 8, "micro_batch": 4,
//                   "nvlink": "450 GB/s", "p2p": "400 Gb/s",    (links default to the GPU's NVLink
//                                                                 and a 400 Gb/s NIC)
//                   "cp": 4,          (a video DiT's context parallelism: GPUs per video; on NVLink
//                                      while tp x cp <= 8, else on the p2p link)
//                   "attention": {"head_sparsity": [0.9, ...] | "sparsity": 0.9, "spread": 0.05,
//                                 "estimator_rank": 16, "cp_mode": "hybrid" | "head" | "ring"}},
//                                     (DSV's block-sparse attention for the video DiT:
//                                      models/multimodal/multimodal.hpp)
//                   "sections": [{"name": "vision", "modules": ["vision", "merger"], "tp": 1, "dp": 8,
//                                 "micro_batch": 4}, {"name": "llm", "modules": ["llm"]}, ...]
//                                     (Maestro's section graph: every module in one section; sizes
//                                      optional, positive; edges follow the modules'; no cycle)
//    "policies": "megatron-1f1b,pipeweaver,megascale-omni",   (what `orrery compare` runs when
//                                                              --policies is not given)
//    "workload": {"trace": "batches.jsonl"} | {"mix": {...MultimodalMix fields...}, "seed": 1}}
// A custom model: {"name": "my-vlm", "modules": [{"name": "vision", "kind": "vision_encoder",
//   "layers": 32, "hidden": 1280, "heads": 16, "ffn_hidden": 5120, "mlp": "gelu", "patch": 14,
//   "temporal_patch": 2}, {"name": "merger", "kind": "projector", "hidden": 3584, "merge": 4,
//   "projector_hidden": 5120}, {"name": "llm", "kind": "llm", "base": "llama3-8b"}],
//   "edges": [["vision", "merger"], ["merger", "llm"]]}
// Errors name the JSON pointer: an edge to an unknown module, a cycle, a dangling module.
#pragma once

#include "models/hardware/hardware.hpp"
#include "models/multimodal/multimodal.hpp"
#include "models/multimodal/multimodal_pipeline.hpp"

#include <cstdint>
#include <string>

namespace orrery::traces {

struct MultimodalScenario {
  std::string name;
  models::MultimodalModel model;
  models::GpuSpec gpu;
  int tp = 1, pp = 1, dp = 1, micro_batch = 1;
  double nvlink = 0, p2p = 0;  // bytes/s
  int cp = 1;                  // the video DiT's context parallelism
  models::DitAttention attention;  // the video DiT's attention (cp and its link included)
  bool attention_given = false;    // the scenario has an "attention" (compare: dense against dsv)
  std::vector<models::SectionSpec> sections;  // Maestro's section graph, when given
  std::string policies;            // compare's default list (empty: the built-in one)
  std::string trace_path;      // workload: a JSONL trace, or
  models::MultimodalMix mix;   // a generator
  std::uint64_t seed = 1;
};

bool is_multimodal_scenario(const std::string& path);
class JsonNode;
// A model, by catalog name or as a custom module graph (above), validated; errors at `node`.
models::MultimodalModel read_multimodal_model(const JsonNode& node);
// A workload mix object ({"samples": 64, "text_median": 512, ...}: MultimodalMix's fields), validated.
models::MultimodalMix read_multimodal_mix(const JsonNode& node);
MultimodalScenario load_multimodal_scenario(const std::string& path);

}  // namespace orrery::traces
