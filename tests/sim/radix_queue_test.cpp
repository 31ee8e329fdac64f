#include "sim/radix_queue.hpp"

#include <doctest/doctest.h>

#include <queue>
#include <random>

using orrery::sim::RadixQueue;

namespace {
using Pair = std::pair<std::int64_t, std::uint64_t>;
using Reference = std::priority_queue<Pair, std::vector<Pair>, std::greater<>>;
}  // namespace

TEST_CASE("pops come out in (time, key) order") {
  RadixQueue q;
  q.push({5, 1});
  q.push({3, 9});
  q.push({3, 2});
  q.push({0, 7});
  q.push({std::int64_t{1} << 62, 1});
  CHECK(q.size() == 5);
  std::vector<Pair> out;
  while (!q.empty()) {
    const auto e = q.pop();
    out.emplace_back(e.time, e.key);
  }
  CHECK(out == std::vector<Pair>{{0, 7}, {3, 2}, {3, 9}, {5, 1}, {std::int64_t{1} << 62, 1}});
}

// A simulation-like workload: pushes at or after the last pop, peeks that raise the floor,
// then pushes below the floor (the side heap), and erasures. A binary heap is the oracle.
TEST_CASE("random monotone workload matches a binary heap") {
  std::mt19937_64 rng(99);
  RadixQueue q;
  Reference ref;
  std::uint64_t key = 0;
  std::int64_t now = 0;
  for (int step = 0; step < 200'000; ++step) {
    const auto r = rng() % 100;
    if (r < 55 || ref.empty()) {
      // Mostly near-future events, some far ones, some at exactly now.
      const std::int64_t offset = r < 5 ? 0 : r < 10 ? static_cast<std::int64_t>(rng() % 1'000'000'000) : static_cast<std::int64_t>(rng() % 5000);
      q.push({now + offset, ++key});
      ref.emplace(now + offset, key);
    } else if (r < 65) {
      REQUIRE(q.top().time == ref.top().first);  // raises the floor
      CHECK(q.top().key == ref.top().second);
    } else {
      const auto e = q.pop();
      REQUIRE(Pair(e.time, e.key) == ref.top());
      ref.pop();
      now = e.time;
    }
    REQUIRE(q.size() == ref.size());
  }
  while (!ref.empty()) {
    const auto e = q.pop();
    REQUIRE(Pair(e.time, e.key) == ref.top());
    ref.pop();
  }
  CHECK(q.empty());
}

TEST_CASE("erase_if and drain keep the queue consistent") {
  RadixQueue q;
  for (std::uint64_t k = 1; k <= 1000; ++k) q.push({static_cast<std::int64_t>(k % 97), k});
  CHECK(q.top().time == 0);  // raise the floor, then push below it into the side heap
  q.pop();
  q.erase_if([](const RadixQueue::Entry& e) { return e.key % 2 == 0; });
  CHECK(q.size() == 499);
  std::int64_t last_time = -1;
  std::uint64_t last_key = 0;
  std::size_t popped = 0;
  while (q.size() > 250) {
    const auto e = q.pop();
    CHECK(e.key % 2 == 1);
    CHECK((e.time > last_time || (e.time == last_time && e.key > last_key)));
    last_time = e.time;
    last_key = e.key;
    ++popped;
  }
  const auto rest = q.drain();
  CHECK(rest.size() == 250);
  CHECK(q.empty());
  q.push({1, 1});  // usable again from a zero floor
  CHECK(q.pop().key == 1);
}
