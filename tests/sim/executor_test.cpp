#include "sim/executor.hpp"
#include "approx.hpp"

#include <doctest/doctest.h>

#include <vector>

using namespace orrery::sim;
using namespace orrery::sim::literals;

namespace {

struct Run {
  Engine engine;
  std::unique_ptr<Executor> executor;
  explicit Run(const TaskGraph& g) : executor(std::make_unique<Executor>(engine, g)) {
    executor->start();
    engine.run();
    REQUIRE(executor->finished());
  }
};

// GPipe as a task graph: f(i,s) after f(i,s-1); the last stage flushes (its backwards wait
// for its last forward); b(i,s) after b(i,s+1).
TaskGraph gpipe(int p, int m, Duration f, Duration b) {
  TaskGraph g;
  std::vector<std::vector<TaskId>> fwd(static_cast<std::size_t>(m)), bwd(static_cast<std::size_t>(m));
  for (int s = 0; s < p; ++s) {
    const StreamId stream = g.add_stream("stage" + std::to_string(s), "compute");
    for (int i = 0; i < m; ++i) {
      fwd[static_cast<std::size_t>(i)].push_back(g.add_compute("f", stream, f));
      if (s > 0) g.add_dependency(fwd[static_cast<std::size_t>(i)][static_cast<std::size_t>(s - 1)], fwd[static_cast<std::size_t>(i)].back());
    }
  }
  for (int s = p - 1; s >= 0; --s) {
    const StreamId stream = g.add_stream("stage" + std::to_string(s), "compute");
    for (int i = 0; i < m; ++i) {
      const TaskId t = g.add_compute("b", stream, b);
      bwd[static_cast<std::size_t>(i)].push_back(t);
      if (s == p - 1) {
        g.add_dependency(fwd[static_cast<std::size_t>(m - 1)][static_cast<std::size_t>(s)], t);
      } else {
        g.add_dependency(bwd[static_cast<std::size_t>(i)][static_cast<std::size_t>(p - 2 - s)], t);
      }
    }
  }
  return g;
}

}  // namespace

TEST_CASE("a chain on one stream takes the sum of its durations") {
  TaskGraph g;
  const StreamId s = g.add_stream("d", "compute");
  const TaskId a = g.add_compute("a", s, 1_ms), b = g.add_compute("b", s, 2_ms), c = g.add_compute("c", s, 3_ms);
  g.add_dependency(a, b);
  g.add_dependency(b, c);
  Run run(g);
  CHECK(run.executor->makespan() == 6_ms);
  CHECK(run.executor->span(b).start == Time::zero() + 1_ms);
  CHECK(run.executor->span(c).end == Time::zero() + 6_ms);
  CHECK(run.executor->stream_busy()[0] == 6_ms);
  CHECK(run.engine.events_processed() == 3);
}

TEST_CASE("independent streams run in parallel; one stream serialises") {
  TaskGraph g;
  const StreamId s0 = g.add_stream("d0", "compute"), s1 = g.add_stream("d1", "compute");
  g.add_compute("a", s0, 4_ms);
  g.add_compute("b", s1, 3_ms);
  g.add_compute("c", s0, 2_ms);  // no dependency, but its stream is busy until 4 ms
  Run run(g);
  CHECK(run.executor->makespan() == 6_ms);
  CHECK(run.executor->span(TaskId(2)).start == Time::zero() + 4_ms);
  CHECK(run.executor->stream_busy()[0] == 6_ms);
  CHECK(run.executor->stream_busy()[1] == 3_ms);
}

TEST_CASE("a stream runs its tasks in the order they became ready, not in id order") {
  TaskGraph g;
  const StreamId s = g.add_stream("d", "compute");
  const TaskId blocker = g.add_compute("blocker", s, 10_us);
  const TaskId late_gate = g.add_delay("late gate", 5_us);
  const TaskId early_gate = g.add_delay("early gate", 2_us);
  const TaskId x = g.add_compute("x (ready at 5 us)", s, 1_us);
  const TaskId y = g.add_compute("y (ready at 2 us)", s, 1_us);
  g.add_dependency(late_gate, x);
  g.add_dependency(early_gate, y);
  Run run(g);
  CHECK(run.executor->span(blocker).end == Time::zero() + 10_us);
  CHECK(run.executor->span(y).start == Time::zero() + 10_us);
  CHECK(run.executor->span(x).start == Time::zero() + 11_us);
}

TEST_CASE("a successor made ready on a stream queues behind tasks already waiting there") {
  TaskGraph g;
  const StreamId s = g.add_stream("d", "compute");
  const TaskId first = g.add_compute("first", s, 3_us);
  const TaskId waiting = g.add_compute("waiting", s, 1_us);  // ready at 0, queued behind first
  const TaskId successor = g.add_compute("successor", s, 1_us);
  g.add_dependency(first, successor);
  Run run(g);
  CHECK(run.executor->span(waiting).start == Time::zero() + 3_us);
  CHECK(run.executor->span(successor).start == Time::zero() + 4_us);
}

