// A DAG of tasks, each a compute task on a named stream or a plain delay, with dependencies.
//   TaskGraph g;
//   StreamId s = g.add_stream("dev0", "compute");
//   TaskId a = g.add_compute("fwd", s, 2_ms), b = g.add_delay("wait", 1_ms);
//   g.add_dependency(a, b);   // b starts after a ends
#pragma once

#include "sim/flow_network.hpp"
#include "sim/units.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace orrery::sim {

enum class TaskId : std::uint32_t {};
enum class StreamId : std::uint32_t {};
enum class TaskKind : std::uint8_t { compute, delay, transfer };

constexpr std::uint32_t index_of(TaskId t) { return static_cast<std::uint32_t>(t); }
constexpr std::uint32_t index_of(StreamId s) { return static_cast<std::uint32_t>(s); }

// A stream executes its tasks one at a time. `device` groups streams (one timeline process each).
struct StreamInfo {
  std::string device;
  std::string name;
};

class TaskGraph {
 public:
  // The stream named (device, name), created on first use.
  StreamId add_stream(std::string_view device, std::string_view name);
  TaskId add_compute(std::string_view name, StreamId stream, Duration duration);
  TaskId add_delay(std::string_view name, Duration duration);
  // A transfer of `bytes` over `route` on the executor's FlowNetwork (it waits `latency` on top
  // of its links' latencies, then shares bandwidth with every other flow, `weight` times a
  // weight-1 flow's share); it takes no stream.
  TaskId add_transfer(std::string_view name, std::span<const LinkId> route, Bytes bytes, Duration latency = Duration::zero(), double weight = 1.0);
  // `after` may start only once `before` has finished.
  void add_dependency(TaskId before, TaskId after);
  void reserve(std::size_t tasks, std::size_t dependencies);

  std::size_t task_count() const { return tasks_.size(); }
  std::size_t stream_count() const { return streams_.size(); }
  std::size_t dependency_count() const { return edges_.size(); }

  std::string_view name(TaskId t) const;
  TaskKind kind(TaskId t) const { return tasks_[index_of(t)].kind; }
  // A transfer's route and size (empty and zero for other tasks).
  std::span<const LinkId> route(TaskId t) const;
  Bytes bytes(TaskId t) const;
  double weight(TaskId t) const;  // a transfer's share weight (1 for other tasks)
  bool has_transfers() const { return !transfers_.empty(); }
  Duration duration(TaskId t) const { return Duration::nanoseconds(tasks_[index_of(t)].duration_ns); }
  // The stream of a compute task; nullopt for a delay.
  std::optional<StreamId> stream(TaskId t) const;
  const StreamInfo& stream_info(StreamId s) const { return streams_[index_of(s)]; }
  // Dependencies as (before, after) pairs, in the order they were added.
  std::span<const std::pair<TaskId, TaskId>> dependencies() const { return edges_; }

  // A dependency cycle as the tasks on it: each depends on the one before it, and the first
  // on the last; it starts at its lowest TaskId. Empty when the graph is acyclic.
  // O(tasks + dependencies).
  std::vector<TaskId> find_cycle() const;

 private:
  static constexpr std::uint32_t kNoStream = 0xffffffffu;
  struct Task {
    std::int64_t duration_ns;  // a transfer's extra latency
    std::uint32_t stream;
    TaskKind kind;
  };
  struct Transfer {
    std::uint32_t task;
    std::uint32_t route_begin;
    std::uint32_t route_size;
    double bytes;
    double weight;
  };
  TaskId add_task(std::string_view name, std::uint32_t stream, Duration duration, TaskKind kind);
  const Transfer* transfer(TaskId t) const;
  std::vector<Transfer> transfers_;  // by task id, ascending
  std::vector<LinkId> route_pool_;

  std::vector<Task> tasks_;
  std::string names_;                    // every name, back to back
  std::vector<std::size_t> name_ends_;   // names_[name_ends_[i-1], name_ends_[i]) is task i's
  std::vector<std::pair<TaskId, TaskId>> edges_;
  std::vector<StreamInfo> streams_;
  std::map<std::pair<std::string, std::string>, StreamId, std::less<>> stream_ids_;
};

// Compressed adjacency (CSR) of a graph: successors of task i are targets[offsets[i], offsets[i+1]).
struct Adjacency {
  std::vector<std::uint32_t> offsets;
  std::vector<std::uint32_t> targets;
  std::span<const std::uint32_t> of(std::uint32_t i) const {
    return {targets.data() + offsets[i], targets.data() + offsets[i + 1]};
  }
};
// Successor lists (forward = true) or predecessor lists, each in dependency insertion order.
Adjacency build_adjacency(const TaskGraph& graph, bool forward);

}  // namespace orrery::sim
