// `orrery replay` end to end (read the task-graph JSON, build the graph, run it, summarise) on
// generated graphs of 50k, 200k and 1M tasks: 64 devices, each task after the previous one on its
// stream and, every fourth, after a task of the neighbouring device. Issue 17's target: 1M tasks
// under 10 s; the per-task time across sizes shows the reading is linear (it was quadratic).
#include "bench.hpp"

#include "cli/app.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace orrery::bench {

namespace {

std::string graph_json(int tasks) {
  constexpr int kDevices = 64;
  std::string s = "{\"name\": \"bench\", \"nodes\": [\n";
  s.reserve(static_cast<std::size_t>(tasks) * 110);
  for (int i = 0; i < tasks; ++i) {
    const int device = i % kDevices;
    std::string deps;
    if (i >= kDevices) deps = fmt::format("\"t{}\"", i - kDevices);
    if (i % 4 == 0 && i >= kDevices + 1) deps += fmt::format("{}\"t{}\"", deps.empty() ? "" : ", ", i - kDevices - 1 + (device == 0 ? kDevices : 0));
    s += fmt::format("{}{{\"id\": \"t{}\", \"device\": \"gpu{}\", \"stream\": \"compute\", \"duration\": \"{} us\", \"deps\": [{}]}}",
                     i == 0 ? "" : ",\n", i, device, 10 + i % 7, deps);
  }
  s += "\n]}\n";
  return s;
}

}  // namespace

void bench_replay(Figures& out, bool quick) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "orrery-bench-replay";
  std::filesystem::create_directories(dir);
  const std::vector<int> sizes = quick ? std::vector<int>{10000, 50000} : std::vector<int>{50000, 200000, 1000000};
  double per_task_first = 0;
  for (const int n : sizes) {
    const std::string path = (dir / fmt::format("graph-{}.json", n)).string();
    std::ofstream(path) << graph_json(n);
    std::ostringstream sink, errors;
    int code = 0;
    const double s = best_seconds(quick ? 1 : 2, [&] { code = cli::run({"orrery", "replay", path}, sink, errors); });
    if (code != 0) throw std::runtime_error("bench replay failed: " + errors.str());
    std::filesystem::remove(path);
    const std::string name = fmt::format("replay.tasks_{}", n);
    out.push_back({name, s, n == 1000000 ? "s for orrery replay (target < 10)" : "s for orrery replay"});
    const double per_task = s / n;
    if (per_task_first == 0) per_task_first = per_task;
    out.push_back({name + ".per_task_ratio", per_task / per_task_first,
                   fmt::format("x the per-task time at {} tasks (1: linear)", sizes.front())});
  }
}

}  // namespace orrery::bench
