#include "models/training/parallel.hpp"

#include "models/hardware/kernel.hpp"
#include "sim/error.hpp"

#include <algorithm>
#include <numeric>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>

namespace orrery::models {

namespace {
// The parts of a '+'-joined list, empty ones included ("attn+" has two: "attn" and "").
std::vector<std::string_view> plus_parts(std::string_view list) {
  std::vector<std::string_view> parts;
  for (std::size_t at = 0; at <= list.size();) {
    const std::size_t end = std::min(list.find('+', at), list.size());
    parts.push_back(list.substr(at, end - at));
    at = end + 1;
  }
  return parts;
}
}  // namespace

std::string check_cuda_graphs(std::string_view cuda_graphs) {
  if (cuda_graphs == "none" || cuda_graphs == "full") return "";
  const auto expected = [&] {
    return fmt::format("found {}, expected none, full, or parts of a layer joined by '+' ({})", sim::quote(cuda_graphs), fmt::join(kGraphScopes, ", "));
  };
  std::vector<std::string_view> seen;
  for (const std::string_view part : plus_parts(cuda_graphs)) {
    if (std::find(kGraphScopes.begin(), kGraphScopes.end(), part) == kGraphScopes.end()) return expected();
    if (std::find(seen.begin(), seen.end(), part) != seen.end()) return fmt::format("{}; {} is listed twice", expected(), part);
    seen.push_back(part);
  }
  return "";
}

bool ParallelPlan::graphed(std::string_view scope) const {
  if (cuda_graphs == "full") return true;
  if (cuda_graphs == "none") return false;
  const std::vector<std::string_view> parts = plus_parts(cuda_graphs);
  return std::find(parts.begin(), parts.end(), scope) != parts.end();
}

std::string_view to_string(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
    case Recompute::op_selective: return "op-selective";
  }
  return "?";
}

std::string to_string(const RecomputeModules& r) {
  std::string out;
  for (const auto& [on, name] : {std::pair{r.core_attn, "core_attn"}, std::pair{r.layernorm, "layernorm"}, std::pair{r.moe_act, "moe_act"},
                                 std::pair{r.mla_up_proj, "mla_up_proj"}, std::pair{r.mlp, "mlp"}, std::pair{r.moe, "moe"}}) {
    if (on) out += (out.empty() ? "" : ",") + std::string(name);
  }
  return out;
}

int unfused_norms(const ModelSpec& m, LayerKind kind) {
  return (kind.ffn == Ffn::moe ? 1 : 0) + (kind.mixer == Mixer::attention && m.mla.enabled() ? 1 : 0);
}

std::string_view to_string(CpKind k) { return k == CpKind::ring ? "ring" : "ulysses"; }

namespace {
PrecisionSpec known_precision(std::string_view name, std::string_view source, const std::string& pointer);
}  // namespace

