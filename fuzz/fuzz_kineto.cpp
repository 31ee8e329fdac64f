// A PyTorch profiler (Kineto) trace (calibration/kineto.hpp): parsed, matched into a profile,
// and replayed.
#include "calibration/kineto.hpp"
#include "fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return orrery::fuzz::run(data, size, [](std::string_view text) {
    const orrery::calibration::KinetoTrace t = orrery::calibration::parse_kineto_trace(text, "t.json");
    orrery::calibration::kineto_profile(t);
    orrery::calibration::replay_kineto(t, {});
  });
}
