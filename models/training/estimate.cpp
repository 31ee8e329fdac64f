#include "models/training/estimate.hpp"

#include "models/hardware/kernel.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace orrery::models {

namespace {

struct StageSums {
  double f = 0, b = 0, w = 0;  // one micro-batch, all chunks of the stage
  double comm = 0;             // exposed communication inside those ops
  DpShare params;              // trained: what is reduced, gathered after the step and updated
  double t() const { return f + b + w; }
};

double seconds_of(const CostModel& cost, const Kernel& k) { return cost.time(k).to_seconds(); }

}  // namespace

MemoryEstimate estimate_step_memory(const StepScenario& sc, const PipelineSchedule& schedule) {
  validate_model(sc.model, sc.source, "/model");
  validate_plan(sc.plan, sc.model, cluster_gpus(sc.topology), sc.source, "/plan");
  validate_precision(sc.plan, sc.gpu, sc.source, "/plan");
  validate_offload(sc.plan, sc.model, sc.gpu, sc.source, "/plan");
  const PipelinePlan order = schedule.plan(pipeline_shape(sc.plan), sc.source, "/plan/schedule");
  return estimate_memory(sc.plan, sc.model, order, fp8_any_layout(sc.gpu));
}

StepEstimate estimate_step(const StepScenario& sc, const CostModel& cost, const PipelineSchedule& schedule, CommModel comm) {
  FabricCosts fabric(sc.topology, closed_form_of(comm));
  return estimate_step(sc, cost, schedule, fabric);
}

namespace {
StepEstimate estimate_step_unchecked(const StepScenario& sc, const CostModel& cost, const PipelineSchedule& schedule, FabricCosts& fabric);
}  // namespace

StepEstimate estimate_step(const StepScenario& sc, const CostModel& cost, const PipelineSchedule& schedule, FabricCosts& fabric) {
  try {
    StepEstimate e = estimate_step_unchecked(sc, cost, schedule, fabric);
    // The estimate sums in seconds; the emulator of the same step would pass the clock.
    if (!(e.step_time_s < 9.2e9)) {
      throw sim::DurationOverflow(fmt::format("a step of {:.3g} s passes the clock's range of 292 years", e.step_time_s));
    }
    return e;
  } catch (const sim::DurationOverflow& e) {
    throw step_overflow(sc, e);
  }
}

namespace {

// One chunk's data-parallel collectives under ZeRO-2 and -3.
struct ZeroCosts {
  double g = 0, r = 0;  // one layer's gather and reduce-scatter
  double G = 0, R = 0;  // the whole chunk's
};

// What the steps of an estimate share: the plan, the schedule's order and, per chunk, its ops'
// times for one micro-batch (with ZeRO-2 and -3's collectives once they are paced in).
struct Pipeline {
  const ParallelPlan& p;
  const PipelinePlan& order;
  const PipelineShape& shape;
  FabricCosts& fabric;
  const std::string_view kind;  // the schedule's name
  const int mbs;
  const int dp_group;
  const DpGroups groups;
  const bool split_ops;    // the plan has B and W apart
  const bool zero_per_mb;  // ZeRO-2 and -3: data-parallel collectives every micro-batch
  const bool zero3;
  std::vector<ChunkOpCosts> chunks;
  const std::vector<ChunkOpCosts> own_chunks;  // before the collectives are added
  std::vector<ZeroCosts> zc;

