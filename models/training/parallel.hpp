// Parallel plans (TP, PP with virtual stages, DP with ZeRO, CP, EP, micro-batching,
// recompute, overlap switches), their validation against a model and a cluster, and the
// per-GPU memory model.
//   ParallelPlan plan;  plan.tp = 8; plan.pp = 4; plan.dp = 32; plan.global_batch = 1024;
//   validate_plan(plan, model, /*cluster_gpus=*/1024, "scenario.json", "/plan");
//   MemoryEstimate m = estimate_memory(plan, model, schedule_plan);
#pragma once

#include "models/hardware/hardware.hpp"
#include "models/hardware/step_params.hpp"
#include "models/training/llm.hpp"
#include "models/training/pipeline.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::models {

// What each layer keeps for its backward. none: everything its backward reads; selective:
// Megatron's selective recompute (the attention core recomputed, Korthikanti et al. 2022); full:
// the layer's input only, the layer recomputed in its backward; op_selective: torchtitan's per-op
// selective activation checkpointing (selective_ac_option "op"): the layer's input, the outputs of
// every other matmul (aten.mm) in forward order and the attention's output, the rest recomputed.
enum class Recompute : std::uint8_t { none, selective, full, op_selective };
// What selective recompute reruns: Megatron-Core's --recompute-modules (TransformerConfig's
// recompute_modules, megatron/core/transformer/transformer_config.py; default ["core_attn"]).
// core_attn: the attention core (its scores are not kept; with flash attention nothing changes);
// layernorm: the norms not fused into the linear layer after them (Transformer Engine fuses the
// attention's input norm into QKV): a MoE layer's pre-MLP norm and MLA's input norm, whose outputs
// are then not kept; moe_act: the routed experts' activation, whose output (fc2's input) is not
// kept. Each rerun adds its forward kernel to the backward.
struct RecomputeModules {
  bool core_attn = true;
  bool layernorm = false;
  bool moe_act = false;
  bool mla_up_proj = false;  // MLA's query and key-value up-projections and RoPE: Q, K and V not kept
  bool mlp = false;          // a dense MLP whole: only its input kept
  bool moe = false;          // a MoE layer whole (router, dispatch, experts, combine): only its input kept
  bool operator==(const RecomputeModules&) const = default;
};
// "core_attn,layernorm": the modules in Megatron's names, comma-separated ("" for none).
std::string to_string(const RecomputeModules& r);
// The modules a plan's recompute `rc` reruns: its recompute_modules under selective, none else.
inline RecomputeModules rerun_modules(const RecomputeModules& modules, Recompute rc) {
  return rc == Recompute::selective ? modules : RecomputeModules{.core_attn = false};
}
// The norms of a layer of `kind` that the `layernorm` module reruns: those not fused into the
// linear layer after them, a MoE layer's pre-MLP norm and MLA's input norm (0, 1 or 2).
int unfused_norms(const ModelSpec& m, LayerKind kind);
enum class CpKind : std::uint8_t { ring, ulysses };
std::string_view to_string(Recompute);
std::string_view to_string(CpKind);

// The longest sequence a plan takes: 2^24 = 16,777,216 tokens, beyond the longest context any
// model has trained with (10M); longer ones only push kernel times past the clock.
inline constexpr std::int64_t kMaxSeqLen = std::int64_t{1} << 24;
// Micro-batches per step and pipeline (global_batch / (micro_batch x dp)); validate_plan's limit.
inline constexpr std::int64_t kMaxMicroBatches = 65536;
inline constexpr std::string_view kMaxSeqLenReason = "16M tokens: beyond the longest context any model has trained with";

