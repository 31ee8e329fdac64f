// Issue 17 (hardening): bad input that once crashed, hung or was silently accepted, each
// answered with one line naming the file and place, exit 1, nothing written.
#include "runs/runs.hpp"
#include "validation/validation.hpp"
#include "reports/human.hpp"
#include "runs/progress.hpp"
#include "cli_run.hpp"

#include "policies/cluster.hpp"
#include "policies/multimodal.hpp"
#include "policies/pipeline.hpp"
#include "policies/rl.hpp"
#include "policies/sequence.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <sstream>

namespace fs = std::filesystem;
using orrery::testing::lines;
using orrery::testing::Result;
using orrery::testing::run;
using orrery::testing::slurp;
using orrery::testing::write;

namespace {

// One line on stderr, exit 1, nothing on stdout: the command stopped before it ran.
void check_refused(const Result& r, const std::string& expected_err) {
  CHECK(r.code == 1);
  CHECK(r.err == expected_err);
  CHECK(lines(r.err) == 1);
  CHECK(r.out.empty());
}

std::string no_folder(const std::string& option, const std::string& path) {
  return "orrery: error: <command line>:" + option + ": cannot write \"" + path + "\": the folder \"" +
         fs::path(path).parent_path().string() + "\" does not exist\n";
}

const char* kClusterJobs = "name,submit,n,secs\na,0,4,100\nb,10,4,50\nc,20,8,30\n";
const char* kClusterScenario = R"({"cluster": {"pools": [{"gpu": "a100", "nodes": 1, "gpus_per_node": 8}]},
  "jobs": {"format": "csv", "path": "hard-jobs.csv", "columns": {"arrival": "submit", "gpus": "n", "duration": "secs", "id": "name"}}})";

const char* kSweepPlan = R"json({
  "command": "estimate",
  "base": {"model": "llama3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=1"},
           "plan": {"tp": 1, "pp": 1, "micro_batch": 1, "global_batch": 16, "seq_len": 2048, "schedule": "1f1b", "recompute": "none"}},
  "axes": [{"name": "tp", "pointer": "/plan/tp", "values": [1, 2]}],
  "objective": {"metric": "tokens_per_s", "goal": "max"}
})json";

}  // namespace

