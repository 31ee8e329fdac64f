// What the fuzz targets (fuzz/) found, each kept as the test that would have caught it.
#include "models/network/topology.hpp"
#include "runs/policy_spec.hpp"
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

// fuzz_topology: an NVL72 domain of 17 GPUs left its last compute tray with 2 NICs, and the
// fabric builder read a 4-NIC tray past its end (a heap overflow; the CLI said "internal error").
TEST_CASE("fuzz finding: an NVLink domain is whole compute trays") {
  const std::string m = error_of([] { orrery::models::build_topology("nvl72:domains=2,gpus_per_domain=17", "<command line>", "--topology"); });
  CHECK(m.find("gpus_per_domain") != std::string::npos);
  CHECK(m.find("found 17 GPUs per domain, expected a multiple of 4") != std::string::npos);
  // Whole trays still build, and every tray's NICs reach the fabric.
  const orrery::models::Topology t = orrery::models::build_topology("nvl72:domains=2,gpus_per_domain=36", "<command line>", "--topology");
  CHECK(t.gpus().size() == 72);
}

// fuzz_units: a policy parameter of 1e90 was cast to a 64-bit integer (undefined behaviour,
// UBSan's "outside the range of representable values"). It stays a number.
TEST_CASE("fuzz finding: a policy parameter beyond 64-bit integers stays a number") {
  const auto spec = orrery::runs::parse_policy_spec("tiresias:threshold=1e90;queues=2", "--policy");
  CHECK(std::holds_alternative<double>(spec.params.at("threshold")));
  CHECK(std::get<std::int64_t>(spec.params.at("queues")) == 2);
}