struct ParallelPlan {
  int tp = 1;
  int pp = 1;
  int vp = 1;  // virtual stages (model chunks) per pipeline stage
  int dp = 1;
  int cp = 1;
  int ep = 1;  // expert parallel, carved out of dp x cp (Megatron-Core)
  CpKind cp_kind = CpKind::ring;
  int zero = 1;  // 0: none; 1: optimizer state sharded over dp (Megatron's distributed optimizer); 2: + gradients; 3: + parameters
  int micro_batch = 1;       // sequences per micro-batch
  int global_batch = 1;      // sequences per step
  std::int64_t seq_len = 4096;
  Recompute recompute = Recompute::none;
  RecomputeModules recompute_modules;  // what `selective` reruns
  bool sequence_parallel = true;  // with tp > 1
  bool flash_attention = true;    // no s^2 activations or recompute of them
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = true;
  bool overlap_tp_comm = false;
  std::string schedule = "1f1b";
  double expert_imbalance = 1.0;  // tokens on the busiest expert rank / the mean (>= 1)
  // How MoE tokens reach their experts: "nccl" (NCCL's all-to-all, every token copy to its
  // expert's GPU) or "deepep" (DeepEP's normal kernels: one network copy per node, forwarded
  // over NVLink; models/network/expert_dispatch.hpp).
  std::string moe_dispatch = "nccl";
  // The dtype data-parallel gradients are accumulated and reduced in: "fp32" (Megatron's default
  // for bf16 training; megatron/training/arguments.py: "bfloat16 requires gradient accumulation
  // and all-reduce to be done in fp32"), or 16-bit: "bf16" (--grad-reduce-in-bf16, DDP
  // grad_reduce_in_fp32 = False, as NVIDIA's performance recipes in Megatron-Bridge set it) or
  // "fp16" (fp16 training, where Megatron reduces in fp16 unless told otherwise).
  std::string grad_reduce = "fp32";
  // The precision of the linear layers' GEMMs (attention, norms, the router and the LM head stay
  // in bf16): "bf16"; "fp8" (per-tensor current scaling, Transformer Engine's Float8CurrentScaling:
  // each tensor's amax measured before its cast), "fp8-delayed" (per-tensor delayed scaling: the
  // scale from an amax history, no extra pass), "fp8-block" (DeepSeek-V3's block-wise scaling:
  // 1x128 tiles of activations and gradients, 128x128 blocks of weights), "mxfp8" (32-element
  // blocks with an E8M0 scale, Blackwell's block-scaled tensor cores) or "nvfp4" (16-element
  // blocks of E2M1 with an E4M3 scale, Blackwell). precision_spec() says what each costs.
  std::string precision = "bf16";
  // Megatron's --fp8-param-gather: the parameters kept in the low precision (no bf16 copy), so
  // the data-parallel parameter all-gathers (ZeRO-1's after the step, ZeRO-3's before each use)
  // move the quantized bytes. Needs a low precision.
  bool fp8_param_gather = false;
  // Megatron's --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split:
  // the layers are split over the virtual stages with the input embedding counted as the first
  // layer and the loss (the output layer) as the last, so the first and last stages hold fewer
  // transformer layers (as few as none).
  bool split_embedding_and_loss = false;
  // Decoder layers per virtual stage (index chunk x pp + stage), as Megatron's
  // --pipeline-model-parallel-layout places them; the embedding stays on the first virtual stage,
  // the MTP modules and the loss on the last. Empty: as even as possible (layers_of).
  std::vector<int> pipeline_layout;
  // Optimizer offload (Megatron's --optimizer-cpu-offload, DeepSpeed's ZeRO-Offload): "cpu"
  // keeps the fp32 master weights and Adam moments in host memory and runs the Adam step on the
  // CPU: the gradients of the GPU's shard go down its host link, the step reads and writes them
  // at the host's memory bandwidth, the updated bf16 weights come back. "none": on the GPU.
  std::string optimizer_offload = "none";
  // Activation offload (Megatron-Core's --cpu-offloading of activations, Transformer Engine's
  // CPU offload context): "cpu" copies each layer's saved activations to host memory over the
  // GPU's host link after its forward, on a copy stream beside the compute, and reloads them
  // ahead of its backward; the GPU keeps only the layers in transfer (kActivationOffloadWindow
  // per micro-batch). "none": kept on the GPU.
  std::string activation_offload = "none";
  // How ZeRO-3 is implemented, which sets what memory it holds beside the shards: "megatron"
  // (bf16 weights, fp32 master weights and moments in the optimizer: 18 bytes per parameter; the
  // layer computing and the one prefetched gathered) or "fsdp2" (PyTorch's fully_shard on every
  // transformer layer and on the root module, as torchtitan applies it: the sharded fp32
  // parameters are the master weights (16 bytes per parameter with their gradients and moments);
  // the root's embedding and output layer gathered through the backward with the output layer's
  // unsharded gradient; with pipeline parallelism the stage's parameters stay gathered and its
  // gradients accumulate unsharded until the last micro-batch). estimate_memory says how.
  std::string sharding = "megatron";
  // How the loss reads the logits, which sets the loss's memory on the last stage: "fused"
  // (Megatron's vocab-parallel cross entropy: an fp32 copy of the logits, its softmax kept and the
  // gradient written in place: 4 bytes per logit; one pass each way), "unfused" (the same
  // without --cross-entropy-loss-fusion, Megatron-Core's default through r0.8: the same memory,
  // each step a separate op over the fp32 logits, step.cpp's loss_cost), "eager" (PyTorch's F.cross_entropy on
  // logits.float(): at its backward the fp32 log-probabilities, nll_loss's dense fp32 gradient and
  // log_softmax's: 12 bytes per logit; 16 under tensor parallelism, loss_parallel's fused backward
  // also holding exp(log-probabilities) and a sum) or "compiled" (torch.compile'd cross entropy:
  // the bf16 logits kept and a bf16 gradient: 4 bytes per logit).
  std::string cross_entropy = "fused";
  // The software that runs the step, which sets its kernels' fitted speed (step_params.hpp):
  // "megatron" (Megatron-Core with Transformer Engine), "pytorch" (PyTorch eager, FSDP2 as
  // torchtitan runs it) or "pytorch-compile" (the same with torch.compile).
  std::string framework = "megatron";
  // How the step's kernels are launched: "none" (each kernel launched by the framework from the
  // host, paying the fitted per-kernel overhead), "full" (Megatron-Core's full-iteration CUDA
  // graph, cuda_graph_impl = "full_iteration": the whole step captured once and replayed, each
  // kernel paying only the fitted in-graph gap, step_params.hpp's overhead.graph), or parts of
  // every layer joined by '+' (kGraphScopes: Megatron-Core's cuda_graph_impl =
  // "transformer_engine" with that cuda_graph_scope, e.g. "attn+moe_router+moe_preprocess"):
  // those parts' forward and backward captured per micro-batch and replayed, their kernels
  // issued by one graph launch instead of one by one from the host; the rest as "none".
  std::string cuda_graphs = "none";
  // Megatron-Core's moe_a2a_overlap (overlap_moe_expert_parallel_comm): in the steady state one
  // micro-batch's forward runs beside another's backward, so a layer's expert-parallel
  // dispatch and combine hide behind the other pass's compute (as the overlapped TP
  // communication does: at least the share 1 - overlap stays exposed).
  bool overlap_ep_comm = false;
  // Where a layer's expert-parallel all-to-alls run: "inline" (their simulated time inside the
  // op, alone on the fabric), or as flows on the GPU's own links beside its data-parallel
  // buckets: "fair" (sharing bandwidth max-min fairly, as NCCL's streams do), or "lina" (Lina,
  // Li et al., USENIX ATC'23: the all-reduce partitioned into small micro-ops so that every
  // all-to-all goes first; in the fluid model, a strict priority).
  std::string ep_comm = "inline";
  // Experts per token, the mean over the expert-parallel group this step: 0 for the model's
  // top-k; less under adaptive gating (policies/moe.hpp), where a token the router is sure of
  // goes to fewer experts (Li et al., arXiv 2405.02834).
  double experts_per_token = 0;
  // Megatron-Core's cutedsl_fused_grouped_mlp: an expert MLP's grouped GEMMs run as one CuTe DSL
  // kernel with the SwiGLU and the low-precision casts of its inputs in the GEMMs' prologues and
  // epilogues, so those element-wise passes over the routed tokens are gone.
  bool fused_moe_mlp = false;
  // Transformer Engine's fp8_dot_product_attention: core attention in FP8 (cuDNN's FP8 fused
  // attention): its products at the FP8 peak, its softmax's exponentials as in bf16 (cost.hpp,
  // RooflineParams' attention). Needs a low precision.
  bool fp8_attention = false;
  // Megatron-Core's first_last_layers_bf16 (num_layers_at_start_in_bf16, num_layers_at_end_in_bf16:
  // megatron/core/fp8_utils.py and fp4_utils.py): the first and the last decoder layers of the
  // whole model (a hybrid stack counts each of its layers) run outside the low-precision autocast,
  // every linear layer of theirs in bf16 without casts; `bf16_mtp` keeps the multi-token
  // prediction modules so too. Needs a low precision.
  int bf16_layers_first = 0;
  int bf16_layers_last = 0;
  bool bf16_mtp = false;
  // Per-module precision (Megatron-Core's quant_recipe: Transformer Engine quantization params
  // matched to module names), by kLinearModules name: e.g. {"linear_qkv": "bf16", "mamba_out_proj":
  // "mxfp8"} in an nvfp4 plan. The modules not named run in `precision`. At most one precision per
  // tensor-core type in a plan (each has one fitted GEMM efficiency). Needs a low precision.
  std::map<std::string, std::string, std::less<>> module_precision;
  // LoRA fine-tuning (Hu et al., arXiv 2106.09685): the base model frozen (no weight gradients,
  // no gradients or optimizer states for it), low-rank adapters A (k x rank) and B (rank x n) on
  // the targeted linear layers, trained in bf16. Defaults as Megatron-Bridge's LoRA
  // (src/megatron/bridge/peft/lora.py): rank (dim) 32 on linear_qkv, linear_proj, linear_fc1 and
  // linear_fc2 of every transformer layer (dense MLPs; experts and Mamba projections stay
  // frozen without adapters here).
  struct Lora {
    bool enabled = false;
    int rank = 32;
    bool qkv = true, proj = true, fc1 = true, fc2 = true;
  } lora;
  // Documents packed in every sequence (lengths summing to seq_len; attention stays within a
  // document); empty: one document per sequence.
  std::vector<std::int64_t> documents;