// §5: every output path is checked before the command runs, so that a bad last path does not
// leave the first files written.
TEST_CASE("hardening: an output path that cannot be written stops every command before it writes anything") {
  for (const char* f : {"hard-r.json", "hard-r.json.journal", "hard-t.json", "hard-t.csv"}) fs::remove(f);
  fs::remove_all("nodir");
  write("hard-jobs.csv", kClusterJobs);
  write("hard-cluster.json", kClusterScenario);
  write("hard-balance.json", orrery::validation::balance_scenario_json(4, 65536, "", 8));
  write("hard-sweep.json", kSweepPlan);

  // step: the report would have been written before the trace failed.
  check_refused(run({"step", "--report", "hard-r.json", "--trace", "nodir/t.json"}), no_folder("--trace", "nodir/t.json"));
  CHECK_FALSE(fs::exists("hard-r.json"));
  check_refused(run({"step", "--report", "nodir/r.json"}), no_folder("--report", "nodir/r.json"));
  // cluster: --timeline, --jobs-csv, and the jobs CSV that --timeline writes beside it.
  check_refused(run({"cluster", "hard-cluster.json", "--report", "hard-r.json", "--timeline", "nodir/t.json"}),
                no_folder("--timeline", "nodir/t.json"));
  check_refused(run({"cluster", "hard-cluster.json", "--report", "hard-r.json", "--jobs-csv", "nodir/j.csv"}),
                no_folder("--jobs-csv", "nodir/j.csv"));
  CHECK_FALSE(fs::exists("hard-r.json"));
  check_refused(run({"cluster", "hard-cluster.json", "--jobs-csv", "hard-t.csv", "--timeline", "hard-t.json"}),
                "orrery: error: <command line>:--timeline: \"hard-t.csv\" is also the file of --jobs-csv; expected a file of its own\n");
  CHECK_FALSE(fs::exists("hard-t.csv"));
  CHECK_FALSE(fs::exists("hard-t.json"));
  // sweep: the results JSON, the CSV, the journal.
  check_refused(run({"sweep", "hard-sweep.json", "-o", "hard-r.json", "--csv", "nodir/r.csv"}), no_folder("--csv", "nodir/r.csv"));
  CHECK_FALSE(fs::exists("hard-r.json"));
  CHECK_FALSE(fs::exists("hard-r.json.journal"));
  check_refused(run({"sweep", "hard-sweep.json", "-o", "nodir/r.json"}), no_folder("--out", "nodir/r.json"));
  // The others, each with its output option.
  check_refused(run({"compare", "hard-balance.json", "--steps", "2", "--report", "hard-r.json", "--trace", "nodir/t.json"}),
                no_folder("--trace", "nodir/t.json"));
  CHECK_FALSE(fs::exists("hard-r.json"));
  const std::string graph = std::string(ORRERY_SOURCE_DIR) + "/examples/graphs/gpipe_4x4.json";
  check_refused(run({"replay", graph, "--trace", "hard-t.json", "--report", "nodir/r.json"}), no_folder("--report", "nodir/r.json"));
  CHECK_FALSE(fs::exists("hard-t.json"));
  check_refused(run({"collective", "--trace", "hard-t.json", "--report", "nodir/r.json"}), no_folder("--report", "nodir/r.json"));
  CHECK_FALSE(fs::exists("hard-t.json"));
  check_refused(run({"topology", "--save", "nodir/t.json"}), no_folder("--save", "nodir/t.json"));
  check_refused(run({"plan", std::string(ORRERY_SOURCE_DIR) + "/examples/plans/llama3-8b-64xh100.json", "--report", "nodir/r.json"}),
                no_folder("--report", "nodir/r.json"));
  check_refused(run({"doclens", "generate", "--tokens", "1000", "--batches", "1", "-o", "nodir/d.jsonl"}), no_folder("--out", "nodir/d.jsonl"));
  check_refused(run({"validate", "--only", "network", "--out", "nodir/v.md"}), no_folder("--out", "nodir/v.md"));
  check_refused(run({"cost", "--kernel", "gemm:m=64,n=64,k=64", "--report", "nodir/r.json"}), no_folder("--report", "nodir/r.json"));
  // calibrate: checked before minutes of measuring, and before the profile is read.
  check_refused(run({"calibrate", "measure", "--quick", "-o", "nodir/p.json"}), no_folder("--out", "nodir/p.json"));
  check_refused(run({"calibrate", "fit", "no-such-profile.json", "-o", "nodir/c.json"}), no_folder("--out", "nodir/c.json"));
  // A folder is not a file; one file under two names is one file.
  fs::create_directories("hard-dir");
  check_refused(run({"step", "--report", "hard-dir"}),
                "orrery: error: <command line>:--report: found \"hard-dir\", expected a file name (a folder cannot be written over)\n");
  check_refused(run({"step", "--report", "hard-r.json", "--trace", "./hard-r.json"}),
                "orrery: error: <command line>:--trace: \"./hard-r.json\" is also the file of --report; expected a file of its own\n");
  CHECK_FALSE(fs::exists("hard-r.json"));
  CHECK_FALSE(fs::exists("nodir"));
}

