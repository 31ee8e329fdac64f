#include "policies/sequence.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <deque>
#include <fmt/format.h>
#include <numeric>
#include <queue>

namespace orrery::policies {

namespace {

using models::BatchPlacement;
using models::CpSharding;
using models::MicroBatchPlan;
using models::SequenceShape;

double square_sum(const std::vector<std::int64_t>& docs) {
  double s = 0;
  for (const std::int64_t l : docs) s += static_cast<double>(l) * static_cast<double>(l);
  return s;
}

// The step's D = dp x m fixed-length sequences (empty ones when the batch is short).
std::vector<std::vector<std::int64_t>> fixed_sequences(const std::vector<std::int64_t>& docs, const SequenceShape& s) {
  auto seqs = models::pack_fixed(docs, s.seq_len);
  const auto d = static_cast<std::size_t>(s.dp * s.micro_batches);
  if (seqs.size() > d) {
    throw sim::InputError("<batch>", "", fmt::format("found {} tokens, more than dp x micro-batches x seq_len = {} x {} x {} can hold",
                                                     std::accumulate(docs.begin(), docs.end(), std::int64_t{0}), s.dp, s.micro_batches,
                                                     s.seq_len));
  }
  seqs.resize(d);
  return seqs;
}

BatchPlacement empty_placement(const SequenceShape& s) {
  BatchPlacement p;
  p.ranks.assign(static_cast<std::size_t>(s.dp), std::vector<MicroBatchPlan>(static_cast<std::size_t>(s.micro_batches)));
  return p;
}

// LPT with cardinality: items (by weight, heaviest first) to the least-loaded bin that still has
// room for `per_bin` items; ties to the lowest bin. Returns the bin of each item.
std::vector<int> lpt(const std::vector<double>& weight, int bins, int per_bin) {
  std::vector<std::size_t> order(weight.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return weight[a] > weight[b]; });
  std::vector<double> load(static_cast<std::size_t>(bins), 0.0);
  std::vector<int> count(static_cast<std::size_t>(bins), 0);
  std::vector<int> bin(weight.size(), 0);
  for (const std::size_t i : order) {
    int best = -1;
    for (int b = 0; b < bins; ++b) {
      if (count[static_cast<std::size_t>(b)] >= per_bin) continue;
      if (best < 0 || load[static_cast<std::size_t>(b)] < load[static_cast<std::size_t>(best)]) best = b;
    }
    ORRERY_CHECK(best >= 0, "LPT ran out of room");
    bin[i] = best;
    load[static_cast<std::size_t>(best)] += weight[i];
    ++count[static_cast<std::size_t>(best)];
  }
  return bin;
}

class Packing final : public models::SequencePolicy {
 public:
  std::string_view name() const override { return "packing"; }
  BatchPlacement place(const std::vector<std::int64_t>& docs, const SequenceShape& s) override {
    const auto seqs = fixed_sequences(docs, s);
    BatchPlacement p = empty_placement(s);
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      p.ranks[i / static_cast<std::size_t>(s.micro_batches)][i % static_cast<std::size_t>(s.micro_batches)].docs = seqs[i];
    }
    return p;
  }
};

class SortedGreedy final : public models::SequencePolicy {
 public:
  std::string_view name() const override { return "sorted-greedy"; }
  BatchPlacement place(const std::vector<std::int64_t>& docs, const SequenceShape& s) override {
    const auto seqs = fixed_sequences(docs, s);
    std::vector<double> w;
    for (const auto& q : seqs) w.push_back(square_sum(q));
    const std::vector<int> rank = lpt(w, s.dp, s.micro_batches);
    BatchPlacement p = empty_placement(s);
    std::vector<std::size_t> filled(static_cast<std::size_t>(s.dp), 0);
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      const auto r = static_cast<std::size_t>(rank[i]);
      p.ranks[r][filled[r]++].docs = seqs[i];
    }
    return p;
  }
};

