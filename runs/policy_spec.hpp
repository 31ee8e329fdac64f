// A policy named on the command line with its parameters: "name:key=value;key=value".
// Values read as booleans (true/false), whole numbers, numbers, or else strings; the policy's
// registry checks them against its documented parameters.
#pragma once

#include "reports/stats.hpp"
#include "sim/registry.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace orrery::runs {

struct PolicySpec {
  std::string name;
  sim::GivenParams params;
};

PolicySpec parse_policy_spec(std::string_view text, std::string_view flag);
// A comma-separated list of them.
std::vector<PolicySpec> parse_policy_list(const std::string& text, std::string_view flag);
using reports::percentile;

}  // namespace orrery::runs
