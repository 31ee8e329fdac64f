// Issue 17 (hardening), command-line level: sizes, ranges and spec strings of topologies,
// collectives, step scenarios, GPU catalogs and sweeps. Each bad input is one line on stderr
// naming the file and place (or `<command line>` and the option), exit 1, nothing written.
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

// The one line an input error prints, without the "orrery: error: " prefix; fails the test
// unless the run exited 1 with exactly one line on stderr and nothing on stdout.
std::string one_error(const std::vector<std::string>& args) {
  const Result r = run(args);
  CHECK_MESSAGE(r.code == 1, r.err);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.out.empty());
  const std::string prefix = "orrery: error: ";
  REQUIRE_MESSAGE(r.err.starts_with(prefix), r.err);
  return r.err.substr(prefix.size(), r.err.size() - prefix.size() - 1);
}

std::string scenario(const std::string& gpu, const std::string& topology, const std::string& plan) {
  return R"({"model": "llama3-8b", "cluster": {"gpu": ")" + gpu + R"(", "topology": ")" + topology + R"("}, "plan": )" + plan + "}";
}

// The error of `orrery step` on a scenario written to `name`, with and without --estimate.
std::string step_error(const std::string& name, const std::string& json, std::vector<std::string> extra = {}) {
  write(name, json);
  fs::remove(name + ".report.json");
  std::vector<std::string> args = {"step", name, "--report", name + ".report.json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const std::string emulated = one_error(args);
  args.push_back("--estimate");
  CHECK(one_error(args) == emulated);
  CHECK_FALSE(fs::exists(name + ".report.json"));
  return emulated;
}

}  // namespace

// Sizes without a limit once ended in "out of memory" (exit 2) after seconds or minutes.
TEST_CASE("hardening: topology and collective sizes have ranges with reasons") {
  for (const char* f : {"saved.json", "hard-coll.json"}) fs::remove(f);
  CHECK(one_error({"topology", "--topology", "dgx-h100:nodes=1000000000"})
            .starts_with("<command line>:topology \"dgx-h100:nodes=1000000000\" parameter nodes: found 1000000000, expected a "
                         "positive integer of at most 131072"));
  CHECK(one_error({"topology", "--topology", "dgx-h100:nodes=2,planes=1000000"})
            .starts_with("<command line>:topology \"dgx-h100:nodes=2,planes=1000000\" parameter planes: found 1000000"));
  CHECK(one_error({"topology", "--topology", "dgx-h100:gpus_per_node=1000000"})
            .starts_with("<command line>:topology \"dgx-h100:gpus_per_node=1000000\" parameter gpus_per_node: found 1000000"));
  CHECK(one_error({"topology", "--topology", "dgx-h100:nodes=2,oversubscription=inf"}) ==
        "<command line>:topology \"dgx-h100:nodes=2,oversubscription=inf\" parameter oversubscription: found \"inf\", expected a "
        "finite number");
  CHECK(one_error({"topology", "--topology", "dgx-h100:nodes=1,nodes=2"}) ==
        "<command line>:topology \"dgx-h100:nodes=1,nodes=2\" parameter nodes: given twice; expected each parameter once");
  CHECK(one_error({"topology", "--topology", "dgx-h100:nodes=0", "--save", "saved.json"})
            .starts_with("<command line>:topology \"dgx-h100:nodes=0\" parameter nodes: found 0"));
  CHECK_FALSE(fs::exists("saved.json"));

  const std::vector<std::string> coll = {"collective", "--topology", "dgx-h100:nodes=1", "--op", "all-reduce", "--size", "1MiB"};
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = coll;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  CHECK(one_error(with({"--chunks", "1000000000"})) ==
        "<command line>:--chunks: found 1000000000, expected 1 to 1024 (finer pieces only multiply the flows)");
  CHECK(one_error(with({"--channels", "1000000"})) ==
        "<command line>:--channels: found 1000000, expected 1 to 64 (NCCL runs at most 64 channels; leave it out for NCCL's own)");
  CHECK(one_error(with({"--channels", "0"})) ==
        "<command line>:--channels: found 0, expected 1 to 64 (NCCL runs at most 64 channels; leave it out for NCCL's own)");
  CHECK(one_error(with({"--ranks", "-1"})) == "<command line>:--ranks: found -1, expected 0 (all GPUs) or 2 to 8 (the GPUs of the topology)");
  // Each in range, together beyond the plan limit: 1,024 GPUs x 64 channels x 1024 chunks.
  CHECK(one_error({"collective", "--topology", "dgx-h100:nodes=128", "--op", "all-reduce", "--size", "1GiB", "--channels", "64", "--chunks",
                   "1024", "--report", "hard-coll.json"})
            .starts_with("<command line>:--chunks: 1024 ranks x 64 channels x 1024 chunks make a plan of more than 16777216 transfers"));
  CHECK_FALSE(fs::exists("hard-coll.json"));
}

