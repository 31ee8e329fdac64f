// The cost model a step scenario asks for: its calibration curves when it names them, else the
// roofline with the GPU type's training parameters. Shared by `orrery step` and `orrery compare`.
#pragma once

#include "models/cost.hpp"
#include "traces/step_json.hpp"

#include <memory>

namespace orrery::cli {

std::unique_ptr<models::CostModel> step_cost_model(const traces::StepScenarioFile& file);

}  // namespace orrery::cli