void validate_plan(const ParallelPlan& p, const ModelSpec& m, int cluster_gpus, std::string_view source, std::string_view where) {
  const auto bad = [&](std::string_view field, const std::string& message) {
    throw sim::InputError(std::string(source), fmt::format("{}/{}", where, field), message);
  };
  const auto positive = [&](std::string_view field, std::int64_t v) {
    if (v < 1) bad(field, fmt::format("found {}, expected 1 or more", v));
  };
  positive("tp", p.tp), positive("pp", p.pp), positive("vp", p.vp), positive("dp", p.dp), positive("cp", p.cp), positive("ep", p.ep);
  positive("micro_batch", p.micro_batch), positive("global_batch", p.global_batch), positive("seq_len", p.seq_len);
  validate_lora(p, m, source, where);
  if (p.seq_len > kMaxSeqLen) bad("seq_len", fmt::format("found {}, expected at most {} tokens ({})", p.seq_len, kMaxSeqLen, kMaxSeqLenReason));
  if (p.zero < 0 || p.zero > 3) bad("zero", fmt::format("found {}, expected a ZeRO stage 0, 1, 2 or 3", p.zero));
  if (m.heads % p.tp != 0) bad("tp", fmt::format("tp={} does not divide {} attention heads", p.tp, m.heads));
  if (m.kv_heads % p.tp != 0 && p.tp % m.kv_heads != 0) {
    bad("tp", fmt::format("tp={} and {} key/value heads: expected one to divide the other", p.tp, m.kv_heads));
  }
  if (m.ffn_hidden > 0 && m.ffn_hidden % p.tp != 0) bad("tp", fmt::format("tp={} does not divide the MLP size {}", p.tp, m.ffn_hidden));
  if (!p.pipeline_layout.empty()) {
    // An explicit layout: one count per virtual stage, summing to the model's layers.
    if (static_cast<int>(p.pipeline_layout.size()) != p.virtual_stages()) {
      bad("pipeline_layout", fmt::format("found {} stage counts, expected pp x vp = {} x {} = {}", p.pipeline_layout.size(), p.pp, p.vp,
                                         p.virtual_stages()));
    }
    long long sum = 0;
    for (const int n : p.pipeline_layout) {
      if (n < 0 || n > m.layers) bad("pipeline_layout", fmt::format("found a stage of {} layers, expected 0 to {}", n, m.layers));
      sum += n;
    }
    if (sum != m.layers) bad("pipeline_layout", fmt::format("the stages hold {} layers, expected {}'s {}", sum, m.name, m.layers));
  } else if (p.split_embedding_and_loss && p.virtual_stages() > m.layers + 2) {
    bad(p.vp > 1 ? "vp" : "pp", fmt::format("pp={} x vp={} = {} virtual stages for {} layers and the embedding and loss; expected at most one "
                                             "stage per layer", p.pp, p.vp, p.virtual_stages(), m.layers));
  }
  if (p.pipeline_layout.empty() && !p.split_embedding_and_loss && p.virtual_stages() > m.layers) {
    bad(p.vp > 1 ? "vp" : "pp", fmt::format("pp={} x vp={} = {} virtual stages for {} layers; expected at most one stage per layer "
                                             "(or split_embedding_and_loss, which counts the embedding and the loss as layers)",
                                             p.pp, p.vp, p.virtual_stages(), m.layers));
  }
  if (m.sliding_window > p.seq_len) {
    bad("seq_len", fmt::format("{}'s sliding window of {} tokens is longer than seq_len {}; expected seq_len of at least {} (or a model "
                               "without sliding_window)", m.name, m.sliding_window, p.seq_len, m.sliding_window));
  }
  if (m.mamba.enabled() && m.layer_pattern.find('M') != std::string::npos) {
    if (m.mamba.heads % p.tp != 0 || m.mamba.groups % p.tp != 0) {
      bad("tp", fmt::format("tp={} does not divide {}'s {} Mamba-2 heads in {} groups", p.tp, m.name, m.mamba.heads, m.mamba.groups));
    }
    if (p.cp > 1) bad("cp", fmt::format("cp={}: context parallelism over {}'s Mamba-2 layers is not modelled; expected cp=1", p.cp, m.name));
  }
  if (p.vp > 1 && p.pp == 1) bad("vp", fmt::format("vp={} needs pipeline parallelism (pp > 1)", p.vp));
  if (p.schedule == "dualpipe" && p.vp != 1) {
    bad("vp", fmt::format("vp={}: dualpipe holds one virtual stage per stage for each direction (two chunks by itself); expected vp=1", p.vp));
  }
  if (p.global_batch % (p.micro_batch * p.dp) != 0) {
    bad("global_batch", fmt::format("micro_batch={} x dp={} = {} does not divide the global batch of {} sequences", p.micro_batch, p.dp,
                                    p.micro_batch * p.dp, p.global_batch));
  }
  // Each micro-batch of a step is simulated (forward and backward on every stage): beyond this a
  // step takes minutes to emulate, and no published run comes near it (Llama 3 405B's 2,048
  // sequences per step over DP 128 are 16 micro-batches per pipeline).
  if (p.global_batch / (p.micro_batch * p.dp) > kMaxMicroBatches) {
    bad("global_batch", fmt::format("global_batch={} / (micro_batch={} x dp={}) = {} micro-batches per step; expected at most {} (each one is "
                                    "simulated; published runs use a few dozen)",
                                    p.global_batch, p.micro_batch, p.dp, p.global_batch / (p.micro_batch * p.dp), kMaxMicroBatches));
  }
  if (p.cp > 1) {
    if (p.cp_kind == CpKind::ring && p.seq_len % (2 * p.cp) != 0) {
      bad("cp", fmt::format("ring context parallelism splits each sequence into 2 x cp = {} chunks; seq_len {} does not divide", 2 * p.cp,
                            p.seq_len));
    }
    if (p.cp_kind == CpKind::ulysses && (m.heads / p.tp) % p.cp != 0) {
      bad("cp", fmt::format("Ulysses cp={} does not divide the {} attention heads per tensor-parallel rank", p.cp, m.heads / p.tp));
    }
  }
  if (p.ep > 1) {
    if (!m.moe.enabled()) bad("ep", fmt::format("ep={} but {} has no experts", p.ep, m.name));
    if (m.moe.experts % p.ep != 0) bad("ep", fmt::format("ep={} does not divide {} experts", p.ep, m.moe.experts));
    if ((p.tp * p.dp * p.cp) % p.ep != 0) {
      bad("ep", fmt::format("ep={} divides neither dp x cp = {} nor tp x dp x cp = {} (expert parallelism is carved out of them, folded over "
                            "the tensor-parallel ranks when it must be)", p.ep, p.dp * p.cp, p.tp * p.dp * p.cp));
    }
    if (ep_folded(p) && p.tp > 1 && !p.sequence_parallel) {
      bad("ep", fmt::format("ep={} folds over the tensor-parallel ranks (it does not divide dp x cp = {}), which needs sequence_parallel: "
                            "each rank then dispatches its own tokens", p.ep, p.dp * p.cp));
    }
  }
  if (!p.documents.empty()) {
    std::int64_t sum = 0;
    for (const std::int64_t d : p.documents) {
      if (d < 1) bad("documents", fmt::format("found a document of {} tokens, expected 1 or more", d));
      sum += d;
    }
    if (sum != p.seq_len) bad("documents", fmt::format("documents sum to {} tokens, expected seq_len = {}", sum, p.seq_len));
  }
  if (p.expert_imbalance < 1.0) bad("expert_imbalance", fmt::format("found {}, expected 1 (balanced) or more", p.expert_imbalance));
  if (p.experts_per_token != 0 && (!m.moe.enabled() || !(p.experts_per_token >= 1 && p.experts_per_token <= m.moe.top_k))) {
    bad("experts_per_token", m.moe.enabled() ? fmt::format("found {}, expected 1 to {}'s top-k of {} (0: the top-k)", p.experts_per_token, m.name, m.moe.top_k)
                                             : fmt::format("found {}, but {} has no experts; expected 0", p.experts_per_token, m.name));
  }
  if (p.ep_comm != "inline" && p.ep_comm != "fair" && p.ep_comm != "lina") {
    bad("ep_comm", fmt::format("found {}, expected inline, fair or lina", sim::quote(p.ep_comm)));
  }
  if (p.ep_comm != "inline" && p.overlap_ep_comm) {
    bad("ep_comm", fmt::format("{} puts the all-to-alls on the links as flows; overlap_ep_comm hides them inside the op: expected one of the two", p.ep_comm));
  }
  if (p.moe_dispatch != "nccl" && p.moe_dispatch != "deepep") {
    bad("moe_dispatch", fmt::format("found {}, expected nccl or deepep", sim::quote(p.moe_dispatch)));
  }
  if (!precision_spec(p.precision, source, where).low() && p.fp8_param_gather) {
    bad("fp8_param_gather", fmt::format("fp8_param_gather needs a low precision; the plan's is {}", p.precision));
  }
  if (!precision_spec(p.precision, source, where).low() && p.fp8_attention) {
    bad("fp8_attention", fmt::format("fp8_attention needs a low precision (Transformer Engine's FP8 recipe); the plan's is {}", p.precision));
  }
  const bool low = precision_spec(p.precision, source, where).low();
  if (p.bf16_layers_first < 0 || p.bf16_layers_last < 0 || p.bf16_layers_first + p.bf16_layers_last > m.layers) {
    bad("bf16_layers", fmt::format("found first {} and last {}, expected counts from 0 that add up to at most {}'s {} layers", p.bf16_layers_first,
                                   p.bf16_layers_last, m.name, m.layers));
  }
  if (p.bf16_mtp && m.mtp_layers == 0) bad("bf16_layers/mtp", fmt::format("{} has no multi-token prediction modules", m.name));
  if (!low && (p.bf16_layers_first > 0 || p.bf16_layers_last > 0 || p.bf16_mtp)) {
    bad("bf16_layers", fmt::format("bf16_layers keeps layers out of a low precision; the plan's is {}", p.precision));
  }
  if (!low && !p.module_precision.empty()) {
    bad("module_precision", fmt::format("module_precision sets some linear layers' low precision; the plan's is {}: expected a low precision", p.precision));
  }
  for (const auto& [module, name] : p.module_precision) {
    const std::string at = fmt::format("module_precision/{}", module);
    if (std::find(kLinearModules.begin(), kLinearModules.end(), module) == kLinearModules.end()) {
      const std::vector<std::string> names(kLinearModules.begin(), kLinearModules.end());
      bad("module_precision", fmt::format("found module {}{}, expected one of {}", sim::quote(module), sim::did_you_mean(module, names), fmt::join(names, ", ")));
    }
    bool has = false;  // the model has such a linear layer
    for (int l = 0; l < m.layers && !has; ++l) {
      const LayerKind k = m.layer_kind(l);
      if (module == "linear_qkv" || module == "linear_proj") has = k.mixer == Mixer::attention;
      else if (module == "linear_fc1" || module == "linear_fc2") has = k.ffn == Ffn::dense;
      else if (module == "experts") has = k.ffn == Ffn::moe;
      else if (module == "shared_experts") has = k.ffn == Ffn::moe && m.moe.shared_experts > 0;
      else if (module == "latent_proj") has = k.ffn == Ffn::moe && m.moe.latent > 0;
      else has = k.mixer == Mixer::mamba;  // mamba_in_proj, mamba_out_proj
    }
    if (!has) bad(at, fmt::format("{} has no {} layer: expected a module it has", m.name, module));
    const PrecisionSpec q = known_precision(name, source, fmt::format("{}/{}", where, at));
    const PrecisionSpec plan_q = precision_spec(p.precision);
    if (q.name != plan_q.name && q.low() && q.gemm == plan_q.gemm) {
      bad(at, fmt::format("found {}, which runs on the {} tensor cores as the plan's {} does: expected bf16, {} or a precision of another type (one per type)",
                          name, to_string(q.gemm), p.precision, p.precision));
    }
    for (const auto& [other, other_name] : p.module_precision) {
      const PrecisionSpec o = known_precision(other_name, source, fmt::format("{}/module_precision/{}", where, other));
      if (other < module && o.low() && q.low() && o.gemm == q.gemm && o.name != q.name) {
        bad(at, fmt::format("found {} beside {}'s {}, both on the {} tensor cores: expected one precision per type", name, other, other_name, to_string(q.gemm)));
      }
    }
  }
  if (const std::string why = check_cuda_graphs(p.cuda_graphs); !why.empty()) bad("cuda_graphs", why);
  if (const std::string why = check_grad_reduce(p.grad_reduce); !why.empty()) bad("grad_reduce", why);
  if (p.sharding != "megatron" && p.sharding != "fsdp2") bad("sharding", fmt::format("found {}, expected megatron or fsdp2", sim::quote(p.sharding)));
  if (p.sharding == "fsdp2" && p.zero != 3) {
    bad("sharding", fmt::format("fsdp2 shards parameters, gradients and optimizer states (ZeRO-3); found zero={}, expected 3", p.zero));
  }
  if (p.cross_entropy != "fused" && p.cross_entropy != "unfused" && p.cross_entropy != "eager" && p.cross_entropy != "compiled") {
    bad("cross_entropy", fmt::format("found {}, expected fused, unfused, eager or compiled", sim::quote(p.cross_entropy)));
  }
  if (p.gpus() != cluster_gpus) {
    throw sim::InputError(std::string(source), std::string(where),
                          fmt::format("tp={} x pp={} x dp={} x cp={} = {} GPUs, but the cluster has {}", p.tp, p.pp, p.dp, p.cp, p.gpus(),
                                      cluster_gpus));
  }
}

