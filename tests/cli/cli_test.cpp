#include "cli/app.hpp"
#include "cli_run.hpp"
#include "runs/runs.hpp"
#include "validation/step_fit.hpp"
#include "validation/validation.hpp"
#include "sim/error.hpp"

#include "shared_data.hpp"
#include "approx.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

using orrery::testing::Result;
using orrery::testing::run;
using orrery::testing::slurp;
using orrery::testing::write;

TEST_CASE("--version, --help and subcommand help exit 0") {
  const Result version = run({"--version"});
  CHECK(version.code == 0);
  CHECK(version.out.find("orrery 0.") == 0);
  const Result help = run({"--help"});
  CHECK(help.code == 0);
  CHECK(help.out.find("replay") != std::string::npos);
  const Result replay_help = run({"replay", "--help"});
  CHECK(replay_help.code == 0);
  CHECK(replay_help.out.find("--trace") != std::string::npos);
  CHECK(replay_help.out.find("--report") != std::string::npos);
}

TEST_CASE("command-line mistakes exit 1 with one line") {
  for (const auto& args : std::vector<std::vector<std::string>>{{}, {"replya"}, {"replay"}, {"replay", "g.json", "--bogus"}}) {
    const Result r = run(args);
    CHECK(r.code == 1);
    CHECK(r.err.find("orrery: error: <command line>: ") == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

// Each bad input: exit code 1, one line on stderr naming the file and the place, and neither
// the timeline nor the report is written.
TEST_CASE("bad task graphs: one precise line, exit 1, no output file") {
  fs::create_directories("bad");
  struct Case {
    const char* name;
    const char* json;
    const char* place;  // expected right after "file:"
  };
  const std::vector<Case> cases = {
      {"malformed", "{\"nodes\": [\n {\"id\": \"a\" \"kind\": \"delay\"}]}", "line 2, column 13: malformed JSON"},
      {"unknown-key", R"({"nodes": [{"id": "a", "kind": "delay", "duraton": "1 ms"}]})", "/nodes/0: missing required field \"duration\" (is \"duraton\""},
      {"unknown-key-2", R"({"nodes": [{"id": "a", "kind": "delay", "duration": "1 ms", "dep": []}]})", "/nodes/0/dep: unknown key \"dep\"; did you mean \"deps\"?"},
      {"wrong-type", R"({"nodes": [{"id": "a", "kind": "delay", "duration": "1 ms", "deps": "b"}]})", "/nodes/0/deps: found a string \"b\", expected an array"},
      {"missing-field", R"({"nodes": [{"kind": "delay", "duration": "1 ms"}]})", "/nodes/0: missing required field \"id\""},
      {"negative-duration", R"({"nodes": [{"id": "a", "kind": "delay", "duration": "-5 us"}]})", "/nodes/0/duration: bad duration \"-5 us\": it is negative"},
      {"unknown-dep", R"({"nodes": [{"id": "a", "kind": "delay", "duration": "1 ms", "deps": ["b"]}]})", "/nodes/0/deps/0: dependency on unknown node \"b\""},
      {"cycle", R"({"nodes": [{"id": "a", "kind": "delay", "duration": "1 ms", "deps": ["b"]}, {"id": "b", "kind": "delay", "duration": "1 ms", "deps": ["a"]}]})", "/nodes/0/deps: dependency cycle: \"a\" -> \"b\" -> \"a\""},
      {"bad-unit", R"({"nodes": [{"id": "a", "kind": "delay", "duration": "1 fortnight"}]})", "/nodes/0/duration: bad duration \"1 fortnight\": unknown unit \"fortnight\""},
  };
  for (const Case& c : cases) {
    const std::string name = c.name;
    CAPTURE(name);
    const fs::path input = fs::path("bad") / (std::string(c.name) + ".json");
    const fs::path trace = fs::path("bad") / (std::string(c.name) + "-trace.json");
    const fs::path report = fs::path("bad") / (std::string(c.name) + "-report.json");
    write(input, c.json);
    const Result r = run({"replay", input.string(), "--trace", trace.string(), "--report", report.string()});
    CHECK(r.code == 1);
    CHECK(r.out.empty());
    CHECK(r.err.find("orrery: error: " + input.string() + ":" + c.place) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_FALSE(fs::exists(trace));
    CHECK_FALSE(fs::exists(report));
  }
  const Result missing = run({"replay", "bad/absent.json"});
  CHECK(missing.code == 1);
  CHECK(missing.err.find("orrery: error: bad/absent.json: cannot open file") == 0);
}

// Every example graph is a golden test: its summary must match the .expected file beside it.
TEST_CASE("example graphs reproduce their expected summaries") {
  const fs::path here = fs::current_path();
  fs::current_path(ORRERY_SOURCE_DIR);
  int examples = 0;
  for (const auto& entry : fs::directory_iterator("examples/graphs")) {
    if (entry.path().extension() != ".json") continue;
    const fs::path expected = fs::path(entry.path()).replace_extension(".expected");
    CAPTURE(entry.path().string());
    REQUIRE(fs::exists(expected));
    const Result r = run({"replay", entry.path().lexically_relative(".").string()});
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    CHECK(r.out == slurp(expected));
    ++examples;
  }
  fs::current_path(here);
  CHECK(examples >= 1);
}

TEST_CASE("replay writes a Perfetto timeline and a report, byte-identical across runs") {
  const std::string graph = std::string(ORRERY_SOURCE_DIR) + "/examples/graphs/gpipe_4x4.json";
  const Result first = run({"replay", graph, "--trace", "t1.json", "--report", "r1.json"});
  const Result second = run({"replay", graph, "--trace", "t2.json", "--report", "r2.json"});
  REQUIRE(first.code == 0);
  REQUIRE(second.code == 0);
  CHECK(first.out == second.out);
  CHECK(slurp("t1.json") == slurp("t2.json"));
  CHECK(slurp("r1.json") == slurp("r2.json"));

  // The GPipe example by hand: 0.5 ms load + (4+4-1)*(1+2) ms pipeline + 1.5 ms all-reduce + 0.3 ms optimizer.
  const nlohmann::json report = nlohmann::json::parse(slurp("r1.json"));
  CHECK(report["makespan_ns"] == 23'300'000);
  CHECK(report["streams"]["gpu0/compute"]["busy_ns"] == 12'300'000);
  CHECK(report["graph"]["tasks"] == 41);
  const nlohmann::json trace = nlohmann::json::parse(slurp("t1.json"));
  int spans = 0;
  for (const auto& e : trace["traceEvents"]) spans += e["ph"] == "X" ? 1 : 0;
  CHECK(spans == 41);
}

TEST_CASE("what a command throws maps to one line and an exit code") {
  const auto code_of = [](const std::function<void()>& body, std::string expected_start) {
    std::ostringstream err;
    const int code = orrery::cli::run_guarded(body, err);
    const std::string message = err.str();
    CHECK(message.find(expected_start) == 0);
    CHECK(std::count(message.begin(), message.end(), '\n') == (code == 0 ? 0 : 1));
    return code;
  };
  CHECK(code_of([] {}, "") == 0);
  CHECK(code_of([] { throw orrery::sim::InputError("f.json", "/x", "found 1, expected 2"); },
                "orrery: error: f.json:/x: found 1, expected 2") == 1);
  CHECK(code_of([] { ORRERY_CHECK(1 + 1 == 3, "arithmetic broke"); }, "orrery: internal error: check `1 + 1 == 3` failed") == 2);
  CHECK(code_of([] { throw std::bad_alloc(); }, "orrery: internal error: out of memory") == 2);
  CHECK(code_of([] { throw std::runtime_error("surprise"); }, "orrery: internal error: surprise") == 2);
}

// The real binary: exit codes as the shell sees them.
TEST_CASE("the orrery binary exits 0 on success and 1 on bad input") {
  const auto status = [](const std::string& args) {
    const int raw = std::system((std::string(ORRERY_BINARY) + " " + args + " >/dev/null 2>&1").c_str());
    return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  };
  CHECK(status("--version") == 0);
  CHECK(status(std::string("replay ") + ORRERY_SOURCE_DIR + "/examples/graphs/gpipe_4x4.json") == 0);
  write("bad-unit.json", R"({"nodes": [{"id": "a", "kind": "delay", "duration": "1 lightyear"}]})");
  CHECK(status("replay bad-unit.json") == 1);
  CHECK(status("no-such-command") == 1);
}

// The binary runs itself again with huge pages for its heap (sim/huge_pages.hpp): the same
// output, byte for byte, and the same exit codes as without (ORRERY_HUGE_PAGES=0).
TEST_CASE("the orrery binary gives the same output with and without huge pages") {
  const auto run = [](const std::string& env, const std::string& args, const std::string& out) {
    const int raw = std::system(fmt::format("env -u GLIBC_TUNABLES {} {} {} > {} 2>&1", env, ORRERY_BINARY, args, out).c_str());
    return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  };
  const std::string step = std::string("step ") + ORRERY_SOURCE_DIR + "/examples/scenarios/llama3-70b-h100-64.json";
  CHECK(run("", step, "huge.txt") == 0);
  CHECK(run("ORRERY_HUGE_PAGES=0", step, "plain.txt") == 0);
  CHECK(!slurp("huge.txt").empty());
  CHECK(slurp("huge.txt") == slurp("plain.txt"));
  write("bad-unit.json", R"({"nodes": [{"id": "a", "kind": "delay", "duration": "1 lightyear"}]})");
  CHECK(run("", "replay bad-unit.json", "huge.txt") == 1);
  CHECK(run("ORRERY_HUGE_PAGES=0", "replay bad-unit.json", "plain.txt") == 1);
  CHECK(slurp("huge.txt") == slurp("plain.txt"));
}

// `orrery validate`, one section per test case (CTest runs each as its own test, in parallel:
// tests/CMakeLists.txt): each section's assertions, and its markdown exactly as committed in
// docs/validation.md (the file is the sections in order; regenerate it with the command it names).
namespace {

// ../shared/data, or empty after recording the skip.
std::string validation_data() {
  const std::string data = std::string(ORRERY_SOURCE_DIR) + "/../shared/data";
  for (const char* folder : {"ml-engineering", "nccl-busbw", "flashattention", "megatron-lm", "arena", "pollux-adaptdl"}) {
    if (!fs::is_directory(data + "/" + folder)) {
      orrery::testing::record_skip("../shared/data (ml-engineering, nccl-busbw, flashattention, megatron-lm, arena, pollux-adaptdl) is absent");
      return "";
    }
  }
  return data;
}

// The section's markdown is in the committed document, unchanged.
void check_committed(const std::string& section_md) {
  REQUIRE(!section_md.empty());
  const std::string committed = slurp(std::string(ORRERY_SOURCE_DIR) + "/docs/validation.md");
  CHECK_MESSAGE(committed.find(section_md) != std::string::npos,
                "docs/validation.md differs from what `orrery validate` writes today; regenerate it");
}

}  // namespace

// The published NCCL measurements in ../shared/data: every prediction at 1 GiB and above
// within 10% of the measurement, but one known miss. GB200 NVL72 NVLS on 32 GPUs: this model's
// NVLS busbw grows with the rank count (algbw flat, bus factor 2(n-1)/n), the slide shows the
// same ~850 GB/s as 8 GPUs; the multi-switch NVL72 reduction is not modelled yet.
TEST_CASE("validation: network against published measurements") {
  const std::string data = validation_data();
  if (data.empty()) return;
  std::ostringstream out;
  std::string md;
  const auto summary = orrery::validation::validate_network(data, md, out);
  CHECK(summary.held >= 40);
  REQUIRE(summary.misses.size() == 1);
  CHECK(summary.misses[0].find("GB200 NVL72 NVLink5 SHARP") != std::string::npos);
  check_committed(md);
}

// The NCCL cost model against the 45 published nccl-tests sweeps, each predicted by a fit
// made without it: the committed parameters are the fit's, and the errors stay where they were
// measured (docs/validation.md).
// The floor a cost that grows with the size cannot get under: zero on times that grow; where they
// fall, one level for the pool at its weighted median (on {2, 1} a level L in [1, 2] costs
// (1 - L/2) + (L - 1) = L/2, least at L = 1: errors 0.5 and 0).
TEST_CASE("validation: monotone_floor, the best a size-monotone model can do") {
  using orrery::validation::monotone_floor;
  CHECK(monotone_floor({}) == 0);
  CHECK(monotone_floor({1, 2, 2, 5}) == 0);
  CHECK(monotone_floor({2, 1}) == orrery::testing::Approx(0.25).epsilon(1e-12));
  CHECK(monotone_floor({1, 4, 2, 3}) == orrery::testing::Approx(0.5 / 4).epsilon(1e-12));  // 4 and 2 pooled at 2
  CHECK(monotone_floor({3, 2, 1}) == orrery::testing::Approx((2.0 / 3 + 0.5 + 0.0) / 3).epsilon(1e-12));
}

TEST_CASE("validation: nccl against published nccl-tests sweeps") {
  const std::string data = validation_data();
  if (data.empty()) return;
  std::ostringstream out;
  std::string md;
  const auto summary = orrery::validation::validate_nccl(data, md, out);
  CHECK(summary.sweeps.size() == 45);
  // Refit with: orrery validate --only nccl --print-fit | python3 scripts/refit-nccl.py
  const auto fitted = orrery::models::CommParams::fitted().named();
  const auto fit = summary.params.named();
  REQUIRE(fit.size() == fitted.size());
  for (std::size_t i = 0; i < fit.size(); ++i) {
    CAPTURE(fit[i].first);
    CHECK(fitted[i].second == orrery::testing::Approx(fit[i].second).epsilon(1e-9));
  }
  // Leave-one-out error by size: below 64 KiB, 64 KiB to 16 MiB, 16 MiB and above, all.
  CHECK(summary.loo_mape[0] < 0.47);
  CHECK(summary.loo_mape[1] < 0.30);
  CHECK(summary.loo_mape[2] < 0.17);
  CHECK(summary.loo_mape[3] < 0.30);
  // The issue's targets, on the sweeps whose fabric is stated: those that miss are listed.
  CHECK(summary.stated == 36);
  CHECK(summary.meet_targets >= 6);
  CHECK(md.find(fmt::format("on the {} sweeps whose fabric the source states: {} meet them", summary.stated, summary.meet_targets)) != std::string::npos);
  // The expert dispatch on Blackwell against HybridEP's published GB200 table: its 32-SM rows set
  // the share, within 2% of each; DeepEP's H800 share would be 24 to 55% fast.
  CHECK(md.find("The Blackwell share is within 2.0% of every 32-SM row; DeepEP's H800 share (153 of 200 GB/s) would be 24 to 55% faster") !=
        std::string::npos);
  check_committed(md);
}

// Kernels: the rows that set a roofline parameter are reproduced, and the state-of-the-art
// kernels of each GPU are predicted within 10% on average.
TEST_CASE("validation: kernels against published measurements") {
  const std::string data = validation_data();
  if (data.empty()) return;
  std::ostringstream out;
  std::string md;
  const auto kernels = orrery::validation::validate_kernels(data, md, out);
  CHECK(kernels.worst_calibration_error < 0.005);
  const auto mape = [&](std::string_view table) {
    for (const auto& t : kernels.tables) {
      if (t.name == table) return t.mape;
    }
    FAIL("no table " << table);
    return 1.0;
  };
  CHECK(mape("FlashAttention-2 fwd+bwd, A100 80GB SXM4") < 0.10);
  CHECK(mape("FlashAttention-3 fwd, H100 80GB SXM5") < 0.10);
  CHECK(mape("best-shape matmul (bf16)") > 0);
  check_committed(md);
}

// Steps: Megatron-LM's tables within 10% MAPE over the rows not used for calibration.
TEST_CASE("validation: steps against Megatron-LM's tables") {
  const std::string data = validation_data();
  if (data.empty()) return;
  std::ostringstream out;
  std::string md;
  const orrery::validation::StepFit fit = orrery::validation::fit_steps(data, out, false);
  CHECK(fit.configurations > 90);
  // The committed file holds a leave-one-out fit for every configuration (a refit writes them),
  // re-linearised at every step wherever the kept Jacobian's would err by more than kExactLooAbove
  // (15%): so any row predicted further off than that has its exact fit.
  CHECK(fit.loo_one_step == 0);
  CHECK(!fit.params.leave_one_out_exact.empty());
  for (const auto& row : fit.rows) {
    CAPTURE(row.source);
    if (std::abs(row.loo / row.measured - 1) > orrery::validation::kExactLooAbove) CHECK(row.loo_exact);
  }
  // --check-loo names configurations by their first row; another name is refused before any run.
  std::ostringstream ignored;
  CHECK_THROWS_WITH_AS(orrery::validation::fit_steps(data, ignored, false, {"megatron_core_h100_weak_scaling_2024.csv:99"}),
                       doctest::Contains("--check-loo: found \"megatron_core_h100_weak_scaling_2024.csv:99\", expected the first row of a configuration"),
                       orrery::sim::InputError);
  const auto steps = orrery::validation::validate_steps(fit, md, out);
  REQUIRE(steps.tables.size() == 2);
  // Each row predicted by parameters fitted without it: Megatron-LM's tables at or below the
  // errors of the earlier two-rows-per-GPU calibration, as issue 20 states them ("the Megatron
  // 2021/2024 tables stay at or below today's 8.1% / 8.5%").
  for (const auto& t : steps.tables) {
    CAPTURE(t.name);
    CHECK(t.rows >= 9);
    CHECK(t.mape <= (t.name.find("2021") != std::string::npos ? 0.081 : 0.085));
  }
  check_committed(md);
  // Megatron-Bridge's runs: the rows Orrery can express run (the rest are listed with what is
  // missing), predicted leave-one-out; a regression bound at today's 14.9% (issue 20 asks 10%).
  std::string bridge_md;
  const auto bridge = orrery::validation::validate_bridge(fit, bridge_md, out);
  CHECK(bridge.rows == 142);
  CHECK(bridge.run >= 136);
  CHECK(bridge.mape < 0.16);
  // The release spread: a floor under any release-blind prediction, below the model's error.
  CHECK(bridge.release_floor > 0);
  CHECK(bridge.release_floor < bridge.mape);
  CHECK(bridge.release_floor_worst <= bridge.worst);
  CHECK(bridge_md.find("Not run (" + std::to_string(bridge.rows - bridge.run) + " rows)") != std::string::npos);
  check_committed(bridge_md);
  // torchtitan's runs: every row runs (FSDP2, TP, PP, CP, float8, async TP, eager and compiled);
  // leave-one-out within issue 20's bounds (10% MAPE, worst row 25%).
  std::string titan_md;
  const auto titan = orrery::validation::validate_torchtitan(fit, titan_md, out);
  CHECK(titan.rows == 32);
  CHECK(titan.run == 32);
  CHECK(titan.memory_rows == 20);
  CHECK(titan.mape < 0.10);
  CHECK(titan.worst < 0.25);
  CHECK(titan.memory_mape < 0.10);  // issue 20: within 10%
  check_committed(titan_md);
}

// Sequence balancing: the papers' rankings hold.
TEST_CASE("validation: balance, the papers' rankings") {
  if (validation_data().empty()) return;
  std::ostringstream out;
  std::string md;
  const auto balance = orrery::validation::validate_balance(md, out);
  CHECK(balance.checks == 5);  // the fifth: libra is the global pool while DP <= its pool
  CHECK(balance.rankings_hold);
  check_committed(md);
}

// Cluster: the replay keeps every Philly job and its run times; on Arena's cluster every policy
// completes every job, Tiresias and Gavel beat FIFO, Arena beats Gavel.
TEST_CASE("validation: cluster, the replay and the schedulers' rankings") {
  const std::string data = validation_data();
  if (data.empty()) return;
  std::ostringstream out;
  std::string md;
  const auto cl = orrery::validation::validate_cluster(data, md, out);
  CHECK(cl.trace_jobs == 82247);
  CHECK(cl.replay_jobs == cl.trace_jobs);
  CHECK(cl.replay_avg_jct_s == orrery::testing::Approx(cl.trace_mean_service_s));  // no queueing on 2,000 GPUs
  CHECK(cl.arena_gpus == 1280);
  CHECK(cl.arena_jobs == 1938);
  CHECK(cl.arena_completed_min == cl.arena_jobs);  // every policy completes every job
  CHECK(cl.tiresias_beats_fifo);
  CHECK(cl.gavel_beats_fifo);
  CHECK(cl.arena_beats_gavel);
  check_committed(md);
}

// Multimodal (PipeWeaver's claims), RL (StreamRL's) and the estimate against the emulator: their
// sections' figures, as committed (each claim that holds or not is stated in the text).
TEST_CASE("validation: multimodal, PipeWeaver's claims") {
  if (validation_data().empty()) return;
  std::ostringstream out;
  std::string md;
  const auto mm = orrery::validation::validate_multimodal(md, out);
  CHECK(mm.checks > 0);
  CHECK(mm.held > 0);
  check_committed(md);
}

// MegaScale-Omni's and Maestro's claims (rankings, trends), as committed.
TEST_CASE("validation: compound, MegaScale-Omni's and Maestro's claims") {
  if (validation_data().empty()) return;
  std::ostringstream out;
  std::string md;
  const auto c = orrery::validation::validate_compound(md, out);
  CHECK(c.checks > 0);
  // Every claim but one: since the step parameters' version 6 (GEMM operands at the isolated
  // streaming rate, a cheaper ViT) megascale-omni ties pipeweaver on the half-two-images mix
  // (0.43865 s against 0.43862 s), and docs/validation.md says the claim does not hold there.
  CHECK(c.held >= c.checks - 1);
  check_committed(md);
}

// Mosaic/Apollo's and MuxTune's claims (rankings, trends, closed forms), as committed.
TEST_CASE("validation: multiplexing, Mosaic's and MuxTune's claims") {
  if (validation_data().empty()) return;
  std::ostringstream out;
  std::string md;
  const auto mx = orrery::validation::validate_multiplexing(md, out);
  CHECK(mx.checks > 0);
  // All but one, stated as not holding; check_committed pins which claims and their figures.
  //  - Since step parameters v9 (a per-kernel gap of 11.9 us on Hopper, 7.0 us in v8) MuxTune's
  //    throughput gain over per-task is flat from 2 to 4 tasks, so "both gains grow with the
  //    number of tasks" does not hold.
  //  - From v10 (Hopper's gap 30 us) to v17, Mosaic's gain over temporal multiplexing was level
  //    from one sample per micro-batch to two, so "the gain shrinks as micro-batches grow" did not
  //    hold; under v18 (refitted with GPT-OSS's clamped GLU) to v20 it shrank from one sample on;
  //    under v21 (each parameter block fitted apart: Hopper's host issue time 10 us, its per-kernel
  //    gap 36 us) it was level again from one sample to two (1.28x both); under v22 (Megatron's
  //    FP8 GEMM efficiency tied to bf16's: Hopper's bf16 0.591, its gap 35 us) it shrinks from one
  //    sample on again, barely (1.280x to 1.276x), so that claim holds.
  CHECK(mx.held == mx.checks - 1);
  check_committed(md);
}

TEST_CASE("validation: rl, StreamRL's claims") {
  const std::string data = validation_data();
  if (data.empty()) return;
  std::ostringstream out;
  std::string md;
  const auto rl = orrery::validation::validate_rl(data, md, out);
  CHECK(rl.checks > 0);
  CHECK(rl.held > 0);  // not all: issue 9's open claims (the dispatch gap's growth) are stated as such
  check_committed(md);
}

TEST_CASE("validation: estimate against the emulator and Megatron-Core's plans") {
  const std::string data = validation_data();
  if (data.empty()) return;
  std::ostringstream out;
  std::string md;
  const auto e = orrery::validation::validate_estimate(data, md, out);
  CHECK(e.cases > 0);
  CHECK(e.plan_rows > 0);
  check_committed(md);
}

// The committed document is the header `orrery validate` writes, then the sections in order.
TEST_CASE("validation: the committed document's header") {
  const std::string committed = slurp(std::string(ORRERY_SOURCE_DIR) + "/docs/validation.md");
  CHECK(committed.starts_with("# Validation: simulated vs published measurements\n\n"
                              "Produced by `build/bin/orrery validate --data ../shared/data --out docs/validation.md`; do not edit by hand.\n\n"));
}

TEST_CASE("orrery collective prints time, algbw and busbw, and writes the report and counters") {
  const Result r = run({"collective", "--topology", "dgx-h100:nodes=2", "--op", "all-reduce", "--algo", "ring", "--size", "256MiB",
                        "--report", "coll.json", "--trace", "coll-trace.json"});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("busbw") != std::string::npos);
  const nlohmann::json report = nlohmann::json::parse(slurp("coll.json"));
  CHECK(report["time_s"].get<double>() > 0);
  CHECK(report["algbw_GBps"].get<double>() > 0);
  // busbw = algbw x 2(n-1)/n for an all-reduce on 16 ranks.
  CHECK(report["busbw_GBps"].get<double>() == orrery::testing::Approx(report["algbw_GBps"].get<double>() * 30.0 / 16.0));
  const nlohmann::json trace = nlohmann::json::parse(slurp("coll-trace.json"));
  int counters = 0;
  for (const auto& e : trace["traceEvents"]) counters += e["ph"] == "C" ? 1 : 0;
  CHECK(counters > 16);
}

// --algo auto (the default) runs NCCL's choice and prints it; the flows carry its latency, so
// the simulated time is at least the latency; a forced algorithm and protocol are honoured.
TEST_CASE("orrery collective --algo auto: NCCL's choice, its latency on the flows") {
  const Result r = run({"collective", "--topology", "dgx-h100:nodes=2", "--size", "4MiB", "--report", "auto.json"});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("collective all-reduce (nvls-tree)") != std::string::npos);
  CHECK(r.out.find("nccl model nvls-tree/simple on 16 of 16 channels") != std::string::npos);
  const nlohmann::json auto_report = nlohmann::json::parse(slurp("auto.json"));
  CHECK(auto_report["algo"] == "nvls-tree");
  CHECK(auto_report["nccl"]["algo"] == "nvls-tree");
  CHECK(auto_report["time_s"].get<double>() > auto_report["nccl"]["latency_s"].get<double>());
  const Result forced = run({"collective", "--topology", "dgx-h100:nodes=2", "--size", "4MiB", "--algo", "ring", "--proto", "ll128", "--channels", "8",
                             "--report", "ring.json"});
  REQUIRE(forced.code == 0);
  const nlohmann::json ring = nlohmann::json::parse(slurp("ring.json"));
  CHECK(ring["algo"] == "ring");
  CHECK(ring["nccl"]["proto"] == "ll128");
  CHECK(ring["nccl"]["channels"] == 8);
  CHECK(ring["channels"] == 8);
}

// An ECMP all-to-all: departures at thousands of distinct instants. On a 1 us grid far fewer
// re-solves, the completion time within a few grid steps of exact.
TEST_CASE("orrery collective --quantum re-solves departures on a grid") {
  const std::vector<std::string> base = {"collective", "--topology", "dgx-h100:nodes=32,routing=ecmp", "--op", "all-to-all",
                                         "--algo", "direct", "--size", "32MB"};
  auto args = base;
  args.insert(args.end(), {"--report", "q-exact.json"});
  REQUIRE(run(args).code == 0);
  args = base;
  args.insert(args.end(), {"--quantum", "1us", "--report", "q-1us.json"});
  const Result r = run(args);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("quantum    1.000 us: departures re-solved on this grid") != std::string::npos);
  const nlohmann::json exact = nlohmann::json::parse(slurp("q-exact.json"));
  const nlohmann::json deferred = nlohmann::json::parse(slurp("q-1us.json"));
  CHECK(exact["quantum_s"].get<double>() == 0);
  CHECK(deferred["quantum_s"].get<double>() == orrery::testing::Approx(1e-6));
  CHECK(deferred["solves"].get<std::int64_t>() * 10 < exact["solves"].get<std::int64_t>());
  const double gap_ns = deferred["time_ns"].get<double>() - exact["time_ns"].get<double>();
  CHECK(std::abs(gap_ns) <= 5000);
}

TEST_CASE("orrery collective rejects bad input with one line") {
  const auto error_of = [](std::vector<std::string> args) {
    args.insert(args.begin(), "collective");
    const Result r = run(args);
    CHECK(r.code == 1);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    return r.err;
  };
  CHECK(error_of({"--op", "all-reduc"}).find("unknown collective \"all-reduc\"; did you mean \"all-reduce\"?") != std::string::npos);
  CHECK(error_of({"--algo", "rign"}).find("did you mean \"ring\"?; valid: auto, ring, tree, nvls, nvls-tree, pat, hierarchical, direct") !=
        std::string::npos);
  CHECK(error_of({"--topology", "dgx-h10"}).find("did you mean \"dgx-h100\"?") != std::string::npos);
  CHECK(error_of({"--size", "1 GiX"}).find("<command line>:--size: bad byte amount \"1 GiX\"") != std::string::npos);
  CHECK(error_of({"--quantum", "fast"}).find("<command line>:--quantum: bad duration \"fast\"") != std::string::npos);
  CHECK(error_of({"--quantum", "-1us"}).find("<command line>:--quantum") != std::string::npos);
  CHECK(error_of({"--algo", "nvls", "--topology", "dgx-a100"}).find("NVLS needs an NVSwitch that reduces in the network") != std::string::npos);
  CHECK(error_of({"--algo", "nvls-tree"}).find("NVLS-tree runs across nodes only") != std::string::npos);
  CHECK(error_of({"--proto", "ll64"}).find("<command line>:--proto: unknown NCCL protocol \"ll64\"; valid: ll, ll128, simple") != std::string::npos);
  CHECK(error_of({"--algo", "pat"}).find("PAT runs only all-gather and reduce-scatter") != std::string::npos);
  write("broken-topology.json", R"({"nodes": [{"name": "g", "kind": "gpu"}], "links": [{"between": ["g", "x"], "bandwidth": "1 GB/s", "kind": "nvlink"}]})");
  CHECK(error_of({"--topology", "broken-topology.json"}).find("broken-topology.json:/links/0/between/1: unknown node \"x\"") != std::string::npos);
}

TEST_CASE("orrery topology summarises a fabric and saves it as JSON that loads back") {
  const Result r = run({"topology", "--topology", "dgx-h100:nodes=2,fabric=fat-tree", "--save", "fabric.json"});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("GPUs       16 on 2 servers") != std::string::npos);
  const Result again = run({"topology", "--topology", "fabric.json"});
  REQUIRE(again.code == 0);
  // The same summary, but for the first line (the topology's name) and the "saved to" line.
  const auto body = [](const std::string& text) {
    const std::string rest = text.substr(text.find('\n') + 1);
    return rest.substr(0, rest.find("saved to"));
  };
  CHECK(body(again.out) == body(r.out));
  CHECK(run({"topology", "--topology", "no-such.json"}).code == 1);
}

