// Document-length traces (traces/doclens.hpp), JSONL or CSV.
#include "fuzz_target.hpp"
#include "traces/doclens.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return orrery::fuzz::run(data, size, [](std::string_view text) {
    if (orrery::fuzz::pick(text, 2) == 0) {
      orrery::traces::read_doclens_jsonl(text, "lens.jsonl");
    } else {
      orrery::traces::read_doclens_csv(text, "lens.csv");
    }
  });
}
