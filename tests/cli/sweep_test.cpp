// `orrery sweep`: designs, rows for invalid points, thread-count independence, resume, plan errors.
#include "studies/sweep.hpp"
#include "cli_run.hpp"
#include "input_error.hpp"
#include "approx.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

namespace fs = std::filesystem;
using nlohmann::json;
using orrery::testing::error_of;
using orrery::testing::read_json;
using orrery::testing::Result;
using orrery::testing::run;
using orrery::testing::slurp;
using orrery::testing::write;

namespace {

// Llama 3 8B on one DGX H100; the axes vary TP (3 does not divide the heads) and PP.
const char* kGridPlan = R"json({
  "command": "step",
  "base": {"model": "llama3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=1"},
           "plan": {"tp": 1, "pp": 1, "micro_batch": 1, "global_batch": 16, "seq_len": 2048, "schedule": "1f1b", "recompute": "none"}},
  "axes": [{"name": "tp", "pointer": "/plan/tp", "values": [1, 3, 4]},
           {"name": "pp", "pointer": "/plan/pp", "values": [1, 2]}],
  "objective": {"metric": "tokens_per_s", "goal": "max"}
})json";

}  // namespace

TEST_CASE("sweep: a grid runs every point in order; invalid points are rows with their reason") {
  write("grid.json", kGridPlan);
  const Result r = run({"sweep", "grid.json", "-o", "grid-out.json", "--jobs", "2"});
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(r.out.find("6 `step` over 2 axes, grid design") != std::string::npos);
  CHECK(r.out.find("4 ok, 0 out of memory, 2 invalid, 0 internal errors") != std::string::npos);
  CHECK(r.out.find("best 4 of 4 points by tokens_per_s (highest):") != std::string::npos);
  CHECK(r.out.find(" tokens/s") != std::string::npos);  // the table in people's units, the results exact
  const json results = read_json("grid-out.json");
  REQUIRE(results.at("rows").size() == 6);
  const std::vector<std::pair<int, int>> order = {{1, 1}, {1, 2}, {3, 1}, {3, 2}, {4, 1}, {4, 2}};  // the last axis fastest
  for (std::size_t i = 0; i < 6; ++i) {
    const json& row = results.at("rows")[i];
    CHECK(row.at("point") == i);
    CHECK(row.at("tp") == order[i].first);
    CHECK(row.at("pp") == order[i].second);
    if (order[i].first == 3) {
      CHECK(row.at("status") == "invalid");
      CHECK(row.at("reason").get<std::string>().find("tp=3 does not divide 32 attention heads") != std::string::npos);
      CHECK(row.at("reason").get<std::string>().find("grid.json [point " + std::to_string(i) + "]:/plan/tp") == 0);
      CHECK_FALSE(row.contains("step_time_s"));
    } else {
      CHECK(row.at("status") == "ok");
      CHECK(row.at("step_time_s").get<double>() > 0);
      CHECK(row.at("gpus") == 8);
    }
  }
  // The same metrics as `orrery step --report` for that point.
  write("point.json", R"json({"model": "llama3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=1"},
    "plan": {"tp": 4, "pp": 2, "micro_batch": 1, "global_batch": 16, "seq_len": 2048, "schedule": "1f1b", "recompute": "none"}})json");
  REQUIRE(run({"step", "point.json", "--report", "point-report.json"}).code == 0);
  const json single = orrery::studies::flatten_report(read_json("point-report.json"));
  CHECK(results.at("rows")[5].at("step_time_s") == single.at("step_time_s"));
  CHECK(results.at("rows")[5].at("memory.activations_bytes") == single.at("memory.activations_bytes"));
  // The CSV has a header and one line per point, with the same columns.
  const std::string csv = slurp("grid-out.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 7);
  CHECK(csv.rfind("point,status,reason,tp,pp,", 0) == 0);
  CHECK_FALSE(fs::exists("grid-out.json.journal"));
}

