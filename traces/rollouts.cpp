#include "traces/rollouts.hpp"

#include "sim/error.hpp"
#include "sim/unit_parse.hpp"
#include "traces/csv.hpp"
#include "traces/json_input.hpp"

#include <charconv>
#include <fmt/format.h>
#include <functional>
#include <set>

namespace orrery::traces {

namespace {

// The largest token count, iteration or prompt number a rollout trace may hold: longer than any
// context window, and sums of a batch's lengths stay far inside int64.
constexpr std::int64_t kMaxTokens = 1'000'000'000;

std::int64_t tokens(const JsonNode& n) {
  const std::int64_t v = n.as_int();
  if (v < 1 || v > kMaxTokens) n.fail_expected(fmt::format("a positive whole number of tokens, at most {} (longer than any context window)", kMaxTokens));
  return v;
}

// A whole-number cell from `lo` to kMaxTokens; errors as CsvTable::number's.
std::int64_t whole(const CsvTable& t, std::size_t r, std::string_view column, std::int64_t lo) {
  const std::string& cell = t.at(r, column);
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
  if (ec != std::errc() || end != cell.data() + cell.size() || v < lo || v > kMaxTokens) {
    throw sim::InputError(t.source, fmt::format("line {}, column {}", t.lines[r], sim::quote(column)),
                          fmt::format("found {}, expected {}, at most {}", sim::quote(cell), lo > 0 ? "a positive whole number" : "a whole number of 0 or more",
                                      kMaxTokens));
  }
  return v;
}

// Iterations 0, 0, 1, 1, 2...: a new one starts a batch; going back or skipping one is an error.
// Returns whether `iteration` starts a new batch.
bool next_iteration(std::vector<models::RolloutBatch>& out, std::int64_t iteration, int line, const std::function<void(std::string)>& fail) {
  if (out.empty()) {
    if (iteration != 0) fail(fmt::format("found iteration {}, expected the first iteration to be 0", iteration));
  } else {
    const auto last = static_cast<std::int64_t>(out.size()) - 1;
    if (iteration == last) return false;
    if (iteration != last + 1) fail(fmt::format("found iteration {} after iteration {}, expected {} or {}", iteration, last, last, last + 1));
  }
  out.push_back(models::RolloutBatch{{}, line});
  return true;
}

}  // namespace

std::vector<models::RolloutBatch> read_rollouts_jsonl(std::string_view text, const std::string& source) {
  std::vector<models::RolloutBatch> out;
  int groups = 0;
  for_each_jsonl_row(text, [&](std::string_view row, int line) {
    const auto doc = parse_jsonl_row(row, source, line);
    JsonObject o = doc->root().as_object();
    const JsonNode it = o.required("iteration");
    next_iteration(out, it.as_int(), line, [&](const std::string& m) { it.fail(m); });
    models::RolloutGroup g;
    g.prompt = groups++;
    if (auto p = o.optional("prompt")) g.prompt = p->as_int_in(0, INT32_MAX);
    g.prompt_tokens = tokens(o.required("prompt_tokens"));
    const JsonNode outputs = o.required("outputs");
    for (const JsonNode& v : outputs.as_array()) g.outputs.push_back(tokens(v));
    if (g.outputs.empty()) outputs.fail_expected("at least one output length");
    o.finish();
    out.back().groups.push_back(std::move(g));
  });
  if (out.empty()) throw sim::InputError(source, "", "found no groups, expected one {\"iteration\", \"prompt_tokens\", \"outputs\"} object per line");
  return out;
}

std::vector<models::RolloutBatch> read_rollouts_csv(std::string_view text, const std::string& source) {
  const CsvTable t = parse_csv(text, source);
  for (const char* c : {"iteration", "prompt", "prompt_tokens", "output_tokens"}) (void)t.column(c);
  std::vector<models::RolloutBatch> out;
  std::set<std::int64_t> seen;  // prompts of the current iteration
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const int line = static_cast<int>(t.lines[r]);
    const auto fail = [&](std::string_view column, std::string m) {
      throw sim::InputError(source, fmt::format("line {}, column {}", line, sim::quote(column)), std::move(m));
    };
    if (next_iteration(out, whole(t, r, "iteration", 0), line, [&](std::string m) { fail("iteration", std::move(m)); })) seen.clear();
    const auto prompt = static_cast<int>(whole(t, r, "prompt", 0));
    const std::int64_t prompt_tokens = whole(t, r, "prompt_tokens", 1);
    std::vector<models::RolloutGroup>& groups = out.back().groups;
    if (groups.empty() || groups.back().prompt != prompt) {
      if (!seen.insert(prompt).second) fail("prompt", fmt::format("found prompt {} again, expected the rows of a prompt together", prompt));
      groups.push_back(models::RolloutGroup{prompt, prompt_tokens, {}});
    } else if (groups.back().prompt_tokens != prompt_tokens) {
      fail("prompt_tokens", fmt::format("found {}, expected {} as on the prompt's earlier rows", prompt_tokens, groups.back().prompt_tokens));
    }
    groups.back().outputs.push_back(whole(t, r, "output_tokens", 1));
  }
  if (out.empty()) throw sim::InputError(source, "", "found no rows, expected iteration,prompt,prompt_tokens,output_tokens rows");
  return out;
}

