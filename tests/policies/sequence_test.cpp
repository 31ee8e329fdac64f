#include "models/doc_lengths.hpp"
#include "models/sequence.hpp"
#include "policies/sequence.hpp"
#include "sim/error.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <numeric>

using namespace orrery;
using models::CpSharding;

TEST_CASE("fixed packing cuts documents at sequence boundaries; causal pairs per document") {
  const auto seqs = models::pack_fixed({5, 7, 2, 10}, 8);
  REQUIRE(seqs.size() == 3);
  CHECK(seqs[0] == std::vector<std::int64_t>{5, 3});
  CHECK(seqs[1] == std::vector<std::int64_t>{4, 2, 2});
  CHECK(seqs[2] == std::vector<std::int64_t>{8});
  CHECK(models::causal_pairs({3, 4}) == 6 + 10);
}

TEST_CASE("CP sharding: per-sequence chunks are unbalanced under a document mask, per-document ones are not") {
  // One document: the symmetric 2cp split balances causal pairs exactly.
  const auto one = models::cp_worker_pairs({16}, 4, CpSharding::per_sequence);
  CHECK(one[0] == one[3]);
  CHECK(std::accumulate(one.begin(), one.end(), 0.0) == models::causal_pairs({16}));
  // Many short documents and one long at the end: per-sequence shards differ, per-document ones
  // are within one token's pairs.
  const std::vector<std::int64_t> docs = {8, 8, 8, 8, 8, 8, 8, 8, 64};
  const auto seq = models::cp_worker_pairs(docs, 4, CpSharding::per_sequence);
  const auto doc = models::cp_worker_pairs(docs, 4, CpSharding::per_document);
  CHECK(std::accumulate(seq.begin(), seq.end(), 0.0) == models::causal_pairs(docs));
  CHECK(std::accumulate(doc.begin(), doc.end(), 0.0) == models::causal_pairs(docs));
  CHECK(*std::max_element(doc.begin(), doc.end()) < *std::max_element(seq.begin(), seq.end()));
}

TEST_CASE("document-length generators hit their median, p99 and maximum") {
  for (const auto& m : {models::DocLengthModel::lognormal(644, 71'000, 1'000'000), models::DocLengthModel::lognormal_pareto(644, 71'000, 1'000'000)}) {
    CAPTURE(m.describe());
    CHECK(m.quantile(0.5) == doctest::Approx(644).epsilon(0.01));
    CHECK(m.quantile(0.99) == doctest::Approx(71'000).epsilon(0.01));
    models::DocSampler s(m, 42);
    std::vector<std::int64_t> v;
    for (int i = 0; i < 200'000; ++i) v.push_back(s.next());
    std::sort(v.begin(), v.end());
    CHECK(static_cast<double>(v[v.size() / 2]) == doctest::Approx(644).epsilon(0.05));
    CHECK(static_cast<double>(v[v.size() * 99 / 100]) == doctest::Approx(71'000).epsilon(0.10));
    CHECK(v.back() <= 1'000'000);
    CHECK(v.front() >= 1);
  }
  // Seeded: the same seed gives the same lengths; a batch sums to its token budget.
  models::DocSampler a(models::DocLengthModel::lognormal(644, 71'000, 1'000'000), 7), b(models::DocLengthModel::lognormal(644, 71'000, 1'000'000), 7);
  const auto ba = a.batch(1 << 20), bb = b.batch(1 << 20);
  CHECK(ba == bb);
  CHECK(std::accumulate(ba.begin(), ba.end(), std::int64_t{0}) == (1 << 20));
}

// Libra's law-of-large-numbers sizing: with D iid sequence works of coefficient of variation CV
// put P to a pool at random, the busiest pool's load over the mean is about
// 1 + CV/sqrt(P) sqrt(2 ln(D/P)); VRSP (LPT with cardinality P) does far better.
TEST_CASE("LLN pool sizing: random pools follow 1 + CV/sqrt(P) sqrt(2 ln(D/P)); VRSP beats it") {
  for (const auto& [d, pool] : {std::pair{256, 8}, {512, 16}, {1024, 8}}) {
    const models::PoolSizing r = models::pool_sizing_experiment(d, pool, 60);
    CAPTURE(d);
    CAPTURE(pool);
    CHECK(r.cv > 0.3);
    CHECK(r.random - 1 == doctest::Approx(r.formula - 1).epsilon(0.35));
    CHECK(r.vrsp - 1 < (r.random - 1) / 3);
  }
  // Bigger pools: a smaller busiest-pool excess, as 1/sqrt(P).
  CHECK(models::pool_sizing_experiment(1024, 32, 30).random < models::pool_sizing_experiment(1024, 8, 30).random);
}

TEST_CASE("policies place every token: packing, sorted-greedy, wlb-llm, libra, global-pool") {
  models::SequenceShape shape;
  shape.dp = 8;
  shape.cp = 2;
  shape.micro_batches = 2;
  shape.seq_len = 1 << 15;
  shape.pair_seconds = 1e-12;
  shape.token_seconds = 1e-7;
  models::DocSampler s(models::DocLengthModel::lognormal_pareto(644, 20'000, 1 << 15), 3);
  const std::vector<std::int64_t> docs = s.batch(static_cast<std::int64_t>(shape.dp) * shape.micro_batches * shape.seq_len);
  const double tokens = static_cast<double>(std::accumulate(docs.begin(), docs.end(), std::int64_t{0}));
  const double pairs_packed = [&] {
    double p = 0;
    for (const auto& q : models::pack_fixed(docs, shape.seq_len)) p += models::causal_pairs(q);
    return p;
  }();
  for (const char* name : {"packing", "sorted-greedy", "libra", "global-pool"}) {
    CAPTURE(name);
    auto policy = policies::sequence_policies().create(name, {}, {"test", "/policy"});
    const models::BatchPlacement p = policy->place(docs, shape);
    double t = 0, pairs = 0;
    for (const auto& rank : p.ranks) {
      for (const auto& mb : rank) {
        t += static_cast<double>(std::accumulate(mb.docs.begin(), mb.docs.end(), std::int64_t{0}));
        pairs += models::causal_pairs(mb.docs);
      }
    }
    CHECK(t == tokens);
    CHECK(pairs == doctest::Approx(pairs_packed));
    if (!p.attention_pairs.empty()) {
      // Tiled attention pooling keeps every pair, and spreads them within the cap.
      double moved = 0;
      for (const auto& r : p.attention_pairs) moved += std::accumulate(r.begin(), r.end(), 0.0);
      CHECK(moved == doctest::Approx(pairs_packed));
    }
  }
  // WLB-LLM may hold outliers back for a later step, never loses a token.
  auto wlb = policies::sequence_policies().create("wlb-llm", {}, {"test", "/policy"});
  const models::BatchPlacement p = wlb->place(docs, shape);
  double placed = 0;
  for (const auto& rank : p.ranks) {
    for (const auto& mb : rank) {
      const auto mb_tokens = std::accumulate(mb.docs.begin(), mb.docs.end(), std::int64_t{0});
      CHECK(mb_tokens <= shape.seq_len);
      placed += static_cast<double>(mb_tokens);
    }
  }
  CHECK(placed <= tokens);
  CHECK((placed == tokens || p.deferred > 0));
}
