#include "reports/human.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <string>

namespace orrery::reports::human {

namespace {

// `v` rounded to three significant digits.
double three_digits(double v) {
  if (v == 0) return 0;
  const double step = std::pow(10.0, std::floor(std::log10(std::fabs(v))) - 2);
  return std::round(v / step) * step;
}

}  // namespace

std::string count(double value) {
  if (!std::isfinite(value)) return fmt::format("{}", value);
  constexpr std::array<const char*, 5> kSuffix = {"", "k", "M", "G", "T"};
  double magnitude = std::fabs(value);
  std::size_t i = 0;
  // Rounded first, so that 999,950 reads "1.00M" rather than "1000k".
  while (i + 1 < kSuffix.size() && three_digits(magnitude) >= 1000) {
    magnitude /= 1000;
    ++i;
  }
  const double shown = std::copysign(magnitude, value);
  if (i == 0) return magnitude >= 100 ? fmt::format("{:.0f}", shown) : fmt::format("{:.3g}", shown);
  return fmt::format("{:.3g}{}", shown, kSuffix[i]);
}

std::string rate(double value, std::string_view unit) { return fmt::format("{} {}", count(value), unit); }

std::string gib(double bytes) { return fmt::format("{:.1f} GiB", bytes / 1073741824.0); }

std::string percent(double fraction) { return fmt::format("{:.1f}%", 100 * fraction); }

std::string span(double s) {
  if (!std::isfinite(s)) return fmt::format("{} s", s);
  const double a = std::fabs(s);
  if (a < 10) return fmt::format("{:.3g} s", s);
  if (a < 120) return fmt::format("{:.0f} s", s);
  if (a < 2 * 3600) return fmt::format("{:.1f} min", s / 60);
  if (a < 48 * 3600) return fmt::format("{:.1f} h", s / 3600);
  return fmt::format("{:.1f} days", s / 86400);
}

std::string metric(std::string_view key, double value) {
  const std::string_view leaf = key.substr(key.rfind('.') == std::string_view::npos ? 0 : key.rfind('.') + 1);
  const auto ends = [&](std::string_view suffix) { return leaf.size() >= suffix.size() && leaf.substr(leaf.size() - suffix.size()) == suffix; };
  if (ends("_bytes")) return gib(value);
  if (ends("_per_s")) return rate(value, std::string(leaf.substr(0, leaf.size() - 6)) + "/s");
  if (ends("_s")) return std::fabs(value) < 120 ? fmt::format("{:.3g} s", value) : span(value);  // steps side by side keep 3 digits
  if (leaf == "mfu" || ends("_fraction") || ends("_utilization") || ends("_share")) return percent(value);
  return fmt::format("{:.6g}", value);
}

}  // namespace orrery::reports::human