double grad_reduce_bytes(const ParallelPlan& p) { return p.grad_reduce == "fp32" ? 4.0 : 2.0; }

std::string check_grad_reduce(std::string_view name) {
  if (name == "fp32" || name == "bf16" || name == "fp16") return "";
  return fmt::format("found {}, expected fp32, bf16 or fp16", sim::quote(name));
}

namespace {
// Bytes per element with the block scales: FP8 per tensor, one scalar; DeepSeek-V3's block-wise
// FP8 an fp32 scale per 128 elements (arXiv 2412.19437 sec. 3.3.2); MXFP8 an E8M0 byte per 32
// (OCP Microscaling Formats spec v1.0); NVFP4 an E4M3 byte per 16 (NVIDIA, "Pretraining Large
// Language Models with NVFP4", arXiv 2509.25149), both on Blackwell's block-scaled tensor cores.
const std::vector<PrecisionSpec>& precisions() {
  static const std::vector<PrecisionSpec> all = {
      {"bf16", DType::bf16, 2, false, false},
      {"fp8", DType::fp8, 1, true, false},
      {"fp8-delayed", DType::fp8, 1, false, false},
      {"fp8-block", DType::fp8, 1 + 4.0 / 128, false, false},
      {"mxfp8", DType::fp8, 1 + 1.0 / 32, false, true},
      {"nvfp4", DType::fp4, 0.5 + 1.0 / 16, false, true},
  };
  return all;
}
}  // namespace

double param_gather_bytes(const ParallelPlan& p) { return p.fp8_param_gather ? precision_spec(p.precision).bytes : 2.0; }

std::vector<std::string> precision_names() {
  std::vector<std::string> out;
  for (const PrecisionSpec& s : precisions()) out.emplace_back(s.name);
  return out;
}

namespace {
// The precision called `name`, or an input error at `pointer`.
PrecisionSpec known_precision(std::string_view name, std::string_view source, const std::string& pointer) {
  for (const PrecisionSpec& s : precisions()) {
    if (s.name == name) return s;
  }
  throw sim::InputError(std::string(source), pointer,
                        fmt::format("found {}{}, expected one of {}", sim::quote(name), sim::did_you_mean(name, precision_names()),
                                    fmt::join(precision_names(), ", ")));
}
}  // namespace

PrecisionSpec precision_spec(std::string_view name, std::string_view source, std::string_view where) {
  return known_precision(name, source, fmt::format("{}/precision", where));
}

namespace {
// Throws, at `pointer`, when the GPU cannot run precision `name`.
void check_gpu_precision(std::string_view name, const GpuSpec& gpu, std::string_view source, const std::string& pointer) {
  const PrecisionSpec s = known_precision(name, source, pointer);
  const bool block_scaled = gpu.supports(DType::fp4);  // Blackwell's fifth-generation tensor cores
  std::string missing;
  if (s.blackwell && !block_scaled) {
    missing = "block-scaled tensor cores (Blackwell: B200, GB200, B300, GB300)";
  } else if (s.low() && !gpu.supports(s.gemm)) {
    missing = fmt::format("{} tensor cores (Hopper and later)", to_string(s.gemm));
  }
  if (missing.empty()) return;
  std::vector<std::string> ok;
  for (const PrecisionSpec& q : precisions()) {
    if ((!q.blackwell || block_scaled) && (!q.low() || gpu.supports(q.gemm))) ok.emplace_back(q.name);
  }
  throw sim::InputError(std::string(source), pointer,
                        fmt::format("{} needs {}, which the {} lacks; on the {}: {}", s.name, missing, gpu.name, gpu.name, fmt::join(ok, ", ")));
}
}  // namespace

void validate_precision(const ParallelPlan& p, const GpuSpec& gpu, std::string_view source, std::string_view where) {
  check_gpu_precision(p.precision, gpu, source, fmt::format("{}/precision", where));
  for (const auto& [module, name] : p.module_precision) check_gpu_precision(name, gpu, source, fmt::format("{}/module_precision/{}", where, module));
}

StepContext step_context(const ParallelPlan& plan) {
  StepContext ctx{plan.framework, plan.precision, plan.cuda_graphs == "full", {}, plan.ep > 1 && plan.overlap_ep_comm,
                  plan.dp * plan.cp > 1 && (plan.overlap_grad_reduce || plan.overlap_param_gather)};
  for (const auto& [module, name] : plan.module_precision) {
    if (name != "bf16" && name != plan.precision && std::find(ctx.module_precisions.begin(), ctx.module_precisions.end(), name) == ctx.module_precisions.end()) {
      ctx.module_precisions.push_back(name);
    }
  }
  return ctx;
}

