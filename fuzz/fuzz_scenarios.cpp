// The other scenario kinds and their inputs: multimodal scenarios and batch traces, RL scenarios,
// GPU catalogs; the first byte picks one.
#include "fuzz_target.hpp"
#include "traces/hardware_json.hpp"
#include "traces/json_input.hpp"
#include "traces/multimodal_batches.hpp"
#include "traces/multimodal_json.hpp"
#include "traces/rl_json.hpp"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return orrery::fuzz::run(data, size, [](std::string_view text) {
    namespace t = orrery::traces;
    const std::size_t kind = orrery::fuzz::pick(text, 4);
    const t::FileOverlay file("input.json", std::string(text));
    switch (kind) {
      case 0: t::load_multimodal_scenario("input.json"); break;
      case 1: t::read_multimodal_jsonl(text, "batches.jsonl"); break;
      case 2: t::load_rl_scenario("input.json", 1); break;
      default: t::load_gpu_catalog("input.json"); break;
    }
  });
}