// A 1e30-byte message once overflowed the clock: an internal error (exit 2).
TEST_CASE("hardening: a collective size beyond 1 PiB is an input error") {
  fs::remove("big.json");
  CHECK(one_error({"collective", "--topology", "dgx-h100:nodes=1", "--op", "all-reduce", "--size", "1e30 B", "--report", "big.json"}) ==
        "<command line>:--size: found \"1e30 B\", expected at most 1 PiB (over 3,000 times the largest GPU memory)");
  CHECK_FALSE(fs::exists("big.json"));
  const Result ok = run({"collective", "--topology", "dgx-h100:nodes=1", "--op", "all-reduce", "--size", "1 PiB"});
  CHECK_MESSAGE(ok.code == 0, ok.err);
}

// Topology files: a link of 1e-9 b/s once made transfers outlast the clock (exit 2).
TEST_CASE("hardening: topology file links are within the range of real links") {
  const auto fabric = [](const std::string& bandwidth, const std::string& latency) {
    return R"({"nodes": [{"name": "a", "kind": "gpu", "server": 0}, {"name": "b", "kind": "gpu", "server": 1}],
               "links": [{"between": ["a", "b"], "bandwidth": ")" +
           bandwidth + R"(", "latency": ")" + latency + R"(", "kind": "network"}]})";
  };
  write("slow-link.json", fabric("1e-9 b/s", "1 us"));
  CHECK(one_error({"collective", "--topology", "slow-link.json", "--op", "send-recv", "--algo", "direct", "--size", "1GiB"}) ==
        "slow-link.json:/links/0/bandwidth: found \"1e-9 b/s\", expected a bandwidth from 1 Gb/s to 1 PB/s (slower links carry no "
        "training traffic; faster ones are not built)");
  write("far-link.json", fabric("100 Gb/s", "200 h"));
  CHECK(one_error({"topology", "--topology", "far-link.json"}) ==
        "far-link.json:/links/0/latency: found \"200 h\", expected a latency of at most 1 s (light crosses the Earth in 70 ms)");
  write("ok-link.json", fabric("1 Gb/s", "1 us"));
  const Result ok = run({"collective", "--topology", "ok-link.json", "--op", "send-recv", "--algo", "direct", "--size", "1GiB"});
  CHECK_MESSAGE(ok.code == 0, ok.err);
}

