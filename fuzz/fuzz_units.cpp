// Unit strings ("400 Gb/s", "80 GiB", "1.5 us") and policy specs ("tiresias:threshold=100;queues=2"),
// the values every other reader parses; the first byte picks the parser.
#include "runs/policy_spec.hpp"
#include "fuzz_target.hpp"
#include "sim/unit_parse.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return orrery::fuzz::run(data, size, [](std::string_view text) {
    namespace s = orrery::sim;
    switch (orrery::fuzz::pick(text, 6)) {
      case 0: s::parse_duration(text, {"f", "/x"}); break;
      case 1: s::parse_bytes(text, {"f", "/x"}); break;
      case 2: s::parse_bandwidth(text, {"f", "/x"}); break;
      case 3: s::parse_flops(text, {"f", "/x"}); break;
      case 4: s::parse_flop_rate(text, {"f", "/x"}); break;
      default: orrery::runs::parse_policy_list(std::string(text), "--policy"); break;
    }
  });
}
