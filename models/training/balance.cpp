#include "models/training/balance.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace orrery::models {

StepBalancer::StepBalancer(const StepScenario& scenario, const CostModel& cost, const PipelineSchedule& schedule, BalanceOptions options)
    : sc_(scenario), cost_(cost), options_(options) {
  const ParallelPlan& p = sc_.plan;
  const ModelSpec& m = sc_.model;
  // The uniform step: its tail (gradient reduction and optimizer after the last op) and its
  // pipeline transfers.
  const StepResult base = run_step(sc_, cost, schedule);
  tail_s_ = base.tail_s;
  memory_ = base.memory;
  oom_ = base.oom;
  pipe_ = pipeline_shape(p);
  plan_ = schedule.plan(pipe_, "<scenario>", "/plan/schedule");
  linear_ = layer_linear_costs(sc_, cost);
  heads_ = m.heads / p.tp;
  kv_heads_ = std::max<std::int64_t>(1, m.kv_heads / p.tp);
  rates_ = link_rates(sc_.topology);
  // A pipeline op hands its activations to the next stage over the NIC (stages are servers apart).
  const double act = static_cast<double>(p.micro_batch) * static_cast<double>(p.seq_len) / p.cp * static_cast<double>(m.hidden) * 2 /
                     (p.sequence_parallel && p.tp > 1 ? p.tp : 1);
  p2p_s_ = p.pp > 1 ? act / rates_.nic : 0.0;
  // ZeRO-3 gathers each layer before its forward and backward, every micro-batch, on the DP
  // stream that also carries the gradient reduce-scatters, and the op waits for its gathers
  // (run_step). ZeRO-2's reduce-scatters never hold up compute: what they leave unfinished is in
  // the uniform step's tail already.
  const int dp_group = p.dp * p.cp;
  FabricCosts fabric(sc_.topology, CommModel::nccl);
  const DpGroups groups = fabric.dp_groups_of(p);
  if (p.zero >= 3 && dp_group > 1) {
    const DpShare layer_params = chunk_params(m, p, 0) / std::max(1, layers_of(p, m, 0));
    layer_reduce_s_ = fabric.dp_collective(CollectiveOp::reduce_scatter, layer_params, grad_reduce_bytes(p), groups);
    layer_gather_s_ = fabric.dp_collective(CollectiveOp::all_gather, layer_params, param_gather_bytes(p), groups);
  }
  if (p.zero >= 1 && p.zero < 3 && p.overlap_param_gather && dp_group > 1) {
    for (int vs = 0; vs < p.virtual_stages(); ++vs) {
      const int n = std::max(1, layers_of(p, m, vs));
      chunk_layers_.push_back(n);
      bucket_gather_s_.push_back(fabric.dp_collective(CollectiveOp::all_gather, chunk_params(m, p, vs) / n, param_gather_bytes(p), groups));
    }
  }
  shape_.dp = p.dp;
  shape_.cp = p.cp;
  shape_.micro_batches = p.micro_batches() * p.micro_batch;
  shape_.seq_len = p.seq_len;
  shape_.heads = static_cast<int>(heads_);
  shape_.head_dim = m.qk_head_dim();
  const double layers = m.layers;
  shape_.token_seconds = (linear_.front().f + linear_.front().b + linear_.front().w) / linear_.front().tokens * layers;
  const std::vector<std::int64_t> one = {p.seq_len};
  shape_.pair_seconds = (attention_seconds(one, Pass::forward) + attention_seconds(one, Pass::backward)) / causal_pairs(one) * layers;
}

double StepBalancer::attention_seconds(const std::vector<std::int64_t>& docs, Pass pass) const {
  if (docs.empty()) return 0;
  const ModelSpec& m = sc_.model;
  const Kernel k = Kernel::attention(pass, docs, heads_, std::min(kv_heads_, heads_), m.qk_head_dim(), true, DType::bf16, m.v_head_dim());
  return cost_.time(k).to_seconds();
}