// Scenario topologies went through a looser parser than `orrery topology`: `nodes=1;x`,
// `nodes=1e0`, `nodes=1,xyz`, a repeated key, a NIC of 0 Gb/s passed; errors were blamed on
// `<command line>` or on /plan. Now one parser, blamed on the file and the spec's pointer.
TEST_CASE("hardening: scenario topology specs are checked as the topology command checks them") {
  const std::string plan = R"({"tp": 8, "global_batch": 16, "seq_len": 2048})";
  CHECK(step_error("spec-semi.json", scenario("H100", "dgx-h100:nodes=1;x", plan)) ==
        "spec-semi.json:/cluster/topology: topology \"dgx-h100:nodes=1;x\" parameter nodes: found \"1;x\", expected an integer "
        "(digits only)");
  CHECK(step_error("spec-exp.json", scenario("H100", "dgx-h100:nodes=1e0", plan)) ==
        "spec-exp.json:/cluster/topology: topology \"dgx-h100:nodes=1e0\" parameter nodes: found \"1e0\", expected an integer "
        "(digits only)");
  CHECK(step_error("spec-item.json", scenario("H100", "dgx-h100:nodes=1,xyz", plan)) ==
        "spec-item.json:/cluster/topology: topology \"dgx-h100:nodes=1,xyz\": found \"xyz\", expected key=value (e.g. "
        "\"dgx-h100:nodes=4,nic=400Gb/s\")");
  CHECK(step_error("spec-twice.json", scenario("H100", "dgx-h100:nodes=1,nodes=2", plan)) ==
        "spec-twice.json:/cluster/topology: topology \"dgx-h100:nodes=1,nodes=2\" parameter nodes: given twice; expected each "
        "parameter once");
  CHECK(step_error("spec-zero.json", scenario("H100", "dgx-h100:nodes=0", plan))
            .starts_with("spec-zero.json:/cluster/topology: topology \"dgx-h100:nodes=0\" parameter nodes: found 0, expected a positive "
                         "integer of at most 131072"));
  CHECK(step_error("spec-nic.json", scenario("H100", "dgx-h100:nodes=1,nic=0Gb/s", plan)) ==
        "spec-nic.json:/cluster/topology: topology \"dgx-h100:nodes=1,nic=0Gb/s\" parameter nic: bandwidth must be positive, found "
        "\"0Gb/s\"");
  CHECK(step_error("spec-nvlink.json", scenario("H100", "dgx-h100:nodes=1,nvlink=0GB/s", plan))
            .starts_with("spec-nvlink.json:/cluster/topology: topology \"dgx-h100:nodes=1,nvlink=0GB/s\" parameter nvlink: bandwidth "
                         "must be positive"));
  CHECK(step_error("spec-inf.json", scenario("H100", "dgx-h100:nodes=1,oversubscription=inf", plan))
            .starts_with("spec-inf.json:/cluster/topology: topology \"dgx-h100:nodes=1,oversubscription=inf\" parameter oversubscription"));
  // The plan command reads the same cluster object.
  write("plan-spec-bad.json", R"({"model": "llama3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=2,x"}, "global_batch": 16})");
  CHECK(one_error({"plan", "plan-spec-bad.json"}) ==
        "plan-spec-bad.json:/cluster/topology: topology \"dgx-h100:nodes=2,x\": found \"x\", expected key=value (e.g. "
        "\"dgx-h100:nodes=4,nic=400Gb/s\")");
}

// A B200 costed on a DGX H100 fabric was silently half of each.
TEST_CASE("hardening: a scenario GPU must be the GPU its topology is built of") {
  const std::string plan = R"({"tp": 8, "global_batch": 16, "seq_len": 2048})";
  CHECK(step_error("gpu-mismatch.json", scenario("B200", "dgx-h100:nodes=1", plan)) ==
        "gpu-mismatch.json:/cluster/gpu: found \"B200\", but topology \"dgx-h100:nodes=1\" is built of h100 GPUs; expected a h100 GPU "
        "(or a topology of B200: e.g. \"dgx-b200:nodes=1\")");
  CHECK(step_error("gpu-nvl.json", scenario("H100", "nvl72:domains=1", R"({"tp": 8, "global_batch": 72, "seq_len": 2048})"))
            .starts_with("gpu-nvl.json:/cluster/gpu: found \"H100\", but topology \"nvl72:domains=1\" is built of gb200 GPUs"));
  // Aliases and variants of the same GPU are the same GPU; a GPU no builder wires takes any.
  write("gpu-alias.json", scenario("h100-sxm", "dgx-h100:nodes=1", plan));
  const Result alias = run({"step", "gpu-alias.json", "--estimate"});
  CHECK_MESSAGE(alias.code == 0, alias.err);
  write("gpu-a100.json", scenario("A100-80GB", "dgx-a100:nodes=1", plan));
  const Result a100 = run({"step", "gpu-a100.json", "--estimate"});
  CHECK_MESSAGE(a100.code == 0, a100.err);
}

