#include "sim/executor.hpp"

#include "sim/error.hpp"

namespace orrery::sim {

Executor::Executor(Engine& engine, const TaskGraph& graph, FlowNetwork* network)
    : engine_(engine),
      graph_(graph),
      network_(network),
      successors_(build_adjacency(graph, true)),
      waiting_on_(graph.task_count(), 0),
      next_ready_(graph.task_count(), kNone),
      streams_(graph.stream_count()),
      spans_(graph.task_count()),
      stream_busy_(graph.stream_count(), Duration::zero()) {
  for (const auto& edge : graph.dependencies()) ++waiting_on_[index_of(edge.second)];
  ORRERY_CHECK(network_ != nullptr || !graph.has_transfers(), "a task graph with transfers needs a flow network");
  if (network_ != nullptr) network_->set_observer(this, false);
}

void Executor::set_link_load_sink(std::function<void(LinkId, Time, BytesPerSecond)> sink) {
  link_sink_ = std::move(sink);
  if (network_ != nullptr) network_->set_observer(this, static_cast<bool>(link_sink_));
}

void Executor::on_flow_complete(FlowId, std::uint64_t tag, Time) { finish(static_cast<std::uint32_t>(tag)); }

void Executor::on_link_load(LinkId link, Time now, BytesPerSecond load) {
  if (link_sink_) link_sink_(link, now, load);
}

void Executor::start() {
  started_at_ = last_end_ = engine_.now();
  for (std::uint32_t t = 0; t < waiting_on_.size(); ++t) {
    if (waiting_on_[t] == 0) make_ready(t);
  }
}

void Executor::make_ready(std::uint32_t task) {
  const std::optional<StreamId> stream = graph_.stream(TaskId(task));
  if (!stream) {
    begin(task);
    return;
  }
  StreamState& s = streams_[index_of(*stream)];
  if (!s.busy) {
    s.busy = true;
    begin(task);
    return;
  }
  if (s.tail == kNone) {
    s.head = task;
  } else {
    next_ready_[s.tail] = task;
  }
  s.tail = task;
}

void Executor::begin(std::uint32_t task) {
  const Time now = engine_.now();
  spans_[task].start = now;
  for (ExecutionObserver* o : observers_) o->on_task_start(TaskId(task), now);
  if (graph_.kind(TaskId(task)) == TaskKind::transfer) {
    network_->start(graph_.route(TaskId(task)), graph_.bytes(TaskId(task)), task, graph_.weight(TaskId(task)), graph_.duration(TaskId(task)));
    return;
  }
  engine_.schedule_after(graph_.duration(TaskId(task)), [this, task] { finish(task); });
}

void Executor::finish(std::uint32_t task) {
  const Time now = engine_.now();
  spans_[task].end = now;
  last_end_ = now;
  ++completed_;
  for (ExecutionObserver* o : observers_) o->on_task_end(TaskId(task), now);
  if (const std::optional<StreamId> stream = graph_.stream(TaskId(task))) {
    stream_busy_[index_of(*stream)] += graph_.duration(TaskId(task));
    // The stream takes its next queued task before any successor made ready below, so
    // that it runs tasks in the order they became ready.
    StreamState& s = streams_[index_of(*stream)];
    if (s.head == kNone) {
      s.busy = false;
    } else {
      const std::uint32_t next = s.head;
      s.head = next_ready_[next];
      if (s.head == kNone) s.tail = kNone;
      begin(next);
    }
  }
  for (const std::uint32_t successor : successors_.of(task)) {
    if (--waiting_on_[successor] == 0) make_ready(successor);
  }
}

}  // namespace orrery::sim
