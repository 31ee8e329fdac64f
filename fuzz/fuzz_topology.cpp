// Topologies: a JSON file (traces/topology_json.hpp) or a spec "kind:key=value,..." (models/network/topology.hpp).
#include "fuzz_target.hpp"
#include "models/network/topology.hpp"
#include "traces/topology_json.hpp"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return orrery::fuzz::run(data, size, [](std::string_view text) {
    if (orrery::fuzz::pick(text, 2) == 0) {
      orrery::traces::read_topology(text, "topology.json");
    } else if (text.find(".json") == std::string_view::npos) {  // a spec, never a path on disk
      // Every spec is checked; graphs are built up to 8,192 GPUs. A valid 50,688-GPU spec
      // ("nvl72:domains=704") takes 3 s to build under ASan, over libFuzzer's 10 s timeout on a
      // loaded machine: slow by size, not a hang (the release build takes a tenth of it).
      const std::string spec(text);
      if (orrery::models::check_topology_spec(spec).gpus <= 8192) orrery::traces::load_topology(spec);
    }
  });
}