// seq_len 2^40 once overflowed the clock: an internal error, with and without --estimate.
TEST_CASE("hardening: sequence lengths are bounded; times beyond the clock name the plan") {
  CHECK(step_error("long-seq.json", scenario("H100", "dgx-h100:nodes=1", R"({"tp": 8, "global_batch": 16, "seq_len": 1099511627776})")) ==
        "long-seq.json:/plan/seq_len: found a number 1099511627776, expected a length from 1 to 16777216 tokens (16M tokens: beyond "
        "the longest context any model has trained with)");
  CHECK(step_error("long-doc.json", scenario("H100", "dgx-h100:nodes=1",
                                             R"({"tp": 8, "global_batch": 16, "seq_len": 2048, "documents": [1099511627776]})"))
            .starts_with("long-doc.json:/plan/documents/0: found a number 1099511627776, expected a length from 1 to 16777216 tokens"));
  // Each input in range, together past 292 years: 2^18 sequences of 2^24 tokens in one micro-batch.
  write("huge-step.json", scenario("H100", "dgx-h100:nodes=1", R"({"tp": 8, "micro_batch": 262144, "global_batch": 262144, "seq_len": 16777216})"));
  fs::remove("huge-report.json");
  for (const bool estimate : {false, true}) {
    std::vector<std::string> args = {"step", "huge-step.json", "--report", "huge-report.json"};
    if (estimate) args.push_back("--estimate");
    const std::string huge = one_error(args);
    CHECK(huge.starts_with("huge-step.json:/plan: llama3-8b with seq_len 16777216, micro_batch 262144 and global_batch 262144 on H100: "));
    CHECK(huge.find("passes the clock's range of 292 years; expected a shorter seq_len, a smaller batch or a faster GPU") != std::string::npos);
    CHECK_FALSE(fs::exists("huge-report.json"));
  }
}

// A GPU of 1e-300 FLOP/s or 1e-300 B/s once made every kernel outlast the clock (exit 2).
TEST_CASE("hardening: GPU catalog figures are within physical bounds; a GPU is defined once") {
  const std::string plan = R"({"tp": 8, "global_batch": 16, "seq_len": 2048})";
  write("hw-scenario.json", scenario("H100", "dgx-h100:nodes=1", plan));
  write("slow-flops.json", R"({"gpus": [{"name": "H100", "peak_flops": {"bf16": "1e-300 FLOP/s"}}]})");
  CHECK(step_error("hw-scenario.json", slurp("hw-scenario.json"), {"--gpus", "slow-flops.json"}) ==
        "slow-flops.json:/gpus/0/peak_flops/bf16: found a string \"1e-300 FLOP/s\", expected a FLOP rate from 1 TFLOP/s to 1 EFLOP/s "
        "(the catalog's slowest, a T4, does 8.1 TFLOP/s fp32)");
  write("slow-hbm.json", R"({"gpus": [{"name": "H100", "hbm_bandwidth": "1e-300 B/s"}]})");
  CHECK(step_error("hw-scenario.json", slurp("hw-scenario.json"), {"--gpus", "slow-hbm.json"}) ==
        "slow-hbm.json:/gpus/0/hbm_bandwidth: found a string \"1e-300 B/s\", expected a bandwidth from 10 GB/s to 1 PB/s (the "
        "catalog's slowest, a T4, reads 320 GB/s)");
  write("twice.json", R"({"gpus": [{"name": "X1", "base": "H100", "hbm": "80 GB"}, {"name": "x1", "base": "H100", "hbm": "40 GB"}]})");
  CHECK(one_error({"gpus", "--gpus", "twice.json"}) ==
        "twice.json:/gpus/1/name: GPU \"x1\" is defined twice, first at /gpus/0; expected each GPU once");
}

// A point past the clock, or with a bad spec, is an invalid row with its reason; the sweep
// itself runs to the end (it once exited 2 on such a point).
TEST_CASE("hardening: a sweep point past the clock is an invalid row") {
  write("sweep-clock.json", R"json({
    "command": "step",
    "base": {"model": "llama3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=1"},
             "plan": {"tp": 8, "micro_batch": 1, "global_batch": 8, "seq_len": 2048, "schedule": "1f1b", "recompute": "none"}},
    "axes": [{"name": "point", "pointers": ["/plan/micro_batch", "/plan/global_batch", "/plan/seq_len", "/cluster/topology"],
              "values": [[1, 8, 2048, "dgx-h100:nodes=1"], [262144, 262144, 16777216, "dgx-h100:nodes=1"],
                         [1, 8, 1099511627776, "dgx-h100:nodes=1"], [1, 8, 2048, "dgx-h100:nodes=1,nodes=1"]]}],
    "objective": {"metric": "tokens_per_s", "goal": "max"}
  })json");
  const Result r = run({"sweep", "sweep-clock.json", "-o", "sweep-clock-out.json", "--jobs", "1"});
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const nlohmann::json out = nlohmann::json::parse(slurp("sweep-clock-out.json"));
  const nlohmann::json& rows = out.at("rows");
  CHECK(r.out.find("1 ok, 0 out of memory, 3 invalid, 0 internal errors") != std::string::npos);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0]["status"] == "ok");
  CHECK(rows[1]["status"] == "invalid");
  CHECK(rows[1]["reason"].get<std::string>().find(":/plan: llama3-8b with seq_len 16777216") != std::string::npos);
  CHECK(rows[1]["reason"].get<std::string>().find("passes the clock's range of 292 years") != std::string::npos);
  CHECK(rows[2]["status"] == "invalid");
  CHECK(rows[2]["reason"].get<std::string>().find(":/plan/seq_len: found a number 1099511627776") != std::string::npos);
  CHECK(rows[3]["status"] == "invalid");
  CHECK(rows[3]["reason"].get<std::string>().find(":/cluster/topology: topology \"dgx-h100:nodes=1,nodes=1\" parameter nodes: given twice") !=
        std::string::npos);
}

