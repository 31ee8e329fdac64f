// The training-step emulator: one step of a model on a cluster under a parallel plan, with
// every kernel of every pipeline op costed by a CostModel, communication (TP, CP, EP inside the
// ops; PP transfers; DP gradient reduction in buckets and parameter gathers) simulated as flows
// on the cluster's fabric, and the pipeline schedule replayed as a task graph on the engine.
//
// Reuse (SEMU's spatial-temporal reuse): the ranks of a TP, CP and DP group run the same ops at
// the same times, so one rank per pipeline stage stands for all of them, and each distinct op
// (layer composition x pass) and each distinct collective is costed once. `reuse = false`
// instead instantiates every rank and costs every op afresh; tests check both agree.
//   StepScenario s{model, plan, gpu, "dgx-h100:nodes=16"};
//   StepResult r = run_step(s, cost_model, *schedule, {});
#pragma once

#include "models/network/collectives.hpp"
#include "models/hardware/cost.hpp"
#include "models/hardware/hardware.hpp"
#include "models/training/llm.hpp"
#include "models/training/parallel.hpp"
#include "models/training/pipeline.hpp"
#include "sim/error.hpp"
#include "sim/executor.hpp"
#include "sim/task_graph.hpp"
#include "sim/units.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace orrery::models {

// How a step costs its collectives (scenario key cluster/contention):
//   isolated  each group's collective alone on the smallest instance of the fabric that holds it
//             (fast; blind to traffic of other groups on shared switches)
//   fabric    every group of the collective at once on the whole fabric (all data-parallel
//             groups reduce together, all expert-parallel groups exchange together), and beside
//             them one collective of each other kind of the plan (data-parallel reduction,
//             expert all-to-all, Ulysses all-to-all, pipeline sends as stage pairs' exchanges),
//             all starting together: an oversubscribed spine or two kinds sharing a rail slow
//             the step. Tensor-parallel collectives and ring attention's sends stay inside their
//             groups; the closed-form estimate ignores contention
enum class Contention : std::uint8_t { isolated, fabric };
std::string_view to_string(Contention c);

struct StepScenario {
  ModelSpec model;
  ParallelPlan plan;
  GpuSpec gpu;
  std::string topology;  // a builder spec, e.g. "dgx-h100:nodes=128" (its GPU count must match the plan)
  Contention contention = Contention::isolated;
  std::string source = "<scenario>";  // the scenario file, named by errors found when it runs
};

// The one memory rule of `orrery step`, `sweep` and `plan`: a plan fits when its peak per GPU
// (MemoryEstimate::total, what the tensors need) is at most the GPU's HBM (GpuSpec::hbm_bytes,
// as the catalog states it) less a reserve for what the memory model does not count: a fixed
// 2 GiB for the CUDA context, cuBLAS workspaces and NCCL's buffers, plus 3% of HBM for the
// caching allocator's fragmentation. Both numbers are stated assumptions, not measurements
// (../shared/data has none); a plan above the usable memory is flagged out of memory.
//   MemoryBudget b = memory_budget(gpu);   // H100 (80 GB): 74.5 GiB HBM, 70.3 GiB usable
struct MemoryBudget {
  double hbm_bytes = 0;
  double reserve_bytes = 0;
  double usable_bytes = 0;
  // "70.3 GiB usable (74.5 GiB HBM less a 4.2 GiB reserve)"
  std::string describe() const;
};
inline constexpr double kMemoryReserveFixedBytes = 2.0 * 1073741824.0;
inline constexpr double kMemoryReserveFraction = 0.03;
MemoryBudget memory_budget(const GpuSpec& gpu);
// True when the peak is above the budget's usable bytes: the flag step, sweep and plan report.
bool out_of_memory(const MemoryEstimate& memory, const GpuSpec& gpu);

// How the transformer layers fall on the pipeline: per stage, the layers of each of its virtual
// stages in order (virtual stage vs runs on stage vs % pp; layers_of splits them as evenly as
// possible, earlier virtual stages taking one more when they do not divide). Llama 3 8B's 32
// layers at pp 3: {{11}, {11}, {10}}.
std::vector<std::vector<int>> stage_layers(const ParallelPlan& plan, const ModelSpec& model);
// "11,11,10" (or with virtual stages "6+5,6+5,5+5"): the layers of each stage; beyond 8 stages,
// runs of equal ones ("2x62,1x2": 62 stages of 2 layers, then 2 of 1).
std::string describe_stage_layers(const ParallelPlan& plan, const ModelSpec& model);