double StepBalancer::pool_bandwidth(int pool_ranks) const {
  if (const auto it = pool_bandwidth_.find(pool_ranks); it != pool_bandwidth_.end()) return it->second;
  // A pool of P ranks is P x cp GPUs of the same tensor-parallel rank (stride tp): one
  // all-to-all of 256 MiB per GPU among them on the cluster's fabric gives the rate a GPU's
  // tile exchanges get (NVLink inside a server, NICs and the fabric beyond).
  const ParallelPlan& p = sc_.plan;
  const int n = pool_ranks * p.cp;
  const double bytes = 256.0 * 1048576;
  double bw = rates_.nvlink;
  if (n > 1) bw = bytes * (n - 1) / n / collective_seconds(sc_.topology, CollectiveOp::all_to_all, bytes, n, p.tp);
  return pool_bandwidth_[pool_ranks] = bw;
}

BalanceStep StepBalancer::run(const BatchPlacement& placement, std::uint64_t step) const {
  const ParallelPlan& p = sc_.plan;
  const ModelSpec& m = sc_.model;
  ORRERY_CHECK(static_cast<int>(placement.ranks.size()) == p.dp, "placement for {} ranks, expected {}", placement.ranks.size(), p.dp);
  const bool pools = !placement.attention_pairs.empty();
  const int vstages = p.virtual_stages();
  // Per rank and micro-batch: forward and backward (B, W) time of one layer.
  BalanceStep out;
  std::vector<double> attention_total(static_cast<std::size_t>(p.dp), 0.0);
  std::mt19937_64 rng(options_.seed * 0x9E3779B97F4A7C15ULL + step);
  std::normal_distribution<double> noise(0.0, 1.0);
  for (int r = 0; r < p.dp; ++r) {
    const auto& mbs = placement.ranks[static_cast<std::size_t>(r)];
    const auto ms = static_cast<std::size_t>(pipe_.micro_batches);
    // Micro-batches of the policy are sequences; the plan's micro-batch of micro_batch sequences
    // gathers consecutive ones.
    std::vector<double> f(ms, 0.0), b(ms, 0.0), w(ms, 0.0);
    for (std::size_t j = 0; j < mbs.size(); ++j) {
      const std::size_t k = j / static_cast<std::size_t>(p.micro_batch);
      if (k >= ms) break;
      const auto& docs = mbs[j].docs;
      const double tokens = static_cast<double>(std::accumulate(docs.begin(), docs.end(), std::int64_t{0})) / p.cp;
      const double scale = tokens / (linear_.front().tokens / p.micro_batch);
      double af = attention_seconds(docs, Pass::forward), ab = attention_seconds(docs, Pass::backward);
      double exposed = 0;
      if (pools) {
        // The pool moved attention: this rank runs its assigned pairs at its own tile efficiency,
        // over its cp GPUs (Ulysses-style, by heads), and exchanges tiles with the pool; the
        // exchange pipelines over head chunks, so its first dispatch and last return show.
        const double own = causal_pairs(docs);
        const double pairs = placement.attention_pairs[static_cast<std::size_t>(r)][j];
        const double rate_f = own > 0 ? af / own : attention_seconds({p.seq_len}, Pass::forward) / causal_pairs({p.seq_len});
        const double rate_b = own > 0 ? ab / own : attention_seconds({p.seq_len}, Pass::backward) / causal_pairs({p.seq_len});
        af = rate_f * pairs / p.cp;
        ab = rate_b * pairs / p.cp;
        const auto pool = static_cast<int>(std::count(placement.pool_of_rank.begin(), placement.pool_of_rank.end(), placement.pool_of_rank[static_cast<std::size_t>(r)]));
        const double comm = placement.exchange_bytes[static_cast<std::size_t>(r)][j] / p.cp / pool_bandwidth(pool);
        const int chunks = std::max(1, static_cast<int>(heads_) / options_.tile_heads);
        exposed = 2 * comm / chunks + std::max(0.0, comm - af) + std::max(0.0, 2 * comm - ab);
      } else if (p.cp > 1) {
        const auto wp = cp_worker_pairs(docs, p.cp, mbs[j].sharding);
        const double total = causal_pairs(docs);
        const double busiest = total > 0 ? *std::max_element(wp.begin(), wp.end()) / total : 0;
        af *= busiest;
        ab *= busiest;
      }
      attention_total[static_cast<std::size_t>(r)] += af + ab;
      const LayerLinearCost& lin = linear_.front();
      f[k] += lin.f * scale + af + exposed / 2;
      b[k] += lin.b * scale + ab + exposed / 2 + (p.recompute == Recompute::full ? lin.f * scale + af : 0.0);
      w[k] += lin.w * scale;
    }
    // Each stage holds layers/(pp vp) layers per chunk; jitter per GPU (stage) and step.
    std::vector<double> factor(static_cast<std::size_t>(p.pp), 1.0);
    for (double& x : factor) x = std::exp(options_.jitter * noise(rng));
    const double per_chunk = static_cast<double>(m.layers) / vstages;
    std::vector<OpSpan> spans;
    std::vector<bool> forward_seen(static_cast<std::size_t>(vstages), false);
    const double end = plan_makespan(
        plan_, pipe_,
        [&](const PipeOp& op, int stage, double start) {
          const auto mb = static_cast<std::size_t>(op.micro_batch);
          const int vs = op.chunk * p.pp + stage;
          if (op.kind == PipeOpKind::forward && !bucket_gather_s_.empty() && !forward_seen[static_cast<std::size_t>(vs)]) {
            // The chunk's first forward, layer by layer behind its buckets: those of the stage's
            // earlier chunks go first on the stream.
            forward_seen[static_cast<std::size_t>(vs)] = true;
            double issued = 0;
            for (int c = 0; c < op.chunk; ++c) {
              const auto earlier = static_cast<std::size_t>(c * p.pp + stage);
              issued += chunk_layers_[earlier] * bucket_gather_s_[earlier];
            }
            const int n = chunk_layers_[static_cast<std::size_t>(vs)];
            const double g = bucket_gather_s_[static_cast<std::size_t>(vs)];
            const double d = f[mb] * per_chunk * factor[static_cast<std::size_t>(stage)] / n;
            double t = start;
            for (int layer = 1; layer <= n; ++layer) t = std::max(t, issued + layer * g) + d;
            return t - start + p2p_s_;
          }
          // Per layer: the compute, or the DP collectives it waits on when they are longer (ZeRO-2/3
          // prefetch the next layer's gather and reduce the last layer's gradients beside it).
          double t = 0, dp = 0;
          const double scale = factor[static_cast<std::size_t>(stage)];
          switch (op.kind) {
            case PipeOpKind::forward: t = f[mb], dp = layer_gather_s_; break;
            case PipeOpKind::backward: t = b[mb] + w[mb], dp = layer_gather_s_ + layer_reduce_s_; break;
            case PipeOpKind::backward_input: t = b[mb], dp = layer_gather_s_; break;
            case PipeOpKind::backward_weight: t = w[mb], dp = layer_reduce_s_; break;
          }
          return std::max(t * per_chunk * scale, dp * per_chunk) + p2p_s_;
        },
        &spans);
    out.rank_s.push_back(end);
    if (end >= out.rank_s[static_cast<std::size_t>(out.slowest_rank)]) {
      if (end > out.rank_s[static_cast<std::size_t>(out.slowest_rank)] || out.spans.empty()) {
        out.slowest_rank = r;
        out.spans = std::move(spans);
      }
    }
  }
  out.step_s = *std::max_element(out.rank_s.begin(), out.rank_s.end()) + tail_s_;
  const double mean = std::accumulate(attention_total.begin(), attention_total.end(), 0.0) / p.dp;
  out.attention_imbalance = mean > 0 ? *std::max_element(attention_total.begin(), attention_total.end()) / mean : 1.0;
  return out;
}

}  // namespace orrery::models
