#include "policies/moe.hpp"

#include <memory>
#include <string>

namespace orrery::policies {

namespace {

class EpComm final : public StepPlanPolicy {
 public:
  EpComm(std::string name, std::string mode) : name_(std::move(name)), mode_(std::move(mode)) {}
  std::string_view name() const override { return name_; }
  void apply(models::ParallelPlan& plan) const override {
    plan.ep_comm = mode_;
    if (mode_ != "inline") plan.overlap_ep_comm = false;  // the flows stand for the all-to-alls
  }

 private:
  std::string name_, mode_;
};

}  // namespace

const sim::Registry<StepPlanPolicy>& ep_comm_policies() {
  static const sim::Registry<StepPlanPolicy> registry = [] {
    sim::Registry<StepPlanPolicy> r("MoE communication policy");
    r.add({"ep-inline", "expert all-to-alls inside each op, alone on the fabric (the default)", {},
           [](const sim::Params&) { return std::make_unique<EpComm>("ep-inline", "inline"); }});
    r.add({"ep-fair", "expert all-to-alls as flows on the GPU's links, sharing fairly with the data-parallel buckets", {},
           [](const sim::Params&) { return std::make_unique<EpComm>("ep-fair", "fair"); }});
    r.add({"lina", "Lina: the all-reduce partitioned so that every expert all-to-all goes first on the GPU's links (ATC'23)", {},
           [](const sim::Params&) { return std::make_unique<EpComm>("lina", "lina"); }});
    return r;
  }();
  return registry;
}

}  // namespace orrery::policies
