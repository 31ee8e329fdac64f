#include "sim/engine.hpp"

#include <algorithm>

namespace orrery::sim {

Engine::Engine() = default;

Engine::~Engine() {
  // Destroy the captures of events that never ran.
  queue_.for_each([this](const Entry& e) {
    Slot& s = slot(slot_of(e));
    if (!is_stale(e) && s.ops->destroy != nullptr) s.ops->destroy(s.storage);
  });
}

std::uint32_t Engine::acquire_slot() {
  if (free_slots_.empty()) {
    const auto base = static_cast<std::uint32_t>(chunks_.size()) * kChunkSize;
    ORRERY_CHECK(base + kChunkSize - 1 <= kSlotMask, "more than {} pending events", kSlotMask);
    chunks_.push_back(std::make_unique<Slot[]>(kChunkSize));  // value-initialised: seq and generation 0
    // Room for every slot, so that freeing one (in fire()'s cleanup) never allocates.
    free_slots_.reserve(chunks_.size() * kChunkSize);
    // Pushed in reverse so that slots are handed out in ascending order.
    for (std::uint32_t i = kChunkSize; i-- > 0;) free_slots_.push_back(base + i);
  }
  const std::uint32_t index = free_slots_.back();
  free_slots_.pop_back();
  Slot& s = slot(index);
  if (++s.generation == 0) s.generation = 1;  // 0 marks an EventId that refers to nothing
  return index;
}

std::uint64_t Engine::take_seq() {
  if (next_seq_ >= kSeqLimit) renumber();
  return next_seq_++;
}

bool Engine::is_pending(EventId id) const {
  if (!id.valid() || (id.slot_ >> kChunkBits) >= chunks_.size()) return false;
  const Slot& s = slot(id.slot_);
  return s.generation == id.generation_ && s.seq != 0;
}

bool Engine::cancel(EventId id) {
  if (!is_pending(id)) return false;
  Slot& s = slot(id.slot_);
  s.seq = 0;
  if (s.ops->destroy != nullptr) s.ops->destroy(s.storage);
  free_slots_.push_back(id.slot_);
  // The queue entry stays until it surfaces or a compaction drops it; its seq no longer
  // matches the slot's, which marks it stale.
  ++stale_;
  if (stale_ > 4096 && stale_ * 2 > queue_.size()) compact();
  return true;
}

void Engine::compact() {
  queue_.erase_if([this](const Entry& e) { return is_stale(e); });
  stale_ = 0;
}

void Engine::renumber() {
  // Numbering the live entries from 1 in (time, seq) order keeps their order.
  compact();
  std::vector<Entry> live = queue_.drain();
  std::sort(live.begin(), live.end(), [](const Entry& a, const Entry& b) {
    return a.time < b.time || (a.time == b.time && a.key < b.key);
  });
  std::uint64_t seq = 0;
  for (Entry& e : live) {
    slot(slot_of(e)).seq = ++seq;
    e.key = (seq << kSlotBits) | slot_of(e);
    queue_.push(e);
  }
  next_seq_ = seq + 1;
}

void Engine::drop_stale_top() {
  while (!queue_.empty() && is_stale(queue_.top())) {
    queue_.pop();
    --stale_;
  }
}

Time Engine::next_event_time() {
  drop_stale_top();
  return queue_.empty() ? Time::max() : Time::from_ns(queue_.top().time);
}

void Engine::fire(const Entry& entry) {
  Slot& s = slot(slot_of(entry));
  now_ = Time::from_ns(entry.time);
  s.seq = 0;  // running: no longer pending, not yet free
  ++processed_;
  struct Release {  // frees the slot even if the callback throws
    Engine* engine;
    Slot* s;
    std::uint32_t index;
    ~Release() {
      if (s->ops->destroy != nullptr) s->ops->destroy(s->storage);
      engine->free_slots_.push_back(index);
    }
  } release{this, &s, slot_of(entry)};
  s.ops->invoke(s.storage);
}

void Engine::run() {
  stopped_ = false;
  while (!stopped_ && !queue_.empty()) {
    const Entry entry = queue_.pop();
    // The next event's slot is a likely cache miss: find that event now (pushes that land
    // before it go to the queue's side heap) and start loading its slot while this one runs.
    if (!queue_.empty()) __builtin_prefetch(&slot(slot_of(queue_.top())));
    if (is_stale(entry)) {
      --stale_;
      continue;
    }
    fire(entry);
  }
}

void Engine::run_until(Time until) {
  ORRERY_CHECK(until >= now_, "run_until({} ns) is before now ({} ns)", until.ns(), now_.ns());
  stopped_ = false;
  while (!stopped_) {
    drop_stale_top();
    if (queue_.empty() || queue_.top().time > until.ns()) break;
    fire(queue_.pop());
  }
  if (!stopped_) now_ = until;
}

}  // namespace orrery::sim
