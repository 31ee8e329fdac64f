// Every policy family and its parameters, rendered from the registries (policies/*.hpp) for the
// commands' --help and `orrery policies`: a new policy shows up without touching this text.
//   out << policy_listing({PolicyFamily::cluster});
#pragma once

#include <initializer_list>
#include <string>

namespace orrery::runs {

enum class PolicyFamily { sequence, multimodal, video_attention, cluster, rl, rl_dispatcher, pipeline, ep_comm, moe_routing, colocation, peft };

// Each family: a heading (where it is chosen), then one line per policy with its description
// and an indented line per parameter (name=default, type: description).
std::string policy_listing(std::initializer_list<PolicyFamily> families);

// The policy names of a family, comma-separated ("fifo, gavel, ...").
std::string policy_names(PolicyFamily family);

}  // namespace orrery::runs
