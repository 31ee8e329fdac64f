#include "models/training/pipeline.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <limits>
#include <vector>

namespace orrery::models {

std::string_view to_string(PipeOpKind k) {
  switch (k) {
    case PipeOpKind::forward: return "F";
    case PipeOpKind::backward: return "BW";
    case PipeOpKind::backward_input: return "B";
    case PipeOpKind::backward_weight: return "W";
  }
  return "?";
}

std::string_view to_string(PipelinePlacement p) {
  switch (p) {
    case PipelinePlacement::interleaved: return "interleaved";
    case PipelinePlacement::vee: return "vee";
    case PipelinePlacement::bidirectional: return "bidirectional";
  }
  return "?";
}

int PipelineShape::virtual_stage(int stage, int chunk) const {
  switch (placement) {
    case PipelinePlacement::interleaved: return chunk * stages + stage;
    case PipelinePlacement::vee: return chunk * stages + (chunk % 2 == 0 ? stage : stages - 1 - stage);
    case PipelinePlacement::bidirectional: return chunk == 0 ? stage : stages - 1 - stage;
  }
  return -1;
}

PipelineShape::Slot PipelineShape::slot(int vs, int mb) const {
  switch (placement) {
    case PipelinePlacement::interleaved: return {vs % stages, vs / stages};
    case PipelinePlacement::vee: {
      const int chunk = vs / stages, at = vs % stages;
      return {chunk % 2 == 0 ? at : stages - 1 - at, chunk};
    }
    case PipelinePlacement::bidirectional: {
      const int d = direction(mb);
      return {d == 0 ? vs : stages - 1 - vs, d};
    }
  }
  return {-1, -1};
}

int PipelineShape::direction(int mb) const {
  if (placement != PipelinePlacement::bidirectional) return -1;
  return mb < (micro_batches + 1) / 2 ? 0 : 1;
}

namespace {

// Completion times per (op kind, virtual stage, micro-batch); < 0 = not done.
struct Done {
  int vstages, mbs;
  std::vector<double> f, b, w;
  Done(int v, int m) : vstages(v), mbs(m), f(static_cast<std::size_t>(v * m), -1), b(f), w(f) {}
  double& at(std::vector<double>& x, int vs, int mb) { return x[static_cast<std::size_t>(vs * mbs + mb)]; }
};

// List-schedules the plan: repeatedly runs the next op of any stage whose dependencies are
// done. Returns the makespan, or throws if some stage can never proceed.
double run_plan(const PipelinePlan& plan, const PipelineShape& s, const TimedOpDuration& duration_of, std::vector<OpSpan>* spans) {
  const int p = s.stages, v = s.chunks, vstages = s.virtual_stages();
  ORRERY_CHECK(static_cast<int>(plan.size()) == p, "plan has {} stages, expected {}", plan.size(), p);
  Done done(vstages, s.micro_batches);
  std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
  std::vector<double> free_at(static_cast<std::size_t>(p), 0);
  std::size_t remaining = 0;
  for (const auto& ops : plan) remaining += ops.size();
  double makespan = 0;
  while (remaining > 0) {
    bool progressed = false;
    for (int stage = 0; stage < p; ++stage) {
      const auto st = static_cast<std::size_t>(stage);
      while (next[st] < plan[st].size()) {
        const PipeOp& op = plan[st][next[st]];
        ORRERY_CHECK(op.chunk >= 0 && op.chunk < v && op.micro_batch >= 0 && op.micro_batch < s.micro_batches,
                     "stage {} op {} out of range", stage, next[st]);
        ORRERY_CHECK(s.direction(op.micro_batch) < 0 || s.direction(op.micro_batch) == op.chunk, "stage {} runs micro-batch {} on chunk {}, not its direction's",
                     stage, op.micro_batch, op.chunk);
        const int vs = s.virtual_stage(stage, op.chunk);
        double ready = free_at[st];
        bool ok = true;
        const auto need = [&](double t) {
          if (t < 0) ok = false;
          ready = std::max(ready, t);
        };
        switch (op.kind) {
          case PipeOpKind::forward:
            ORRERY_CHECK(done.at(done.f, vs, op.micro_batch) < 0, "forward {} of vs {} twice", op.micro_batch, vs);
            if (vs > 0) need(done.at(done.f, vs - 1, op.micro_batch));
            break;
          case PipeOpKind::backward:
          case PipeOpKind::backward_input:
            ORRERY_CHECK(done.at(done.b, vs, op.micro_batch) < 0, "backward {} of vs {} twice", op.micro_batch, vs);
            need(done.at(done.f, vs, op.micro_batch));
            if (vs + 1 < vstages) need(done.at(done.b, vs + 1, op.micro_batch));
            break;
          case PipeOpKind::backward_weight:
            ORRERY_CHECK(done.at(done.w, vs, op.micro_batch) < 0, "weight grad {} of vs {} twice", op.micro_batch, vs);
            need(done.at(done.b, vs, op.micro_batch));
            break;
        }
        if (!ok) break;
        const double end = ready + duration_of(op, stage, ready);
        if (spans != nullptr) spans->push_back({stage, op, ready, end});
        if (op.kind == PipeOpKind::forward) done.at(done.f, vs, op.micro_batch) = end;
        if (op.kind == PipeOpKind::backward || op.kind == PipeOpKind::backward_input) done.at(done.b, vs, op.micro_batch) = end;
        if (op.kind == PipeOpKind::backward || op.kind == PipeOpKind::backward_weight) done.at(done.w, vs, op.micro_batch) = end;
        free_at[st] = end;
        makespan = std::max(makespan, end);
        ++next[st];
        --remaining;
        progressed = true;
      }
    }
    ORRERY_CHECK(progressed, "pipeline plan deadlocks with {} ops left", remaining);
  }
  for (std::size_t i = 0; i < done.f.size(); ++i) {
    ORRERY_CHECK(done.f[i] >= 0 && done.b[i] >= 0 && done.w[i] >= 0, "plan misses an op (virtual stage {}, micro-batch {})",
                 static_cast<int>(i) / s.micro_batches, static_cast<int>(i) % s.micro_batches);
  }
  return makespan;
}

}  // namespace

namespace {
TimedOpDuration uniform(double t_f, double t_b, double t_w) {
  return [=](const PipeOp& op, int, double) {
    switch (op.kind) {
      case PipeOpKind::forward: return t_f;
      case PipeOpKind::backward: return t_b + t_w;
      case PipeOpKind::backward_input: return t_b;
      case PipeOpKind::backward_weight: return t_w;
    }
    return 0.0;
  };
}
}  // namespace

void check_plan(const PipelinePlan& plan, const PipelineShape& shape) { run_plan(plan, shape, uniform(1, 1, 1), nullptr); }

double plan_makespan(const PipelinePlan& plan, const PipelineShape& shape, double t_f, double t_b, double t_w) {
  return run_plan(plan, shape, uniform(t_f, t_b, t_w), nullptr);
}

double plan_makespan(const PipelinePlan& plan, const PipelineShape& shape, const OpDuration& duration, std::vector<OpSpan>* spans) {
  return run_plan(plan, shape, [&duration](const PipeOp& op, int stage, double) { return duration(op, stage); }, spans);
}

double plan_makespan(const PipelinePlan& plan, const PipelineShape& shape, const TimedOpDuration& duration, std::vector<OpSpan>* spans) {
  return run_plan(plan, shape, duration, spans);
}

int peak_in_flight(const std::vector<PipeOp>& ops) {
  int peak = 0, live = 0;
  for (const PipeOp& op : ops) {
    if (op.kind == PipeOpKind::forward) peak = std::max(peak, ++live);
    if (op.kind == PipeOpKind::backward || op.kind == PipeOpKind::backward_input) --live;
  }
  return peak;
}

int peak_in_flight(const PipelinePlan& plan) {
  int peak = 0;
  for (const auto& ops : plan) peak = std::max(peak, peak_in_flight(ops));
  return peak;
}

double max_stage_idle(const std::vector<OpSpan>& spans, int stages) {
  std::vector<double> first(static_cast<std::size_t>(stages), std::numeric_limits<double>::infinity()), last(first.size(), 0), busy(first.size(), 0);
  for (const OpSpan& s : spans) {
    const auto i = static_cast<std::size_t>(s.stage);
    first[i] = std::min(first[i], s.start);
    last[i] = std::max(last[i], s.end);
    busy[i] += s.end - s.start;
  }
  double idle = 0;
  for (std::size_t i = 0; i < first.size(); ++i) {
    if (busy[i] > 0) idle = std::max(idle, last[i] - first[i] - busy[i]);
  }
  return idle;
}

}  // namespace orrery::models
