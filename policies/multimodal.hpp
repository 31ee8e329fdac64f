// Multimodal pipeline policies, registered by name (models/multimodal/multimodal_pipeline.hpp has the
// interface):
//   megatron-1f1b     Megatron-LM: the modules' layers in order (encoder layers counted as
//                     layers, a projector as one), split evenly by count over the stages; fixed
//                     micro-batches of `micro_batch` samples; 1F1B, or with `chunks` > 1
//                     model chunks per stage, Megatron's interleaved 1F1B
//   modality-static   Optimus / nnScaler style: encoders (with their projectors) on their own
//                     stages, the backbone on the rest, stages shared in proportion to the
//                     profiled compute and layers balanced by compute inside each part; 1F1B
//   pipeweaver        PipeWeaver (arXiv 2504.14145): offline, each modality gets K_i x stages
//                     model chunks (K_i in proportion to its profiled latency; chunk c on stage
//                     c mod stages) and the smallest sub-micro-batch that keeps >= 95% of peak
//                     kernel efficiency; online, per batch, ceil(N_i / B_i) sub-micro-batches per
//                     modality and a search over modality orderings and priority styles, each
//                     candidate scheduled greedily (1F1B when a backward is ready, else the
//                     earliest feasible forward) under each stage's activation memory, and run
//                     on the pipeline emulator; the fastest wins
#pragma once

#include "models/multimodal/multimodal_pipeline.hpp"
#include "sim/registry.hpp"

namespace orrery::policies {

const sim::Registry<models::MultimodalPipelinePolicy>& multimodal_pipelines();

}  // namespace orrery::policies