TEST_CASE("orrery collective --alltoallv reads per-pair sizes, with line-precise errors") {
  write("pairs.csv", "from,to,bytes\n0,1,1GB\n0,2,1GB\n3,4,2GB\n");
  const Result r = run({"collective", "--op", "all-to-all", "--algo", "direct", "--alltoallv", "pairs.csv", "--report", "v.json"});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("flows      3 ") != std::string::npos);
  write("bad-pairs.csv", "from,to,bytes\n0,1,1GB\n0,9,1GB\n");
  const Result bad = run({"collective", "--op", "all-to-all", "--algo", "direct", "--alltoallv", "bad-pairs.csv"});
  CHECK(bad.code == 1);
  CHECK(bad.err.find("bad-pairs.csv:line 3: to 9 is not a rank of 0..7") != std::string::npos);
  write("bad-size.csv", "from,to,bytes\n0,1,lots\n");
  CHECK(run({"collective", "--op", "all-to-all", "--algo", "direct", "--alltoallv", "bad-size.csv"}).err.find("bad-size.csv:line 2: bad byte amount \"lots\"") !=
        std::string::npos);
}

TEST_CASE("orrery collective reports are byte-identical across runs") {
  const std::vector<std::string> args = {"collective", "--topology", "dgx-h100:nodes=2,fabric=fat-tree,oversubscription=2,leaf_ports=4",
                                         "--op", "all-reduce", "--size", "64MiB"};
  auto first = args, second = args;
  first.insert(first.end(), {"--report", "det1.json", "--trace", "det1-trace.json"});
  second.insert(second.end(), {"--report", "det2.json", "--trace", "det2-trace.json"});
  REQUIRE(run(first).code == 0);
  REQUIRE(run(second).code == 0);
  CHECK(slurp("det1.json") == slurp("det2.json"));
  CHECK(slurp("det1-trace.json") == slurp("det2-trace.json"));
}

