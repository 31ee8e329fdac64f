#include "models/training/llm.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <cctype>
#include <tuple>
#include <fmt/format.h>

namespace orrery::models {

namespace {

using sim::iequals;

bool answers_to(const ModelSpec& m, std::string_view name) {
  return iequals(m.name, name) || std::any_of(m.aliases.begin(), m.aliases.end(), [&](const std::string& a) { return iequals(a, name); });
}

ModelSpec dense(std::string name, std::vector<std::string> aliases, int layers, std::int64_t hidden, int heads, int kv_heads,
                std::int64_t head_dim, std::int64_t ffn, std::int64_t vocab, MlpKind mlp, bool tied, std::string source) {
  ModelSpec m;
  m.name = std::move(name);
  m.aliases = std::move(aliases);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.head_dim = head_dim;
  m.ffn_hidden = ffn;
  m.vocab = vocab;
  m.mlp = mlp;
  m.tied_embeddings = tied;
  m.source = std::move(source);
  return m;
}

// Megatron GPT models: GELU MLP of 4h, tied embeddings (Megatron's default), head dim h/heads.
ModelSpec megatron(std::string name, int layers, std::int64_t hidden, int heads, std::int64_t vocab, std::string source) {
  return dense(std::move(name), {}, layers, hidden, heads, heads, hidden / heads, 4 * hidden, vocab, MlpKind::gelu, true, std::move(source));
}

// Megatron-Core benchmark models (2024): the same with untied output weights (their names count
// both: 7.1B = 6.58B + a 131072 x 4096 output layer).
ModelSpec megatron_untied(std::string name, int layers, std::int64_t hidden, int heads, std::int64_t vocab, std::string source) {
  ModelSpec m = megatron(std::move(name), layers, hidden, heads, vocab, std::move(source));
  m.tied_embeddings = false;
  return m;
}

std::vector<ModelSpec> builtin_models() {
  std::vector<ModelSpec> v;
  // GPT-3 175B: Brown et al., "Language Models are Few-Shot Learners" (2020), Table 2.1: 96 layers,
  // d_model 12288, 96 heads of 128, d_ff = 4 d_model; GPT-2 BPE vocabulary of 50257, tied embeddings.
  v.push_back(dense("gpt3-175b", {"gpt-3", "gpt3"}, 96, 12288, 96, 96, 128, 49152, 50257, MlpKind::gelu, true,
                    "Brown et al. 2020 (arXiv 2005.14165), Table 2.1"));
  // Llama 3: Meta, "The Llama 3 Herd of Models" (arXiv 2407.21783), Table 3, and the models'
  // config.json on Hugging Face (meta-llama/Meta-Llama-3-8B, -70B, Llama-3.1-405B, Llama-3.1-8B):
  // SwiGLU, RMSNorm, GQA with 8 KV heads, vocabulary 128256, untied embeddings.
  v.push_back(dense("llama3-8b", {"llama-3-8b", "meta-llama-3-8b"}, 32, 4096, 32, 8, 128, 14336, 128256, MlpKind::swiglu, false,
                    "Llama 3 Herd of Models (arXiv 2407.21783) Table 3; meta-llama/Meta-Llama-3-8B config.json"));
  v.push_back(dense("llama3.1-8b", {"llama-3.1-8b", "meta-llama-3.1-8b"}, 32, 4096, 32, 8, 128, 14336, 128256, MlpKind::swiglu, false,
                    "meta-llama/Llama-3.1-8B config.json (the Llama 3 8B architecture with a 128K context)"));
  v.push_back(dense("llama3-70b", {"llama-3-70b", "meta-llama-3-70b", "llama3.1-70b"}, 80, 8192, 64, 8, 128, 28672, 128256,
                    MlpKind::swiglu, false, "Llama 3 Herd of Models (arXiv 2407.21783) Table 3; meta-llama/Meta-Llama-3-70B config.json"));
  v.push_back(dense("llama3-405b", {"llama-3-405b", "llama3.1-405b", "llama-3.1-405b"}, 126, 16384, 128, 8, 128, 53248, 128256,
                    MlpKind::swiglu, false, "Llama 3 Herd of Models (arXiv 2407.21783) Table 3; meta-llama/Llama-3.1-405B config.json"));
  // Qwen2.5 (the models of StreamRL's evaluation, arXiv 2504.15930): Qwen/Qwen2.5-7B, -32B, -72B
  // config.json (Hugging Face): head dim 128, vocabulary 152064, untied embeddings; the 7B's layer
  // shapes (q 3584x3584, k/v 512x3584, gate/up 18944x3584) as printed by transformers.
  v.push_back(dense("qwen2.5-7b", {"qwen/qwen2.5-7b"}, 28, 3584, 28, 4, 128, 18944, 152064, MlpKind::swiglu, false,
                    "Qwen/Qwen2.5-7B config.json"));
  v.push_back(dense("qwen2.5-32b", {"qwen/qwen2.5-32b"}, 64, 5120, 40, 8, 128, 27648, 152064, MlpKind::swiglu, false,
                    "Qwen/Qwen2.5-32B config.json"));
  v.push_back(dense("qwen2.5-72b", {"qwen/qwen2.5-72b"}, 80, 8192, 64, 8, 128, 29568, 152064, MlpKind::swiglu, false,
                    "Qwen/Qwen2.5-72B config.json"));
  // Qwen3: Qwen/Qwen3-8B, Qwen3-30B-A3B, Qwen3-235B-A22B config.json (Hugging Face) and the Qwen3
  // technical report (arXiv 2505.09388) Tables 1-2: head dim 128, vocabulary 151936.
  v.push_back(dense("qwen3-8b", {"qwen/qwen3-8b"}, 36, 4096, 32, 8, 128, 12288, 151936, MlpKind::swiglu, false,
                    "Qwen3 technical report (arXiv 2505.09388) Table 1; Qwen/Qwen3-8B config.json"));
  {
    ModelSpec m = dense("qwen3-30b-a3b", {"qwen/qwen3-30b-a3b"}, 48, 2048, 32, 4, 128, 6144, 151936, MlpKind::swiglu, false,
                        "Qwen3 technical report (arXiv 2505.09388) Table 2; Qwen/Qwen3-30B-A3B config.json (128 experts, 8 "
                        "active, expert intermediate 768)");
    m.moe = {128, 8, 768, 0, 0, 0};
    v.push_back(m);
  }
  {
    ModelSpec m = dense("qwen3-235b-a22b", {"qwen/qwen3-235b-a22b"}, 94, 4096, 64, 4, 128, 12288, 151936, MlpKind::swiglu, false,
                        "Qwen3 technical report (arXiv 2505.09388) Table 2; Qwen/Qwen3-235B-A22B config.json (128 experts, 8 "
                        "active, expert intermediate 1536)");
    m.moe = {128, 8, 1536, 0, 0, 0};
    v.push_back(m);
  }
  {
    // Mixtral 8x7B: Jiang et al., "Mixtral of Experts" (arXiv 2401.04088), Table 1: 32 layers,
    // dim 4096, 32 heads, 8 KV heads, hidden 14336, 8 experts, top 2, vocabulary 32000.
    ModelSpec m = dense("mixtral-8x7b", {"mixtral"}, 32, 4096, 32, 8, 128, 14336, 32000, MlpKind::swiglu, false,
                        "Mixtral of Experts (arXiv 2401.04088) Table 1");
    m.moe = {8, 2, 14336, 0, 0, 0};
    v.push_back(m);
  }
  {
    // GPT-MoE-1.8T, the model NVIDIA names in its Blackwell training claims (GTC 2024 keynote). Its
    // shape is not published; the one public account (SemiAnalysis, July 2023, as reported by
    // Windows Report, 2024-03-19: "1.8T parameters across 120 layers, 16 experts ... about 111B
    // parameters per expert's MLP, 55B shared for attention", top 2, about 280B active) fixes it
    // with a GPT layer: attention 4h^2 x 120 = 55B and 16 gelu experts of 8h^2 x 120 = 111B each
    // give h = 10752 (84 heads of 128), expert ffn 4h = 43008; 1.83T total, 0.28T active. The
    // vocabulary is taken as cl100k's 100256 (assumed).
    ModelSpec m = dense("gpt-moe-1.8t", {"gpt-moe-1.8t-16e", "moe-1.8t"}, 120, 10752, 84, 84, 128, 43008, 100256, MlpKind::gelu, false,
                        "SemiAnalysis (July 2023) via Windows Report 2024-03-19: 120 layers, 16 experts of ~111B, 55B attention, top 2; "
                        "hidden derived (assumed vocabulary 100256)");
    m.moe = {16, 2, 43008, 0, 0, 0};
    v.push_back(m);
  }
  {
    // DeepSeek-V3: DeepSeek-AI, "DeepSeek-V3 Technical Report" (arXiv 2412.19437) section 4.2, and
    // deepseek-ai/DeepSeek-V3 config.json: 61 layers, hidden 7168, 128 heads, MLA with q rank 1536,
    // kv rank 512, per-head qk 128 + 64 rotary, v 128; 256 routed experts of 2048, top 8, 1 shared;
    // the first 3 layers dense with intermediate 18432; vocabulary 129280. (Multi-token
    // prediction modules are not modelled.)
    ModelSpec m = dense("deepseek-v3", {"deepseek-v3-671b"}, 61, 7168, 128, 128, 128, 18432, 129280, MlpKind::swiglu, false,
                        "DeepSeek-V3 Technical Report (arXiv 2412.19437) 4.2; deepseek-ai/DeepSeek-V3 config.json");
    m.moe = {256, 8, 2048, 1, 3, 0};
    m.mla = {1536, 512, 128, 64, 128};
    v.push_back(m);
  }
  {
    // DeepSeek-V3 with its multi-token-prediction module (the technical report's sec. 2.2 and
    // config.json num_nextn_predict_layers = 1): one MTP module of one MoE layer.
    ModelSpec m = v.back();
    m.name = "deepseek-v3-mtp";
    m.aliases = {"deepseek-v3-with-mtp"};
    m.mtp_layers = 1;
    m.source += " (num_nextn_predict_layers 1)";
    v.push_back(m);
  }
  {
    // GPT-OSS: OpenAI, "gpt-oss-120b & gpt-oss-20b Model Card" (arXiv 2508.10925) and
    // openai/gpt-oss-120b, -20b config.json: hidden 2880, 64 query heads of 64, 8 KV heads,
    // experts of intermediate 2880 (SwiGLU), top 4 of 128 (120b, 36 layers) or of 32 (20b, 24
    // layers); attention alternating a 128-token sliding window and full (layer_types: even
    // layers sliding), a learned sink per head; vocabulary 201088 (o200k_harmony), untied.
    // Left out: the attention biases (2880 + 2 x 512 per layer).
    for (const auto& [name, layers, experts] : {std::tuple{"gpt-oss-120b", 36, 128}, std::tuple{"gpt-oss-20b", 24, 32}}) {
      ModelSpec m = dense(name, {fmt::format("openai/{}", name)}, layers, 2880, 64, 8, 64, 2880, 201088, MlpKind::swiglu, false,
                          fmt::format("gpt-oss model card (arXiv 2508.10925); openai/{} config.json", name));
      m.moe = {experts, 4, 2880, 0, 0, 0};
      m.sliding_window = 128;
      m.full_attention_every = 2;
      m.attention_sinks = true;
      m.glu_clamp = 7.0;  // config.json swiglu_limit
      v.push_back(m);
    }
  }
  {
    // Nemotron 3 (NVIDIA, "Nemotron 3 Nano" technical report, arXiv 2512.20848): hybrid Mamba-2 /
    // attention / MoE stacks, as Megatron-Bridge's providers state them
    // (src/megatron/bridge/models/nemotronh/nemotron_h_provider.py: Nemotron3NanoProvider,
    // Nemotron3SuperProvider): squared-ReLU experts and shared expert, GQA with 2 KV groups of
    // 128, Mamba-2 heads of 64 with state 128 in 8 groups, vocabulary 131072, untied. The shared
    // expert (3712 = 2 x 1856 for Nano, 5376 = 2 x 2688 for Super) is written as two of the
    // expert's width: the same GEMMs. Super: LatentMoE (experts in a 1024 latent width) and 2
    // MTP modules of attention + MoE.
    ModelSpec nano = dense("nemotron-3-nano", {"nemotron-3-nano-30b-a3b", "nvidia-nemotron-3-nano-30b-a3b"}, 52, 2688, 32, 2, 128, 1856, 131072,
                           MlpKind::squared_relu, false,
                           "Nemotron 3 Nano report (arXiv 2512.20848); Megatron-Bridge nemotron_h_provider.py Nemotron3NanoProvider");
    nano.layer_pattern = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME";
    nano.moe = {128, 6, 1856, 2, 0, 0};
    nano.mamba = {64, 64, 128, 8, 4, 128};
    v.push_back(nano);
    ModelSpec super = dense("nemotron-3-super", {"nemotron-3-super-120b-a12b"}, 88, 4096, 32, 2, 128, 2688, 131072, MlpKind::squared_relu, false,
                            "Megatron-Bridge nemotron_h_provider.py Nemotron3SuperProvider");
    super.layer_pattern = "MEMEMEM*EMEMEMEM*EMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEM*EMEMEMEME";
    super.moe = {512, 22, 2688, 2, 0, 1024};
    super.mamba = {128, 64, 128, 8, 4, 128};
    super.mtp_layers = 2;
    super.mtp_pattern = "*E";
    v.push_back(super);
  }
  // Megatron-LM weak-scaling models. 2021 (A100): Narayanan et al., SC'21 (arXiv 2104.04473)
  // Table 1 and ../shared/data/megatron-lm/megatron_lm_a100_weak_scaling_2021.csv (vocabulary
  // 51200; heads from the paper's Table 1). 2024 (H100): Megatron-LM README "Performance
  // Benchmarking", ../shared/data/megatron-lm/megatron_core_h100_weak_scaling_2024.csv
  // (vocabulary 131072).
  const std::string src2021 = "Narayanan et al. SC'21 (arXiv 2104.04473) Table 1; megatron-lm/megatron_lm_a100_weak_scaling_2021.csv";
  v.push_back(megatron("megatron2021-1.7b", 24, 2304, 24, 51200, src2021));
  v.push_back(megatron("megatron2021-3.6b", 30, 3072, 32, 51200, src2021));
  v.push_back(megatron("megatron2021-7.5b", 36, 4096, 32, 51200, src2021));
  v.push_back(megatron("megatron2021-18b", 40, 6144, 48, 51200, src2021));
  v.push_back(megatron("megatron2021-39b", 48, 8192, 64, 51200, src2021));
  v.push_back(megatron("megatron2021-76b", 60, 10240, 80, 51200, src2021));
  v.push_back(megatron("megatron2021-145b", 80, 12288, 96, 51200, src2021));
  v.push_back(megatron("megatron2021-310b", 96, 16384, 128, 51200, src2021));
  v.push_back(megatron("megatron2021-530b", 105, 20480, 128, 51200, src2021));
  v.push_back(megatron("megatron2021-1t", 128, 25600, 160, 51200, src2021));
  const std::string src2024 = "Megatron-LM README, Performance Benchmarking (Megatron-Core r0.8); megatron-lm/megatron_core_h100_weak_scaling_2024.csv";
  v.push_back(megatron_untied("megatron2024-1.7b", 24, 2048, 16, 131072, src2024));
  v.push_back(megatron_untied("megatron2024-7.1b", 30, 4096, 32, 131072, src2024));
  v.push_back(megatron_untied("megatron2024-16b", 32, 6144, 48, 131072, src2024));
  v.push_back(megatron_untied("megatron2024-32b", 48, 7168, 56, 131072, src2024));
  v.push_back(megatron_untied("megatron2024-70b", 84, 8192, 64, 131072, src2024));
  v.push_back(megatron_untied("megatron2024-119b", 92, 10240, 80, 131072, src2024));
  v.push_back(megatron_untied("megatron2024-177b", 96, 12288, 96, 131072, src2024));
  v.push_back(megatron_untied("megatron2024-314b", 96, 16384, 128, 131072, src2024));
  v.push_back(megatron_untied("megatron2024-462b", 112, 18432, 144, 131072, src2024));
  // Korthikanti et al. 2022 (arXiv 2205.05198) 22B model: hidden 6144, 64 heads of 96, 48 layers
  // (../shared/data/megatron-lm/korthikanti2022_selective_recompute_a100.csv).
  v.push_back(megatron("megatron-22b", 48, 6144, 64, 51200, "Korthikanti et al. 2022 (arXiv 2205.05198); megatron-lm/korthikanti2022_selective_recompute_a100.csv"));
  return v;
}

}  // namespace

std::int64_t ModelSpec::attention_params() const {
  const std::int64_t norms = 2 * hidden;
  const std::int64_t o = static_cast<std::int64_t>(heads) * v_head_dim() * hidden;
  const std::int64_t sinks = attention_sinks ? heads : 0;
  if (mla.enabled()) {
    const std::int64_t q = mla.q_lora_rank > 0 ? hidden * mla.q_lora_rank + mla.q_lora_rank + mla.q_lora_rank * heads * qk_head_dim()
                                               : hidden * heads * qk_head_dim();
    const std::int64_t kv = hidden * (mla.kv_lora_rank + mla.qk_rope_dim) + mla.kv_lora_rank +
                            mla.kv_lora_rank * heads * (mla.qk_nope_dim + mla.v_head_dim);
    return q + kv + o + norms + sinks;
  }
  return hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim + o + norms + sinks;
}

std::int64_t ModelSpec::dense_mlp_params() const { return mlp_matrices(mlp) * hidden * ffn_hidden; }

std::int64_t ModelSpec::routed_expert_params() const { return mlp_matrices(mlp) * (moe.latent > 0 ? moe.latent : hidden) * moe.expert_ffn; }
std::int64_t ModelSpec::shared_expert_params() const { return mlp_matrices(mlp) * hidden * moe.expert_ffn; }
std::int64_t ModelSpec::moe_dense_params() const { return hidden * moe.experts + 2 * hidden * moe.latent; }

std::int64_t ModelSpec::moe_mlp_params() const {
  return moe_dense_params() + moe.experts * routed_expert_params() + moe.shared_experts * shared_expert_params();
}

std::int64_t ModelSpec::moe_active_mlp_params() const {
  return moe_dense_params() + moe.top_k * routed_expert_params() + moe.shared_experts * shared_expert_params();
}

std::int64_t ModelSpec::mamba_params() const {
  const MambaSpec& s = mamba;
  const std::int64_t in_proj = hidden * (2 * s.inner() + 2 * s.groups * s.state_dim + s.heads);
  const std::int64_t conv = s.conv_channels() * (s.conv_kernel + 1);
  return in_proj + conv + 3 * static_cast<std::int64_t>(s.heads) + s.inner() + s.inner() * hidden;  // A, D, dt bias; the gated norm; out_proj
}

namespace {
LayerKind kind_of_letter(char c, bool windowed) {
  switch (c) {
    case 'M': return {Mixer::mamba, Ffn::none, false};
    case '*': return {Mixer::attention, Ffn::none, windowed};
    case '-': return {Mixer::none, Ffn::dense, false};
    default: return {Mixer::none, Ffn::moe, false};  // 'E' (validate_model rejects others)
  }
}
}  // namespace

LayerKind ModelSpec::layer_kind(int layer) const {
  const auto windowed = [&](int ordinal) {
    return sliding_window > 0 && !(full_attention_every > 0 && (ordinal + 1) % full_attention_every == 0);
  };
  if (layer_pattern.empty()) {
    return {Mixer::attention, moe.enabled() && layer >= moe.dense_layers ? Ffn::moe : Ffn::dense, windowed(layer)};
  }
  const char c = layer_pattern[static_cast<std::size_t>(layer)];
  const int ordinal = c == '*' ? static_cast<int>(std::count(layer_pattern.begin(), layer_pattern.begin() + layer, '*')) : 0;
  return kind_of_letter(c, c == '*' && windowed(ordinal));
}

std::vector<LayerKind> ModelSpec::mtp_block() const {
  if (mtp_pattern.empty()) return {{Mixer::attention, moe.enabled() ? Ffn::moe : Ffn::dense, false}};
  std::vector<LayerKind> out;
  for (const char c : mtp_pattern) out.push_back(kind_of_letter(c, false));
  return out;
}

std::int64_t ModelSpec::layer_params(LayerKind k) const {
  std::int64_t p = hidden * k.sublayers();
  if (k.mixer == Mixer::attention) p += attention_params() - 2 * hidden;
  if (k.mixer == Mixer::mamba) p += mamba_params();
  if (k.ffn == Ffn::dense) p += dense_mlp_params();
  if (k.ffn == Ffn::moe) p += moe_mlp_params();
  return p;
}

std::int64_t ModelSpec::layer_active_params(LayerKind k) const {
  return layer_params(k) - (k.ffn == Ffn::moe ? moe_mlp_params() - moe_active_mlp_params() : 0);
}

std::int64_t ModelSpec::mtp_params() const {
  std::int64_t block = 0;
  for (const LayerKind k : mtp_block()) block += layer_params(k);
  return mtp_layers * (2 * hidden + 2 * hidden * hidden + block);
}

std::int64_t ModelSpec::embedding_params() const { return vocab * hidden * (tied_embeddings ? 1 : 2) + hidden; }

std::int64_t ModelSpec::params() const {
  std::int64_t p = embedding_params() + mtp_params();
  for (int l = 0; l < layers; ++l) p += layer_params(layer_kind(l));
  return p;
}

std::int64_t ModelSpec::active_params() const {
  std::int64_t p = embedding_params();
  for (int l = 0; l < layers; ++l) p += layer_active_params(layer_kind(l));
  std::int64_t block = 0;
  for (const LayerKind k : mtp_block()) block += layer_active_params(k);
  return p + mtp_layers * (2 * hidden + 2 * hidden * hidden + block);
}

std::int64_t ModelSpec::active_matmul_params() const {
  // Not the norms (nor MLA's low-rank norms, nor Mamba's A, D, dt bias, conv and gated norm).
  const auto matmul = [&](LayerKind k) {
    std::int64_t p = layer_active_params(k) - hidden * k.sublayers() - (attention_sinks && k.mixer == Mixer::attention ? heads : 0);
    if (k.mixer == Mixer::attention && mla.enabled()) p -= mla.kv_lora_rank + mla.q_lora_rank;
    if (k.mixer == Mixer::mamba) p -= mamba.conv_channels() * (mamba.conv_kernel + 1) + 3 * static_cast<std::int64_t>(mamba.heads) + mamba.inner();
    return p;
  };
  std::int64_t p = vocab * hidden;  // the output layer
  for (int l = 0; l < layers; ++l) p += matmul(layer_kind(l));
  std::int64_t block = 0;
  for (const LayerKind k : mtp_block()) block += matmul(k);
  return p + mtp_layers * (2 * hidden * hidden + block + vocab * hidden);
}

const ModelCatalog& ModelCatalog::builtin() {
  static const ModelCatalog catalog = [] {
    ModelCatalog c;
    c.models_ = builtin_models();
    return c;
  }();
  return catalog;
}

const ModelSpec* ModelCatalog::find(std::string_view name) const {
  for (const ModelSpec& m : models_) {
    if (answers_to(m, name)) return &m;
  }
  return nullptr;
}

std::vector<std::string> ModelCatalog::names() const {
  std::vector<std::string> out;
  for (const ModelSpec& m : models_) out.push_back(m.name);
  return out;
}

const ModelSpec& ModelCatalog::model(std::string_view name, std::string_view source, std::string_view where) const {
  if (const ModelSpec* m = find(name)) return *m;
  std::vector<std::string> candidates;
  for (const ModelSpec& m : models_) {
    candidates.push_back(m.name);
    candidates.insert(candidates.end(), m.aliases.begin(), m.aliases.end());
  }
  throw sim::InputError(std::string(source), std::string(where),
                        fmt::format("unknown model {}{}; known: {}", sim::quote(name), sim::did_you_mean(name, candidates),
                                    fmt::join(names(), ", ")));
}

void ModelCatalog::add_or_replace(ModelSpec spec) {
  for (ModelSpec& m : models_) {
    if (answers_to(m, spec.name)) {
      m = std::move(spec);
      return;
    }
  }
  models_.push_back(std::move(spec));
}

void validate_model(const ModelSpec& m, std::string_view source, std::string_view where) {
  const auto bad = [&](const std::string& message) {
    throw sim::InputError(std::string(source), std::string(where), fmt::format("model {}: {}", sim::quote(m.name), message));
  };
  if (m.layers <= 0) bad(fmt::format("layers: found {}, expected a positive count", m.layers));
  if (m.hidden <= 0) bad(fmt::format("hidden: found {}, expected a positive size", m.hidden));
  if (m.heads <= 0) bad(fmt::format("heads: found {}, expected a positive count", m.heads));
  if (m.kv_heads <= 0 || m.heads % m.kv_heads != 0) {
    bad(fmt::format("kv_heads: found {}, expected a divisor of heads={}", m.kv_heads, m.heads));
  }
  if (m.head_dim <= 0 && !m.mla.enabled()) bad(fmt::format("head_dim: found {}, expected a positive size", m.head_dim));
  if (!m.layer_pattern.empty() || !m.mtp_pattern.empty()) {
    for (const auto& [field, pattern] : {std::pair<std::string_view, const std::string&>{"layer_pattern", m.layer_pattern}, {"mtp_pattern", m.mtp_pattern}}) {
      for (std::size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c != 'M' && c != '*' && c != '-' && c != 'E') {
          bad(fmt::format("{}: found {} at position {}, expected M (Mamba-2), * (attention), - (MLP) or E (MoE)", field,
                          sim::quote(std::string(1, c)), i + 1));
        }
        if (c == 'M' && !m.mamba.enabled()) bad(fmt::format("{}: found M at position {}, but the model has no mamba section", field, i + 1));
        if (c == 'E' && !m.moe.enabled()) bad(fmt::format("{}: found E at position {}, but the model has no moe section", field, i + 1));
        if (c == '-' && m.ffn_hidden <= 0) bad(fmt::format("{}: found - at position {}, expected a positive ffn_hidden for its MLP", field, i + 1));
      }
    }
    if (!m.layer_pattern.empty() && static_cast<int>(m.layer_pattern.size()) != m.layers) {
      bad(fmt::format("layer_pattern: found {} letters, expected one per layer (layers={})", m.layer_pattern.size(), m.layers));
    }
  }
  if (m.mamba.enabled()) {
    const MambaSpec& s = m.mamba;
    if (s.head_dim <= 0 || s.state_dim <= 0 || s.conv_kernel <= 0 || s.chunk <= 0) {
      bad("mamba: expected positive head_dim, state_dim, conv_kernel and chunk");
    }
    if (s.groups <= 0 || s.heads % s.groups != 0) bad(fmt::format("mamba.groups: found {}, expected a divisor of mamba.heads={}", s.groups, s.heads));
  }
  if (m.sliding_window < 0) bad(fmt::format("sliding_window: found {}, expected 0 (none) or a positive number of keys", m.sliding_window));
  if (m.full_attention_every < 0) bad(fmt::format("full_attention_every: found {}, expected 0 or a positive period", m.full_attention_every));
  if (m.mtp_layers < 0) bad(fmt::format("mtp_layers: found {}, expected 0 or more", m.mtp_layers));
  if (m.moe.latent < 0) bad(fmt::format("moe.latent: found {}, expected 0 or a positive width", m.moe.latent));
  if (m.layer_pattern.empty() && m.ffn_hidden <= 0 && (!m.moe.enabled() || m.moe.dense_layers > 0)) {
    bad(fmt::format("ffn_hidden: found {}, expected a positive size", m.ffn_hidden));
  }
  if (m.vocab <= 0) bad(fmt::format("vocab: found {}, expected a positive size", m.vocab));
  if (m.moe.enabled()) {
    if (m.moe.top_k <= 0 || m.moe.top_k > m.moe.experts) {
      bad(fmt::format("moe.top_k: found {}, expected 1 to experts={}", m.moe.top_k, m.moe.experts));
    }
    if (m.moe.expert_ffn <= 0) bad(fmt::format("moe.expert_ffn: found {}, expected a positive size", m.moe.expert_ffn));
    if (m.moe.dense_layers < 0 || m.moe.dense_layers > m.layers) {
      bad(fmt::format("moe.dense_layers: found {}, expected 0 to layers={}", m.moe.dense_layers, m.layers));
    }
  }
  if (m.mla.enabled() && (m.mla.qk_nope_dim <= 0 || m.mla.qk_rope_dim < 0 || m.mla.v_head_dim <= 0)) {
    bad("mla: expected positive qk_nope_dim and v_head_dim");
  }
}

}  // namespace orrery::models
