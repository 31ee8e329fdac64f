// Issue 17: the capacity question end to end (plan search over cluster sizes, days to train,
// one memory headroom rule) and what a newcomer hits on the console.
#include "cli_run.hpp"
#include "approx.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

namespace fs = std::filesystem;
using orrery::testing::lines;
using orrery::testing::read_json;
using orrery::testing::Result;
using orrery::testing::run;
using orrery::testing::slurp;
using orrery::testing::write;

namespace {

// Llama 3 8B on one DGX H100 (TP 2, PP 2, DP 2): small enough to emulate in a blink.
std::string small_scenario(const std::string& extra = "") {
  return R"({"name": "small", "model": "llama3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=1"},
    "plan": {"tp": 2, "pp": 2, "dp": 2, "micro_batch": 1, "global_batch": 8, "seq_len": 2048, "schedule": "1f1b", "zero": 1})" +
         extra + "}";
}

// A curves file whose only curve is a 1x1x1 bf16 GEMM: no kernel of a training step falls in it.
const char* kNothingCurves = R"({"schema": "orrery.curves/1", "device": "test", "source": "capacity_test",
  "curves": [{"kind": "gemm", "dtype": "bf16", "features": ["m", "n", "k"], "axes": [[1], [1], [1]], "seconds": [1e-6]}]})";

}  // namespace

// A calibrated step once dropped the training step efficiency for every kernel the curves did
// not cover (Llama 3 70B: 70.1% MFU with 0 kernels calibrated, 44.7% without). Fallbacks go to
// the same training roofline as an uncalibrated step, so curves that cover nothing change nothing.
TEST_CASE("capacity: calibration curves that cover no kernel give the uncalibrated step exactly, and say so") {
  write("cap-nothing-curves.json", kNothingCurves);
  write("cap-plain.json", small_scenario());
  write("cap-calibrated.json", small_scenario(R"(, "calibration": "cap-nothing-curves.json")"));
  for (const bool estimate : {false, true}) {
    CAPTURE(estimate);
    std::vector<std::string> plain = {"step", "cap-plain.json", "--report", "cap-plain-r.json"};
    std::vector<std::string> cal = {"step", "cap-calibrated.json", "--report", "cap-cal-r.json"};
    if (estimate) {
      plain.push_back("--estimate");
      cal.push_back("--estimate");
    }
    const Result a = run(plain);
    const Result b = run(cal);
    REQUIRE_MESSAGE(a.code == 0, a.err);
    REQUIRE_MESSAGE(b.code == 0, b.err);
    const nlohmann::json ra = read_json("cap-plain-r.json"), rb = read_json("cap-cal-r.json");
    CHECK(ra["mfu"].get<double>() == rb["mfu"].get<double>());
    CHECK(ra["step_time_s"].get<double>() == rb["step_time_s"].get<double>());
    CHECK(ra["mfu"].get<double>() < 0.6);  // the fitted step parameters are in both
    // The report states what costed the kernels: all of them from the training roofline, with the
    // built-in step parameters (models/hardware/step_params.json) of an H100 under Megatron in bf16.
    const nlohmann::json fitted = nlohmann::json::parse(slurp(std::string(ORRERY_SOURCE_DIR) + "/models/hardware/step_params.json"))["parameters"];
    CHECK(rb["cost_model"]["name"] == "calibrated");
    CHECK(rb["cost_model"]["kernels_calibrated"] == 0);
    CHECK(rb["cost_model"]["kernels_fallback"].get<std::int64_t>() > 0);
    for (const nlohmann::json* r : {&ra, &rb}) {
      // Whole nanoseconds, rounded up.
      CHECK((*r)["cost_model"]["kernel_overhead_s"].get<double>() ==
            std::ceil(fitted["hopper.megatron.overhead"]["value"].get<double>() * 1e3) * 1e-9);
      CHECK((*r)["cost_model"]["step_parameters"] == "hopper megatron bf16");
    }
    // And so does the console: counts of each, and what stands for the calibrated ones.
    CHECK(b.out.find("model calibrated: 0 kernels from the curves (measured times, no step efficiency), ") != std::string::npos);
    CHECK(b.out.find(" from the roofline (fitted step parameters for hopper megatron bf16: GEMM ") != std::string::npos);
    CHECK(a.out.find("model roofline (fitted step parameters for hopper megatron bf16: GEMM ") != std::string::npos);
  }
}