TEST_CASE("sweep: results do not depend on the thread count") {
  write("threads.json", kGridPlan);
  REQUIRE(run({"sweep", "threads.json", "-o", "one.json", "--jobs", "1"}).code == 0);
  REQUIRE(run({"sweep", "threads.json", "-o", "two.json", "--jobs", "2"}).code == 0);
  REQUIRE(run({"sweep", "threads.json", "-o", "four.json", "--jobs", "4"}).code == 0);
  CHECK(slurp("one.json") == slurp("two.json"));
  CHECK(slurp("one.json") == slurp("four.json"));
  CHECK(slurp("one.csv") == slurp("two.csv"));
  CHECK(slurp("one.csv") == slurp("four.csv"));
}

TEST_CASE("sweep: random and Latin-hypercube designs are seeded; the hypercube fills every stratum once") {
  const auto plan_with = [](const std::string& design) {
    return orrery::studies::read_sweep_plan(R"json({"command": "collective", "base": {"topology": "dgx-h100", "size": 1048576},
      "design": )json" + design + R"json(,
      "axes": [{"pointer": "/size", "range": {"min": 1024, "max": 1073741824, "log": true, "integer": true}},
               {"pointer": "/topology", "values": ["dgx-h100", "dgx-a100", "dgx-b200"]}]})json",
                                        "plan.json");
  };
  const auto lhs = orrery::studies::sweep_points(plan_with(R"({"kind": "lhs", "samples": 12, "seed": 7})"));
  REQUIRE(lhs.size() == 12);
  std::set<int> strata;
  std::map<std::string, int> topologies;
  for (const auto& p : lhs) {
    const double u = std::log(p[0].get<double>() / 1024.0) / std::log(1073741824.0 / 1024.0);  // back to [0, 1]
    strata.insert(std::min(11, static_cast<int>(u * 12)));
    ++topologies[p[1].get<std::string>()];
  }
  CHECK(strata.size() >= 11);  // integer rounding may move a value across a stratum edge, never more than one
  for (const auto& [name, count] : topologies) CHECK(count == 4);  // 12 strata over 3 values: 4 each
  CHECK(orrery::studies::sweep_points(plan_with(R"({"kind": "lhs", "samples": 12, "seed": 7})")) == lhs);
  CHECK(orrery::studies::sweep_points(plan_with(R"({"kind": "lhs", "samples": 12, "seed": 8})")) != lhs);
  const auto random = orrery::studies::sweep_points(plan_with(R"({"kind": "random", "samples": 50, "seed": 1})"));
  REQUIRE(random.size() == 50);
  for (const auto& p : random) {
    CHECK(p[0].is_number_integer());
    CHECK(p[0].get<std::int64_t>() >= 1024);
    CHECK(p[0].get<std::int64_t>() <= 1073741824);
  }
  CHECK(orrery::studies::sweep_points(plan_with(R"({"kind": "random", "samples": 50, "seed": 1})")) == random);
}

TEST_CASE("sweep: an interrupted sweep resumes from its journal without redoing finished points") {
  write("resume.json", kGridPlan);
  for (const char* stale : {"part.json", "part.csv", "part.json.journal", "other.json.journal"}) fs::remove(stale);  // an earlier run's
  REQUIRE(run({"sweep", "resume.json", "-o", "full.json", "--jobs", "1"}).code == 0);
  // Stop after 2 points, as a kill would; the journal stays.
  const Result first = run({"sweep", "resume.json", "-o", "part.json", "--jobs", "1", "--max-points", "2"});
  REQUIRE_MESSAGE(first.code == 0, first.err);
  CHECK(first.out.find("stopped after 2 new points") != std::string::npos);
  CHECK_FALSE(fs::exists("part.json"));
  REQUIRE(fs::exists("part.json.journal"));
  // A kill mid-write leaves a torn last line: it is ignored.
  { std::ofstream(std::string("part.json.journal"), std::ios::app) << "{\"point\": 5, \"stat"; }
  const Result second = run({"sweep", "resume.json", "-o", "part.json", "--jobs", "2", "--resume"});
  REQUIRE_MESSAGE(second.code == 0, second.err);
  CHECK(second.out.find("ran        4 points") != std::string::npos);
  CHECK(second.out.find("(2 resumed from the journal)") != std::string::npos);
  CHECK(slurp("part.json") == slurp("full.json"));
  CHECK(slurp("part.csv") == slurp("full.csv"));
  // A journal from another plan is refused rather than mixed in.
  REQUIRE(run({"sweep", "resume.json", "-o", "other.json", "--max-points", "1"}).code == 0);
  std::string changed = kGridPlan;
  changed.replace(changed.find("[1, 3, 4]"), 9, "[1, 2, 4]");
  write("resume.json", changed);
  const Result refused = run({"sweep", "resume.json", "-o", "other.json", "--resume"});
  CHECK(refused.code == 1);
  CHECK(refused.err.find("other.json.journal:line 1: the journal was written by a different plan") != std::string::npos);
}

