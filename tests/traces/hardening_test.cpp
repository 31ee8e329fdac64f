// Issue 17 (hardening): bad input that once crashed, hung or was silently accepted, each
// answered with one line naming the file and place, exit 1, nothing written.
#include "input_error.hpp"
#include "sim/error.hpp"
#include "traces/cluster_json.hpp"
#include "traces/cluster_traces.hpp"
#include "traces/csv.hpp"
#include "traces/doclens.hpp"
#include "traces/json_input.hpp"
#include "traces/rl_json.hpp"
#include "traces/rollouts.hpp"
#include "traces/step_json.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

using namespace orrery;
using orrery::testing::error_of;

namespace {

std::string put(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// A cluster scenario over a CSV job trace (columns arrival, gpus, secs) on 2 nodes of 8 A100s.
std::string csv_scenario(const std::string& name, const std::string& trace, const std::string& extra_jobs = "") {
  return put(name, R"({"cluster": {"pools": [{"gpu": "a100", "nodes": 2, "gpus_per_node": 8}]},
 "jobs": {"format": "csv", "path": ")" + trace + R"(", "columns": {"arrival": "arrival", "gpus": "gpus", "duration": "secs"})" + extra_jobs + "}}");
}

traces::JobTrace read_scenario_trace(const std::string& scenario, bool skip = false) {
  const traces::ClusterScenario sc = traces::load_cluster_scenario(scenario);
  return traces::read_job_trace(sc, sc.jobs_path, skip);
}

}  // namespace

TEST_CASE("hardening: a doc-length CSV step before 0 is an error, not a crash") {
  // Once: the reader started its last step at -1 and called back() on an empty vector.
  CHECK(error_of([] { (void)traces::read_doclens_csv("step,doc_len\n-1,100\n", "lens.csv"); }) ==
        "lens.csv:line 2, column \"step\": found \"-1\", expected a whole step number from 0 to 1000000000000");
  CHECK(error_of([] { (void)traces::read_doclens_csv("step,doc_len\n-1.0,100\n", "lens.csv"); }) ==
        "lens.csv:line 2, column \"step\": found \"-1.0\", expected a whole step number from 0 to 1000000000000");
  // Steps that are no step: a half, nan, inf, hexadecimal, trailing text.
  for (const char* step : {"0.5", "nan", "inf", "0x1", "1 s", ""}) {
    CAPTURE(step);
    CHECK(error_of([&] { (void)traces::read_doclens_csv(std::string("step,doc_len\n") + step + ",100\n", "lens.csv"); })
              .starts_with("lens.csv:line 2, column \"step\": found "));
  }
  // Out of order: the message names the real previous step (there is no step -1).
  CHECK(error_of([] { (void)traces::read_doclens_csv("step,doc_len\n5,100\n3,100\n", "lens.csv"); }) ==
        "lens.csv:line 3, column \"step\": found step 3 after step 5, expected steps in order");
  // The maximum length quoted is the one applied.
  CHECK(error_of([] { (void)traces::read_doclens_csv("step,doc_len\n0,2000000000\n", "lens.csv"); }) ==
        "lens.csv:line 2: found document length 2000000000, expected a positive whole number of tokens, at most 1073741824 (longer than any "
        "context window)");
  CHECK(error_of([] { (void)traces::read_doclens_csv("step,doc_len\n0,0x42\n", "lens.csv"); }).starts_with("lens.csv:line 2: found document length 0x42"));
  // Fine: steps 0, 0, 2 are two batches.
  const auto b = traces::read_doclens_csv("step,doc_len\n0,10\n0,20\n2,5\n", "lens.csv");
  REQUIRE(b.size() == 2);
  CHECK(b[0].lengths == std::vector<std::int64_t>{10, 20});
  CHECK(b[1].line == 4);
  // JSONL: a number beyond double's range is a malformed line, not an escaped exception.
  CHECK(error_of([] { (void)traces::read_doclens_jsonl("[1e400]\n", "lens.jsonl"); }).starts_with("lens.jsonl:line 1, column 2: found the number \"1e400\", beyond what a double holds"));
}

