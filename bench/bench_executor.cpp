// Executor throughput: a random DAG of 1,000,000 tasks with 2 dependencies on average (0-4
// per task, on tasks among the previous 4096), on 256 streams, 10% of the tasks delays.
#include "bench.hpp"

#include "sim/executor.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace orrery::bench {

void bench_executor(Figures& out, bool quick) {
  const std::uint32_t tasks = quick ? 100'000 : 1'000'000;
  constexpr std::uint32_t kStreams = 256;
  constexpr std::uint32_t kWindow = 4096;

  sim::TaskGraph graph;
  const double build_s = best_seconds(1, [&] {
    Rng rng(7);
    graph.reserve(tasks, 2 * std::size_t{tasks});
    std::vector<sim::StreamId> streams;
    for (std::uint32_t s = 0; s < kStreams; ++s) {
      streams.push_back(graph.add_stream(fmt::format("dev{}", s / 8), fmt::format("stream{}", s % 8)));
    }
    for (std::uint32_t i = 0; i < tasks; ++i) {
      const auto duration = sim::Duration::nanoseconds(1'000 + static_cast<std::int64_t>(rng.below(99'000)));
      const sim::TaskId t = rng.below(10) == 0 ? graph.add_delay("delay", duration)
                                               : graph.add_compute("task", streams[rng.below(kStreams)], duration);
      const std::uint64_t deps = i == 0 ? 0 : rng.below(5);
      for (std::uint64_t d = 0; d < deps; ++d) {
        const std::uint32_t window = std::min(i, kWindow);
        graph.add_dependency(sim::TaskId(i - 1 - static_cast<std::uint32_t>(rng.below(window))), t);
      }
    }
  });

  double run_s = 1e300;
  std::uint64_t events = 0;
  for (int r = 0; r < (quick ? 1 : 3); ++r) {
    const auto start = std::chrono::steady_clock::now();
    sim::Engine engine;
    sim::Executor executor(engine, graph);
    executor.start();
    engine.run();
    run_s = std::min(run_s, seconds_since(start));
    if (!executor.finished()) throw std::logic_error("random DAG did not finish");
    events = engine.events_processed();
  }
  out.push_back({"executor.random_dag.tasks", static_cast<double>(tasks), "tasks"});
  out.push_back({"executor.random_dag.dependencies", static_cast<double>(graph.dependency_count()), "dependencies"});
  out.push_back({"executor.random_dag.build", static_cast<double>(tasks) / build_s, "tasks/s"});
  out.push_back({"executor.random_dag.run", static_cast<double>(tasks) / run_s, "tasks/s"});
  out.push_back({"executor.random_dag.events", static_cast<double>(events) / run_s, "events/s"});
}

}  // namespace orrery::bench