TEST_CASE("sweep: bad plans name the axis, what was found and what was expected") {
  const auto error = [](const std::string& axes, const std::string& extra = "") {
    write("bad-plan.json", R"json({"command": "step", "base": {"model": "llama3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=1"},
      "plan": {"tp": 1, "pp": 1, "micro_batch": 1, "global_batch": 16, "seq_len": 2048}}, )json" + extra + R"json("axes": )json" + axes + "}");
    const Result r = run({"sweep", "bad-plan.json", "-o", "bad-out.json"});
    CHECK(r.code == 1);
    CHECK_FALSE(fs::exists("bad-out.json"));
    return r.err;
  };
  CHECK(error(R"([{"pointer": "/plan/tpp", "values": [1, 2]}])")
            .find("bad-plan.json:/axes/0/pointer: /plan/tpp is not in the base scenario (inline); write the field there to vary it; /plan has: "
                  "global_batch, micro_batch, pp, seq_len, tp") != std::string::npos);
  CHECK(error(R"([{"pointer": "/plan/tp", "values": []}])").find("bad-plan.json:/axes/0/values: found an empty list, expected at least one value") !=
        std::string::npos);
  CHECK(error(R"([{"pointer": "/plan/tp", "values": [1, "two"]}])")
            .find("bad-plan.json:/axes/0/values/1: found a string \"two\", expected a number like the base's /plan/tp (a number 1)") !=
        std::string::npos);
  CHECK(error(R"([{"pointer": "/plan/tp", "range": {"min": 1, "max": 8}}])")
            .find("bad-plan.json:/axes/0/range: a grid needs \"steps\" (how many values from min to max)") != std::string::npos);
  CHECK(error(R"([{"option": "policy", "values": ["fifo"]}])")
            .find("bad-plan.json:/axes/0/option: found \"policy\", expected an option of `step`: gpus, no_reuse") != std::string::npos);
  CHECK(error(R"([{"pointers": ["/plan/tp", "/plan/pp"], "values": [[1, 1], [2]]}])")
            .find("bad-plan.json:/axes/0/values/1: found an array of 1 value") != std::string::npos);
  CHECK(error("[]").find("bad-plan.json:/axes: found an empty list, expected at least one axis") != std::string::npos);
  CHECK(error(R"([{"pointer": "/plan/tp", "values": [1]}])", R"("design": {"kind": "sobol", "samples": 4}, )")
            .find("bad-plan.json:/design/kind: found \"sobol\", expected grid, random or lhs (Latin hypercube)") != std::string::npos);
  CHECK(error(R"([{"pointer": "/plan/tp", "values": [1]}])", R"("design": {"kind": "random"}, )")
            .find("bad-plan.json:/design: a random design needs \"samples\" (how many points)") != std::string::npos);
  write("bad-command.json", R"({"command": "stepp", "base": {}, "axes": []})");
  CHECK(run({"sweep", "bad-command.json"}).err.find("bad-command.json:/command: found \"stepp\", expected step, estimate, compare, cluster or collective") !=
        std::string::npos);
}

TEST_CASE("sweep: report flattening keys policies by name") {
  const json flat = orrery::studies::flatten_report(json::parse(R"({"policies": [{"name": "fifo", "avg_jct_s": 3.5}, {"name": "arena", "avg_jct_s": 2}],
    "stages": [{"compute_s": 1}], "memory": {"params_bytes": 10}})"));
  CHECK(flat.at("policies.fifo.avg_jct_s") == 3.5);
  CHECK(flat.at("policies.arena.avg_jct_s") == 2);
  CHECK(flat.at("stages.0.compute_s") == 1);
  CHECK(flat.at("memory.params_bytes") == 10);
}

