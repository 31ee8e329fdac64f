// `orrery compare` on GPU multiplexing scenarios (issue 24: Mosaic/Apollo, MuxTune): the examples
// run, deterministically, with their rankings; bad input is refused with one line naming the file,
// the JSON pointer, what was found and what was expected.
#include "cli_run.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <string>

namespace fs = std::filesystem;
using orrery::testing::Result;
using orrery::testing::run;
using orrery::testing::slurp;
using orrery::testing::write;

namespace {

// Exit 1, one line on stderr that holds `expected`, nothing on stdout (hardening_test.cpp's
// check_refused wants the whole line).
void refused_with(const Result& r, const std::string& expected) {
  CHECK(r.code == 1);
  CHECK_MESSAGE(r.err.find(expected) != std::string::npos, r.err);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.out.empty());
}

double metric(const std::string& report, std::size_t policy, const char* key) {
  return nlohmann::json::parse(slurp(report))["policies"][policy][key].get<double>();
}

const char* kModel = R"({"name": "tiny", "modules": [
  {"name": "vision", "kind": "vision_encoder", "layers": 4, "hidden": 512, "heads": 8, "ffn_hidden": 2048, "mlp": "gelu", "patch": 14},
  {"name": "proj", "kind": "projector", "hidden": 1024, "merge": 4, "ffn_hidden": 2048},
  {"name": "llm", "kind": "llm", "layers": 4, "hidden": 1024, "heads": 8, "ffn_hidden": 4096, "vocab": 32000}],
  "edges": [["vision", "proj"], ["proj", "llm"]]})";

void colocation(const std::string& file, const std::string& extra) {
  write(file, std::string(R"({"colocation": {"model": )") + kModel + R"(, "gpu": "H100", "gpus": 2, "micro_batch": 2,
    "mix": {"samples": 8, "text_only": 0, "images_mean": 1, "video_fraction": 0})" + extra + "}}");
}

void peft(const std::string& file, const std::string& task, const std::string& backbone = "llama3-8b") {
  write(file, R"({"peft": {"backbone": ")" + backbone + R"(", "gpu": "H100", "stages": 2, "tasks": [
    {"name": "a", "rank": 16, "micro_batch": 2, "micro_batches": 2, "lengths": [100, 200, 300, 400]}, )" + task + "]}}");
}

}  // namespace

TEST_CASE("every example multiplexing scenario runs, deterministically, with its ranking") {
  const std::string dir = std::string(ORRERY_SOURCE_DIR) + "/examples/multiplex/";
  for (const char* name : {"omni-small-colocation.json", "lora-tasks-muxtune.json"}) {
    CAPTURE(name);
    REQUIRE(run({"compare", dir + name, "--report", "mux-a.json"}).code == 0);
    REQUIRE(run({"compare", dir + name, "--report", "mux-b.json"}).code == 0);
    CHECK(slurp("mux-a.json") == slurp("mux-b.json"));
  }
  // The first policy is the baseline: temporal and mosaic over one-per-gpu, mosaic over temporal;
  // muxtune over slora and per-task.
  REQUIRE(run({"compare", dir + "omni-small-colocation.json", "--report", "mux-c.json"}).code == 0);
  CHECK(metric("mux-c.json", 1, "speedup") > 1.0);
  CHECK(metric("mux-c.json", 2, "speedup") > metric("mux-c.json", 1, "speedup"));
  REQUIRE(run({"compare", dir + "lora-tasks-muxtune.json", "--report", "mux-p.json"}).code == 0);
  CHECK(metric("mux-p.json", 2, "speedup") > metric("mux-p.json", 1, "speedup"));
  CHECK(metric("mux-p.json", 2, "speedup") > 1.0);
  CHECK(metric("mux-p.json", 2, "memory_reduction") > 1.0);
  // Listed by `orrery policies`.
  const Result listing = run({"policies"});
  CHECK(listing.out.find("GPU colocation policies") != std::string::npos);
  CHECK(listing.out.find("quota_step=0.05 (number)") != std::string::npos);
  CHECK(listing.out.find("Multi-task PEFT policies") != std::string::npos);
}

