// Calibration profiles (calibration/profile.hpp) and the cost curves fitted from them (traces/curves_json.hpp).
#include "calibration/profile.hpp"
#include "fuzz_target.hpp"
#include "traces/curves_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return orrery::fuzz::run(data, size, [](std::string_view text) {
    if (orrery::fuzz::pick(text, 2) == 0) {
      orrery::calibration::read_profile(text, "profile.json");
    } else {
      orrery::traces::read_curves(text, "curves.json");
    }
  });
}
