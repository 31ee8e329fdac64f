// GPU multiplexing policies, registered by name.
// Modules of a compound model sharing GPUs (models/multiplex/colocation.hpp has the interface):
//   one-per-gpu   the baseline: every module on whole GPUs, one module per GPU; GPUs beyond one
//                 per module go one at a time to the module with the lowest rate (data-parallel
//                 replicas)
//   temporal      the baseline Mosaic's abstract names: every GPU a replica of the whole model,
//                 running one module at a time, in turn (temporal multiplexing)
//   mosaic        Mosaic/Apollo (arXiv 2605.18710): the performance model of colocation.hpp plus
//                 heuristics, the best of three plan shapes under that model (and of the two
//                 baselines' plans): (1) temporal-spatial phases on replicas of the whole model:
//                 modules start in turn, and the pair of phases whose merging (running at once,
//                 quotas by a binary search on the phase's time) shortens the turn most is merged,
//                 while one does; (2) every module at once on every GPU, quotas by a binary search
//                 on the rate; (3) a binary search on the pipeline's rate, where each module needs
//                 floor(rate x step) whole GPUs and one fractional piece at the smallest SM quota
//                 (a multiple of `quota_step`) that covers the rest; pieces packed first-fit
//                 decreasing onto shared GPUs (at most `max_per_gpu` each) under SM and memory
//                 quotas, a GPU accepted only if its pieces still keep their rates beside each
//                 other (HBM contention); then spare quota goes, a step at a time, to the
//                 bottleneck module while the rate improves
// Several LoRA tasks on one backbone (models/multiplex/peft.hpp has the interface):
//   per-task      HF-PEFT / NeMo style: one instance (backbone copy) per task, run in turn on the
//                 GPUs; each micro-batch padded to its longest sequence
//   slora         S-LoRA-style shared backbone (SL-PEFT): one copy, micro-batch k of every task fused
//                 into one, padded to the fused micro-batch's longest sequence
//   muxtune       MuxTune (arXiv 2603.02885): one copy; sequences chunk-aligned (each rounded up to a
//                 multiple of `chunk` tokens, no padding to the longest) and every task's sequences
//                 spread, longest first, by least tokens over as many fused micro-batches as hold
//                 `tokens` each (spatial fusion; default the largest micro-batch a task runs
//                 alone, so activations stay an instance's), run interleaved through one pipeline
//                 (temporal: one fill for all tasks)
#pragma once

#include "models/multiplex/colocation.hpp"
#include "models/multiplex/peft.hpp"
#include "sim/registry.hpp"

namespace orrery::policies {

const sim::Registry<models::ColocationPolicy>& colocation_policies();
const sim::Registry<models::PeftPolicy>& peft_policies();

}  // namespace orrery::policies
