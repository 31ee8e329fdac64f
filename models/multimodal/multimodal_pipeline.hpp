// Pipelines of multimodal models: op graphs over stages, the emulator that runs them, and the
// shared costing with reuse.
//
// A pipeline program is a set of ops (a forward or backward pass of some layers of one module
// over some samples, on one stage) with dependencies, and per stage the order it runs them in.
// `run_program` executes it: an op starts when its stage is free and every dependency is done,
// plus the point-to-point transfer of the dependency's activations when it ran on another stage.
// `schedule_program` instead decides the order online, greedily (PipeWeaver's stage
// interleaving): whenever a stage is free it runs, among the ops whose inputs are there, a
// backward first when one is ready (1F1B's steady state, which frees activation memory), else
// the forward of highest priority that fits the stage's activation memory; when nothing is
// ready it waits for the earliest op that will be.
//
// Costs go through `ModuleCostCache` (SEMU's reuse): a layer's costs depend only on the
// module and the documents it sees, so identical sub-graphs on other stages (spatial) or in
// other candidates and steps (temporal) are costed once. `reuse = false` costs every op afresh;
// tests check that the results are identical.
#pragma once

#include "models/hardware/cost.hpp"
#include "models/hardware/hardware.hpp"
#include "models/multimodal/multimodal.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace orrery::models {

struct PipeNode {
  int stage = 0;
  bool backward = false;
  double seconds = 0;           // compute (and TP communication) on its stage
  double out_bytes = 0;         // activations (or gradients) it hands to its dependants
  double activation_bytes = 0;  // forward: memory it holds on its stage until its backward runs
  int releases = -1;            // backward: the forward whose activations it frees
  double priority = 0;          // schedule_program: lower runs first among ready forwards
  std::vector<int> deps;
  std::string label;            // "F vision c0 mb3"
};

struct PipeProgram {
  int stages = 1;
  std::vector<PipeNode> ops;
  std::vector<std::vector<int>> order;  // per stage; empty for schedule_program
};

struct PipeSpan {
  int op = 0;
  double start = 0, end = 0;
};

struct PipeRun {
  double makespan = 0;
  std::vector<double> busy;      // per stage
  std::vector<double> peak_memory;  // per stage, activation bytes
  std::vector<PipeSpan> spans;   // in op order
  double bubble_fraction() const;   // mean over stages of 1 - busy / makespan
  double stage_imbalance() const;   // max busy / mean busy
  // The first stage whose peak activations exceed its cap (caps of 0 are unlimited), or -1.
  int over_memory(const std::vector<double>& caps) const;
};

// InputError when a run's activations do not fit the memory left on a stage.
void check_memory(const PipeRun& run, const std::vector<double>& caps, std::string_view policy, const std::string& source);

// Executes the program's per-stage orders; InternalError on a deadlock (an order that
// contradicts the dependencies). `p2p_bytes_per_s`: the link between stages (0: free).
PipeRun run_program(const PipeProgram& program, double p2p_bytes_per_s);
// Decides the per-stage orders greedily (see above) and runs them; fills `program.order`.
// `memory_cap` per stage (0: none): a forward waits while its activations do not fit; when no
// op can run otherwise, the highest-priority forward runs anyway and the run's peak memory
// shows the overflow.
PipeRun schedule_program(PipeProgram& program, double p2p_bytes_per_s, const std::vector<double>& memory_cap);

// A stage's actions, what a runtime executes (PipeWeaver's output, for extended Megatron): for
// each op in the stage's order, a recv for every input from another stage, the compute, a send
// for every dependant on another stage; then one sync (the step's gradient synchronisation).
// Sends are asynchronous; a recv waits for its send and the transfer.
enum class ActionKind : std::uint8_t { compute, send, recv, sync };
std::string_view to_string(ActionKind);
struct Action {
  ActionKind kind = ActionKind::compute;
  int op = -1;        // compute: the op; send/recv: the op whose output moves
  int peer = -1;      // send/recv: the other stage
  double bytes = 0;   // send/recv
};
using ActionLists = std::vector<std::vector<Action>>;  // per stage
ActionLists action_lists(const PipeProgram& program);
// Executes action lists; gives the same run as run_program on the program they came from.
PipeRun run_actions(const PipeProgram& program, const ActionLists& actions, double p2p_bytes_per_s);
// As JSON: {"stages": [[{"action": "recv", "op": "F vision c0 sub1", "from": 2, "bytes": ...}, ...], ...]}.
std::string action_lists_json(const PipeProgram& program, const ActionLists& actions);

// Per-layer costs of a module over a set of samples, cached by (module, documents).
class ModuleCostCache {
 public:
  // `attention`: the video DiT's (context parallelism, DSV's sparsity); other modules ignore it.
  ModuleCostCache(const MultimodalModel& model, const CostModel& cost, int tp, double nvlink, bool reuse = true, DitAttention attention = {})
      : model_(model), cost_(cost), tp_(tp), nvlink_(nvlink), reuse_(reuse), attention_(std::move(attention)) {}
  const DitAttention& attention() const { return attention_; }
  LayerSeconds layer(int module, const std::vector<MultimodalSample>& samples) const;
  ModuleWork work(int module, const std::vector<MultimodalSample>& samples) const { return module_work(model_, module, samples); }
  std::size_t hits() const { return hits_; }
  std::size_t misses() const { return misses_; }

