#include "runs/policy_list.hpp"

#include "policies/cluster.hpp"
#include "policies/moe.hpp"
#include "policies/multimodal.hpp"
#include "policies/multiplex.hpp"
#include "policies/pipeline.hpp"
#include "policies/rl.hpp"
#include "policies/sequence.hpp"
#include "sim/registry.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace orrery::runs {

namespace {

struct FamilyText {
  const char* heading;
  const char* where;
};

FamilyText text_of(PolicyFamily f) {
  switch (f) {
    case PolicyFamily::sequence: return {"Sequence policies", "compare --policies on a step scenario with a \"workload\""};
    case PolicyFamily::multimodal: return {"Multimodal pipeline policies", "compare --policies on a multimodal scenario"};
    case PolicyFamily::video_attention: return {"Video DiT attention policies", "compare --policies on a multimodal scenario with a video DiT"};
    case PolicyFamily::cluster: return {"Cluster schedulers", "cluster --policy; compare --policies on a cluster scenario"};
    case PolicyFamily::rl: return {"RL policies", "compare --policies on an RL scenario"};
    case PolicyFamily::rl_dispatcher: return {"RL dispatchers", "an RL policy's dispatcher=NAME, or the scenario's"};
    case PolicyFamily::pipeline: return {"Pipeline schedules", "a step scenario's \"plan\": {\"schedule\": NAME}; compare --policies on a step scenario without a \"workload\""};
    case PolicyFamily::moe_routing: return {"MoE routing policies", "compare --policies on a step scenario of an MoE without a \"workload\" (mean over --steps)"};
    case PolicyFamily::ep_comm: return {"MoE communication policies", "a step scenario's \"plan\": {\"ep_comm\": ...}; compare --policies on a step scenario without a \"workload\""};
    case PolicyFamily::colocation: return {"GPU colocation policies", "compare --policies on a scenario with a \"colocation\" section"};
    case PolicyFamily::peft: return {"Multi-task PEFT policies", "compare --policies on a scenario with a \"peft\" section"};
  }
  return {"", ""};
}

template <class Interface>
void render(std::string& out, const sim::Registry<Interface>& registry, const FamilyText& text) {
  out += fmt::format("{} ({}):\n", text.heading, text.where);
  std::size_t width = 0;
  for (const auto& [name, entry] : registry.entries()) width = std::max(width, name.size());
  for (const auto& [name, entry] : registry.entries()) {
    out += fmt::format("  {:<{}}  {}\n", name, width, entry.description);
    for (const sim::ParamSpec& p : entry.params) {
      const std::string value = sim::to_string(p.default_value);
      out += fmt::format("  {:<{}}    {}={} ({}): {}\n", "", width, p.name, value.empty() ? "\"\"" : value, sim::to_string(p.type), p.description);
    }
  }
}

template <class Interface>
std::string names_of(const sim::Registry<Interface>& registry) {
  std::string out;
  for (const std::string& n : registry.names()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

template <class F>
auto with_registry(PolicyFamily f, F&& fn) {
  switch (f) {
    case PolicyFamily::sequence: return fn(policies::sequence_policies());
    case PolicyFamily::multimodal: return fn(policies::multimodal_pipelines());
    case PolicyFamily::video_attention: return fn(policies::dit_attentions());
    case PolicyFamily::cluster: return fn(policies::cluster_schedulers());
    case PolicyFamily::rl: return fn(policies::rl_policies());
    case PolicyFamily::rl_dispatcher: return fn(policies::rl_dispatchers());
    case PolicyFamily::ep_comm: return fn(policies::ep_comm_policies());
    case PolicyFamily::moe_routing: return fn(policies::moe_routings());
    case PolicyFamily::colocation: return fn(policies::colocation_policies());
    case PolicyFamily::peft: return fn(policies::peft_policies());
    case PolicyFamily::pipeline: break;
  }
  return fn(policies::pipeline_schedules());
}

}  // namespace

std::string policy_listing(std::initializer_list<PolicyFamily> families) {
  std::string out;
  for (const PolicyFamily f : families) {
    if (!out.empty()) out += "\n";
    with_registry(f, [&](const auto& registry) {
      render(out, registry, text_of(f));
      return 0;
    });
  }
  out += "Parameters follow the name: name:key=value;key=value (e.g. fifo:backfill=true).\n";
  return out;
}

std::string policy_names(PolicyFamily family) {
  return with_registry(family, [](const auto& registry) { return names_of(registry); });
}

}  // namespace orrery::runs
