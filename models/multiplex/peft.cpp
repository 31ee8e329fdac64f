#include "models/multiplex/peft.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <numeric>

namespace orrery::models {

namespace {

// Element-wise traffic per token and hidden unit of a layer's forward and backward: 20 two-byte
// reads and writes (two norms, SwiGLU, two residual adds; each read and written, forward and
// backward): an estimate, as the step emulator's element-wise kernels.
constexpr double kElementwiseBytesPerElement = 40;
constexpr double kAdapterBytesPerParam = 16;   // bf16 weights and gradients, fp32 master and two Adam moments
constexpr double kWeightBytesPerParam = 2;     // the frozen bf16 backbone

struct Linear {
  std::int64_t k, n;  // in, out
  bool targeted;
};

std::vector<Linear> linears(const ModelSpec& m, const PeftTask* t) {
  const std::int64_t hd = m.head_dim, q = static_cast<std::int64_t>(m.heads) * hd, kv = static_cast<std::int64_t>(m.kv_heads) * hd;
  const std::int64_t up = (m.mlp == MlpKind::swiglu ? 2 : 1) * m.ffn_hidden;
  return {{m.hidden, q + 2 * kv, t != nullptr && t->qkv},
          {q, m.hidden, t != nullptr && t->proj},
          {m.hidden, up, t != nullptr && t->fc1},
          {m.ffn_hidden, m.hidden, t != nullptr && t->fc2}};
}

double gemm_s(const CostModel& cost, std::int64_t m, std::int64_t n, std::int64_t k) {
  return m > 0 && n > 0 && k > 0 ? cost.time(Kernel::gemm(m, n, k, DType::bf16)).to_seconds() : 0.0;
}

}  // namespace

std::vector<std::vector<std::int64_t>> padded_lengths(const PeftMicroBatch& mb, PeftPadding padding, std::int64_t chunk) {
  std::int64_t longest = 0;
  for (const auto& part : mb.parts) {
    for (const std::int64_t l : part.lengths) longest = std::max(longest, l);
  }
  std::vector<std::vector<std::int64_t>> out;
  for (const auto& part : mb.parts) {
    std::vector<std::int64_t> lens;
    for (const std::int64_t l : part.lengths) lens.push_back(padding == PeftPadding::longest ? longest : (l + chunk - 1) / chunk * chunk);
    out.push_back(std::move(lens));
  }
  return out;
}

std::int64_t padded_tokens(const PeftMicroBatch& mb, PeftPadding padding, std::int64_t chunk) {
  std::int64_t n = 0;
  for (const auto& lens : padded_lengths(mb, padding, chunk)) n = std::accumulate(lens.begin(), lens.end(), n);
  return n;
}

double adapter_params(const ModelSpec& m, const PeftTask& t) {
  double n = 0;
  for (const Linear& l : linears(m, &t)) {
    if (l.targeted) n += static_cast<double>(t.rank) * static_cast<double>(l.k + l.n);
  }
  return n * m.layers;
}

double peft_layer_s(const PeftProblem& p, const PeftMicroBatch& mb, PeftPadding padding, std::int64_t chunk, const CostModel& cost) {
  const ModelSpec& m = p.backbone;
  const auto lens = padded_lengths(mb, padding, chunk);
  std::vector<std::int64_t> docs;
  for (const auto& l : lens) docs.insert(docs.end(), l.begin(), l.end());
  const std::int64_t tokens = std::accumulate(docs.begin(), docs.end(), std::int64_t{0});
  if (tokens == 0) return 0;
  double s = 0;
  // The frozen backbone, once over every task's tokens: forward and input gradient.
  for (const Linear& l : linears(m, nullptr)) s += gemm_s(cost, tokens, l.n, l.k) + gemm_s(cost, tokens, l.k, l.n);
  for (const Pass pass : {Pass::forward, Pass::backward}) {
    s += cost.time(Kernel::attention(pass, docs, m.heads, m.kv_heads, m.head_dim, true, DType::bf16)).to_seconds();
  }
  s += cost.time(Kernel::memory_bound(KernelKind::elementwise, sim::Bytes(kElementwiseBytesPerElement * static_cast<double>(tokens * m.hidden)),
                                      DType::bf16)).to_seconds();
  // Each task's adapters over its own tokens.
  for (std::size_t i = 0; i < mb.parts.size(); ++i) {
    const std::int64_t t = std::accumulate(lens[i].begin(), lens[i].end(), std::int64_t{0});
    const PeftTask& task = p.tasks[static_cast<std::size_t>(mb.parts[i].task)];
    const std::int64_t r = task.rank;
    for (const Linear& l : linears(m, &task)) {
      if (!l.targeted) continue;
      s += gemm_s(cost, t, r, l.k) + gemm_s(cost, t, l.n, r);   // x A, (x A) B
      s += gemm_s(cost, t, r, l.n) + gemm_s(cost, t, l.k, r);   // input gradients
      s += gemm_s(cost, l.k, r, t) + gemm_s(cost, r, l.n, t);   // weight gradients of A and B
    }
  }
  return s;
}

PeftResult evaluate_peft(const PeftProblem& p, const PeftPlan& plan, const CostModel& cost) {
  ORRERY_CHECK(p.stages >= 1 && p.stages <= p.backbone.layers, "stages {} for {} layers", p.stages, p.backbone.layers);
  PeftResult r;
  const double layers_per_stage = static_cast<double>(p.backbone.layers) / p.stages;
  const double per_token_layer = kActivationBytesPerElement * static_cast<double>(p.backbone.hidden);
  double busy = 0, peak_activations = 0;
  for (const auto& pipeline : plan.pipelines) {
    double sum = 0, largest = 0;
    std::vector<std::int64_t> tokens;
    for (const PeftMicroBatch& mb : pipeline) {
      const double t = layers_per_stage * peft_layer_s(p, mb, plan.padding, plan.chunk, cost);
      sum += t;
      largest = std::max(largest, t);
      tokens.push_back(padded_tokens(mb, plan.padding, plan.chunk));
      r.padded_tokens += static_cast<double>(tokens.back());
      for (const auto& part : mb.parts) r.real_tokens += static_cast<double>(std::accumulate(part.lengths.begin(), part.lengths.end(), std::int64_t{0}));
    }
    r.step_s += sum + (p.stages - 1) * largest;
    busy += sum;
    r.micro_batches += static_cast<int>(pipeline.size());
    // 1F1B: the first stage holds min(p, m) micro-batches' activations at its peak; the largest.
    std::sort(tokens.begin(), tokens.end(), std::greater<>());
    const std::size_t live = std::min<std::size_t>(static_cast<std::size_t>(p.stages), tokens.size());
    const double held = static_cast<double>(std::accumulate(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(live), std::int64_t{0}));
    peak_activations = std::max(peak_activations, held * layers_per_stage * per_token_layer);
  }
  const double copies = plan.shared_backbone ? 1.0 : static_cast<double>(p.tasks.size());
  r.weights_bytes = copies * kWeightBytesPerParam * static_cast<double>(p.backbone.params()) / p.stages;
  for (const PeftTask& t : p.tasks) r.adapter_bytes += kAdapterBytesPerParam * adapter_params(p.backbone, t) / p.stages;
  r.activation_bytes = peak_activations;
  r.memory_bytes = r.weights_bytes + r.adapter_bytes + r.activation_bytes;
  r.tokens_per_s = r.step_s > 0 ? r.real_tokens / r.step_s : 0;
  r.bubble_fraction = r.step_s > 0 ? 1 - busy / r.step_s : 0;
  return r;
}

}  // namespace orrery::models
