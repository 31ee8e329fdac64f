#include "sim/error.hpp"
#include "traces/rollouts.hpp"

#include "shared_data.hpp"
#include <doctest/doctest.h>

#include "input_error.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>

using namespace orrery;

namespace {

using testing::error_of;

std::string jsonl_error(std::string_view text) {
  return error_of([&] { (void)traces::read_rollouts_jsonl(text, "r.jsonl"); });
}
std::string csv_error(std::string_view text) {
  return error_of([&] { (void)traces::read_rollouts_csv(text, "r.csv"); });
}

// ../shared/data beside the repository; empty (with a message) when absent.
std::string data_dir() {
  const std::string dir = std::string(ORRERY_SOURCE_DIR) + "/../shared/data";
  if (std::filesystem::exists(dir + "/rl-rollout-lengths")) return dir;
  orrery::testing::record_skip(dir + " (rl-rollout-lengths, azure-llm-inference-2023, mooncake-trace) is absent");
  return "";
}

}  // namespace

TEST_CASE("rollout JSONL: read, generated batches round-trip") {
  const auto b = traces::read_rollouts_jsonl(
      "{\"iteration\": 0, \"prompt_tokens\": 312, \"outputs\": [1200, 85, 4410]}\n\n"
      "{\"iteration\": 0, \"prompt\": 9, \"prompt_tokens\": 40, \"outputs\": [7]}\n"
      "{\"iteration\": 1, \"prompt_tokens\": 5, \"outputs\": [1, 2]}\n",
      "r.jsonl");
  REQUIRE(b.size() == 2);
  CHECK(b[0].groups.size() == 2);
  CHECK(b[0].groups[0].outputs == std::vector<std::int64_t>{1200, 85, 4410});
  CHECK(b[0].groups[0].prompt == 0);  // no "prompt": the group's index in the file
  CHECK(b[0].groups[1].prompt == 9);
  CHECK(b[1].groups[0].prompt == 2);
  CHECK(b[1].line == 4);

  // What the generator makes, written and read back, is the same batches.
  const models::RolloutLengthModel m{models::DocLengthModel::lognormal(600, 16'000, 32'768),
                                     models::DocLengthModel::lognormal(300, 2'000, 8'192), 0.5, 2.0, {}};
  const auto gen = models::RolloutGenerator(m, 1).batches(3, 4, 5);
  const auto back = traces::read_rollouts_jsonl(traces::rollouts_to_jsonl(gen), "g.jsonl");
  REQUIRE(back.size() == 3);
  for (std::size_t k = 0; k < 3; ++k) {
    REQUIRE(back[k].groups.size() == 4);
    for (std::size_t i = 0; i < 4; ++i) {
      CHECK(back[k].groups[i].prompt == gen[k].groups[i].prompt);
      CHECK(back[k].groups[i].prompt_tokens == gen[k].groups[i].prompt_tokens);
      CHECK(back[k].groups[i].outputs == gen[k].groups[i].outputs);
    }
  }
}

TEST_CASE("rollout JSONL errors name the file, the line and the field") {
  CHECK(jsonl_error("{\"iteration\": 0, \"prompt_tokens\": 3, \"outputs\": [1]}\n{\"iteration\": 0, \"prompt_tokens\": 3, \"outputs\": [1,]}") ==
        "r.jsonl:line 2, column 52: malformed JSON: syntax error while parsing value - unexpected ']'; expected '[', '{', or a literal");
  CHECK(jsonl_error("{\"iteration\": 0, \"outputs\": [1]}") ==
        "r.jsonl:line 1:/: missing required field \"prompt_tokens\"");
  CHECK(jsonl_error("{\"iteration\": 0, \"prompt_tokens\": 3, \"outputs\": [4, -5]}") ==
        "r.jsonl:line 1:/outputs/1: found a number -5, expected a positive whole number of tokens, at most 1000000000 (longer than any context window)");
  CHECK(jsonl_error("{\"iteration\": 0, \"prompt_tokens\": 3, \"outputs\": [2.5]}") == "r.jsonl:line 1:/outputs/0: found a number 2.5, expected an integer");
  CHECK(jsonl_error("{\"iteration\": 0, \"prompt_tokens\": 3, \"outputs\": []}") ==
        "r.jsonl:line 1:/outputs: found an array of 0 values, expected at least one output length");
  CHECK(jsonl_error("{\"iteration\": 1, \"prompt_tokens\": 3, \"outputs\": [1]}") ==
        "r.jsonl:line 1:/iteration: found iteration 1, expected the first iteration to be 0");
  CHECK(jsonl_error("{\"iteration\": 0, \"prompt_tokens\": 3, \"outputs\": [1]}\n{\"iteration\": 1, \"prompt_tokens\": 3, \"outputs\": [1]}\n"
                    "{\"iteration\": 0, \"prompt_tokens\": 3, \"outputs\": [1]}") ==
        "r.jsonl:line 3:/iteration: found iteration 0 after iteration 1, expected 1 or 2");
  CHECK(jsonl_error("{\"iteration\": 0, \"prompt_tokens\": 3, \"output\": [1]}") ==
        "r.jsonl:line 1:/: missing required field \"outputs\" (is \"output\" a misspelling of it?)");
  CHECK(jsonl_error("\n") == "r.jsonl: found no groups, expected one {\"iteration\", \"prompt_tokens\", \"outputs\"} object per line");
}