// WLB-LLM, Algorithm 1 (variable-length packing with outlier delay) and adaptive per-document
// CP sharding. Documents longer than the context are cut into context-sized pieces first.
class WlbLlm final : public models::SequencePolicy {
 public:
  explicit WlbLlm(std::vector<double> thresholds) : thresholds_(std::move(thresholds)) {}
  std::string_view name() const override { return "wlb-llm"; }
  BatchPlacement place(const std::vector<std::int64_t>& docs, const SequenceShape& s) override {
    const auto n = static_cast<std::size_t>(s.dp * s.micro_batches);
    queues_.resize(thresholds_.size());
    const auto level = [&](std::int64_t len) {
      int q = -1;
      for (std::size_t i = 0; i < thresholds_.size(); ++i) {
        if (static_cast<double>(len) >= thresholds_[i] * static_cast<double>(s.seq_len)) q = static_cast<int>(i);
      }
      return q;
    };
    std::vector<std::int64_t> fresh;
    for (std::int64_t d : docs) {
      while (d > 0) {
        const std::int64_t piece = std::min(d, s.seq_len);
        const int q = level(piece);
        (q < 0 ? fresh : queues_[static_cast<std::size_t>(q)]).push_back(piece);
        d -= piece;
      }
    }
    // A queue releases outliers when it can give one to each of a rank's micro-batches (the
    // paper's N, micro-batches per iteration of one pipeline); an empty batch (the end of the
    // data) releases everything.
    const auto release = static_cast<std::size_t>(s.micro_batches);
    for (auto& q : queues_) {
      const std::size_t take = docs.empty() ? q.size() : (q.size() >= release ? release : 0);
      fresh.insert(fresh.end(), q.begin(), q.begin() + static_cast<std::ptrdiff_t>(take));
      q.erase(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(take));
    }
    std::stable_sort(fresh.begin(), fresh.end(), std::greater<>());
    std::vector<std::int64_t> all = std::move(remained_);
    remained_.clear();
    all.insert(all.end(), fresh.begin(), fresh.end());
    std::vector<std::vector<std::int64_t>> mb(n);
    std::vector<std::int64_t> tokens(n, 0);
    std::vector<double> work(n, 0.0);
    const auto cost = [&](std::int64_t len) {
      return s.pair_seconds * static_cast<double>(len) * static_cast<double>(len + 1) / 2 + s.token_seconds * static_cast<double>(len);
    };
    for (const std::int64_t d : all) {
      const auto w = static_cast<std::size_t>(std::min_element(work.begin(), work.end()) - work.begin());
      std::size_t target = w;
      if (tokens[w] + d > s.seq_len) {
        target = static_cast<std::size_t>(std::min_element(tokens.begin(), tokens.end()) - tokens.begin());
        if (tokens[target] + d > s.seq_len) {
          remained_.push_back(d);
          continue;
        }
      }
      mb[target].push_back(d);
      tokens[target] += d;
      work[target] += cost(d);
    }
    BatchPlacement p = empty_placement(s);
    for (std::size_t k = 0; k < n; ++k) {
      MicroBatchPlan& plan = p.ranks[k % static_cast<std::size_t>(s.dp)][k / static_cast<std::size_t>(s.dp)];
      plan.docs = std::move(mb[k]);
      // Adaptive CP sharding: the sharding whose busiest worker has fewer pairs.
      if (s.cp > 1) {
        const auto seq = models::cp_worker_pairs(plan.docs, s.cp, CpSharding::per_sequence);
        const auto doc = models::cp_worker_pairs(plan.docs, s.cp, CpSharding::per_document);
        plan.sharding = *std::max_element(doc.begin(), doc.end()) < *std::max_element(seq.begin(), seq.end()) ? CpSharding::per_document
                                                                                                             : CpSharding::per_sequence;
      }
    }
    p.deferred = pending();
    return p;
  }

  std::size_t pending() const override {
    std::size_t waiting = remained_.size();
    for (const auto& q : queues_) waiting += q.size();
    return waiting;
  }

 private:
  std::vector<double> thresholds_;  // outlier thresholds as fractions of the context, ascending
  std::vector<std::vector<std::int64_t>> queues_;
  std::vector<std::int64_t> remained_;
};

// Libra: VRSP across bounded pools, TAP inside each pool.
class Libra final : public models::SequencePolicy {
 public:
  Libra(int pool, std::int64_t tile_tokens, int tile_heads, double slack, bool global)
      : pool_(pool), tile_tokens_(tile_tokens), tile_heads_(tile_heads), slack_(slack), global_(global) {}
  std::string_view name() const override { return global_ ? "global-pool" : "libra"; }