bool ep_folded(const ParallelPlan& p) { return p.ep > 1 && (p.dp * p.cp) % p.ep != 0; }
int ep_stride(const ParallelPlan& p) { return ep_folded(p) ? 1 : p.tp; }
double expert_dp(const ParallelPlan& p) { return static_cast<double>(p.dp) * p.cp * (ep_folded(p) ? p.tp : 1) / p.ep; }

double experts_per_token(const ParallelPlan& p, const ModelSpec& m) { return p.experts_per_token > 0 ? p.experts_per_token : m.moe.top_k; }

PipelinePlacement pipeline_placement(const ParallelPlan& p) {
  if (p.schedule == "zb-v" || p.schedule == "stp") return PipelinePlacement::vee;
  if (p.schedule == "dualpipe") return PipelinePlacement::bidirectional;
  return PipelinePlacement::interleaved;
}

PipelineShape pipeline_shape(const ParallelPlan& p) {
  const PipelinePlacement where = pipeline_placement(p);
  return {p.pp, p.micro_batches(), where == PipelinePlacement::bidirectional ? 2 * p.vp : p.vp, where};
}

int virtual_stage_of(const ParallelPlan& p, int stage, int chunk) { return pipeline_shape(p).virtual_stage(stage, chunk); }

int layers_of(const ParallelPlan& p, const ModelSpec& m, int vs) {
  if (!p.pipeline_layout.empty()) return p.pipeline_layout[static_cast<std::size_t>(vs)];
  const int n = p.virtual_stages();
  if (!p.split_embedding_and_loss) return m.layers / n + (vs < m.layers % n ? 1 : 0);
  // The embedding is the first unit of the split and the loss the last (Megatron's
  // --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split).
  const int units = m.layers + 2;
  return units / n + (vs < units % n ? 1 : 0) - (vs == 0 ? 1 : 0) - (vs == n - 1 ? 1 : 0);
}

int first_layer_of(const ParallelPlan& p, const ModelSpec& m, int vs) {
  if (!p.pipeline_layout.empty()) return std::accumulate(p.pipeline_layout.begin(), p.pipeline_layout.begin() + vs, 0);
  // The units (layers, and with split_embedding_and_loss the embedding first) of the stages
  // before vs, in closed form: each stage takes units / n, the first units % n one more.
  const int n = p.virtual_stages();
  const int units = m.layers + (p.split_embedding_and_loss ? 2 : 0);
  const int before = vs * (units / n) + std::min(vs, units % n);
  return before - (p.split_embedding_and_loss && vs > 0 ? 1 : 0);
}

namespace {
double kind_activation_bytes(const ParallelPlan& p, const ModelSpec& m, LayerKind kind, Recompute rc);
double kind_backward_bytes(const ParallelPlan& p, const ModelSpec& m, LayerKind kind);
}  // namespace

double kind_activation_bytes(const ParallelPlan& p, const ModelSpec& m, LayerKind kind) { return kind_activation_bytes(p, m, kind, p.recompute); }

double layer_activation_bytes(const ParallelPlan& p, const ModelSpec& m, int layer) { return kind_activation_bytes(p, m, m.layer_kind(layer)); }
double layer_backward_bytes(const ParallelPlan& p, const ModelSpec& m, int layer) { return kind_backward_bytes(p, m, m.layer_kind(layer)); }

double mtp_activation_bytes(const ParallelPlan& p, const ModelSpec& m) {
  if (m.mtp_layers == 0) return 0;
  const double tokens = static_cast<double>(p.micro_batch) * static_cast<double>(p.seq_len) / p.cp;
  double block = 0;
  for (const LayerKind k : m.mtp_block()) block += kind_activation_bytes(p, m, k);
  // Per module: its block, the two norms' inputs and the projection's 2h input (the sequence
  // region), the logits' inputs left to the output layer's own accounting.
  const double sp = p.sequence_parallel && p.tp > 1 ? p.tp : 1.0;
  return m.mtp_layers * (block + tokens * (2 * 2 + 2 * 2) * static_cast<double>(m.hidden) / sp);
}

