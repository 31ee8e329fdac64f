// Issue 17 (hardening), end to end for job, doc-length and rollout traces: bad input that once
// crashed, hung or was silently accepted exits 1 with one line naming the file and place, and
// writes nothing.
#include "cli_run.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;

using orrery::testing::Result;
using orrery::testing::run;
using orrery::testing::slurp;
using orrery::testing::write;

namespace {

// One line on stderr, "orrery: error: " and then `prefix`, exit 1, and no `report` written.
void check_input_error(const Result& r, const std::string& prefix, const std::string& report = "") {
  INFO(r.err);
  CHECK(r.code == 1);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.starts_with("orrery: error: " + prefix));
  if (!report.empty()) CHECK_FALSE(fs::exists(report));
}

std::string cluster_json(const std::string& pools, const std::string& trace, const std::string& extra_jobs = "") {
  return R"({"cluster": {"pools": )" + pools + R"(}, "jobs": {"format": "csv", "path": ")" + trace +
         R"(", "columns": {"arrival": "arrival", "gpus": "gpus", "duration": "secs"})" + extra_jobs + "}}";
}

nlohmann::json example(const std::string& relative) {
  std::ifstream in(std::string(ORRERY_SOURCE_DIR) + "/examples/" + relative);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("hardening traces: a doc-length step of -1 in a step scenario's workload trace") {
  nlohmann::json s = example("scenarios/qwen3-8b-256k-balance.json");
  s["workload"] = {{"trace", "hl-lens.csv"}};
  write("hl-step.json", s.dump());
  write("hl-lens.csv", "step,doc_len\n-1,100\n");
  fs::remove("hl-report.json");
  check_input_error(run({"compare", "hl-step.json", "--steps", "1", "--report", "hl-report.json"}),
                    "hl-lens.csv:line 2, column \"step\": found \"-1\", expected a whole step number", "hl-report.json");
}

TEST_CASE("hardening traces: a rollout iteration of -1 in an RL scenario's trace") {
  nlohmann::json s = example("rl/hetero-crossdc.json");
  s["rollouts"] = {{"trace", "hl-rollouts.jsonl"}};
  write("hl-rl.json", s.dump());
  write("hl-rollouts.jsonl", R"({"iteration": -1, "prompt_tokens": 10, "outputs": [5]})" "\n");
  fs::remove("hl-report.json");
  check_input_error(run({"compare", "hl-rl.json", "--iterations", "1", "--report", "hl-report.json"}),
                    "hl-rollouts.jsonl:line 1:/iteration: found iteration -1, expected the first iteration to be 0", "hl-report.json");
}

TEST_CASE("hardening traces: a cross-datacenter link of 1e-300 b/s") {
  nlohmann::json s = example("rl/hetero-crossdc.json");
  s["cross_dc"]["bandwidth"] = "1e-300 b/s";
  write("hl-slow.json", s.dump());
  fs::remove("hl-report.json");
  check_input_error(run({"compare", "hl-slow.json", "--iterations", "1", "--report", "hl-report.json"}),
                    "hl-slow.json:/cross_dc/bandwidth: found \"1e-300 b/s\", expected 1 Mb/s to 1 Pb/s", "hl-report.json");
}

TEST_CASE("hardening traces: job times beyond the clock, pools of 1e10 nodes or none, under cluster and compare") {
  write("hl-late.csv", "arrival,gpus,secs\n0,4,100\n1e17,4,100\n");
  write("hl-late.json", cluster_json(R"([{"gpu": "a100", "nodes": 2, "gpus_per_node": 8}])", "hl-late.csv"));
  fs::remove("hl-report.json");
  for (const std::string policy : {"fifo", "tiresias"}) {
    CAPTURE(policy);
    check_input_error(run({"cluster", "hl-late.json", "--policy", policy, "--report", "hl-report.json"}),
                      "hl-late.csv:line 3:column arrival: found \"1e17\", expected a number of at least 0 and at most 1000000000 seconds",
                      "hl-report.json");
  }
  write("hl-ok.csv", "arrival,gpus,secs\n0,4,100\n");
  write("hl-huge.json", cluster_json(R"([{"gpu": "a100", "nodes": 10000000000, "gpus_per_node": 8}])", "hl-ok.csv"));
  check_input_error(run({"cluster", "hl-huge.json", "--report", "hl-report.json"}), "hl-huge.json:/cluster/pools/0/nodes: found ", "hl-report.json");
  write("hl-none.json", cluster_json("[]", "hl-ok.csv"));
  check_input_error(run({"cluster", "hl-none.json", "--report", "hl-report.json"}), "hl-none.json:/cluster/pools: found an array of 0 values", "hl-report.json");
  check_input_error(run({"compare", "hl-none.json", "--policies", "fifo", "--report", "hl-report.json"}), "hl-none.json:/cluster/pools: found an array of 0 values",
                    "hl-report.json");
  write("hl-z100.json", cluster_json(R"([{"gpu": "z100", "nodes": 1, "gpus_per_node": 8}])", "hl-ok.csv"));
  check_input_error(run({"cluster", "hl-z100.json"}), "hl-z100.json:/cluster/pools/0/gpu: unknown GPU \"z100\"");
}

TEST_CASE("hardening traces: --skip-bad-rows skips a row with the wrong field count, and a BOM is no part of the header") {
  write("hl-ragged.csv", "\xEF\xBB\xBF" "arrival,gpus,secs\n0,4,100\n5,4\n");
  write("hl-ragged.json", cluster_json(R"([{"gpu": "a100", "nodes": 1, "gpus_per_node": 8}])", "hl-ragged.csv"));
  check_input_error(run({"cluster", "hl-ragged.json"}), "hl-ragged.csv:line 3: found 2 fields, expected 3 (as in the header)");
  const Result r = run({"cluster", "hl-ragged.json", "--skip-bad-rows", "--report", "hl-ragged-report.json"});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("(1 bad rows skipped)") != std::string::npos);
  CHECK(nlohmann::json::parse(slurp("hl-ragged-report.json"))["skipped_rows"] == 1);
}

TEST_CASE("hardening traces: Arena keeps a non-elastic 512-GPU job at 512 GPUs unless the scenario says \"elastic\"") {
  // A user's CSV without elasticity columns: B holds one GPU of the 512 when A (512 GPUs, a
  // day) arrives. Once Arena shrank A to 16 GPUs, and its day became 22.6 days.
  write("hl-big.csv", "arrival,gpus,secs\n0,1,3600\n10,512,86400\n");
  const std::string pools = R"([{"gpu": "a100", "nodes": 64, "gpus_per_node": 8}])";
  write("hl-big.json", cluster_json(pools, "hl-big.csv"));
  REQUIRE(run({"cluster", "hl-big.json", "--policy", "arena", "--jobs-csv", "hl-big-jobs.csv"}).code == 0);
  const std::string jobs = slurp("hl-big-jobs.csv");
  // job,arrival_s,start_s,end_s,jct_s,queue_s,gpus,end_gpus,...: A waits for B, then runs a day.
  CHECK(jobs.find("line-3,10,3600,90000,89990,3590,512,512,a100,64,0") != std::string::npos);
  // With "elastic": true the policy may resize it (Arena's grid sizes).
  write("hl-big-elastic.json", cluster_json(pools, "hl-big.csv", R"(, "elastic": true)"));
  REQUIRE(run({"cluster", "hl-big-elastic.json", "--policy", "arena", "--jobs-csv", "hl-big-jobs-elastic.csv"}).code == 0);
  CHECK(slurp("hl-big-jobs-elastic.csv").find(",512,512,") == std::string::npos);
}