TEST_CASE("sweep: every scenario kind (collective, cluster, compare on cluster, sequence, multimodal and RL scenarios)") {
  const auto sweep = [](const std::string& name, const std::string& plan) {
    write(name + ".json", plan);
    const Result r = run({"sweep", name + ".json", "-o", name + "-out.json"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    return read_json(name + "-out.json").at("rows");
  };
  // Collectives: bandwidth rises with the size.
  const json coll = sweep("coll", R"json({"command": "collective", "base": {"topology": "dgx-h100", "op": "all-reduce", "algo": "ring", "size": "1MiB"},
    "axes": [{"pointer": "/algo", "values": ["ring", "nvls"]}, {"pointer": "/size", "values": ["1MiB", "1GiB"]}]})json");
  REQUIRE(coll.size() == 4);
  for (const json& row : coll) CHECK(row.at("status") == "ok");
  CHECK(coll[1].at("busbw_GBps").get<double>() > coll[0].at("busbw_GBps").get<double>());
  CHECK(coll[3].at("busbw_GBps").get<double>() > coll[1].at("busbw_GBps").get<double>());  // NVLS beats the ring at 1 GiB
  // The flow network's departure quantum is a field of the base like the others.
  const json quanta = sweep("quanta", R"json({"command": "collective", "base": {"topology": "dgx-h100:nodes=2", "op": "all-to-all",
    "algo": "direct", "size": "1MiB", "quantum": "0"}, "axes": [{"pointer": "/quantum", "values": ["0", "1us", "soon"]}]})json");
  REQUIRE(quanta.size() == 3);
  CHECK(quanta[0].at("quantum_s").get<double>() == 0);
  CHECK(quanta[1].at("quantum_s").get<double>() == orrery::testing::Approx(1e-6));
  CHECK(quanta[2].at("status") == "invalid");
  CHECK(quanta[2].at("reason").get<std::string>().find("--quantum: bad duration \"soon\"") != std::string::npos);

  // A cluster scenario in a file whose trace path is relative to it: the points still find it.
  fs::create_directories("sweep-cluster");
  write("sweep-cluster/jobs.csv", "name,submit,n,secs\na,0,4,100\nb,10,4,50\nc,20,8,30\n");
  write("sweep-cluster/cluster.json", R"({"cluster": {"pools": [{"gpu": "a100", "nodes": 1, "gpus_per_node": 8}]},
    "jobs": {"format": "csv", "path": "jobs.csv", "columns": {"arrival": "submit", "gpus": "n", "duration": "secs", "id": "name"}}})");
  const json cluster = sweep("cl", R"json({"command": "cluster", "base": "sweep-cluster/cluster.json",
    "axes": [{"option": "policy", "values": ["fifo", "sjf"]}, {"pointer": "/cluster/pools/0/nodes", "values": [1, 2]}]})json");
  REQUIRE(cluster.size() == 4);
  for (const json& row : cluster) CHECK(row.at("jobs_completed") == 3);
  CHECK(cluster[1].at("avg_jct_s").get<double>() < cluster[0].at("avg_jct_s").get<double>());  // two nodes: less queueing
  const json compare_cluster = sweep("cc", R"json({"command": "compare", "base": "sweep-cluster/cluster.json", "options": {"policies": "fifo,sjf"},
    "axes": [{"pointer": "/cluster/pools/0/nodes", "values": [1, 2]}]})json");
  CHECK(compare_cluster[0].at("policies.sjf.jobs_completed") == 3);
  CHECK(compare_cluster[0].at("policies.fifo.avg_jct_s") == cluster[0].at("avg_jct_s"));

  // Sequence policies on a long-tail workload.
  const json seq = sweep("seq", R"json({"command": "compare", "options": {"policies": "packing,wlb-llm", "steps": 3},
    "base": {"model": "llama3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=1"},
             "plan": {"tp": 2, "pp": 1, "cp": 1, "micro_batch": 1, "global_batch": 8, "seq_len": 16384},
             "workload": {"generator": "lognormal_pareto", "median": 1000, "p99": 12000, "max": 16384, "seed": 1}},
    "axes": [{"pointer": "/workload/seed", "values": [1, 2]}]})json");
  for (const json& row : seq) {
    CHECK(row.at("status") == "ok");
    CHECK(row.at("policies.wlb-llm.tokens_per_s").get<double>() > 0);
  }
  CHECK(seq[0].at("policies.packing.tokens_per_s") != seq[1].at("policies.packing.tokens_per_s"));

  // Multimodal pipelines: the TP x DP split moves the step time.
  const json mm = sweep("mm", R"json({"command": "compare", "base": ")json" + std::string(ORRERY_SOURCE_DIR) +
                                  R"json(/examples/multimodal/qwen2-vl-7b-64.json", "options": {"policies": "pipeweaver", "steps": 1},
    "axes": [{"pointers": ["/multimodal/tp", "/multimodal/dp"], "values": [[2, 8], [4, 4]]}]})json");
  REQUIRE(mm.size() == 2);
  for (const json& row : mm) CHECK(row.at("status") == "ok");
  CHECK(mm[0].at("policies.pipeweaver.step_time_p50_s") != mm[1].at("policies.pipeweaver.step_time_p50_s"));

  // MegaScale-Omni and Maestro are sweep points like the other multimodal policies: the encoder
  // rank set's size moves Omni's step; Maestro's own configuration holds fewer GPU-hours than one
  // configuration for all sections.
  const json omni = sweep("omni", R"json({"command": "compare", "base": ")json" + std::string(ORRERY_SOURCE_DIR) +
                                      R"json(/examples/multimodal/omni-qwen2-vl-64.json", "options": {"steps": 1},
    "axes": [{"option": "policies", "values": ["megascale-omni:encoder_gpus=8", "megascale-omni:encoder_gpus=24"]}]})json");
  REQUIRE(omni.size() == 2);
  for (const json& row : omni) CHECK(row.at("status") == "ok");
  CHECK(omni[0].at("policies.megascale-omni.step_time_p50_s") != omni[1].at("policies.megascale-omni.step_time_p50_s"));
  const json maestro = sweep("maestro", R"json({"command": "compare", "base": ")json" + std::string(ORRERY_SOURCE_DIR) +
                                            R"json(/examples/multimodal/maestro-distill.json", "options": {"steps": 1},
    "axes": [{"option": "policies", "values": ["maestro:uniform=true", "maestro"]}]})json");
  REQUIRE(maestro.size() == 2);
  CHECK(maestro[1].at("policies.maestro.gpu_hours_per_1k_samples").get<double>() <
        maestro[0].at("policies.maestro (uniform).gpu_hours_per_1k_samples").get<double>());

  // RL: a policy per point, two iterations each.
  const json rl = sweep("rl", R"json({"command": "compare", "base": ")json" + std::string(ORRERY_SOURCE_DIR) +
                                  R"json(/examples/rl/grpo-7b-128.json", "options": {"iterations": 2},
    "axes": [{"option": "policies", "values": ["colocated", "streamrl-async"]}]})json");
  REQUIRE(rl.size() == 2);
  CHECK(rl[1].at("policies.streamrl-async.samples_per_s").get<double>() > rl[0].at("policies.colocated.samples_per_s").get<double>());
}

