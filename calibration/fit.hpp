// Fitting cost curves from a profile. Per (kind, dtype, causal) the measured points are placed
// on the tensor grid of their distinct feature values (models::kernel_features), in log space:
//  - a least-squares fit (Eigen) ln t = c0 + sum_i c_i ln x_i + sum_i q_i (ln x_i)^2 fills grid
//    cells nobody measured, and reports its leave-one-out error (closed form, via the hat matrix);
//  - cells are raised to the running maximum along every axis, so that the curve never predicts
//    less time for a larger size (monotone where the physics is), and the repairs are counted;
//  - the interpolant's leave-one-out error predicts each interior measured cell from its grid
//    neighbours along every axis (what interpolation would have said without that point).
//   models::CostCurves curves = fit_profile(load_profile("h200.json"), "h200.json");
#pragma once

#include "calibration/profile.hpp"
#include "models/hardware/cost.hpp"

#include <string>

namespace orrery::calibration {

models::CostCurves fit_profile(const Profile& profile, const std::string& source);

// A table of the curves' fit quality (one row per curve), for the CLI and reports.
std::string fit_report(const models::CostCurves& curves);

}  // namespace orrery::calibration
