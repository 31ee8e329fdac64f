// Simulated time and physical quantities as strong types. Time is an exact int64 count of
// nanoseconds; amounts and rates are doubles whose algebra allows only what makes sense.
//   Duration d = Bytes(1 << 20) / BytesPerSecond(50e9);   // rounds up: 20972 ns
//   Time t = Time::zero() + d;  Bytes b = BytesPerSecond(50e9) * d;
#pragma once

#include <compare>
#include <concepts>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

namespace orrery::sim {

// A time beyond the clock's range (int64 nanoseconds, about 292 years): inputs too large or
// rates too small, not a bug of ours. Whoever knows which input it came from turns it into an
// InputError naming that input; left alone it reaches the user as an internal error.
class DurationOverflow : public std::overflow_error {
 public:
  using std::overflow_error::overflow_error;
};

namespace detail {
[[noreturn]] void duration_overflow(std::string_view what);
// Checked int64 arithmetic for the clock: an overflow throws DurationOverflow, never wraps.
constexpr std::int64_t add_ns(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) duration_overflow("a sum of times");
  return r;
}
constexpr std::int64_t sub_ns(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) duration_overflow("a difference of times");
  return r;
}
constexpr std::int64_t mul_ns(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) duration_overflow("a multiple of a duration");
  return r;
}
}  // namespace detail

