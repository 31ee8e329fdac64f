// Sequence balancing: how the documents of one global batch become each data-parallel rank's
// micro-batches, how context parallelism shards them, and (for pool policies) how much
// attention each rank ends up running. models/ owns the interface and the cost primitives;
// policies/sequence.cpp registers packing, sorted-greedy, wlb-llm, libra and global-pool.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace orrery::models {

enum class CpSharding : std::uint8_t { per_sequence, per_document };

struct MicroBatchPlan {
  std::vector<std::int64_t> docs;  // packed documents (or pieces of documents), in order
  CpSharding sharding = CpSharding::per_sequence;
};

struct SequenceShape {
  int dp = 1;
  int cp = 1;
  int micro_batches = 1;        // per rank and step
  std::int64_t seq_len = 1;     // tokens per packed sequence (the context); variable packing keeps micro-batches <= this
  int heads = 32;               // attention heads (tile pools split them)
  std::int64_t head_dim = 128;
  // Costs to weigh work (WLB-LLM's W_a + W_l): seconds per causal query-key pair (all heads)
  // and per token of linear work, on one GPU.
  double pair_seconds = 0;
  double token_seconds = 0;
};

struct BatchPlacement {
  std::vector<std::vector<MicroBatchPlan>> ranks;  // [dp][micro-batch]
  // Pool policies (attention redistributed inside pools of ranks): causal pairs each rank
  // runs, and bytes it sends and receives, per micro-batch; empty otherwise.
  std::vector<std::vector<double>> attention_pairs;
  std::vector<std::vector<double>> exchange_bytes;
  std::vector<int> pool_of_rank;  // pool policies: the pool of each rank
  std::size_t deferred = 0;       // documents carried to a later step (WLB-LLM's outlier queues)
};

class SequencePolicy {
 public:
  virtual ~SequencePolicy() = default;
  virtual std::string_view name() const = 0;
  // May keep state across steps (WLB-LLM's outlier queues and carried documents).
  virtual BatchPlacement place(const std::vector<std::int64_t>& docs, const SequenceShape& shape) = 0;
  // Documents still held back; placing an empty batch releases them (the end of a run).
  virtual std::size_t pending() const { return 0; }
};

// Causal query-key pairs of documents packed with a document mask: sum of l (l + 1) / 2.
double causal_pairs(const std::vector<std::int64_t>& docs);
// Fixed-length sequential packing: documents in order, cut at sequence boundaries.
std::vector<std::vector<std::int64_t>> pack_fixed(const std::vector<std::int64_t>& docs, std::int64_t seq_len);
// Causal pairs each of the cp workers computes for a packed micro-batch:
//   per_sequence: the packed sequence cut into 2 cp chunks, worker i taking chunks i and 2cp-1-i;
//   per_document: the same cut applied to every document, the remainder tokens round-robin.
std::vector<double> cp_worker_pairs(const std::vector<std::int64_t>& docs, int cp, CpSharding sharding);

// Libra's pool-sizing law, as an experiment: D sequence works (sum(l^2) of 32K-token
// sequences packed from lognormal documents, median 644, p99 8K) put P to a pool at random and
// by VRSP (LPT with cardinality P), averaged over seeds. Random pools' busiest load over the
// mean should be about 1 + CV/sqrt(P) sqrt(2 ln(D/P)).
struct PoolSizing {
  double cv = 0;       // of the sequence works
  double formula = 0;  // 1 + CV/sqrt(P) sqrt(2 ln(D/P))
  double random = 0;   // busiest random pool / mean
  double vrsp = 0;     // busiest VRSP pool / mean
};
PoolSizing pool_sizing_experiment(int sequences, int pool, int seeds);

}  // namespace orrery::models