// A cluster's step-emulator throughput with seq_len 2^40 overflowed the clock (exit 2).
TEST_CASE("hardening: a cluster scenario's step seq_len is bounded") {
  write("cl-jobs.csv", "name,submit,n,secs\na,0,8,3600\n");
  write("cl-long.json", R"({"cluster": {"pools": [{"gpu": "h100", "nodes": 1, "gpus_per_node": 8}]},
      "jobs": {"format": "csv", "path": "cl-jobs.csv", "columns": {"arrival": "submit", "gpus": "n", "duration": "secs", "id": "name"}},
      "throughput": {"source": "step", "model": "llama3-8b", "global_batch": 64, "seq_len": 1099511627776, "reference_gpu": "h100"}})");
  fs::remove("cl-report.json");
  CHECK(one_error({"cluster", "cl-long.json", "--report", "cl-report.json"}) ==
        "cl-long.json:/throughput/seq_len: found a number 1099511627776, expected a sequence length from 1 to 16777216 tokens (16M "
        "tokens: beyond the longest context any model has trained with)");
  CHECK_FALSE(fs::exists("cl-report.json"));
}

// "vp": 2 with a schedule that has no virtual stages was blamed on "<scenario>", not the file.
TEST_CASE("hardening: schedule errors found when the step runs name the scenario file") {
  const std::string err = step_error("vp-1f1b.json", R"({"model": "llama3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=1"},
      "plan": {"pp": 2, "vp": 2, "tp": 4, "global_batch": 16, "seq_len": 2048, "schedule": "1f1b"}})");
  CHECK(err.starts_with("vp-1f1b.json:/plan/schedule: "));
}

// A file name with a newline printed two lines.
TEST_CASE("hardening: a file name with a newline is escaped on its one line") {
  CHECK(one_error({"step", "no\nsuch.json"}).starts_with("no\\x0asuch.json"));
}

// A duplicate module name was reported as a dangling edge (the edge found the first module, the
// second fed nothing).
TEST_CASE("hardening: a duplicate module name is named as such") {
  const std::string vit = R"({"name": "vit", "kind": "vision_encoder", "layers": 4, "hidden": 256, "heads": 4, "ffn_hidden": 1024, "mlp": "gelu", "patch": 14})";
  const std::string proj = R"({"name": "vit", "kind": "projector", "hidden": 512, "merge": 4})";
  const std::string llm = R"({"name": "lm", "kind": "llm", "layers": 4, "hidden": 512, "heads": 8, "ffn_hidden": 2048, "vocab": 32000})";
  write("mm-twice.json", R"({"multimodal": {"model": {"name": "tiny", "modules": [)" + vit + ", " + proj + ", " + llm +
                             R"(], "edges": [["vit", "vit"], ["vit", "lm"]]}, "gpu": "H100", "pp": 2},
      "workload": {"mix": {"samples": 16, "text_only": 0.3, "images_mean": 1.5, "video_fraction": 0.1, "frames_p99": 64, "frames_max": 96}, "seed": 3}})");
  CHECK(one_error({"compare", "mm-twice.json", "--steps", "2"}) ==
        "mm-twice.json:/multimodal/model/modules/1/name: duplicate module name \"vit\", first used at /multimodal/model/modules/0; "
        "expected each module named once");
}

