// RL rollout traces and the real output-length data that shapes generated rollouts.
//   JSONL: one prompt's group per line   {"iteration": 0, "prompt": 7, "prompt_tokens": 312, "outputs": [1200, 85, 4410]}
//   CSV:   iteration,prompt,prompt_tokens,output_tokens, one row per sample, a prompt's rows together
//   std::vector<models::RolloutBatch> b = load_rollouts("rollouts.jsonl");
// Iterations start at 0 and go up by at most one; lengths are positive whole numbers; errors name
// the file, the line and the field.
#pragma once

#include "models/rl/rollouts.hpp"
#include "sim/unit_parse.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::traces {

// Real output lengths in `data_dir` (../shared/data), in file order:
//   azure-code, azure-conv  azure-llm-inference-2023/AzureLLMInferenceTrace_{code,conv}.csv (GeneratedTokens)
//   mooncake                mooncake-trace/conversation_trace.jsonl (output_length)
// An unknown name is an InputError at `at` (the scenario's field naming it).
std::vector<std::int64_t> load_output_lengths(const std::string& name, const std::string& data_dir,
                                              sim::InputLocation at = {"<workload>", ""});
std::vector<std::string> output_length_source_names();

// simpleRL-Zoo's mean GRPO response lengths, read by eye from its Figure 1 (+-5-10%):
// rl-rollout-lengths/simplerl_zoo_response_length_approx.csv. growth = end_mean / start_mean.
struct LengthGrowth {
  std::string model;
  double start_mean = 0, end_mean = 0, peak_mean = 0;
  std::int64_t max_length = 0;  // the configured max_response_length
  int steps = 0;                // training steps shown
};
LengthGrowth load_length_growth(const std::string& model, const std::string& data_dir);

// The `prompt` field is optional (default: the group's index in the file).
std::vector<models::RolloutBatch> read_rollouts_jsonl(std::string_view text, const std::string& source);
std::vector<models::RolloutBatch> read_rollouts_csv(std::string_view text, const std::string& source);
std::vector<models::RolloutBatch> load_rollouts(const std::string& path);  // by extension: .jsonl or .csv
// Batch k is written as iteration k; read_rollouts_jsonl gives the batches back.
std::string rollouts_to_jsonl(const std::vector<models::RolloutBatch>& batches);

}  // namespace orrery::traces
