#include "sim/unit_parse.hpp"

#include "sim/error.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <optional>

namespace orrery::sim {

namespace {

struct Prefix {
  std::string_view symbol;
  double factor;
};

// Binary prefixes first, so that "Gi" is not read as "G" followed by "iB".
constexpr std::array<Prefix, 14> kPrefixes = {{
    {"Ki", 0x1p10}, {"Mi", 0x1p20}, {"Gi", 0x1p30}, {"Ti", 0x1p40}, {"Pi", 0x1p50}, {"Ei", 0x1p60},
    {"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}, {"E", 1e18},
    {"", 1.0},
}};

struct Base {
  std::string_view symbol;
  double factor;  // in the SI unit of the quantity: bytes, FLOPs, seconds, per second
};

struct Kind {
  std::string_view name;      // "bandwidth"
  std::string_view examples;  // shown when the text is wrong
  bool prefixed;              // whether SI/binary prefixes apply
  std::array<Base, 7> bases;  // unused entries have an empty symbol
};

constexpr Kind kDuration = {"duration", "\"1.5 us\", \"2 ms\", \"10 s\"; units ns, us, ms, s, min, h", false,
                            {{{"ns", 1e-9}, {"us", 1e-6}, {"\xC2\xB5s", 1e-6}, {"ms", 1e-3}, {"s", 1.0}, {"min", 60.0}, {"h", 3600.0}}}};
constexpr Kind kBytes = {"byte amount", "\"80 GiB\", \"1.5 MB\", \"800 Gbit\"", true,
                         {{{"B", 1.0}, {"bit", 0.125}, {"b", 0.125}, {}, {}, {}, {}}}};
constexpr Kind kBandwidth = {"bandwidth", "\"400 Gb/s\", \"900 GB/s\", \"25 GBps\"", true,
                             {{{"B/s", 1.0}, {"Bps", 1.0}, {"bit/s", 0.125}, {"b/s", 0.125}, {"bps", 0.125}, {}, {}}}};
constexpr Kind kFlops = {"FLOP amount", "\"3.2 PFLOP\", \"1e12 FLOPs\"", true,
                         {{{"FLOP", 1.0}, {"FLOPs", 1.0}, {"flop", 1.0}, {}, {}, {}, {}}}};
constexpr Kind kFlopRate = {"FLOP rate", "\"989 TFLOP/s\", \"989 TFLOPS\"", true,
                            {{{"FLOP/s", 1.0}, {"FLOPS", 1.0}, {"FLOPs/s", 1.0}, {"flop/s", 1.0}, {}, {}, {}}}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<double> unit_factor(const Kind& kind, std::string_view unit) {
  if (!kind.prefixed) {
    for (const Base& base : kind.bases) {
      if (!base.symbol.empty() && unit == base.symbol) return base.factor;
    }
    return std::nullopt;
  }
  for (const Base& base : kind.bases) {
    if (base.symbol.empty() || !unit.ends_with(base.symbol)) continue;
    const std::string_view prefix = unit.substr(0, unit.size() - base.symbol.size());
    for (const Prefix& p : kPrefixes) {
      if (prefix == p.symbol) return p.factor * base.factor;
    }
  }
  return std::nullopt;
}

// The value of `text` in the SI unit of `kind`.
double parse_quantity(std::string_view text, const Kind& kind, InputLocation at) {
  const auto fail = [&](std::string_view problem) -> double {
    throw InputError(std::string(at.source), std::string(at.where),
                     fmt::format("bad {} {}: {}; expected e.g. {}", kind.name, quote(text), problem,
                                 kind.examples));
  };
  const std::string_view body = trim(text);
  if (body.empty()) return fail("it is empty");
  double number = 0.0;
  const auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), number);
  if (ec != std::errc() || !std::isfinite(number)) return fail("it does not start with a finite number");
  if (number < 0.0) return fail("it is negative");
  const std::string_view unit = trim(body.substr(static_cast<std::size_t>(end - body.data())));
  if (unit.empty()) return fail("the unit is missing");
  const std::optional<double> factor = unit_factor(kind, unit);
  if (!factor) return fail(fmt::format("unknown unit {}", quote(unit)));
  return number * *factor;
}

}  // namespace

Duration parse_duration(std::string_view text, InputLocation at) {
  const double ns = parse_quantity(text, kDuration, at) * 1e9;
  const double whole = std::nearbyint(ns);
  if (!(ns < 9.2e18)) {
    throw InputError(std::string(at.source), std::string(at.where),
                     fmt::format("bad duration {}: it exceeds the 292-year range of the clock", quote(text)));
  }
  // Simulated time is whole nanoseconds; a finer value would be silently rounded.
  if (std::fabs(ns - whole) > 1e-6 * std::max(1.0, whole)) {
    throw InputError(std::string(at.source), std::string(at.where),
                     fmt::format("bad duration {}: it is not a whole number of nanoseconds", quote(text)));
  }
  return Duration::nanoseconds(static_cast<std::int64_t>(whole));
}

Bytes parse_bytes(std::string_view text, InputLocation at) { return Bytes(parse_quantity(text, kBytes, at)); }
BytesPerSecond parse_bandwidth(std::string_view text, InputLocation at) {
  return BytesPerSecond(parse_quantity(text, kBandwidth, at));
}
Flops parse_flops(std::string_view text, InputLocation at) { return Flops(parse_quantity(text, kFlops, at)); }
FlopsPerSecond parse_flop_rate(std::string_view text, InputLocation at) {
  return FlopsPerSecond(parse_quantity(text, kFlopRate, at));
}

}  // namespace orrery::sim