// How long training on `tokens` tokens takes at a step time: whole steps of the plan's global
// batch (global_batch x seq_len tokens each), the last one counted in full.
struct TrainingTime {
  double tokens = 0;
  double steps = 0;
  double seconds = 0;
};
TrainingTime training_time(double tokens, const ParallelPlan& plan, double step_time_s);

// The topology builder spec `spec` with `gpus` GPUs: the same builder, GPUs per server (or
// NVLink domain) and options, with as many servers as hold them ("dgx-h100:nodes=8,nic=200Gb/s"
// at 256 GPUs: "dgx-h100:nodes=32,gpus_per_node=8,nic=200Gb/s"). InputError at (source, where)
// when `gpus` is not a positive multiple of the GPUs per server.
std::string topology_with_gpus(const std::string& spec, int gpus, std::string_view source, std::string_view where);

// The InputError for a step whose times pass the clock's range (sim::DurationOverflow): each
// input in range, but together too large (a long sequence on a slow GPU). It names the
// scenario's plan and the sizes that drive the times.
sim::InputError step_overflow(const StepScenario& scenario, const sim::DurationOverflow& e);

// How communication is costed. The default everywhere, `nccl`: as NCCL runs it (nccl.hpp's
// nccl_flows: its algorithm and protocol for the size, its latency at the start, the NVLink and
// NIC shares fitted on nccl-tests sweeps, the protocol's ceiling) as flows on the fabric, so it
// shares links with whatever else runs; `nccl_closed`: the same choice by NCCL's closed form
// alone (nccl_cost, no flows: the estimate and plan search). The line-rate models before it,
// kept for comparison (`orrery step --comm line-rate`): `flows`, every collective a ring (or
// direct sends) at the links' peak NCCL efficiency with the links' own latencies, and
// `alpha_beta`, the closed forms of the same (collectives.hpp).
enum class CommModel : std::uint8_t { flows, alpha_beta, nccl, nccl_closed };
// The closed form of a model: nccl_closed for nccl, alpha_beta for flows (others: themselves).
CommModel closed_form_of(CommModel model);

struct StepOptions {
  CommModel comm = CommModel::nccl;
  bool reuse = true;
  bool keep_graph = false;  // keep the task graph and spans (for the timeline)
  // Collectives by symmetry classes where exact (CollectiveSpec::symmetry); false: every flow
  // (to check the classes against).
  bool symmetry = true;
  // contention=fabric: the most transfers a kind's plan may hold in a mix of kinds simulated
  // together; past it the mix is costed by link loads (0: Orrery's limit, about 2M). Tests lower
  // it to compare the two on the same step.
  std::size_t mix_transfers = 0;
};

struct LinkSample {
  std::string link;  // "stage3 NIC out"
  sim::Time at;
  double bytes_per_second;
};

struct StageBreakdown {
  int stage = 0;
  double compute_s = 0;        // kernels
  double exposed_comm_s = 0;   // TP/CP/EP inside ops, plus waiting on DP/PP transfers
  double bubble_s = 0;         // pipeline waits between the stage's first and last op
  double idle_s = 0;           // the rest of the step
  double optimizer_s = 0;
  // Data-parallel collectives of one GPU of the stage over the step: their sizes summed (bf16
  // parameter gathers, gradient reductions in plan.grad_reduce) and their simulated times alone, summed (the
  // DP stream's busy time without contention).
  double dp_bytes = 0;
  double dp_comm_s = 0;
};

// A transfer of the step's graph outside the ops: a data-parallel collective's share on one
// rank, or a pipeline send between two.
struct StepComm {
  sim::TaskId task{};
  bool p2p = false;
  CollectiveOp op = CollectiveOp::send_recv;
  double bytes = 0;  // the collective's buffer, or the send's payload
  int rank = 0;      // the member that issues it, or the sender
  int peer = 0;      // the receiver of a send
  int group_first = 0, group_size = 1, group_stride = 1;  // a collective's ranks
};