TEST_CASE("capacity: curves that cover a kernel cost it from the curve, and the counts say how many") {
  // One GEMM curve over a wide grid at 1 ns: every bf16 GEMM of the step inside it is "free",
  // so the step gets faster and the calibrated count is positive.
  write("cap-gemm-curves.json", R"({"schema": "orrery.curves/1", "device": "test",
    "curves": [{"kind": "gemm", "dtype": "bf16", "features": ["m", "n", "k"], "axes": [[1, 1e7], [1, 1e7], [1, 1e7]],
                "seconds": [1e-9, 1e-9, 1e-9, 1e-9, 1e-9, 1e-9, 1e-9, 1e-9]}]})");
  write("cap-plain.json", small_scenario());
  write("cap-gemm.json", small_scenario(R"(, "calibration": "cap-gemm-curves.json")"));
  const Result a = run({"step", "cap-plain.json", "--report", "cap-plain-r.json"});
  const Result b = run({"step", "cap-gemm.json", "--report", "cap-gemm-r.json"});
  REQUIRE(a.code == 0);
  REQUIRE_MESSAGE(b.code == 0, b.err);
  const nlohmann::json ra = read_json("cap-plain-r.json"), rb = read_json("cap-gemm-r.json");
  CHECK(rb["step_time_s"].get<double>() < ra["step_time_s"].get<double>());
  CHECK(rb["cost_model"]["kernels_calibrated"].get<std::int64_t>() > 0);
  CHECK(rb["cost_model"]["kernels_calibrated"] == rb["cost_model"]["calibrated.gemm"]);
  CHECK(rb["cost_model"]["kernels_fallback"].get<std::int64_t>() > 0);  // attention, norms, the optimizer
}