TEST_CASE("hardening: a rollout trace whose first iteration is -1 is an error, not a crash") {
  CHECK(error_of([] { (void)traces::read_rollouts_jsonl(R"({"iteration": -1, "prompt_tokens": 10, "outputs": [5]})" "\n", "r.jsonl"); }) ==
        "r.jsonl:line 1:/iteration: found iteration -1, expected the first iteration to be 0");
  CHECK(error_of([] { (void)traces::read_rollouts_csv("iteration,prompt,prompt_tokens,output_tokens\n-1,0,10,5\n", "r.csv"); })
            .starts_with("r.csv:line 2, column \"iteration\": found \"-1\", expected a whole number of 0 or more, at most 1000000000"));
  // The token limit quoted is the one applied.
  CHECK(error_of([] { (void)traces::read_rollouts_jsonl(R"({"iteration": 0, "prompt_tokens": 10, "outputs": [2000000000]})" "\n", "r.jsonl"); }) ==
        "r.jsonl:line 1:/outputs/0: found a number 2000000000, expected a positive whole number of tokens, at most 1000000000 (longer than any "
        "context window)");
}

TEST_CASE("hardening: job-trace times beyond the simulator's clock are errors, not hangs") {
  // Once: arrival 1e17 s hung the event loop (the clock's double could no longer advance).
  put("hang.csv", "arrival,gpus,secs\n0,4,100\n1e17,4,100\n");
  CHECK(error_of([] { (void)read_scenario_trace(csv_scenario("hang.json", "hang.csv")); }) ==
        "hang.csv:line 3:column arrival: found \"1e17\", expected a number of at least 0 and at most 1000000000 seconds (1e9 s is 31.7 years; "
        "simulated time must stay within int64 nanoseconds, 292 years)");
  put("long.csv", "arrival,gpus,secs\n0,4,1e17\n");
  CHECK(error_of([] { (void)read_scenario_trace(csv_scenario("long.json", "long.csv")); }).starts_with("long.csv:line 2:column secs: found \"1e17\""));
  // Tiresias: submit_time 1e18, duration 1e17 (the same limit in every format).
  put("t.csv", "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n0,1,1e18,606,vgg19,164,30\n");
  CHECK(error_of([] { (void)traces::read_tiresias_trace("t.csv", false); }).starts_with("t.csv:line 2:column submit_time: found \"1e18\", expected a number of at least 0 and at most 1000000000 seconds"));
  put("t2.csv", "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n0,1,0,606,vgg19,1e17,30\n");
  CHECK(error_of([] { (void)traces::read_tiresias_trace("t2.csv", false); }).starts_with("t2.csv:line 2:column duration: found \"1e17\""));
  // And in the formats of cluster_traces.hpp.
  put("itp.csv", "job_id,submission_time,duration,num_gpu\na,0,1e17,1\n");
  CHECK(error_of([] { (void)traces::read_itp_trace("itp.csv", false); }).starts_with("itp.csv:line 2:column duration: found \"1e17\", expected a number of at least 0 and at most 1000000000 seconds"));
  put("sia.csv", "name,time,application,num_replicas,batch_size\nx,1e18,cifar10,1,128\n");
  CHECK(error_of([] { (void)traces::read_sia_trace("sia.csv", false); }).starts_with("sia.csv:line 2:column time: found \"1e18\""));
  // Philly: the timestamps may not span more than the limit either.
  put("span.csv", "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66,1,66,a\n2999-10-09 07:01:55,66,1,66,a\n");
  CHECK(error_of([] { (void)traces::read_philly_trace("span.csv", false); }).starts_with("span.csv:line 3:column timestamp: found \"2999-10-09 07:01:55\", "));
  CHECK(traces::read_philly_trace("span.csv", true).skipped == 1);
}

