// Unit strings from input files, parsed once at the boundary into strong types. Decimal
// (k, M, G, T, P, E) and binary (Ki, Mi, Gi, Ti, Pi, Ei) prefixes; bits (b, bit) or bytes (B).
//   parse_bandwidth("400 Gb/s") == BytesPerSecond(50e9);  parse_bytes("80 GiB");
//   parse_duration("1.5 us") == 1500 ns;  parse_flop_rate("989 TFLOP/s");
#pragma once

#include "sim/units.hpp"

#include <string>
#include <string_view>

namespace orrery::sim {

// Where a unit string came from, for the InputError a bad one raises.
struct InputLocation {
  std::string_view source = "<input>";  // a file name, or "<command line>"
  std::string_view where;               // a JSON pointer or "line N"
};

// Every parser rejects negative, infinite and unit-less values and unknown units, quoting the text.
Duration parse_duration(std::string_view text, InputLocation at = {});  // ns us µs ms s min h
Bytes parse_bytes(std::string_view text, InputLocation at = {});        // "80 GiB", "1.5 MB", "800 Gbit"
BytesPerSecond parse_bandwidth(std::string_view text, InputLocation at = {});  // "400 Gb/s", "900 GB/s", "25 GBps"
Flops parse_flops(std::string_view text, InputLocation at = {});        // "3.2 PFLOP", "1e12 FLOPs"
FlopsPerSecond parse_flop_rate(std::string_view text, InputLocation at = {});  // "989 TFLOP/s", "989 TFLOPS"

}  // namespace orrery::sim
