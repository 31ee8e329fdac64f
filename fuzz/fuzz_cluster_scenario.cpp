// Cluster scenarios (traces/cluster_json.hpp): pools, jobs section, throughput source, fabric.
#include "fuzz_target.hpp"
#include "traces/cluster_json.hpp"
#include "traces/json_input.hpp"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return orrery::fuzz::run(data, size, [](std::string_view text) {
    const orrery::traces::FileOverlay file("cluster.json", std::string(text));
    orrery::traces::load_cluster_scenario("cluster.json");
  });
}