TEST_CASE("hardening: GPU counts and batch sizes out of int range are range errors (no float-to-int overflow)") {
  put("arena.csv", "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,gpu_type\nj,0,500,bert__1.3B,900,1e30,4,a100\n");
  CHECK(error_of([] { (void)traces::read_arena_trace("arena.csv", false); }) ==
        "arena.csv:line 2:column batch_size: found \"1e30\", expected a whole number of at least 1 and at most 100000000 samples per batch (more "
        "than any training batch holds)");
  put("arena2.csv", "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,gpu_type\nj,0,500,bert__1.3B,900,128,1e30,a100\n");
  CHECK(error_of([] { (void)traces::read_arena_trace("arena2.csv", false); }) ==
        "arena2.csv:line 2:column num_gpu: found \"1e30\", expected a whole number of at least 1 and at most 1000000 GPUs (more than any cluster "
        "holds)");
  // Philly num_gpus 1e30 once printed "-2147483648 any GPUs"; 2.5 was accepted (the ITP reader rejects it).
  for (const char* gpus : {"1e30", "2.5", "0x4", "inf"}) {
    CAPTURE(gpus);
    put("pg.csv", std::string("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66,") + gpus + ",66,a\n");
    CHECK(error_of([] { (void)traces::read_philly_trace("pg.csv", false); }) ==
          fmt::format("pg.csv:line 2:column num_gpus: found \"{}\", expected a whole number of at least 1 and at most 1000000 GPUs (more than any "
                      "cluster holds)",
                      gpus));
  }
  // Gavel's job type names its batch size: one beyond int is a bad row too.
  put("g.trace", "LM (batch size 99999999999)\tc\t--steps\t1\t100\t0\t1\n");
  CHECK(error_of([] { (void)traces::read_gavel_trace("g.trace", false); }).starts_with("g.trace:line 1:column job_type: found \"LM (batch size 99999999999)\""));
}

TEST_CASE("hardening: pools of no nodes, too many nodes, or an unknown GPU are blamed on the pool") {
  put("ok.csv", "arrival,gpus,secs\n0,4,100\n");
  const auto scenario = [](const std::string& pools) {
    return put("pools.json", R"({"cluster": {"pools": )" + pools + R"(}, "jobs": {"format": "csv", "path": "ok.csv", "columns": {"arrival": "arrival", "gpus": "gpus", "duration": "secs"}}})");
  };
  CHECK(error_of([&] { (void)traces::load_cluster_scenario(scenario("[]")); }) ==
        "pools.json:/cluster/pools: found an array of 0 values, expected at least one pool {\"gpu\", \"nodes\", \"gpus_per_node\"}");
  CHECK(error_of([&] { (void)traces::load_cluster_scenario(scenario(R"([{"gpu": "a100", "nodes": 10000000000, "gpus_per_node": 8}])")); })
            .starts_with("pools.json:/cluster/pools/0/nodes: found "));
  CHECK(error_of([&] { (void)traces::load_cluster_scenario(scenario(R"([{"gpu": "a100", "nodes": 10000000000, "gpus_per_node": 8}])")); })
            .ends_with("expected 1 to 100000 nodes (more servers than any cluster has)"));
  // Many pools that together hold more GPUs than any cluster.
  std::string many = "[";
  for (int i = 0; i < 11; ++i) many += std::string(i ? ", " : "") + R"({"gpu": "a100", "nodes": 100000, "gpus_per_node": 1})";
  CHECK(error_of([&] { (void)traces::load_cluster_scenario(scenario(many + "]")); }) ==
        "pools.json:/cluster/pools/10/nodes: found 100000 nodes, which make the cluster 1100000 GPUs, expected at most 1000000 GPUs in all (more "
        "than any cluster holds)");
  const std::string z100 = error_of([&] { (void)traces::load_cluster_scenario(scenario(R"([{"gpu": "z100", "nodes": 1, "gpus_per_node": 8}])")); });
  CHECK(z100.starts_with("pools.json:/cluster/pools/0/gpu: unknown GPU \"z100\"; did you mean"));
  CHECK(z100.find("known: a100-40gb, a100-80gb, h100") != std::string::npos);
  CHECK(z100.ends_with("and of the throughput tables only: k80, p100, rtx2080ti, rtx6000"));
  // Types only the throughput tables know are pools too (Gavel's K80).
  CHECK(traces::load_cluster_scenario(scenario(R"([{"gpu": "K80", "nodes": 1, "gpus_per_node": 4}])")).cluster.pools[0].gpu_type == "k80");
}

