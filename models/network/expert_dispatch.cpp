#include "models/network/expert_dispatch.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <cmath>

namespace orrery::models {

double distinct_of(int bins, int draws) {
  if (bins <= 0 || draws <= 0) return 0;
  return bins * (1 - std::pow(1 - 1.0 / bins, draws));
}

namespace {
void check(const ExpertDispatch& d) {
  ORRERY_CHECK(d.ep >= 1 && d.per_node >= 1 && d.top_k >= 1 && d.imbalance >= 1 && d.max_nodes >= 0, "bad expert dispatch shape");
}
}  // namespace

DispatchCost deepep_dispatch(const ExpertDispatch& d, double tokens, double token_bytes, double nvlink_GBps, double nic_GBps,
                             const DeepEpParams& params) {
  check(d);
  const int per_node = std::min(d.per_node, d.ep);
  const int nodes = d.nodes();
  // The nodes a token reaches (its experts uniform over the group, capped by group-limited
  // routing), of which a share (nodes - 1) / nodes are remote: one network copy each.
  double reached = distinct_of(nodes, d.top_k);
  if (d.max_nodes > 0) reached = std::min(reached, static_cast<double>(d.max_nodes));
  const double remote = nodes > 1 ? reached * (nodes - 1) / nodes : 0.0;
  // Inside each node it reaches, the token goes to each distinct GPU of its experts there,
  // over NVLink unless that GPU is the one it arrived on (same local index: 1 in per_node).
  const double per_reached = distinct_of(per_node, std::max(1, static_cast<int>(std::lround(d.top_k / std::max(1.0, reached)))));
  const double copies = reached * per_reached * (per_node > 1 ? 1.0 - 1.0 / per_node : 0.0);
  DispatchCost c;
  c.rdma_bytes = tokens * token_bytes * remote * d.imbalance;
  c.nvlink_bytes = tokens * token_bytes * copies * d.imbalance;
  const double nvlink = nvlink_GBps * 1e9 * params.nvlink_share;
  const double nic = nic_GBps * 1e9 * params.rdma_share;
  c.latency_s = params.latency_us * 1e-6;
  c.time_s = c.latency_s + std::max(nvlink > 0 ? c.nvlink_bytes / nvlink : 0.0, nic > 0 ? c.rdma_bytes / nic : 0.0);
  return c;
}

DeepEpParams deepep_blackwell_params(int ranks_per_domain) {
  DeepEpParams p;
  p.nvlink_share = 0.619 * std::pow(8.0 / std::max(2, ranks_per_domain), 0.122);
  return p;
}

DispatchCost nccl_dispatch_bytes(const ExpertDispatch& d, double tokens, double token_bytes) {
  check(d);
  const int per_node = std::min(d.per_node, d.ep);
  const double copies = tokens * token_bytes * d.top_k * d.imbalance;
  DispatchCost c;
  c.rdma_bytes = copies * static_cast<double>(d.ep - per_node) / d.ep;
  c.nvlink_bytes = copies * static_cast<double>(per_node - 1) / d.ep;
  return c;
}

}  // namespace orrery::models
