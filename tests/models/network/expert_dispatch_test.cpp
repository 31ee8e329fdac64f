#include "models/network/expert_dispatch.hpp"

#include "approx.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace orrery::models;

TEST_CASE("distinct_of: expected bins hit by uniform draws") {
  CHECK(distinct_of(8, 1) == orrery::testing::Approx(1.0).epsilon(1e-12));
  CHECK(distinct_of(8, 8) == orrery::testing::Approx(8 * (1 - std::pow(7.0 / 8, 8))).epsilon(1e-12));
  CHECK(distinct_of(1, 5) == orrery::testing::Approx(1.0).epsilon(1e-12));
  CHECK(distinct_of(0, 5) == 0);
}

// DeepEP sends a token over the network once per remote node it reaches and forwards it over
// NVLink; NCCL's all-to-all sends every (token, expert) copy. DeepSeek-V3's shape: top-8
// experts, at most 4 nodes per token, EP 64 over 8 nodes of 8.
TEST_CASE("DeepEP moves fewer network bytes than NCCL's all-to-all") {
  const ExpertDispatch d{.ep = 64, .per_node = 8, .top_k = 8, .max_nodes = 4, .imbalance = 1.0};
  const double tokens = 4096, bytes = 7168;
  const DispatchCost deepep = deepep_dispatch(d, tokens, bytes, 200, 50);
  const DispatchCost nccl = nccl_dispatch_bytes(d, tokens, bytes);
  // 4 nodes per token, 7 in 8 of them remote; NCCL: 8 copies, 56 of 64 GPUs remote.
  CHECK(deepep.rdma_bytes == orrery::testing::Approx(tokens * bytes * 4 * 7 / 8).epsilon(1e-12));
  CHECK(nccl.rdma_bytes == orrery::testing::Approx(tokens * bytes * 8 * 56 / 64).epsilon(1e-12));
  // Network-bound at DeepEP's 43 of 50 GB/s, after its 77 us.
  CHECK(deepep.time_s == orrery::testing::Approx(77e-6 + deepep.rdma_bytes / 43e9).epsilon(1e-9));
  // Without the cap on nodes, a token reaches 5.25 of the 8 nodes on average.
  ExpertDispatch free = d;
  free.max_nodes = 0;
  CHECK(deepep_dispatch(free, tokens, bytes, 200, 50).rdma_bytes ==
        orrery::testing::Approx(tokens * bytes * distinct_of(8, 8) * 7 / 8).epsilon(1e-12));
  // The busiest rank receives `imbalance` times the mean.
  ExpertDispatch skewed = d;
  skewed.imbalance = 1.5;
  CHECK(deepep_dispatch(skewed, tokens, bytes, 200, 50).rdma_bytes == orrery::testing::Approx(1.5 * deepep.rdma_bytes).epsilon(1e-12));
}

// Inside one node everything moves over NVLink, at DeepEP's 153 GB/s on H800's 200.
TEST_CASE("DeepEP inside a node is NVLink-bound") {
  const ExpertDispatch d{.ep = 8, .per_node = 8, .top_k = 8, .max_nodes = 0, .imbalance = 1.0};
  const DispatchCost c = deepep_dispatch(d, 4096, 7168, 200, 50);
  CHECK(c.rdma_bytes == 0);
  CHECK(c.nvlink_bytes == orrery::testing::Approx(4096.0 * 7168 * distinct_of(8, 8) * 7 / 8).epsilon(1e-12));
  CHECK(c.time_s == orrery::testing::Approx(77e-6 + c.nvlink_bytes / 153e9).epsilon(1e-9));
}

// Blackwell's NVLink 5 inside one NVLink domain: HybridEP's measured bandwidth on GB200 (BF16
// dispatch and combine averaged) among 8, 16, 24, 32 and 36 ranks: 557, 523, 496, 474 and 464 of
// 900 GB/s. The share falls with the ranks and stays within 2.5% of each measurement.
TEST_CASE("DeepEP on Blackwell: the NVLink share falls with the ranks of a domain") {
  const std::pair<int, double> measured[] = {{8, 557.3}, {16, 522.5}, {24, 495.5}, {32, 474.4}, {36, 463.5}};
  double last = 1;
  for (const auto& [ranks, GBps] : measured) {
    const double share = deepep_blackwell_params(ranks).nvlink_share;
    CHECK(share * 900 == orrery::testing::Approx(GBps).epsilon(0.025));
    CHECK(share < last);
    last = share;
  }
  // The time of a dispatch among 32 GB200s: NVLink-bound at that share, after the same latency.
  const ExpertDispatch d{.ep = 32, .per_node = 32, .top_k = 8, .max_nodes = 0, .imbalance = 1.0};
  const DeepEpParams p = deepep_blackwell_params(32);
  const DispatchCost c = deepep_dispatch(d, 4096, 4096 * 2, 900, 50, p);
  CHECK(c.time_s == orrery::testing::Approx(77e-6 + c.nvlink_bytes / (900e9 * p.nvlink_share)).epsilon(1e-9));
}
