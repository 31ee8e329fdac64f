// The discrete-event engine: one clock, one pending-event queue ordered by (time, insertion
// sequence), so every run is deterministic. Callbacks live in place in pooled slots: the hot
// path does no heap allocation per event.
//   Engine engine;
//   EventId id = engine.schedule_after(5_us, [&] { ... });
//   engine.cancel(id);  engine.run();
#pragma once

#include "sim/error.hpp"
#include "sim/units.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace orrery::sim {

// A handle to a scheduled event, for cancelling it. Default-constructed: refers to nothing.
class EventId {
 public:
  constexpr EventId() = default;
  constexpr bool valid() const { return seq_ != 0; }
  friend constexpr bool operator==(EventId, EventId) = default;

 private:
  friend class Engine;
  constexpr EventId(std::uint32_t slot, std::uint64_t seq) : slot_(slot), seq_(seq) {}
  std::uint32_t slot_ = 0;
  std::uint64_t seq_ = 0;
};

class Engine {
 public:
  // A callback's captures must fit here (five pointers); capture a pointer to a larger state.
  static constexpr std::size_t kCallbackCapacity = 40;

  Engine();
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  Time now() const { return now_; }

  // Runs `callback()` at `at` (not before now). Events at the same time run in the order
  // they were scheduled.
  template <class F>
  EventId schedule_at(Time at, F&& callback);
  template <class F>
  EventId schedule_after(Duration delay, F&& callback) {
    return schedule_at(now_ + delay, std::forward<F>(callback));
  }

  // Cancels a pending event; returns false if it already ran, was cancelled, or is running.
  bool cancel(EventId id);
  bool is_pending(EventId id) const;

  // Runs events until none is left or stop() is called.
  void run();
  // Runs every event at or before `until`, then sets the clock to `until` (unless stopped).
  void run_until(Time until);
  // Makes run()/run_until() return after the current event.
  void stop() { stopped_ = true; }

  std::uint64_t events_processed() const { return processed_; }
  std::size_t pending() const { return heap_.size() - stale_; }
  // The time of the next pending event, or Time::max() when there is none.
  Time next_event_time();

 private:
  struct Slot {
    alignas(std::max_align_t) std::byte storage[kCallbackCapacity];
    void (*invoke)(void*);
    void (*destroy)(void*);  // null for trivially destructible callbacks
    std::uint64_t seq;       // of the pending event held here; 0 when free or running
  };
  static_assert(sizeof(Slot) == 64, "a slot fills one cache line");

  struct Entry {
    std::int64_t time;
    std::uint64_t seq;
    std::uint32_t slot;
  };
  static constexpr std::size_t kArity = 4;  // a 4-ary heap: fewer levels, children share cache lines
  static constexpr std::uint32_t kChunkBits = 10;
  static constexpr std::uint32_t kChunkSize = 1u << kChunkBits;

  static bool before(const Entry& a, const Entry& b) {
    return a.time < b.time || (a.time == b.time && a.seq < b.seq);
  }
  Slot& slot(std::uint32_t index) { return chunks_[index >> kChunkBits][index & (kChunkSize - 1)]; }
  const Slot& slot(std::uint32_t index) const {
    return chunks_[index >> kChunkBits][index & (kChunkSize - 1)];
  }
  std::uint32_t acquire_slot();
  void push(Entry entry);
  Entry pop();
  void drop_stale_top();
  void compact();
  void fire(const Entry& entry);

  Time now_ = Time::zero();
  std::uint64_t next_seq_ = 1;
  std::uint64_t processed_ = 0;
  std::size_t stale_ = 0;  // cancelled entries still in heap_
  bool stopped_ = false;
  std::vector<Entry> heap_;
  std::vector<std::unique_ptr<Slot[]>> chunks_;
  std::vector<std::uint32_t> free_slots_;
};

template <class F>
EventId Engine::schedule_at(Time at, F&& callback) {
  using Fn = std::decay_t<F>;
  static_assert(std::is_invocable_r_v<void, Fn&>, "an event callback takes no arguments");
  static_assert(sizeof(Fn) <= kCallbackCapacity,
                "event callback captures too much; capture a pointer to a struct instead");
  static_assert(alignof(Fn) <= alignof(std::max_align_t), "event callback is over-aligned");
  ORRERY_CHECK(at >= now_, "event scheduled in the past: at {} ns, now {} ns", at.ns(), now_.ns());
  const std::uint32_t index = acquire_slot();
  Slot& s = slot(index);
  ::new (static_cast<void*>(s.storage)) Fn(std::forward<F>(callback));
  s.invoke = [](void* p) { (*std::launder(static_cast<Fn*>(p)))(); };
  if constexpr (std::is_trivially_destructible_v<Fn>) {
    s.destroy = nullptr;
  } else {
    s.destroy = [](void* p) { std::launder(static_cast<Fn*>(p))->~Fn(); };
  }
  const std::uint64_t seq = next_seq_++;
  s.seq = seq;
  push(Entry{at.ns(), seq, index});
  return EventId(index, seq);
}

}  // namespace orrery::sim