  BatchPlacement place(const std::vector<std::int64_t>& docs, const SequenceShape& s) override {
    const int pool = global_ ? s.dp : std::min(pool_, s.dp);
    if (s.dp % pool != 0) {
      throw sim::InputError("<policy>", "/pool", fmt::format("pool size {} does not divide dp = {}", pool, s.dp));
    }
    const auto seqs = fixed_sequences(docs, s);
    const int groups = s.dp / pool;                  // pools per micro-batch slot
    const int pools = groups * s.micro_batches;      // pools per step, P sequences each
    std::vector<double> w;
    for (const auto& q : seqs) w.push_back(square_sum(q));
    const std::vector<int> pool_of_seq = lpt(w, pools, pool);  // VRSP
    BatchPlacement p = empty_placement(s);
    p.attention_pairs.assign(static_cast<std::size_t>(s.dp), std::vector<double>(static_cast<std::size_t>(s.micro_batches), 0.0));
    p.exchange_bytes = p.attention_pairs;
    p.pool_of_rank.resize(static_cast<std::size_t>(s.dp));
    for (int r = 0; r < s.dp; ++r) p.pool_of_rank[static_cast<std::size_t>(r)] = r / pool;
    std::vector<std::vector<std::size_t>> members(static_cast<std::size_t>(pools));
    for (std::size_t i = 0; i < seqs.size(); ++i) members[static_cast<std::size_t>(pool_of_seq[i])].push_back(i);
    for (int k = 0; k < pools; ++k) {
      const int group = k % groups, slot = k / groups;
      const auto& mine = members[static_cast<std::size_t>(k)];
      for (std::size_t j = 0; j < mine.size(); ++j) {
        p.ranks[static_cast<std::size_t>(group * pool) + j][static_cast<std::size_t>(slot)].docs = seqs[mine[j]];
      }
      tap(s, p, seqs, mine, group * pool, slot);
    }
    return p;
  }

 private:
  // Tiled Attention Pooling: tiles (a block of tile_tokens query tokens of one sequence x
  // tile_heads heads), heaviest first, to the worker that keeps its load under the cap with the
  // least added communication (none at home; Q out and O back elsewhere, plus the KV of that
  // sequence and head chunk unless already resident there).
  void tap(const SequenceShape& s, BatchPlacement& p, const std::vector<std::vector<std::int64_t>>& seqs,
           const std::vector<std::size_t>& mine, int first_rank, int slot) const {
    struct Tile {
      double pairs;
      double q_tokens;
      double kv_tokens;
      int home;
      int group;  // KV group: (sequence, head chunk)
    };
    const int chunks = std::max(1, s.heads / tile_heads_);
    const double head_share = 1.0 / chunks;
    std::vector<Tile> tiles;
    for (std::size_t j = 0; j < mine.size(); ++j) {
      const auto& docs = seqs[mine[j]];
      std::int64_t total = std::accumulate(docs.begin(), docs.end(), std::int64_t{0});
      for (std::int64_t b0 = 0; b0 < total; b0 += tile_tokens_) {
        const std::int64_t b1 = std::min(total, b0 + tile_tokens_);
        double pairs = 0;
        std::int64_t start = 0, kv_from = b0;
        for (const std::int64_t l : docs) {
          const std::int64_t end = start + l;
          const std::int64_t q0 = std::max(start, b0), q1 = std::min(end, b1);
          if (q1 > q0) {
            pairs += (static_cast<double>(q0 - start + 1) + static_cast<double>(q1 - start)) * static_cast<double>(q1 - q0) / 2;
            kv_from = std::min(kv_from, start);
          }
          start = end;
        }
        if (pairs == 0) continue;
        for (int c = 0; c < chunks; ++c) {
          tiles.push_back({pairs * head_share, static_cast<double>(b1 - b0), static_cast<double>(b1 - kv_from), static_cast<int>(j),
                           static_cast<int>(j) * chunks + c});
        }
      }
    }
    const auto workers = static_cast<int>(mine.size());
    if (workers == 0) return;
    double total = 0;
    for (const Tile& t : tiles) total += t.pairs;
    const double cap = (1 + slack_) * total / workers;
    std::stable_sort(tiles.begin(), tiles.end(), [](const Tile& a, const Tile& b) { return a.pairs > b.pairs; });
    std::vector<double> load(static_cast<std::size_t>(workers), 0.0), bytes(static_cast<std::size_t>(workers), 0.0);
    std::vector<std::vector<char>> resident(static_cast<std::size_t>(workers),
                                            std::vector<char>(static_cast<std::size_t>(workers * chunks), 0));
    const double per_token = static_cast<double>(tile_heads_) * static_cast<double>(s.head_dim) * 2;  // bf16, one head chunk
    for (int w = 0; w < workers; ++w) {
      for (int c = 0; c < chunks; ++c) resident[static_cast<std::size_t>(w)][static_cast<std::size_t>(w * chunks + c)] = 1;
    }
    for (const Tile& t : tiles) {
      const auto comm = [&](int w) {
        if (w == t.home) return 0.0;
        double b = 2 * t.q_tokens * per_token;  // Q there, O back
        if (!resident[static_cast<std::size_t>(w)][static_cast<std::size_t>(t.group)]) b += 2 * t.kv_tokens * per_token;  // K and V
        return b;
      };
      int best = -1;
      for (int w = 0; w < workers; ++w) {
        if (load[static_cast<std::size_t>(w)] + t.pairs > cap) continue;
        if (best < 0 || comm(w) < comm(best) || (comm(w) == comm(best) && load[static_cast<std::size_t>(w)] < load[static_cast<std::size_t>(best)])) {
          best = w;
        }
      }
      if (best < 0) best = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
      const double b = comm(best);
      load[static_cast<std::size_t>(best)] += t.pairs;
      if (b > 0) {
        bytes[static_cast<std::size_t>(best)] += b;
        bytes[static_cast<std::size_t>(t.home)] += b;
        resident[static_cast<std::size_t>(best)][static_cast<std::size_t>(t.group)] = 1;
      }
    }
    for (int w = 0; w < workers; ++w) {
      p.attention_pairs[static_cast<std::size_t>(first_rank + w)][static_cast<std::size_t>(slot)] = load[static_cast<std::size_t>(w)];
      p.exchange_bytes[static_cast<std::size_t>(first_rank + w)][static_cast<std::size_t>(slot)] = bytes[static_cast<std::size_t>(w)];
    }
  }