struct StepResult {
  sim::Duration step_time;
  double tokens_per_s = 0;
  double model_flops = 0;      // per step, all GPUs: 3x forward, no recompute
  double hardware_flops = 0;   // what the kernels execute (recompute included)
  double tflops_per_gpu = 0;   // model FLOPs per second per GPU / 1e12
  double mfu = 0;              // against the GPU's dense bf16 peak
  double hfu = 0;
  double bubble_fraction = 0;  // mean over stages of bubble / step time
  double exposed_comm_fraction = 0;
  double tail_s = 0;           // from the last pipeline op to the end of the step (gradient reduction, optimizer)
  std::vector<StageBreakdown> stages;
  MemoryEstimate memory;
  bool oom = false;            // out_of_memory(memory, gpu): above the usable memory
  int micro_batches = 0;
  std::size_t tasks = 0;
  std::size_t flows = 0;       // flows simulated to cost the communication
  // contention=fabric: of the plan's data-, expert-, context-parallel and pipeline collectives
  // (each size once), how many ran beside every other kind that shares their links, simulated
  // together or by link loads (a kind's plan past 2M transfers: models/network/collectives.hpp,
  // ends_by_link_loads), apart (each kind's groups together but without the others: even one
  // step of a kind's plan too large for its link loads), and with no other kind on their links.
  std::array<int, 4> comm_mixes{};
  std::size_t ranks_simulated = 0;
  sim::TaskGraph graph;        // when keep_graph
  std::vector<sim::Span> spans;
  // When keep_graph: the global rank (tp fastest, then cp, dp, pp) of each stream's GPU, by
  // stream index, and what each transfer outside the ops moves between which ranks (the
  // Chakra export writes them as COMM_COLL and COMM_SEND / COMM_RECV nodes).
  std::vector<int> stream_rank;
  std::vector<StepComm> comms;
  // When keep_graph: each compute task's FLOPs and memory-bound bytes, by task index (the
  // optimizer's bytes; 0 where none).
  std::vector<double> task_flops, task_bytes;
  std::vector<LinkSample> link_loads;  // when keep_graph: the simulated GPUs' link loads over time
};

// Throws InputError for a plan that does not fit (validate_plan), a topology spec whose GPU
// count differs from the plan's, or a schedule that rejects the shape.
StepResult run_step(const StepScenario& scenario, const CostModel& cost, const PipelineSchedule& schedule,
                    const StepOptions& options = {});

struct OpTime {
  double compute = 0;
  double comm = 0;
  double seconds() const { return compute + comm; }
};
// Parameters of one GPU by the data-parallel group that holds the same ones: the routed
// experts' are shared by the expert-data-parallel group (expert_dp ranks), the rest by the
// data-parallel group (dp x cp ranks). Their gradients are reduced, and their shards gathered,
// over each group apart (Megatron-Core's expert-data-parallel process group and buckets).
struct DpShare {
  double dense = 0;
  double expert = 0;
  double total() const { return dense + expert; }
  DpShare& operator+=(const DpShare& o) {
    dense += o.dense, expert += o.expert;
    return *this;
  }
  DpShare operator/(double n) const { return {dense / n, expert / n}; }
};
// The two groups of a plan: dense parameters over dp x cp ranks tp apart; routed experts' over
// the expert_dp ranks that hold the same experts, ep_stride x ep apart (one rank when the
// experts are not replicated).
struct DpGroups {
  int dense = 1, dense_stride = 1;
  int expert = 1, expert_stride = 1;
  // Whether the experts have a group of their own (else they go with the dense parameters).
  bool experts_apart() const { return expert != dense || expert_stride != dense_stride; }
};
DpGroups dp_groups(const ParallelPlan& plan);
// The parameters of `share` one GPU's optimizer updates: all of them, or under ZeRO its shard of
// each group's.
double optimizer_params(const ParallelPlan& plan, const DpShare& share);

struct ChunkOpCosts {
  OpTime f, b, w;
  double flops = 0;  // F + B + W, executed by one GPU
  int layers = 0;
  DpShare params;
  DpShare trainable;  // what gets gradients (params, or with LoRA the adapters, all dense)
};