TEST_CASE("rollout CSV: one row per sample, errors name the line and the column") {
  const auto b = traces::read_rollouts_csv(
      "iteration,prompt,prompt_tokens,output_tokens\n0,4,100,7\n0,4,100,9\n0,2,50,3\n1,0,8,1\n", "r.csv");
  REQUIRE(b.size() == 2);
  REQUIRE(b[0].groups.size() == 2);
  CHECK(b[0].groups[0].prompt == 4);
  CHECK(b[0].groups[0].prompt_tokens == 100);
  CHECK(b[0].groups[0].outputs == std::vector<std::int64_t>{7, 9});
  CHECK(b[1].groups[0].outputs == std::vector<std::int64_t>{1});
  CHECK(b[1].line == 5);

  CHECK(csv_error("iteration,prompt,prompt_tokens\n0,1,5\n").find("r.csv:line 1: missing column \"output_tokens\"") == 0);
  CHECK(csv_error("iteration,prompt,prompt_tokens,output_tokens\n0,1,5,-3\n") ==
        "r.csv:line 2, column \"output_tokens\": found \"-3\", expected a positive whole number, at most 1000000000");
  CHECK(csv_error("iteration,prompt,prompt_tokens,output_tokens\n0,1,5,3\n0,1,6,3\n") ==
        "r.csv:line 3, column \"prompt_tokens\": found 6, expected 5 as on the prompt's earlier rows");
  CHECK(csv_error("iteration,prompt,prompt_tokens,output_tokens\n0,1,5,3\n0,2,5,3\n0,1,5,3\n") ==
        "r.csv:line 4, column \"prompt\": found prompt 1 again, expected the rows of a prompt together");
  CHECK(csv_error("iteration,prompt,prompt_tokens,output_tokens\n0,1,5,3\n2,1,5,3\n") ==
        "r.csv:line 3, column \"iteration\": found iteration 2 after iteration 0, expected 0 or 1");
  CHECK(error_of([] { (void)traces::load_rollouts("r.txt"); }).find("r.txt: expected a .jsonl") == 0);
}

TEST_CASE("rollout lengths from the real traces in ../shared/data") {
  const std::string dir = data_dir();
  if (dir.empty()) return;
  // Row counts of the files as published (wc: 19,366 rows after the header in conv, 8,819 in code).
  const auto conv = traces::load_output_lengths("azure-conv", dir);
  CHECK(conv.size() == 19'366);
  CHECK(traces::load_output_lengths("azure-code", dir).size() == 8'819);
  const auto mooncake = traces::load_output_lengths("mooncake", dir);
  CHECK(mooncake.size() == 12'031);
  CHECK(*std::min_element(conv.begin(), conv.end()) >= 1);
  CHECK(*std::min_element(mooncake.begin(), mooncake.end()) >= 1);

  // simpleRL-Zoo Figure 1: Mistral-7B's responses grow from ~530 to ~6000 tokens under max 8192.
  const traces::LengthGrowth g = traces::load_length_growth("Mistral-7B-v0.1", dir);
  CHECK(g.start_mean == 530);
  CHECK(g.end_mean == 6000);
  CHECK(g.peak_mean == 6860);
  CHECK(g.max_length == 8192);
  CHECK(g.steps == 100);

  CHECK(error_of([&] { (void)traces::load_length_growth("Mistral-7B-v0.2", dir); })
            .find("simplerl_zoo_response_length_approx.csv: no model \"Mistral-7B-v0.2\"; did you mean") != std::string::npos);
  CHECK(error_of([&] { (void)traces::load_output_lengths("azure-conversation", dir); }) ==
        "<workload>: unknown output-length source \"azure-conversation\"; valid: azure-code, azure-conv, mooncake");
  CHECK(error_of([] { (void)traces::load_output_lengths("mooncake", "/nonexistent"); }) ==
        "/nonexistent/mooncake-trace/conversation_trace.jsonl: cannot open file: No such file or directory");
}