  // Whether the kernels of `scope` (one of kGraphScopes) run from a CUDA graph: all do under
  // "full", the listed ones under a per-layer scope.
  bool graphed(std::string_view scope) const;

  int gpus() const { return tp * pp * dp * cp; }
  int micro_batches() const { return global_batch / (micro_batch * dp); }
  int virtual_stages() const { return pp * vp; }
};

// The parts of a layer Megatron-Core captures in per-layer CUDA graphs (CudaGraphScope in
// megatron/core/transformer/enums.py): the attention block, the dense MLP, the whole MoE block
// (only where no host sync splits it), its router, its dispatch preprocessing (the token counts
// and permutation maps), the Mamba mixer.
inline constexpr std::array<std::string_view, 6> kGraphScopes = {"attn", "mlp", "moe", "moe_router", "moe_preprocess", "mamba"};

// Why `cuda_graphs` is not none, full or '+'-joined kGraphScopes (each once); empty when it is.
std::string check_cuda_graphs(std::string_view cuda_graphs);

// The linear layers plan.module_precision can name, as Megatron-Core names their modules:
// attention's QKV projection (MLA's query and key-value projections too) and output projection,
// the dense MLP's two layers, the routed experts, the shared experts, LatentMoE's projections to
// and from the latent width, and a Mamba mixer's input and output projections.
inline constexpr std::array<std::string_view, 9> kLinearModules = {"linear_qkv", "linear_proj",    "linear_fc1",    "linear_fc2",    "experts",
                                                                    "shared_experts", "latent_proj", "mamba_in_proj", "mamba_out_proj"};

