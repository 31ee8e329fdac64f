// Expert-parallel dispatch and combine (MoE): the bytes each GPU moves over NVLink and the
// network, and the time, for NCCL's all-to-all (every token copy to its expert's GPU, point to
// point) and for DeepEP's normal kernels (deepseek-ai/DeepEP: a token bound for another node
// crosses the network once, to the GPU of the same local index there, which forwards it over
// NVLink to each of its experts' GPUs; DeepSeek-V3's group-limited routing caps the nodes a
// token reaches).
//   ExpertDispatch d{.ep = 64, .per_node = 8, .top_k = 8, .max_nodes = 4};
//   DispatchCost c = deepep_dispatch(d, 4096, 7168, 200, 50);   // c.time_s, c.rdma_bytes
#pragma once

#include <string_view>

namespace orrery::models {

struct ExpertDispatch {
  int ep = 1;              // ranks of the expert-parallel group, experts spread evenly over them
  int per_node = 1;        // of them in one NVLink domain
  int top_k = 1;           // experts per token
  int max_nodes = 0;       // nodes one token may reach (group-limited routing); 0: no limit
  double imbalance = 1.0;  // the busiest rank receives this times the mean
  int nodes() const { return (ep + per_node - 1) / per_node; }
};

// Expected distinct bins hit by k uniform draws over n bins: n (1 - (1 - 1/n)^k).
double distinct_of(int bins, int draws);

struct DispatchCost {
  double nvlink_bytes = 0;  // per GPU, the busiest
  double rdma_bytes = 0;    // per GPU over its NIC, the busiest
  double latency_s = 0;
  double time_s = 0;
};

// DeepEP's efficiencies, from its README (normal kernels on H800 with CX7 400 Gb/s NICs,
// DeepSeek-V3 pretraining shapes): intranode dispatch at EP 8 reaches 153 GB/s over NVLink, of
// H800's 200 GB/s per direction; internode at EP 16 43 GB/s over RDMA, of the NIC's 50 GB/s.
// (Its EP 32 and 64 rows, 58 and 51 GB/s, count bytes this model does not: it stays at 43.) The
// latency is its low-latency kernels' 8-rank dispatch, 77 us, taken as the floor of a dispatch.
struct DeepEpParams {
  double nvlink_share = 153.0 / 200.0;
  double rdma_share = 43.0 / 50.0;
  double latency_us = 77.0;
};

// The same on Blackwell's NVLink 5 (900 GB/s per direction), which falls with the ranks one
// NVLink domain exchanges among: HybridEP on GB200 (deepseek-ai/DeepEP, branch hybrid-ep,
// docs/README_Hybrid-EP.md, "GB200 Platform": 4096 tokens of 7168, top 8, 32 SMs, the Torch API's
// algorithm bandwidth, BF16 dispatch and combine averaged) moves 557 GB/s among 8 ranks, 523 among
// 16, 496 among 24, 474 among 32 and 464 among 36: 0.619 x (8 / ranks)^0.122 of the line rate,
// within 2.5% of each. `orrery validate --only nccl` compares it with the table; the training
// step still prices DeepEP at the H800 share (docs/validation.md says why).
DeepEpParams deepep_blackwell_params(int ranks_per_domain);

// One dispatch (or combine) of `tokens` tokens of `token_bytes` each from every GPU; nvlink_GBps
// and nic_GBps are a GPU's line rates per direction.
DispatchCost deepep_dispatch(const ExpertDispatch& d, double tokens, double token_bytes, double nvlink_GBps, double nic_GBps,
                             const DeepEpParams& params = {});

// The bytes NCCL's all-to-all moves for the same dispatch: every (token, expert) copy to the
// expert's GPU, those on other nodes over the network (no forwarding, no deduplication).
DispatchCost nccl_dispatch_bytes(const ExpertDispatch& d, double tokens, double token_bytes);

}  // namespace orrery::models
