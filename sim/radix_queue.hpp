// A priority queue of 16-byte entries ordered by (time, key), built for a simulation clock
// whose pushes are never below the last pop: a radix heap (Ahuja, Mehlhorn, Orlin & Tarjan,
// "Faster algorithms for the shortest path problem", JACM 1990). Entries sit in 129 buckets
// by the highest bit in which they differ from the floor, the least entry last found; a
// refill empties the lowest non-empty bucket into lower ones. Every access is a sequential
// append or scan, with no random sifts. An entry pushed below the floor (after top() raised
// it, or ever, for correctness) goes to a small side min-heap that is drained first.
//   RadixQueue q;  q.push({5, 1});  q.push({3, 2});
//   q.pop();   // {3, 2}
#pragma once

#include "sim/error.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <vector>

namespace orrery::sim {

class RadixQueue {
 public:
  struct Entry {
    std::int64_t time;  // never negative
    std::uint64_t key;  // unique among pending entries: breaks ties in time
  };

  bool empty() const { return size_ + below_.size() == 0; }
  std::size_t size() const { return size_ + below_.size(); }

  void push(Entry e) {
    ORRERY_CHECK(e.time >= 0, "entry with negative time {}", e.time);
    if (order(e) < last_) {
      below_.push_back(e);
      std::push_heap(below_.begin(), below_.end(), greater);
      return;
    }
    place(e);
    ++size_;
  }

  // The least entry; the queue must not be empty.
  const Entry& top() {
    if (!below_.empty()) return below_.front();
    if (buckets_[0].empty()) refill();
    return buckets_[0].back();
  }

  Entry pop() {
    if (!below_.empty()) {
      std::pop_heap(below_.begin(), below_.end(), greater);
      const Entry e = below_.back();
      below_.pop_back();
      return e;
    }
    const Entry e = top();
    buckets_[0].pop_back();
    if (buckets_[0].empty()) clear_bit(0);
    --size_;
    return e;
  }

  // Removes the entries for which `drop(entry)` is true.
  template <class Drop>
  void erase_if(Drop&& drop) {
    for (unsigned b = 0; b < kBuckets; ++b) {
      std::vector<Entry>& bucket = buckets_[b];
      const std::size_t before = bucket.size();
      std::erase_if(bucket, drop);
      size_ -= before - bucket.size();
      if (bucket.empty()) clear_bit(b);
    }
    std::erase_if(below_, drop);
    std::make_heap(below_.begin(), below_.end(), greater);
  }

  // Every entry, in no particular order; the queue is left empty and its floor at zero.
  std::vector<Entry> drain() {
    std::vector<Entry> all;
    all.reserve(size());
    for (auto& bucket : buckets_) {
      all.insert(all.end(), bucket.begin(), bucket.end());
      bucket.clear();
    }
    all.insert(all.end(), below_.begin(), below_.end());
    below_.clear();
    nonempty_ = {};
    size_ = 0;
    last_ = 0;
    return all;
  }

  template <class F>
  void for_each(F&& f) const {
    for (const auto& bucket : buckets_) {
      for (const Entry& e : bucket) f(e);
    }
    for (const Entry& e : below_) f(e);
  }

 private:
  __extension__ using Key = unsigned __int128;
  static constexpr unsigned kBuckets = 129;

  static Key order(const Entry& e) { return (static_cast<Key>(static_cast<std::uint64_t>(e.time)) << 64) | e.key; }
  static bool greater(const Entry& a, const Entry& b) { return order(a) > order(b); }
  // 0 for an entry equal to the floor, else 1 + the index of the highest differing bit.
  unsigned bucket_of(const Entry& e) const {
    const Key diff = order(e) ^ last_;
    const auto high = static_cast<std::uint64_t>(diff >> 64);
    return high != 0 ? 64 + static_cast<unsigned>(std::bit_width(high))
                     : static_cast<unsigned>(std::bit_width(static_cast<std::uint64_t>(diff)));
  }
  void place(const Entry& e) {
    const unsigned b = bucket_of(e);
    buckets_[b].push_back(e);
    nonempty_[b >> 6] |= std::uint64_t{1} << (b & 63);
  }
  void clear_bit(unsigned b) { nonempty_[b >> 6] &= ~(std::uint64_t{1} << (b & 63)); }
  unsigned lowest_nonempty() const {
    for (unsigned w = 0; w < nonempty_.size(); ++w) {
      if (nonempty_[w] != 0) return w * 64 + static_cast<unsigned>(std::countr_zero(nonempty_[w]));
    }
    return kBuckets;
  }
  void refill() {
    // The least entry of the lowest non-empty bucket becomes the floor; every other entry of
    // that bucket now differs from the floor in a lower bit, so it moves to a lower bucket.
    const unsigned b = lowest_nonempty();
    ORRERY_CHECK(b < kBuckets, "top() or pop() on an empty RadixQueue");
    std::vector<Entry> moving;
    moving.swap(buckets_[b]);
    clear_bit(b);
    Key least = order(moving.front());
    for (const Entry& e : moving) least = order(e) < least ? order(e) : least;
    last_ = least;
    for (const Entry& e : moving) place(e);
    moving.clear();
    moving.swap(buckets_[b]);  // bucket b is empty now; give it back its capacity
  }

  std::array<std::vector<Entry>, kBuckets> buckets_;
  std::array<std::uint64_t, 3> nonempty_{};
  Key last_ = 0;              // the floor: no bucketed entry is below it
  std::size_t size_ = 0;      // entries in buckets_
  std::vector<Entry> below_;  // a min-heap of entries pushed below last_
};

}  // namespace orrery::sim