// The plan's framework, precision(s) and CUDA graphs, which select its fitted step parameters
// (per-layer graphs keep the host-launched kernels' parameters: most kernels stay outside).
StepContext step_context(const ParallelPlan& plan);

// The ZeRO stage whose data-parallel traffic the plan runs: its zero, except PyTorch FSDP2 under
// pipeline parallelism, which torchtitan runs without resharding between micro-batches
// (apply_fsdp: reshard_after_forward=False "to avoid per-microbatch all-gathers";
// torch.distributed.pipelining: set_reshard_after_backward(False) and no gradient sync until the
// last micro-batch): its parameters gathered once per step before their first forward and its
// gradients reduce-scattered once after their last backward, ZeRO-1's traffic on ZeRO-3's shards.
inline int dp_traffic_stage(const ParallelPlan& plan) { return plan.zero >= 3 && plan.sharding == "fsdp2" && plan.pp > 1 ? 1 : plan.zero; }

// Bytes per parameter of the gradients data parallelism accumulates and reduces (4 or 2).
double grad_reduce_bytes(const ParallelPlan& plan);
// "" when `name` is a grad_reduce dtype, else the message (found ..., expected fp32, bf16 or fp16).
std::string check_grad_reduce(std::string_view name);

// Bytes per parameter of the data-parallel parameter all-gathers: 2 (bf16), or the precision's
// with fp8_param_gather.
double param_gather_bytes(const ParallelPlan& plan);