// §3: count options out of range, and a --trace-step that shows no step.
TEST_CASE("hardening: count options out of range are refused with the range and its reason") {
  write("hard-balance.json", orrery::validation::balance_scenario_json(4, 65536, "", 8));
  write("hard-jobs.csv", kClusterJobs);
  write("hard-cluster.json", kClusterScenario);
  write("hard-sweep.json", kSweepPlan);
  for (const char* f : {"hard-t.json", "hard-s.json", "hard-s.json.journal"}) fs::remove(f);
  check_refused(run({"compare", "hard-balance.json", "--trace", "hard-t.json", "--trace-step", "5", "--steps", "2"}),
                "orrery: error: <command line>:--trace-step: found 5, expected a step of the run: 0 to 1 (--steps 2)\n");
  check_refused(run({"compare", "hard-balance.json", "--trace", "hard-t.json", "--trace-step", "-1", "--steps", "2"}),
                "orrery: error: <command line>:--trace-step: found -1, expected a step of the run: 0 to 1 (--steps 2)\n");
  CHECK_FALSE(fs::exists("hard-t.json"));
  check_refused(run({"compare", "hard-balance.json", "--trace-step", "1", "--steps", "2"}),
                "orrery: error: <command line>:--trace-step: found 1 without --trace; expected --trace FILE with it (it picks the step that file "
                "shows)\n");
  check_refused(run({"compare", "hard-cluster.json", "--trace", "hard-t.json"}),
                "orrery: error: <command line>:--trace: cluster scenarios have no step timeline to trace; `orrery cluster --timeline` writes one "
                "run's allocations\n");
  check_refused(run({"compare", "hard-balance.json", "--steps", "0"}),
                "orrery: error: <command line>:--steps: found 0, expected 1 to 100000 (steps per policy, each one simulated)\n");
  check_refused(run({"compare", "hard-balance.json", "--iterations", "-4"}),
                "orrery: error: <command line>:--iterations: found -4, expected 1 to 100000 (RL iterations per policy, each one simulated)\n");
  // The last good --trace-step writes its trace.
  REQUIRE(run({"compare", "hard-balance.json", "--policies", "packing", "--trace", "hard-t.json", "--trace-step", "1", "--steps", "2"}).code == 0);
  CHECK(nlohmann::json::parse(slurp("hard-t.json"))["traceEvents"].size() > 1);

  check_refused(run({"sweep", "hard-sweep.json", "-o", "hard-s.json", "-j", "-1"}),
                "orrery: error: <command line>:--jobs: found -1, expected 0 to 4096 (threads per process; 0: one per core)\n");
  check_refused(run({"sweep", "hard-sweep.json", "-o", "hard-s.json", "--max-points", "-1"}),
                "orrery: error: <command line>:--max-points: found -1, expected 0 to 10000000 (new points to run before stopping; 0: all)\n");
  CHECK_FALSE(fs::exists("hard-s.json"));
  check_refused(run({"plan", std::string(ORRERY_SOURCE_DIR) + "/examples/plans/llama3-8b-64xh100.json", "--top", "-3"}),
                "orrery: error: <command line>:--top: found -3, expected 0 to 100 (plans to confirm with the emulator; 0: rank by the estimate only)\n");
  check_refused(run({"collective", "--ranks", "-1"}),
                "orrery: error: <command line>:--ranks: found -1, expected 0 (all GPUs) or 2 to 8 (the GPUs of the topology)\n");
  check_refused(run({"calibrate", "measure", "--repetitions", "0", "-o", "hard-p.json"}),
                "orrery: error: <command line>:--repetitions: found 0, expected 1 to 1000 (timed runs per point; the profile keeps their median)\n");
}

// §3: a sweep's objective must be a metric its points report; a typo fails at its place in the
// plan, listing the metrics, with nothing but the journal written (--resume then reuses it).
TEST_CASE("hardening: a sweep objective that no point reports fails with the metrics there are") {
  std::string plan = kSweepPlan;
  plan.replace(plan.find("\"tokens_per_s\""), 14, "\"tokens_per_sec\"");
  write("hard-objective.json", plan);
  for (const char* f : {"hard-o.json", "hard-o.csv", "hard-o.json.journal"}) fs::remove(f);
  const Result r = run({"sweep", "hard-objective.json", "-o", "hard-o.json", "-j", "1"});
  CHECK(r.code == 1);
  CHECK(lines(r.err) == 1);
  CHECK(r.err.find("orrery: error: hard-objective.json:/objective/metric: found \"tokens_per_sec\", expected a numeric metric the points of "
                   "`estimate` report: ") == 0);
  CHECK(r.err.find("step_time_s") != std::string::npos);
  CHECK(r.err.find("did you mean \"tokens_per_s\"?") != std::string::npos);
  CHECK_FALSE(fs::exists("hard-o.json"));
  CHECK_FALSE(fs::exists("hard-o.csv"));
  // Fixed, the sweep continues from the journal.
  write("hard-objective.json", kSweepPlan);
  const Result fixed = run({"sweep", "hard-objective.json", "-o", "hard-o.json", "-j", "1", "--resume"});
  REQUIRE_MESSAGE(fixed.code == 0, fixed.err);
  CHECK(fixed.out.find("resumed from the journal") != std::string::npos);
  CHECK(nlohmann::json::parse(slurp("hard-o.json"))["rows"].size() == 2);
}

