#include "models/training/doc_lengths.hpp"
#include "models/training/sequence.hpp"
#include "policies/sequence.hpp"
#include "sim/error.hpp"
#include "approx.hpp"

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
    CHECK(m.quantile(0.5) == orrery::testing::Approx(644).epsilon(0.01));
    CHECK(m.quantile(0.99) == orrery::testing::Approx(71'000).epsilon(0.01));
    models::DocSampler s(m, 42);
    std::vector<std::int64_t> v;
    for (int i = 0; i < 200'000; ++i) v.push_back(s.next());
    std::sort(v.begin(), v.end());
    CHECK(static_cast<double>(v[v.size() / 2]) == orrery::testing::Approx(644).epsilon(0.05));
    CHECK(static_cast<double>(v[v.size() * 99 / 100]) == orrery::testing::Approx(71'000).epsilon(0.10));
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
    CHECK(r.random - 1 == orrery::testing::Approx(r.formula - 1).epsilon(0.35));
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
    CHECK(pairs == orrery::testing::Approx(pairs_packed));
    if (!p.attention_pairs.empty()) {
      // Tiled attention pooling keeps every pair, and spreads them within the cap.
      double moved = 0;
      for (const auto& r : p.attention_pairs) moved += std::accumulate(r.begin(), r.end(), 0.0);
      CHECK(moved == orrery::testing::Approx(pairs_packed));
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

// Issue 17: global-pool reported exactly libra's numbers on Qwen3-8B at 256K. Libra's pools hold
// `pool` DP ranks (8 by default) and at most DP, so at DP 8 its one pool is every rank: the
// global pool, token for token. Beyond the pool size they must part: libra keeps DP / 8 pools,
// the global pool spreads attention over every rank.
TEST_CASE("libra equals global-pool while DP fits one pool, and differs once DP exceeds it") {
  const auto placement = [](const char* name, int dp) {
    models::SequenceShape shape;
    shape.dp = dp;
    shape.cp = 1;
    shape.micro_batches = 1;
    shape.seq_len = 1 << 15;
    models::DocSampler s(models::DocLengthModel::lognormal_pareto(644, 20'000, 1 << 15), 5);
    const std::vector<std::int64_t> docs = s.batch(static_cast<std::int64_t>(dp) * shape.seq_len);
    return policies::sequence_policies().create(name, {}, {"test", "/policy"})->place(docs, shape);
  };
  const auto busiest = [](const models::BatchPlacement& p) {
    double m = 0;
    for (const auto& r : p.attention_pairs) m = std::max(m, *std::max_element(r.begin(), r.end()));
    return m;
  };
  // DP 8 = the default pool: the same placement, the same attention per rank, the same bytes.
  const models::BatchPlacement l8 = placement("libra", 8), g8 = placement("global-pool", 8);
  CHECK(l8.pool_of_rank == g8.pool_of_rank);
  CHECK(l8.attention_pairs == g8.attention_pairs);
  CHECK(l8.exchange_bytes == g8.exchange_bytes);
  for (std::size_t r = 0; r < l8.ranks.size(); ++r) CHECK(l8.ranks[r][0].docs == g8.ranks[r][0].docs);
  // DP 32: libra's 4 pools of 8 against one pool of 32; the global pool's busiest rank carries no
  // more attention than libra's (it may move work between any two ranks), and the pools differ.
  const models::BatchPlacement l32 = placement("libra", 32), g32 = placement("global-pool", 32);
  CHECK(*std::max_element(l32.pool_of_rank.begin(), l32.pool_of_rank.end()) == 3);
  CHECK(*std::max_element(g32.pool_of_rank.begin(), g32.pool_of_rank.end()) == 0);
  CHECK(l32.attention_pairs != g32.attention_pairs);
  CHECK(busiest(g32) <= busiest(l32) * (1 + 1e-12));
  // A smaller pool makes libra differ at DP 8 as well.
  models::SequenceShape shape;
  shape.dp = 8;
  shape.seq_len = 1 << 15;
  models::DocSampler s(models::DocLengthModel::lognormal_pareto(644, 20'000, 1 << 15), 5);
  const std::vector<std::int64_t> docs = s.batch(8 * shape.seq_len);
  const models::BatchPlacement l2 = policies::sequence_policies().create("libra", sim::GivenParams{{"pool", std::int64_t{2}}}, {"test", "/policy"})->place(docs, shape);
  CHECK(*std::max_element(l2.pool_of_rank.begin(), l2.pool_of_rank.end()) == 3);
}
