// LLM architectures: dense (MHA/GQA, GELU or SwiGLU MLP), MoE (routed plus shared experts,
// leading dense layers) and MLA attention (DeepSeek-V3), as shapes. A built-in catalog cites
// each model's source (llm.cpp); users add their own in JSON (traces/model_json.hpp).
//   const ModelSpec& m = ModelCatalog::builtin().model("llama3-70b");
//   m.params()             // 70.6e9
//   m.active_params()      // per token, for MoE
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::models {

// Activation bytes a trained transformer layer keeps per token and hidden element with flash
// attention and no recomputation: 34 (Korthikanti et al., arXiv 2205.05198, Table 2). The
// multiplexing models size a tenant's activations with it.
inline constexpr double kActivationBytesPerElement = 34;

// GELU and squared ReLU (Nemotron-H) MLPs have two weight matrices, SwiGLU three (gate, up, down).
enum class MlpKind : std::uint8_t { gelu, swiglu, squared_relu };
inline int mlp_matrices(MlpKind k) { return k == MlpKind::swiglu ? 3 : 2; }

struct MoeSpec {
  int experts = 0;             // routed experts; 0 = a dense model
  int top_k = 0;               // experts per token
  std::int64_t expert_ffn = 0;  // intermediate size of one expert
  int shared_experts = 0;      // experts every token goes through
  int dense_layers = 0;        // the first layers keep a dense MLP (of ffn_hidden)
  // LatentMoE (Nemotron 3 Super): the routed experts work in a latent width, each token projected
  // down from hidden before dispatch and back up after combine; 0 = the experts take hidden.
  std::int64_t latent = 0;
  bool enabled() const { return experts > 0; }
};

// Mamba-2 mixer (Dao and Gu, "Transformers are SSMs", arXiv 2405.21060; Megatron-Core's
// MambaMixer): in_proj to z, x, B, C and dt; a causal depthwise conv1d over x, B and C; the SSD
// chunked scan; a gated RMSNorm; out_proj. heads x head_dim is the inner width.
struct MambaSpec {
  int heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t state_dim = 0;
  int groups = 0;             // B and C are shared by heads / groups heads
  int conv_kernel = 4;
  std::int64_t chunk = 128;   // the SSD scan's chunk length (mamba_ssm's default chunk_size)
  bool enabled() const { return heads > 0; }
  std::int64_t inner() const { return heads * head_dim; }
  std::int64_t conv_channels() const { return inner() + 2 * groups * state_dim; }
};

// What one layer holds: a token mixer (attention, Mamba-2 or none) and a feed-forward part
// (dense MLP, MoE or none). A standard transformer layer is attention + MLP; a hybrid model's
// pattern letter is one of them alone. `windowed`: attention over a sliding window.
enum class Mixer : std::uint8_t { none, attention, mamba };
enum class Ffn : std::uint8_t { none, dense, moe };
struct LayerKind {
  Mixer mixer = Mixer::attention;
  Ffn ffn = Ffn::dense;
  bool windowed = false;
  // As a step costs it: kept out of the low precision (ParallelPlan's bf16_layers), every linear
  // layer in bf16. The model's own kinds leave it false.
  bool bf16 = false;
  int key() const { return (static_cast<int>(mixer) * 8 + static_cast<int>(ffn) * 2 + (windowed ? 1 : 0)) * 2 + (bf16 ? 1 : 0); }
  int sublayers() const { return (mixer != Mixer::none ? 1 : 0) + (ffn != Ffn::none ? 1 : 0); }
  friend bool operator==(const LayerKind&, const LayerKind&) = default;
};

// Multi-head latent attention (DeepSeek-V2/V3): queries and keys/values through low-rank
// projections; per head, a non-rotary and a rotary part of the query/key dims.
struct MlaSpec {
  std::int64_t q_lora_rank = 0;
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_dim = 0;
  std::int64_t qk_rope_dim = 0;
  std::int64_t v_head_dim = 0;
  bool enabled() const { return kv_lora_rank > 0; }
};

struct ModelSpec {
  std::string name;
  std::vector<std::string> aliases;
  int layers = 0;
  std::int64_t hidden = 0;
  int heads = 0;
  int kv_heads = 0;            // = heads without GQA
  std::int64_t head_dim = 0;   // query/key (and value, without MLA)
  std::int64_t ffn_hidden = 0;  // dense MLP intermediate size
  std::int64_t vocab = 0;
  MlpKind mlp = MlpKind::swiglu;
  bool tied_embeddings = false;
  MoeSpec moe;
  MlaSpec mla;
  MambaSpec mamba;
  // Hybrid stacks (Nemotron-H, Nemotron 3): one letter per layer as Megatron's
  // hybrid_override_pattern writes it: M Mamba-2, * attention, - MLP, E MoE; `layers` is its
  // length. Empty: every layer is attention + MLP (MoE from moe.dense_layers on).
  std::string layer_pattern;
  // Sliding-window attention: a query attends to the last `sliding_window` keys (itself
  // included); every full_attention_every-th attention layer (counted from 1) attends to the
  // whole sequence (GPT-OSS 2: alternating; Gemma 3 6), 0 = all windowed. 0 = no window.
  std::int64_t sliding_window = 0;
  int full_attention_every = 0;
  bool attention_sinks = false;  // a learned sink logit per head in the softmax (GPT-OSS): params only
  // The GLU's two halves clamped to this limit before the activation (GPT-OSS: swiglu_limit 7.0,
  // Megatron's activation_func_clamp_value); 0 = none.
  double glu_clamp = 0;
  // Multi-token prediction (DeepSeek-V3 sec. 2.2): modules after the last layer on the last
  // stage, each a projection of [norm(h); norm(embedding)] from 2h to h, a block of layers
  // (mtp_pattern's letters; empty: one standard layer, MoE when the model has experts) and the
  // shared output layer with its own loss.
  int mtp_layers = 0;
  std::string mtp_pattern;
  std::string source;

  std::int64_t qk_head_dim() const { return mla.enabled() ? mla.qk_nope_dim + mla.qk_rope_dim : head_dim; }
  std::int64_t v_head_dim() const { return mla.enabled() ? mla.v_head_dim : head_dim; }
  bool moe_layer(int layer) const { return layer_kind(layer).ffn == Ffn::moe; }
  // Layer `layer`'s kind (0 .. layers-1), and the kinds of one MTP module's block.
  LayerKind layer_kind(int layer) const;
  std::vector<LayerKind> mtp_block() const;
  // Parameters of a layer of that kind: its mixer, its feed-forward part (all experts, or the
  // active ones per token) and its norms (one per sublayer).
  std::int64_t layer_params(LayerKind kind) const;
  std::int64_t layer_active_params(LayerKind kind) const;
  std::int64_t mamba_params() const;  // one Mamba-2 mixer
  std::int64_t mtp_params() const;    // all MTP modules (their own projections, norms and blocks)
  // Parameters of a standard layer's attention (projections and the two norms of the layer), of its
  // MLP (dense, or router plus all experts), of the embeddings and output layer.
  std::int64_t attention_params() const;
  std::int64_t dense_mlp_params() const;
  std::int64_t moe_mlp_params() const;       // all experts
  std::int64_t routed_expert_params() const;  // one routed expert (in the latent width with LatentMoE)
  std::int64_t shared_expert_params() const;  // one shared expert
  std::int64_t moe_dense_params() const;      // an MoE layer's router and LatentMoE projections
  std::int64_t moe_active_mlp_params() const;  // router + top_k + shared experts
  std::int64_t embedding_params() const;     // input embedding, output layer (unless tied), final norm
  std::int64_t params() const;
  std::int64_t active_params() const;        // per token
  // Parameters in matmuls a token goes through (what 6NT counts: not the input embedding
  // lookup or the norms; the output layer counts).
  std::int64_t active_matmul_params() const;
};

class ModelCatalog {
 public:
  static const ModelCatalog& builtin();
  const ModelSpec* find(std::string_view name) const;  // case-insensitive, aliases
  // As find(); an unknown name throws InputError(source, where) listing the known models.
  const ModelSpec& model(std::string_view name, std::string_view source = "<input>", std::string_view where = "") const;
  void add_or_replace(ModelSpec spec);
  std::span<const ModelSpec> models() const { return models_; }
  std::vector<std::string> names() const;

 private:
  std::vector<ModelSpec> models_;
};

// Checks a model's shape (positive sizes, heads divisible by kv_heads, MoE consistency);
// throws InputError naming `where`.
void validate_model(const ModelSpec& m, std::string_view source, std::string_view where);

}  // namespace orrery::models
