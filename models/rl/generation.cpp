#include "models/rl/generation.hpp"

#include "models/hardware/kernel.hpp"
#include "sim/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>

namespace orrery::models {

namespace {

double t_of(const CostModel& cost, const Kernel& k) { return cost.time(k).to_seconds(); }

std::int64_t per_tp(std::int64_t v, int tp) { return std::max<std::int64_t>(1, v / tp); }

}  // namespace

GenerationInstance::GenerationInstance(GenerationConfig config, const CostModel& cost, std::string_view source)
    : c_(std::move(config)), cost_(cost) {
  const ModelSpec& m = c_.model;
  const auto fail = [&](const std::string& what) { throw sim::InputError(std::string(source), "/generation", what); };
  if (c_.tp < 1 || m.heads % c_.tp != 0) fail(fmt::format("found tp {}, which does not divide {}'s {} heads", c_.tp, m.name, m.heads));
  if (c_.max_context < 2) fail(fmt::format("found a maximum context of {} tokens, expected 2 or more", c_.max_context));
  // KV cache per token and GPU: keys and values of every layer in bf16 (MLA: its compressed
  // latent and rotary key, not split by TP).
  kv_bytes_per_token_ = m.mla.enabled() ? 2.0 * static_cast<double>(m.layers) * static_cast<double>(m.mla.kv_lora_rank + m.mla.qk_rope_dim)
                                        : 2.0 * 2.0 * static_cast<double>(m.layers) * static_cast<double>(per_tp(m.kv_heads, c_.tp)) *
                                              static_cast<double>(m.head_dim);
  const double weights = 2.0 * static_cast<double>(m.params()) / c_.tp;
  const double usable = c_.memory_fraction * c_.gpu.hbm_bytes - c_.reserved_bytes;
  if (weights >= usable) {
    fail(fmt::format("{}'s weights take {:.1f} GB per GPU at tp {}, more than the {:.1f} GB usable on a {}{}", m.name, weights / 1e9, c_.tp, usable / 1e9,
                     c_.gpu.name, c_.reserved_bytes > 0 ? fmt::format(" beside {:.1f} GB held by training", c_.reserved_bytes / 1e9) : ""));
  }
  kv_capacity_ = static_cast<std::int64_t>((usable - weights) / kv_bytes_per_token_);
  if (kv_capacity_ < c_.max_context) {
    fail(fmt::format("the KV cache holds {} tokens ({:.1f} GB left after the weights), which cannot hold a single sequence of the maximum "
                     "context, {} tokens; raise tp or lower max_context",
                     kv_capacity_, (usable - weights) / 1e9, c_.max_context));
  }
  // The attention's KV read: a memory-bound kernel per layer, linear in the cached tokens.
  const double x = 1e9;
  const double per_layer_x = t_of(cost_, Kernel::memory_bound(KernelKind::elementwise, sim::Bytes(x), DType::bf16));
  const double per_layer_2x = t_of(cost_, Kernel::memory_bound(KernelKind::elementwise, sim::Bytes(2 * x), DType::bf16));
  const double per_byte = (per_layer_2x - per_layer_x) / x;
  attention_s_per_token_ = per_byte * kv_bytes_per_token_;
  attention_fixed_s_ = static_cast<double>(m.layers) * (per_layer_x - per_byte * x);
}

double GenerationInstance::gemms_s(int batch) const {
  if (static_cast<std::size_t>(batch) < gemms_.size() && gemms_[static_cast<std::size_t>(batch)] > 0) return gemms_[static_cast<std::size_t>(batch)];
  const ModelSpec& m = c_.model;
  const int tp = c_.tp;
  const std::int64_t b = batch, h = m.hidden, hd = m.head_dim;
  const std::int64_t heads = per_tp(m.heads, tp), kv = per_tp(m.kv_heads, tp);
  double layer = t_of(cost_, Kernel::gemm(b, (heads + 2 * kv) * hd, h, DType::bf16)) + t_of(cost_, Kernel::gemm(b, h, heads * hd, DType::bf16));
  const auto mlp = [&](std::int64_t ffn) {
    const std::int64_t f = per_tp(ffn, tp);
    return t_of(cost_, Kernel::gemm(b, m.mlp == MlpKind::swiglu ? 2 * f : f, h, DType::bf16)) + t_of(cost_, Kernel::gemm(b, h, f, DType::bf16));
  };
  double dense = mlp(m.ffn_hidden), moe = 0;
  if (m.moe.enabled()) {
    // Routed experts: the batch's top_k choices spread over the experts; every expert touched
    // reads its weights once (a grouped GEMM).
    const std::int64_t routed = b * m.moe.top_k;
    const std::int64_t touched = std::min<std::int64_t>(m.moe.experts, routed);
    const std::vector<std::int64_t> groups(static_cast<std::size_t>(touched), (routed + touched - 1) / touched);
    const std::int64_t f = per_tp(m.moe.expert_ffn, tp);
    moe = t_of(cost_, Kernel::grouped_gemm(groups, m.mlp == MlpKind::swiglu ? 2 * f : f, h, DType::bf16)) +
          t_of(cost_, Kernel::grouped_gemm(groups, h, f, DType::bf16));
    if (m.moe.shared_experts > 0) moe += mlp(m.moe.expert_ffn * m.moe.shared_experts);
  }
  const int moe_layers = m.moe.enabled() ? m.layers - m.moe.dense_layers : 0;
  // Norms and residuals: memory-bound passes over the batch's activations.
  layer += t_of(cost_, Kernel::memory_bound(KernelKind::norm, sim::Bytes(8.0 * static_cast<double>(b * h)), DType::bf16));
  double total = m.layers * layer + (m.layers - moe_layers) * dense + moe_layers * moe;
  if (tp > 1 && c_.nvlink > 0) total += m.layers * 2 * (2.0 * (tp - 1) / tp * 2.0 * static_cast<double>(b * h) / c_.nvlink);
  total += t_of(cost_, Kernel::gemm(b, per_tp(m.vocab, tp), h, DType::bf16));  // LM head
  if (gemms_.size() <= static_cast<std::size_t>(batch)) gemms_.resize(static_cast<std::size_t>(batch) + 1, 0.0);
  gemms_[static_cast<std::size_t>(batch)] = total;
  return total;
}

double GenerationInstance::decode_iteration_s(int batch, double kv_tokens) const {
  return gemms_s(std::max(1, batch)) + attention_fixed_s_ + attention_s_per_token_ * kv_tokens;
}

double GenerationInstance::prefill_s(const std::vector<std::int64_t>& prompts) const {
  if (prompts.empty()) return 0;
  const ModelSpec& m = c_.model;
  const int tp = c_.tp;
  std::int64_t T = 0;
  for (const std::int64_t p : prompts) T += p;
  const std::int64_t h = m.hidden, hd = m.head_dim, heads = per_tp(m.heads, tp), kv = per_tp(m.kv_heads, tp);
  const std::int64_t f = per_tp(m.moe.enabled() ? m.moe.expert_ffn * (m.moe.top_k + m.moe.shared_experts) : m.ffn_hidden, tp);
  double layer = t_of(cost_, Kernel::gemm(T, (heads + 2 * kv) * hd, h, DType::bf16)) + t_of(cost_, Kernel::gemm(T, h, heads * hd, DType::bf16)) +
                 t_of(cost_, Kernel::gemm(T, m.mlp == MlpKind::swiglu ? 2 * f : f, h, DType::bf16)) + t_of(cost_, Kernel::gemm(T, h, f, DType::bf16)) +
                 t_of(cost_, Kernel::attention(Pass::forward, prompts, heads, kv, hd, true, DType::bf16));
  if (tp > 1 && c_.nvlink > 0) layer += 2 * (2.0 * (tp - 1) / tp * 2.0 * static_cast<double>(T * h) / c_.nvlink);
  return m.layers * layer + t_of(cost_, Kernel::gemm(static_cast<std::int64_t>(prompts.size()), per_tp(m.vocab, tp), h, DType::bf16));
}

std::vector<GenFinish> GenerationInstance::run(std::vector<GenRequest> requests, double start, std::string_view source) const {
  for (const GenRequest& r : requests) {
    if (r.prompt < 1 || r.output < 1) {
      throw sim::InputError(std::string(source), fmt::format("request {}", r.id), "expected a prompt and an output of at least one token each");
    }
    if (r.prompt + r.output > c_.max_context) {
      throw sim::InputError(std::string(source), fmt::format("request {}", r.id),
                            fmt::format("found a sample of {} tokens (prompt {} + output {}), longer than the maximum context of {}",
                                        r.prompt + r.output, r.prompt, r.output, c_.max_context));
    }
  }
  std::stable_sort(requests.begin(), requests.end(), [](const GenRequest& a, const GenRequest& b) { return a.arrival < b.arrival; });
  const std::size_t n = requests.size();
  std::vector<GenFinish> done(n);
  std::vector<std::int64_t> generated(n, 0);
  struct Seq {
    std::size_t req;
    std::int64_t cached, remaining;
    std::uint64_t admitted;
  };
  std::vector<Seq> running;
  std::deque<std::size_t> waiting;
  for (std::size_t i = 0; i < n; ++i) waiting.push_back(i);
  double t = start;
  double used = 0;
  std::uint64_t admissions = 0;
  const double cap = static_cast<double>(kv_capacity_);
  while (!running.empty() || !waiting.empty()) {
    // Admit in arrival order while the cache holds the prompt (and what a preempted sequence
    // had generated, recomputed) and still leaves every running sequence, the new one included,
    // room for its next token: an admission never forces a preemption, so the run progresses.
    std::vector<std::int64_t> prefill;
    while (!waiting.empty() && requests[waiting.front()].arrival <= t && static_cast<int>(running.size()) < c_.max_batch) {
      const std::size_t i = waiting.front();
      const std::int64_t len = requests[i].prompt + generated[i];
      if (used + static_cast<double>(len) + static_cast<double>(running.size() + 1) > cap) break;
      waiting.pop_front();
      running.push_back({i, len, requests[i].output - generated[i], admissions++});
      used += static_cast<double>(len);
      prefill.push_back(len);
    }
    t += prefill_s(prefill);
    if (running.empty()) {
      t = std::max(t, requests[waiting.front()].arrival);
      continue;
    }
    const auto b = static_cast<std::int64_t>(running.size());
    std::int64_t k = running.front().remaining;
    for (const Seq& s : running) k = std::min(k, s.remaining);
    const auto room = static_cast<std::int64_t>((cap - used) / static_cast<double>(b));
    if (room < 1) {
      // Out of cache: preempt the newest sequence; it is recomputed when readmitted.
      auto newest = std::max_element(running.begin(), running.end(), [](const Seq& x, const Seq& y) { return x.admitted < y.admitted; });
      used -= static_cast<double>(newest->cached);
      ++done[newest->req].preemptions;
      waiting.push_front(newest->req);
      running.erase(newest);
      continue;
    }
    k = std::min(k, room);
    // Stop at the next arrival, so that it can join: the first j whose iterations reach it.
    const double c0 = decode_iteration_s(static_cast<int>(b), used), slope = attention_s_per_token_ * static_cast<double>(b);
    if (!waiting.empty() && requests[waiting.front()].arrival > t) {
      const double dt = requests[waiting.front()].arrival - t;
      // j c0 + slope j (j - 1) / 2 >= dt
      double j = slope > 0 ? std::ceil((-(c0 - slope / 2) + std::sqrt((c0 - slope / 2) * (c0 - slope / 2) + 2 * slope * dt)) / slope) : std::ceil(dt / c0);
      j = std::max(1.0, j);
      k = std::min<std::int64_t>(k, static_cast<std::int64_t>(j));
    }
    const auto kd = static_cast<double>(k);
    t += kd * c0 + slope * kd * (kd - 1) / 2;
    used += static_cast<double>(b * k);
    for (std::size_t s = 0; s < running.size();) {
      Seq& q = running[s];
      q.cached += k;
      q.remaining -= k;
      generated[q.req] += k;
      if (q.remaining == 0) {
        done[q.req].id = requests[q.req].id;
        done[q.req].time = t;
        used -= static_cast<double>(q.cached);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(s));
      } else {
        ++s;
      }
    }
  }
  return done;
}

}  // namespace orrery::models
