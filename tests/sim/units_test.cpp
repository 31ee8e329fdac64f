#include "sim/error.hpp"
#include "sim/units.hpp"
#include "approx.hpp"

#include <doctest/doctest.h>

using namespace orrery::sim;
using namespace orrery::sim::literals;

// The algebra allows only what makes physical sense.
template <class A, class B>
concept Addable = requires(A a, B b) { a + b; };
template <class A, class B>
concept Multipliable = requires(A a, B b) { a * b; };
template <class A, class B>
concept Divisible = requires(A a, B b) { a / b; };

static_assert(Addable<Bytes, Bytes>);
static_assert(!Addable<Bytes, Flops>);
static_assert(!Addable<Bytes, double>);
static_assert(!Addable<Time, Time>, "two instants do not add");
static_assert(Addable<Time, Duration>);
static_assert(!Multipliable<Bytes, Bytes>);
static_assert(!Multipliable<Duration, Duration>);
static_assert(!Multipliable<Duration, double>, "scaling a Duration by a double would hide rounding");
static_assert(std::is_same_v<decltype(Bytes(1) / BytesPerSecond(1)), Duration>);
static_assert(std::is_same_v<decltype(Flops(1) / FlopsPerSecond(1)), Duration>);
static_assert(std::is_same_v<decltype(Bytes(1) / Duration::seconds(1)), BytesPerSecond>);
static_assert(std::is_same_v<decltype(BytesPerSecond(1) * Duration::seconds(1)), Bytes>);
static_assert(std::is_same_v<decltype(Bytes(1) / Bytes(1)), double>);
static_assert(std::is_same_v<decltype(Time() - Time()), Duration>);
static_assert(!Divisible<Bytes, FlopsPerSecond>);
static_assert(!Divisible<Flops, BytesPerSecond>);
static_assert(sizeof(Duration) == 8 && sizeof(Time) == 8);

TEST_CASE("duration constructors and arithmetic are exact integer nanoseconds") {
  CHECK(Duration::microseconds(3).ns() == 3'000);
  CHECK(Duration::milliseconds(2).ns() == 2'000'000);
  CHECK(Duration::seconds(5).ns() == 5'000'000'000);
  CHECK(1500_ns + 2_us == 3500_ns);
  CHECK(3_ms - 1_ms == 2_ms);
  CHECK(2_ms * 3 == 6_ms);
  CHECK(7_ns / 2 == 3_ns);  // truncating, as int64
  CHECK(3_ms / 1_ms == orrery::testing::Approx(3.0));
  const Time t = Time::zero() + 5_ms;
  CHECK(t - Time::zero() == 5_ms);
  CHECK((t - 2_ms).ns() == 3'000'000);
  CHECK(Time::zero() < t);
  CHECK(t < Time::max());
}

TEST_CASE("bytes over bandwidth rounds up to whole nanoseconds") {
  // 1000 B at 1 GB/s is exactly 1 us: no spurious round-up from the last bit of the division.
  CHECK(Bytes(1000) / BytesPerSecond(1e9) == 1_us);
  // 1 B at 3 B/s is 333333333.33 ns -> 333333334 ns.
  CHECK((Bytes(1) / BytesPerSecond(3)).ns() == 333'333'334);
  // 1 MiB at 400 Gb/s (50e9 B/s) is 20971.52 ns -> 20972 ns.
  CHECK((Bytes(1 << 20) / BytesPerSecond(50e9)).ns() == 20'972);
  CHECK(Bytes(0) / BytesPerSecond(1e9) == Duration::zero());
  // 989 TFLOP at 989 TFLOP/s is one second.
  CHECK(Flops(989e12) / FlopsPerSecond(989e12) == 1_s);
  // 0.1 + 0.2 style error must not push an exact 3 ns to 4 ns.
  CHECK(Bytes(0.1 + 0.2) / BytesPerSecond(0.1e9) == 3_ns);
}

TEST_CASE("rates times durations give amounts back") {
  CHECK((BytesPerSecond(50e9) * 2_ms).value() == orrery::testing::Approx(1e8));
  CHECK((2_ms * FlopsPerSecond(1e12)).value() == orrery::testing::Approx(2e9));
  CHECK((Bytes(1e9) / 1_s).value() == orrery::testing::Approx(1e9));
  CHECK((Flops(3e12) / 2_s).value() == orrery::testing::Approx(1.5e12));
}

TEST_CASE("a negative or infinite duration is our bug, not a value") {
  CHECK_THROWS_AS(ceil_duration_ns(-1.0), InternalError);
  CHECK_THROWS_AS(Bytes(1) / BytesPerSecond(0), InternalError);
}

TEST_CASE("human-readable forms") {
  CHECK(to_string(999_ns) == "999 ns");
  CHECK(to_string(1500_ns) == "1.500 us");
  CHECK(to_string(23300_us) == "23.300 ms");
  CHECK(to_string(90_s) == "90.000 s");
  CHECK(to_string(Duration::max()) == "never");
  CHECK(to_string(Bytes(80.0 * (1ull << 30))) == "80 GiB");
  CHECK(to_string(Bytes(1536)) == "1.5 KiB");
  CHECK(to_string(BytesPerSecond(50e9)) == "50 GB/s");
  CHECK(to_string(FlopsPerSecond(989e12)) == "989 TFLOP/s");
  CHECK(to_string(Flops(3.2e15)) == "3.2 PFLOP");
}
