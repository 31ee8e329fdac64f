#include "sim/task_graph.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <cmath>

namespace orrery::sim {

StreamId TaskGraph::add_stream(std::string_view device, std::string_view name) {
  const auto key = std::pair<std::string, std::string>(device, name);
  if (const auto it = stream_ids_.find(key); it != stream_ids_.end()) return it->second;
  const auto id = StreamId(static_cast<std::uint32_t>(streams_.size()));
  streams_.push_back(StreamInfo{key.first, key.second});
  stream_ids_.emplace(key, id);
  return id;
}

TaskId TaskGraph::add_task(std::string_view name, std::uint32_t stream, Duration duration, TaskKind kind) {
  ORRERY_CHECK(duration >= Duration::zero(), "task {} has negative duration {} ns", name, duration.ns());
  ORRERY_CHECK(tasks_.size() < kNoStream, "too many tasks");
  tasks_.push_back(Task{duration.ns(), stream, kind});
  names_.append(name);
  name_ends_.push_back(names_.size());
  return TaskId(static_cast<std::uint32_t>(tasks_.size() - 1));
}

TaskId TaskGraph::add_compute(std::string_view name, StreamId stream, Duration duration) {
  ORRERY_CHECK(index_of(stream) < streams_.size(), "unknown stream {}", index_of(stream));
  return add_task(name, index_of(stream), duration, TaskKind::compute);
}

TaskId TaskGraph::add_delay(std::string_view name, Duration duration) {
  return add_task(name, kNoStream, duration, TaskKind::delay);
}

TaskId TaskGraph::add_transfer(std::string_view name, std::span<const LinkId> route, Bytes bytes, Duration latency, double weight) {
  ORRERY_CHECK(bytes.value() >= 0 && std::isfinite(bytes.value()), "transfer {} of {} bytes", name, bytes.value());
  ORRERY_CHECK(weight > 0 && std::isfinite(weight), "transfer {} of weight {}", name, weight);
  const TaskId t = add_task(name, kNoStream, latency, TaskKind::transfer);
  transfers_.push_back(
      Transfer{index_of(t), static_cast<std::uint32_t>(route_pool_.size()), static_cast<std::uint32_t>(route.size()), bytes.value(), weight});
  route_pool_.insert(route_pool_.end(), route.begin(), route.end());
  return t;
}

const TaskGraph::Transfer* TaskGraph::transfer(TaskId t) const {
  const auto it = std::lower_bound(transfers_.begin(), transfers_.end(), index_of(t),
                                   [](const Transfer& x, std::uint32_t task) { return x.task < task; });
  return it != transfers_.end() && it->task == index_of(t) ? &*it : nullptr;
}

std::span<const LinkId> TaskGraph::route(TaskId t) const {
  const Transfer* x = transfer(t);
  return x == nullptr ? std::span<const LinkId>{} : std::span<const LinkId>(route_pool_.data() + x->route_begin, x->route_size);
}

double TaskGraph::weight(TaskId t) const {
  const Transfer* x = transfer(t);
  return x == nullptr ? 1.0 : x->weight;
}

Bytes TaskGraph::bytes(TaskId t) const {
  const Transfer* x = transfer(t);
  return Bytes(x == nullptr ? 0.0 : x->bytes);
}

void TaskGraph::add_dependency(TaskId before, TaskId after) {
  ORRERY_CHECK(index_of(before) < tasks_.size() && index_of(after) < tasks_.size(),
               "dependency {} -> {} names a task that does not exist", index_of(before), index_of(after));
  edges_.emplace_back(before, after);
}

void TaskGraph::reserve(std::size_t tasks, std::size_t dependencies) {
  tasks_.reserve(tasks);
  name_ends_.reserve(tasks);
  edges_.reserve(dependencies);
}

std::string_view TaskGraph::name(TaskId t) const {
  const std::uint32_t i = index_of(t);
  const std::size_t begin = i == 0 ? 0 : name_ends_[i - 1];
  return std::string_view(names_).substr(begin, name_ends_[i] - begin);
}

std::optional<StreamId> TaskGraph::stream(TaskId t) const {
  const std::uint32_t s = tasks_[index_of(t)].stream;
  if (s == kNoStream) return std::nullopt;
  return StreamId(s);
}

Adjacency build_adjacency(const TaskGraph& graph, bool forward) {
  Adjacency adj;
  const std::size_t n = graph.task_count();
  adj.offsets.assign(n + 1, 0);
  for (const auto& [before, after] : graph.dependencies()) {
    ++adj.offsets[index_of(forward ? before : after) + 1];
  }
  for (std::size_t i = 0; i < n; ++i) adj.offsets[i + 1] += adj.offsets[i];
  adj.targets.resize(graph.dependency_count());
  std::vector<std::uint32_t> fill(adj.offsets.begin(), adj.offsets.end() - 1);
  for (const auto& [before, after] : graph.dependencies()) {
    const std::uint32_t from = index_of(forward ? before : after);
    adj.targets[fill[from]++] = index_of(forward ? after : before);
  }
  return adj;
}

std::vector<TaskId> TaskGraph::find_cycle() const {
  // Kahn's algorithm removes every task not on or behind a cycle. Each remaining task has a
  // remaining predecessor, so walking predecessors from any of them must revisit a task:
  // the walk from the first revisit back to itself is a cycle.
  const std::size_t n = task_count();
  const Adjacency succ = build_adjacency(*this, true);
  std::vector<std::uint32_t> indegree(n, 0);
  for (const auto& edge : edges_) ++indegree[index_of(edge.second)];
  std::vector<std::uint32_t> ready;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (indegree[i] == 0) ready.push_back(i);
  }
  std::size_t removed = 0;
  while (!ready.empty()) {
    const std::uint32_t t = ready.back();
    ready.pop_back();
    ++removed;
    for (const std::uint32_t s : succ.of(t)) {
      if (--indegree[s] == 0) ready.push_back(s);
    }
  }
  if (removed == n) return {};

  const Adjacency pred = build_adjacency(*this, false);
  std::uint32_t current = 0;
  while (indegree[current] == 0) ++current;
  std::vector<std::uint32_t> visit_order(n, 0xffffffffu);
  std::vector<std::uint32_t> walk;
  while (visit_order[current] == 0xffffffffu) {
    visit_order[current] = static_cast<std::uint32_t>(walk.size());
    walk.push_back(current);
    const auto preds = pred.of(current);
    const auto next = std::find_if(preds.begin(), preds.end(), [&](std::uint32_t p) { return indegree[p] > 0; });
    ORRERY_CHECK(next != preds.end(), "task {} is left by Kahn's algorithm without a remaining predecessor", current);
    current = *next;
  }
  // walk[k..] is the cycle traversed against the edges; reverse it into dependency order.
  std::vector<TaskId> cycle;
  for (std::size_t k = walk.size(); k-- > visit_order[current];) cycle.push_back(TaskId(walk[k]));
  // Canonical rotation: start at the earliest task on the cycle.
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  return cycle;
}

}  // namespace orrery::sim