// One memory rule (models::memory_budget: HBM less 2 GiB and 3%) for step, sweep and plan: a
// plan whose peak lies between the usable memory and the full HBM is flagged by all three, and
// one below the usable memory by none.
TEST_CASE("capacity: step, sweep and plan flag the same plan against the same usable memory") {
  // The plan's peak, measured on a GPU with room to spare.
  write("cap-roomy-gpus.json", R"({"gpus": [{"name": "H100-roomy", "base": "H100", "hbm": "1000 GiB"}]})");
  const std::string scenario = R"({"model": "llama3-8b", "cluster": {"gpu": "GPU", "topology": "dgx-h100:nodes=1"},
    "plan": {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1, "global_batch": 8, "seq_len": 2048, "schedule": "1f1b", "recompute": "none", "zero": 1}})";
  const auto with_gpu = [&](const std::string& gpu) {
    std::string s = scenario;
    s.replace(s.find("\"GPU\""), 5, "\"" + gpu + "\"");
    return s;
  };
  write("cap-roomy.json", with_gpu("H100-roomy"));
  REQUIRE(run({"step", "cap-roomy.json", "--gpus", "cap-roomy-gpus.json", "--report", "cap-roomy-r.json"}).code == 0);
  const double peak = read_json("cap-roomy-r.json")["peak_memory_bytes"].get<double>();
  const double gib = 1073741824.0;
  REQUIRE(peak > 10 * gib);

  // Tight: HBM is the peak plus 1 GiB, less than the 2 GiB + 3% reserve: it fits the HBM, not the
  // usable memory. Roomy enough: usable = peak + 1 GiB.
  const double tight_hbm = std::round(peak + 1 * gib);
  const double fits_hbm = std::round((peak + 2 * gib + 1 * gib) / 0.97);
  for (const auto& [hbm, flagged] : {std::pair{tight_hbm, true}, {fits_hbm, false}}) {
    CAPTURE(flagged);
    write("cap-gpus.json", fmt::format(R"({{"gpus": [{{"name": "H100-test", "base": "H100", "hbm": "{:.0f} B"}}]}})", hbm));
    write("cap-step.json", with_gpu("H100-test"));
    // step: the oom flag and the usable memory it compared with.
    const Result st = run({"step", "cap-step.json", "--gpus", "cap-gpus.json", "--report", "cap-step-r.json"});
    REQUIRE_MESSAGE(st.code == 0, st.err);
    const nlohmann::json r = read_json("cap-step-r.json");
    CHECK(r["peak_memory_bytes"].get<double>() == peak);
    CHECK(r["oom"] == flagged);
    CHECK(r["memory"]["hbm_bytes"].get<double>() == orrery::testing::Approx(hbm).epsilon(1e-12));
    const double usable = r["memory"]["usable_bytes"].get<double>();
    CHECK(usable == orrery::testing::Approx(0.97 * hbm - 2 * gib).epsilon(1e-12));
    CHECK((st.out.find("** OUT OF MEMORY **") != std::string::npos) == flagged);
    CHECK(st.out.find(fmt::format("of {:.1f} GiB usable ({:.1f} GiB HBM less a ", usable / gib, hbm / gib)) != std::string::npos);
    // step --estimate agrees.
    REQUIRE(run({"step", "cap-step.json", "--estimate", "--gpus", "cap-gpus.json", "--report", "cap-est-r.json"}).code == 0);
    CHECK(read_json("cap-est-r.json")["oom"] == flagged);

    // sweep: the same scenario as its base, one point.
    write("cap-sweep.json", R"({"command": "step", "base": )" + with_gpu("H100-test") +
                                R"(, "options": {"gpus": "cap-gpus.json"}, "axes": [{"name": "seq", "pointer": "/plan/seq_len", "values": [2048]}]})");
    const Result sw = run({"sweep", "cap-sweep.json", "-o", "cap-sweep-out.json", "--jobs", "1"});
    REQUIRE_MESSAGE(sw.code == 0, sw.err);
    const nlohmann::json row = read_json("cap-sweep-out.json")["rows"][0];
    CHECK(row["status"] == (flagged ? "oom" : "ok"));
    if (flagged) {
      CHECK(row["reason"].get<std::string>() == fmt::format("out of memory: {:.1f} GiB per GPU, above the usable {:.1f} GiB", peak / gib, usable / gib));
      CHECK(sw.out.find("0 ok, 1 out of memory") != std::string::npos);
    }

    // plan: a search whose only candidate is this plan.
    write("cap-plan.json", R"({"model": "llama3-8b", "cluster": {"gpu": "H100-test", "topology": "dgx-h100:nodes=1"}, "global_batch": 8,
      "seq_len": 2048, "constraints": {"max_tp": 1, "max_pp": 1, "micro_batches": [1], "schedules": ["1f1b"], "recompute": ["none"], "zero": [1],
      "top_k": 0}})");
    const Result pl = run({"plan", "cap-plan.json", "--gpus", "cap-gpus.json", "--report", "cap-plan-r.json"});
    if (flagged) {
      CHECK(pl.code == 1);
      CHECK(lines(pl.err) == 1);
      CHECK(pl.err.find("cap-plan.json:/memory_limit: no plan fits in ") != std::string::npos);
      CHECK(pl.err.find("the smallest of 1 plans that divide needs") != std::string::npos);
    } else {
      REQUIRE_MESSAGE(pl.code == 0, pl.err);
      const nlohmann::json pr = read_json("cap-plan-r.json");
      CHECK(pr["memory_limit_bytes"].get<double>() == usable);
      REQUIRE(pr["plans"].size() == 1);
      CHECK(pr["plans"][0]["peak_memory_bytes"].get<double>() == peak);
      CHECK(pr["plans"][0]["oom"] == false);
      CHECK(pl.out.find(fmt::format("memory limit {:.1f} GiB usable", usable / gib)) != std::string::npos);
    }
    fs::remove("cap-plan-r.json");
  }
  // A plan's memory_limit may be stricter than the rule, never looser.
  write("cap-plan-loose.json", R"({"model": "llama3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=1"}, "global_batch": 8,
    "memory_limit": "72 GiB"})");
  const Result loose = run({"plan", "cap-plan-loose.json"});
  CHECK(loose.code == 1);
  CHECK(loose.err.find("cap-plan-loose.json:/memory_limit: found 72 GiB, expected at most the H100's memory (70.3 GiB usable (74.5 GiB HBM less a 4.2 GiB "
                       "reserve))") != std::string::npos);
}

