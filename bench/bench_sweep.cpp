// Sweeps: a full grid of 11,520 Llama 3 70B plans on 1,024 H100 through the closed-form
// estimate (target: 10,000 points a minute on 2 cores), against the same sweep run through the
// step emulator on a Latin-hypercube sample of it, measured in the same run.
#include "bench.hpp"

#include "cli/app.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace orrery::bench {

namespace {

// tp 4 x pp 5 x micro-batch 4 x recompute 3 x ZeRO 4 x batch 4 x sequence 3 = 11,520 points.
std::string plan_json(const std::string& command, const std::string& design) {
  return fmt::format(R"json({{"command": "{}", {}
  "base": {{"model": "llama3-70b", "cluster": {{"gpu": "H100", "topology": "dgx-h100:nodes=128"}},
           "plan": {{"tp": 8, "pp": 4, "micro_batch": 1, "global_batch": 1024, "seq_len": 4096, "schedule": "1f1b", "recompute": "selective", "zero": 1}}}},
  "axes": [{{"pointer": "/plan/tp", "values": [1, 2, 4, 8]}}, {{"pointer": "/plan/pp", "values": [1, 2, 4, 8, 16]}},
           {{"pointer": "/plan/micro_batch", "values": [1, 2, 4, 8]}}, {{"pointer": "/plan/recompute", "values": ["none", "selective", "full"]}},
           {{"pointer": "/plan/zero", "values": [0, 1, 2, 3]}}, {{"pointer": "/plan/global_batch", "values": [512, 1024, 2048, 4096]}},
           {{"pointer": "/plan/seq_len", "values": [2048, 4096, 8192]}}]}})json",
                     command, design);
}

// Runs `orrery sweep` in-process; returns the wall time and the "points ..." line.
double run_sweep(const std::filesystem::path& dir, const std::string& name, const std::string& plan, int jobs, std::string& summary) {
  const std::filesystem::path plan_path = dir / (name + ".json");
  std::ofstream(plan_path) << plan;
  std::ostringstream out, err;
  const auto start = std::chrono::steady_clock::now();
  const int code = cli::run({"orrery", "sweep", plan_path.string(), "-o", (dir / (name + "-results.json")).string(), "--jobs", std::to_string(jobs), "--quiet"},
                            out, err);
  const double wall = seconds_since(start);
  if (code != 0) throw std::runtime_error("sweep failed: " + err.str());
  const std::string text = out.str();
  const auto at = text.find("points     ");
  summary = at == std::string::npos ? "" : text.substr(at + 11, text.find('\n', at) - at - 11);
  return wall;
}

}  // namespace

void bench_sweep(Figures& out, bool quick) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "orrery-bench-sweep";
  std::filesystem::create_directories(dir);
  const int jobs = 2;
  std::string summary;
  const std::string grid = quick ? R"("design": {"kind": "lhs", "samples": 500, "seed": 1},)" : "";
  const int grid_points = quick ? 500 : 11520;
  const double estimate_wall = run_sweep(dir, "estimate", plan_json("estimate", grid), jobs, summary);
  out.push_back({"sweep.estimate.points", static_cast<double>(grid_points), summary});
  out.push_back({"sweep.estimate.wall", estimate_wall, fmt::format("s for the grid on {} threads", jobs)});
  out.push_back({"sweep.estimate.points_per_minute", 60.0 * grid_points / estimate_wall, "(target >= 10,000 on 2 cores)"});
  const int sample = quick ? 20 : 200;
  const double emulate_wall =
      run_sweep(dir, "emulate", plan_json("step", fmt::format(R"("design": {{"kind": "lhs", "samples": {}, "seed": 1}},)", sample)), jobs, summary);
  out.push_back({"sweep.emulate.points", static_cast<double>(sample), summary});
  out.push_back({"sweep.emulate.points_per_minute", 60.0 * sample / emulate_wall, "step emulator, same plans (a Latin-hypercube sample)"});
  out.push_back({"sweep.estimate_speedup", (estimate_wall / grid_points) > 0 ? (emulate_wall / sample) / (estimate_wall / grid_points) : 0,
                 "x: seconds per point, emulator over closed form"});
  out.push_back({"sweep.peak_rss", peak_rss_gb(), "GB"});
  std::filesystem::remove_all(dir);
}

}  // namespace orrery::bench
