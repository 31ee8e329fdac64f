#include "sim/engine.hpp"

#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

using namespace orrery::sim;
using namespace orrery::sim::literals;

TEST_CASE("events run in time order, ties in scheduling order") {
  Engine engine;
  std::vector<int> order;
  engine.schedule_at(Time::zero() + 5_us, [&] { order.push_back(3); });
  engine.schedule_at(Time::zero() + 1_us, [&] { order.push_back(1); });
  engine.schedule_at(Time::zero() + 5_us, [&] { order.push_back(4); });
  engine.schedule_at(Time::zero() + 2_us, [&] { order.push_back(2); });
  engine.schedule_at(Time::zero() + 5_us, [&] { order.push_back(5); });
  engine.run();
  CHECK(order == std::vector<int>{1, 2, 3, 4, 5});
  CHECK(engine.now() == Time::zero() + 5_us);
  CHECK(engine.events_processed() == 5);
  CHECK(engine.pending() == 0);
}

TEST_CASE("schedule_after is relative to the event being run; same-time events queue behind") {
  Engine engine;
  std::vector<std::pair<std::int64_t, int>> seen;
  engine.schedule_after(10_ns, [&] {
    seen.emplace_back(engine.now().ns(), 1);
    engine.schedule_after(0_ns, [&] { seen.emplace_back(engine.now().ns(), 3); });
    engine.schedule_after(5_ns, [&] { seen.emplace_back(engine.now().ns(), 4); });
  });
  engine.schedule_after(10_ns, [&] { seen.emplace_back(engine.now().ns(), 2); });
  engine.run();
  // The zero-delay event was scheduled after event 2, so it runs after it at the same time.
  CHECK(seen == std::vector<std::pair<std::int64_t, int>>{{10, 1}, {10, 2}, {10, 3}, {15, 4}});
}

TEST_CASE("cancel") {
  Engine engine;
  int ran = 0;
  const EventId a = engine.schedule_after(1_us, [&] { ran += 1; });
  const EventId b = engine.schedule_after(2_us, [&] { ran += 10; });
  CHECK(engine.is_pending(a));
  CHECK(engine.pending() == 2);
  CHECK(engine.cancel(b));
  CHECK_FALSE(engine.cancel(b));  // twice: already gone
  CHECK_FALSE(engine.is_pending(b));
  CHECK(engine.pending() == 1);
  CHECK_FALSE(engine.cancel(EventId{}));
  engine.run();
  CHECK(ran == 1);
  CHECK_FALSE(engine.cancel(a));  // already ran
  CHECK(engine.events_processed() == 1);
  // A cancelled event's slot is reused; the stale handle must not cancel the new occupant.
  const EventId c = engine.schedule_after(1_us, [&] { ran += 100; });
  CHECK_FALSE(engine.cancel(b));
  CHECK(engine.is_pending(c));
  engine.run();
  CHECK(ran == 101);
}

TEST_CASE("an event cannot cancel itself while running, but can cancel others") {
  Engine engine;
  EventId self;
  EventId other;
  bool other_ran = false;
  bool cancelled_self = true;
  self = engine.schedule_after(1_ns, [&] {
    cancelled_self = engine.cancel(self);
    CHECK(engine.cancel(other));
  });
  other = engine.schedule_after(2_ns, [&] { other_ran = true; });
  engine.run();
  CHECK_FALSE(cancelled_self);
  CHECK_FALSE(other_ran);
}

TEST_CASE("run_until runs events at or before the bound and moves the clock to it") {
  Engine engine;
  std::vector<int> order;
  engine.schedule_at(Time::zero() + 10_ns, [&] { order.push_back(10); });
  engine.schedule_at(Time::zero() + 20_ns, [&] { order.push_back(20); });
  engine.schedule_at(Time::zero() + 30_ns, [&] { order.push_back(30); });
  engine.run_until(Time::zero() + 20_ns);
  CHECK(order == std::vector<int>{10, 20});
  CHECK(engine.now() == Time::zero() + 20_ns);
  engine.run_until(Time::zero() + 25_ns);
  CHECK(engine.now() == Time::zero() + 25_ns);
  CHECK(engine.next_event_time() == Time::zero() + 30_ns);
  engine.run();
  CHECK(order == std::vector<int>{10, 20, 30});
  CHECK(engine.next_event_time() == Time::max());
}

TEST_CASE("stop returns after the current event") {
  Engine engine;
  int ran = 0;
  engine.schedule_after(1_ns, [&] { ++ran; engine.stop(); });
  engine.schedule_after(2_ns, [&] { ++ran; });
  engine.run();
  CHECK(ran == 1);
  CHECK(engine.pending() == 1);
  engine.run();
  CHECK(ran == 2);
}

TEST_CASE("scheduling in the past is a bug") {
  Engine engine;
  engine.schedule_after(10_ns, [] {});
  engine.run();
  CHECK_THROWS_AS(engine.schedule_at(Time::zero() + 5_ns, [] {}), InternalError);
  CHECK_THROWS_AS(engine.run_until(Time::zero()), InternalError);
}