namespace {
// torchtitan's per-op selective activation checkpointing (torchtitan/parallelisms/parallelize_llama.py
// at 9dec370, December 2024, and models/llama3/parallelize_llama.py at e7c0cae, June 2025): in
// each layer's checkpoint a policy marks MUST_SAVE the outputs of the ops in _save_list (aten.mm,
// the flash and memory-efficient attention kernels, the functional reduce_scatter_tensor) except
// every second aten.mm in forward order; the checkpoint also keeps the layer's input. Per token
// of the rank's micro-batch, in bytes: the input (2h, sequence-parallel), the odd-numbered matmul
// outputs in bf16 (Llama: wq, wk, wv, wo, w1, w3, w2 keep wq, wv, w1 and w2), the attention's
// output in bf16 and its log-sum-exp in fp32 per head, and under sequence parallelism the
// reduce-scattered outputs of the row-parallel layers (wo, w2). Matmuls run on the whole sequence
// (DTensor gathers it for the column-parallel ones); a column-parallel output is split by tp, a
// row-parallel one is the full hidden width before its reduce-scatter. Routed experts run grouped
// GEMMs, not aten.mm: recomputed. In a low precision the linear layers' GEMMs are
// torch._scaled_mm, outside the list, while the policy keeps the amax's max (Dec 2024: and abs)
// outputs: not modelled, the bf16 set is used.
double op_selective_kept(const ParallelPlan& p, const ModelSpec& m, LayerKind kind, double hq, double hk, double hv, double ho) {
  const double h = static_cast<double>(m.hidden), t = p.tp;
  const double sp = p.sequence_parallel && p.tp > 1 ? t : 1.0;
  std::vector<double> mm;  // output elements per token of each aten.mm, in forward order
  double kept = 2 * h / sp;
  if (kind.mixer == Mixer::attention) {
    mm.insert(mm.end(), {hq / t, hk / t, hv / t, h});
    kept += 2 * ho / t + 4 * static_cast<double>(m.heads) / t;
  } else if (kind.mixer == Mixer::mamba) {
    const MambaSpec& s = m.mamba;
    const auto inner = static_cast<double>(s.inner()), bc = static_cast<double>(2 * s.groups * s.state_dim);
    mm.insert(mm.end(), {(2 * inner + bc + s.heads) / t, h});
  }
  const auto mlp = [&](double f) {
    mm.push_back(f / t);
    if (m.mlp == MlpKind::swiglu) mm.push_back(f / t);
    mm.push_back(h);
  };
  if (kind.ffn == Ffn::dense) mlp(static_cast<double>(m.ffn_hidden));
  if (kind.ffn == Ffn::moe) {
    mm.push_back(static_cast<double>(m.moe.experts));  // the router, replicated
    for (int e = 0; e < m.moe.shared_experts; ++e) mlp(static_cast<double>(m.moe.expert_ffn));
  }
  for (std::size_t i = 0; i < mm.size(); i += 2) kept += 2 * mm[i];  // the 1st, 3rd, 5th, ...
  if (sp > 1) kept += (kind.mixer != Mixer::none ? 2 * h / sp : 0) + (kind.ffn != Ffn::none ? 2 * h / sp : 0);
  return kept;
}

double kind_activation_bytes(const ParallelPlan& p, const ModelSpec& m, LayerKind kind, Recompute rc) {
  const double tokens = static_cast<double>(p.micro_batch) * static_cast<double>(p.seq_len) / p.cp;
  const double h = static_cast<double>(m.hidden), t = p.tp;
  const double sp = p.sequence_parallel && p.tp > 1 ? t : 1.0;
  // GPT-style models (GELU) train with dropout: a 1-byte mask after attention and after the MLP.
  const bool dropout = m.mlp == MlpKind::gelu;
  if (rc == Recompute::full) return tokens * 2 * h / sp;  // the layer's input only
  const double heads = m.heads;
  const double hq = heads * static_cast<double>(m.qk_head_dim());
  const double hk = (m.mla.enabled() ? heads : m.kv_heads) * static_cast<double>(m.qk_head_dim());
  const double hv = (m.mla.enabled() ? heads : m.kv_heads) * static_cast<double>(m.v_head_dim());
  const double ho = heads * static_cast<double>(m.v_head_dim());
  if (rc == Recompute::op_selective) return tokens * op_selective_kept(p, m, kind, hq, hk, hv, ho);
  // A linear layer's input is kept for its wgrad as its GEMM reads it: in a low precision, the
  // quantized copy (Transformer Engine saves the cast input), `lin` of the bf16 bytes.
  const double lin = p.precision == "bf16" ? 1.0 : precision_spec(p.precision).bytes / 2;  // called per layer: bf16 without the lookup
  // Sequence region (split by sequence parallelism): per sublayer its norm's input and its
  // first linear layer's input (QKV or in_proj; the MLP's), the dropout masks.
  const bool attention = kind.mixer == Mixer::attention;
  const double sub = kind.sublayers();
  double seq = sub * (2 * h + 2 * h * lin) + (dropout ? sub * h : 0);
  // Selective recompute's modules (RecomputeModules): a rerun norm's output and the experts'
  // activation output are not kept.
  const RecomputeModules rerun = rerun_modules(p.recompute_modules, rc);
  // (A MoE layer rerun whole keeps its pre-MLP norm's output as its input: the moe rule below.)
  const bool moe_rerun = kind.ffn == Ffn::moe && rerun.moe;
  if (rerun.layernorm) seq -= (unfused_norms(m, kind) - (moe_rerun ? 1 : 0)) * 2 * h * lin;
  // Tensor-parallel region: Q, K, V, the output projection's input, and the attention scores
  // when they are kept (no flash attention, no selective recompute): softmax output, and with
  // dropout its mask and output, per head and key. A Mamba-2 mixer keeps in_proj's output (z, x,
  // B, C, dt), the conv1d's, the scan's output and out_proj's input.
  // The output projection's input is the attention's output, which the fused attention keeps in
  // bf16 for its own backward; under Megatron in a low precision other than delayed-scaling FP8
  // the projection keeps that same tensor rather than a quantized copy of it
  // (set_save_original_input(linear_proj) in megatron/core/transformer/attention.py at d98e8a64,
  // Transformer Engine 2.6 on), with delayed scaling the copy besides. (PyTorch's the quantized
  // input alone, as before: what the torchtitan memory rows were validated with.)
  double proj = 2 * ho * lin;
  if (p.framework == "megatron" && p.precision != "bf16") proj = 2 * ho + (p.precision == "fp8-delayed" ? 2 * ho * lin : 0);
  double tpr = attention ? 2 * (hq + hk) + 2 * hv + proj : 0;
  // mla_up_proj: Q, K and V are rebuilt from the kept latents (the up-projections' inputs) before
  // the attention's backward, so they are not kept.
  if (attention && m.mla.enabled() && rerun.mla_up_proj) tpr -= 2 * (hq + hk) + 2 * hv;
  double scores = 0;
  if (attention && !p.flash_attention && (rc == Recompute::none || (rc == Recompute::selective && !rerun.core_attn))) {
    scores = (dropout ? 5.0 : 2.0) * heads * static_cast<double>(p.seq_len) / p.cp;
  }
  if (kind.mixer == Mixer::mamba) {
    const MambaSpec& s = m.mamba;
    const auto inner = static_cast<double>(s.inner()), bc = static_cast<double>(2 * s.groups * s.state_dim);
    tpr += 2 * (2 * inner + bc + s.heads) + 2 * (inner + bc) + 2 * inner + 2 * inner * lin;
  }
  double routed = 0;  // MoE: per token of the rank's sequence shard, not split further
  if (kind.ffn == Ffn::moe) {
    const double fe = static_cast<double>(m.moe.expert_ffn);
    const double width = static_cast<double>(m.moe.latent > 0 ? m.moe.latent : m.hidden);
    // The first GEMM's outputs (kept for the activation's backward) and the second's input.
    const double per = (m.mlp == MlpKind::swiglu ? 4 * fe : 2 * fe) + 2 * fe * lin;
    // Routed copies (top_k per token, the busiest rank's share) with their dispatched inputs;
    // shared experts are tensor-parallel.
    routed = experts_per_token(p, m) * p.expert_imbalance * (per - (rerun.moe_act ? 2 * fe * lin : 0) + 2 * width * lin);
    tpr += m.moe.shared_experts * per;
    // moe: the layer keeps its input (the pre-MLP norm's output, in bf16, unless layernorm reruns
    // that norm too) in place of its first linear layer's input, and nothing inside; its forward
    // reruns before its backward.
    if (moe_rerun) routed = 0, tpr -= m.moe.shared_experts * per, seq += (rerun.layernorm ? 0 : 2 * h) - 2 * h * lin;
  } else if (kind.ffn == Ffn::dense) {
    const double f = static_cast<double>(m.ffn_hidden);
    // mlp: likewise for a dense MLP (its norm fused into fc1: the checkpoint's input is the
    // norm's, already counted, so fc1's input goes too).
    if (rerun.mlp) {
      seq -= 2 * h * lin;
    } else {
      tpr += (m.mlp == MlpKind::swiglu ? 4 * f : 2 * f) + 2 * f * lin;
    }
  }
  return tokens * ((seq + routed) / sp + tpr / t + scores / t);
}

// One layer's backward beside the kept activations (per token of the micro-batch on this GPU).
// With recompute, the forward it reruns rebuilds the activations it did not keep: those of no
// recompute less the kept ones (full recompute: everything but the input). The gradients in
// flight: of the layer's output and of its input (2h each, sequence-parallel), and of the largest
// sublayer's first GEMM's outputs, as large as those outputs (Q, K and V; Mamba-2's in_proj; the
// MLP's fc1 and, SwiGLU, its gate; MoE: the routed copies' and shared experts').
double kind_backward_bytes(const ParallelPlan& p, const ModelSpec& m, LayerKind kind) {
  const double tokens = static_cast<double>(p.micro_batch) * static_cast<double>(p.seq_len) / p.cp;
  const double h = static_cast<double>(m.hidden), t = p.tp;
  const double sp = p.sequence_parallel && p.tp > 1 ? t : 1.0;
  const double rebuilt =
      p.recompute == Recompute::none ? 0.0 : std::max(0.0, kind_activation_bytes(p, m, kind, Recompute::none) - kind_activation_bytes(p, m, kind));
  const double heads = m.heads, kv = m.mla.enabled() ? heads : m.kv_heads;
  double mixer = 0;
  if (kind.mixer == Mixer::attention) {
    mixer = 2 * (heads * static_cast<double>(m.qk_head_dim()) + kv * static_cast<double>(m.qk_head_dim() + m.v_head_dim())) / t;
  } else if (kind.mixer == Mixer::mamba) {
    const MambaSpec& s = m.mamba;
    mixer = 2 * (2 * static_cast<double>(s.inner()) + static_cast<double>(2 * s.groups * s.state_dim) + s.heads) / t;
  }
  const double gate = m.mlp == MlpKind::swiglu ? 2.0 : 1.0;
  double ffn = 0;
  if (kind.ffn == Ffn::dense) ffn = 2 * gate * static_cast<double>(m.ffn_hidden) / t;
  if (kind.ffn == Ffn::moe) {
    const double fe = static_cast<double>(m.moe.expert_ffn);
    ffn = experts_per_token(p, m) * p.expert_imbalance * 2 * gate * fe / sp + m.moe.shared_experts * 2 * gate * fe / t;
  }
  return rebuilt + tokens * (2 * 2 * h / sp + std::max(mixer, ffn));
}
}  // namespace

