// Summary statistics the reports print: percentiles of a run's step times, JCTs, ...
//   const double p99 = reports::percentile(step_seconds, 0.99);
#pragma once

#include <vector>

namespace orrery::reports {

// Linear interpolation between order statistics (q in [0, 1]); `v` must not be empty.
double percentile(std::vector<double> v, double q);

}  // namespace orrery::reports
