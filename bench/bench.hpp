// The benchmark harness: each benchmark adds named figures; main prints them as a table and
// writes them to a JSON file as {"name": value}.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace orrery::bench {

struct Figure {
  std::string name;
  double value;
  std::string unit;
};
using Figures = std::vector<Figure>;

// splitmix64: tiny, fast and identical on every platform, so every run sees the same inputs.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  std::uint64_t below(std::uint64_t n) { return next() % n; }

 private:
  std::uint64_t state_;
};

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The best of `repeats` timings of f(), in seconds: the least disturbed by the machine.
template <class F>
double best_seconds(int repeats, F&& f) {
  double best = 1e300;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    best = std::min(best, seconds_since(start));
  }
  return best;
}

void bench_engine(Figures& out, bool quick);
void bench_executor(Figures& out, bool quick);
void bench_network_all_to_all_spray(Figures& out, bool quick);
void bench_network_all_to_all_ecmp(Figures& out, bool quick);
void bench_network_hierarchical(Figures& out, bool quick);
void bench_network_nccl(Figures& out, bool quick);
void bench_step_llama405b(Figures& out, bool quick);
void bench_step_gpt3(Figures& out, bool quick);
void bench_step_data_parallel(Figures& out, bool quick);
void bench_step_frontier(Figures& out, bool quick);
void bench_balance(Figures& out, bool quick);
void bench_cluster(Figures& out, bool quick);
void bench_calibration(Figures& out, bool quick);
void bench_replay(Figures& out, bool quick);
void bench_multimodal(Figures& out, bool quick);
void bench_rl(Figures& out, bool quick);
void bench_estimate(Figures& out, bool quick);
void bench_sweep(Figures& out, bool quick);
double peak_rss_gb();

}  // namespace orrery::bench