// What a plan's precision means for the step (see ParallelPlan::precision).
struct PrecisionSpec {
  std::string_view name;
  DType gemm = DType::bf16;       // the linear layers' GEMMs
  double bytes = 2;               // per element of a quantized tensor, its scales included
  bool amax_pass = false;         // per-tensor current scaling: one more read of each tensor before its cast
  bool blackwell = false;         // needs block-scaled tensor cores (MXFP8, NVFP4)
  bool low() const { return gemm != DType::bf16; }
};
// Throws InputError at (source, where + "/precision") for an unknown name.
PrecisionSpec precision_spec(std::string_view name, std::string_view source = "<plan>", std::string_view where = "/plan");
// The names precision_spec() knows, in order.
std::vector<std::string> precision_names();
// Rejects a precision the GPU cannot run: FP8 needs FP8 tensor cores (Hopper and later), MXFP8
// and NVFP4 block-scaled ones (Blackwell); the message names both.
void validate_precision(const ParallelPlan& plan, const GpuSpec& gpu, std::string_view source, std::string_view where);

// Rejects a plan that cannot run: sizes that do not divide (heads by tp, layers over stages,
// the global batch by micro-batch x dp, experts by ep, ...), a GPU count other than the
// cluster's. Messages name the field under `where`, e.g. "tp=3 does not divide 32 attention heads".
void validate_plan(const ParallelPlan& plan, const ModelSpec& model, int cluster_gpus, std::string_view source, std::string_view where);

// Megatron-Core's MoE parallel folding (expert tensor parallelism 1): an ep that does not divide
// dp x cp folds over the tensor-parallel ranks too (it must divide tp x dp x cp), its ranks then
// adjacent. ep_stride: the EP group's rank stride (tp, or 1 folded); expert_dp: the ranks that
// hold the same experts (dp x cp / ep, or tp x dp x cp / ep folded), over which ZeRO shards them.
bool ep_folded(const ParallelPlan& plan);
int ep_stride(const ParallelPlan& plan);
double expert_dp(const ParallelPlan& plan);

