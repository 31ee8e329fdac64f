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

enum class MlpKind : std::uint8_t { gelu, swiglu };

struct MoeSpec {
  int experts = 0;             // routed experts; 0 = a dense model
  int top_k = 0;               // experts per token
  std::int64_t expert_ffn = 0;  // intermediate size of one expert
  int shared_experts = 0;      // experts every token goes through
  int dense_layers = 0;        // the first layers keep a dense MLP (of ffn_hidden)
  bool enabled() const { return experts > 0; }
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
  std::string source;

  std::int64_t qk_head_dim() const { return mla.enabled() ? mla.qk_nope_dim + mla.qk_rope_dim : head_dim; }
  std::int64_t v_head_dim() const { return mla.enabled() ? mla.v_head_dim : head_dim; }
  bool moe_layer(int layer) const { return moe.enabled() && layer >= moe.dense_layers; }
  // Parameters of one layer's attention (projections and the two norms of the layer), of its
  // MLP (dense, or router plus all experts), of the embeddings and output layer.
  std::int64_t attention_params() const;
  std::int64_t dense_mlp_params() const;
  std::int64_t moe_mlp_params() const;       // all experts
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
