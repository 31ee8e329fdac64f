// Topologies: a JSON file (traces/topology_json.hpp) or a spec "kind:key=value,..." (models/network/topology.hpp).
#include "fuzz_target.hpp"
#include "traces/topology_json.hpp"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return orrery::fuzz::run(data, size, [](std::string_view text) {
    if (orrery::fuzz::pick(text, 2) == 0) {
      orrery::traces::read_topology(text, "topology.json");
    } else if (text.find(".json") == std::string_view::npos) {  // a spec, never a path on disk
      orrery::traces::load_topology(std::string(text));
    }
  });
}