 private:
  const MultimodalModel& model_;
  const CostModel& cost_;
  int tp_;
  double nvlink_;
  bool reuse_;
  DitAttention attention_;
  mutable std::map<std::pair<int, std::vector<std::int64_t>>, LayerSeconds> cache_;
  mutable std::size_t hits_ = 0, misses_ = 0;
};

// Activation bytes a layer of a module keeps per token until its backward: 34 x hidden / tp
// with sequence parallelism and flash attention (Korthikanti et al. 2022, arXiv 2205.05198,
// Table 2: 34 sbh/t once the attention scores' 5as^2b/t term is gone); frozen modules keep none.
// A video DiT under context parallelism keeps 1/cp of its tokens on each GPU.
double activation_bytes_per_token(const ModuleSpec& module, int tp, int cp = 1);

// A section of a compound workload (Maestro, policies/compound.hpp): modules on their own GPUs,
// with their own tensor-parallel degree, data-parallel degree and micro-batch size (0: the
// policy chooses). models/multimodal/compound.hpp checks a list of them.
struct SectionSpec {
  std::string name;
  std::vector<int> modules;  // indices into the model's modules
  int tp = 0, dp = 0, micro_batch = 0;
};

// What a multimodal pipeline policy works with: the model, the costs, the parallel shape.
struct MultimodalSetup {
  const MultimodalModel* model = nullptr;
  const CostModel* cost = nullptr;
  int tp = 1, pp = 1, dp = 1;
  int cp = 1;                 // GPUs per video in a video DiT (its tokens split cp ways)
  int micro_batch = 1;        // samples per micro-batch (static baselines)
  double nvlink = 0;          // bytes/s per GPU, for TP all-reduces
  double p2p = 0;             // bytes/s between pipeline stages
  double hbm_bytes = 0;       // per GPU
  bool reuse = true;          // ModuleCostCache reuse
  std::vector<SectionSpec> sections;  // the scenario's compound sections (empty: none given)
  std::string source = "<scenario>";  // named by errors (memory that does not fit)
};

// A setup on one GPU type: TP all-reduces on its NVLink, its HBM, stages `p2p` bytes/s apart.
MultimodalSetup multimodal_setup(const MultimodalModel& model, const CostModel& cost, const GpuSpec& gpu, int tp, int pp, int dp, int micro_batch,
                                 double p2p);

struct MultimodalStep {
  double step_s = 0;
  double bubble_fraction = 0;   // of the slowest data-parallel rank
  double stage_imbalance = 1;   // of the slowest rank
  PipeProgram program;          // of the slowest rank
  PipeRun run;
  std::size_t candidates = 0;   // schedules evaluated (searching policies)
  double search_s = 0;          // wall time of the search
  int gpus = 0;                 // GPUs the step held (0: all of the setup's tp x pp x dp)
  std::string layout;           // policies that place GPUs themselves: how ("encoders 8, llm 56 ...")
};

class MultimodalPipelinePolicy {
 public:
  virtual ~MultimodalPipelinePolicy() = default;
  virtual std::string_view name() const = 0;
  // Offline decisions (partitions, sub-micro-batch sizes) from a profiling batch; InputError
  // when a partition cannot fit the GPU's memory.
  virtual void prepare(const MultimodalSetup& setup, const std::vector<MultimodalSample>& profile, const ModuleCostCache& costs) = 0;
  // One data-parallel rank's pipeline over its samples.
  virtual MultimodalStep rank_step(const MultimodalSetup& setup, const std::vector<MultimodalSample>& samples, const ModuleCostCache& costs) = 0;
  // A whole global batch: by default the samples dealt round-robin to the data-parallel ranks,
  // each rank's pipeline by rank_step, the slowest rank's step (deal_round_robin). Policies that
  // place samples and GPUs across replicas themselves (MegaScale-Omni, Maestro) override it.
  virtual MultimodalStep step(const MultimodalSetup& setup, const std::vector<MultimodalSample>& batch, const ModuleCostCache& costs);
};

// The default global step (above).
MultimodalStep deal_round_robin(MultimodalPipelinePolicy& policy, const MultimodalSetup& setup, const std::vector<MultimodalSample>& batch,
                                const ModuleCostCache& costs);

// How a video DiT's attention runs: a policy turns the scenario's attention (its context
// parallelism and, where given, DSV's head sparsities) into the one the costs use; `orrery
// compare` runs the same batches under each (policies/multimodal.hpp registers them).
class DitAttentionPolicy {
 public:
  virtual ~DitAttentionPolicy() = default;
  virtual std::string_view name() const = 0;
  // InputError naming `source` when the policy cannot apply to this DiT.
  virtual DitAttention configure(const DitAttention& scenario, const ModuleSpec& dit, const std::string& source) const = 0;
};

// A global batch: samples dealt round-robin to the data-parallel ranks; the step is the slowest.
MultimodalStep multimodal_step(MultimodalPipelinePolicy& policy, const MultimodalSetup& setup, const std::vector<MultimodalSample>& batch,
                               const ModuleCostCache& costs);

// Weight, gradient and optimizer bytes per parameter on one GPU: bf16 weights (2) and fp32
// gradients (4), fp32 master weights and Adam moments (12) sharded over dp (Megatron's
// distributed optimizer), all split by tp.
double state_bytes_per_param(int tp, int dp);

}  // namespace orrery::models
