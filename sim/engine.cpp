#include "sim/engine.hpp"

namespace orrery::sim {

Engine::Engine() = default;

Engine::~Engine() {
  // Destroy the captures of events that never ran.
  for (const Entry& e : heap_) {
    Slot& s = slot(e.slot);
    if (s.seq == e.seq && s.destroy != nullptr) s.destroy(s.storage);
  }
}

std::uint32_t Engine::acquire_slot() {
  if (free_slots_.empty()) {
    const auto base = static_cast<std::uint32_t>(chunks_.size()) * kChunkSize;
    ORRERY_CHECK(chunks_.size() < (std::size_t{1} << (32 - kChunkBits)), "more than 2^32 pending events");
    chunks_.push_back(std::make_unique<Slot[]>(kChunkSize));
    // Room for every slot, so that freeing one (in fire()'s cleanup) never allocates.
    free_slots_.reserve(chunks_.size() * kChunkSize);
    // Pushed in reverse so that slots are handed out in ascending order.
    for (std::uint32_t i = kChunkSize; i-- > 0;) free_slots_.push_back(base + i);
  }
  const std::uint32_t index = free_slots_.back();
  free_slots_.pop_back();
  return index;
}

void Engine::push(Entry entry) {
  std::size_t hole = heap_.size();
  heap_.push_back(entry);
  while (hole > 0) {
    const std::size_t parent = (hole - 1) / kArity;
    if (!before(entry, heap_[parent])) break;
    heap_[hole] = heap_[parent];
    hole = parent;
  }
  heap_[hole] = entry;
}

Engine::Entry Engine::pop() {
  // Floyd's variant: walk the hole from the root down along the smallest children to a leaf,
  // then sift the last element up from there. New events in a hold model are mostly late,
  // so the last element rarely climbs far and we save a comparison per level.
  const Entry top = heap_.front();
  const Entry last = heap_.back();
  heap_.pop_back();
  const std::size_t n = heap_.size();
  if (n == 0) return top;
  std::size_t hole = 0;
  for (;;) {
    const std::size_t first = hole * kArity + 1;
    if (first >= n) break;
    std::size_t best = first;
    const std::size_t end = first + kArity < n ? first + kArity : n;
    for (std::size_t c = first + 1; c < end; ++c) {
      if (before(heap_[c], heap_[best])) best = c;
    }
    heap_[hole] = heap_[best];
    hole = best;
  }
  while (hole > 0) {
    const std::size_t parent = (hole - 1) / kArity;
    if (!before(last, heap_[parent])) break;
    heap_[hole] = heap_[parent];
    hole = parent;
  }
  heap_[hole] = last;
  return top;
}

bool Engine::is_pending(EventId id) const {
  if (!id.valid() || (id.slot_ >> kChunkBits) >= chunks_.size()) return false;
  return slot(id.slot_).seq == id.seq_;
}

bool Engine::cancel(EventId id) {
  if (!is_pending(id)) return false;
  Slot& s = slot(id.slot_);
  s.seq = 0;
  if (s.destroy != nullptr) s.destroy(s.storage);
  free_slots_.push_back(id.slot_);
  // The heap entry stays until it surfaces or a compaction drops it; its seq no longer
  // matches the slot's, which marks it stale.
  ++stale_;
  if (stale_ > 4096 && stale_ * 2 > heap_.size()) compact();
  return true;
}

void Engine::compact() {
  std::erase_if(heap_, [this](const Entry& e) { return slot(e.slot).seq != e.seq; });
  stale_ = 0;
  // Bottom-up heap construction, O(n).
  const std::size_t n = heap_.size();
  if (n < 2) return;
  for (std::size_t i = (n - 2) / kArity + 1; i-- > 0;) {
    const Entry moving = heap_[i];
    std::size_t hole = i;
    for (;;) {
      const std::size_t first = hole * kArity + 1;
      if (first >= n) break;
      std::size_t best = first;
      const std::size_t end = first + kArity < n ? first + kArity : n;
      for (std::size_t c = first + 1; c < end; ++c) {
        if (before(heap_[c], heap_[best])) best = c;
      }
      if (!before(heap_[best], moving)) break;
      heap_[hole] = heap_[best];
      hole = best;
    }
    heap_[hole] = moving;
  }
}

void Engine::drop_stale_top() {
  while (!heap_.empty() && slot(heap_.front().slot).seq != heap_.front().seq) {
    pop();
    --stale_;
  }
}

Time Engine::next_event_time() {
  drop_stale_top();
  return heap_.empty() ? Time::max() : Time::from_ns(heap_.front().time);
}

void Engine::fire(const Entry& entry) {
  Slot& s = slot(entry.slot);
  now_ = Time::from_ns(entry.time);
  s.seq = 0;  // running: no longer pending, not yet free
  ++processed_;
  struct Release {  // frees the slot even if the callback throws
    Engine* engine;
    Slot* s;
    std::uint32_t index;
    ~Release() {
      if (s->destroy != nullptr) s->destroy(s->storage);
      engine->free_slots_.push_back(index);
    }
  } release{this, &s, entry.slot};
  s.invoke(s.storage);
}

void Engine::run() {
  stopped_ = false;
  while (!stopped_ && !heap_.empty()) {
    const Entry entry = pop();
    if (slot(entry.slot).seq != entry.seq) {
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
    if (heap_.empty() || heap_.front().time > until.ns()) break;
    fire(pop());
  }
  if (!stopped_) now_ = until;
}

}  // namespace orrery::sim
