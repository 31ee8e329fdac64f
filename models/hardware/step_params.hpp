// Fitted parameters of kernels inside a training step: a few physical quantities per GPU
// architecture and framework (GEMM efficiency per precision, attention and memory efficiency,
// per-kernel overhead, how much overlapped communication hides, grouped-GEMM efficiency), fitted
// on named rows of public training measurements and kept in one versioned data file,
// models/hardware/step_params.json (built into the library; `orrery validate --only steps --refit`
// writes a new one). Every step cost model takes its roofline from here.
//   StepContext ctx{"megatron", "fp8"};
//   RooflineParams p = training_roofline_params(HardwareCatalog::builtin().gpu("H100"), ctx);
#pragma once

#include "models/hardware/cost.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::models {

// What of a training step's software decides its kernels' speed besides the GPU: the framework
// ("megatron": Megatron-Core with Transformer Engine's fused kernels; "pytorch": PyTorch eager,
// as torchtitan runs it; "pytorch-compile": with torch.compile's fused kernels) and the linear
// layers' precision (ParallelPlan::precision's names).
struct StepContext {
  std::string framework = "megatron";
  std::string precision = "bf16";
  bool cuda_graphs = false;  // a full-iteration CUDA graph: kernels pay overhead.graph, not overhead and host
  // Low precisions some linear layers run in besides `precision` (ParallelPlan::module_precision),
  // each on another tensor-core type than it: their GEMM efficiencies too.
  std::vector<std::string> module_precisions = {};
  // The expert all-to-alls overlapped with the other micro-batch (ParallelPlan::overlap_ep_comm):
  // their overlap.ep too.
  bool ep_overlap = false;
  // Data-parallel collectives overlapped with the compute (ParallelPlan::overlap_grad_reduce or
  // overlap_param_gather over a group of more than one): their overlap.dp too.
  bool dp_overlap = false;
};

// The framework names StepContext takes, in order.
std::vector<std::string> step_framework_names();

struct StepParameter {
  double value = 0;
  std::vector<std::string> rows;  // the measurements it was fitted on ("file.csv:12")
};

struct StepParameters {
  std::string version;
  std::string fitted_by;  // the command that wrote the file
  std::map<std::string, StepParameter, std::less<>> values;
  // The leave-one-out fits the refit made (validation/step_fit.cpp): per configuration, named by
  // its first row ("file.csv:12"), the values of the parameters its step uses when fitted on
  // every row but its own. Empty in a hand-written file.
  std::map<std::string, std::map<std::string, double, std::less<>>, std::less<>> leave_one_out;
  // The configurations of leave_one_out whose fit was re-linearised at every step (exact); the
  // others kept the all-rows Jacobian (a chord method). Sorted.
  std::vector<std::string> leave_one_out_exact;
};

// The built-in file's parameters (parsed once).
const StepParameters& builtin_step_parameters();
// Parses a step-parameter file's text; errors name `source` and the JSON pointer.
StepParameters parse_step_parameters(std::string_view text, std::string_view source);
// The file's text for `params` (stable order: byte-identical for the same values).
std::string step_parameters_json(const StepParameters& params);

// "ampere", "hopper" or "blackwell" for the GPUs of those generations, "" for others (they take
// the Hopper parameters; StepParameterUse::fallback says so).
std::string gpu_architecture(const GpuSpec& gpu);

// The parameter kinds, each a physical quantity: gemm.<precision> (fraction of the dtype's dense
// peak a linear layer's GEMM sustains in a step), attention (multiplier on the isolated
// flash-attention efficiency curve), memory (fraction of HBM bandwidth a memory-bound kernel
// sustains; memory.eager for PyTorch eager's unfused kernels), overhead (microseconds every kernel
// pays on the GPU: launch latency, the gap to the next kernel; overhead.graph the same inside a
// full-iteration CUDA graph), host (microseconds of CPU time to issue one kernel: Python, the
// framework's dispatch, the launch call; a step pays it only where the GPU's queued work is
// shorter, and not in a CUDA graph, where the host launches nothing), host.launch (microseconds of
// CPU time for each further GEMM a grouped GEMM's C++ loop launches, one per local expert, after
// the module's first), overlap (fraction of overlapped TP/CP communication that hides behind
// compute), overlap.ep (the same for the expert all-to-alls overlapped with the other
// micro-batch, plan.overlap.ep_comm), overlap.dp (the same for the data-parallel gradient
// reduce-scatters and parameter all-gathers overlapped with the compute), grouped_gemm
// (multiplier on GEMM efficiency for MoE grouped GEMMs).
// Defaults when nothing is fitted: step_parameter_prior().
double step_parameter_prior(std::string_view kind);
// The factor within which the prior is known (the fit's pull towards it: step_fit.cpp).
double step_parameter_prior_spread(std::string_view kind);
// True for the kinds bounded by 1 (efficiencies and fractions).
bool step_parameter_bounded(std::string_view kind);

// A tie: the fit's pull on the ratio of parameter `name`'s value to parameter `to`'s (of the same
// architecture and framework) towards `ratio`, known within the factor `spread`.
struct StepParameterTie {
  std::string to;
  double ratio = 1;
  double spread = 1;
};
// The tie of the parameter named "<arch>.<framework>.<kind>", if it has one: Megatron's FP8 and
// MXFP8 GEMM efficiencies on Hopper and Blackwell, to the same architecture's bf16 one.
std::optional<StepParameterTie> step_parameter_tie(std::string_view name);

// Which named parameter a step on `gpu` under `ctx` uses for each kind: the most specific name
// the set holds of "<arch>.<framework>.<kind>", then "<arch>.megatron.<kind>" and
// "hopper.megatron.<kind>"; "" when none (the prior applies).
struct StepParameterUse {
  std::string kind;
  std::string name;     // the name looked up first (what a fit of such rows would set)
  std::string used;     // the name found, or "" for the prior
  double value = 0;
};
std::vector<StepParameterUse> step_parameter_uses(const GpuSpec& gpu, const StepContext& ctx, const StepParameters& params);

// The training roofline for `gpu` under `ctx` with `params`' values.
RooflineParams training_roofline_params(const GpuSpec& gpu, const StepContext& ctx, const StepParameters& params = builtin_step_parameters());
// The same for Megatron in bf16 (callers without a plan).
RooflineParams training_roofline_params(const GpuSpec& gpu);
// True when the GPU's architecture has fitted parameters of its own (others take Hopper's).
bool has_training_calibration(const GpuSpec& gpu);

// The cost model of kernels inside a training step on `gpu` under `ctx` (`orrery step`,
// `compare`): the roofline with training_roofline_params(gpu, ctx); with `curves`, the curves for
// the kernels they cover (their measured times stand as they are: measured on the user's GPU at
// the kernel's own shape) and that same training roofline for every kernel they do not cover. A
// curves file that covers nothing therefore gives the roofline's step exactly.
std::unique_ptr<CostModel> training_cost_model(const GpuSpec& gpu, const StepContext& ctx = {}, std::optional<CostCurves> curves = std::nullopt);

}  // namespace orrery::models