// §2: doclens generate has stated limits, checked before anything is generated.
TEST_CASE("hardening: doclens generate refuses sizes beyond its limits, at once") {
  fs::remove("hard-d.jsonl");
  check_refused(run({"doclens", "generate", "--tokens", "1000000000", "--batches", "1000000000", "-o", "hard-d.jsonl"}),
                "orrery: error: <command line>:--batches: found 1000000000, expected 1 to 1000000 (batches to generate: one line each)\n");
  check_refused(run({"doclens", "generate", "--tokens", "1000000000000", "--batches", "1", "-o", "hard-d.jsonl"}),
                "orrery: error: <command line>:--tokens: found 1000000000000, expected 1 to 1073741824 (tokens per global batch; the largest "
                "trained models use 16M)\n");
  check_refused(run({"doclens", "generate", "--tokens", "1000000000", "--batches", "100", "-o", "hard-d.jsonl"}),
                "orrery: error: <command line>:--tokens x --batches: found 1000000000 x 100 = 100000000000 tokens, expected at most 68719476736 "
                "(2^36) in all, about 80 MB of JSONL; write several traces instead\n");
  CHECK_FALSE(fs::exists("hard-d.jsonl"));
  const Result help = run({"doclens", "--help"});
  CHECK(help.out.find("1 to 2^30") != std::string::npos);
  CHECK(help.out.find("tokens x batches at most 2^36") != std::string::npos);
  // Within the limits the batches stream to the file, one line each, of the tokens asked.
  REQUIRE(run({"doclens", "generate", "--tokens", "100000", "--batches", "3", "-o", "hard-d.jsonl"}).code == 0);
  std::istringstream in(slurp("hard-d.jsonl"));
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    std::int64_t sum = 0;
    for (const auto& v : nlohmann::json::parse(line)) sum += v.get<std::int64_t>();
    CHECK(sum == 100000);
    ++n;
  }
  CHECK(n == 3);
}

// §6: "did you mean" for mistyped commands, subcommands and options.
TEST_CASE("hardening: a mistyped command or option gets a did-you-mean") {
  const Result stpe = run({"stpe"});
  CHECK(stpe.code == 1);
  CHECK(lines(stpe.err) == 1);
  CHECK(stpe.err.find("orrery: error: <command line>: found \"stpe\", expected a command: ") == 0);
  CHECK(stpe.err.find("did you mean \"step\"?") != std::string::npos);
  CHECK(stpe.err.find("sweep") != std::string::npos);  // the commands are listed
  const Result mesure = run({"calibrate", "mesure", "-o", "p.json"});
  CHECK(mesure.code == 1);
  CHECK(mesure.err.find("found \"mesure\", expected a subcommand of `calibrate`: measure, fit, import; did you mean \"measure\"?") != std::string::npos);
  const Result reprot = run({"step", "--reprot", "r.json"});
  CHECK(reprot.code == 1);
  CHECK(lines(reprot.err) == 1);
  CHECK(reprot.err.find("did you mean \"--report\"?; see `orrery step --help`") != std::string::npos);
  const Result nested = run({"calibrate", "fit", "p.json", "--outt", "c.json"});
  CHECK(nested.err.find("did you mean \"--out\"?; see `orrery calibrate fit --help`") != std::string::npos);
  // A word far from every command gets the list without a guess.
  const Result far = run({"xyzzy"});
  CHECK(far.err.find("did you mean") == std::string::npos);
  CHECK(far.err.find("expected a command: ") != std::string::npos);
}

