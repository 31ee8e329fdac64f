#include "policies/pipeline.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <deque>
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

// Megatron-LM's interleaved schedule (schedules.py, forward_backward_pipelining_with_interleaving):
// virtual micro-batch k runs chunk (k mod pv) / p (reversed for backwards) on micro-batch
// (k / pv) p + k mod p; warm-up (p - i - 1) 2 + (v - 1) p forwards, then 1F1B.
class Interleaved final : public models::PipelineSchedule {
 public:
  std::string_view name() const override { return "interleaved-1f1b"; }
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
    return r;
  }();
  return registry;
}

}  // namespace orrery::policies
