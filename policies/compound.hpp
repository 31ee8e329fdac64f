// Compound and disaggregated multimodal policies, registered among the multimodal pipeline
// policies (policies/multimodal.hpp's multimodal_pipelines()):
//   megascale-omni  MegaScale-Omni (arXiv 2605.08962): the encoders on a rank set of their own
//                   (short items data-parallel, long ones under sequence parallelism), the LLM on
//                   the rest with its own tp x pp and fewer replicas; the data loader reorders
//                   samples within groups of replicas (decentralised), the encoders' outputs are
//                   resharded straight to the LLM ranks that own them over the fabric, and one
//                   joint pipeline runs encoder, reshard and LLM stages side by side
//   maestro         Maestro (arXiv 2605.10501): the workload as a section graph (an MLLM's
//                   modality sections, a distillation's teacher and student), each section on its
//                   own GPUs with its own tp, dp and micro-batch size; wavefront scheduling groups
//                   samples by the sections they need so that independent sections run at once
//                   while every cross-section dependency holds
//   auto omni = policies::multimodal_pipelines().create("megascale-omni", {{"encoder_gpus", std::int64_t{8}}}, ctx);
#pragma once

#include "models/multimodal/multimodal_pipeline.hpp"
#include "sim/registry.hpp"

namespace orrery::policies {

// Adds megascale-omni and maestro to a registry of multimodal pipeline policies.
void add_compound_pipelines(sim::Registry<models::MultimodalPipelinePolicy>& registry);

}  // namespace orrery::policies
