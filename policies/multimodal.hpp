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
// Video DiT attention policies, registered by name (compared by `orrery compare --policies
// dense,dsv` on a multimodal scenario with a video DiT):
//   dense   full attention; context parallelism as the scenario's attention/cp_mode says
//           (hybrid: per layer the cheaper of Ulysses-style head parallelism and ring attention)
//   dsv     DSV (arXiv 2502.07590): per-head block-sparse attention with its low-rank
//           estimator, and its hybrid sparsity-aware context parallelism (heads dealt by LPT on
//           their kept work, or a ring that moves only the kept key-value blocks, whichever
//           costs less per layer); the heads' sparsities from the scenario's attention, or
//           `sparsity` +- `spread` spread evenly over the heads
#pragma once

#include "models/multimodal/multimodal_pipeline.hpp"
#include "sim/registry.hpp"

namespace orrery::policies {

const sim::Registry<models::MultimodalPipelinePolicy>& multimodal_pipelines();
const sim::Registry<models::DitAttentionPolicy>& dit_attentions();

}  // namespace orrery::policies