TEST_CASE("orrery gpus lists the catalog with sources, and takes a catalog file") {
  const Result r = run({"gpus"});
  REQUIRE(r.code == 0);
  for (const char* name : {"A100-40GB", "A100-80GB", "H100", "H200", "B200", "GB200", "B300", "GB300", "MI300X"}) CHECK(r.out.find(name) != std::string::npos);
  // Blackwell's FP4 peaks: B200 10,000 TFLOP/s dense, B300 15,000 (the fp4 column).
  CHECK(r.out.find("4500   10000") != std::string::npos);
  CHECK(r.out.find("4500   15000") != std::string::npos);
  CHECK(r.out.find("sources:") != std::string::npos);
  {
    std::ofstream f("extra-gpus.json");
    f << R"({"gpus": [{"name": "H100-PCIe", "base": "H100", "peak_flops": {"bf16": "756 TFLOP/s"}, "sm_count": 114}]})";
  }
  const Result extra = run({"gpus", "--gpus", "extra-gpus.json"});
  REQUIRE(extra.code == 0);
  CHECK(extra.out.find("H100-PCIe") != std::string::npos);
  {
    std::ofstream f("bad-gpus.json");
    f << R"({"gpus": [{"name": "H100-PCIe", "base": "H100", "sm_count": "many"}]})";
  }
  const Result bad = run({"gpus", "--gpus", "bad-gpus.json"});
  CHECK(bad.code == 1);
  CHECK(bad.err.find("bad-gpus.json:/gpus/0/sm_count") != std::string::npos);
}

TEST_CASE("orrery cost: roofline and calibrated, with the fallbacks in the report") {
  const Result r = run({"cost", "--gpu", "H100", "--kernel", "gemm:m=8192,n=8192,k=8192", "--kernel",
                        "attention_fwd:seqlen=4096,batch=2,heads=32,kv_heads=8,head_dim=128,causal=1", "--report", "cost.json"});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("TFLOP/s") != std::string::npos);
  const nlohmann::json report = nlohmann::json::parse(slurp("cost.json"));
  CHECK(report["model"] == "roofline");
  CHECK(report["kernels"][0]["time_s"].get<double>() > 0);

  // Fit a recorded CPU profile (tests/cli/fixtures/cpu-profile-quick.json, written by `orrery
  // calibrate measure --device cpu --quick --repetitions 2`: a live measurement would make the
  // test depend on the machine), and cost with the curves: a point inside the grid is
  // calibrated, one outside falls back to the roofline and is counted.
  const std::string profile = std::string(ORRERY_SOURCE_DIR) + "/tests/cli/fixtures/cpu-profile-quick.json";
  const Result fit = run({"calibrate", "fit", profile, "-o", "cpu-curves.json"});
  REQUIRE(fit.code == 0);
  CHECK(fit.out.find("loo interp") != std::string::npos);
  const Result cal = run({"cost", "--gpu", "H100", "--calibration", "cpu-curves.json", "--kernel", "gemm:m=200,n=300,k=400,dtype=fp32",
                          "--kernel", "gemm:m=8192,n=8192,k=8192", "--report", "cal.json"});
  REQUIRE(cal.code == 0);
  const nlohmann::json cr = nlohmann::json::parse(slurp("cal.json"));
  CHECK(cr["kernels"][0]["source"] == "calibrated");
  CHECK(cr["kernels"][1]["source"] == "roofline");
  CHECK(cr["counters"]["fallback.gemm"] == 1);
  CHECK(cr["counters"]["calibrated.gemm"] == 1);

  const Result bad_kernel = run({"cost", "--kernel", "gemm:m=8,n=8"});
  CHECK(bad_kernel.code == 1);
  CHECK(bad_kernel.err.find("<command line>:--kernel #1: k: found 0, expected a positive size") != std::string::npos);
  const Result bad_gpu = run({"cost", "--gpu", "H1000", "--kernel", "gemm:m=8,n=8,k=8"});
  CHECK(bad_gpu.code == 1);
  CHECK(bad_gpu.err.find("did you mean \"H100\"?") != std::string::npos);
  const Result fp8 = run({"cost", "--gpu", "A100", "--kernel", "gemm:m=8,n=8,k=8,dtype=fp8"});
  CHECK(fp8.code == 1);
  CHECK(fp8.err.find("A100-80GB has no fp8 tensor math") != std::string::npos);
  const Result missing = run({"calibrate", "fit", "no-such-profile.json"});
  CHECK(missing.code == 1);
  CHECK(missing.err.find("no-such-profile.json") != std::string::npos);
}