double offloaded_optimizer_bytes(const ParallelPlan& p, const ModelSpec& m) {
  if (p.optimizer_offload != "cpu") return 0;
  // The optimizer states of the GPU's shard (fp32 master and two moments, 12 B per parameter).
  double trainable = 0;
  const PipelineShape shape = pipeline_shape(p);
  for (int stage = 0; stage < p.pp; ++stage) {
    double t = 0;
    for (int c = 0; c < shape.chunks; ++c) t += chunk_gpu_params(m, p, shape.virtual_stage(stage, c)).trainable;
    trainable = std::max(trainable, t);
  }
  return 12 * trainable / (p.zero >= 1 ? static_cast<double>(p.dp) * p.cp : 1.0);
}

void check_host_memory(const MemoryEstimate& memory, const ParallelPlan& p, const ModelSpec& m, const GpuSpec& gpu, std::string_view source,
                       std::string_view where) {
  if (memory.host_activation_bytes <= 0) return;
  const double states = offloaded_optimizer_bytes(p, m);
  if (memory.host_activation_bytes + states <= gpu.host_memory_bytes) return;
  constexpr double gib = 1073741824.0;
  throw sim::InputError(std::string(source), fmt::format("{}/activation_offload", where),
                        fmt::format("activation offload of {:.1f} GiB per GPU{} does not fit the {:.1f} GiB of host memory each {} has; expected "
                                    "more recompute, more pipeline stages or smaller micro-batches",
                                    memory.host_activation_bytes / gib,
                                    states > 0 ? fmt::format(" beside {:.1f} GiB of offloaded optimizer states", states / gib) : "",
                                    gpu.host_memory_bytes / gib, gpu.name));
}

void validate_offload(const ParallelPlan& p, const ModelSpec& m, const GpuSpec& gpu, std::string_view source, std::string_view where) {
  if (p.activation_offload != "none") {
    const std::string field = fmt::format("{}/activation_offload", where);
    if (p.activation_offload != "cpu") {
      throw sim::InputError(std::string(source), field, fmt::format("found {}, expected none or cpu", sim::quote(p.activation_offload)));
    }
    if (gpu.host_memory_bytes <= 0 || gpu.host_link_bandwidth <= 0) {
      throw sim::InputError(std::string(source), field,
                            fmt::format("activation offload needs the {}'s host: its host memory and host link, which the catalog does not "
                                        "state; expected a --gpus file giving host_memory and host_link_bandwidth", gpu.name));
    }
  }
  if (p.optimizer_offload == "none") return;
  const std::string field = fmt::format("{}/optimizer_offload", where);
  if (p.optimizer_offload != "cpu") {
    throw sim::InputError(std::string(source), field, fmt::format("found {}, expected none or cpu", sim::quote(p.optimizer_offload)));
  }
  if (gpu.host_memory_bytes <= 0 || gpu.host_link_bandwidth <= 0 || gpu.host_memory_bandwidth <= 0) {
    throw sim::InputError(std::string(source), field,
                          fmt::format("cpu offload needs the {}'s host: its host memory, memory bandwidth and host link, which the catalog "
                                      "does not state; expected a --gpus file giving host_memory, host_memory_bandwidth and "
                                      "host_link_bandwidth", gpu.name));
  }
  const double states = offloaded_optimizer_bytes(p, m);
  if (states > gpu.host_memory_bytes) {
    throw sim::InputError(std::string(source), field,
                          fmt::format("cpu offload of {:.1f} GiB of optimizer states per GPU does not fit the {:.1f} GiB of host memory each "
                                      "{} has; expected ZeRO-1 over more data-parallel ranks or more pipeline stages",
                                      states / 1073741824.0, gpu.host_memory_bytes / 1073741824.0, gpu.name));
  }
}

double offloaded_optimizer_seconds(const ParallelPlan& p, const GpuSpec& gpu, double params, int buckets) {
  // Per parameter of the shard: its gradient down (plan.grad_reduce's bytes), Adam on the host
  // (kAdamBytesPerParam at the host's memory bandwidth, its sustained share assumed 70%, a
  // STREAM-like fraction), the bf16 weight back up; the three pipelined over the buckets.
  const double down = params * grad_reduce_bytes(p) / gpu.host_link_bandwidth;
  const double cpu = params * kAdamBytesPerParam / (0.7 * gpu.host_memory_bandwidth);
  const double up = params * 2 / gpu.host_link_bandwidth;
  const double slowest = std::max({down, cpu, up});
  return slowest + (down + cpu + up - slowest) / std::max(1, buckets);
}

void validate_lora(const ParallelPlan& p, const ModelSpec& m, std::string_view source, std::string_view where) {
  if (!p.lora.enabled) return;
  const auto bad = [&](const std::string& message) { throw sim::InputError(std::string(source), fmt::format("{}/lora", where), message); };
  if (p.lora.rank < 1 || p.lora.rank > m.hidden) {
    bad(fmt::format("rank: found {}, expected 1 to {}'s hidden size {} (a low-rank adapter)", p.lora.rank, m.name, m.hidden));
  }
  if (!p.lora.qkv && !p.lora.proj && !p.lora.fc1 && !p.lora.fc2) {
    bad("targets: found none, expected one or more of linear_qkv, linear_proj, linear_fc1, linear_fc2");
  }
}