std::vector<models::RolloutBatch> load_rollouts(const std::string& path) {
  if (path.ends_with(".jsonl")) return read_rollouts_jsonl(read_text_file(path), path);
  if (path.ends_with(".csv")) return read_rollouts_csv(read_text_file(path), path);
  throw sim::InputError(path, "", "expected a .jsonl (one group per line) or .csv (iteration,prompt,prompt_tokens,output_tokens) rollout trace");
}

std::string rollouts_to_jsonl(const std::vector<models::RolloutBatch>& batches) {
  std::string out;
  for (std::size_t k = 0; k < batches.size(); ++k) {
    for (const models::RolloutGroup& g : batches[k].groups) {
      out += fmt::format("{{\"iteration\": {}, \"prompt\": {}, \"prompt_tokens\": {}, \"outputs\": [{}]}}\n", k, g.prompt, g.prompt_tokens,
                         fmt::join(g.outputs, ", "));
    }
  }
  return out;
}

std::vector<std::string> output_length_source_names() { return {"azure-code", "azure-conv", "mooncake"}; }

std::vector<std::int64_t> load_output_lengths(const std::string& name, const std::string& data_dir, sim::InputLocation at) {
  std::vector<std::int64_t> out;
  if (name == "azure-code" || name == "azure-conv") {
    const CsvTable t = read_csv_file(data_dir + "/azure-llm-inference-2023/AzureLLMInferenceTrace_" + name.substr(6) + ".csv");
    for (std::size_t r = 0; r < t.rows.size(); ++r) out.push_back(whole(t, r, "GeneratedTokens", 1));
  } else if (name == "mooncake") {
    const std::string path = data_dir + "/mooncake-trace/conversation_trace.jsonl";
    for_each_jsonl_row(read_text_file(path), [&](std::string_view row, int line) {
      const auto doc = parse_jsonl_row(row, path, line);
      out.push_back(tokens(doc->root().as_object().required("output_length")));
    });
  } else {
    const auto names = output_length_source_names();
    throw sim::InputError(std::string(at.source), std::string(at.where),
                          fmt::format("unknown output-length source {}{}; valid: {}", sim::quote(name), sim::did_you_mean(name, names),
                                      fmt::join(names, ", ")));
  }
  return out;
}

LengthGrowth load_length_growth(const std::string& model, const std::string& data_dir) {
  const CsvTable t = read_csv_file(data_dir + "/rl-rollout-lengths/simplerl_zoo_response_length_approx.csv");
  std::vector<std::string> models;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    models.push_back(t.at(r, "model"));
    if (!sim::iequals(models.back(), model)) continue;
    return LengthGrowth{models.back(),
                        t.number(r, "response_length_start_tokens_approx"),
                        t.number(r, "response_length_end_tokens_approx"),
                        t.number(r, "response_length_peak_tokens_approx"),
                        whole(t, r, "max_response_length_config", 1),
                        static_cast<int>(whole(t, r, "training_steps_shown", 1))};
  }
  throw sim::InputError(t.source, "", fmt::format("no model {}{}; found {}", sim::quote(model), sim::did_you_mean(model, models), fmt::join(models, ", ")));
}

}  // namespace orrery::traces
