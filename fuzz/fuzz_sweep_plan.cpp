// Sweep plans (cli/sweep.hpp) and plan-search specs (cli/plan_search.hpp).
#include "cli/plan_search.hpp"
#include "cli/sweep.hpp"
#include "fuzz_target.hpp"
#include "models/hardware/hardware.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return orrery::fuzz::run(data, size, [](std::string_view text) {
    if (orrery::fuzz::pick(text, 2) == 0) {
      orrery::cli::read_sweep_plan(text, "sweep.json");
    } else {
      orrery::cli::read_plan_search(text, "plan.json", orrery::models::HardwareCatalog::builtin());
    }
  });
}
