#include "traces/doclens.hpp"

#include "sim/error.hpp"
#include "traces/csv.hpp"
#include "traces/json_input.hpp"

#include <cmath>
#include <fmt/format.h>

namespace orrery::traces {

namespace {

std::int64_t length(double v, const std::string& source, int line, std::string_view found) {
  if (!std::isfinite(v) || v < 1 || v != std::floor(v) || v > static_cast<double>(kMaxDocLength)) {
    throw sim::InputError(source, fmt::format("line {}", line),
                          fmt::format("found document length {}, expected a positive whole number of tokens, at most {} (longer than any context window)", found,
                                      kMaxDocLength));
  }
  return static_cast<std::int64_t>(v);
}

// Steps are whole numbers from 0; the limit keeps them exact in a double and far above any run.
constexpr double kMaxStep = 1e12;

}  // namespace

std::vector<DocBatch> read_doclens_jsonl(std::string_view text, const std::string& source) {
  std::vector<DocBatch> out;
  for_each_jsonl_row(text, [&](std::string_view row, int line) {
    const std::unique_ptr<JsonDocument> doc = parse_jsonl_row(row, source, line);
    const nlohmann::json& j = doc->root().json();
    if (!j.is_array()) throw sim::InputError(source, fmt::format("line {}", line), "found a JSON value that is not an array, expected [length, ...]");
    if (j.empty()) throw sim::InputError(source, fmt::format("line {}", line), "found an empty batch, expected at least one document");
    DocBatch b;
    b.line = line;
    for (const auto& v : j) {
      if (!v.is_number()) throw sim::InputError(source, fmt::format("line {}", line), fmt::format("found {}, expected a document length", v.dump()));
      b.lengths.push_back(length(v.get<double>(), source, line, v.dump()));
    }
    out.push_back(std::move(b));
  });
  if (out.empty()) throw sim::InputError(source, "", "found no batches, expected one JSON array of lengths per line");
  return out;
}

std::vector<DocBatch> read_doclens_csv(std::string_view text, const std::string& source) {
  const CsvTable t = parse_csv(text, source);
  (void)t.column("step"), (void)t.column("doc_len");
  std::vector<DocBatch> out;
  double last_step = 0;  // of the last row, when there is one (out is not empty)
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const int line = static_cast<int>(t.lines[r]);
    const std::string& cell = t.at(r, "step");
    const std::optional<double> step = parse_decimal(cell);
    if (!step || *step < 0 || *step > kMaxStep || *step != std::floor(*step)) {
      throw sim::InputError(source, fmt::format("line {}, column \"step\"", line),
                            fmt::format("found {}, expected a whole step number from 0 to {}", sim::quote(cell), kMaxStep));
    }
    if (!out.empty() && *step < last_step) {
      throw sim::InputError(source, fmt::format("line {}, column \"step\"", line),
                            fmt::format("found step {} after step {}, expected steps in order", *step, last_step));
    }
    if (out.empty() || *step != last_step) out.push_back(DocBatch{{}, line});
    last_step = *step;
    const std::string& len = t.at(r, "doc_len");
    const std::optional<double> v = parse_decimal(len);
    out.back().lengths.push_back(length(v.value_or(0.0), source, line, len));
  }
  if (out.empty()) throw sim::InputError(source, "", "found no rows, expected step,doc_len rows");
  return out;
}

std::vector<DocBatch> load_doclens(const std::string& path) {
  const std::string text = read_text_file(path);
  if (path.ends_with(".csv")) return read_doclens_csv(text, path);
  if (path.ends_with(".jsonl")) return read_doclens_jsonl(text, path);
  throw sim::InputError(path, "", "expected a .jsonl (one batch per line) or .csv (step,doc_len) document-length trace");
}

std::string doclens_to_jsonl(const std::vector<std::vector<std::int64_t>>& batches) {
  std::string out;
  for (const auto& b : batches) out += fmt::format("[{}]\n", fmt::join(b, ", "));
  return out;
}

std::vector<std::string> length_source_names() { return {"distca-prolong", "distca-wlbllm", "mooncake", "azure-code", "azure-conv"}; }

std::vector<std::int64_t> read_length_source(const std::string& kind, const std::string& dir) {
  std::vector<std::int64_t> out;
  if (kind == "distca-prolong" || kind == "distca-wlbllm") {
    const std::string path = dir + (kind == "distca-prolong" ? "/distca-lengths/dist_prolong.json" : "/distca-lengths/dist_wlbllm.json");
    const auto doc = load_json_file(path);
    for (const JsonNode& v : doc->root().as_array()) {
      const std::int64_t n = v.as_int();
      if (n < 1) v.fail_expected("a positive document length");
      out.push_back(n);
    }
  } else if (kind == "mooncake") {
    const std::string path = dir + "/mooncake-trace/conversation_trace.jsonl";
    const std::string text = read_text_file(path);
    int line = 0;
    std::size_t begin = 0;
    while (begin < text.size()) {
      const std::size_t end = std::min(text.find('\n', begin), text.size());
      const std::string row = text.substr(begin, end - begin);
      begin = end + 1;
      ++line;
      if (row.empty()) continue;
      const auto doc = parse_json(row, fmt::format("{}:{}", path, line));
      JsonObject o = doc->root().as_object();
      const JsonNode n = o.required("input_length");
      const std::int64_t v = n.as_int();
      if (v < 1) n.fail_expected("a positive input length");
      out.push_back(v);
    }
  } else if (kind == "azure-code" || kind == "azure-conv") {
    const std::string path = dir + "/azure-llm-inference-2023/AzureLLMInferenceTrace_" + (kind == "azure-code" ? "code" : "conv") + ".csv";
    const CsvTable t = read_csv_file(path);
    for (std::size_t r = 0; r < t.rows.size(); ++r) {
      out.push_back(length(t.number(r, "ContextTokens"), path, static_cast<int>(t.lines[r]), t.at(r, "ContextTokens")));
    }
  } else {
    throw sim::InputError("<command line>", "--source",
                          fmt::format("unknown length source {}{}; valid: {}", sim::quote(kind), sim::did_you_mean(kind, length_source_names()),
                                      fmt::join(length_source_names(), ", ")));
  }
  return out;
}

}  // namespace orrery::traces