TEST_CASE("sweep --html: a heatmap over the first two axes and scaling curves over the numeric ones") {
  write("html-plan.json", kGridPlan);
  const Result r = run({"sweep", "html-plan.json", "-o", "html-out.json", "--html", "html-out.html"});
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const std::string html = slurp("html-out.html");
  CHECK(html.find("data-plot=\"sweep-heatmap\"") != std::string::npos);
  CHECK(html.find("data-plot=\"sweep-curve-0\"") != std::string::npos);  // tokens_per_s against tp
  CHECK(html.find("data-plot=\"sweep-curve-1\"") != std::string::npos);  // ... against pp
  CHECK(html.find("tp=3 does not divide") == std::string::npos);         // cells without a value say why, briefly
  CHECK(html.find("1 invalid") != std::string::npos);
  for (const char* fetch : {"src=", "href=", "<link", "@import", "url(http", "url(//"}) CHECK(html.find(fetch) == std::string::npos);  // self-contained
  const Result bad = run({"sweep", "html-plan.json", "-o", "html-out2.json", "--html", "no-such-folder/x.html"});
  CHECK(bad.code == 1);
  CHECK_FALSE(fs::exists("html-out2.json"));
}

TEST_CASE("sweep: the closed-form estimate agrees with the emulator on which points fit") {
  std::string plan = kGridPlan;
  write("emulated.json", plan);
  plan.replace(plan.find("\"step\""), 6, "\"estimate\"");
  write("estimated.json", plan);
  REQUIRE(run({"sweep", "emulated.json", "-o", "emulated-out.json"}).code == 0);
  REQUIRE(run({"sweep", "estimated.json", "-o", "estimated-out.json"}).code == 0);
  const json emulated = read_json("emulated-out.json").at("rows"), estimated = read_json("estimated-out.json").at("rows");
  REQUIRE(emulated.size() == estimated.size());
  for (std::size_t i = 0; i < emulated.size(); ++i) {
    CAPTURE(i);
    CHECK(estimated[i].at("status") == emulated[i].at("status"));
    if (emulated[i].at("status") != "ok") continue;
    CHECK(estimated[i].at("estimate") == true);
    const double ratio = estimated[i].at("step_time_s").get<double>() / emulated[i].at("step_time_s").get<double>();
    CHECK(ratio == orrery::testing::Approx(1.0).epsilon(0.1));
  }
}

