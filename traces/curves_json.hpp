// Cost-curve files (what `orrery calibrate fit` writes and scenarios load as "calibration"):
//   {"schema": "orrery.curves/1", "device": "NVIDIA H200", "source": "profile.json",
//    "metadata": {"cuda": "13.0", ...},
//    "curves": [{"kind": "gemm", "dtype": "bf16", "causal": false, "features": ["m","n","k"],
//                "axes": [[256,1024],[256,1024],[256,1024]], "seconds": [...8 values...],
//                "points": 8, "filled": 0, "repaired": 0, "loo_interpolation_mape": 0.04,
//                "loo_fit_mape": 0.06, "fit_coefficients": [...]}]}
// `seconds` is row-major over the axes, the last axis fastest. Every field is checked on
// reading (kinds, dtypes, feature names, ascending positive axes, one positive time per cell).
#pragma once

#include "models/hardware/cost.hpp"

#include <string>
#include <string_view>

namespace orrery::traces {

inline constexpr std::string_view kCurvesSchema = "orrery.curves/1";

models::CostCurves read_curves(std::string_view json_text, const std::string& source);
models::CostCurves load_curves(const std::string& path);
std::string curves_to_json(const models::CostCurves& curves);
void write_curves(const models::CostCurves& curves, const std::string& path);

}  // namespace orrery::traces
