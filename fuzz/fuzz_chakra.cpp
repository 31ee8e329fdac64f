// A Chakra execution trace (traces/chakra.hpp): parsed as rank 0 of a one-GPU workload (its
// collectives on a group of that rank alone), checked, and replayed on one H100.
#include "fuzz_target.hpp"
#include "models/hardware/hardware.hpp"
#include "traces/chakra.hpp"
#include "traces/chakra_replay.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return orrery::fuzz::run(data, size, [](std::string_view bytes) {
    using namespace orrery::traces;
    ChakraWorkload w;
    w.ranks.push_back(parse_chakra_et(bytes, "f.0.et"));
    w.groups["1"] = {0};
    w.groups_path = "f.comm_groups.json";
    check_chakra_workload(w, "f");
    ChakraReplayOptions o;
    o.topology = "dgx-h100:nodes=1,gpus_per_node=1";
    o.gpu = orrery::models::HardwareCatalog::builtin().gpu("H100");
    replay_chakra(w, o);
  });
}