double lora_layer_params(const ModelSpec& m, const ParallelPlan& p, LayerKind k) {
  if (!p.lora.enabled) return 0;
  const double r = p.lora.rank, h = static_cast<double>(m.hidden), tp = p.tp;
  double n = 0;
  if (k.mixer == Mixer::attention) {
    const double qkv = static_cast<double>(m.heads + 2 * m.kv_heads) * static_cast<double>(m.qk_head_dim()) / tp;
    const double o = static_cast<double>(m.heads) * static_cast<double>(m.v_head_dim()) / tp;
    if (p.lora.qkv) n += r * (h + qkv);
    if (p.lora.proj) n += r * (o + h);
  }
  if (k.ffn == Ffn::dense) {
    const double f = static_cast<double>(m.ffn_hidden) / tp;
    if (p.lora.fc1) n += r * (h + (m.mlp == MlpKind::swiglu ? 2 : 1) * f);
    if (p.lora.fc2) n += r * (f + h);
  }
  return n;
}

GpuParams chunk_gpu_params(const ModelSpec& m, const ParallelPlan& p, int vs) {
  GpuParams g;
  const double tp = p.tp;
  const auto add_layer = [&](LayerKind k) {
    g.trainable += lora_layer_params(m, p, k);
    if (k.ffn != Ffn::moe) {
      g.dense += static_cast<double>(m.layer_params(k)) / tp;
      return;
    }
    // The router is replicated; the LatentMoE projections and shared experts are split by tp.
    g.dense += static_cast<double>(m.layer_params(k) - m.moe_mlp_params()) / tp + static_cast<double>(m.hidden * m.moe.experts) +
               static_cast<double>(2 * m.hidden * m.moe.latent + m.moe.shared_experts * m.shared_expert_params()) / tp;
    g.expert += static_cast<double>(m.moe.experts * m.routed_expert_params()) / p.ep;
  };
  const int first = first_layer_of(p, m, vs);
  for (int l = first; l < first + layers_of(p, m, vs); ++l) add_layer(m.layer_kind(l));
  const double table = static_cast<double>(m.vocab * m.hidden) / tp;
  if (vs == 0) g.dense += table, g.embedding += table;
  if (vs == p.virtual_stages() - 1) {
    // The output layer (tied embeddings share the first stage's copy when it is the same stage)
    // and the final norm; MTP modules with their own copy of the input embedding.
    if (!(m.tied_embeddings && vs == 0)) g.dense += table, g.embedding += table;
    g.dense += static_cast<double>(m.hidden);
    for (int k = 0; k < m.mtp_layers; ++k) {
      g.dense += static_cast<double>(2 * m.hidden + 2 * m.hidden * m.hidden) / tp;
      for (const LayerKind kind : m.mtp_block()) add_layer(kind);
    }
    if (m.mtp_layers > 0 && vs != 0) g.dense += table, g.embedding += table;
  }
  if (!p.lora.enabled) g.trainable = g.dense + g.expert;
  return g;
}

namespace {

struct StageParams {
  double trainable = 0;  // with LoRA the adapters (replicated over dp), else dense + expert
  double dense = 0;   // parameters sharded by tp (and ZeRO over dp x cp)
  double expert = 0;  // routed-expert parameters (sharded by ep, ZeRO over dp x cp / ep)
  double largest_chunk = 0;  // of the stage's chunks (dense + expert)
  double largest_layer = 0;  // a chunk's parameters over its layers, the largest (run_step's gather piece)
  double largest_block = 0;  // a chunk's parameters without its embedding and output layer, over its layers, the largest
  double embedding = 0;      // of dense: the input embedding and the output layer (bf16 GEMMs)
};

StageParams stage_params(const ParallelPlan& p, const ModelSpec& m, int stage) {
  StageParams s;
  const PipelineShape shape = pipeline_shape(p);
  for (int c = 0; c < shape.chunks; ++c) {
    const int vs = shape.virtual_stage(stage, c);
    const GpuParams g = chunk_gpu_params(m, p, vs);
    s.dense += g.dense;
    s.expert += g.expert;
    s.embedding += g.embedding;
    s.trainable += g.trainable;
    const double chunk = g.dense + g.expert;
    s.largest_chunk = std::max(s.largest_chunk, chunk);
    s.largest_layer = std::max(s.largest_layer, chunk / std::max(1, layers_of(p, m, vs)));
    s.largest_block = std::max(s.largest_block, (chunk - g.embedding) / std::max(1, layers_of(p, m, vs)));
  }
  return s;
}

}  // namespace

bool fp8_any_layout(const GpuSpec& gpu) { return gpu.supports(DType::fp4); }

