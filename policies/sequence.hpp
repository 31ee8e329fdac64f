// Sequence-balancing policies, registered by name (models/training/sequence.hpp has the interface):
//   packing        fixed-length sequential packing; sequences handed to DP ranks in order (the
//                  Plain-4D / Ulysses baseline)
//   sorted-greedy  fixed-length packing, then LPT on sum(l^2) across DP ranks (m sequences each)
//   wlb-llm        WLB-LLM (OSDI'25): variable-length packing with outlier-delay queues
//                  (Algorithm 1), per-document CP sharding chosen adaptively per micro-batch
//   libra          Libra: fixed-length packing; Variance-Reduced Sequence Placement (LPT by
//                  sum(l^2)) over bounded pools of P sequences; Tiled Attention Pooling inside a
//                  pool (sequence-block x head-chunk tiles placed by a communication-aware
//                  greedy under a load cap)
//   global-pool    the same with one pool as large as DP (DistCA style)
#pragma once

#include "models/training/sequence.hpp"
#include "sim/registry.hpp"

namespace orrery::policies {

const sim::Registry<models::SequencePolicy>& sequence_policies();

}  // namespace orrery::policies
