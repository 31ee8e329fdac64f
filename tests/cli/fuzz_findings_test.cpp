// What the fuzz targets (fuzz/) found, each kept as the test that would have caught it.
#include "studies/sweep.hpp"
#include "input_error.hpp"

#include <doctest/doctest.h>

using orrery::testing::error_of;

// fuzz_sweep_plan: an axis with "pointers" whose pointer is not in the base read the place for
// its error from an element of a destroyed temporary (a use after free that printed garbage or
// threw std::length_error). The error must name the pointer's own place.
TEST_CASE("fuzz finding: a sweep axis pointer missing from the base is named at its place") {
  const char* plan = R"json({
  "command": "step",
  "base": {"model": "llama3-8b", "clu/ster": {"gpu": "H100", "topology": "dgx-h100:nodes=1"},
           "plan": {"tp": 1, "pp": 1, "micro_batch": 1, "global_batch": 16, "seq_len": 2048}},
  "axes": [{"name": "system", "pointers": ["/plan/tp", "/cluster/gpu"], "values": [[1, "H100"], [2, "H200"]]}],
  "objective": {"metric": "tokens_per_s", "goal": "max"}
})json";
  const std::string m = error_of([&] { orrery::studies::read_sweep_plan(plan, "sweep.json"); });
  CHECK(m.find("sweep.json:/axes/0/pointers/1: /cluster/gpu is not in the base scenario") == 0);
}
