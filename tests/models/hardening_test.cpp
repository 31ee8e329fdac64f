// Issue 17 (hardening): bad input that once crashed, hung or was silently accepted, each
// answered with one line naming the file and place, exit 1, nothing written.
#include "input_error.hpp"

#include "models/network/collectives.hpp"
#include "models/training/llm.hpp"
#include "models/training/parallel.hpp"
#include "models/network/topology.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace orrery;
using orrery::testing::error_of;

namespace {
std::string spec_error(std::string_view spec, std::string_view source = "<command line>", std::string_view where = "") {
  return error_of([&] { models::build_topology(spec, source, where); });
}
}  // namespace

// Every numeric key of a spec has a range with its reason, checked before anything is built: a
// billion servers once allocated until the machine ran out of memory.
TEST_CASE("hardening: topology spec sizes are bounded before anything is built") {
  CHECK(spec_error("dgx-h100:nodes=1000000000") ==
        "<command line>:topology \"dgx-h100:nodes=1000000000\" parameter nodes: found 1000000000, expected a positive integer of "
        "at most 131072 (the GPUs of the largest training clusters built)");
  CHECK(spec_error("dgx-h100:gpus_per_node=1000000") ==
        "<command line>:topology \"dgx-h100:gpus_per_node=1000000\" parameter gpus_per_node: found 1000000, expected a positive "
        "integer of at most 576 (the largest NVLink domain announced, NVL576)");
  CHECK(spec_error("dgx-h100:nodes=2,planes=1000000") ==
        "<command line>:topology \"dgx-h100:nodes=2,planes=1000000\" parameter planes: found 1000000, expected a positive integer "
        "of at most 8 (every plane is a full copy of the fabric)");
  CHECK(spec_error("dgx-h100:nodes=2,leaf_ports=100000").find("parameter leaf_ports: found 100000, expected a positive integer of at most 512") !=
        std::string::npos);
  CHECK(spec_error("dgx-h100:nodes=2,fabric=fat-tree-3,pod_leaves=100000").find("parameter pod_leaves: found 100000") != std::string::npos);
  // Each key in range, the product not: 65536 servers of 8 GPUs.
  CHECK(spec_error("dgx-h100:nodes=65536") ==
        "<command line>:topology \"dgx-h100:nodes=65536\" parameter nodes: nodes x gpus_per_node = 65536 x 8 = 524288 GPUs, "
        "expected at most 131072 (above the largest training clusters built)");
  CHECK(spec_error("nvl72:domains=2000").find("parameter domains: domains x gpus_per_domain = 2000 x 72 = 144000 GPUs") != std::string::npos);
  // The limit itself builds nothing when checked.
  const models::TopologySpecInfo big = models::check_topology_spec("dgx-h100:nodes=16384");
  CHECK(big.gpus == 131072);
  CHECK(big.gpu == "h100");
}

// An infinite oversubscription once made uplinks of no bandwidth: an internal error.
TEST_CASE("hardening: oversubscription is a finite ratio from 1 to leaf_ports") {
  CHECK(spec_error("dgx-h100:nodes=2,oversubscription=inf") ==
        "<command line>:topology \"dgx-h100:nodes=2,oversubscription=inf\" parameter oversubscription: found \"inf\", expected a "
        "finite number");
  CHECK(spec_error("dgx-h100:nodes=2,oversubscription=1e300") ==
        "<command line>:topology \"dgx-h100:nodes=2,oversubscription=1e300\" parameter oversubscription: found 1e+300, expected "
        "a ratio from 1 to leaf_ports = 32 (a leaf keeps at least one uplink)");
  CHECK(models::build_topology("dgx-h100:nodes=2,oversubscription=32").gpus().size() == 16);
}

