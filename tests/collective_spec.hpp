// A collective spec for the network tests: op, algorithm and nccl-tests size, the rest default.
#pragma once

#include "models/network/collectives.hpp"

namespace orrery::testing {

inline models::CollectiveSpec collective_spec(models::CollectiveOp op, models::CollectiveAlgo algo, double bytes) {
  models::CollectiveSpec s;
  s.op = op;
  s.algo = algo;
  s.size = sim::Bytes(bytes);
  return s;
}

}  // namespace orrery::testing
