#include "sim/error.hpp"
#include "sim/unit_parse.hpp"
#include "approx.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace orrery::sim;
using namespace orrery::sim::literals;

TEST_CASE("durations") {
  CHECK(parse_duration("1.5 us") == 1500_ns);
  CHECK(parse_duration("2 ms") == 2_ms);
  CHECK(parse_duration("2ms") == 2_ms);
  CHECK(parse_duration("  10 s ") == 10_s);
  CHECK(parse_duration("7 ns") == 7_ns);
  CHECK(parse_duration("3 \xC2\xB5s") == 3_us);
  CHECK(parse_duration("1.5 min") == 90_s);
  CHECK(parse_duration("2 h") == 7200_s);
  CHECK(parse_duration("1e3 us") == 1_ms);
  CHECK(parse_duration("0 s") == Duration::zero());
  CHECK(parse_duration("0.1 us") == 100_ns);
}

TEST_CASE("byte amounts: decimal and binary prefixes, bits and bytes") {
  CHECK(parse_bytes("80 GiB").value() == 80.0 * 1073741824.0);
  CHECK(parse_bytes("80 GB").value() == 80e9);
  CHECK(parse_bytes("1.5 MB").value() == 1.5e6);
  CHECK(parse_bytes("4 KiB").value() == 4096.0);
  CHECK(parse_bytes("4 kB").value() == 4000.0);
  CHECK(parse_bytes("4 KB").value() == 4000.0);
  CHECK(parse_bytes("800 Gbit").value() == 100e9);
  CHECK(parse_bytes("8 b").value() == 1.0);
  CHECK(parse_bytes("2 TiB").value() == 2.0 * 1099511627776.0);
  CHECK(parse_bytes("17 B").value() == 17.0);
}

TEST_CASE("bandwidths: Gb/s is bits, GB/s is bytes") {
  CHECK(parse_bandwidth("400 Gb/s").value() == 50e9);
  CHECK(parse_bandwidth("400 Gbps").value() == 50e9);
  CHECK(parse_bandwidth("400 Gbit/s").value() == 50e9);
  CHECK(parse_bandwidth("900 GB/s").value() == 900e9);
  CHECK(parse_bandwidth("25 GBps").value() == 25e9);
  CHECK(parse_bandwidth("1 GiB/s").value() == 1073741824.0);
}

TEST_CASE("FLOP amounts and rates") {
  CHECK(parse_flop_rate("989 TFLOP/s").value() == 989e12);
  CHECK(parse_flop_rate("989 TFLOPS").value() == 989e12);
  CHECK(parse_flop_rate("1.979 PFLOP/s").value() == orrery::testing::Approx(1.979e15));
  CHECK(parse_flops("3.2 PFLOP").value() == orrery::testing::Approx(3.2e15));
  CHECK(parse_flops("1e12 FLOPs").value() == 1e12);
}

// Every rejection quotes the offending text and names where it came from.
static std::string error_of(auto parse, const char* text) {
  try {
    parse(text, InputLocation{"plan.json", "/link/bandwidth"});
  } catch (const InputError& e) {
    CHECK(e.source() == "plan.json");
    CHECK(e.where() == "/link/bandwidth");
    CHECK(std::string(e.what()).find(std::string("\"") + text + "\"") != std::string::npos);
    return e.message();
  }
  FAIL("no InputError for ", text);
  return {};
}

TEST_CASE("bad unit strings are rejected, quoting the text") {
  const auto bw = [](std::string_view t, InputLocation at) { return parse_bandwidth(t, at); };
  const auto dur = [](std::string_view t, InputLocation at) { return parse_duration(t, at); };
  const auto bytes = [](std::string_view t, InputLocation at) { return parse_bytes(t, at); };
  const auto rate = [](std::string_view t, InputLocation at) { return parse_flop_rate(t, at); };
  CHECK(error_of(bw, "400 Gx/s").find("unknown unit \"Gx/s\"") != std::string::npos);
  CHECK(error_of(bw, "400").find("unit is missing") != std::string::npos);
  CHECK(error_of(bw, "fast").find("finite number") != std::string::npos);
  CHECK(error_of(bw, "").find("empty") != std::string::npos);
  CHECK(error_of(bw, "400 GB") .find("unknown unit") != std::string::npos);  // an amount is not a rate
  CHECK(error_of(dur, "-2 ms").find("negative") != std::string::npos);
  CHECK(error_of(dur, "1.5 parsecs").find("unknown unit") != std::string::npos);
  CHECK(error_of(dur, "0.5 ns").find("whole number of nanoseconds") != std::string::npos);
  CHECK(error_of(dur, "inf s").find("finite number") != std::string::npos);
  CHECK(error_of(dur, "1e300 s").find("range") != std::string::npos);
  CHECK(error_of(dur, "2 Ms").find("unknown unit") != std::string::npos);  // no prefixes on time units
  CHECK(error_of(bytes, "5 mB").find("unknown unit") != std::string::npos);  // milli-bytes make no sense
  CHECK(error_of(bytes, "5 GiB/s").find("unknown unit") != std::string::npos);
  CHECK(error_of(rate, "989 TFLOPs").find("unknown unit") != std::string::npos);  // FLOPs is an amount
}