TEST_CASE("sweep: a variable axis writes its value wherever ${name} stands in the base's strings") {
  write("variables.json", R"json({"command": "collective",
    "base": {"topology": "dgx-h100:nodes=2,nic=${nic}", "op": "all-reduce", "algo": "ring", "size": "1GiB", "ranks": "${ranks}"},
    "axes": [{"variable": "nic", "values": ["100Gb/s", "400Gb/s"]}, {"variable": "ranks", "values": [16]}]})json");
  const Result r = run({"sweep", "variables.json", "-o", "variables-out.json"});
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const json rows = read_json("variables-out.json").at("rows");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].at("nic") == "100Gb/s");
  CHECK(rows[0].at("ranks") == 16);  // a string that is only "${ranks}" takes the number
  CHECK(rows[0].at("topology") == "dgx-h100:nodes=2,nic=100Gb/s");
  // A ring across two servers is bound by the NICs: four times their rate, about four times the bandwidth.
  CHECK(rows[1].at("busbw_GBps").get<double>() > 3 * rows[0].at("busbw_GBps").get<double>());

  write("variables-bad.json", R"json({"command": "collective", "base": {"topology": "dgx-h100:nodes=2", "size": "1GiB"},
    "axes": [{"variable": "nic", "values": ["100Gb/s"]}]})json");
  const Result bad = run({"sweep", "variables-bad.json"});
  CHECK(bad.code == 1);
  CHECK(bad.err.find("variables-bad.json:/axes/0/variable: the base scenario and the options hold no ${nic}; write it into a string") !=
        std::string::npos);
}

TEST_CASE("every example sweep plan runs, with points that ran, deterministically") {
  std::vector<fs::path> plans;
  for (const char* folder : {"sweeps", "frontier"}) {
    for (const auto& entry : fs::directory_iterator(fs::path(ORRERY_SOURCE_DIR) / "examples" / folder)) plans.push_back(entry.path());
  }
  std::sort(plans.begin(), plans.end());
  for (const fs::path& path : plans) {
    const fs::directory_entry entry(path);
    const std::string plan = entry.path().string(), name = entry.path().stem().string();
    CAPTURE(plan);
    const Result first = run({"sweep", plan, "-o", name + "-1.json", "--html", name + ".html"});
    REQUIRE_MESSAGE(first.code == 0, first.err);
    REQUIRE(run({"sweep", plan, "-o", name + "-2.json", "--jobs", "1"}).code == 0);
    CHECK(slurp(name + "-1.json") == slurp(name + "-2.json"));
    const json rows = read_json(name + "-1.json").at("rows");
    CHECK(std::any_of(rows.begin(), rows.end(), [](const json& r) { return r.at("status") == "ok"; }));
    CHECK(slurp(name + ".html").find("data-plot=\"sweep-heatmap\"") != std::string::npos);
  }
}
