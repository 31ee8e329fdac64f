// Pipeline schedules, registered by name (models/training/pipeline.hpp has the interface and rules):
//   gpipe             all forwards, then all backwards
//   1f1b              PipeDream-flush: warm-up forwards, then one forward / one backward
//   interleaved-1f1b  Megatron's virtual pipeline: chunks per stage, micro-batches in groups of
//                     the stage count (Narayanan et al., SC'21)
//   zb-h1             zero bubble, handcrafted H1 (Qi et al., ICLR'24): backward split into B
//                     (input grads) and W (weight grads); stage i defers its W's by i
//                     micro-batches so that they fill the cool-down bubbles
//   auto sched = pipeline_schedules().create("1f1b", {}, {"scenario.json", "/plan/schedule"});
#pragma once

#include "models/training/pipeline.hpp"
#include "sim/registry.hpp"

namespace orrery::policies {

const sim::Registry<models::PipelineSchedule>& pipeline_schedules();

}  // namespace orrery::policies
