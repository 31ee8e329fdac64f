// The fitted step parameters' file (models/hardware/step_params.json's format).
#include "fuzz_target.hpp"
#include "models/hardware/step_params.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return orrery::fuzz::run(data, size, [](std::string_view text) { orrery::models::parse_step_parameters(text, "p.json"); });
}