  const ChunkOpCosts& chunk(int c, int stage) const { return chunks[static_cast<std::size_t>(shape.virtual_stage(stage, c))]; }
  // One op's time on a stage: its chunk's F, B + W, B or W.
  double op_seconds(const PipeOp& op, int stage) const {
    const ChunkOpCosts& k = chunk(op.chunk, stage);
    switch (op.kind) {
      case PipeOpKind::forward: return k.f.seconds();
      case PipeOpKind::backward: return k.b.seconds() + k.w.seconds();
      case PipeOpKind::backward_input: return k.b.seconds();
      case PipeOpKind::backward_weight: return k.w.seconds();
    }
    return 0.0;
  }
  OpDuration op_duration() const {
    return [this](const PipeOp& op, int stage) { return op_seconds(op, stage); };
  }
};

// ZeRO-2 and -3 communicate every micro-batch (run_step: ZeRO-2 reduce-scatters each
// micro-batch's gradients after its backward; ZeRO-3 also gathers each layer before every
// forward and backward, prefetching one layer ahead). Per layer, an op then takes the longer
// of its compute and the data-parallel collectives it waits on (a gather one layer ahead
// hides only behind one layer); unoverlapped collectives add to the op. The extra time is
// counted as the op's exposed communication. The collectives a layer waits on also slow its
// compute by `share` (1 - overlap.dp) of the time they run beside it (RankBuilder::slow_down).
void add_zero_collectives(Pipeline& x, double share) {
  const ParallelPlan& p = x.p;
  const bool split_ops = x.split_ops, zero3 = x.zero3;
  x.zc.resize(x.chunks.size());
  if (!x.zero_per_mb) return;
  const CollectiveOp rs = CollectiveOp::reduce_scatter;
  for (std::size_t i = 0; i < x.chunks.size(); ++i) {
    ChunkOpCosts& k = x.chunks[i];
    ZeroCosts& z = x.zc[i];
    const int n = std::max(1, k.layers);
    z.g = x.fabric.dp_collective(CollectiveOp::all_gather, k.params / n, param_gather_bytes(p), x.groups);
    z.r = x.fabric.dp_collective(rs, k.trainable / n, grad_reduce_bytes(p), x.groups);
    z.G = x.fabric.dp_collective(CollectiveOp::all_gather, k.params, param_gather_bytes(p), x.groups);
    z.R = x.fabric.dp_collective(rs, k.trainable, grad_reduce_bytes(p), x.groups);
    // Per layer: the op's compute d, slowed by the collectives c beside it, against them, over n
    // layers.
    const auto paced = [n, share](OpTime& t, double c) {
      const double d = t.seconds() / n, slowed = d + share * std::min(c, d);
      t.compute += n * (slowed - d);
      t.comm += n * std::max(0.0, c - slowed);
    };
    OpTime& grad_op = split_ops ? k.w : k.b;  // the op that completes the gradients (B stands for BW)
    if (zero3) {
      if (p.overlap_param_gather) {
        paced(k.f, z.g);
        if (split_ops) {
          paced(k.b, z.g);
        } else {
          // BW: the layer's gather and its gradient bucket.
          OpTime bw{k.b.compute + k.w.compute, k.b.comm + k.w.comm};
          const double before = bw.seconds();
          paced(bw, z.g + (p.overlap_grad_reduce ? z.r : 0.0));
          k.b.comm += bw.seconds() - before;
        }
      } else {
        k.f.comm += z.G;
        k.b.comm += z.G;
      }
    }
    // ZeRO-2's buckets hold nothing back (only the step's DP total does, below); ZeRO-3's
    // share the stream with the next layer's gather, so they pace the op.
    if (p.overlap_grad_reduce) {
      if (zero3 && (split_ops || !p.overlap_param_gather)) {
        OpTime own = split_ops ? k.w : OpTime{k.b.compute + k.w.compute, k.b.comm + k.w.comm};
        const double before = own.seconds();
        paced(own, z.r);
        grad_op.comm += own.seconds() - before;
      }
    } else {
      grad_op.comm += z.R;
    }
  }
}

// Per stage: one micro-batch through all its chunks.
std::vector<StageSums> stage_sums(const Pipeline& x) {
  const ParallelPlan& p = x.p;
  std::vector<StageSums> st(static_cast<std::size_t>(p.pp));
  for (int s = 0; s < p.pp; ++s) {
    StageSums& sum = st[static_cast<std::size_t>(s)];
    for (int c = 0; c < x.shape.chunks; ++c) {
      const ChunkOpCosts& k = x.chunk(c, s);
      sum.f += k.f.seconds();
      sum.b += k.b.seconds();
      sum.w += k.w.seconds();
      sum.comm += k.f.comm + k.b.comm + k.w.comm;
      sum.params += k.trainable;
    }
  }
  return st;
}

// The pipeline's compute at its bottleneck stage (m micro-batches of it), and the schedule's
// bubble on top.
struct PipelineTime {
  double ideal = 0;
  double ramp = 0;
};

// The schedule's bubble. Equal stages of per-micro-batch time t (F + B + W), p stages, m
// micro-batches, v chunks per stage:
//  - GPipe, 1F1B: (p - 1) t, i.e. (p-1)/m of the ideal m t (Narayanan et al. SC'21, "Efficient
//    Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", sec. 2.2.1). With
//    unequal stages the ramp is every other stage's time once: sum t_s - max t_s.
//  - interleaved 1F1B: (p - 1) t / v (same paper, sec. 2.2.2).
//  - ZB-H1: (p - 1)(T_F + T_B - T_W): W fills part of the drain (Qi et al. ICLR'24, "Zero Bubble
//    Pipeline Parallelism", sec. 3.1).
// Other schedules: their plan replayed with these op times (plan_makespan).
PipelineTime pipeline_time(const Pipeline& x, const std::vector<StageSums>& st) {
  const auto bottleneck = std::max_element(st.begin(), st.end(), [](const StageSums& a, const StageSums& b) { return a.t() < b.t(); });
  const double t_max = bottleneck->t();
  const double t_sum = std::accumulate(st.begin(), st.end(), 0.0, [](double a, const StageSums& s) { return a + s.t(); });
  const std::string_view kind = x.kind;
  const double ideal = x.mbs * t_max;
  double ramp = 0;
  if (kind == "gpipe" || kind == "1f1b") {
    ramp = t_sum - t_max;
  } else if (kind == "interleaved-1f1b") {
    ramp = (t_sum - t_max) / x.p.vp;
  } else if (kind == "zb-h1") {
    double sum = 0, worst = 0;
    for (const StageSums& s : st) {
      const double r = std::max(0.0, s.f + s.b - s.w);
      sum += r;
      worst = std::max(worst, r);
    }
    ramp = sum - worst;
  } else {
    const double span = plan_makespan(x.order, x.shape, x.op_duration());
    ramp = std::max(0.0, span - ideal);
  }
  return {ideal, ramp};
}

// Pipeline sends: each micro-batch crosses p - 1 stage boundaries forward and back. GPipe
// pays them in the fill and the drain only; in 1F1B and ZB-H1 a stage's next forward waits
// for the round trip through its neighbour (a send each way), so every micro-batch pays two;
// interleaving's deeper warm-up (v chunks in flight) hides them after the fill. Returns one
// send's time and sets the step's pp_comm_s.
double add_pipeline_sends(const Pipeline& x, const ModelSpec& m, StepEstimate& e) {
  const ParallelPlan& p = x.p;
  const std::string_view kind = x.kind;
  const int pp_stride = p.tp * p.cp * p.dp;
  const double c = p.pp > 1 ? x.fabric.p2p(pipeline_send_bytes(m, p), pp_stride) : 0.0;
  if (p.pp > 1) {
    if (kind == "1f1b" || kind == "zb-h1") {
      e.pp_comm_s = 2 * c * (x.mbs + p.pp - 1);
    } else {
      e.pp_comm_s = 2 * c * (p.virtual_stages() - 1);
    }
  }
  return c;
}

// The data-parallel communication the pipeline cannot hide: before the first forward (head) and
// after each stage's last op (tail).
struct DpEdges {
  std::vector<double> tail;
  double head = 0;
};

// Data parallelism over dp x cp ranks `tp` apart (the routed experts over their own group,
// DpGroups), one bucket per layer (as run_step); `c` is one pipeline send.
DpEdges dp_edges(const Pipeline& x, const std::vector<StageSums>& st, double c) {
  const ParallelPlan& p = x.p;
  const int dp_group = x.dp_group;
  const CollectiveOp reduce_op = p.zero >= 1 ? CollectiveOp::reduce_scatter : CollectiveOp::all_reduce;
  const bool split = x.split_ops;
  std::vector<double> tail(static_cast<std::size_t>(p.pp), 0.0);
  double head = 0;
  if (dp_group > 1) {
    double ramp_in = 0;  // when the stage's first forward could start without the gathers
    for (int s = 0; s < p.pp; ++s) {
      const StageSums& sum = st[static_cast<std::size_t>(s)];
      // Gradients: overlapped, each layer's bucket goes when its part of the chunk's last
      // backward op is done; the chain of n buckets of r seconds behind n parts of d seconds
      // ends max(r, n r - (n - 1) d) after the op. The chunk whose backward runs last is chunk 0.
      if (p.overlap_grad_reduce) {
        const ChunkOpCosts& k = x.chunk(0, s);
        const int n = std::max(1, k.layers);
        const double r = x.fabric.dp_collective(reduce_op, k.trainable / n, grad_reduce_bytes(p), x.groups);
        const double d = (split ? k.w.seconds() : k.b.seconds() + k.w.seconds()) / n;
        tail[static_cast<std::size_t>(s)] = std::max(r, n * r - (n - 1) * d);
      } else if (!x.zero_per_mb) {
        tail[static_cast<std::size_t>(s)] = x.fabric.dp_collective(reduce_op, sum.params, grad_reduce_bytes(p), x.groups);
      }  // ZeRO-2, -3 unoverlapped: the last reduce-scatter is in the last backward's time
      // Parameters (ZeRO >= 1): overlapped, the gathers run in order from the step's start and
      // each chunk's first forward waits for its layers' buckets; else one gather after the
      // optimizer. ZeRO-3 gathers before every op (in the op times above); only the step's
      // first layer waits for its gather, and nothing is gathered after the optimizer.
      if (x.zero3) {
        if (s == 0 && p.overlap_param_gather) head = x.zc.front().g;
      } else if (p.zero >= 1) {
        if (p.overlap_param_gather) {
          double issued = 0, wait = 0;
          for (int cc = 0; cc < x.shape.chunks; ++cc) {
            const ChunkOpCosts& k = x.chunk(cc, s);
            const int n = std::max(1, k.layers);
            const double g = x.fabric.dp_collective(CollectiveOp::all_gather, k.trainable / n, param_gather_bytes(p), x.groups);
            const double d = k.f.seconds() / n;
            // The chunk's first forward starts after the stage's ramp and, with interleaving,
            // after p forwards of each earlier chunk.
            const double start = ramp_in + cc * p.pp * (sum.f / x.shape.chunks);
            wait = std::max(wait, issued + std::max(g, n * g - (n - 1) * d) - start);
            issued += n * g;
          }
          head = std::max(head, wait);
        } else {
          tail[static_cast<std::size_t>(s)] += x.fabric.dp_collective(CollectiveOp::all_gather, sum.params, param_gather_bytes(p), x.groups);
        }
      }
      ramp_in += x.chunk(0, s).f.seconds() + c;
    }
  }
  return {tail, head};
}

// Per stage, how much the data-parallel collectives that run beside its compute slow it (as
// run_step charges them, RankBuilder::slow_down): (1 - overlap.dp) of their time, at most that
// share of the compute they run beside. Beside the compute run ZeRO-1 and -2's parameter gathers
// from the step's start, less the pipeline's fill before the stage's first forward (`c`: one
// pipeline send), every gradient bucket but the last (ZeRO-0 and -1: the chunks' last
// backward ops'; ZeRO-2: every micro-batch's); the unoverlapped ones beside nothing. ZeRO-3's
// overlapped collectives pace each layer (add_zero_collectives), which charges them.
struct DpInterference {
  double gathers = 0, buckets = 0;
};
std::vector<DpInterference> dp_interference(const Pipeline& x, const std::vector<StageSums>& st, double overlap_dp, double c) {
  const ParallelPlan& p = x.p;
  std::vector<DpInterference> out(static_cast<std::size_t>(p.pp));
  if (x.dp_group <= 1 || overlap_dp == 1 || x.zero3) return out;
  const CollectiveOp reduce_op = p.zero >= 1 ? CollectiveOp::reduce_scatter : CollectiveOp::all_reduce;
  const double per_step = x.zero_per_mb ? x.mbs : 1;  // how often each bucket goes
  double fill = 0;
  for (int s = 0; s < p.pp; ++s) {
    double buckets = 0, last_bucket = 0, gathers = 0;
    for (int cc = 0; cc < x.shape.chunks; ++cc) {
      const ChunkOpCosts& k = x.chunk(cc, s);
      const int n = std::max(1, k.layers);
      if (p.overlap_grad_reduce) {
        // Each layer's bucket beside the next layer's part of the op (d), or of a later op; the
        // step's last bucket (chunk 0's last layer) beside nothing.
        const double r = x.fabric.dp_collective(reduce_op, k.trainable / n, grad_reduce_bytes(p), x.groups);
        const double d = (x.split_ops ? k.w.seconds() : k.b.seconds() + k.w.seconds()) / n;
        buckets += per_step * n * std::min(r, d);
        if (cc == 0) last_bucket = std::min(r, d);
      }
      if (p.overlap_param_gather && p.zero >= 1) {
        gathers += n * x.fabric.dp_collective(CollectiveOp::all_gather, k.trainable / n, param_gather_bytes(p), x.groups);
      }
    }
    const double compute = x.mbs * st[static_cast<std::size_t>(s)].t();
    const double g = std::min(std::max(0.0, gathers - fill), compute);
    out[static_cast<std::size_t>(s)] = {(1 - overlap_dp) * g, (1 - overlap_dp) * std::min(std::max(0.0, buckets - last_bucket), compute - g)};
    fill += x.chunk(0, s).f.seconds() + c;
  }
  return out;
}

// What the interference adds to the step: the slowest stage's gathers' share (they overlap the
// fill and the steady state) and, under ZeRO-0 and -1, every stage's buckets' share, which slow
// the last backward ops of each stage, one after another through the pipeline's drain; ZeRO-2's
// buckets, spread over the step, as the gathers.
double dp_interference_step(const Pipeline& x, const std::vector<DpInterference>& per_stage) {
  double slowest = 0, drained = 0;
  for (const DpInterference& d : per_stage) {
    slowest = std::max(slowest, d.gathers + (x.zero_per_mb ? d.buckets : 0.0));
    drained += x.zero_per_mb ? 0.0 : d.buckets;
  }
  return slowest + drained;
}

// The end of the step: the optimizer after the stage's reductions.
struct StepEnd {
  double end = 0;           // after the pipeline
  std::vector<double> opt;  // each stage's optimizer
};

// The end: the optimizer after the stage's reductions. Stage s runs its last op earlier than
// stage 0 by the backward ops of the stages before it (the drain runs from the last stage to
// the first).
StepEnd step_end(const Pipeline& x, const std::vector<StageSums>& st, const CostModel& cost, const GpuSpec& gpu, const std::vector<double>& tail) {
  const ParallelPlan& p = x.p;
  const bool split = x.split_ops;
  double end = 0, lead = 0;
  std::vector<double> opt(static_cast<std::size_t>(p.pp));
  for (int s = 0; s < p.pp; ++s) {
    const StageSums& sum = st[static_cast<std::size_t>(s)];
    const double params = optimizer_params(p, sum.params);
    int layers = 0;
    for (int c = 0; c < x.shape.chunks; ++c) layers += x.chunk(c, s).layers;
    opt[static_cast<std::size_t>(s)] = p.optimizer_offload == "cpu" ? offloaded_optimizer_seconds(p, gpu, params, layers)
                                                                    : seconds_of(cost, Kernel::optimizer(std::max<std::int64_t>(1, std::llround(params))));
    end = std::max(end, tail[static_cast<std::size_t>(s)] + opt[static_cast<std::size_t>(s)] - lead);
    const ChunkOpCosts& k0 = x.chunk(0, s);
    lead += split ? k0.b.seconds() : k0.b.seconds() + k0.w.seconds();
  }
  return {end, opt};
}

// ZeRO-2, overlapped: per stage, when its first gradient bucket can go (the first layer of its
// first op that completes gradients, in the schedule replayed with the op times).
std::vector<double> first_grad_buckets(const Pipeline& x) {
  const ParallelPlan& p = x.p;
  std::vector<double> first_grad(static_cast<std::size_t>(p.pp), 0.0);  // when the stage's first gradient bucket can go
  std::vector<OpSpan> spans;
  plan_makespan(x.order, x.shape, x.op_duration(), &spans);
  std::vector<bool> seen(static_cast<std::size_t>(p.pp), false);
  for (const OpSpan& o : spans) {
    const bool grads = o.op.kind == PipeOpKind::backward || o.op.kind == PipeOpKind::backward_weight;
    const auto st_i = static_cast<std::size_t>(o.stage);
    if (!grads || (seen[st_i] && first_grad[st_i] <= o.start)) continue;
    first_grad[st_i] = seen[st_i] ? std::min(first_grad[st_i], o.start) : o.start;
    first_grad[st_i] += (o.end - o.start) / std::max(1, x.chunk(o.op.chunk, o.stage).layers);
    seen[st_i] = true;
  }
  return first_grad;
}

// ZeRO-2 and -3, overlapped: the data-parallel stream's busy time over the step bounds it from
// below, with the edges it cannot hide. ZeRO-2: its m x n reduce-scatters per chunk start
// with the stage's first backward layer (the step-start gathers fill the time before) and
// end before the optimizer. ZeRO-3: m x n x (two gathers and a reduce-scatter) per chunk,
// from the stage's first forward (two gathers run ahead of it) to the last layer's backward,
// then its reduce-scatter, then the optimizer. Raises the step time to the bound; `c` is one
// pipeline send.
void apply_zero_bound(const Pipeline& x, const std::vector<double>& opt, double c, StepEstimate& e) {
  const ParallelPlan& p = x.p;
  const int mbs = x.mbs;
  const bool bound_zero2 = x.zero_per_mb && !x.zero3 && p.overlap_grad_reduce;
  const bool bound_zero3 = x.zero3 && p.overlap_param_gather;
  if (!(bound_zero2 || bound_zero3)) return;
  const std::vector<double> first_grad = bound_zero2 ? first_grad_buckets(x) : std::vector<double>(static_cast<std::size_t>(p.pp), 0.0);
  double ramp_in = 0, lower = 0;
  for (int s = 0; s < p.pp; ++s) {
    double busy = 0, gathers = 0, after_gathers = 0;
    for (int cc = 0; cc < x.shape.chunks; ++cc) {
      const auto i = static_cast<std::size_t>(x.shape.virtual_stage(s, cc));
      const int n = std::max(1, x.chunks[i].layers);
      if (bound_zero3) {
        busy += mbs * n * (2 * x.zc[i].g + (p.overlap_grad_reduce ? x.zc[i].r : 0.0)) + (p.overlap_grad_reduce ? 0.0 : mbs * x.zc[i].R);
      } else {
        busy += mbs * n * x.zc[i].r;
        if (p.overlap_param_gather) {
          gathers += n * x.zc[i].g;
        } else {
          after_gathers += x.zc[i].G;
        }
      }
    }
    const ChunkOpCosts& k0 = x.own_chunks[static_cast<std::size_t>(s)];
    const int n0 = std::max(1, k0.layers);
    double bound = 0;
    if (bound_zero3) {
      const double last_layer = (x.split_ops ? k0.w.seconds() : k0.b.seconds() + k0.w.seconds()) / n0;
      bound = std::max(busy, ramp_in + k0.f.seconds() / n0 + busy - 2 * x.zc[static_cast<std::size_t>(s)].g) + last_layer;
    } else {
      bound = std::max(gathers, first_grad[static_cast<std::size_t>(s)]) + busy + after_gathers;
    }
    lower = std::max(lower, bound + opt[static_cast<std::size_t>(s)]);
    ramp_in += x.chunk(0, s).f.seconds() + c;
  }
  e.step_time_s = std::max(e.step_time_s, lower);
}

// The step's bubble and exposed-communication fractions, throughput and utilisation; `pipe` is
// the pipeline's time with its sends, `tail` each stage's data-parallel tail.
void add_fractions(const Pipeline& x, const std::vector<StageSums>& st, double pipe, double head, const std::vector<double>& tail,
                   const StepScenario& sc, StepEstimate& e) {
  const ModelSpec& m = sc.model;
  const ParallelPlan& p = x.p;
  const double step = e.step_time_s;
  double bubble = 0, exposed = 0;
  for (int s = 0; s < p.pp; ++s) {
    const StageSums& sum = st[static_cast<std::size_t>(s)];
    bubble += std::max(0.0, pipe - e.pp_comm_s - x.mbs * sum.t());
    exposed += x.mbs * sum.comm + e.pp_comm_s + head + tail[static_cast<std::size_t>(s)];
  }
  e.bubble_fraction = bubble / p.pp / step;
  e.exposed_comm_fraction = exposed / p.pp / step;
  e.tokens_per_s = static_cast<double>(p.global_batch) * static_cast<double>(p.seq_len) / step;
  const double gpus = p.gpus();
  const double model_flops = step_model_flops(m, p);
  e.tflops_per_gpu = model_flops / step / gpus / 1e12;
  e.mfu = model_flops / step / gpus / sc.gpu.peak(DType::bf16).value();
}

StepEstimate estimate_step_unchecked(const StepScenario& sc, const CostModel& cost, const PipelineSchedule& schedule, FabricCosts& fabric) {
  const ModelSpec& m = sc.model;
  const ParallelPlan& p = sc.plan;
  validate_model(m, sc.source, "/model");
  validate_plan(p, m, cluster_gpus(sc.topology), sc.source, "/plan");
  validate_precision(p, sc.gpu, sc.source, "/plan");
  validate_offload(p, sc.model, sc.gpu, sc.source, "/plan");
  const int mbs = p.micro_batches();
  // Per stage: one micro-batch through all its chunks.
  std::vector<ChunkOpCosts> chunks = chunk_op_costs(sc, cost, fabric);
  PipelineShape shape = pipeline_shape(p);
  shape.costs = {0, 0, 0};
  for (const ChunkOpCosts& k : chunks) {
    const double n = static_cast<double>(chunks.size());
    shape.costs.f += k.f.seconds() / n, shape.costs.b += k.b.seconds() / n, shape.costs.w += k.w.seconds() / n;
  }
  const PipelinePlan order = schedule.plan(shape, sc.source, "/plan/schedule");

  StepEstimate e;
  e.micro_batches = mbs;
  e.memory = estimate_memory(p, m, order, fp8_any_layout(sc.gpu));
  check_host_memory(e.memory, p, m, sc.gpu, sc.source, "/plan");
  e.oom = out_of_memory(e.memory, sc.gpu);

  const int dp_group = p.dp * p.cp;
  const bool split_ops = std::any_of(order.front().begin(), order.front().end(), [](const PipeOp& op) { return op.kind == PipeOpKind::backward_input; });
  Pipeline x{p, order, shape, fabric, schedule.name(), mbs, dp_group, fabric.dp_groups_of(p), split_ops, dp_traffic_stage(p) >= 2 && dp_group > 1,
             dp_traffic_stage(p) >= 3 && dp_group > 1, chunks, chunks, {}};
  add_zero_collectives(x, 1 - cost.overlap_dp_efficiency());
  const std::vector<StageSums> st = stage_sums(x);
  const PipelineTime pt = pipeline_time(x, st);
  e.pipeline_compute_s = pt.ideal;
  e.bubble_s = pt.ramp;
  const double c = add_pipeline_sends(x, m, e);
  const double pipe = pt.ideal + pt.ramp + e.pp_comm_s;
  const DpEdges dp = dp_edges(x, st, c);
  e.dp_head_s = dp.head;
  const StepEnd end = step_end(x, st, cost, sc.gpu, dp.tail);
  e.dp_tail_s = dp.tail.front();
  e.optimizer_s = end.opt.front();
  e.dp_interference_s = dp_interference_step(x, dp_interference(x, st, cost.overlap_dp_efficiency(), c));
  e.pipeline_compute_s += e.dp_interference_s;
  e.step_time_s = dp.head + pipe + end.end + e.dp_interference_s;
  apply_zero_bound(x, end.opt, c, e);
  add_fractions(x, st, pipe, dp.head, dp.tail, sc, e);
  return e;
}
}  // namespace

}  // namespace orrery::models
