// Runs a TaskGraph on an Engine: a task becomes ready when its dependencies are done; a
// stream runs its ready tasks one at a time, in the order they became ready; a delay starts
// as soon as it is ready. Every span is recorded, and observers hear each start and end.
//   Engine engine;  Executor exec(engine, graph);
//   exec.start();  engine.run();  exec.makespan();
#pragma once

#include "sim/engine.hpp"
#include "sim/flow_network.hpp"
#include "sim/task_graph.hpp"

#include <functional>

#include <vector>

namespace orrery::sim {

struct Span {
  Time start = Time::max();
  Time end = Time::max();
};

// Hears the executor's signals (a timeline writer, a metrics collector...). Called in
// simulated-time order.
class ExecutionObserver {
 public:
  virtual ~ExecutionObserver() = default;
  virtual void on_task_start(TaskId, Time) {}
  virtual void on_task_end(TaskId, Time) {}
};

class Executor final : private FlowObserver {
 public:
  // `graph` must outlive the executor and be acyclic (check with TaskGraph::find_cycle()).
  // Transfer tasks run as flows on `network` (required when the graph has any); the executor
  // becomes the network's observer.
  Executor(Engine& engine, const TaskGraph& graph, FlowNetwork* network = nullptr);
  // Called with every change of a link's total rate (for utilisation counters).
  void set_link_load_sink(std::function<void(LinkId, Time, BytesPerSecond)> sink);
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  void add_observer(ExecutionObserver& observer) { observers_.push_back(&observer); }
  // Starts every task without dependencies at the engine's current time.
  void start();

  bool finished() const { return completed_ == graph_.task_count(); }
  std::size_t completed() const { return completed_; }
  // Indexed by task; a task that has not run has Time::max() for both ends.
  const std::vector<Span>& spans() const { return spans_; }
  const Span& span(TaskId t) const { return spans_[index_of(t)]; }
  // Time from start() to the end of the last task.
  Duration makespan() const { return last_end_ - started_at_; }
  // Total time each stream spent running tasks, indexed by stream.
  const std::vector<Duration>& stream_busy() const { return stream_busy_; }

 private:
  static constexpr std::uint32_t kNone = 0xffffffffu;
  struct StreamState {
    std::uint32_t head = kNone;  // FIFO of ready tasks, linked through next_ready_
    std::uint32_t tail = kNone;
    bool busy = false;
  };
  void on_flow_complete(FlowId flow, std::uint64_t tag, Time now) override;
  void on_link_load(LinkId link, Time now, BytesPerSecond load) override;
  void make_ready(std::uint32_t task);
  void begin(std::uint32_t task);
  void finish(std::uint32_t task);

  Engine& engine_;
  const TaskGraph& graph_;
  FlowNetwork* network_;
  std::function<void(LinkId, Time, BytesPerSecond)> link_sink_;
  Adjacency successors_;
  std::vector<std::uint32_t> waiting_on_;  // unfinished dependencies per task
  std::vector<std::uint32_t> next_ready_;
  std::vector<StreamState> streams_;
  std::vector<Span> spans_;
  std::vector<Duration> stream_busy_;
  std::vector<ExecutionObserver*> observers_;
  std::size_t completed_ = 0;
  Time started_at_ = Time::zero();
  Time last_end_ = Time::zero();
};

}  // namespace orrery::sim
