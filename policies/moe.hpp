// MoE policies of a training step, registered by name: how a layer's expert-parallel
// all-to-alls share the GPU's links with the data-parallel buckets (ep_comm_policies):
//   ep-inline  the all-to-alls' simulated time inside the op, alone on the fabric (the default)
//   ep-fair    flows on the GPU's NVLink or NIC, sharing max-min fairly with the buckets
//   lina       Lina (Li et al., USENIX ATC'23, arXiv 2210.17223): the all-reduce partitioned
//              into micro-ops so that every all-to-all goes first (a strict priority)
// Each sets its plan field (models::ParallelPlan::ep_comm); `orrery compare` runs them side by
// side on a step scenario without a workload.
//   auto lina = ep_comm_policies().create("lina", {}, {"<command line>", "--policies"});
//   lina->apply(plan);
#pragma once

#include "models/training/parallel.hpp"
#include "sim/registry.hpp"

#include <string_view>

namespace orrery::policies {

class StepPlanPolicy {
 public:
  virtual ~StepPlanPolicy() = default;
  virtual std::string_view name() const = 0;
  // Sets what the policy decides in the plan (checked by models::validate_plan).
  virtual void apply(models::ParallelPlan& plan) const = 0;
};

const sim::Registry<StepPlanPolicy>& ep_comm_policies();

}  // namespace orrery::policies