// §6: every policy of every registry, and each of its parameters, is listed where it is chosen.
TEST_CASE("hardening: --help and `orrery policies` list every policy family and parameter from the registries") {
  const Result all = run({"policies"});
  REQUIRE(all.code == 0);
  const Result compare = run({"compare", "--help"});
  const Result cluster = run({"cluster", "--help"});
  REQUIRE(compare.code == 0);
  REQUIRE(cluster.code == 0);
  const auto check_listed = [](const std::string& text, const auto& registry) {
    for (const auto& [name, entry] : registry.entries()) {
      CAPTURE(name);
      CHECK(text.find("  " + name + " ") != std::string::npos);
      for (const auto& p : entry.params) {
        CAPTURE(p.name);
        CHECK(text.find(" " + p.name + "=") != std::string::npos);
      }
    }
  };
  namespace pol = orrery::policies;
  check_listed(all.out, pol::sequence_policies());
  check_listed(all.out, pol::pipeline_schedules());
  check_listed(all.out, pol::cluster_schedulers());
  check_listed(all.out, pol::multimodal_pipelines());
  check_listed(all.out, pol::rl_policies());
  check_listed(all.out, pol::rl_dispatchers());
  check_listed(compare.out, pol::sequence_policies());
  check_listed(compare.out, pol::cluster_schedulers());
  check_listed(compare.out, pol::multimodal_pipelines());
  check_listed(compare.out, pol::rl_policies());
  check_listed(cluster.out, pol::cluster_schedulers());
  CHECK(cluster.out.find("backfill=false (boolean): later jobs may start when the head of the queue does not fit") != std::string::npos);
  CHECK(run({"--help"}).out.find("`orrery policies` for every policy and its parameters") != std::string::npos);
}

// §6: the progress reporter, on a clock the test drives.
TEST_CASE("hardening: the progress reporter waits 2 s, then shows done/total, elapsed and an ETA") {
  using orrery::runs::Progress;
  CHECK(Progress::duration(59.4) == "59s");
  CHECK(Progress::duration(62) == "1m02s");
  CHECK(Progress::duration(3725) == "1h02m");
  CHECK(Progress::duration(2 * 86400 + 3600) == "2d01h");
  CHECK(Progress::duration(-1) == "?");
  CHECK(Progress::format("validate", 3, 8, "sections", 62, 103, "steps") ==
        "validate [#######.............] 3/8 sections  1m02s elapsed  ETA 1m43s  (steps)");
  CHECK(Progress::format("cluster", 5, 0, "jobs", 3, 0, "") == "cluster 5 jobs  3s elapsed");

  double now = 100;
  std::ostringstream terminal;
  orrery::runs::ProgressSettings s;
  s.stream = &terminal;
  s.terminal = true;
  s.ticker = false;
  s.clock = [&] { return now; };
  {
    Progress p("compare", 4, "policies", 0, s);
    p.note("fifo");
    now = 101;
    p.advance();  // 1 s: too early to show anything
    CHECK(terminal.str().empty());
    now = 103;
    p.advance();  // 2 done in 3 s: 1.5 s each, 3 s to go
    CHECK(terminal.str() == "\rcompare [##########..........] 2/4 policies  3s elapsed  ETA 3s  (fifo)");
    now = 103.05;
    p.advance();  // within 100 ms of the last redraw
    CHECK(terminal.str().find("3/4") == std::string::npos);
    now = 104;
    p.poll();  // 3 done by 103.05: 1.02 s each; at 104, 0 s left
    CHECK(terminal.str().find("3/4 policies  4s elapsed  ETA 0s") != std::string::npos);
    p.clear();  // before other output: the line is blanked
    CHECK(terminal.str().substr(terminal.str().size() - 1) == "\r");
  }
  // Not a terminal (a log): one plain line every 10 s, and the total at the end.
  now = 0;
  std::ostringstream log;
  s.stream = &log;
  s.terminal = false;
  {
    Progress p("validate", 2, "sections", 0, s);
    now = 5;
    p.poll();
    now = 6;
    p.poll();  // within 10 s of the last line
    now = 12;
    p.advance();  // 12 s per section
    now = 15;
    p.poll();
    now = 16;
    p.advance();
  }
  CHECK(log.str() == "validate [....................] 0/2 sections  5s elapsed  ETA ?\n"
                     "validate [##########..........] 1/2 sections  15s elapsed  ETA 9s\n"
                     "validate [####################] 2/2 sections  16s elapsed\n");
  // A report inside another stays silent: one line on the terminal at a time.
  now = 0;
  std::ostringstream nested;
  s.stream = &nested;
  {
    Progress outer("validate", 2, "sections", 0, s);
    Progress inner("plan: confirming", 5, "plans", 0, s);
    now = 30;
    inner.advance();
    CHECK(nested.str().empty());
    outer.advance();
    CHECK(nested.str().find("validate") != std::string::npos);
  }
  // A command run in-process with its own streams (a test) reports nothing, however long it runs.
  write("hard-sweep.json", kSweepPlan);
  const Result r = run({"sweep", "hard-sweep.json", "-o", "hard-p.json"});
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
}

