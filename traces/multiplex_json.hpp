// GPU multiplexing scenarios for `orrery compare` (models/multiplex/):
//   {"name": "...",
//    "colocation": {"model": "qwen2-audio-7b" | {custom module graph: multimodal_json.hpp},
//                   "gpu": "H100", "gpus": 8, "micro_batch": 4,    (samples per micro-batch)
//                   "mix": {...MultimodalMix fields...}, "seed": 1,  (the profiled micro-batch)
//                   "bandwidth_sm_share": 0.5, "colocation_penalty": 0.03,   (the speed model's assumptions)
//                   "placement": [{"module": "vision", "gpu": 0, "sm": 0.4, "memory": 0.2, "phase": 0}, ...]}}
//                                  (optional: a hand-made placement, compared as "given"; a GPU's
//                                   pieces of one phase run at once, its phases in turn)
//   {"name": "...",
//    "peft": {"backbone": "llama3-8b", "gpu": "H100", "stages": 2, "seed": 1,
//             "tasks": [{"name": "chat", "rank": 16, "targets": ["linear_qkv", "linear_proj"],
//                        "micro_batch": 4, "micro_batches": 8,
//                        "lengths": {"median": 300, "p99": 2000, "max": 4096} | [512, 300, ...]}]}}
// Errors name the file and JSON pointer: a quota above 100% (or a GPU's quotas summing above it),
// an unknown module or target, an adapter rank above the hidden size, a non-positive size.
#pragma once

#include "models/hardware/hardware.hpp"
#include "models/multimodal/multimodal.hpp"
#include "models/multiplex/colocation.hpp"
#include "models/multiplex/peft.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace orrery::traces {

struct ColocationScenario {
  std::string name;
  models::MultimodalModel model;
  models::GpuSpec gpu;
  int gpus = 1, micro_batch = 1;
  models::MultimodalMix mix;
  std::uint64_t seed = 1;
  std::optional<double> bandwidth_sm_share, colocation_penalty;
  std::optional<models::ColocPlacement> placement;
};

struct PeftScenario {
  std::string name;
  models::PeftProblem problem;  // lengths drawn from each task's distribution (seeded) or listed
};

// "colocation", "peft", or "" for neither (read from the top-level keys).
std::string multiplex_kind(const std::string& path);
ColocationScenario load_colocation_scenario(const std::string& path);
PeftScenario load_peft_scenario(const std::string& path);

}  // namespace orrery::traces
