// MoE policies of a training step, registered by name: how a layer's expert-parallel
// all-to-alls share the GPU's links with the data-parallel buckets (ep_comm_policies):
//   ep-inline  the all-to-alls' simulated time inside the op, alone on the fabric (the default)
//   ep-fair    flows on the GPU's NVLink or NIC, sharing max-min fairly with the buckets
//   lina       Lina (Li et al., USENIX ATC'23, arXiv 2210.17223): the all-reduce partitioned
//              into micro-ops so that every all-to-all goes first (a strict priority); with
//              `pack`, expert packing: more experts per GPU, the all-to-all among fewer
// Each sets its plan field (models::ParallelPlan::ep_comm). And how many experts each token goes
// to, step by step (moe_routings):
//   top-k            the model's top-k for every token
//   adaptive-gating  Li et al., "Adaptive Gating in Mixture-of-Experts based Language Models"
//                    (arXiv 2405.02834): a token whose top-1 gate probability leads the top-2's by
//                    more than a threshold goes to its top expert only; with `curriculum`, the
//                    run's sequences ordered by how many experts their tokens need, so that the
//                    ranks of a step carry alike sequences
// `orrery compare` runs them side by side on a step scenario without a workload.
//   auto lina = ep_comm_policies().create("lina", {}, {"<command line>", "--policies"});
//   lina->apply(plan);
#pragma once

#include "models/training/parallel.hpp"
#include "models/training/step.hpp"
#include "sim/registry.hpp"

#include <string_view>
#include <vector>

namespace orrery::policies {

class StepPlanPolicy {
 public:
  virtual ~StepPlanPolicy() = default;
  virtual std::string_view name() const = 0;
  // Sets what the policy decides in the plan (checked by models::validate_plan).
  virtual void apply(models::ParallelPlan& plan) const = 0;
};

const sim::Registry<StepPlanPolicy>& ep_comm_policies();

// One step's routing: experts per token, the mean over the ranks, and the busiest rank's over
// the mean (the all-to-all waits for it; it multiplies plan.expert_imbalance).
struct RoutingStep {
  double experts_per_token = 1;
  double rank_skew = 1;
};

class MoeRouting {
 public:
  virtual ~MoeRouting() = default;
  virtual std::string_view name() const = 0;
  // `steps` steps of `plan` on `model` (an MoE with top-k of at least 2 for adaptive gating:
  // InputError naming `source` otherwise), the same for the same seed.
  virtual std::vector<RoutingStep> steps(const models::ModelSpec& model, const models::ParallelPlan& plan, int steps, std::string_view source) const = 0;
};

const sim::Registry<MoeRouting>& moe_routings();

// The mean emulated step time of `sc` over a routing's steps: each step with its experts per
// token (to a hundredth) and its busiest rank's skew on plan.expert_imbalance (to a
// two-hundredth), alike steps emulated once.
double mean_routed_step_s(const models::StepScenario& sc, const models::CostModel& cost, const models::PipelineSchedule& schedule,
                          const std::vector<RoutingStep>& steps);

}  // namespace orrery::policies
