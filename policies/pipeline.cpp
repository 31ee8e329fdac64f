#include "policies/pipeline.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <cmath>
#include <limits>
#include <optional>
#include <queue>
#include <fmt/format.h>

namespace orrery::policies {

namespace {

using models::PipelinePlan;
using models::PipelineShape;
using models::PipeOp;
using models::PipeOpKind;

void require_one_chunk(const PipelineShape& s, std::string_view name, std::string_view source, std::string_view where) {
  if (s.chunks != 1) {
    throw sim::InputError(std::string(source), std::string(where),
                          fmt::format("{} runs one model chunk per stage, found {} virtual stages (use interleaved-1f1b)", name, s.chunks));
  }
}

class GPipe final : public models::PipelineSchedule {
 public:
  std::string_view name() const override { return "gpipe"; }
  PipelinePlan plan(const PipelineShape& s, std::string_view source, std::string_view where) const override {
    require_one_chunk(s, name(), source, where);
    PipelinePlan plan(static_cast<std::size_t>(s.stages));
    for (auto& ops : plan) {
      for (int mb = 0; mb < s.micro_batches; ++mb) ops.push_back({PipeOpKind::forward, mb, 0});
      for (int mb = 0; mb < s.micro_batches; ++mb) ops.push_back({PipeOpKind::backward, mb, 0});
    }
    return plan;
  }
};

// Stage i runs min(p-1-i, m) warm-up forwards, then alternates forward and backward, then drains
// the remaining backwards. With `split`, each backward is B, and the W's run `defer(i)`
// micro-batches later (ZB-H1: defer = i), the rest at the end.
PipelinePlan one_f_one_b(const PipelineShape& s, bool split) {
  PipelinePlan plan(static_cast<std::size_t>(s.stages));
  for (int stage = 0; stage < s.stages; ++stage) {
    auto& ops = plan[static_cast<std::size_t>(stage)];
    const int warmup = std::min(s.stages - 1 - stage, s.micro_batches);
    for (int mb = 0; mb < warmup; ++mb) ops.push_back({PipeOpKind::forward, mb, 0});
    std::deque<int> pending_w;
    for (int mb = 0; mb < s.micro_batches; ++mb) {
      if (warmup + mb < s.micro_batches) ops.push_back({PipeOpKind::forward, warmup + mb, 0});
      if (!split) {
        ops.push_back({PipeOpKind::backward, mb, 0});
        continue;
      }
      ops.push_back({PipeOpKind::backward_input, mb, 0});
      pending_w.push_back(mb);
      if (static_cast<int>(pending_w.size()) > stage) {
        ops.push_back({PipeOpKind::backward_weight, pending_w.front(), 0});
        pending_w.pop_front();
      }
    }
    for (const int mb : pending_w) ops.push_back({PipeOpKind::backward_weight, mb, 0});
  }
  return plan;
}

class OneFOneB final : public models::PipelineSchedule {
 public:
  std::string_view name() const override { return "1f1b"; }
  PipelinePlan plan(const PipelineShape& s, std::string_view source, std::string_view where) const override {
    require_one_chunk(s, name(), source, where);
    return one_f_one_b(s, false);
  }
};

class ZeroBubbleH1 final : public models::PipelineSchedule {
 public:
  std::string_view name() const override { return "zb-h1"; }
  PipelinePlan plan(const PipelineShape& s, std::string_view source, std::string_view where) const override {
    require_one_chunk(s, name(), source, where);
    return one_f_one_b(s, true);
  }
};

// The zero-bubble family's scheduling heuristic (Qi et al., "Zero Bubble Pipeline Parallelism",
// ICLR'24, sec. 3: fill the warm-up with as many forwards as the memory limit allows, then run
// each backward's input gradients (B) as soon as they can, and the weight gradients (W) wherever
// a stage would otherwise wait), simulated on the shape's relative op costs. Each stage, when
// free, takes in order: a ready B (the earliest ready, then the lowest micro-batch); a ready
// forward (the deepest chunk first, then the lowest micro-batch), of the first chunk only while
// the stage holds fewer than `limit[stage]` chunks' activations; a pending W (oldest first); else it waits for the next op
// to end anywhere. With `braid`, a forward and a ready B of another micro-batch are issued as one
// pair, back to back (STP's braided units).
struct Greedy {
  std::vector<int> limit;  // chunk activations per stage
  bool braid = false;
};

std::optional<PipelinePlan> greedy_once(const PipelineShape& shape, const Greedy& rule) {
  // The costs relative to the forward, to a twentieth: the emulator's and the estimate's slightly
  // different costs of one step give one order (and one memory peak).
  PipelineShape s = shape;
  const double unit = shape.costs.f > 0 ? shape.costs.f : std::max({shape.costs.b, shape.costs.w, 1.0});
  const auto relative = [unit](double c) { return std::round(20 * c / unit) / 20; };
  s.costs = {relative(shape.costs.f), relative(shape.costs.b), relative(shape.costs.w)};
  const int p = s.stages, v = s.chunks, m = s.micro_batches, vstages = s.virtual_stages();
  const auto idx = [&](int vs, int mb) { return static_cast<std::size_t>(vs * m + mb); };
  constexpr double kNever = -1;
  std::vector<double> f_end(static_cast<std::size_t>(vstages * m), kNever), b_end(f_end);
  std::vector<double> free_at(static_cast<std::size_t>(p), 0);
  std::vector<int> live(static_cast<std::size_t>(p), 0);
  std::vector<std::deque<std::pair<int, int>>> pending_w(static_cast<std::size_t>(p));  // (chunk, mb)
  std::vector<std::vector<std::pair<int, int>>> in_flight(static_cast<std::size_t>(p));  // forwarded, B not yet issued
  std::vector<int> next_f(static_cast<std::size_t>(p * v), 0);                          // per (stage, chunk)
  ORRERY_CHECK(s.placement != models::PipelinePlacement::bidirectional, "the greedy order runs every micro-batch on every chunk");
  std::vector<std::size_t> left(static_cast<std::size_t>(p), static_cast<std::size_t>(3 * v * m));
  // The ends of ops still running (a min-heap; those at or before the time are dropped): when a
  // waiting stage looks again. The stages by when they are free next (a min-heap).
  using Event = std::pair<double, int>;
  std::priority_queue<double, std::vector<double>, std::greater<>> ends;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> free_next;
  for (int stage = 0; stage < p; ++stage) free_next.emplace(0.0, stage);
  PipelinePlan plan(static_cast<std::size_t>(p));
  const auto done_by = [](double end, double t) { return end != kNever && end <= t; };
  const auto run_on = [&](int stage, double t, PipeOpKind kind, std::pair<int, int> cm, bool paired) {
    const auto st = static_cast<std::size_t>(stage);
    const int vs = s.virtual_stage(stage, cm.first);
    plan[st].push_back({kind, cm.second, cm.first, paired});
    // Ops of no cost (a frozen chunk's W) still take a sliver of time, so that time moves on.
    const double took = std::max(1e-9 * (s.costs.f + s.costs.b + s.costs.w) + 1e-15,
                                 kind == PipeOpKind::forward ? s.costs.f : kind == PipeOpKind::backward_input ? s.costs.b : s.costs.w);
    const double end = free_at[st] = std::max(free_at[st], t) + took;
    ends.push(end);
    if (kind == PipeOpKind::forward) {
      f_end[idx(vs, cm.second)] = end, ++live[st];
      ++next_f[st * static_cast<std::size_t>(v) + static_cast<std::size_t>(cm.first)];
      in_flight[st].push_back(cm);
    }
    if (kind == PipeOpKind::backward_input) {
      b_end[idx(vs, cm.second)] = end, --live[st], pending_w[st].push_back(cm);
      std::erase(in_flight[st], cm);
    }
    --left[st];
  };
  std::vector<std::pair<int, std::optional<std::pair<int, int>>>> waiting;  // stages with nothing to run at t
  std::vector<int> now;  // the stages free at t, in order
  while (!free_next.empty()) {
    const double t = free_next.top().first;
    now.clear();
    while (!free_next.empty() && free_next.top().first == t) now.push_back(free_next.top().second), free_next.pop();
    std::sort(now.begin(), now.end());
    for (const int stage : now) {
      const auto st = static_cast<std::size_t>(stage);
      std::optional<std::pair<int, int>> b, f;  // (chunk, mb)
      double b_since = 0;
      for (int c = 0; c < v; ++c) {  // each chunk's forwards run in micro-batch order
        const int mb = next_f[st * static_cast<std::size_t>(v) + static_cast<std::size_t>(c)];
        const int vs = s.virtual_stage(stage, c);
        if (mb < m && (vs == 0 || done_by(f_end[idx(vs - 1, mb)], t)) && (!f || vs > s.virtual_stage(stage, f->first))) f = {c, mb};
      }
      for (const auto& [c, mb] : in_flight[st]) {
        const int vs = s.virtual_stage(stage, c);
        const std::size_t k = idx(vs, mb);
        if (done_by(f_end[k], t) && (vs + 1 == vstages || done_by(b_end[idx(vs + 1, mb)], t))) {
          const double since = std::max(f_end[k], vs + 1 == vstages ? 0.0 : b_end[idx(vs + 1, mb)]);
          if (!b || since < b_since || (since == b_since && mb < b->second)) b = {c, mb}, b_since = since;
        }
      }
      // The limit holds back new micro-batches (the first chunk's forwards); a deeper chunk's forward
      // continues one the stage already holds, and leads to the backwards that free memory.
      std::optional<std::pair<int, int>> held;  // a forward the limit holds back
      if (f && f->first == 0 && live[st] >= rule.limit[st]) held = f, f.reset();
      const auto run = [&](PipeOpKind kind, std::pair<int, int> cm, bool paired = false) { run_on(stage, t, kind, cm, paired); };
      if (rule.braid && f && b) {
        run(PipeOpKind::forward, *f, true);
        run(PipeOpKind::backward_input, *b, true);
      } else if (b) {
        run(PipeOpKind::backward_input, *b);
      } else if (f) {
        run(PipeOpKind::forward, *f);
      } else if (!pending_w[st].empty()) {
        run(PipeOpKind::backward_weight, pending_w[st].front());
        pending_w[st].pop_front();
      } else {
        waiting.push_back({stage, held});
        continue;
      }
      if (left[st] > 0) free_next.emplace(free_at[st], stage);
    }
    // A stage with nothing to run looks again when the next op anywhere ends (ops the other
    // stages issued at t included); when none will, only a forward past the limit goes on.
    while (!ends.empty() && ends.top() <= t) ends.pop();
    for (const auto& [stage, held] : waiting) {
      const auto st = static_cast<std::size_t>(stage);
      if (!ends.empty()) {
        free_at[st] = ends.top();
      } else {
        if (!held) return std::nullopt;
        run_on(stage, t, PipeOpKind::forward, *held, false);
      }
      if (left[st] > 0) free_next.emplace(free_at[st], stage);
    }
    waiting.clear();
  }
  return plan;
}

// The order, or where the heuristic paints itself into a corner on unequal costs (every stage
// waiting on another), the same without the memory limit.
PipelinePlan greedy_order(const PipelineShape& s, const Greedy& rule) {
  if (std::optional<PipelinePlan> plan = greedy_once(s, rule)) return *plan;
  Greedy unlimited = rule;
  unlimited.limit.assign(rule.limit.size(), std::numeric_limits<int>::max());
  std::optional<PipelinePlan> plan = greedy_once(s, unlimited);
  ORRERY_CHECK(plan.has_value(), "the greedy pipeline order stalls without a memory limit ({} stages, {} micro-batches)", s.stages, s.micro_batches);
  return *plan;
}

// Megatron-LM's interleaved schedule (schedules.py, forward_backward_pipelining_with_interleaving):
// virtual micro-batch k runs chunk (k mod pv) / p (reversed for backwards) on micro-batch
// (k / pv) p + k mod p; warm-up (p - i - 1) 2 + (v - 1) p forwards, then 1F1B.
class Interleaved final : public models::PipelineSchedule {
 public:
  std::string_view name() const override { return "interleaved-1f1b"; }
  bool runs_chunks(int vp) const override { return vp >= 2; }
  PipelinePlan plan(const PipelineShape& s, std::string_view source, std::string_view where) const override {
    const int p = s.stages, v = s.chunks, m = s.micro_batches;
    if (m % p != 0) {
      throw sim::InputError(std::string(source), std::string(where),
                            fmt::format("interleaved-1f1b needs the micro-batches ({}) to be a multiple of the pipeline stages ({})", m, p));
    }
    const int total = m * v;
    const auto chunk_of = [&](int k, bool forward) {
      const int c = (k % (p * v)) / p;
      return forward ? c : v - 1 - c;
    };
    const auto mb_of = [&](int k) { return (k / (p * v)) * p + k % p; };
    PipelinePlan plan(static_cast<std::size_t>(p));
    for (int stage = 0; stage < p; ++stage) {
      auto& ops = plan[static_cast<std::size_t>(stage)];
      const int warmup = m == p ? total : std::min((p - stage - 1) * 2 + (v - 1) * p, total);
      for (int k = 0; k < warmup; ++k) ops.push_back({PipeOpKind::forward, mb_of(k), chunk_of(k, true)});
      for (int k = 0; k < total - warmup; ++k) {
        ops.push_back({PipeOpKind::forward, mb_of(warmup + k), chunk_of(warmup + k, true)});
        ops.push_back({PipeOpKind::backward, mb_of(k), chunk_of(k, false)});
      }
      for (int k = total - warmup; k < total; ++k) ops.push_back({PipeOpKind::backward, mb_of(k), chunk_of(k, false)});
    }
    return plan;
  }
};

[[noreturn]] void bad_shape(std::string_view source, std::string_view where, const std::string& message) {
  throw sim::InputError(std::string(source), std::string(where), message);
}

// ZB-H2 (Qi et al., sec. 3.2): one chunk per stage; stage i warms up with 2(p - i) - 1
// forwards (twice 1F1B's activations) so the first backward finds no gap, and the heuristic's W
// fill the rest. Its stages run as a parallelogram: each starts one forward after the previous
// and has no idle time inside (with T_F = T_B = T_W); the paper removes the ramp between steps by
// validating the optimizer step after the fact, which the step emulator does not model (it keeps
// the synchronous step).
class ZeroBubbleH2 final : public models::PipelineSchedule {
 public:
  std::string_view name() const override { return "zb-h2"; }
  bool orders_by_cost() const override { return true; }
  PipelinePlan plan(const PipelineShape& s, std::string_view source, std::string_view where) const override {
    require_one_chunk(s, name(), source, where);
    Greedy rule;
    for (int i = 0; i < s.stages; ++i) rule.limit.push_back(2 * (s.stages - i) - 1);
    return greedy_order(s, rule);
  }
};

// ZB-V (Qi et al., "Pipeline Parallelism with Controllable Memory", NeurIPS'24; sail-sg
// zero-bubble-pipeline-parallelism): two chunks per stage in a V (chunk 0 down the stages, chunk
// 1 back up), so stage 0 holds the first and the last virtual stage and the warm-up and
// cool-down meet there; the heuristic under 1F1B's activation memory (p micro-batches of a
// stage's layers: 2p chunks). Any even chunk count zigzags the same way.
class ZeroBubbleV final : public models::PipelineSchedule {
 public:
  std::string_view name() const override { return "zb-v"; }
  models::PipelinePlacement placement() const override { return models::PipelinePlacement::vee; }
  bool orders_by_cost() const override { return true; }
  bool runs_chunks(int vp) const override { return vp >= 2 && vp % 2 == 0; }
  PipelinePlan plan(const PipelineShape& s, std::string_view source, std::string_view where) const override {
    if (s.chunks < 2 || s.chunks % 2 != 0) {
      bad_shape(source, where, fmt::format("zb-v runs an even number of model chunks per stage in a V, found {} (set vp to 2)", s.chunks));
    }
    Greedy rule;
    rule.limit.assign(static_cast<std::size_t>(s.stages), s.chunks * s.stages);
    return greedy_order(s, rule);
  }
};

// STP's braided schedule (Synergistic Tensor and Pipeline Parallelism, arXiv 2510.27257;
// MICLAB-BUPT/STP): the V placement of ZB-V, with each forward unit issued together with a
// ready backward unit of another micro-batch, so that one's tensor-parallel collectives run
// while the other computes (the step emulator hides each braided op's TP communication behind
// its partner's compute); warm-up up to 3p chunk activations (the repository's table: 3p M_a).
class Braided final : public models::PipelineSchedule {
 public:
  std::string_view name() const override { return "stp"; }
  models::PipelinePlacement placement() const override { return models::PipelinePlacement::vee; }
  bool orders_by_cost() const override { return true; }
  bool runs_chunks(int vp) const override { return vp == 2; }
  PipelinePlan plan(const PipelineShape& s, std::string_view source, std::string_view where) const override {
    if (s.chunks != 2) bad_shape(source, where, fmt::format("stp braids two model chunks per stage in a V, found {} (set vp to 2)", s.chunks));
    Greedy rule;
    rule.limit.assign(static_cast<std::size_t>(s.stages), 3 * s.stages);
    rule.braid = true;
    return greedy_order(s, rule);
  }
};

// DualPipe (DeepSeek-V3 technical report, arXiv 2412.19437, sec. 3.2.1; deepseek-ai/DualPipe):
// bidirectional. Stage r holds model piece r for the micro-batches fed at stage 0 and piece
// p-1-r for those fed at stage p-1 (twice the parameters). Its own phase is the direction fed at
// its end of the pipeline. In eight runs of fixed lengths (h = p/2, k = min(r, p-1-r), M = m/2
// micro-batches per direction): forwards of its phase, 2(h-k-1); forward pairs of both phases,
// k+1; zero-bubble backwards of the other phase with a W and a forward, h-k-1; the main run of
// overlapped forward-backward pairs, M-p+k+1 times two; backward and pair, h-k-1; backwards of
// both phases, k+1, zero-bubble from the middle on; W and zero-bubble backward, h-k-1; the W
// left, k+1. An overlapped pair is issued forward first; the emulator hides each pair's
// expert- and tensor-parallel communication behind the other half's compute.
class DualPipe final : public models::PipelineSchedule {
 public:
  std::string_view name() const override { return "dualpipe"; }
  models::PipelinePlacement placement() const override { return models::PipelinePlacement::bidirectional; }
  PipelinePlan plan(const PipelineShape& s, std::string_view source, std::string_view where) const override {
    const int p = s.stages, m = s.micro_batches;
    if (p < 2 || p % 2 != 0) bad_shape(source, where, fmt::format("dualpipe needs an even pipeline size, found pp={}", p));
    if (s.chunks != 2) bad_shape(source, where, fmt::format("dualpipe runs two model chunks per stage (one per direction), found {}", s.chunks));
    if (m % 2 != 0 || m < 2 * p) {
      bad_shape(source, where, fmt::format("dualpipe needs an even number of micro-batches, at least twice the pipeline size ({}), found {}", 2 * p, m));
    }
    const int h = p / 2, half = m / 2;
    PipelinePlan plan(static_cast<std::size_t>(p));
    for (int r = 0; r < p; ++r) {
      auto& ops = plan[static_cast<std::size_t>(r)];
      const int k = std::min(r, p - 1 - r), own = r < h ? 0 : 1;
      std::array<int, 2> fwd{0, 0}, bwd{0, 0};  // per phase
      std::deque<std::pair<int, int>> w;        // deferred weight gradients (chunk, mb)
      const auto mb_of = [&](int phase, int i) { return (phase ^ own) * half + i; };
      const auto F = [&](int phase, bool paired = false) {
        const int d = phase ^ own;
        ops.push_back({PipeOpKind::forward, mb_of(phase, fwd[static_cast<std::size_t>(phase)]++), d, paired});
      };
      const auto B = [&](int phase, bool zb, bool paired = false) {
        const int d = phase ^ own, mb = mb_of(phase, bwd[static_cast<std::size_t>(phase)]++);
        ops.push_back({zb ? PipeOpKind::backward_input : PipeOpKind::backward, mb, d, paired});
        if (zb) w.emplace_back(d, mb);
      };
      const auto W = [&] {
        ops.push_back({PipeOpKind::backward_weight, w.front().second, w.front().first});
        w.pop_front();
      };
      for (int i = 0; i < 2 * (h - k - 1); ++i) F(0);
      for (int i = 0; i < k + 1; ++i) F(0), F(1);
      for (int i = 0; i < h - k - 1; ++i) B(1, true), W(), F(1);
      for (int i = 0; i < half - p + k + 1; ++i) {
        const bool first_alone = i == 0 && (r == h - 1 || r == h);  // the middle ranks' first pair runs apart
        F(0, !first_alone), B(1, false, !first_alone), F(1, true), B(0, false, true);
      }
      for (int i = 0; i < h - k - 1; ++i) B(1, false), F(1, true), B(0, false, true);
      bool zb = false;
      for (int i = 0; i < k + 1; ++i) {
        if (i == (k + 1) / 2 && k % 2 == 1) zb = true;
        B(1, zb);
        if (i == (k + 1) / 2 && k % 2 == 0) zb = true;
        B(0, zb);
      }
      for (int i = 0; i < h - k - 1; ++i) W(), B(0, true);
      for (int i = 0; i < k + 1; ++i) W();
      ORRERY_CHECK(w.empty(), "dualpipe leaves {} weight gradients on stage {}", w.size(), r);
    }
    return plan;
  }
};

}  // namespace

const sim::Registry<models::PipelineSchedule>& pipeline_schedules() {
  static const sim::Registry<models::PipelineSchedule> registry = [] {
    sim::Registry<models::PipelineSchedule> r("pipeline schedule");
    r.add({"gpipe", "all forwards, then all backwards (bubble (p-1)/(m+p-1))", {},
           [](const sim::Params&) { return std::make_unique<GPipe>(); }});
    r.add({"1f1b", "PipeDream-flush one-forward-one-backward (bubble (p-1)/(m+p-1), p micro-batches in flight)", {},
           [](const sim::Params&) { return std::make_unique<OneFOneB>(); }});
    r.add({"interleaved-1f1b", "Megatron virtual pipeline: v chunks per stage, bubble about 1/v of 1F1B", {},
           [](const sim::Params&) { return std::make_unique<Interleaved>(); }});
    r.add({"zb-h1", "zero bubble H1: backward split into B and W, W fills the bubbles (bubble (p-1)(F+B-W))", {},
           [](const sim::Params&) { return std::make_unique<ZeroBubbleH1>(); }});
    r.add({"zb-h2", "zero bubble H2: twice 1F1B's warm-up forwards, no idle inside a stage when F = B = W (a parallelogram)", {},
           [](const sim::Params&) { return std::make_unique<ZeroBubbleH2>(); }});
    r.add({"zb-v", "zero bubble V: two chunks per stage in a V, near-zero bubble at 1F1B's activation memory (vp 2)", {},
           [](const sim::Params&) { return std::make_unique<ZeroBubbleV>(); }});
    r.add({"dualpipe", "DeepSeek-V3's bidirectional pipeline: overlapped forward-backward pairs hide EP/TP communication, twice the parameters (even pp)", {},
           [](const sim::Params&) { return std::make_unique<DualPipe>(); }});
    r.add({"stp", "STP braided tensor/pipeline schedule: V placement, forward and backward units of different micro-batches braided so TP collectives hide (vp 2)", {},
           [](const sim::Params&) { return std::make_unique<Braided>(); }});
    return r;
  }();
  return registry;
}

}  // namespace orrery::policies