// `topology` took the last of a repeated key, `step` the first; integers are digits only.
TEST_CASE("hardening: a spec key given twice, or an integer not in digits, is an error") {
  CHECK(spec_error("dgx-h100:nodes=1,nodes=2") ==
        "<command line>:topology \"dgx-h100:nodes=1,nodes=2\" parameter nodes: given twice; expected each parameter once");
  CHECK(spec_error("dgx-h100:nodes=1e0") ==
        "<command line>:topology \"dgx-h100:nodes=1e0\" parameter nodes: found \"1e0\", expected an integer (digits only)");
  CHECK(spec_error("dgx-h100:nodes=1;x").find("parameter nodes: found \"1;x\", expected an integer (digits only)") != std::string::npos);
  CHECK(spec_error("dgx-h100:nodes=1,xyz").find("found \"xyz\", expected key=value") != std::string::npos);
  CHECK(spec_error("dgx-h100:nodes=1,").find("found \"\", expected key=value") != std::string::npos);
  CHECK(spec_error("dgx-h100:nodes=1,nic=").find("parameter nic: found an empty value") != std::string::npos);
}

// Zero, or absurdly slow or fast, links: every bandwidth of a spec is from 1 Gb/s to 1 PB/s.
TEST_CASE("hardening: spec bandwidths are within the range of real links") {
  CHECK(spec_error("dgx-h100:nodes=1,nic=0Gb/s").find("parameter nic: bandwidth must be positive, found \"0Gb/s\"") != std::string::npos);
  CHECK(spec_error("dgx-h100:nodes=1,nvlink=0GB/s").find("parameter nvlink: bandwidth must be positive") != std::string::npos);
  CHECK(spec_error("dgx-h100:nodes=2,nic=1e-9b/s") ==
        "<command line>:topology \"dgx-h100:nodes=2,nic=1e-9b/s\" parameter nic: found \"1e-9b/s\", expected a bandwidth from "
        "1 Gb/s to 1 PB/s (slower links carry no training traffic; faster ones are not built)");
  // Derived links too: spraying over 512-port leaves puts 512 NICs' worth on each uplink.
  CHECK(spec_error("dgx-h100:nodes=2,nic=1PB/s,leaf_ports=512,routing=spray") ==
        "<command line>:topology \"dgx-h100:nodes=2,nic=1PB/s,leaf_ports=512,routing=spray\" parameter nic: \"1PB/s\" makes leaf "
        "uplinks of 512 PB/s, expected at most 1 PB/s per link (slower links carry no training traffic; faster ones are not built)");
  CHECK(spec_error("dgx-h100:nodes=2,pcie=2PB/s").find("parameter pcie: found \"2PB/s\", expected a bandwidth from 1 Gb/s to 1 PB/s") !=
        std::string::npos);
}

// In a file the place is the JSON pointer of the spec, and the message quotes the user's spec.
TEST_CASE("hardening: spec errors in a file name the file and pointer, quoting the spec") {
  CHECK(spec_error("dgx-h100:nodes=0", "s.json", "/cluster/topology") ==
        "s.json:/cluster/topology: topology \"dgx-h100:nodes=0\" parameter nodes: found 0, expected a positive integer of at most "
        "131072 (the GPUs of the largest training clusters built)");
  CHECK(spec_error("dgx-h10:nodes=2", "s.json", "/cluster/topology")
            .starts_with("s.json:/cluster/topology: unknown topology \"dgx-h10\"; did you mean \"dgx-h100\"?"));
  CHECK(spec_error("dgx-h100:node=2", "s.json", "/cluster/topology")
            .starts_with("s.json:/cluster/topology: topology \"dgx-h100:node=2\": unknown parameter \"node\" of topology \"dgx-h100\"; "
                         "did you mean \"nodes\"?"));
  CHECK(error_of([] { models::check_topology_spec("dgx-h100:nodes=2,nodes=3", "s.json", "/cluster/topology"); }) ==
        "s.json:/cluster/topology: topology \"dgx-h100:nodes=2,nodes=3\" parameter nodes: given twice; expected each parameter once");
}

