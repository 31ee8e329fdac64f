// Relative comparison of floating-point results. doctest::Approx passes when
// |a - b| < epsilon x (scale + max(|a|, |b|)) with scale 1, so for values well below 1 (the
// seconds of a collective, a fraction, a rate in TB/s) the 1 dominates and a check meant as
// "within 5%" allows 0.05 in absolute terms: it cannot fail. This one has scale 0: the
// tolerance is relative to the values compared (an expected 0 needs an exact 0; its scale is
// the smallest normal double, so that 0 == Approx(0) still holds).
//   CHECK(r.time_s == orrery::testing::Approx(expected).epsilon(0.01));
#pragma once

#include <doctest/doctest.h>

#include <limits>

namespace orrery::testing {

inline doctest::Approx Approx(double value) { return doctest::Approx(value).scale(std::numeric_limits<double>::min()); }

}  // namespace orrery::testing
