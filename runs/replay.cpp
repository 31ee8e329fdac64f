#include "runs/runs.hpp"
#include "runs/report_out.hpp"
#include "runs/options.hpp"

#include "sim/executor.hpp"
#include "reports/chrome_trace.hpp"
#include "traces/json_input.hpp"
#include "reports/report.hpp"
#include "traces/task_graph_json.hpp"

#include <fmt/format.h>

#include <ostream>
#include <set>

namespace orrery::runs {

void replay(const ReplayOptions& options, std::ostream& out) {
  check_outputs({{"--trace", options.trace_path}, {"--report", options.report_path}});
  const traces::LoadedGraph loaded = traces::read_task_graph_file(options.graph_path);
  const sim::TaskGraph& graph = loaded.graph;

  sim::Engine engine;
  sim::Executor executor(engine, graph);
  executor.start();
  engine.run();
  ORRERY_CHECK(executor.finished(), "{} of {} tasks ran in an acyclic graph", executor.completed(), graph.task_count());

  std::size_t delays = 0;
  for (std::uint32_t t = 0; t < graph.task_count(); ++t) {
    if (graph.kind(sim::TaskId(t)) == sim::TaskKind::delay) ++delays;
  }
  std::set<std::string> devices;
  for (std::uint32_t s = 0; s < graph.stream_count(); ++s) devices.insert(graph.stream_info(sim::StreamId(s)).device);
  const sim::Duration makespan = executor.makespan();
  const auto utilization = [&](sim::Duration busy) { return makespan.ns() == 0 ? 0.0 : busy / makespan; };

  // Summary on stdout.
  out << fmt::format("graph      {}{}\n", options.graph_path, loaded.name.empty() ? "" : fmt::format(" ({})", loaded.name));
  out << fmt::format("tasks      {} ({} compute, {} delay), {} dependencies\n", graph.task_count(),
                     graph.task_count() - delays, delays, graph.dependency_count());
  out << fmt::format("streams    {} on {} devices\n", graph.stream_count(), devices.size());
  out << fmt::format("makespan   {}\n", sim::to_string(makespan));
  out << fmt::format("events     {}\n", engine.events_processed());
  std::size_t width = 6;
  for (std::uint32_t s = 0; s < graph.stream_count(); ++s) {
    const sim::StreamInfo& info = graph.stream_info(sim::StreamId(s));
    width = std::max(width, info.device.size() + 1 + info.name.size());
  }
  out << fmt::format("\n{:<{}}  {:>14}  {:>6}\n", "stream", width, "busy", "util");
  for (std::uint32_t s = 0; s < graph.stream_count(); ++s) {
    const sim::StreamInfo& info = graph.stream_info(sim::StreamId(s));
    const sim::Duration busy = executor.stream_busy()[s];
    out << fmt::format("{:<{}}  {:>14}  {:>5.1f}%\n", info.device + "/" + info.name, width, sim::to_string(busy),
                       100.0 * utilization(busy));
  }

  // Files last, each atomically: bad input above has left nothing behind.
  if (!options.trace_path.empty()) reports::write_chrome_trace(options.trace_path, graph, executor.spans());
  if (report_wanted(options.report_path, options.report_json)) {
    reports::Report report;
    report.set("/command", "replay");
    report.set("/graph/path", options.graph_path);
    report.set("/graph/name", loaded.name);
    report.set("/graph/tasks", static_cast<std::int64_t>(graph.task_count()));
    report.set("/graph/compute_tasks", static_cast<std::int64_t>(graph.task_count() - delays));
    report.set("/graph/delay_tasks", static_cast<std::int64_t>(delays));
    report.set("/graph/dependencies", static_cast<std::int64_t>(graph.dependency_count()));
    report.set("/graph/streams", static_cast<std::int64_t>(graph.stream_count()));
    report.set("/graph/devices", static_cast<std::int64_t>(devices.size()));
    report.set("/makespan_ns", makespan.ns());
    report.set("/engine/events", static_cast<std::int64_t>(engine.events_processed()));
    for (std::uint32_t s = 0; s < graph.stream_count(); ++s) {
      const sim::StreamInfo& info = graph.stream_info(sim::StreamId(s));
      const std::string key = "/streams/" + traces::pointer_token(info.device + "/" + info.name);
      report.set(key + "/device", info.device);
      report.set(key + "/stream", info.name);
      report.set(key + "/busy_ns", executor.stream_busy()[s].ns());
      report.set(key + "/utilization", utilization(executor.stream_busy()[s]));
    }
    emit_report(report, options.report_path, options.report_json);
  }
}

}  // namespace orrery::runs
