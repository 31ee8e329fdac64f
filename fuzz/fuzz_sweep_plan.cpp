// Sweep plans (studies/sweep.hpp) and plan-search specs (studies/plan_search.hpp).
#include "studies/plan_search.hpp"
#include "studies/sweep.hpp"
#include "fuzz_target.hpp"
#include "models/hardware/hardware.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return orrery::fuzz::run(data, size, [](std::string_view text) {
    if (orrery::fuzz::pick(text, 2) == 0) {
      orrery::studies::read_sweep_plan(text, "sweep.json");
    } else {
      orrery::studies::read_plan_search(text, "plan.json", orrery::models::HardwareCatalog::builtin());
    }
  });
}
