// Symmetry classes of a collective plan: when the plan's transfers fall into units (GPUs,
// servers, the servers behind a leaf, or concurrent groups) that provably see the fabric
// alike, one unit simulated on one link per class of equivalent links ends exactly when the
// whole plan would. The check is exact, not a heuristic: where it fails (uneven
// oversubscription, a degraded link, hashed ECMP that loads spines unevenly, trees whose
// ranks play different roles, mixes of collectives each symmetric under a different map of
// the units, as NCCL's rail-aligned ring, whose entry GPU turns from server to server, beside
// an all-to-all numbered by GPU) the caller runs the whole plan.
//   std::optional<SymmetricReduction> r = reduce_by_symmetry(plan, unit_of, units, links);
//   if (r) run r->plan on r->capacity with r->routes and r->latency_ns
//
// Why it is exact. Number each unit's transfers in plan order (their local indices) and map
// every dependency to the local index of the transfer it names. Each link l carries the
// multiset M(l) of the local indices of all units' transfers crossing it; links of one
// capacity, latency and M form a class. Suppose that
//   (a) every unit holds the same number of transfers, and transfer j of every unit has the
//       same bytes, NVLS flag, collective (run_concurrent) and local dependencies as
//       transfer j of unit 0;
//   (b) every class's M holds each of its indices equally often, m times;
//   (c) transfer j of every unit crosses the same set of classes, with the same latency.
// If all units move in lockstep (transfer j at the same rate r_j everywhere), every link of
// class K holds one constraint, m_K * sum of r_j over K's indices <= capacity_K, the same for
// all of K's links: so the whole plan's max-min problem is unit 0's transfers, each on one
// link per class it crosses, of capacity capacity_K / m_K. That problem's fair rates are
// fair in the whole (a transfer's bottleneck class is saturated and it has the largest rate
// there, on every link of the class), and max-min fair rates are unique: the lockstep holds at
// every instant, and dependencies across units see the completion times of their local
// images. Sets and multisets are compared by 64-bit hashes summed over their members (a
// collision, and with it a wrong answer, has a probability around 2^-64 per comparison).
#pragma once

#include "models/network/collectives.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace orrery::models {

// The flow network's links a plan runs on: capacity (bytes/s) and latency (ns) by link, and
// each transfer's route over them.
struct PlanLinks {
  std::span<const double> capacity;
  std::span<const std::int64_t> latency_ns;
  std::function<std::span<const std::uint32_t>(std::uint32_t transfer)> route;
  // What each link is made of, where capacities may be rescaled later by kind
  // (SymmetricReduction::rescale): links of different kinds never share a class. Empty: capacity
  // alone decides.
  std::span<const std::uint32_t> kind = {};
};

// The reduced problem: unit 0's transfers on one link per class.
struct SymmetricReduction {
  CollectivePlan plan;                       // dependencies renumbered to local indices
  std::vector<double> capacity;              // by class: capacity / m
  std::vector<std::uint32_t> route_begin;    // transfer j's classes: routes[route_begin[j] .. route_begin[j+1])
  std::vector<std::uint32_t> routes;
  std::vector<std::int64_t> latency_ns;      // by transfer: its physical route's latency
  int units = 0;                             // how many units the plan held
  std::vector<std::uint32_t> link;           // by class: one of its links
  std::vector<std::uint32_t> share;          // by class: m, how many units' transfers load each of its links as unit 0's do
  // The same classes on links of other capacities, each kind (PlanLinks::kind) scaled alike (the
  // same links at another efficiency): capacity[k] = link_capacity[link[k]] / share[k].
  void rescale(std::span<const double> link_capacity) {
    for (std::size_t k = 0; k < capacity.size(); ++k) capacity[k] = link_capacity[link[k]] / share[k];
  }
};

// unit_of[i]: the unit of transfer i, in 0..units-1. Unit 0 must hold transfers.
std::optional<SymmetricReduction> reduce_by_symmetry(const CollectivePlan& plan, std::span<const std::uint32_t> unit_of, int units,
                                                     const PlanLinks& links);

// The reduction of a ring plan truncated at `steps` ring steps (steps >= 2), from the
// reduction of the same ring truncated at two (CollectiveSpec::ring_steps; its transfers carry
// Transfer::ring_step). Why it is the same: a ring's step s >= 1 repeats step 1 (add_ring): the
// same connections moving the same pieces, each transfer after its predecessor's transfer of
// step s - 1 and its own earlier one, and only the last step marked horizon. reduce_by_symmetry
// matches units' transfers step for step (ring_step), so the local images in the longer plan are
// the two-step plan's, repeated: every link carries each repeated index as often as the
// two-step plan's step-1 index, the classes, shares and routes are the same, and unit 0's
// transfers come in the longer plan's own order (each channel's ring, step after step). Tests
// compare it, field by field, with reduce_by_symmetry on the longer plan. None when `two` is not
// such a plan (a channel's step 0 and step 1 of unequal lengths, a dependency reaching past the
// step before). In a mix (run_concurrent), `ring[c]` says which collectives (Transfer::collective)
// are such rings; the others' transfers are kept once, as they are (their plans do not change with
// the rings' steps). Empty: every transfer is the ring's.
std::optional<SymmetricReduction> repeat_ring_steps(const SymmetricReduction& two, int steps, std::span<const char> ring = {});

}  // namespace orrery::models
