// Document-length traces: the documents of each global batch.
//   JSONL: one global batch per line, a JSON array of document lengths:   [2690, 6388, 1150]
//   CSV:   columns step,doc_len, one row per document, steps in order:    step,doc_len\n0,2690
// Every length must be a whole number of tokens from 1 to kMaxDocLength; steps whole numbers
// from 0, in order; a batch may not be empty. Errors name the file and the line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::traces {

// 2^30 tokens: longer than any context window, and a batch's sum stays far inside int64.
inline constexpr std::int64_t kMaxDocLength = std::int64_t{1} << 30;

struct DocBatch {
  std::vector<std::int64_t> lengths;
  int line = 0;  // where it starts in its file
};

std::vector<DocBatch> read_doclens_jsonl(std::string_view text, const std::string& source);
std::vector<DocBatch> read_doclens_csv(std::string_view text, const std::string& source);
// By extension: .jsonl or .csv.
std::vector<DocBatch> load_doclens(const std::string& path);
std::string doclens_to_jsonl(const std::vector<std::vector<std::int64_t>>& batches);

// Real length sources in ../shared/data, as one long list of document lengths in file order:
//   distca-prolong  distca-lengths/dist_prolong.json (a JSON array)
//   distca-wlbllm   distca-lengths/dist_wlbllm.json (synthetic; a shape only)
//   mooncake        mooncake-trace/conversation_trace.jsonl (input_length per request)
//   azure-code, azure-conv  azure-llm-inference-2023/AzureLLMInferenceTrace_{code,conv}.csv (ContextTokens)
std::vector<std::int64_t> read_length_source(const std::string& kind, const std::string& data_dir);
std::vector<std::string> length_source_names();

}  // namespace orrery::traces
