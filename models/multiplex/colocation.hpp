// Spatial GPU sharing of a compound model's modules (Mosaic/Apollo, arXiv 2605.18710): each
// module runs as replicas ("pieces") on GPUs under an SM quota and a memory quota, several
// pieces per GPU; the modules form a pipeline that every micro-batch passes through.
//   ColocationProblem p = colocation_problem(model, samples, gpu, cost, /*gpus=*/8, "s.json");
//   ColocationResult r = evaluate_colocation(p, placement);   // r.samples_per_s
// The speed model (every assumption is one here, stated with its reason):
//   - a module's micro-batch on a whole GPU takes step_s (the multimodal layer costs, forward
//     and backward, of models/multimodal: the kernel cost model's roofline);
//   - under an SM quota q (MPS's active-thread percentage: q x SMs usable), its compute part
//     stretches by wave quantisation: its kernels expose `tiles` 128x128 output tiles (its
//     narrowest GEMM, the attention output projection over the micro-batch's tokens), run in
//     ceil(tiles / SMs(q)) waves instead of ceil(tiles / SMs); a small module that leaves SMs idle
//     loses nothing until its quota falls below what it fills (why colocation pays);
//   - its memory-bound part (HBM bytes over bandwidth) stretches by max(1, s_bw / q): a fraction
//     s_bw of the SMs already saturates HBM (assumed 0.5, ColocationModel::bandwidth_sm_share);
//   - pieces on one GPU share its HBM: when their bandwidth demands (each one's bytes over its
//     time alone, as a fraction of the peak) sum to D > 1, every memory-bound part stretches by D;
//   - each extra co-resident piece costs `colocation_penalty` (L2 cache and scheduler
//     interference; assumed 3%, not measured here).
// At q = 1 alone a module runs at exactly step_s. Not modelled: pipeline fill and drain, the
// activations sent between modules, data-parallel gradient all-reduces of replicated modules.
#pragma once

#include "models/hardware/cost.hpp"
#include "models/multimodal/multimodal.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::models {

struct ColocModule {
  std::string name;
  double step_s = 0;          // one micro-batch, forward and backward, on a whole GPU
  std::int64_t tiles = 1;     // output tiles its kernels expose (see above)
  double hbm_bytes = 0;       // HBM traffic of one micro-batch
  double memory_bytes = 0;    // resident per replica: weights, gradients, Adam states, activations
};

struct ColocationModel {
  int sms = 132;
  double hbm_bandwidth = 3.35e12;  // bytes/s
  double hbm_capacity = 80e9;      // bytes
  double bandwidth_sm_share = 0.5;
  double colocation_penalty = 0.03;
};

struct ColocationProblem {
  std::vector<ColocModule> modules;
  ColocationModel gpu;
  int gpus = 1;
  int micro_batch = 1;      // samples per micro-batch
  std::string source;       // for errors
};

// One replica of a module on a GPU with its quotas, fractions in (0, 1].
// Pieces of a GPU in the same `phase` run at once (spatial multiplexing: their SM quotas sum to at
// most 100%, they contend for HBM). A GPU with several phases runs them in turn (temporal
// multiplexing), every micro-batch through each phase: a turn lasts the sum over phases of each
// phase's slowest piece. A GPU with one phase runs its pieces independently, each at its own rate.
struct ColocPiece {
  int module = 0;
  int gpu = 0;
  double sm = 1;
  double memory = 1;
  int phase = 0;
};
struct ColocPlacement {
  std::vector<ColocPiece> pieces;
};

struct ColocationResult {
  double microbatches_per_s = 0;      // the pipeline's: the slowest module's
  double samples_per_s = 0;
  std::vector<double> module_rate;    // micro-batches/s each module sustains
  std::vector<double> piece_s;        // each piece's micro-batch time beside its neighbours
  int gpus_used = 0;
  int bottleneck = 0;                 // the module with the lowest rate
};

// A module's micro-batch time alone on a GPU under SM quota q in (0, 1].
double quota_time(const ColocModule& m, const ColocationModel& gpu, double q);
// The pipeline's rate under a placement (ORRERY_CHECKs that quotas lie in (0, 1] and sum to at most
// 1 per GPU: check_placement says so to users first).
ColocationResult evaluate_colocation(const ColocationProblem& p, const ColocPlacement& placement);
// InputError naming `where`/<i>/<field> for a quota outside (0, 1], SM quotas of one GPU's phase or
// memory quotas of one GPU summing above 1, a memory quota below the module's need, a GPU outside 0 .. gpus-1.
void check_placement(const ColocationProblem& p, const ColocPlacement& placement, std::string_view source, std::string_view where);

// The modules of `model` profiled on one micro-batch of `samples` with `cost` on `gpu`.
ColocationProblem colocation_problem(const MultimodalModel& model, const std::vector<MultimodalSample>& samples, const GpuSpec& gpu,
                                     const CostModel& cost, int gpus, std::string source);

// The decision: a placement of every module (at least one piece each).
class ColocationPolicy {
 public:
  virtual ~ColocationPolicy() = default;
  virtual ColocPlacement place(const ColocationProblem& p) const = 0;
};

}  // namespace orrery::models
