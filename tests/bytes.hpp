// Byte counts the tests write sizes in.
#pragma once

namespace orrery::testing {

inline constexpr double kGiB = 1073741824.0;

}  // namespace orrery::testing
