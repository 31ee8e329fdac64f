// The discrete-event engine: one clock, one pending-event queue ordered by (time, insertion
// sequence), so every run is deterministic. Callbacks live in place in pooled slots: the hot
// path does no heap allocation per event.
//   Engine engine;
//   EventId id = engine.schedule_after(5_us, [&] { ... });
//   engine.cancel(id);  engine.run();
#pragma once

#include "sim/error.hpp"
#include "sim/radix_queue.hpp"
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
  constexpr bool valid() const { return generation_ != 0; }
  friend constexpr bool operator==(EventId, EventId) = default;

 private:
  friend class Engine;
  constexpr EventId(std::uint32_t slot, std::uint32_t generation) : slot_(slot), generation_(generation) {}
  std::uint32_t slot_ = 0;
  std::uint32_t generation_ = 0;
};

class Engine {
 public:
  // A callback's captures must fit here (five pointers); capture a pointer to larger state.
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
  std::size_t pending() const { return queue_.size() - stale_; }
  // The time of the next pending event, or Time::max() when there is none.
  Time next_event_time();

  // Testing only: the insertion sequence number the next event gets, to exercise renumbering
  // (numbers run out after 2^36 events and are then reassigned in order).
  void set_next_sequence_for_testing(std::uint64_t seq) { next_seq_ = seq; }

 private:
  // A queue entry's key holds the insertion sequence (high bits) and the slot (low bits), so
  // that ordering by (time, key) is ordering by (time, seq).
  static constexpr unsigned kSlotBits = 28;  // 268M pending events: 16 GiB of slots
  static constexpr std::uint64_t kSlotMask = (std::uint64_t{1} << kSlotBits) - 1;
  static constexpr std::uint64_t kSeqLimit = std::uint64_t{1} << (64 - kSlotBits);
  using Entry = RadixQueue::Entry;
  static std::uint32_t slot_of(const Entry& e) { return static_cast<std::uint32_t>(e.key & kSlotMask); }
  static std::uint64_t seq_of(const Entry& e) { return e.key >> kSlotBits; }

  struct Ops {
    void (*invoke)(void*);
    void (*destroy)(void*);  // null for trivially destructible callbacks
  };
  template <class Fn>
  static constexpr Ops kOps = {
      [](void* p) { (*std::launder(static_cast<Fn*>(p)))(); },
      std::is_trivially_destructible_v<Fn> ? nullptr
                                           : +[](void* p) { std::launder(static_cast<Fn*>(p))->~Fn(); }};

  struct alignas(64) Slot {
    alignas(std::max_align_t) std::byte storage[kCallbackCapacity];
    const Ops* ops;
    std::uint64_t seq;         // of the pending event held here; 0 when free or running
    std::uint32_t generation;  // bumped on each use, so stale EventIds never match
  };
  static_assert(sizeof(Slot) == 64, "a slot fills one cache line");
  static constexpr std::uint32_t kChunkBits = 10;
  static constexpr std::uint32_t kChunkSize = 1u << kChunkBits;

  Slot& slot(std::uint32_t index) { return chunks_[index >> kChunkBits][index & (kChunkSize - 1)]; }
  const Slot& slot(std::uint32_t index) const { return chunks_[index >> kChunkBits][index & (kChunkSize - 1)]; }
  bool is_stale(const Entry& e) const { return slot(slot_of(e)).seq != seq_of(e); }
  std::uint32_t acquire_slot();
  std::uint64_t take_seq();
  void drop_stale_top();
  void compact();
  void renumber();
  void fire(const Entry& entry);

  Time now_ = Time::zero();
  std::uint64_t next_seq_ = 1;
  std::uint64_t processed_ = 0;
  std::size_t stale_ = 0;  // cancelled entries still in queue_
  bool stopped_ = false;
  RadixQueue queue_;
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
  s.ops = &kOps<Fn>;
  const std::uint64_t seq = take_seq();
  s.seq = seq;
  queue_.push(Entry{at.ns(), (seq << kSlotBits) | index});
  return EventId(index, s.generation);
}

}  // namespace orrery::sim