TEST_CASE("delays overlap freely and zero-length tasks take no time") {
  TaskGraph g;
  const TaskId d1 = g.add_delay("d1", 5_us), d2 = g.add_delay("d2", 5_us);
  const StreamId s = g.add_stream("d", "compute");
  const TaskId z = g.add_compute("zero", s, 0_ns);
  const TaskId after = g.add_compute("after", s, 1_us);
  g.add_dependency(d1, z);
  g.add_dependency(d2, z);
  g.add_dependency(z, after);
  Run run(g);
  CHECK(run.executor->span(d2).start == Time::zero());
  CHECK(run.executor->span(z).start == Time::zero() + 5_us);
  CHECK(run.executor->span(z).end == Time::zero() + 5_us);
  CHECK(run.executor->makespan() == 6_us);
}

// GPipe closed form: the step takes (m+p-1)(f+b); each stage is busy m(f+b), so its bubble
// fraction is (p-1)/(m+p-1).
TEST_CASE("GPipe makespan and bubble match the closed form") {
  for (const auto& [p, m] : std::vector<std::pair<int, int>>{{1, 1}, {2, 3}, {4, 4}, {4, 16}, {8, 3}}) {
    const Duration f = 1_ms, b = 2_ms;
    const TaskGraph g = gpipe(p, m, f, b);
    Run run(g);
    CAPTURE(p);
    CAPTURE(m);
    CHECK(run.executor->makespan() == (f + b) * (m + p - 1));
    for (std::size_t s = 0; s < g.stream_count(); ++s) {
      const Duration busy = run.executor->stream_busy()[s];
      CHECK(busy == (f + b) * m);
      CHECK(1.0 - busy / run.executor->makespan() == orrery::testing::Approx(double(p - 1) / double(m + p - 1)));
    }
  }
}

TEST_CASE("observers hear every start and end, in time order") {
  struct Recorder : ExecutionObserver {
    std::vector<std::pair<Time, int>> log;  // +task on start, -task-1 on end
    void on_task_start(TaskId t, Time at) override { log.emplace_back(at, int(index_of(t))); }
    void on_task_end(TaskId t, Time at) override { log.emplace_back(at, -int(index_of(t)) - 1); }
  };
  const TaskGraph g = gpipe(3, 2, 1_us, 2_us);
  Engine engine;
  Executor executor(engine, g);
  Recorder recorder;
  executor.add_observer(recorder);
  executor.start();
  engine.run();
  CHECK(recorder.log.size() == 2 * g.task_count());
  for (std::size_t k = 1; k < recorder.log.size(); ++k) CHECK(recorder.log[k - 1].first <= recorder.log[k].first);
  for (std::uint32_t t = 0; t < g.task_count(); ++t) {
    const Span& s = executor.span(TaskId(t));
    CHECK(s.end - s.start == g.duration(TaskId(t)));
  }
}

TEST_CASE("the executor starts at the engine's current time") {
  TaskGraph g;
  const StreamId s = g.add_stream("d", "compute");
  g.add_compute("a", s, 1_us);
  Engine engine;
  engine.schedule_after(7_us, [] {});
  engine.run();
  Executor executor(engine, g);
  executor.start();
  engine.run();
  CHECK(executor.span(TaskId(0)).start == Time::zero() + 7_us);
  CHECK(executor.makespan() == 1_us);
}

TEST_CASE("transfer tasks run as flows: they share links and gate their successors") {
  using namespace orrery::sim;
  Engine engine;
  FlowNetwork net(engine);
  const LinkId shared = net.add_link(BytesPerSecond(1e9), Duration::zero());
  const LinkId other = net.add_link(BytesPerSecond(1e9), Duration::zero());
  TaskGraph g;
  const StreamId s = g.add_stream("gpu0", "compute");
  const LinkId ab[] = {shared};
  const LinkId ac[] = {shared, other};
  const TaskId t1 = g.add_transfer("a->b", ab, Bytes(1e6));                       // 1 MB alone: 1 ms
  const TaskId t2 = g.add_transfer("a->c", ac, Bytes(1e6), Duration::microseconds(10));
  const TaskId after = g.add_compute("after", s, Duration::milliseconds(1));
  g.add_dependency(t1, after);
  CHECK(g.kind(t1) == TaskKind::transfer);
  CHECK(g.bytes(t2).value() == 1e6);
  CHECK(g.route(t2).size() == 2);
  CHECK(g.route(after).empty());
  Executor exec(engine, g, &net);
  std::vector<double> loads;
  exec.set_link_load_sink([&](LinkId l, Time, BytesPerSecond b) {
    if (l == shared) loads.push_back(b.value());
  });
  exec.start();
  engine.run();
  REQUIRE(exec.finished());
  // t1 runs alone for 10 us (10 kB), then both share 1 GB/s: t1's other 990 kB at 0.5 GB/s.
  CHECK(exec.span(t1).end.ns() == 10'000 + 1'980'000);
  // t2: 10 us latency, 990 kB while sharing (1.98 ms), its last 10 kB alone (10 us).
  CHECK(exec.span(t2).end.ns() == 10'000 + 1'980'000 + 10'000);
  CHECK(exec.span(after).start == exec.span(t1).end);
  CHECK(!loads.empty());
  CHECK(loads.front() == 1e9);
}

TEST_CASE("a graph with transfers needs a flow network") {
  using namespace orrery::sim;
  Engine engine;
  FlowNetwork net(engine);
  const LinkId l = net.add_link(BytesPerSecond(1e9), Duration::zero());
  TaskGraph g;
  const LinkId route[] = {l};
  g.add_transfer("x", route, Bytes(1));
  CHECK_THROWS_AS(Executor(engine, g), InternalError);
}