// Collective and point-to-point times among GPUs `stride` ranks apart (rank order: tp fastest,
// then cp, dp, pp), each costed once on the smallest instance of the fabric that holds the group
// and cached by (op, bytes, ranks, stride).
class FabricCosts {
 public:
  FabricCosts(const std::string& topology_spec, CommModel model);
  ~FabricCosts();
  FabricCosts(const FabricCosts&) = delete;
  FabricCosts& operator=(const FabricCosts&) = delete;
  double collective(CollectiveOp op, double bytes, int n, int stride);
  double p2p(double bytes, int stride);
  // The plan's data-parallel groups (dp_groups) as this fabric costs them: an experts' group it
  // cannot place (in each NVL72 domain a share of a compute tray that does not divide it) as the
  // dense group.
  DpGroups dp_groups_of(const ParallelPlan& plan) const;
  // A data-parallel collective of `share` at `bytes_per_param`: the dense part over its group,
  // then the experts' over theirs.
  double dp_collective(CollectiveOp op, const DpShare& share, double bytes_per_param, const DpGroups& groups);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
  friend std::vector<ChunkOpCosts> chunk_op_costs(const StepScenario&, const CostModel&, FabricCosts&);
};

// One micro-batch's forward (F), input-grad (B) and weight-grad (W) ops of each virtual stage on
// one GPU exactly as run_step costs them: kernel time plus the exposed TP/CP/EP communication
// inside (costed by `fabric`), recompute included; with the layers and the parameters it holds.
std::vector<ChunkOpCosts> chunk_op_costs(const StepScenario& scenario, const CostModel& cost, FabricCosts& fabric);  // by virtual stage

// Parameters one GPU holds for virtual stage vs (dense ones split by tp, experts by ep).
DpShare chunk_params(const ModelSpec& model, const ParallelPlan& plan, int vs);
// Of those, the ones trained: all of them, or with plan.lora the adapters (dense).
DpShare trainable_params(const ModelSpec& model, const ParallelPlan& plan, int vs);

// Bytes of one micro-batch's activations (or their gradients) sent between pipeline stages.
double pipeline_send_bytes(const ModelSpec& model, const ParallelPlan& plan);

// One layer's work on one GPU for one micro-batch of the plan's shape (seq_len x micro_batch
// tokens), with the attention kernels left out (they depend on the documents): the linear
// kernels of forward, input grads (B) and weight grads (W), and the exposed TP/CP/EP
// communication inside them. Everything here scales with the micro-batch's tokens.
struct LayerLinearCost {
  double tokens = 0;  // per GPU (the micro-batch's sequence share)
  double f = 0, b = 0, w = 0;
  bool moe = false;
};
std::vector<LayerLinearCost> layer_linear_costs(const StepScenario& scenario, const CostModel& cost);  // dense, then MoE if any

// Per-GPU link rates of a fabric (NVLink and NIC at their NCCL efficiencies) and its GPUs per
// server (or NVLink domain).
struct LinkRates {
  double nvlink = 0;
  double nic = 0;
  int gpus_per_unit = 8;
};
LinkRates link_rates(const std::string& topology_spec);

// The time of one collective among `n` GPUs `stride` ranks apart (rank order: tp fastest, then
// cp, dp, pp), simulated as flows on the fabric of `topology_spec`.
double collective_seconds(const std::string& topology_spec, CollectiveOp op, double bytes, int n, int stride);

// GPUs of a topology builder spec ("dgx-h100:nodes=16" -> 128) without building it.
int cluster_gpus(const std::string& topology_spec);

// Model FLOPs of one step (3x the forward FLOPs of every layer, the output layer included,
// attention with causal pairs), for all GPUs together. Under LoRA the frozen base's weight
// gradients are not computed: its matmuls count forward and input gradients (2x), attention and
// the adapters 3x (as Megatron-Bridge's LoRA tables count: 1,731 TFLOP/s at 6,206 tokens/s for
// Llama 3 70B is 2.8e11 FLOP a token, 2 x 2 x 70.6B).
double step_model_flops(const ModelSpec& model, const ParallelPlan& plan);

}  // namespace orrery::models