TEST_CASE("hardening: job-trace fields once silently accepted") {
  // Timestamps: no month 13, no 99:99:99, nothing after the seconds.
  for (const char* ts : {"2017-13-45 99:99:99", "2017-10-09 07:01:55x", "2017-02-30 00:00:00", "2017-10-09 7:01:55", " 2017-10-09 07:01:55"}) {
    CAPTURE(ts);
    put("ts.csv", std::string("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66,1,66,a\n") + ts + ",66,1,66,a\n");
    CHECK(error_of([] { (void)traces::read_philly_trace("ts.csv", false); }) ==
          fmt::format("ts.csv:line 3:column timestamp: found \"{}\", expected YYYY-MM-DD hh:mm:ss", ts));
  }
  put("leap.csv", "timestamp,duration,num_gpus,gpu_time,cluster\n2016-02-29 00:00:00,66,1,66,a\n2016-03-01 00:00:00,66,1,66,a\n");
  CHECK(traces::read_philly_trace("leap.csv", false).jobs[1].arrival_s == 86400);
  // Durations in hexadecimal, or beyond the limit.
  for (const char* d : {"0x42", "1e300", "nan", "-0x1"}) {
    CAPTURE(d);
    put("d.csv", std::string("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,") + d + ",1,66,a\n");
    CHECK(error_of([] { (void)traces::read_philly_trace("d.csv", false); }).starts_with(fmt::format("d.csv:line 2:column duration: found \"{}\"", d)));
  }
  // --skip-bad-rows skips (and counts) a row with the wrong number of fields too.
  put("ragged.csv", "arrival,gpus,secs\n0,4,100\n5,4\n7,2,50,9\n");
  const std::string scenario = csv_scenario("ragged.json", "ragged.csv");
  CHECK(error_of([&] { (void)read_scenario_trace(scenario); }) == "ragged.csv:line 3: found 2 fields, expected 3 (as in the header)");
  const traces::JobTrace t = read_scenario_trace(scenario, true);
  CHECK(t.jobs.size() == 1);
  CHECK(t.skipped == 2);
  put("ragged_philly.csv", "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66,1,66,a\n2017-10-09 07:01:56,66\n");
  CHECK(traces::read_philly_trace("ragged_philly.csv", true).skipped == 1);
  // A UTF-8 byte-order mark before the header (spreadsheets write one).
  put("bom.csv", "\xEF\xBB\xBFtimestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66,1,66,a\n");
  CHECK(traces::read_philly_trace("bom.csv", false).jobs.size() == 1);
  CHECK(traces::parse_csv("\xEF\xBB\xBFk,v\n1,2\n", "t.csv").header[0] == "k");
  put("bom_itp.csv", "\xEF\xBB\xBFjob_id,submission_time,duration,num_gpu\na,0,10,1\n");
  CHECK(traces::read_itp_trace("bom_itp.csv", false).jobs.size() == 1);
}

TEST_CASE("hardening: every job keeps its size unless the trace or the scenario makes it elastic") {
  put("fixed.csv", "arrival,gpus,secs\n0,4,100\n");
  const traces::JobTrace fixed = read_scenario_trace(csv_scenario("fixed.json", "fixed.csv"));
  CHECK_FALSE(fixed.jobs[0].resizable);
  CHECK(fixed.jobs[0].allows(4));
  CHECK_FALSE(fixed.jobs[0].allows(2));
  CHECK_FALSE(fixed.jobs[0].allows(8));
  const traces::JobTrace free = read_scenario_trace(csv_scenario("free.json", "fixed.csv", R"(, "elastic": true)"));
  CHECK(free.jobs[0].resizable);
  CHECK(free.jobs[0].allows(2));
  CHECK(error_of([] { (void)traces::load_cluster_scenario(csv_scenario("bad_elastic.json", "fixed.csv", R"(, "elastic": 1)")); })
            .starts_with("bad_elastic.json:/jobs/elastic: "));
}