// §6: human units on the console; the reports keep the exact values.
TEST_CASE("hardening: console figures in human units, reports exact") {
  namespace human = orrery::reports::human;
  CHECK(human::count(950) == "950");
  CHECK(human::count(1500) == "1.5k");
  CHECK(human::count(1234567) == "1.23M");
  CHECK(human::count(999950) == "1M");
  CHECK(human::count(4.2e10) == "42G");
  CHECK(human::count(0.5) == "0.5");
  CHECK(human::rate(61234, "tokens/s") == "61.2k tokens/s");
  CHECK(human::gib(76.5 * 1073741824.0) == "76.5 GiB");
  CHECK(human::percent(0.4471) == "44.7%");
  CHECK(human::span(0.35) == "0.35 s");
  CHECK(human::span(42) == "42 s");
  CHECK(human::span(750) == "12.5 min");
  // A sweep's metric by its key: the unit suffix picks the form.
  CHECK(human::metric("tokens_per_s", 266775) == "267k tokens/s");
  CHECK(human::metric("memory.peak_memory_bytes", 1.58459e11) == "147.6 GiB");
  CHECK(human::metric("step_time_s", 15.7223) == "15.7 s");
  CHECK(human::metric("mfu", 0.416119) == "41.6%");
  CHECK(human::metric("bubble_fraction", 0.25) == "25.0%");
  CHECK(human::metric("train.time_s", 3 * 86400.0) == "3.0 days");
  CHECK(human::metric("gpus", 64) == "64");
  CHECK(human::span(5.2 * 3600) == "5.2 h");
  CHECK(human::span(3.1 * 86400) == "3.1 days");

  write("hard-jobs.csv", kClusterJobs);
  write("hard-cluster.json", kClusterScenario);
  const Result c = run({"cluster", "hard-cluster.json", "--report", "hard-c.json"});
  REQUIRE(c.code == 0);
  const nlohmann::json rep = nlohmann::json::parse(slurp("hard-c.json"));
  const double makespan = rep["makespan_s"].get<double>();
  CHECK(makespan > 100);  // exact seconds in the report
  CHECK(c.out.find("makespan   " + human::span(makespan) + "; GPU utilisation " + human::percent(rep["gpu_utilization"].get<double>())) !=
        std::string::npos);
  CHECK(c.out.find("JCT        avg " + human::span(rep["avg_jct_s"].get<double>()) + ", p50 ") != std::string::npos);

  const Result s = run({"step", "--report", "hard-s.json"});
  REQUIRE(s.code == 0);
  const nlohmann::json step = nlohmann::json::parse(slurp("hard-s.json"));
  CHECK(s.out.find("throughput " + human::rate(step["tokens_per_s"].get<double>(), "tokens/s") + ", ") != std::string::npos);
  CHECK(s.out.find("MFU " + human::percent(step["mfu"].get<double>())) != std::string::npos);
}