TEST_CASE("orrery step: the default scenario, its report keys and timeline") {
  const Result r = run({"step", "--report", "step.json", "--trace", "step-trace.json"});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("MFU") != std::string::npos);
  const nlohmann::json report = nlohmann::json::parse(slurp("step.json"));
  for (const char* key : {"step_time_s", "tokens_per_s", "tflops_per_gpu", "mfu", "bubble_fraction", "peak_memory_bytes", "oom"}) {
    CAPTURE(key);
    CHECK(report.contains(key));
  }
  CHECK(report["step_time_s"].get<double>() > 0);
  CHECK(report["mfu"].get<double>() > 0.2);
  CHECK(report["mfu"].get<double>() < 0.9);
  CHECK(report["oom"] == false);
  CHECK(report["stages"].size() == 2);
  const nlohmann::json trace = nlohmann::json::parse(slurp("step-trace.json"));
  CHECK(trace["traceEvents"].size() > 50);
  int counters = 0, transfers = 0;
  for (const auto& e : trace["traceEvents"]) {
    counters += e["ph"] == "C" ? 1 : 0;
    transfers += e.contains("cat") && e["cat"] == "transfer" ? 1 : 0;
  }
  CHECK(counters > 10);   // link use of the simulated GPUs
  CHECK(transfers > 10);  // pipeline sends and data-parallel buckets
  // Deterministic: the same scenario gives byte-identical reports.
  REQUIRE(run({"step", "--report", "step2.json"}).code == 0);
  CHECK(slurp("step.json") == slurp("step2.json"));
  // Reuse changes nothing.
  REQUIRE(run({"step", "--no-reuse", "--report", "step3.json"}).code == 0);
  CHECK(nlohmann::json::parse(slurp("step3.json"))["step_time_s"] == report["step_time_s"]);
}

TEST_CASE("orrery step --comm: NCCL's costs by default, line rate on request, named in the output and the report; bad values refused") {
  const Result l = run({"step", "--comm", "line-rate", "--report", "step-line.json"});
  REQUIRE(l.code == 0);
  CHECK(l.out.find("comm       line rate") != std::string::npos);
  const Result r = run({"step", "--report", "step-nccl.json"});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("comm       as NCCL runs it") != std::string::npos);
  const nlohmann::json line = nlohmann::json::parse(slurp("step-line.json"));
  const nlohmann::json nccl = nlohmann::json::parse(slurp("step-nccl.json"));
  CHECK(line["comm_model"] == "line-rate");
  CHECK(nccl["comm_model"] == "nccl");
  // The default scenario spans servers: NCCL's latency and NIC share change its step.
  CHECK(nccl["step_time_s"].get<double>() != line["step_time_s"].get<double>());
  const Result bad = run({"step", "--comm", "nccl2", "--report", "step-bad.json"});
  CHECK(bad.code == 1);
  CHECK(bad.err.find("--comm: unknown communication model \"nccl2\"; valid: line-rate, nccl") != std::string::npos);
  CHECK(!std::filesystem::exists("step-bad.json"));
  // The estimate takes the closed form of the same model: NCCL's by default, the ring's at line rate.
  REQUIRE(run({"step", "--estimate", "--report", "est-nccl.json"}).code == 0);
  REQUIRE(run({"step", "--estimate", "--comm", "line-rate", "--report", "est-line.json"}).code == 0);
  const nlohmann::json en = nlohmann::json::parse(slurp("est-nccl.json"));
  const nlohmann::json el = nlohmann::json::parse(slurp("est-line.json"));
  CHECK(en["comm_model"] == "nccl");
  CHECK(el["comm_model"] == "line-rate");
  CHECK(en["step_time_s"].get<double>() != el["step_time_s"].get<double>());
  // Each estimate is near its own emulation.
  CHECK(en["step_time_s"].get<double>() == orrery::testing::Approx(nccl["step_time_s"].get<double>()).epsilon(0.1));
  CHECK(el["step_time_s"].get<double>() == orrery::testing::Approx(line["step_time_s"].get<double>()).epsilon(0.1));
}

TEST_CASE("orrery step: bad scenarios get one precise error") {
  const auto fails = [](const std::string& json) {
    {
      std::ofstream f("bad-step.json");
      f << json;
    }
    const Result r = run({"step", "bad-step.json"});
    CHECK(r.code == 1);
    return r.err;
  };
  const std::string cluster = R"("cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=2"})";
  CHECK(fails(R"({"model": "llama3-9b", )" + cluster + R"(, "plan": {"global_batch": 16}})")
            .find("bad-step.json:/model: unknown model \"llama3-9b\"; did you mean \"llama3-8b\"?; known: gpt3-175b, llama3-8b") != std::string::npos);
  CHECK(fails(R"({"model": "llama3-8b", )" + cluster + R"(, "plan": {"tp": 3, "global_batch": 16}})")
            .find("bad-step.json:/plan/tp: tp=3 does not divide 32 attention heads") != std::string::npos);
  CHECK(fails(R"({"model": "llama3-8b", )" + cluster + R"(, "plan": {"tp": 8, "dp": 1, "global_batch": 16}})")
            .find("bad-step.json:/plan: tp=8 x pp=1 x dp=1 x cp=1 = 8 GPUs, but the cluster has 16") != std::string::npos);
  CHECK(fails(R"({"model": "llama3-8b", )" + cluster + R"(, "plan": {"tp": 2, "micro_batch": 3, "global_batch": 16}})")
            .find("bad-step.json:/plan/global_batch: micro_batch=3 x dp=8 = 24 does not divide the global batch of 16 sequences") != std::string::npos);
  CHECK(fails(R"({"model": "llama3-8b", )" + cluster + R"(, "plan": {"tp": 2, "global_batch": 16, "schedule": "1f1c"}})")
            .find("bad-step.json:/plan/schedule") != std::string::npos);
  CHECK(fails(R"({"model": "llama3-70b", )" + cluster + R"(, "plan": {"global_batch": 16, "seq_len": 8192}, "fail_on_oom": true})")
            .find("bad-step.json:/plan: out of memory: stage 0 needs") != std::string::npos);
  CHECK(fails(R"({"model": "llama3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=2"}, "plan": {"global_batch": 16, "recompute": "some"}})")
            .find("bad-step.json:/plan/recompute: found \"some\", expected none, selective, full or op-selective") != std::string::npos);
  CHECK(fails(R"({"model": "llama3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=2"}, "plan": {"global_batch": 16, "recompute_modules": ["layernorm"]}})")
            .find("bad-step.json:/plan/recompute_modules: found recompute_modules with recompute \"none\", expected recompute \"selective\"") != std::string::npos);
  CHECK(fails(R"({"model": "llama3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=2"}, "plan": {"global_batch": 16, "recompute": "selective", "recompute_modules": ["layernorm", "shared_experts"]}})")
            .find("bad-step.json:/plan/recompute_modules/1: found \"shared_experts\", expected core_attn, layernorm, moe_act, mla_up_proj, mlp or moe") !=
        std::string::npos);
  CHECK(fails(R"({"model": "llama3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=2"}, "plan": {"global_batch": 16, "recompute": "selective", "recompute_modules": ["moe_act", "moe_act"]}})")
            .find("bad-step.json:/plan/recompute_modules/1: found \"moe_act\" twice, expected each module once") != std::string::npos);
  CHECK(fails(R"({"model": "llama3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=2"}, "plan": {"global_batch": 16, "sharding": "fsdp3"}})")
            .find("bad-step.json:/plan/sharding: found \"fsdp3\", expected megatron or fsdp2") != std::string::npos);
  CHECK(fails(R"({"model": "llama3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=2"}, "plan": {"global_batch": 16, "framework": "pytorch-compiled"}})")
            .find("bad-step.json:/plan/framework: found \"pytorch-compiled\"; did you mean \"pytorch-compile\"?, expected megatron, pytorch, pytorch-compile") !=
        std::string::npos);
  CHECK(fails(R"({"model": "llama3-8b", )" + cluster + R"(, "plan": {"global_batch": 16, "grad_reduce": "int8"}})")
            .find("bad-step.json:/plan/grad_reduce: found \"int8\", expected fp32, bf16 or fp16") != std::string::npos);
  CHECK(fails(R"({"model": "llama3-8b", "cluster": {"gpu": "A100-80GB", "topology": "dgx-a100:nodes=2"}, "plan": {"global_batch": 16, "precision": "fp8"}})")
            .find("bad-step.json:/plan/precision: fp8 needs fp8 tensor cores (Hopper and later), which the A100-80GB lacks") != std::string::npos);
  CHECK(fails(R"({"model": "llama3-8b", )" + cluster + R"(, "plan": {"global_batch": 16, "precision": "nvfp4"}})")
            .find("bad-step.json:/plan/precision: nvfp4 needs block-scaled tensor cores") != std::string::npos);
  CHECK(fails(R"({"model": {"name": "tiny", "base": "llama3-8b", "layers": 0}, )" + cluster + R"(, "plan": {"global_batch": 16}})")
            .find("bad-step.json:/model/layers") != std::string::npos);
  // Fine-tuning and layer kinds.
  CHECK(fails(R"({"model": "llama3-8b", )" + cluster + R"(, "plan": {"global_batch": 16, "lora": {"rank": 8192}}})")
            .find("bad-step.json:/plan/lora: rank: found 8192, expected 1 to llama3-8b's hidden size 4096") != std::string::npos);
  CHECK(fails(R"({"model": "llama3-8b", )" + cluster + R"(, "plan": {"global_batch": 16, "lora": {"targets": ["q_proj"]}}})")
            .find("bad-step.json:/plan/lora/targets/0: found \"q_proj\", expected linear_qkv, linear_proj, linear_fc1 or linear_fc2") !=
        std::string::npos);
  CHECK(fails(R"({"model": {"name": "h", "base": "nemotron-3-nano", "layer_pattern": "MEM*EMQM"}, )" + cluster + R"(, "plan": {"global_batch": 16}})")
            .find("bad-step.json:/model: model \"h\": layer_pattern: found \"Q\" at position 7, expected M (Mamba-2), * (attention)") !=
        std::string::npos);
  CHECK(fails(R"({"model": {"name": "w", "base": "gpt-oss-20b", "sliding_window": 8192}, )" + cluster +
              R"(, "plan": {"ep": 16, "global_batch": 16, "seq_len": 4096}})")
            .find("bad-step.json:/plan/seq_len: w's sliding window of 8192 tokens is longer than seq_len 4096") != std::string::npos);
  CHECK(fails(R"({"model": {"name": "c", "base": "gpt-oss-20b", "glu_clamp": -7}, )" + cluster + R"(, "plan": {"ep": 16, "global_batch": 16}})")
            .find("bad-step.json:/model/glu_clamp: found a number -7, expected a clamp limit from 0 (none) to 1e6") != std::string::npos);
  // Layers and modules out of the plan's precision (Megatron's first_last_layers_bf16 and quant_recipe).
  const std::string b200 = R"("cluster": {"gpu": "B200", "topology": "dgx-b200:nodes=2"})";
  CHECK(fails(R"({"model": "llama3-8b", )" + b200 + R"(, "plan": {"global_batch": 16, "precision": "nvfp4", "module_precision": {"linear_qk": "bf16"}}})")
            .find("bad-step.json:/plan/module_precision/linear_qk: unknown key \"linear_qk\"; did you mean \"linear_qkv\"?") != std::string::npos);
  CHECK(fails(R"({"model": "llama3-8b", )" + b200 + R"(, "plan": {"global_batch": 16, "precision": "nvfp4", "bf16_layers": {"last": 40}}})")
            .find("bad-step.json:/plan/bf16_layers: found first 0 and last 40, expected counts from 0 that add up to at most llama3-8b's 32 layers") !=
        std::string::npos);
  CHECK(fails(R"({"model": "llama3-8b", )" + cluster + R"(, "plan": {"global_batch": 16, "precision": "fp8", "module_precision": {"linear_fc1": "mxfp8"}}})")
            .find("bad-step.json:/plan/module_precision/linear_fc1: found mxfp8, which runs on the fp8 tensor cores as the plan's fp8 does") !=
        std::string::npos);
  {
    std::ofstream f("mixed-precision-step.json");
    f << R"({"model": "llama3-8b", )" << b200
      << R"(, "plan": {"global_batch": 16, "precision": "nvfp4", "bf16_layers": {"first": 1, "last": 2}, "module_precision": {"linear_qkv": "bf16", "linear_fc2": "mxfp8"}}})";
  }
  CHECK(run({"step", "mixed-precision-step.json"}).code == 0);
  // A LoRA scenario runs.
  {
    std::ofstream f("lora-step.json");
    f << R"({"model": "llama3-8b", )" << cluster << R"(, "plan": {"global_batch": 16, "lora": {"rank": 16, "targets": ["linear_qkv", "linear_fc2"]}}})";
  }
  CHECK(run({"step", "lora-step.json"}).code == 0);
}

