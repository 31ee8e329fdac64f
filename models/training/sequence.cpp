#include "models/training/sequence.hpp"

#include "models/training/doc_lengths.hpp"
#include "sim/error.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace orrery::models {

double causal_pairs(const std::vector<std::int64_t>& docs) {
  double p = 0;
  for (const std::int64_t l : docs) p += static_cast<double>(l) * static_cast<double>(l + 1) / 2;
  return p;
}

std::vector<std::vector<std::int64_t>> pack_fixed(const std::vector<std::int64_t>& docs, std::int64_t seq_len) {
  ORRERY_CHECK(seq_len > 0, "sequence length {}", seq_len);
  std::vector<std::vector<std::int64_t>> out(1);
  std::int64_t room = seq_len;
  for (std::int64_t d : docs) {
    while (d > 0) {
      if (room == 0) {
        out.emplace_back();
        room = seq_len;
      }
      const std::int64_t piece = std::min(d, room);
      out.back().push_back(piece);
      room -= piece;
      d -= piece;
    }
  }
  return out;
}

namespace {
// Pairs of the queries [q0, q1) of a document that starts at `start` (keys from start to each query).
double query_range_pairs(std::int64_t start, std::int64_t q0, std::int64_t q1) {
  if (q1 <= q0) return 0;
  // sum over q in [q0, q1) of (q - start + 1)
  const double a = static_cast<double>(q0 - start + 1), b = static_cast<double>(q1 - start);
  return (a + b) * static_cast<double>(q1 - q0) / 2;
}
}  // namespace

std::vector<double> cp_worker_pairs(const std::vector<std::int64_t>& docs, int cp, CpSharding sharding) {
  std::vector<double> w(static_cast<std::size_t>(cp), 0.0);
  if (cp == 1) {
    w[0] = causal_pairs(docs);
    return w;
  }
  const std::int64_t chunks = 2 * cp;
  const auto owner = [&](std::int64_t c) { return static_cast<std::size_t>(c < cp ? c : chunks - 1 - c); };
  if (sharding == CpSharding::per_sequence) {
    const std::int64_t total = std::accumulate(docs.begin(), docs.end(), std::int64_t{0});
    // Chunk c holds tokens [c * total / chunks, (c + 1) * total / chunks).
    std::int64_t start = 0;
    for (const std::int64_t l : docs) {
      const std::int64_t end = start + l;
      for (std::int64_t c = 0; c < chunks; ++c) {
        const std::int64_t c0 = c * total / chunks, c1 = (c + 1) * total / chunks;
        w[owner(c)] += query_range_pairs(start, std::max(start, c0), std::min(end, c1));
      }
      start = end;
    }
    return w;
  }
  // Per document: the divisible part in 2 cp equal chunks, the remainder tokens round-robin.
  std::size_t next = 0;
  for (const std::int64_t l : docs) {
    const std::int64_t piece = l / chunks;
    for (std::int64_t c = 0; c < chunks; ++c) w[owner(c)] += query_range_pairs(0, c * piece, (c + 1) * piece);
    for (std::int64_t q = chunks * piece; q < l; ++q) {
      w[next] += static_cast<double>(q + 1);
      next = (next + 1) % static_cast<std::size_t>(cp);
    }
  }
  return w;
}

namespace {
double max_over_mean(const std::vector<double>& x) {
  return *std::max_element(x.begin(), x.end()) / (std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size()));
}
}  // namespace

PoolSizing pool_sizing_experiment(int d, int pool, int seeds) {
  ORRERY_CHECK(d > 0 && pool > 0 && d % pool == 0 && seeds > 0, "pool sizing of {} sequences in pools of {}", d, pool);
  const DocLengthModel lengths = DocLengthModel::lognormal(644, 8'000, 32'768);
  PoolSizing out;
  for (int seed = 0; seed < seeds; ++seed) {
    DocSampler s(lengths, static_cast<std::uint64_t>(seed) + 1);
    std::vector<double> work;
    for (const auto& q : pack_fixed(s.batch(std::int64_t{d} * 32'768), 32'768)) {
      double w = 0;
      for (const std::int64_t l : q) w += static_cast<double>(l) * static_cast<double>(l);
      work.push_back(w);
    }
    const double mean = std::accumulate(work.begin(), work.end(), 0.0) / d;
    double var = 0;
    for (const double w : work) var += (w - mean) * (w - mean);
    const double cv = std::sqrt(var / d) / mean;
    out.cv += cv / seeds;
    out.formula += (1 + cv / std::sqrt(pool) * std::sqrt(2 * std::log(static_cast<double>(d) / pool))) / seeds;
    std::vector<double> random(static_cast<std::size_t>(d / pool), 0.0);
    for (int i = 0; i < d; ++i) random[static_cast<std::size_t>(i / pool)] += work[static_cast<std::size_t>(i)];
    out.random += max_over_mean(random) / seeds;
    std::sort(work.begin(), work.end(), std::greater<>());
    std::vector<double> load(random.size(), 0.0);
    std::vector<int> count(load.size(), 0);
    for (const double w : work) {
      std::size_t best = load.size();
      for (std::size_t k = 0; k < load.size(); ++k) {
        if (count[k] < pool && (best == load.size() || load[k] < load[best])) best = k;
      }
      load[best] += w;
      ++count[best];
    }
    out.vrsp += max_over_mean(load) / seeds;
  }
  return out;
}

}  // namespace orrery::models
