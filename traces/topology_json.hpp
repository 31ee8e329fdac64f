// Topology JSON (format in traces/README.md) <-> models::Topology, for custom fabrics.
// Loading validates: duplicate names, unknown kinds or endpoints, zero or negative bandwidth,
// self-links and disconnected GPUs are InputErrors naming the JSON pointer.
//   models::Topology t = read_topology_file("fabric.json");
//   write_topology_file("copy.json", t);
#pragma once

#include "models/network/topology.hpp"

#include <string>
#include <string_view>

namespace orrery::traces {

models::Topology read_topology_file(const std::string& path);
models::Topology read_topology(std::string_view json_text, const std::string& source);
std::string topology_json(const models::Topology& topology);
void write_topology_file(const std::string& path, const models::Topology& topology);

// A spec string ("dgx-h100:nodes=4") or, when it ends in ".json", a topology file.
models::Topology load_topology(const std::string& spec_or_path);

}  // namespace orrery::traces