TEST_CASE("every example scenario runs, deterministically") {
  int ran = 0;
  for (const auto& entry : fs::directory_iterator(std::string(ORRERY_SOURCE_DIR) + "/examples/scenarios")) {
    if (entry.path().extension() != ".json") continue;
    const std::string path = entry.path().string();
    CAPTURE(path);
    const Result a = run({"step", path, "--report", "example-a.json"});
    REQUIRE(a.code == 0);
    REQUIRE(run({"step", path, "--report", "example-b.json"}).code == 0);
    CHECK(slurp("example-a.json") == slurp("example-b.json"));
    CHECK(nlohmann::json::parse(slurp("example-a.json"))["oom"] == false);
    ++ran;
  }
  CHECK(ran >= 3);
}

TEST_CASE("every example cluster scenario runs, deterministically (on a few jobs of its format)") {
  const std::string data = std::string(ORRERY_SOURCE_DIR) + "/../shared/data";
  if (!fs::exists(data + "/arena") || !fs::exists(data + "/pollux-adaptdl")) {
    orrery::testing::record_skip("../shared/data (arena, pollux-adaptdl) is absent; the examples read it");
    return;
  }
  {
    std::ofstream f("ex-philly.csv");
    f << "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,3600,16,57600,0\n2017-10-09 07:02:55,600,8,4800,0\n"
         "2017-10-09 07:03:10,1200,1,1200,0\n";
  }
  {
    std::ofstream f("ex-arena.csv");
    f << "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,gpu_type\n1,0,500,bert__1.3B,0,128,4,a100\n"
         "2,10,300,moe__1.3B,0,256,8,v100\n";
  }
  int ran = 0;
  for (const auto& entry : fs::directory_iterator(std::string(ORRERY_SOURCE_DIR) + "/examples/clusters")) {
    if (entry.path().extension() != ".json") continue;
    const std::string path = entry.path().string();
    CAPTURE(path);
    const std::string jobs = nlohmann::json::parse(slurp(path))["jobs"]["format"] == "arena" ? "ex-arena.csv" : "ex-philly.csv";
    for (const char* policy : {"fifo", "arena"}) {
      CAPTURE(policy);
      const Result a = run({"cluster", path, "--jobs", jobs, "--policy", policy, "--report", "ex-a.json"});
      REQUIRE(a.code == 0);
      REQUIRE(run({"cluster", path, "--jobs", jobs, "--policy", policy, "--report", "ex-b.json"}).code == 0);
      CHECK(slurp("ex-a.json") == slurp("ex-b.json"));
      CHECK(nlohmann::json::parse(slurp("ex-a.json"))["jobs_completed"].get<int>() >= 2);
    }
    ++ran;
  }
  CHECK(ran >= 3);
}

namespace {
std::string balance_scenario(int dp, std::int64_t seq_len, const std::string& nic = "", int cp = 8) {
  return orrery::validation::balance_scenario_json(dp, seq_len, nic, cp);
}

std::map<std::string, double> speedups(const std::string& scenario, const std::string& policies, int steps = 24) {
  {
    std::ofstream f("balance.json");
    f << scenario;
  }
  const Result r = run({"compare", "balance.json", "--policies", policies, "--steps", std::to_string(steps), "--report", "balance-report.json"});
  REQUIRE(r.code == 0);
  std::map<std::string, double> out;
  const nlohmann::json report = nlohmann::json::parse(slurp("balance-report.json"));
  for (const auto& p : report["policies"]) out[p["name"].get<std::string>()] = p["speedup"].get<double>();
  return out;
}
}  // namespace

TEST_CASE("orrery compare: the rankings the papers report, on long-tail workloads") {
  // Libra > WLB-LLM > packing at 256K.
  const auto s = speedups(balance_scenario(8, 262144), "packing,wlb-llm,libra");
  CHECK(s.at("packing") == 1.0);
  CHECK(s.at("wlb-llm") > 1.1);
  CHECK(s.at("libra") > s.at("wlb-llm"));
  // The gain grows with the data-parallel degree...
  const double dp2 = speedups(balance_scenario(2, 262144), "packing,libra").at("libra");
  const double dp32 = speedups(balance_scenario(32, 262144), "packing,libra").at("libra");
  CHECK(dp2 < s.at("libra"));
  CHECK(s.at("libra") < dp32);
  // ... and with the context length.
  CHECK(speedups(balance_scenario(8, 65536), "packing,libra").at("libra") < s.at("libra"));
  // A global pool loses to bounded pools once it has to cross servers (no CP: a pool of 8 is
  // one NVLink server, the global pool of 64 spans 8), the more so on a slow network.
  const auto local = speedups(balance_scenario(64, 65536, "", 1), "packing,libra,global-pool");
  CHECK(local.at("global-pool") < local.at("libra"));
  const auto slow = speedups(balance_scenario(64, 65536, "100Gb/s", 1), "packing,libra,global-pool");
  CHECK(slow.at("global-pool") < 1.0);
  CHECK(slow.at("libra") > 1.0);
  CHECK(slow.at("global-pool") < slow.at("libra"));
}

TEST_CASE("orrery compare: report, determinism, timeline, and bad input") {
  {
    std::ofstream f("balance.json");
    f << balance_scenario(4, 65536);
  }
  const Result a = run({"compare", "balance.json", "--policies", "packing,sorted-greedy,libra:pool=2", "--steps", "10", "--report", "c1.json",
                        "--trace", "c-trace.json", "--trace-step", "3"});
  REQUIRE(a.code == 0);
  CHECK(a.out.find("imbalance") != std::string::npos);
  const nlohmann::json rep = nlohmann::json::parse(slurp("c1.json"));
  REQUIRE(rep["policies"].size() == 3);
  for (const char* key : {"name", "step_time_p50_s", "step_time_p99_s", "tokens_per_s", "imbalance"}) CHECK(rep["policies"][0].contains(key));
  CHECK(nlohmann::json::parse(slurp("c-trace.json"))["traceEvents"].size() > 10);
  REQUIRE(run({"compare", "balance.json", "--policies", "packing,sorted-greedy,libra:pool=2", "--steps", "10", "--report", "c2.json"}).code == 0);
  CHECK(slurp("c1.json") == slurp("c2.json"));

  const Result zero_pool = run({"compare", "balance.json", "--policies", "packing,libra:pool=0"});
  CHECK(zero_pool.code == 1);
  CHECK(zero_pool.err.find("libra/pool: found 0, expected 1 or more") != std::string::npos);
  const Result odd_pool = run({"compare", "balance.json", "--policies", "packing,libra:pool=3", "--steps", "2"});
  CHECK(odd_pool.code == 1);
  CHECK(odd_pool.err.find("pool size 3 does not divide dp = 4") != std::string::npos);
  const Result unknown = run({"compare", "balance.json", "--policies", "packing,libro"});
  CHECK(unknown.code == 1);
  CHECK(unknown.err.find("did you mean \"libra\"?") != std::string::npos);
  // Traces: an empty batch, a negative or fractional length, each with its line.
  const auto trace_error = [](const std::string& name, const std::string& text) {
    {
      std::ofstream f(name);
      f << text;
    }
    {
      std::ofstream f("balance-trace.json");
      f << R"({"model": "qwen3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=4"},
        "plan": {"tp": 1, "cp": 8, "cp_kind": "ulysses", "dp": 4, "global_batch": 8, "seq_len": 65536},
        "workload": {"trace": ")" + name + R"("}})";
    }
    const Result r = run({"compare", "balance-trace.json", "--steps", "2"});
    CHECK(r.code == 1);
    return r.err;
  };
  CHECK(trace_error("empty.jsonl", "[100, 200]\n[]\n").find("empty.jsonl:line 2: found an empty batch") != std::string::npos);
  CHECK(trace_error("neg.jsonl", "[100, -5]\n").find("neg.jsonl:line 1: found document length -5, expected a positive whole number") !=
        std::string::npos);
  CHECK(trace_error("frac.csv", "step,doc_len\n0,100\n0,2.5\n").find("frac.csv:line 3: found document length 2.5") != std::string::npos);
  CHECK(trace_error("big.jsonl", "[100]\n[600000]\n").find("big.jsonl:line 2: found a batch of 600000 tokens, more than the step holds") !=
        std::string::npos);
  // A good trace runs.
  {
    std::ofstream f("good.csv");
    f << "step,doc_len\n0,65536\n0,1000\n1,30000\n1,30000\n";
  }
  {
    std::ofstream f("balance-good.json");
    f << R"({"model": "qwen3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=4"},
      "plan": {"tp": 1, "cp": 8, "cp_kind": "ulysses", "dp": 4, "global_batch": 8, "seq_len": 65536},
      "workload": {"trace": "good.csv"}})";
  }
  CHECK(run({"compare", "balance-good.json", "--steps", "4"}).code == 0);
}

TEST_CASE("orrery doclens: generate and convert document-length traces") {
  const Result g = run({"doclens", "generate", "--median", "644", "--p99", "71000", "--max", "1048576", "--tokens", "1048576", "--batches", "3",
                        "--seed", "5", "-o", "gen.jsonl"});
  REQUIRE(g.code == 0);
  const std::string gen = slurp("gen.jsonl");
  CHECK(std::count(gen.begin(), gen.end(), '\n') == 3);
  const std::string data = std::string(ORRERY_SOURCE_DIR) + "/../shared/data";
  if (!fs::is_directory(data + "/distca-lengths")) {
    orrery::testing::record_skip("../shared/data/distca-lengths is absent");
    return;
  }
  const Result c = run({"doclens", "convert", "--source", "distca-prolong", "--data", data, "--tokens", "262144", "-o", "prolong.jsonl"});
  REQUIRE(c.code == 0);
  CHECK(c.out.find("full batches") != std::string::npos);
  const Result bad = run({"doclens", "convert", "--source", "distca-prolng", "--data", data, "--tokens", "262144", "-o", "x.jsonl"});
  CHECK(bad.code == 1);
  CHECK(bad.err.find("did you mean \"distca-prolong\"?") != std::string::npos);
}

