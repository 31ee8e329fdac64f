// Timeline of an executed task graph as Chrome trace-event JSON, which Perfetto
// (ui.perfetto.dev) and chrome://tracing open: one process per device, one thread per
// stream, one complete ("X") event per task, named after it. Delays go on a "delays" track.
//   write_chrome_trace("t.json", graph, executor.spans());
#pragma once

#include "sim/executor.hpp"
#include "sim/task_graph.hpp"

#include <span>
#include <string>
#include <vector>

namespace orrery::reports {

// Tasks that never ran (Time::max()) are left out. Written atomically.
void write_chrome_trace(const std::string& path, const sim::TaskGraph& graph, const std::vector<sim::Span>& spans);

// A counter track sample (e.g. a link's load) for the timeline.
struct CounterSample {
  std::string track;
  sim::Time at;
  double value;
};
// The same, with counter tracks (one per distinct `track`, values in `counter_unit`).
void write_chrome_trace(const std::string& path, const sim::TaskGraph& graph, const std::vector<sim::Span>& spans,
                        std::span<const CounterSample> counters, std::string_view counter_unit);
// The same document as a string (for tests and small graphs).
std::string chrome_trace_json(const sim::TaskGraph& graph, const std::vector<sim::Span>& spans);

// Appends `text` as a JSON string literal, quotes included.
void append_json_string(std::string& out, std::string_view text);

}  // namespace orrery::reports