// The clock is int64 nanoseconds (292 years): a time beyond it is DurationOverflow, which the
// callers that know the input turn into an InputError; never a silent wrap.
TEST_CASE("hardening: durations beyond the clock throw DurationOverflow, never wrap") {
  CHECK_THROWS_AS(sim::ceil_duration_ns(1e30), sim::DurationOverflow);
  CHECK_THROWS_AS(sim::ceil_duration_ns(std::numeric_limits<double>::infinity()), sim::DurationOverflow);
  CHECK_THROWS_AS(sim::Bytes(1e10) / sim::BytesPerSecond(1e-300), sim::DurationOverflow);
  CHECK_THROWS_AS(sim::Time::max() + sim::Duration::nanoseconds(1), sim::DurationOverflow);
  CHECK_THROWS_AS(sim::Duration::max() * 2, sim::DurationOverflow);
  CHECK_THROWS_AS(sim::Duration::seconds(std::int64_t{1} << 40), sim::DurationOverflow);
  CHECK_THROWS_AS(sim::Time::zero() - sim::Time::max() - sim::Duration::nanoseconds(2), sim::DurationOverflow);
  // Negative or NaN times remain our own bug.
  CHECK_THROWS_AS(sim::ceil_duration_ns(-1.0), sim::InternalError);
  CHECK_THROWS_AS(sim::ceil_duration_ns(std::numeric_limits<double>::quiet_NaN()), sim::InternalError);
  CHECK(sim::ceil_duration_ns(9.1e18).ns() == 9'100'000'000'000'000'000);
}

// A collective plan is bounded when asked: once 10^9 chunks tried to allocate 64 GB.
TEST_CASE("hardening: a collective plan beyond its transfer limit is an InputError") {
  const models::Topology t = models::build_topology("dgx-h100:nodes=1");
  models::CollectiveSpec spec;
  spec.size = sim::Bytes(1 << 20);
  spec.chunks = 1000;
  spec.channels = 64;
  spec.max_transfers = 100000;
  CHECK(error_of([&] { models::plan_collective(t, spec); }) ==
        "<command line>:--chunks: 8 ranks x 64 channels x 1000 chunks make a plan of more than 100000 transfers; expected fewer "
        "--ranks, --channels or --chunks");
}

// Messages are one bounded line: control characters escaped, long values cut with a count.
TEST_CASE("hardening: InputError and quote give one bounded line") {
  CHECK(std::string(sim::InputError("a\nb.json", "/x", "m").what()) == "a\\x0ab.json:/x: m");
  const std::string with_nul("id\0tail", 7);
  CHECK(std::string(sim::InputError("g.json", "/nodes/0/id", "duplicate id " + with_nul).what()) ==
        "g.json:/nodes/0/id: duplicate id id\\x00tail");
  CHECK(sim::quote(with_nul) == "\"id\\x00tail\"");
  const std::string huge(10'000'000, 'k');
  const std::string q = sim::quote(huge);
  CHECK(q == "\"" + std::string(sim::kQuoteLimit, 'k') + "...\" (and 9,999,800 more bytes)");
  const std::string what = sim::InputError("f.json", huge, "unknown key " + sim::quote(huge)).what();
  CHECK(what.size() < sim::kMessageLimit + 200);
  CHECK(what.find('\n') == std::string::npos);
  CHECK(what.find("(and 9,999,000 more bytes)") != std::string::npos);
  // No "did you mean" search over a 10 MB word.
  CHECK(sim::did_you_mean(huge, {"nodes", "links"}).empty());
  CHECK(sim::with_thousands(99990) == "99,990");
  CHECK(sim::with_thousands(999) == "999");
}

// A global batch of 1e9 sequences at micro-batch 1 was 1e9 micro-batches to simulate (hours,
// silently): the plan's micro-batches per step have a stated limit, checked with the plan.
TEST_CASE("hardening: micro-batches per step have a limit with its reason") {
  const models::ModelSpec& m = models::ModelCatalog::builtin().model("llama3-8b");
  models::ParallelPlan p;
  p.tp = 8;
  p.micro_batch = 1;
  p.seq_len = 2048;
  p.global_batch = static_cast<int>(models::kMaxMicroBatches);
  CHECK_NOTHROW(models::validate_plan(p, m, 8, "s.json", "/plan"));
  p.global_batch = 1000000000;
  CHECK(error_of([&] { models::validate_plan(p, m, 8, "s.json", "/plan"); }) ==
        "s.json:/plan/global_batch: global_batch=1000000000 / (micro_batch=1 x dp=1) = 1000000000 micro-batches per step; expected at most "
        "65536 (each one is simulated; published runs use a few dozen)");
  // The same batch in larger micro-batches is fine.
  p.micro_batch = 16384;
  p.global_batch = 1 << 30;
  CHECK_NOTHROW(models::validate_plan(p, m, 8, "s.json", "/plan"));
}