TEST_CASE("orrery cluster: report keys, job records, bad input") {
  {
    std::ofstream f("jobs.csv");
    f << "name,submit,n,secs\na,0,4,100\nb,10,4,50\nc,20,8,30\nd,25,2,bad\n";
  }
  {
    std::ofstream f("cluster.json");
    f << R"({"cluster": {"pools": [{"gpu": "a100", "nodes": 1, "gpus_per_node": 8}]},
      "jobs": {"format": "csv", "path": "jobs.csv", "columns": {"arrival": "submit", "gpus": "n", "duration": "secs", "id": "name"}},
      "restart_overhead_s": 10})";
  }
  const Result bad_row = run({"cluster", "cluster.json"});
  CHECK(bad_row.code == 1);
  CHECK(bad_row.err.find("jobs.csv:line 5:column secs") != std::string::npos);
  const Result r = run({"cluster", "cluster.json", "--policy", "tiresias:threshold=100;queues=2;interval=20", "--skip-bad-rows", "--report",
                        "cluster-report.json", "--jobs-csv", "cluster-jobs.csv"});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("JCT") != std::string::npos);
  const nlohmann::json rep = nlohmann::json::parse(slurp("cluster-report.json"));
  for (const char* key : {"jobs_completed", "avg_jct_s", "p50_jct_s", "p99_jct_s", "avg_queue_s", "makespan_s", "gpu_utilization"}) {
    CAPTURE(key);
    CHECK(rep.contains(key));
  }
  CHECK(rep["jobs_completed"] == 3);
  CHECK(rep["skipped_rows"] == 1);
  const std::string jobs = slurp("cluster-jobs.csv");
  CHECK(std::count(jobs.begin(), jobs.end(), '\n') == 4);
  const Result unknown = run({"cluster", "cluster.json", "--policy", "tiresia"});
  CHECK(unknown.code == 1);
  CHECK(unknown.err.find("did you mean \"tiresias\"?") != std::string::npos);
  {
    std::ofstream f("jobs-big.csv");
    f << "name,submit,n,secs\nhuge,0,16,100\n";
  }
  const Result too_big = run({"cluster", "cluster.json", "--jobs", "jobs-big.csv"});
  CHECK(too_big.code == 1);
  CHECK(too_big.err.find("job asks for 16 any GPUs; no pool of the cluster can run it") != std::string::npos);
}

TEST_CASE("orrery cluster --timeline and orrery compare on a cluster scenario") {
  {
    std::ofstream f("tl-jobs.csv");
    f << "name,submit,n,secs\na,0,3,100\nb,0,3,50\nc,10,2,30\nd,20,4,10\n";
  }
  {
    std::ofstream f("tl-cluster.json");
    f << R"({"cluster": {"pools": [{"gpu": "a100", "nodes": 2, "gpus_per_node": 4}]},
      "jobs": {"format": "csv", "path": "tl-jobs.csv", "columns": {"arrival": "submit", "gpus": "n", "duration": "secs", "id": "name"}},
      "throughput": {"source": "trace", "scaling_exponent": 1, "spread_factor": 0.5}})";
  }
  const Result r = run({"cluster", "tl-cluster.json", "--timeline", "tl.json"});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("1 starts spread over more nodes than needed") != std::string::npos);  // c spans both nodes
  const nlohmann::json tl = nlohmann::json::parse(slurp("tl.json"));
  std::map<std::string, double> gpu_seconds;
  std::set<std::string> nodes;
  for (const auto& e : tl["traceEvents"]) {
    if (e["ph"] == "M") nodes.insert(e["args"]["name"].get<std::string>());
    if (e["ph"] == "X") gpu_seconds[e["name"].get<std::string>()] += e["args"]["gpus"].get<double>() * e["dur"].get<double>() / 1e6;
  }
  CHECK(nodes == std::set<std::string>{"a100-0", "a100-1"});
  CHECK(gpu_seconds["a"] == orrery::testing::Approx(300));
  CHECK(gpu_seconds["b"] == orrery::testing::Approx(150));
  CHECK(gpu_seconds["c"] == orrery::testing::Approx(120));  // 2 GPUs for 60 s: half speed while spread
  CHECK(gpu_seconds["d"] == orrery::testing::Approx(40));
  const std::string jobs = slurp("tl.csv");
  CHECK(jobs.find("c,10,10,70,60,0,2,2,a100,2,0") != std::string::npos);

  const Result cmp = run({"compare", "tl-cluster.json", "--policies", "fifo,sjf", "--report", "cmp.json"});
  REQUIRE(cmp.code == 0);
  CHECK(cmp.out.find("fifo") != std::string::npos);
  CHECK(cmp.out.find("sjf") != std::string::npos);
  const nlohmann::json rep = nlohmann::json::parse(slurp("cmp.json"));
  REQUIRE(rep["policies"].size() == 2);
  CHECK(rep["policies"][0]["jct_speedup"] == 1.0);
  CHECK(rep["policies"][1]["jobs_completed"] == 4);
  const Result bad = run({"compare", "tl-cluster.json", "--policies", "fifo,packing"});
  CHECK(bad.code == 1);
  CHECK(bad.err.find("packing") != std::string::npos);
}

TEST_CASE("orrery cluster: the step-emulator source and the shared fabric, and their bad input") {
  {
    std::ofstream f("st-jobs.csv");
    f << "name,submit,n,secs,type\na,0,8,3600,a100\nb,10,16,7200,\nc,20,4,1800,h100\n";
  }
  const auto scenario = [](const std::string& name, const std::string& extra) {
    std::ofstream f(name);
    f << R"({"cluster": {"pools": [{"gpu": "h100", "nodes": 2, "gpus_per_node": 8}, {"gpu": "a100", "nodes": 2, "gpus_per_node": 8}]},
      "jobs": {"format": "csv", "path": "st-jobs.csv", "columns": {"arrival": "submit", "gpus": "n", "duration": "secs", "id": "name", "gpu_type": "type"}})"
      << extra << "}";
  };
  scenario("st.json", R"(, "throughput": {"source": "step", "model": "llama3-8b", "global_batch": 64, "reference_gpu": "a100"},
      "fabric": {"nodes_per_leaf": 1, "nic": "100 Gb/s", "oversubscription": 2, "comm_fraction": 0.3})");
  const Result r = run({"cluster", "st.json", "--policy", "fifo", "--report", "st-report.json"});
  REQUIRE(r.code == 0);
  const nlohmann::json rep = nlohmann::json::parse(slurp("st-report.json"));
  CHECK(rep["jobs_completed"] == 3);
  CHECK(rep["min_fabric_share"].get<double>() == orrery::testing::Approx(0.5));  // b spans two leaves over half-rate uplinks
  scenario("st-bad-model.json", R"(, "throughput": {"source": "step", "model": "llama3-9b"})");
  const Result bad_model = run({"cluster", "st-bad-model.json"});
  CHECK(bad_model.code == 1);
  CHECK(bad_model.err.find("st-bad-model.json:/throughput/model") != std::string::npos);
  scenario("st-bad-nic.json", R"(, "fabric": {"nodes_per_leaf": 4, "nic": "fast"})");
  const Result bad_nic = run({"cluster", "st-bad-nic.json"});
  CHECK(bad_nic.code == 1);
  CHECK(bad_nic.err.find("st-bad-nic.json:/fabric/nic") != std::string::npos);
  scenario("st-bad-source.json", R"(, "throughput": {"source": "magic"})");
  const Result bad_source = run({"cluster", "st-bad-source.json"});
  CHECK(bad_source.code == 1);
  CHECK(bad_source.err.find("expected trace, arena") != std::string::npos);
}

TEST_CASE("orrery compare on multimodal scenarios: figures, timelines, determinism, bad input") {
  const auto scenario = [](const std::string& name, const std::string& model, const std::string& workload, const std::string& shape) {
    std::ofstream f(name);
    f << R"({"multimodal": {"model": )" << model << R"(, "gpu": "H100", )" << shape << R"(}, "workload": )" << workload << "}";
  };
  const std::string mix = R"({"mix": {"samples": 16, "text_only": 0.3, "images_mean": 1.5, "video_fraction": 0.1, "frames_p99": 64, "frames_max": 96}, "seed": 3})";
  scenario("mm.json", R"("qwen2-vl-7b")", mix, R"("tp": 2, "pp": 4, "dp": 2, "micro_batch": 2)");
  const Result a = run({"compare", "mm.json", "--steps", "6", "--report", "mm-a.json", "--trace", "mm-tl.json"});
  REQUIRE(a.code == 0);
  CHECK(a.out.find("pipeweaver") != std::string::npos);
  const Result b = run({"compare", "mm.json", "--steps", "6", "--report", "mm-b.json"});
  REQUIRE(b.code == 0);
  CHECK(slurp("mm-a.json") == slurp("mm-b.json"));
  const nlohmann::json rep = nlohmann::json::parse(slurp("mm-a.json"));
  REQUIRE(rep["policies"].size() == 3);
  for (const auto& p : rep["policies"]) {
    for (const char* key : {"step_time_p50_s", "step_time_p99_s", "samples_per_s", "bubble_fraction", "stage_imbalance", "speedup"}) {
      CAPTURE(key);
      CHECK(p.contains(key));
    }
  }
  CHECK(rep["policies"][2]["candidates"].get<int>() > 0);
  for (const char* policy : {"megatron-1f1b", "modality-static", "pipeweaver"}) {
    const nlohmann::json tl = nlohmann::json::parse(slurp(std::string("mm-tl.") + policy + ".json"));
    CHECK(tl["traceEvents"].size() > 10);
    const nlohmann::json actions = nlohmann::json::parse(slurp(std::string("mm-tl.") + policy + ".actions.json"));
    REQUIRE(actions["stages"].size() == 4);
    CHECK(actions["stages"][0].back()["action"] == "sync");
    CHECK(actions["stages"][1][0]["action"] == "recv");
  }
  // A custom module graph with a dangling edge, and one with a cycle.
  const std::string vit = R"({"name": "vit", "kind": "vision_encoder", "layers": 4, "hidden": 256, "heads": 4, "ffn_hidden": 1024, "mlp": "gelu", "patch": 14})";
  const std::string proj = R"({"name": "proj", "kind": "projector", "hidden": 512, "merge": 4})";
  const std::string llm = R"({"name": "lm", "kind": "llm", "layers": 4, "hidden": 512, "heads": 8, "ffn_hidden": 2048, "vocab": 32000})";
  scenario("mm-dangling.json", R"({"name": "tiny", "modules": [)" + vit + ", " + proj + ", " + llm + R"(], "edges": [["vit", "proj"], ["proj", "llm"]]})", mix,
           R"("pp": 2)");
  const Result dangling = run({"compare", "mm-dangling.json", "--steps", "2"});
  CHECK(dangling.code == 1);
  CHECK(dangling.err.find("mm-dangling.json:/multimodal/model/edges/1/1: a dangling edge: no module is named \"llm\"") != std::string::npos);
  scenario("mm-cycle.json", R"({"name": "tiny", "modules": [)" + vit + ", " + proj + ", " + llm + R"(], "edges": [["vit", "proj"], ["proj", "lm"], ["lm", "vit"]]})",
           mix, R"("pp": 2)");
  const Result cycle = run({"compare", "mm-cycle.json", "--steps", "2"});
  CHECK(cycle.code == 1);
  CHECK(cycle.err.find("mm-cycle.json:/multimodal/model: the module graph has a cycle") != std::string::npos);
  // A batch bringing audio to a vision-language model.
  {
    std::ofstream f("mm-audio.jsonl");
    f << R"({"samples": [{"text": 100}, {"text": 50}, {"text": 20}, {"text": 20}]})" << "\n"
      << R"({"samples": [{"text": 100}, {"text": 50, "audio": [3.5]}, {"text": 20}, {"text": 20}]})" << "\n";
  }
  scenario("mm-audio.json", R"("qwen2-vl-7b")", R"({"trace": "mm-audio.jsonl"})", R"("tp": 2, "pp": 2, "dp": 1, "micro_batch": 1)");
  const Result audio = run({"compare", "mm-audio.json", "--steps", "2"});
  CHECK(audio.code == 1);
  CHECK(audio.err.find("mm-audio.jsonl:line 2/samples/1: the sample brings audio") != std::string::npos);
  // A partition that cannot fit: Qwen2-VL-72B on two stages of one GPU each.
  scenario("mm-oom.json", R"("qwen2-vl-72b")", mix, R"("tp": 1, "pp": 2, "dp": 1, "micro_batch": 1)");
  const Result oom = run({"compare", "mm-oom.json", "--steps", "2"});
  CHECK(oom.code == 1);
  CHECK(oom.err.find("mm-oom.json:/multimodal: a partition that cannot fit memory") != std::string::npos);
}

