// Step scenarios (traces/step_json.hpp): model, cluster, plan, workload, validated as `orrery step` reads them.
#include "fuzz_target.hpp"
#include "traces/step_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return orrery::fuzz::run(data, size, [](std::string_view text) { orrery::traces::read_step_scenario(text, "scenario.json"); });
}
