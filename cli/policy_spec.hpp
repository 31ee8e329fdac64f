// A policy named on the command line with its parameters: "name:key=value;key=value".
// Values read as booleans (true/false), whole numbers, numbers, or else strings; the policy's
// registry checks them against its documented parameters.
#pragma once

#include "sim/registry.hpp"

#include <string>
#include <string_view>

namespace orrery::cli {

struct PolicySpec {
  std::string name;
  sim::GivenParams params;
};

PolicySpec parse_policy_spec(std::string_view text, std::string_view flag);

}  // namespace orrery::cli