TEST_CASE("every example multimodal scenario runs, deterministically") {
  int ran = 0;
  for (const auto& entry : fs::directory_iterator(std::string(ORRERY_SOURCE_DIR) + "/examples/multimodal")) {
    if (entry.path().extension() != ".json") continue;
    const std::string path = entry.path().string();
    CAPTURE(path);
    REQUIRE(run({"compare", path, "--steps", "3", "--report", "mmx-a.json"}).code == 0);
    REQUIRE(run({"compare", path, "--steps", "3", "--report", "mmx-b.json"}).code == 0);
    CHECK(slurp("mmx-a.json") == slurp("mmx-b.json"));
    const nlohmann::json rep = nlohmann::json::parse(slurp("mmx-a.json"));
    // The last policy gains over the first: pipeweaver over megatron-1f1b, or (a scenario with
    // a video DiT's "attention") dsv over dense, or a compound policy over megatron-1f1b; in
    // GPU-hours per sample (on the same GPUs, the inverse of the speedup; Maestro may hold fewer).
    CHECK(rep["policies"].back()["gpu_hours_per_1k_samples"].get<double>() < rep["policies"][0]["gpu_hours_per_1k_samples"].get<double>());
    ++ran;
  }
  CHECK(ran >= 3);
  // DSV's scenario: dense against dsv under megatron-1f1b; a sparsity outside [0, 1) is refused.
  const std::string dsv = std::string(ORRERY_SOURCE_DIR) + "/examples/multimodal/hunyuan-video-dsv.json";
  const Result r = run({"compare", dsv, "--steps", "2", "--report", "mmx-dsv.json"});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("pipeline  megatron-1f1b for every video attention policy") != std::string::npos);
  const nlohmann::json rep = nlohmann::json::parse(slurp("mmx-dsv.json"));
  CHECK(rep["policies"][0]["name"] == "dense");
  CHECK(rep["policies"][1]["name"] == "dsv");
  CHECK(rep["policies"][1]["speedup"].get<double>() > 2.0);
  const Result bad = run({"compare", dsv, "--steps", "1", "--policies", "dense,dsv:sparsity=1"});
  CHECK(bad.code == 1);
  CHECK(bad.err.find("<policy>:dsv/sparsity: found 1, expected a sparsity in [0, 1) (or -1)") != std::string::npos);
}

TEST_CASE("orrery compare on RL scenarios: the four policies, timelines, report, bad input") {
  const fs::path example = fs::path(ORRERY_SOURCE_DIR) / "examples/rl/grpo-7b-128.json";
  const Result r = run({"compare", example.string(), "--iterations", "2", "--trace", "rl.json", "--report", "rl-report.json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  for (const char* p : {"colocated", "disaggregated-sync", "streamrl-sync", "streamrl-async"}) {
    CHECK(r.out.find(p) != std::string::npos);
    CHECK(fs::exists(fmt::format("rl.{}.json", p)));
  }
  const std::string report = slurp("rl-report.json");
  CHECK(report.find("\"samples_per_dollar\"") != std::string::npos);
  CHECK(report.find("\"skewness_bubble\"") != std::string::npos);
  // Every RL example runs.
  for (const auto& entry : fs::directory_iterator(fs::path(ORRERY_SOURCE_DIR) / "examples/rl")) {
    if (entry.path().extension() != ".json" || entry.path() == example) continue;
    const Result e = run({"compare", entry.path().string(), "--iterations", "2", "--policies", "streamrl-sync,streamrl-async:elastic=false"});
    INFO(entry.path().string() << ": " << e.err);
    CHECK(e.code == 0);
    CHECK(e.out.find("streamrl-async:elastic=false") != std::string::npos);
  }
  // Same inputs, same report.
  REQUIRE(run({"compare", example.string(), "--iterations", "2", "--report", "rl-report2.json"}).code == 0);
  CHECK(slurp("rl-report2.json") == report);
  // Bad input: one line naming the file and the place.
  const auto scenario = [&](const std::string& name, const std::string& pool, const std::string& generation, const std::string& rollouts) {
    write(name, R"({"model": "qwen2.5-7b", )" + pool + R"(, "generation": )" + generation + R"(, "training": {"zero": 3, "recompute": "full"}, "rollouts": )" +
                    rollouts + "}");
    return run({"compare", name, "--iterations", "2"});
  };
  const std::string pool = R"("pool": {"gpu": "H800", "gpus": 16})";
  const std::string lengths = R"({"prompts": 8, "group_size": 2, "output": {"median": 100, "p99": 1000, "max": 2048}})";
  const Result split = scenario("rl-split.json", pool, R"({"tp": 1, "gpus": 16})", lengths);
  CHECK(split.code == 1);
  CHECK(split.err.find("rl-split.json:/generation/gpus: the generation pool takes 16 of the pool's 16 GPUs, leaving none for training") != std::string::npos);
  const Result kv = scenario("rl-kv.json", pool, R"({"tp": 1, "max_context": 4000000})", lengths);
  CHECK(kv.code == 1);
  CHECK(kv.err.find("rl-kv.json:/generation: the KV cache holds") != std::string::npos);
  CHECK(kv.err.find("cannot hold a single sequence") != std::string::npos);
  CHECK(kv.out.empty());
  const Result context = scenario("rl-context.json", pool, R"({"tp": 1, "max_context": 1024})", lengths);
  CHECK(context.code == 1);
  CHECK(context.err.find("rl-context.json:/generation/max_context: found a maximum context of 1024 tokens, but the rollouts hold a sample of") !=
        std::string::npos);
  write("rl-trace.jsonl", "{\"iteration\": 0, \"prompt_tokens\": 100, \"outputs\": [50, 9000]}\n{\"iteration\": 1, \"prompt_tokens\": 100, \"outputs\": [50]}\n");
  const Result trace = scenario("rl-tracectx.json", pool, R"({"tp": 1, "max_context": 4096})", R"({"trace": "rl-trace.jsonl"})");
  CHECK(trace.code == 1);
  CHECK(trace.err.find("rl-tracectx.json:/generation/max_context: found a maximum context of 4096 tokens, but the rollouts hold a sample of 9100") !=
        std::string::npos);
  const Result source = scenario("rl-source.json", pool, R"({"tp": 1})",
                                 R"({"prompts": 8, "group_size": 2, "output": {"source": "azure-chat", "median": 100, "max": 2048}})");
  CHECK(source.code == 1);
  CHECK(source.err.find("azure-chat") != std::string::npos);
  CHECK(source.err.find("azure-conv") != std::string::npos);  // the valid names are listed
  const Result tight = scenario("rl-tight.json", pool, R"({"tp": 1})", R"({"prompts": 8, "group_size": 2, "output": {"median": 500, "p99": 15000, "max": 16384}})");
  CHECK(tight.code == 1);
  CHECK(tight.err.find("rl-tight.json:/rollouts/output: no truncated lognormal has median 500, p99 15000 and maximum 16384") != std::string::npos);
  const Result gpu = scenario("rl-gpu.json", R"("pool": {"gpu": "H900", "gpus": 16})", R"({"tp": 1})", lengths);
  CHECK(gpu.code == 1);
  CHECK(gpu.err.find("rl-gpu.json:/pool/gpu: unknown GPU") != std::string::npos);
  const Result two = scenario("rl-dc.json", R"("generation_pool": {"gpu": "H20", "gpus": 8, "datacenter": "b"}, "training_pool": {"gpu": "H800", "gpus": 8})",
                              R"({"tp": 1})", lengths);
  CHECK(two.code == 1);
  CHECK(two.err.find("rl-dc.json:/: the pools are in datacenters \"b\" and \"dc0\", expected a \"cross_dc\" link") != std::string::npos);
  const Result colocated = run({"compare", (fs::path(ORRERY_SOURCE_DIR) / "examples/rl/hetero-crossdc.json").string(), "--iterations", "1", "--policies", "colocated"});
  CHECK(colocated.code == 1);
  CHECK(colocated.err.find("colocated multiplexes one GPU pool") != std::string::npos);
}

TEST_CASE("orrery plan: searches the example, confirms the top plans, and reports the counts") {
  const std::string example = std::string(ORRERY_SOURCE_DIR) + "/examples/plans/llama3-8b-64xh100.json";
  const Result r = run({"plan", example, "--report", "plan.json"});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("pruned by memory") != std::string::npos);
  const nlohmann::json report = nlohmann::json::parse(slurp("plan.json"));
  const auto count = [&](const char* key) { return report["search"][key].get<std::int64_t>(); };
  CHECK(count("enumerated") > 100);
  // Every candidate is pruned once or estimated.
  CHECK(count("enumerated") == count("pruned_divisibility") + count("pruned_memory") + count("estimated"));
  CHECK(count("confirmed") == 3);
  REQUIRE(report["plans"].size() == 3);
  double previous = 0;
  for (const auto& p : report["plans"]) {
    CHECK(p["tp"].get<int>() * p["pp"].get<int>() * p["dp"].get<int>() * p["cp"].get<int>() == 64);
    CHECK(p["peak_memory_bytes"].get<double>() <= 70.0 * 1073741824);  // the example's limit
    // Ranked by the estimate, best first; the emulator agrees within 10% on these plans.
    CHECK(p["estimated"]["step_time_s"].get<double>() >= previous);
    previous = p["estimated"]["step_time_s"].get<double>();
    CHECK(p["estimated"]["step_time_s"].get<double>() == orrery::testing::Approx(p["emulated"]["step_time_s"].get<double>()).epsilon(0.1));
  }
  // step --estimate writes the emulated report's keys, marked as an estimate.
  REQUIRE(run({"step", "--estimate", "--report", "step-estimate.json"}).code == 0);
  const nlohmann::json est = nlohmann::json::parse(slurp("step-estimate.json"));
  for (const char* key : {"step_time_s", "tokens_per_s", "tflops_per_gpu", "mfu", "bubble_fraction", "exposed_comm_fraction", "peak_memory_bytes", "oom"}) {
    CAPTURE(key);
    CHECK(est.contains(key));
  }
  CHECK(est["estimate"] == true);
}

TEST_CASE("orrery plan: bad searches get one precise error") {
  const auto fails = [](const std::string& json) {
    write("bad-plan.json", json);
    const Result r = run({"plan", "bad-plan.json"});
    CHECK(r.code == 1);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    return r.err;
  };
  const std::string cluster = R"("cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=1"})";
  CHECK(fails(R"({"model": "llama3-9b", )" + cluster + R"(, "global_batch": 16})")
            .find("bad-plan.json:/model: unknown model \"llama3-9b\"; did you mean \"llama3-8b\"?") != std::string::npos);
  CHECK(fails(R"({"model": "llama3-8b", "cluster": {"gpu": "H1000", "topology": "dgx-h100:nodes=1"}, "global_batch": 16})")
            .find("bad-plan.json:/cluster/gpu:") != std::string::npos);
  CHECK(fails(R"({"model": "llama3-8b", )" + cluster + R"(, "global_batch": 16, "memory_limit": "4 GiB"})")
            .find("bad-plan.json:/memory_limit: no plan fits in 4 GiB per GPU: the smallest of") != std::string::npos);
  CHECK(fails(R"({"model": "llama3-8b", )" + cluster + R"(, "global_batch": 16, "memory_limit": "96 GiB"})")
            .find("bad-plan.json:/memory_limit: found 96 GiB, expected at most the H100's memory (") != std::string::npos);
  CHECK(fails(R"({"model": "llama3-8b", )" + cluster + R"(, "global_batch": 3, "constraints": {"max_tp": 2, "max_pp": 2}})")
            .find("bad-plan.json:/global_batch: no plan of tp <= 2") != std::string::npos);
  CHECK(fails(R"({"model": "llama3-8b", )" + cluster + R"(, "global_batch": 16, "constraints": {"schedules": ["1f1c"]}})")
            .find("bad-plan.json:/constraints/schedules/0:") != std::string::npos);
  CHECK(fails(R"({"model": "llama3-8b", )" + cluster + R"(, "global_batch": 16, "constraints": {"grad_reduce": "tf32"}})")
            .find("bad-plan.json:/constraints/grad_reduce: found \"tf32\", expected fp32, bf16 or fp16") != std::string::npos);
}

namespace {
std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}
}  // namespace

