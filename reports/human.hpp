// Figures for people on the console: "1.23M tokens/s", "71.3 GiB", "44.7%", "5.2 h". Only the
// summary printers use these; the JSON reports keep the exact values.
//   out << fmt::format("throughput {}\n", human::rate(r.tokens_per_s, "tokens/s"));  // 1.23M tokens/s
#pragma once

#include <string>
#include <string_view>

namespace orrery::reports::human {

// Three significant digits and a k/M/G/T suffix: 1234567 -> "1.23M"; below 1000 as it is ("950").
std::string count(double value);
// count() and the unit: rate(1234567, "tokens/s") -> "1.23M tokens/s".
std::string rate(double value, std::string_view unit);
// Bytes in GiB with one decimal: "71.3 GiB" (sim::to_string(Bytes) keeps three, for exactness).
std::string gib(double bytes);
// A fraction as a percentage with one decimal: 0.447 -> "44.7%".
std::string percent(double fraction);
// A length of time in the unit that reads best: "0.35 s", "42 s", "12.5 min", "5.2 h", "3.1 days".
std::string span(double seconds);
// A report metric by its key's unit suffix (flattened keys as sweeps show them): "..._bytes" in
// GiB; "..._per_s" as a rate of what precedes it ("tokens_per_s" -> "1.23M tokens/s"); "..._s" in
// seconds to three digits below two minutes, as a span above; fractions ("mfu", "..._fraction",
// "..._utilization", "..._share") as percentages; anything else to six significant digits.
std::string metric(std::string_view key, double value);

}  // namespace orrery::reports::human