TEST_CASE("hardening: scenario numbers with a range") {
  put("ok.csv", "arrival,gpus,secs\n0,4,100\n");
  const auto with = [](const std::string& extra) {
    return put("extra.json", R"({"cluster": {"pools": [{"gpu": "a100", "nodes": 1, "gpus_per_node": 8}]},
      "jobs": {"format": "csv", "path": "ok.csv", "columns": {"arrival": "arrival", "gpus": "gpus", "duration": "secs"}}, )" + extra + "}");
  };
  CHECK(error_of([&] { (void)traces::load_cluster_scenario(with(R"("restart_overhead_s": 1e300)")); }) ==
        "extra.json:/restart_overhead_s: found a number 1e+300, expected a restart overhead of 0 to 86400 s (a day; checkpoint and restore take minutes)");
  CHECK(error_of([&] { (void)traces::load_cluster_scenario(with(R"("throughput": {"source": "step", "seq_len": 1099511627776})")); }) ==
        "extra.json:/throughput/seq_len: found a number 1099511627776, expected a sequence length from 1 to 16777216 tokens (16M tokens: beyond the longest context any model has trained with)");
  CHECK(error_of([&] { (void)traces::load_cluster_scenario(with(R"("fabric": {"nodes_per_leaf": 8, "nic": "1e-300 b/s"})")); })
            .starts_with("extra.json:/fabric/nic: found \"1e-300 b/s\", expected a NIC of 1 Mb/s to 1 Pb/s"));
}

namespace {
// examples/rl/hetero-crossdc.json with `edit` applied (a JSON merge of top-level keys).
std::string rl_scenario(const std::string& name, const nlohmann::json& edit) {
  std::ifstream in(std::string(ORRERY_SOURCE_DIR) + "/examples/rl/hetero-crossdc.json");
  nlohmann::json j = nlohmann::json::parse(in);
  j.merge_patch(edit);
  return put(name, j.dump());
}
}  // namespace

TEST_CASE("hardening: RL scenarios: a cross-datacenter link too slow to finish, unknown output sources, length limits") {
  // Once: "report metric ... is not finite" (an internal error) when the run took forever.
  CHECK(error_of([] { (void)traces::load_rl_scenario(rl_scenario("slow.json", {{"cross_dc", {{"bandwidth", "1e-300 b/s"}}}}), 1); }) ==
        "slow.json:/cross_dc/bandwidth: found \"1e-300 b/s\", expected 1 Mb/s to 1 Pb/s (slower, one weight sync of a 7B model takes more than a "
        "day)");
  CHECK(error_of([] { (void)traces::load_rl_scenario(rl_scenario("far.json", {{"cross_dc", {{"latency", "1 h"}}}}), 1); }) ==
        "far.json:/cross_dc/latency: found \"1 h\", expected at most 1 s (light crosses the Earth in 0.07 s)");
  // An unknown output-length source names the scenario and the field (once "<workload>").
  const std::string src = error_of([] {
    (void)traces::load_rl_scenario(rl_scenario("src.json", {{"rollouts", {{"output", {{"source", "azure-cnov"}, {"p99", nullptr}}}}}}), 1);
  });
  CHECK(src.starts_with("src.json:/rollouts/output/source: unknown output-length source \"azure-cnov\"; did you mean \"azure-conv\"?"));
  // The maximum length quoted is the one applied (once: "expected more than the p99" for a max above it).
  CHECK(error_of([] { (void)traces::load_rl_scenario(rl_scenario("max.json", {{"rollouts", {{"output", {{"max", 2147483648}}}}}}), 1); }) ==
        "max.json:/rollouts/output/max: found a max of 2147483648, expected more than the p99 10000 and at most 1073741824 tokens (longer than any "
        "context window)");
}

TEST_CASE("hardening: a step workload with no lognormal body names the scenario and the workload") {
  std::ifstream in(std::string(ORRERY_SOURCE_DIR) + "/examples/scenarios/qwen3-8b-256k-balance.json");
  nlohmann::json j = nlohmann::json::parse(in);
  j["workload"] = {{"generator", "lognormal_pareto"}, {"median", 644}, {"p99", 262000}, {"max", 262144}};
  const std::string path = put("body.json", j.dump());
  CHECK(error_of([&] { (void)traces::load_step_scenario(path); }) ==
        "body.json:/workload: no lognormal body with a Pareto tail has median 644, p99 262000 and maximum 262144");
}