// A frame-count p99 too close to its maximum has no distribution: once "<workload>: no lognormal
// body ..." from the first batch drawn, without the file or the field.
TEST_CASE("hardening: a multimodal mix with no frame distribution names the file and the field") {
  write("mm-frames.json", R"({"multimodal": {"model": "qwen2-vl-7b", "gpu": "H100", "tp": 2, "pp": 2, "dp": 1},
      "workload": {"mix": {"samples": 16, "video_fraction": 0.2, "frames_p99": 48, "frames_max": 64}, "seed": 3}})");
  CHECK(one_error({"compare", "mm-frames.json", "--steps", "2"}) ==
        "mm-frames.json:/workload/mix/frames_p99: no lognormal body with a Pareto tail has median 16, p99 48 and maximum 64; expected a "
        "p99 further below frames_max, or a smaller frames_median");
}

// A 20,000-task cycle once printed every task on one line (a 100k-task cycle: 1.2 MB).
TEST_CASE("hardening: a long dependency cycle is cut with a count") {
  constexpr int kTasks = 20000;
  std::string graph = R"({"nodes": [)";
  for (int i = 0; i < kTasks; ++i) {
    graph += (i ? "," : "") + std::string(R"({"id": "t)") + std::to_string(i) + R"(", "kind": "delay", "duration": "1 us", "deps": ["t)" +
            std::to_string((i + kTasks - 1) % kTasks) + R"("]})";
  }
  graph += "]}";
  write("long-cycle.json", graph);
  fs::remove("cycle-report.json");
  const std::string err = one_error({"replay", "long-cycle.json", "--report", "cycle-report.json"});
  CHECK(err.starts_with("long-cycle.json:/nodes/"));
  CHECK(err.find("dependency cycle of 20000 tasks: ") != std::string::npos);
  CHECK(err.find(" -> ... (19,990 more tasks) -> ") != std::string::npos);
  CHECK(err.size() < 1000);
  CHECK_FALSE(fs::exists("cycle-report.json"));
}

// A 1 MB unknown key was printed twice in full (a 10 MB one: 20 MB of stderr).
TEST_CASE("hardening: a huge unknown key is quoted in part, with a count") {
  const std::string key(1'000'000, 'k');
  write("huge-key.json", R"({"nodes": [], "links": [], ")" + key + R"(": 1})");
  const std::string err = one_error({"topology", "--topology", "huge-key.json"});
  CHECK(err.starts_with("huge-key.json:/"));
  CHECK(err.find("(and 999,800 more bytes)") != std::string::npos);
  CHECK(err.size() < 5000);
}

// cluster/contention: a value outside its two, and fabric where only the closed form runs (the
// estimate and the plan search cost each group alone), are named errors, never a silent default.
TEST_CASE("hardening: fabric contention is asked for where it runs") {
  const std::string plan = R"({"tp": 8, "global_batch": 16, "seq_len": 2048})";
  const auto with = [&](const std::string& contention) {
    return R"({"model": "llama3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=1", "contention": ")" + contention +
           R"("}, "plan": )" + plan + "}";
  };
  CHECK(step_error("contention-bad.json", with("shared")) ==
        "contention-bad.json:/cluster/contention: found \"shared\", expected isolated (each group's collectives alone on the smallest "
        "fabric that holds it) or fabric (every group at once on the whole fabric)");
  write("contention-estimate.json", with("fabric"));
  CHECK(one_error({"step", "contention-estimate.json", "--estimate"}) ==
        "contention-estimate.json:/cluster/contention: found \"fabric\", but the closed-form estimate costs each group's collectives alone; "
        "drop --estimate to simulate every group at once on the whole fabric, or set \"isolated\"");
  const Result emulated = run({"step", "contention-estimate.json"});
  CHECK_MESSAGE(emulated.code == 0, emulated.err);
  CHECK(emulated.out.find("every group's collectives at once on the whole fabric") != std::string::npos);
  write("contention-plan.json",
        R"({"model": "llama3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=2", "contention": "fabric"}, "global_batch": 16})");
  CHECK(one_error({"plan", "contention-plan.json"}).starts_with(
      "contention-plan.json:/cluster/contention: found \"fabric\", but the plan search ranks plans by the closed-form estimate"));
}