TEST_CASE("capacity: days to train N tokens in step, its estimate and sweep; layers per stage when PP does not divide them") {
  // Llama 3 8B's 32 layers on 3 stages: 11, 11, 10.
  write("cap-pp3.json", R"({"model": "llama3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=3"},
    "plan": {"tp": 8, "pp": 3, "dp": 1, "micro_batch": 1, "global_batch": 6, "seq_len": 2048, "schedule": "1f1b"}})");
  for (const bool estimate : {false, true}) {
    CAPTURE(estimate);
    std::vector<std::string> args = {"step", "cap-pp3.json", "--train-tokens", "15T", "--report", "cap-pp3-r.json"};
    if (estimate) args.push_back("--estimate");
    const Result r = run(args);
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find("layers     32 on 3 stages: 11,11,10\n") != std::string::npos);
    const nlohmann::json rep = read_json("cap-pp3-r.json");
    CHECK(rep["layers_per_stage"] == nlohmann::json::array({11, 11, 10}));
    // 15T tokens in steps of 6 x 2048 tokens: ceil(15e12 / 12288) steps, each one step time.
    const double steps = std::ceil(15e12 / (6 * 2048));
    CHECK(rep["train"]["tokens"].get<double>() == 15e12);
    CHECK(rep["train"]["steps"].get<double>() == steps);
    CHECK(rep["train"]["time_s"].get<double>() == steps * rep["step_time_s"].get<double>());
    CHECK(rep["train"]["days"].get<double>() == orrery::testing::Approx(rep["train"]["time_s"].get<double>() / 86400));
    CHECK(r.out.find(fmt::format("training   15T tokens in {:.0f} steps: {:.1f} days\n", steps, rep["train"]["time_s"].get<double>() / 86400)) !=
          std::string::npos);
  }
  // Short runs read in hours.
  const Result hours = run({"step", "cap-pp3.json", "--estimate", "--train-tokens", "1B"});
  REQUIRE(hours.code == 0);
  CHECK(hours.out.find(" hours\n") != std::string::npos);
  // Bad counts: one line naming the option, exit 1, nothing written.
  for (const auto& [text, expected] : {std::pair{"15X", "expected a token count such as 15T"}, {"0", "expected 1 to 1e18 tokens"},
                                       {"-5T", "expected 1 to 1e18 tokens"}, {"inf", "expected a token count"}, {"1e30", "expected 1 to 1e18 tokens"},
                                       {"0x10", "expected a token count"}, {"", ""}}) {
    if (std::string(text).empty()) continue;
    CAPTURE(text);
    fs::remove("cap-bad-r.json");
    const Result bad = run({"step", "cap-pp3.json", "--estimate", "--train-tokens", text, "--report", "cap-bad-r.json"});
    CHECK(bad.code == 1);
    CHECK(lines(bad.err) == 1);
    CHECK(bad.err.find(fmt::format("<command line>:--train-tokens: found \"{}\", {}", text, expected)) != std::string::npos);
    CHECK_FALSE(fs::exists("cap-bad-r.json"));
  }

  // sweep: the option gives every row train.* columns and the console the fastest point's time.
  write("cap-train-sweep.json", R"({"command": "estimate", "base": {"model": "llama3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=1"},
      "plan": {"tp": 1, "pp": 1, "micro_batch": 1, "global_batch": 16, "seq_len": 2048, "zero": 1}},
    "options": {"train_tokens": "2T"}, "axes": [{"name": "tp", "pointer": "/plan/tp", "values": [1, 2, 4]}]})");
  const Result sw = run({"sweep", "cap-train-sweep.json", "-o", "cap-train-sweep-out.json", "--jobs", "1"});
  REQUIRE_MESSAGE(sw.code == 0, sw.err);
  const nlohmann::json rows = read_json("cap-train-sweep-out.json")["rows"];
  double fastest = 1e300;
  int best = -1;
  for (const auto& row : rows) {
    if (row["status"] != "ok") continue;
    CHECK(row["train.time_s"].get<double>() == row["train.steps"].get<double>() * row["step_time_s"].get<double>());
    if (row["train.time_s"].get<double>() < fastest) {
      fastest = row["train.time_s"].get<double>();
      best = row["point"].get<int>();
    }
  }
  REQUIRE(best >= 0);
  CHECK(sw.out.find(fmt::format("to train   2T tokens: fastest point {} in ", best)) != std::string::npos);
  write("cap-bad-sweep.json", R"({"command": "estimate", "base": {"model": "llama3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=1"},
      "plan": {"global_batch": 16, "seq_len": 2048}}, "options": {"train_tokens": "2 trillion"}, "axes": [{"name": "tp", "pointer": "/plan/tp", "values": [1]}]})");
  const Result bad_sweep = run({"sweep", "cap-bad-sweep.json", "-o", "cap-bad-sweep-out.json"});
  CHECK(bad_sweep.code == 1);
  CHECK(lines(bad_sweep.err) == 1);
  CHECK(bad_sweep.err.find("cap-bad-sweep.json:/options/train_tokens: found \"2 trillion\", expected a token count") != std::string::npos);
  CHECK_FALSE(fs::exists("cap-bad-sweep-out.json"));
}