// --html: one self-contained page (no script or style from elsewhere), the command's plots, the
// same bytes for the same run; an impossible path fails before the run and leaves no file.
TEST_CASE("--html reports: the plots of step, compare and cluster; bad paths") {
  REQUIRE(run({"step", "--html", "step.html"}).code == 0);
  const std::string step = slurp("step.html");
  CHECK(occurrences(step, "class=\"orrery-plot\"") == 3);
  for (const char* plot : {"step-breakdown", "memory", "timeline"}) {
    CAPTURE(plot);
    CHECK(step.find(std::string("data-plot=\"") + plot + "\"") != std::string::npos);
  }
  CHECK(step.find("<script src") == std::string::npos);
  CHECK(step.find("<link") == std::string::npos);
  CHECK(occurrences(step, "http") == occurrences(step, "http://www.w3.org/2000/svg"));
  REQUIRE(run({"step", "--html", "step-again.html"}).code == 0);
  CHECK(slurp("step-again.html") == step);

  write("html-balance.json", balance_scenario(8, 65536));
  REQUIRE(run({"compare", "html-balance.json", "--policies", "packing,libra", "--steps", "3", "--html", "compare.html"}).code == 0);
  const std::string compare = slurp("compare.html");
  CHECK(occurrences(compare, "class=\"orrery-plot\"") == 3);  // step time p50/p99, tokens/s, step-time CDF
  CHECK(compare.find("data-plot=\"step-time\"") != std::string::npos);
  CHECK(compare.find("<title>libra \u2014 p50: ") != std::string::npos);

  write("html-jobs.csv", "name,submit,n,secs\na,0,4,100\nb,10,4,50\nc,20,8,30\nd,30,2,400\n");
  write("html-cluster.json", R"({"cluster": {"pools": [{"gpu": "a100", "nodes": 1, "gpus_per_node": 8}]},
      "jobs": {"format": "csv", "path": "html-jobs.csv", "columns": {"arrival": "submit", "gpus": "n", "duration": "secs", "id": "name"}}})");
  REQUIRE(run({"cluster", "html-cluster.json", "--html", "cluster.html"}).code == 0);
  const std::string cluster = slurp("cluster.html");
  CHECK(occurrences(cluster, "class=\"orrery-plot\"") == 3);  // JCT CDF, queueing CDF, utilisation
  CHECK(cluster.find("data-plot=\"gpu-utilisation\"") != std::string::npos);
  REQUIRE(run({"compare", "html-cluster.json", "--policies", "fifo,sjf", "--html", "cluster-compare.html"}).code == 0);
  CHECK(occurrences(slurp("cluster-compare.html"), "class=\"orrery-plot\"") == 4);

  for (const auto& args : std::vector<std::vector<std::string>>{{"step", "--html", "no-such-dir/r.html"},
                                                                {"compare", "html-balance.json", "--steps", "2", "--html", "no-such-dir/r.html"},
                                                                {"cluster", "html-cluster.json", "--html", "no-such-dir/r.html"}}) {
    CAPTURE(args[0]);
    const Result bad = run(args);
    CHECK(bad.code == 1);
    CHECK(bad.err == "orrery: error: <command line>:--html: cannot write \"no-such-dir/r.html\": the folder \"no-such-dir\" does not exist\n");
    CHECK(bad.out.empty());  // nothing ran
  }
  CHECK(!fs::exists("no-such-dir"));
  // A run that fails after the check leaves no page behind.
  const Result unknown = run({"compare", "html-balance.json", "--policies", "packing,libro", "--html", "failed.html"});
  CHECK(unknown.code == 1);
  CHECK(!fs::exists("failed.html"));
}

// The ASTRA-sim interop end to end: `orrery step --chakra-out` writes per-rank Chakra traces,
// `orrery replay --chakra` runs them on the fabric with the step's time; bad input exits 1 with
// one line and writes nothing.
TEST_CASE("orrery step --chakra-out and orrery replay --chakra") {
  fs::create_directories("chakra_cli");
  const Result step = run({"step", "--chakra-out", "chakra_cli/default", "--report", "chakra_cli/step.json"});
  REQUIRE(step.code == 0);
  CHECK(step.out.find("chakra     16 ranks, ") != std::string::npos);
  CHECK(fs::exists("chakra_cli/default.15.et"));
  CHECK(fs::exists("chakra_cli/default.comm_groups.json"));
  const Result replay = run({"replay", "--chakra", "chakra_cli/default", "--topology", "dgx-h100:nodes=2", "--report", "chakra_cli/replay.json",
                             "--trace", "chakra_cli/replay.trace.json", "--html", "chakra_cli/replay.html"});
  REQUIRE(replay.code == 0);
  CHECK(replay.out.find("workload   chakra_cli/default (16 ranks, ") == 0);
  const auto step_report = nlohmann::json::parse(slurp("chakra_cli/step.json"));
  const auto replay_report = nlohmann::json::parse(slurp("chakra_cli/replay.json"));
  CHECK(replay_report["step_time_s"].get<double>() ==
        orrery::testing::Approx(step_report["step_time_s"].get<double>()).epsilon(0.01));
  CHECK(fs::exists("chakra_cli/replay.trace.json"));
  CHECK(slurp("chakra_cli/replay.html").find("Busy time per rank") != std::string::npos);
  // Bad input: a missing workload, a fabric of the wrong size, no fabric, both inputs at once.
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"replay", "--chakra", "chakra_cli/none", "--topology", "dgx-h100:nodes=2", "--report", "chakra_cli/bad.json"},
            "orrery: error: chakra_cli/none: no execution trace chakra_cli/none.0.et"},
           {{"replay", "--chakra", "chakra_cli/default", "--topology", "dgx-h100:nodes=4", "--report", "chakra_cli/bad.json"},
            "orrery: error: dgx-h100:nodes=4: 32 GPUs, but the workload has 16 ranks (one per GPU)"},
           {{"replay", "--chakra", "chakra_cli/default", "--report", "chakra_cli/bad.json"},
            "orrery: error: <command line>:--topology: --chakra needs the fabric to replay on (one GPU per rank)"},
           {{"replay", "g.json", "--chakra", "chakra_cli/default", "--report", "chakra_cli/bad.json"},
            "orrery: error: <command line>: replay expects one of a task-graph JSON file, --chakra PREFIX or --kineto TRACE"}}) {
    CAPTURE(message);
    const Result r = run(args);
    CHECK(r.code == 1);
    CHECK(r.err.find(message) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_FALSE(fs::exists("chakra_cli/bad.json"));
  }
  const Result estimate = run({"step", "--estimate", "--chakra-out", "chakra_cli/est"});
  CHECK(estimate.code == 1);
  CHECK(estimate.err.find("orrery: error: <command line>:--chakra-out: the traces need the emulator's graph: drop --estimate") == 0);
  CHECK_FALSE(fs::exists("chakra_cli/est.0.et"));
}

// Calibrating from a PyTorch profile, end to end: import, fit, replay; bad traces exit 1 with one
// line and write no profile.
TEST_CASE("orrery calibrate import, calibrate fit and replay --kineto") {
  fs::create_directories("kineto_cli");
  const std::string trace = std::string(ORRERY_SOURCE_DIR) + "/examples/traces/kineto-layer-synthetic.json";
  const Result imported = run({"calibrate", "import", trace, "-o", "kineto_cli/profile.json"});
  REQUIRE(imported.code == 0);
  CHECK(imported.out.find("matched    49 kernels") != std::string::npos);
  const Result fit = run({"calibrate", "fit", "kineto_cli/profile.json", "-o", "kineto_cli/curves.json"});
  CHECK(fit.code == 0);
  CHECK(fs::exists("kineto_cli/curves.json"));
  const Result replay = run({"replay", "--kineto", trace, "--report", "kineto_cli/replay.json", "--html", "kineto_cli/replay.html"});
  REQUIRE(replay.code == 0);
  const auto report = nlohmann::json::parse(slurp("kineto_cli/replay.json"));
  CHECK(report["step_time_s"].get<double>() == orrery::testing::Approx(report["recorded_s"].get<double>()).epsilon(0.05));
  write("kineto_cli/cpu-only.json", R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}]})");
  for (const auto& args : std::vector<std::vector<std::string>>{{"calibrate", "import", "kineto_cli/cpu-only.json", "-o", "kineto_cli/bad.json"},
                                                                {"replay", "--kineto", "kineto_cli/cpu-only.json", "--report", "kineto_cli/bad.json"},
                                                                {"replay", "--kineto", trace, "--ranks", "64", "--report", "kineto_cli/bad.json"}}) {
    const Result r = run(args);
    CHECK(r.code == 1);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_FALSE(fs::exists("kineto_cli/bad.json"));
  }
  CHECK(run({"calibrate", "import", "kineto_cli/cpu-only.json", "-o", "kineto_cli/bad.json"}).err ==
        "orrery: error: kineto_cli/cpu-only.json:/traceEvents: no GPU kernels (events of category \"kernel\"): record the trace with "
        "ProfilerActivity.CUDA\n");
}

// A step scenario without a workload compares step policies: pipeline schedules, MoE
// communication and MoE routing; the report keeps exact values; bad names list the valid ones.
TEST_CASE("orrery compare on a step scenario without a workload: schedules, Lina, adaptive gating") {
  const std::string ex = std::string(ORRERY_SOURCE_DIR) + "/examples/scenarios/";
  const Result s = run({"compare", ex + "llama3-8b-schedules.json", "--report", "sched.json"});
  REQUIRE(s.code == 0);
  const nlohmann::json rep = nlohmann::json::parse(slurp("sched.json"));
  REQUIRE(rep["policies"].size() == 7);
  const auto tps = [&](const nlohmann::json& r, const std::string& name) {
    for (const auto& p : r["policies"]) {
      if (p["name"] == name) return p["tokens_per_s"].get<double>();
    }
    return 0.0;
  };
  CHECK(tps(rep, "stp") > tps(rep, "interleaved-1f1b"));
  CHECK(tps(rep, "stp") > tps(rep, "zb-v"));
  CHECK(tps(rep, "zb-h1") > tps(rep, "1f1b"));
  REQUIRE(run({"compare", ex + "qwen3-30b-a3b-lina.json", "--policies", "ep-fair,lina", "--report", "lina.json"}).code == 0);
  const nlohmann::json lina = nlohmann::json::parse(slurp("lina.json"));
  CHECK(tps(lina, "lina") > 1.03 * tps(lina, "ep-fair"));
  // Expert packing trades the all-to-all over the NICs (EP 16 across two servers) for one over NVLink
  // (EP 8 inside one) at twice the experts' gradients per GPU over the NICs: on this example's 400
  // Gb/s NICs the two are within 1% either way (0.5% slower under step parameters v18); on 100 Gb/s
  // NICs, where the all-to-all dominates, packing wins.
  {
    nlohmann::json slow = nlohmann::json::parse(slurp(ex + "qwen3-30b-a3b-lina.json"));
    slow["cluster"]["topology"] = "dgx-h100:nodes=8,nic=100Gb/s";
    std::ofstream("lina-100g.json") << slow.dump();
  }
  REQUIRE(run({"compare", "lina-100g.json", "--policies", "lina,lina:pack=2", "--report", "pack.json"}).code == 0);
  const nlohmann::json pack = nlohmann::json::parse(slurp("pack.json"));
  CHECK(tps(pack, "lina:pack=2") > 1.1 * tps(pack, "lina"));
  REQUIRE(run({"compare", ex + "mixtral-8x7b-adaptive-gating.json", "--policies", "top-k,adaptive-gating,adaptive-gating:curriculum=true", "--steps", "20",
               "--report", "gate.json"})
              .code == 0);
  const nlohmann::json gate = nlohmann::json::parse(slurp("gate.json"));
  CHECK(tps(gate, "adaptive-gating") > 1.05 * tps(gate, "top-k"));
  CHECK(tps(gate, "adaptive-gating:curriculum=true") > tps(gate, "adaptive-gating"));
  const Result bad = run({"compare", ex + "llama3-8b-schedules.json", "--policies", "zb-w"});
  CHECK(bad.code == 1);
  CHECK(bad.err.find("zb-w") != std::string::npos);
  const Result dense = run({"compare", ex + "llama3-8b-schedules.json", "--policies", "adaptive-gating"});
  CHECK(dense.code == 1);
  CHECK(dense.err.find("expected an MoE with top-k of at least 2") != std::string::npos);
}