TEST_CASE("multiplexing scenarios: bad input names the file and place") {
  // Quotas: one above 100%, and two on one GPU summing above it.
  colocation("mux-q1.json", R"(, "placement": [{"module": "vision", "gpu": 0, "sm": 1.5, "memory": 0.1}])");
  refused_with(run({"compare", "mux-q1.json"}),
                "mux-q1.json:/colocation/placement/0/sm: found 1.5 (150%), expected an SM quota above 0 and at most 1 (100%)");
  colocation("mux-q2.json", R"(, "placement": [{"module": "vision", "gpu": 0, "sm": 0.6, "memory": 0.1},
    {"module": "proj", "gpu": 0, "sm": 0.5, "memory": 0.1}, {"module": "llm", "gpu": 1, "sm": 1, "memory": 0.5}])");
  refused_with(run({"compare", "mux-q2.json"}),
                "mux-q2.json:/colocation/placement/1/sm: the SM quotas on GPU 0 sum to 1.1 (110%), expected at most 1 (100%)");
  colocation("mux-q3.json", R"(, "placement": [{"module": "vison", "gpu": 0, "sm": 0.6, "memory": 0.1}])");
  refused_with(run({"compare", "mux-q3.json"}), "mux-q3.json:/colocation/placement/0/module: found \"vison\", no module of tiny has that name");
  colocation("mux-q4.json", R"(, "placement": [{"module": "vision", "gpu": 2, "sm": 0.6, "memory": 0.1}])");
  refused_with(run({"compare", "mux-q4.json"}), "mux-q4.json:/colocation/placement/0/gpu: found GPU 2, expected 0 to 1");
  colocation("mux-q5.json", R"(, "placement": [{"module": "vision", "gpu": 0, "sm": 0, "memory": 0.1}])");
  refused_with(run({"compare", "mux-q5.json"}), "mux-q5.json:/colocation/placement/0/sm: found 0 (0%), expected an SM quota above 0");
  write("mux-q6.json", std::string(R"({"colocation": {"model": )") + kModel + R"(, "gpu": "H100", "gpus": 0}})");
  refused_with(run({"compare", "mux-q6.json"}), "mux-q6.json:/colocation/gpus:");
  colocation("mux-q7.json", R"(, "quota": 1)");
  refused_with(run({"compare", "mux-q7.json"}), "mux-q7.json:/colocation/quota: unknown key \"quota\"");
  // Adapters that do not match the backbone, non-positive sizes.
  peft("mux-p1.json", R"({"name": "b", "rank": 5000, "micro_batch": 1, "micro_batches": 1, "lengths": [10]})");
  refused_with(run({"compare", "mux-p1.json"}), "mux-p1.json:/peft/tasks/1/rank: found rank 5000, expected 1 to llama3-8b's hidden size 4096");
  peft("mux-p2.json", R"({"name": "b", "rank": 8, "targets": ["q_proj"], "micro_batch": 1, "micro_batches": 1, "lengths": [10]})");
  refused_with(run({"compare", "mux-p2.json"}),
                "mux-p2.json:/peft/tasks/1/targets/0: found target \"q_proj\": llama3-8b has no linear layer of that name");
  peft("mux-p3.json", R"({"name": "b", "rank": 8, "targets": [], "micro_batch": 1, "micro_batches": 1, "lengths": [10]})");
  refused_with(run({"compare", "mux-p3.json"}), "mux-p3.json:/peft/tasks/1/lora: targets: found none");
  peft("mux-p4.json", R"({"name": "b", "rank": 8, "micro_batch": 0, "micro_batches": 1, "lengths": [10]})");
  refused_with(run({"compare", "mux-p4.json"}), "mux-p4.json:/peft/tasks/1/micro_batch:");
  peft("mux-p5.json", R"({"name": "b", "rank": 8, "micro_batch": 1, "micro_batches": 1, "lengths": [0]})");
  refused_with(run({"compare", "mux-p5.json"}), "mux-p5.json:/peft/tasks/1/lengths/0:");
  peft("mux-p6.json", R"({"name": "b", "rank": 8, "micro_batch": 1, "micro_batches": 2, "lengths": [10]})");
  refused_with(run({"compare", "mux-p6.json"}), "mux-p6.json:/peft/tasks/1/lengths: found 1 lengths, expected micro_batch x micro_batches = 1 x 2 = 2");
  peft("mux-p7.json", R"({"name": "a", "rank": 8, "micro_batch": 1, "micro_batches": 1, "lengths": [10]})");
  refused_with(run({"compare", "mux-p7.json"}), "mux-p7.json:/peft/tasks/1: found a second task named \"a\"");
  peft("mux-p8.json", R"({"name": "b", "rank": 8, "micro_batch": 1, "micro_batches": 1, "lengths": [10]})", "mixtral-8x7b");
  refused_with(run({"compare", "mux-p8.json"}), "mux-p8.json:/peft/backbone");
  peft("mux-p9.json", R"({"name": "b", "rank": 8, "micro_batch": 1, "micro_batches": 1, "lengths": [10]})");
  refused_with(run({"compare", "mux-p9.json", "--policies", "muxtune:chunk=0"}), "muxtune/chunk: found 0, expected 1 to 65536 tokens");
  refused_with(run({"compare", "mux-p9.json", "--policies", "mosaic"}), "unknown multi-task PEFT policy \"mosaic\"");
}
