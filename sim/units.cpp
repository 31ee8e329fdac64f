#include "sim/units.hpp"

#include "sim/error.hpp"

#include <array>
#include <cmath>
#include <utility>

namespace orrery::sim {

namespace detail {
void duration_overflow(std::string_view what) {
  throw DurationOverflow(fmt::format("{} passes the clock's range of 292 years", what));
}
}  // namespace detail

Duration ceil_duration_ns(double ns) {
  ORRERY_CHECK(!std::isnan(ns) && ns >= 0.0, "duration of {} ns is negative or not a number", ns);
  // 9.2e18 ns is the int64 limit (292 years).
  if (!(ns < 9.2e18)) {
    throw DurationOverflow(fmt::format("a duration of {:.3g} s passes the clock's range of 292 years", ns * 1e-9));
  }
  const double nearest = std::nearbyint(ns);
  if (std::fabs(ns - nearest) <= 1e-14 * std::max(1.0, nearest)) {
    return Duration::nanoseconds(static_cast<std::int64_t>(nearest));
  }
  return Duration::nanoseconds(static_cast<std::int64_t>(std::ceil(ns)));
}

Duration duration_at_rate(double amount, double rate) {
  ORRERY_CHECK(rate > 0, "an amount of {} at a rate of {} per second", amount, rate);
  return ceil_duration_ns(amount / rate * 1e9);
}

namespace {

// "1.500" -> "1.5", "80.000" -> "80".
std::string trimmed(double value) {
  std::string s = fmt::format("{:.3f}", value);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

// Scales `value` by the largest step (1000 or 1024) not above it and appends that prefix.
std::string scaled(double value, double step, const std::array<const char*, 7>& prefixes,
                   std::string_view unit) {
  std::size_t i = 0;
  double magnitude = std::fabs(value);
  while (i + 1 < prefixes.size() && magnitude >= step) {
    magnitude /= step;
    value /= step;
    ++i;
  }
  return fmt::format("{} {}{}", trimmed(value), prefixes[i], unit);
}

constexpr std::array<const char*, 7> kDecimal = {"", "k", "M", "G", "T", "P", "E"};
constexpr std::array<const char*, 7> kBinary = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};

}  // namespace

std::string to_string(Duration d) {
  const std::int64_t ns = d.ns();
  const std::int64_t magnitude = ns < 0 ? -ns : ns;
  if (d == Duration::max()) return "never";
  if (magnitude < 1'000) return fmt::format("{} ns", ns);
  if (magnitude < 1'000'000) return fmt::format("{:.3f} us", static_cast<double>(ns) / 1e3);
  if (magnitude < 1'000'000'000) return fmt::format("{:.3f} ms", static_cast<double>(ns) / 1e6);
  return fmt::format("{:.3f} s", static_cast<double>(ns) / 1e9);
}

std::string to_string(Time t) { return t == Time::max() ? "never" : to_string(t.since_start()); }
std::string to_string(Bytes b) { return scaled(b.value(), 1024.0, kBinary, "B"); }
std::string to_string(Flops f) { return scaled(f.value(), 1000.0, kDecimal, "FLOP"); }
std::string to_string(BytesPerSecond r) { return scaled(r.value(), 1000.0, kDecimal, "B/s"); }
std::string to_string(FlopsPerSecond r) { return scaled(r.value(), 1000.0, kDecimal, "FLOP/s"); }

}  // namespace orrery::sim
