// A collective spec for the network tests: op, algorithm and nccl-tests size, the rest default.
#pragma once

#include "models/network/collectives.hpp"

#include <vector>

namespace orrery::testing {

inline models::CollectiveSpec collective_spec(models::CollectiveOp op, models::CollectiveAlgo algo, double bytes) {
  models::CollectiveSpec s;
  s.op = op;
  s.algo = algo;
  s.size = sim::Bytes(bytes);
  return s;
}

// Rings whose reductions are built from their first two steps (repeat_ring_steps), on rails,
// sprayed and hashed spines, planes and NVL72 racks, alone and in groups, some in chunks: the
// cases of both tests of it (symmetry_test: field by field; collectives_test: to the nanosecond).
struct RingCase {
  const char* topology;
  models::CollectiveOp op;
  int ranks, groups, stride, chunks;
};
inline std::vector<RingCase> ring_cases() {
  using models::CollectiveOp;
  return {
      {"dgx-h100:nodes=1", CollectiveOp::all_reduce, 0, 1, 1, 1},
      {"dgx-h100:nodes=8", CollectiveOp::reduce_scatter, 0, 1, 1, 2},
      {"dgx-h100:nodes=16", CollectiveOp::all_reduce, 0, 1, 1, 1},
      {"dgx-h100:nodes=16,fabric=fat-tree,leaf_ports=8,oversubscription=2,routing=spray", CollectiveOp::all_reduce, 16, 8, 8, 1},
      {"dgx-h100:nodes=16,fabric=fat-tree,leaf_ports=16,oversubscription=2,routing=spray", CollectiveOp::reduce_scatter, 32, 4, 1, 2},
      {"dgx-h100:nodes=16,oversubscription=2", CollectiveOp::all_gather, 32, 4, 1, 1},
      {"dgx-h100:nodes=32,oversubscription=2", CollectiveOp::all_gather, 32, 8, 8, 1},
      {"dgx-h100:nodes=32,planes=2", CollectiveOp::all_reduce, 32, 8, 8, 1},
      {"dgx-h100:nodes=8,planes=2,routing=spray", CollectiveOp::reduce_scatter, 16, 4, 4, 1},
      {"nvl72:domains=8,gpus_per_domain=16", CollectiveOp::all_gather, 32, 4, 1, 3},
      {"nvl72:domains=8,gpus_per_domain=16,fabric=fat-tree,oversubscription=4", CollectiveOp::all_reduce, 64, 2, 1, 1},
      {"nvl72:domains=16,gpus_per_domain=64", CollectiveOp::reduce_scatter, 256, 4, 1, 1},
      {"nvl72:domains=16,gpus_per_domain=64,fabric=fat-tree,oversubscription=4,routing=spray", CollectiveOp::all_gather, 64, 16, 16, 1},
  };
}

}  // namespace orrery::testing