class Duration {
 public:
  constexpr Duration() = default;
  static constexpr Duration nanoseconds(std::int64_t n) { return Duration(n); }
  static constexpr Duration microseconds(std::int64_t n) { return Duration(detail::mul_ns(n, 1'000)); }
  static constexpr Duration milliseconds(std::int64_t n) { return Duration(detail::mul_ns(n, 1'000'000)); }
  static constexpr Duration seconds(std::int64_t n) { return Duration(detail::mul_ns(n, 1'000'000'000)); }
  static constexpr Duration zero() { return Duration(0); }
  // Longer than any simulated run (292 years); used as "never".
  static constexpr Duration max() { return Duration(std::numeric_limits<std::int64_t>::max()); }

  constexpr std::int64_t ns() const { return ns_; }
  constexpr double to_seconds() const { return static_cast<double>(ns_) * 1e-9; }

  constexpr Duration operator-() const { return Duration(-ns_); }
  constexpr Duration& operator+=(Duration o) { ns_ = detail::add_ns(ns_, o.ns_); return *this; }
  constexpr Duration& operator-=(Duration o) { ns_ = detail::sub_ns(ns_, o.ns_); return *this; }
  friend constexpr Duration operator+(Duration a, Duration b) { return Duration(detail::add_ns(a.ns_, b.ns_)); }
  friend constexpr Duration operator-(Duration a, Duration b) { return Duration(detail::sub_ns(a.ns_, b.ns_)); }
  // Scaling takes integers only: a double factor would hide a rounding decision.
  template <std::integral I>
  friend constexpr Duration operator*(Duration a, I k) { return Duration(detail::mul_ns(a.ns_, static_cast<std::int64_t>(k))); }
  template <std::integral I>
  friend constexpr Duration operator*(I k, Duration a) { return Duration(detail::mul_ns(a.ns_, static_cast<std::int64_t>(k))); }
  // Integer division truncates, as for int64.
  template <std::integral I>
  friend constexpr Duration operator/(Duration a, I k) { return Duration(a.ns_ / static_cast<std::int64_t>(k)); }
  // The ratio of two durations is a plain number.
  friend constexpr double operator/(Duration a, Duration b) {
    return static_cast<double>(a.ns_) / static_cast<double>(b.ns_);
  }
  friend constexpr auto operator<=>(Duration, Duration) = default;

 private:
  constexpr explicit Duration(std::int64_t ns) : ns_(ns) {}
  std::int64_t ns_ = 0;
};

// A point on the simulated clock, in nanoseconds since the simulation began.
class Time {
 public:
  constexpr Time() = default;
  static constexpr Time zero() { return Time(0); }
  static constexpr Time from_ns(std::int64_t ns) { return Time(ns); }
  // After every event: the time of something that never happens.
  static constexpr Time max() { return Time(std::numeric_limits<std::int64_t>::max()); }

  constexpr std::int64_t ns() const { return ns_; }
  constexpr Duration since_start() const { return Duration::nanoseconds(ns_); }

  constexpr Time& operator+=(Duration d) { ns_ = detail::add_ns(ns_, d.ns()); return *this; }
  friend constexpr Time operator+(Time t, Duration d) { return Time(detail::add_ns(t.ns_, d.ns())); }
  friend constexpr Time operator+(Duration d, Time t) { return Time(detail::add_ns(t.ns_, d.ns())); }
  friend constexpr Time operator-(Time t, Duration d) { return Time(detail::sub_ns(t.ns_, d.ns())); }
  friend constexpr Duration operator-(Time a, Time b) { return Duration::nanoseconds(detail::sub_ns(a.ns_, b.ns_)); }
  friend constexpr auto operator<=>(Time, Time) = default;

 private:
  constexpr explicit Time(std::int64_t ns) : ns_(ns) {}
  std::int64_t ns_ = 0;
};

// An amount or a rate of one dimension. Same-dimension sums, scaling by plain numbers and
// same-dimension ratios are allowed; the cross-dimension algebra is spelled out below.
template <class Tag>
class Quantity {
 public:
  constexpr Quantity() = default;
  constexpr explicit Quantity(double value) : value_(value) {}
  constexpr double value() const { return value_; }

  constexpr Quantity operator-() const { return Quantity(-value_); }
  constexpr Quantity& operator+=(Quantity o) { value_ += o.value_; return *this; }
  constexpr Quantity& operator-=(Quantity o) { value_ -= o.value_; return *this; }
  friend constexpr Quantity operator+(Quantity a, Quantity b) { return Quantity(a.value_ + b.value_); }
  friend constexpr Quantity operator-(Quantity a, Quantity b) { return Quantity(a.value_ - b.value_); }
  friend constexpr Quantity operator*(Quantity a, double k) { return Quantity(a.value_ * k); }
  friend constexpr Quantity operator*(double k, Quantity a) { return Quantity(a.value_ * k); }
  friend constexpr Quantity operator/(Quantity a, double k) { return Quantity(a.value_ / k); }
  friend constexpr double operator/(Quantity a, Quantity b) { return a.value_ / b.value_; }
  friend constexpr auto operator<=>(Quantity, Quantity) = default;

 private:
  double value_ = 0.0;
};

struct BytesTag {};
struct FlopsTag {};
struct BytesPerSecondTag {};
struct FlopsPerSecondTag {};
using Bytes = Quantity<BytesTag>;
using Flops = Quantity<FlopsTag>;
using BytesPerSecond = Quantity<BytesPerSecondTag>;
using FlopsPerSecond = Quantity<FlopsPerSecondTag>;

// `ns` nanoseconds rounded up to a whole Duration. A value within 1e-14 (relative) of an
// integer is that integer: 1000 B at 1 GB/s is 1000 ns, not 1001, whatever the last bit of
// the division. Beyond the clock's range (including +infinity, from a rate that rounds to
// nothing) is DurationOverflow; negative or NaN values are our own bug (InternalError).
Duration ceil_duration_ns(double ns);

// The time `amount` takes at `rate` (per second), rounded up; a rate of zero or less is our bug.
Duration duration_at_rate(double amount, double rate);
inline Duration operator/(Bytes b, BytesPerSecond r) { return duration_at_rate(b.value(), r.value()); }
inline Duration operator/(Flops f, FlopsPerSecond r) { return duration_at_rate(f.value(), r.value()); }
inline BytesPerSecond operator/(Bytes b, Duration d) { return BytesPerSecond(b.value() / d.to_seconds()); }
inline FlopsPerSecond operator/(Flops f, Duration d) { return FlopsPerSecond(f.value() / d.to_seconds()); }
inline Bytes operator*(BytesPerSecond r, Duration d) { return Bytes(r.value() * d.to_seconds()); }
inline Bytes operator*(Duration d, BytesPerSecond r) { return r * d; }
inline Flops operator*(FlopsPerSecond r, Duration d) { return Flops(r.value() * d.to_seconds()); }
inline Flops operator*(Duration d, FlopsPerSecond r) { return r * d; }

// Human-readable forms for messages and tables ("1.500 ms", "80 GiB", "50 GB/s").
// Reports carry exact numbers (integer nanoseconds), not these strings.
std::string to_string(Duration d);
std::string to_string(Time t);
std::string to_string(Bytes b);
std::string to_string(Flops f);
std::string to_string(BytesPerSecond r);
std::string to_string(FlopsPerSecond r);

namespace literals {
constexpr Duration operator""_ns(unsigned long long n) { return Duration::nanoseconds(static_cast<std::int64_t>(n)); }
constexpr Duration operator""_us(unsigned long long n) { return Duration::microseconds(static_cast<std::int64_t>(n)); }
constexpr Duration operator""_ms(unsigned long long n) { return Duration::milliseconds(static_cast<std::int64_t>(n)); }
constexpr Duration operator""_s(unsigned long long n) { return Duration::seconds(static_cast<std::int64_t>(n)); }
}  // namespace literals

}  // namespace orrery::sim