  int pool_;
  std::int64_t tile_tokens_;
  int tile_heads_;
  double slack_;
  bool global_;
};

void check_tiles(const sim::Params& p, std::string_view policy) {
  if (p.get_int("tile_tokens") < 1) throw sim::InputError("<policy>", fmt::format("{}/tile_tokens", policy), "expected 1 or more tokens per tile");
  if (p.get_int("tile_heads") < 1 || p.get_int("tile_heads") > 4096) {
    throw sim::InputError("<policy>", fmt::format("{}/tile_heads", policy), "expected 1 or more heads per tile");
  }
  if (!(p.get_number("slack") >= 0)) throw sim::InputError("<policy>", fmt::format("{}/slack", policy), "expected a slack of 0 or more");
}

}  // namespace

const sim::Registry<models::SequencePolicy>& sequence_policies() {
  static const sim::Registry<models::SequencePolicy> registry = [] {
    sim::Registry<models::SequencePolicy> r("sequence policy");
    r.add({"packing", "fixed-length sequential packing, sequences to DP ranks in order (Plain-4D / Ulysses baseline)", {},
           [](const sim::Params&) { return std::make_unique<Packing>(); }});
    r.add({"sorted-greedy", "fixed-length packing, then LPT on sum(l^2) across DP ranks", {},
           [](const sim::Params&) { return std::make_unique<SortedGreedy>(); }});
    r.add({"wlb-llm", "WLB-LLM: variable-length packing with outlier-delay queues, adaptive per-document CP sharding",
           {{"queues", sim::ParamType::integer, std::int64_t{2}, "outlier queues (thresholds at 1/2, 3/4, ... of the context)"}},
           [](const sim::Params& p) {
             const std::int64_t n = p.get_int("queues");
             if (n < 1 || n > 16) throw sim::InputError("<policy>", "wlb-llm/queues", fmt::format("found {}, expected 1 to 16 outlier queues", n));
             std::vector<double> t;
             for (std::int64_t i = 0; i < n; ++i) t.push_back(1.0 - 1.0 / static_cast<double>(2 << i));  // 1/2, 3/4, 7/8 ...
             return std::make_unique<WlbLlm>(t);
           }});
    r.add({"libra", "Libra: VRSP over bounded pools of P sequences, Tiled Attention Pooling inside each pool",
           {{"pool", sim::ParamType::integer, std::int64_t{8}, "sequences (DP replicas) per pool"},
            {"tile_tokens", sim::ParamType::integer, std::int64_t{8192}, "query tokens per tile"},
            {"tile_heads", sim::ParamType::integer, std::int64_t{4}, "heads per tile"},
            {"slack", sim::ParamType::number, 0.05, "load cap above the pool's mean"}},
           [](const sim::Params& p) {
             check_tiles(p, "libra");
             const std::int64_t pool = p.get_int("pool");
             if (pool < 1 || pool > 1 << 20) throw sim::InputError("<policy>", "libra/pool", fmt::format("found {}, expected 1 or more sequences per pool", pool));
             return std::make_unique<Libra>(static_cast<int>(pool), p.get_int("tile_tokens"), static_cast<int>(p.get_int("tile_heads")),
                                            p.get_number("slack"), false);
           }});
    r.add({"global-pool", "one pool as large as DP (DistCA style): Libra's tiling over every rank",
           {{"tile_tokens", sim::ParamType::integer, std::int64_t{8192}, "query tokens per tile"},
            {"tile_heads", sim::ParamType::integer, std::int64_t{4}, "heads per tile"},
            {"slack", sim::ParamType::number, 0.05, "load cap above the mean"}},
           [](const sim::Params& p) {
             check_tiles(p, "global-pool");
             return std::make_unique<Libra>(0, p.get_int("tile_tokens"), static_cast<int>(p.get_int("tile_heads")), p.get_number("slack"), true);
           }});
    return r;
  }();
  return registry;
}

}  // namespace orrery::policies
