// RL post-training scenarios for `orrery compare`:
//   {"name": "...", "model": "qwen2.5-7b",
//    "pool": {"gpu": "H800", "gpus": 128, "gpus_per_node": 8, "dollars_per_gpu_hour": 2.0},
//      or two pools, each {"gpu", "gpus", "gpus_per_node", "dollars_per_gpu_hour", "datacenter"}:
//    "generation_pool": {...}, "training_pool": {...},
//    "cross_dc": {"bandwidth": "100 Gb/s", "latency": "10 ms"},   (required when the datacenters differ)
//    "size_to_match": true,   (two pools: the streaming policies hold only as many GPUs of the faster
//                              stage as match the slower one, StreamRL Algorithm 1 across datacenters)
//    "generation": {"tp": 1, "gpus": 64 (one pool: the split; omitted: searched), "max_context": 17408,
//                   "memory_fraction": 0.9, "max_batch": 256, "dispatcher": "skewness-aware",
//                   "ranker": {"alpha": 0.2, "recall": 0.85}},
//    "training": {"tp": 1, "pp": 1, "cp": 1, "zero": 1, "recompute": "selective",
//                 "micro_batch_tokens": 17408, "sequence_policy": "sorted-greedy", "schedule": "1f1b"},
//    "rollouts": {"prompts": 512, "group_size": 8,
//                 "output": {"median": 600, "p99": 16000, "max": 16384}   a lognormal, or
//                           {"source": "azure-conv", "median": 600, "max": 16384}   real lengths (shape) scaled,
//                 "prompt": {"median": 300, "p99": 2000, "max": 1024},
//                 "prompt_share": 0.5, "growth": 1.0 | "growth_from": "Mistral-7B-v0.1",
//                 "data": "../shared/data"}   (for source and growth_from; relative to the working directory)
//      or {"trace": "rollouts.jsonl"} (traces/rollouts.hpp; relative to the scenario file),
//    "seed": 1}
// Errors name the file and JSON pointer: pools that do not fit (a split larger than the pool,
// GPUs not in whole servers), a KV cache that cannot hold one sequence, an unknown GPU, model,
// dispatcher or sequence policy, a trace shorter than the iterations asked for.
#pragma once

#include "models/rl/rl.hpp"

#include <string>

namespace orrery::traces {

bool is_rl_scenario(const std::string& path);
// The rollouts for `iterations` iterations are generated (or read) here.
models::RlSetup load_rl_scenario(const std::string& path, int iterations);

}  // namespace orrery::traces
