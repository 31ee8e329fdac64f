#include "reports/chrome_trace.hpp"

#include "traces/atomic_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>

namespace orrery::reports {

void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

namespace {

// Writes trace events one by one into a buffer that is handed to `sink` every megabyte.
class EventWriter {
 public:
  explicit EventWriter(std::function<void(std::string_view)> sink) : sink_(std::move(sink)) {
    out_ = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  }

  void metadata(std::string_view what, int pid, int tid, std::string_view name, int sort_index) {
    begin_event();
    fmt::format_to(std::back_inserter(out_), R"({{"name":"{}","ph":"M","pid":{},"tid":{},"args":{{"name":)", what, pid, tid);
    append_json_string(out_, name);
    out_ += "}}";
    begin_event();
    fmt::format_to(std::back_inserter(out_), R"({{"name":"{}","ph":"M","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
                   what == "process_name" ? "process_sort_index" : "thread_sort_index", pid, tid, sort_index);
  }

  void span(std::string_view name, std::string_view category, int pid, int tid, const sim::Span& s) {
    begin_event();
    out_ += R"({"name":)";
    append_json_string(out_, name);
    fmt::format_to(std::back_inserter(out_), R"(,"cat":"{}","ph":"X","pid":{},"tid":{},"ts":)", category, pid, tid);
    append_us(s.start.since_start());
    out_ += R"(,"dur":)";
    append_us(s.end - s.start);
    out_ += '}';
    if (out_.size() > (std::size_t{1} << 20)) {
      sink_(out_);
      out_.clear();
    }
  }

  void counter(std::string_view name, int pid, sim::Time at, std::string_view unit, double value) {
    begin_event();
    out_ += R"({"name":)";
    append_json_string(out_, name);
    fmt::format_to(std::back_inserter(out_), R"(,"ph":"C","pid":{},"tid":0,"ts":)", pid);
    append_us(at.since_start());
    out_ += R"(,"args":{)";
    append_json_string(out_, unit);
    fmt::format_to(std::back_inserter(out_), ":{}}}}}", value);
  }

  void finish() {
    out_ += "\n]}\n";
    sink_(out_);
  }

 private:
  void begin_event() {
    out_ += first_ ? "\n" : ",\n";
    first_ = false;
  }
  // Trace-event timestamps are microseconds; print whole nanoseconds exactly, as "12.345".
  void append_us(sim::Duration d) {
    fmt::format_to(std::back_inserter(out_), "{}.{:03}", d.ns() / 1000, d.ns() % 1000);
  }

  std::function<void(std::string_view)> sink_;
  std::string out_;
  bool first_ = true;
};

void emit(const sim::TaskGraph& graph, const std::vector<sim::Span>& spans, EventWriter& writer, std::span<const CounterSample> counters = {},
          std::string_view counter_unit = "") {
  // Devices get pids in order of their first stream; streams get tids in creation order.
  std::map<std::string, int, std::less<>> pid_of_device;
  std::vector<std::pair<int, int>> ids_of_stream;  // (pid, tid)
  for (std::uint32_t s = 0; s < graph.stream_count(); ++s) {
    const sim::StreamInfo& info = graph.stream_info(sim::StreamId(s));
    const auto [it, added] = pid_of_device.try_emplace(info.device, static_cast<int>(pid_of_device.size()) + 1);
    if (added) writer.metadata("process_name", it->second, 0, info.device, it->second);
    const int tid = static_cast<int>(s) + 1;
    ids_of_stream.emplace_back(it->second, tid);
    writer.metadata("thread_name", it->second, tid, info.name, tid);
  }

  // Delays may overlap: each goes on the first lane free at its start (interval
  // partitioning), so that spans on one track never overlap.
  const int delay_pid = static_cast<int>(pid_of_device.size()) + 1;
  std::vector<std::uint32_t> delays;
  for (std::uint32_t t = 0; t < graph.task_count(); ++t) {
    if (!graph.stream(sim::TaskId(t)) && spans[t].end != sim::Time::max()) delays.push_back(t);
  }
  std::stable_sort(delays.begin(), delays.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return spans[a].start < spans[b].start; });
  std::vector<int> lane_of(graph.task_count(), 0);
  std::vector<sim::Time> lane_free_at;
  for (const std::uint32_t t : delays) {
    auto lane = std::find_if(lane_free_at.begin(), lane_free_at.end(), [&](sim::Time f) { return f <= spans[t].start; });
    if (lane == lane_free_at.end()) lane = lane_free_at.insert(lane, spans[t].end);
    *lane = spans[t].end;
    lane_of[t] = static_cast<int>(lane - lane_free_at.begin()) + 1;
  }
  if (!delays.empty()) {
    writer.metadata("process_name", delay_pid, 0, "delays and transfers", delay_pid);
    for (int lane = 1; lane <= static_cast<int>(lane_free_at.size()); ++lane) {
      writer.metadata("thread_name", delay_pid, lane, fmt::format("lane {}", lane), lane);
    }
  }

  for (std::uint32_t t = 0; t < graph.task_count(); ++t) {
    if (spans[t].end == sim::Time::max()) continue;
    const auto task = sim::TaskId(t);
    if (const auto stream = graph.stream(task)) {
      const auto [pid, tid] = ids_of_stream[sim::index_of(*stream)];
      writer.span(graph.name(task), "compute", pid, tid, spans[t]);
    } else {
      writer.span(graph.name(task), graph.kind(task) == sim::TaskKind::transfer ? "transfer" : "delay", delay_pid, lane_of[t], spans[t]);
    }
  }
  if (!counters.empty()) {
    const int counter_pid = delay_pid + 1;
    writer.metadata("process_name", counter_pid, 0, "link utilisation", counter_pid);
    for (const CounterSample& c : counters) writer.counter(c.track, counter_pid, c.at, counter_unit, c.value);
  }
  writer.finish();
}

}  // namespace

void write_chrome_trace(const std::string& path, const sim::TaskGraph& graph, const std::vector<sim::Span>& spans) {
  traces::AtomicFile file(path);
  EventWriter writer([&](std::string_view chunk) { file.write(chunk); });
  emit(graph, spans, writer);
  file.commit();
}

void write_chrome_trace(const std::string& path, const sim::TaskGraph& graph, const std::vector<sim::Span>& spans,
                        std::span<const CounterSample> counters, std::string_view counter_unit) {
  traces::AtomicFile file(path);
  EventWriter writer([&](std::string_view chunk) { file.write(chunk); });
  emit(graph, spans, writer, counters, counter_unit);
  file.commit();
}

std::string chrome_trace_json(const sim::TaskGraph& graph, const std::vector<sim::Span>& spans) {
  std::string all;
  EventWriter writer([&](std::string_view chunk) { all += chunk; });
  emit(graph, spans, writer);
  return all;
}

}  // namespace orrery::reports