// How plan.schedule places the model's chunks on the stages (PipelineShape::placement): vee for
// the V-shaped schedules (zb-v, stp), bidirectional for dualpipe, interleaved for the others.
// policies/pipeline.cpp's schedules report the same (tested).
PipelinePlacement pipeline_placement(const ParallelPlan& plan);
// The pipeline's shape: pp stages, the micro-batches, the chunks each stage runs (vp, or two
// for a bidirectional schedule, one per direction, over vp = 1 virtual stage per stage).
PipelineShape pipeline_shape(const ParallelPlan& plan);
// The virtual stage chunk c of `stage` holds (pipeline_shape(plan).virtual_stage).
int virtual_stage_of(const ParallelPlan& plan, int stage, int chunk);

// Layers of virtual stage vs (0 .. pp*vp-1): as even as possible, earlier stages taking one
// more when the layers do not divide.
int layers_of(const ParallelPlan& plan, const ModelSpec& model, int virtual_stage);
int first_layer_of(const ParallelPlan& plan, const ModelSpec& model, int virtual_stage);

// Rejects optimizer offload on a GPU whose host the catalog does not know (no host memory or
// link), or whose offloaded states exceed its share of host memory; names the GPU and the sizes.
void validate_offload(const ParallelPlan& plan, const ModelSpec& model, const GpuSpec& gpu, std::string_view source, std::string_view where);

// Layers whose activations stay on the GPU under activation offload: the one computing and the
// one whose copy to or from the host is in flight (double buffering, as TE's CPU offload
// context keeps one layer's buffers in transfer while the next computes).
inline constexpr int kActivationOffloadWindow = 2;

// Activation bytes one layer of `kind` keeps for one micro-batch on one GPU (what
// layer_activation_bytes gives for a layer of that kind).
double kind_activation_bytes(const ParallelPlan& plan, const ModelSpec& model, LayerKind kind);

// Host bytes of the optimizer states plan.optimizer_offload moves to the GPU's host (0 without).
double offloaded_optimizer_bytes(const ParallelPlan& plan, const ModelSpec& model);

// The optimizer step of `params` parameters (the GPU's shard) offloaded to its host: gradients
// down the host link, Adam at the host's memory bandwidth, bf16 weights back, pipelined over
// `buckets`.
double offloaded_optimizer_seconds(const ParallelPlan& plan, const GpuSpec& gpu, double params, int buckets);

// The experts each token goes to: plan.experts_per_token, or the model's top-k.
double experts_per_token(const ParallelPlan& plan, const ModelSpec& model);

// Checks plan.lora against the model: a rank from 1 to the hidden size, at least one target.
void validate_lora(const ParallelPlan& plan, const ModelSpec& model, std::string_view source, std::string_view where);

// The peak is the persistent memory (states, gathered parameters, kept activations) plus the
// larger of two moments' transient memory, which never coexist: the loss's backward on the last
// stage (logits_bytes) and a layer's backward (backward_bytes).
struct MemoryEstimate {
  double params_bytes = 0;      // bf16 weights (fsdp2: the fp32 sharded parameters)
  double grads_bytes = 0;       // main gradients, in plan.grad_reduce's dtype (fsdp2 under PP: and the stage's accumulated ones)
  double optimizer_bytes = 0;   // fp32 master weights + two Adam moments (fsdp2: the moments)
  double activations_bytes = 0; // kept for the backward, at the schedule's peak of micro-batches in flight
  double logits_bytes = 0;      // the loss's backward on the last stage: the logits of one micro-batch as plan.cross_entropy holds them, the final norm's and output layer's inputs
  double backward_bytes = 0;    // a layer's backward: what its recompute rebuilds, the gradients in flight, ZeRO's unsharded gradients of the layer, fsdp2's root gathered
  double host_activation_bytes = 0;  // activation offload: the kept activations in host memory at their peak
  double gathered_params_bytes = 0;  // ZeRO-3: full parameters gathered for the ops in flight (fsdp2 under PP: the stage's)
  double total() const {
    return params_bytes + grads_bytes + optimizer_bytes + activations_bytes + gathered_params_bytes + std::max(logits_bytes, backward_bytes);
  }
  int stage = 0;                // the pipeline stage with the peak
  double params_per_gpu = 0;    // parameters held (before ZeRO-3 sharding)
};

