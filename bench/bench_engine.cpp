// The classic hold model (Jones 1986, "An empirical comparison of priority-queue and
// event-set implementations", CACM 29(4)): keep N events pending; each event, when it fires,
// schedules one new event at a random offset after now. The same loop on a bare
// std::priority_queue of (time, seq) is the baseline: the cost of ordering alone, without
// callbacks or cancel handles.
//
// The machine is a shared VM whose speed drifts, so both queues are built once and then timed
// in many short segments of the same steady state, alternating; each side's best segment
// is its figure.
#include "bench.hpp"

#include "sim/engine.hpp"

#include <fmt/format.h>

#include <functional>
#include <queue>
#include <stdexcept>

namespace orrery::bench {

namespace {

constexpr std::uint64_t kMaxOffsetNs = 2'000;  // uniform offsets in [0, 2 us)

struct HoldEvent {
  sim::Engine* engine;
  Rng* rng;
  std::uint64_t* remaining;
  void operator()() const {
    engine->schedule_after(sim::Duration::nanoseconds(static_cast<std::int64_t>(rng->below(kMaxOffsetNs))), *this);
    if (--*remaining == 0) engine->stop();
  }
};

class EngineHold {
 public:
  explicit EngineHold(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      engine_.schedule_at(sim::Time::from_ns(static_cast<std::int64_t>(rng_.below(kMaxOffsetNs))),
                          HoldEvent{&engine_, &rng_, &remaining_});
    }
  }
  // Events per second over the next `pops` events.
  double segment(std::uint64_t pops) {
    remaining_ = pops;
    const std::uint64_t before = engine_.events_processed();
    const auto start = std::chrono::steady_clock::now();
    engine_.run();
    const double rate = static_cast<double>(pops) / seconds_since(start);
    if (engine_.events_processed() - before != pops) throw std::logic_error("hold model ran the wrong number of events");
    return rate;
  }

 private:
  sim::Engine engine_;
  Rng rng_{42};
  std::uint64_t remaining_ = 0;
};

class BareHold {
 public:
  explicit BareHold(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) queue_.emplace(static_cast<std::int64_t>(rng_.below(kMaxOffsetNs)), seq_++);
  }
  double segment(std::uint64_t pops) {
    const auto start = std::chrono::steady_clock::now();
    for (std::uint64_t k = 0; k < pops; ++k) {
      const std::int64_t now = queue_.top().first;
      queue_.pop();
      queue_.emplace(now + static_cast<std::int64_t>(rng_.below(kMaxOffsetNs)), seq_++);
    }
    const double rate = static_cast<double>(pops) / seconds_since(start);
    if (queue_.top().first < 0) throw std::logic_error("time went backwards");
    return rate;
  }

 private:
  using Entry = std::pair<std::int64_t, std::uint64_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue_;
  Rng rng_{42};
  std::uint64_t seq_ = 0;
};

}  // namespace

void bench_engine(Figures& out, bool quick) {
  for (const std::size_t n : {std::size_t{1'000}, std::size_t{1'000'000}}) {
    const int segments = quick ? 2 : 12;
    const std::uint64_t pops = quick ? 100'000 : 1'000'000;
    EngineHold engine_hold(n);
    BareHold bare_hold(n);
    // One unmeasured segment each, to reach the steady state.
    engine_hold.segment(pops);
    bare_hold.segment(pops);
    double engine = 0, bare = 0;
    for (int s = 0; s < segments; ++s) {
      engine = std::max(engine, engine_hold.segment(pops));
      bare = std::max(bare, bare_hold.segment(pops));
    }
    const std::string prefix = fmt::format("engine.hold.n={}", n);
    out.push_back({prefix + ".engine", engine, "events/s"});
    out.push_back({prefix + ".priority_queue", bare, "events/s"});
    out.push_back({prefix + ".ratio", engine / bare, "x (target >= 0.8)"});
  }
}

}  // namespace orrery::bench