TEST_CASE("capacity: one plan search over several cluster sizes, with the days to train at each") {
  write("cap-sizes.json", R"({"name": "sizes", "model": "llama3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=1"}, "global_batch": 32,
    "seq_len": 2048, "constraints": {"max_tp": 8, "max_pp": 4, "micro_batches": [1], "schedules": ["1f1b"], "recompute": ["selective"], "zero": [1],
    "top_k": 1}})");
  const Result r = run({"plan", "cap-sizes.json", "--cluster-sizes", "8,16,32", "--train-tokens", "100B", "--report", "cap-sizes-r.json"});
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const nlohmann::json rep = read_json("cap-sizes-r.json");
  REQUIRE(rep["sizes"].size() == 3);
  double previous = 1e300;
  for (std::size_t k = 0; k < 3; ++k) {
    CAPTURE(k);
    const nlohmann::json& s = rep["sizes"][k];
    const int gpus = 8 << k;
    CHECK(s["gpus"] == gpus);
    CHECK(s["topology"] == fmt::format("dgx-h100:nodes={},gpus_per_node=8", gpus / 8));
    REQUIRE(s["plans"].size() >= 1);
    const nlohmann::json& best = s["plans"][0];
    CHECK(best["tp"].get<int>() * best["pp"].get<int>() * best["dp"].get<int>() == gpus);
    CHECK(best["train"]["from"] == "emulated");
    CHECK(best["train"]["time_s"].get<double>() == best["train"]["steps"].get<double>() * best["emulated"]["step_time_s"].get<double>());
    CHECK(best["layers_per_stage"].size() == best["pp"].get<std::size_t>());
    // More GPUs, a shorter run (this model scales well from 8 to 32 GPUs).
    CHECK(best["train"]["time_s"].get<double>() < previous);
    previous = best["train"]["time_s"].get<double>();
    CHECK(r.out.find(fmt::format("cluster     {} x H100 (dgx-h100:nodes={},gpus_per_node=8)", gpus, gpus / 8)) != std::string::npos);
  }
  CHECK(r.out.find("capacity    the best plan at each size") != std::string::npos);
  CHECK(r.out.find("time to train on 100B tokens") != std::string::npos);
  // The same sizes from the file.
  write("cap-sizes-file.json", R"({"model": "llama3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=1"}, "global_batch": 32,
    "seq_len": 2048, "cluster_sizes": [8, 16], "constraints": {"max_pp": 1, "micro_batches": [1], "schedules": ["1f1b"], "recompute": ["selective"],
    "zero": [1], "top_k": 0}})");
  const Result f = run({"plan", "cap-sizes-file.json", "--report", "cap-sizes-file-r.json"});
  REQUIRE_MESSAGE(f.code == 0, f.err);
  CHECK(read_json("cap-sizes-file-r.json")["sizes"].size() == 2);
  // A size the servers do not divide, from either place: one line naming it, nothing written.
  fs::remove("cap-sizes-bad-r.json");
  const Result odd = run({"plan", "cap-sizes.json", "--cluster-sizes", "8,12", "--report", "cap-sizes-bad-r.json"});
  CHECK(odd.code == 1);
  CHECK(lines(odd.err) == 1);
  CHECK(odd.err.find("<command line>:--cluster-sizes: found 12 GPUs, expected a positive multiple of the 8 GPUs per server of \"dgx-h100:nodes=1\"") !=
        std::string::npos);
  CHECK_FALSE(fs::exists("cap-sizes-bad-r.json"));
  for (const char* text : {"8,,16", "8,x", "0", "-8", "8,2000000", "1e3"}) {
    CAPTURE(text);
    const Result bad = run({"plan", "cap-sizes.json", "--cluster-sizes", text});
    CHECK(bad.code == 1);
    CHECK(bad.err.find("<command line>:--cluster-sizes: found ") != std::string::npos);
    CHECK(bad.err.find("expected GPU counts from 1 to 1048576 separated by commas") != std::string::npos);
  }
  write("cap-sizes-bad.json", R"({"model": "llama3-8b", "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=1"}, "global_batch": 32,
    "cluster_sizes": [8, 20]})");
  const Result bad_file = run({"plan", "cap-sizes-bad.json"});
  CHECK(bad_file.code == 1);
  CHECK(bad_file.err.find("cap-sizes-bad.json:/cluster_sizes/1: found 20 GPUs, expected a positive multiple of the 8 GPUs per server") != std::string::npos);
}

TEST_CASE("capacity: plan options are range-checked") {
  const std::string example = std::string(ORRERY_SOURCE_DIR) + "/examples/plans/llama3-8b-64xh100.json";
  for (const auto& [top, found] : {std::pair{"-3", "-3"}, {"101", "101"}, {"-1", "-1"}}) {
    CAPTURE(top);
    fs::remove("cap-top-r.json");
    const Result r = run({"plan", example, "--top", top, "--report", "cap-top-r.json"});
    CHECK(r.code == 1);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find(fmt::format("<command line>:--top: found {}, expected 0 to 100 (plans to confirm with the emulator; 0: rank by the estimate only)", found)) != std::string::npos);
    CHECK_FALSE(fs::exists("cap-top-r.json"));
  }
  const Result tokens = run({"plan", example, "--train-tokens", "lots"});
  CHECK(tokens.code == 1);
  CHECK(tokens.err.find("<command line>:--train-tokens: found \"lots\", expected a token count") != std::string::npos);
}