TEST_CASE("callback captures are destroyed when run, cancelled, or left pending") {
  auto token = std::make_shared<int>(0);
  {
    Engine engine;
    engine.schedule_after(1_ns, [token] { ++*token; });
    const EventId cancelled = engine.schedule_after(2_ns, [token] { ++*token; });
    engine.schedule_after(3_ns, [token] { ++*token; });
    CHECK(token.use_count() == 4);
    engine.cancel(cancelled);
    CHECK(token.use_count() == 3);
    engine.run_until(Time::zero() + 1_ns);
    CHECK(*token == 1);
    CHECK(token.use_count() == 2);
  }  // the engine dies with one event pending
  CHECK(token.use_count() == 1);
}

TEST_CASE("an exception from a callback propagates and leaves the engine usable") {
  Engine engine;
  auto token = std::make_shared<int>(0);
  engine.schedule_after(1_ns, [token] { throw std::runtime_error("boom"); });
  engine.schedule_after(2_ns, [token] { ++*token; });
  CHECK_THROWS_AS(engine.run(), std::runtime_error);
  CHECK(token.use_count() == 2);  // the throwing callback's captures were released
  engine.run();
  CHECK(*token == 1);
}

// A reference model: a multimap keyed by (time, seq) gives the one correct order.
TEST_CASE("randomised schedules and cancels match a reference queue, through compactions") {
  std::mt19937_64 rng(12345);
  Engine engine;
  std::map<std::pair<std::int64_t, std::uint64_t>, int> reference;
  std::vector<std::pair<EventId, std::pair<std::int64_t, std::uint64_t>>> handles;
  std::vector<int> fired;
  std::uint64_t seq = 0;
  int next_label = 0;
  for (int round = 0; round < 60'000; ++round) {
    const auto action = rng() % 10;
    if (action < 6 || handles.empty()) {
      const std::int64_t at = engine.now().ns() + static_cast<std::int64_t>(rng() % 1000);
      const int label = next_label++;
      const EventId id = engine.schedule_at(Time::from_ns(at), [&fired, label] { fired.push_back(label); });
      reference.emplace(std::make_pair(at, seq), label);
      handles.emplace_back(id, std::make_pair(at, seq));
      ++seq;
    } else if (action < 9) {
      // Cancel a random handle, pending or not; the engine and the reference must agree.
      const auto k = rng() % handles.size();
      const bool was_pending = reference.erase(handles[k].second) == 1;
      CHECK(engine.cancel(handles[k].first) == was_pending);
      handles[k] = handles.back();
      handles.pop_back();
    } else {
      const std::int64_t until = engine.now().ns() + static_cast<std::int64_t>(rng() % 200);
      engine.run_until(Time::from_ns(until));
      std::vector<int> expected;
      while (!reference.empty() && reference.begin()->first.first <= until) {
        expected.push_back(reference.begin()->second);
        reference.erase(reference.begin());
      }
      REQUIRE(fired == expected);
      fired.clear();
      REQUIRE(engine.pending() == reference.size());
    }
  }
  engine.run();
  std::vector<int> expected;
  for (const auto& [key, label] : reference) expected.push_back(label);
  CHECK(fired == expected);
}

TEST_CASE("mass cancellation compacts the queue and keeps the survivors in order") {
  Engine engine;
  std::vector<EventId> ids;
  std::vector<int> fired;
  for (int i = 0; i < 20'000; ++i) {
    // Times descend so that survivors' order differs from scheduling order.
    ids.push_back(engine.schedule_at(Time::from_ns(100'000 - 5 * i), [&fired, i] { fired.push_back(i); }));
  }
  for (int i = 0; i < 20'000; ++i) {
    if (i % 5 != 0) CHECK(engine.cancel(ids[static_cast<std::size_t>(i)]));
  }
  CHECK(engine.pending() == 4'000);
  engine.run();
  REQUIRE(fired.size() == 4'000);
  for (std::size_t k = 0; k < fired.size(); ++k) CHECK(fired[k] == 19'995 - 5 * static_cast<int>(k));
}

TEST_CASE("running out of sequence numbers renumbers pending events without reordering them") {
  Engine engine;
  std::vector<int> fired;
  // Four events, two at the same time, then the sequence space is exhausted.
  engine.schedule_at(Time::from_ns(30), [&] { fired.push_back(3); });
  const EventId keep = engine.schedule_at(Time::from_ns(20), [&] { fired.push_back(1); });
  engine.schedule_at(Time::from_ns(20), [&] { fired.push_back(2); });
  const EventId gone = engine.schedule_at(Time::from_ns(25), [&] { fired.push_back(-1); });
  engine.set_next_sequence_for_testing(std::uint64_t{1} << 36);
  // This one needs a fresh number: everything pending is renumbered 1..n first.
  engine.schedule_at(Time::from_ns(20), [&] { fired.push_back(21); });
  engine.schedule_at(Time::from_ns(10), [&] { fired.push_back(0); });
  CHECK(engine.is_pending(keep));
  CHECK(engine.cancel(gone));  // handles survive the renumbering
  engine.run();
  CHECK(fired == std::vector<int>{0, 1, 2, 21, 3});
}