MemoryEstimate estimate_memory(const ParallelPlan& p, const ModelSpec& m, const PipelinePlan& schedule, bool fp8_any_layout) {
  MemoryEstimate best;
  const double dp_dense = static_cast<double>(p.dp) * p.cp;
  const double dp_expert = expert_dp(p);
  const bool fsdp2 = p.sharding == "fsdp2";
  const double tokens = static_cast<double>(p.micro_batch) * static_cast<double>(p.seq_len) / p.cp;
  const double sp_split = p.sequence_parallel && p.tp > 1 ? p.tp : 1.0;
  // One layer's backward, per layer kind (the stage's largest is what it adds at its peak).
  std::map<int, double> backward_of_kind;
  const auto layer_backward = [&](int layer) {
    const LayerKind k = m.layer_kind(layer);
    const auto it = backward_of_kind.find(k.key());
    return it != backward_of_kind.end() ? it->second : backward_of_kind[k.key()] = kind_backward_bytes(p, m, k);
  };
  for (int stage = 0; stage < p.pp; ++stage) {
    const StageParams sp = stage_params(p, m, stage);
    MemoryEstimate e;
    e.stage = stage;
    e.params_per_gpu = sp.dense + sp.expert;
    const auto shard = [&](double bytes_per_param, bool sharded) {
      return sharded ? bytes_per_param * (sp.dense / dp_dense + sp.expert / dp_expert) : bytes_per_param * (sp.dense + sp.expert);
    };
    // bf16 weights, and for a low precision the quantized copies of the linear layers' weights
    // its GEMMs read, cached for the step (Transformer Engine's weight caching): row- and
    // column-wise, or one where the GPU takes per-tensor-scaled FP8 in any layout (Blackwell;
    // block scales run along the reduction dimension, so MXFP8 and NVFP4 keep both). With
    // fp8_param_gather the linear layers' weights are those quantized tensors themselves
    // (Megatron's fp8_param: built under Transformer Engine's fp8_model_init), the embedding and
    // output layer stay bf16. ZeRO-3 shards the weights, not the copies of the layers in use
    // (left out: one layer's).
    const PrecisionSpec prec = precision_spec(p.precision);
    const double layouts = prec.low() && fp8_any_layout && prec.gemm == DType::fp8 && !prec.blackwell ? 1 : 2;
    if (p.fp8_param_gather) {
      const double embedding = sp.embedding / (p.zero >= 3 ? dp_dense : 1.0);
      e.params_bytes = shard(prec.bytes * layouts, p.zero >= 3) + (2 - prec.bytes * layouts) * embedding;
    } else {
      e.params_bytes = shard(2, p.zero >= 3);
      if (prec.low() && p.zero < 3) e.params_bytes += (sp.dense + sp.expert - sp.embedding) * prec.bytes * layouts;
    }
    // The gradient buffer, in the dtype gradients are reduced in. With a 16-bit buffer the
    // optimizer's fp32 copy of its shard's gradients is made at the step and left out (1/dp).
    e.grads_bytes = shard(grad_reduce_bytes(p), p.zero >= 2);
    e.optimizer_bytes = shard(12, p.zero >= 1);
    if (fsdp2) {
      // FSDP2's mixed precision (torch.distributed.fsdp MixedPrecisionPolicy, param_dtype bf16):
      // the sharded parameters stay fp32 and are the optimizer's master weights, cast to bf16 (or
      // float8) as they are all-gathered; the optimizer keeps the two moments. The sharded fp32
      // gradients count though the step's zero_grad (set_to_none) frees them: their blocks stay
      // in the caching allocator, which PyTorch reports as reserved.
      e.params_bytes = shard(4, true);
      e.optimizer_bytes = shard(8, true);
    }
    if (p.optimizer_offload == "cpu") e.optimizer_bytes = 0;  // in host memory
    if (p.lora.enabled) {
      // A frozen base: gradients and optimizer states (fp32 master and moments) of the adapters
      // only, sharded over the whole data-parallel group as ZeRO says; the adapters' own bf16
      // weights beside the base's.
      const auto adapters = [&](double bytes, bool sharded) { return bytes * sp.trainable / (sharded ? dp_dense : 1.0); };
      e.grads_bytes = adapters(grad_reduce_bytes(p), p.zero >= 2);
      e.optimizer_bytes = p.optimizer_offload == "cpu" ? 0 : adapters(12, p.zero >= 1);
      e.params_bytes += 2 * sp.trainable;
    }
    // ZeRO-3 gathers full parameters for the ops it runs: as run_step gathers them, one layer
    // piece for the op running and one prefetched (PyTorch FSDP's `limit_all_gathers`: "only two
    // consecutive FSDP instances (the current instance running computation and the next instance
    // whose all-gather is prefetched)", torch.distributed.fsdp API docs), or a whole chunk at a
    // time without overlap. FSDP2 gathers per transformer layer; under pipeline parallelism
    // torchtitan does not reshard after the forward (apply_fsdp: reshard_after_forward=False
    // "to avoid per-microbatch all-gathers") and torch.distributed.pipelining does not reshard
    // after the backward (PipelineStage.backward_maybe_with_nosync: set_reshard_after_backward(False)
    // until the last micro-batch): the stage's parameters stay gathered, bf16 (the linear layers'
    // in float8 with fp8_param_gather), and its gradients are not reduced but accumulated
    // unsharded in the reduce dtype (FSDPParam.to_accumulated_grad_if_needed: fp32).
    const bool gathering = p.zero >= 3 && dp_dense > 1;
    if (gathering && fsdp2 && p.pp > 1) {
      e.gathered_params_bytes = param_gather_bytes(p) * (sp.dense + sp.expert - sp.embedding) + 2 * sp.embedding;
      e.grads_bytes += grad_reduce_bytes(p) * (sp.dense + sp.expert);
    } else if (gathering && fsdp2) {
      e.gathered_params_bytes = param_gather_bytes(p) * 2 * sp.largest_block;
    } else if (gathering) {
      e.gathered_params_bytes = 2 * (p.overlap_param_gather ? 2 * sp.largest_layer : sp.largest_chunk);
    }
    // Activations: walk the stage's ops; a forward adds its chunk's layers, a backward frees them.
    double largest_layer_kept = 0;  // one micro-batch's, the stage's largest layer
    const PipelineShape shape = pipeline_shape(p);
    const int chunks = shape.chunks;
    std::vector<double> chunk_bytes(static_cast<std::size_t>(chunks), 0.0);
    double layer_backward_peak = 0;
    for (int c = 0; c < chunks; ++c) {
      const int vs = shape.virtual_stage(stage, c);
      const int first = first_layer_of(p, m, vs);
      for (int l = first; l < first + layers_of(p, m, vs); ++l) {
        const double kept = layer_activation_bytes(p, m, l);
        chunk_bytes[static_cast<std::size_t>(c)] += kept;
        largest_layer_kept = std::max(largest_layer_kept, kept);
        layer_backward_peak = std::max(layer_backward_peak, layer_backward(l));
      }
      if (vs == p.virtual_stages() - 1) chunk_bytes[static_cast<std::size_t>(c)] += mtp_activation_bytes(p, m);
    }
    double live = 0, peak = 0;
    for (const PipeOp& op : schedule[static_cast<std::size_t>(stage)]) {
      const double bytes = chunk_bytes[static_cast<std::size_t>(op.chunk)];
      if (op.kind == PipeOpKind::forward) peak = std::max(peak, live += bytes);
      if (op.kind == PipeOpKind::backward || op.kind == PipeOpKind::backward_input) live -= bytes;
    }
    e.activations_bytes = peak;
    if (p.activation_offload == "cpu") {
      // The kept activations live in host memory; the GPU holds the layers in transfer.
      e.activations_bytes = std::min(peak, kActivationOffloadWindow * largest_layer_kept);
      e.host_activation_bytes = peak;
    }
    // A layer's backward: beside what it rebuilds and its gradients, with ZeRO-2/3 the layer's
    // unsharded gradients before their reduce-scatter, in the reduce dtype (FSDP2: autograd's
    // bf16 ones and the reduce-scatter input it copies them to, in fp32: foreach_reduce); FSDP2
    // without pipeline parallelism also gathers the root module (the embedding, final norm and
    // output layer) from the start of the backward to its end, where the root's post-backward
    // reshards it and reduce-scatters the output layer's gradient, held unsharded in bf16 until
    // then.
    const double table = static_cast<double>(m.vocab * m.hidden) / p.tp;
    const bool last = stage == p.pp - 1;
    e.backward_bytes = layer_backward_peak;
    if (p.zero >= 2 && dp_dense > 1) {
      const double piece = fsdp2 ? sp.largest_block : sp.largest_layer;
      e.backward_bytes += piece * (fsdp2 && p.pp > 1 ? 2 : (fsdp2 ? 2 : 0) + grad_reduce_bytes(p));
    }
    if (gathering && fsdp2 && p.pp == 1) e.backward_bytes += 2 * (sp.embedding + static_cast<double>(m.hidden)) + 2 * table;
    // The loss's backward on the last stage: the logits of one micro-batch as plan.cross_entropy
    // holds them, and the inputs of the final norm and of the output layer kept for their backward.
    if (last) {
      const double per_logit = p.cross_entropy == "eager" ? (p.tp > 1 ? 16 : 12) : 4;
      e.logits_bytes = tokens * static_cast<double>(m.vocab) / p.tp * per_logit + tokens * 2 * 2 * static_cast<double>(m.hidden) / sp_split;
    }
    if (stage == 0 || e.total() > best.total()) best = e;
  }
  return best;
}

}  // namespace orrery::models