// Parameters one GPU holds for virtual stage vs: `dense` (split by tp, ZeRO over dp x cp: the
// mixers, dense MLPs, norms, routers, shared experts, the input embedding on the first virtual
// stage, the output layer, final norm and MTP modules on the last), `expert` (routed experts,
// split by ep) and, of dense, `embedding` (the embedding and output layers: bf16 GEMMs).
struct GpuParams {
  double dense = 0;
  double expert = 0;
  double embedding = 0;
  double trainable = 0;  // what gets gradients and optimizer states: dense + expert, or with LoRA the adapters
};
GpuParams chunk_gpu_params(const ModelSpec& model, const ParallelPlan& plan, int virtual_stage);

// Activation bytes one layer keeps for one micro-batch on one GPU (Korthikanti et al. 2022,
// generalised to GQA, SwiGLU and MoE): with tensor parallelism t, sequence parallelism, the
// recompute mode and flash attention as in the plan.
double layer_activation_bytes(const ParallelPlan& plan, const ModelSpec& model, int layer);
// What one layer's backward holds beside the kept activations, for one micro-batch on one GPU:
// with recompute, what its recomputed forward rebuilds (the layer's activations without recompute
// less those it kept), and the gradients in flight (of its input and output, and of its largest
// sublayer's first GEMM's outputs).
double layer_backward_bytes(const ParallelPlan& plan, const ModelSpec& model, int layer);
// The same for all MTP modules of the last virtual stage (0 without MTP).
double mtp_activation_bytes(const ParallelPlan& plan, const ModelSpec& model);

// LoRA adapter parameters of one layer of kind `kind` on one GPU: rank x (in + out) per targeted
// linear layer, split by tp on its parallel side (0 without LoRA).
double lora_layer_params(const ModelSpec& model, const ParallelPlan& plan, LayerKind kind);

// Peak per-GPU memory: the worst pipeline stage, with its live micro-batches taken from the
// schedule's op order. `fp8_any_layout`: the GPU's tensor cores take FP8 operands in any layout
// (Blackwell's; fp8_any_layout(gpu)), so per-tensor-scaled FP8 weights need no transposed copy.
MemoryEstimate estimate_memory(const ParallelPlan& plan, const ModelSpec& model, const PipelinePlan& schedule, bool fp8_any_layout = false);
// Whether `gpu` multiplies FP8 in any operand layout: Blackwell's fifth-generation tensor cores
// (those with block-scaled FP4), where Hopper's take FP8 only as A row-major times B column-major
// ("TN") and a weight's backward GEMMs need its transpose. Transformer Engine then keeps no
// transposed copy of a per-tensor-scaled FP8 weight (nvte_is_non_tn_fp8_gemm_supported, true from
// SM 100, in common/transformer_engine.cpp; Float8CurrentScalingQuantizer allocates no transpose
// then, csrc/quantizer.cpp; NVIDIA/TransformerEngine at d0067d0d).
bool fp8_any_layout(const GpuSpec& gpu);
// Rejects activation offload whose activations at their peak (with the offloaded optimizer
// states) exceed the host memory each GPU has; names the sizes.
void check_host_memory(const MemoryEstimate& memory, const ParallelPlan& plan, const ModelSpec& model, const GpuSpec& gpu, std::string_view source,
                       std::string_view where);

}  // namespace orrery::models
