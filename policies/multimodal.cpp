#include "policies/multimodal.hpp"

#include "policies/compound.hpp"
#include "policies/pipeline.hpp"
#include "sim/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <string>
#include <tuple>

namespace orrery::policies {

namespace {

using models::ModuleCostCache;
using models::ModuleKind;
using models::MultimodalSample;
using models::MultimodalSetup;
using models::MultimodalStep;
using models::PipeNode;
using models::PipeProgram;

std::size_t u(int i) { return static_cast<std::size_t>(i); }

// A run of layers of one module (a projector counts as one layer).
struct Unit {
  int module = 0;
  int layers = 0;
};
using Partition = std::vector<std::vector<Unit>>;  // per stage (or chunk)

// The GPUs a module's tokens are split over beyond TP: a video DiT's context parallelism.
int cp_share(const MultimodalSetup& setup, const models::ModuleSpec& m) { return m.kind == ModuleKind::video_dit ? std::max(1, setup.cp) : 1; }

double layer_params(const models::ModuleSpec& m) {
  if (m.kind == ModuleKind::projector) {
    const double inner = static_cast<double>(m.projector_hidden > 0 ? m.projector_hidden : m.shape.hidden);
    return static_cast<double>(m.shape.ffn_hidden) * inner + (m.projector_hidden > 0 ? inner * static_cast<double>(m.shape.hidden) : 0.0);
  }
  return static_cast<double>(m.shape.attention_params() + m.shape.dense_mlp_params());
}

// Splits a list of single layers into `parts` contiguous runs, merging runs of one module.
Partition split(const std::vector<int>& layers_of, const std::vector<double>& cost, int parts, const std::string& source) {
  if (parts < 1 || static_cast<std::size_t>(parts) > layers_of.size()) {
    throw sim::InputError(source, "/multimodal/pp",
                          fmt::format("found {} pipeline parts for {} layers: more stages than the model (or the part) has layers", parts, layers_of.size()));
  }
  const double total = std::accumulate(cost.begin(), cost.end(), 0.0);
  Partition out(u(parts));
  std::size_t k = 0;
  double done = 0;
  for (int s = 0; s < parts; ++s) {
    const auto must_leave = static_cast<std::size_t>(parts - s - 1);
    const double target = total * (s + 1) / parts;
    // At least one layer per part; then take layers while the running cost stays nearer the
    // part's share than without it.
    do {
      const int m = layers_of[k];
      if (!out[u(s)].empty() && out[u(s)].back().module == m) {
        ++out[u(s)].back().layers;
      } else {
        out[u(s)].push_back({m, 1});
      }
      done += cost[k];
      ++k;
    } while (k < layers_of.size() && layers_of.size() - k > must_leave && (s + 1 == parts || done + cost[k] / 2 <= target));
  }
  return out;
}

// Every module's layers in order, as single layers, with a cost each.
void flatten(const models::MultimodalModel& m, const std::vector<int>& modules, const std::vector<double>& layer_cost, std::vector<int>& layers_of,
             std::vector<double>& cost) {
  for (const int i : modules) {
    for (int l = 0; l < m.modules[u(i)].pipeline_layers(); ++l) {
      layers_of.push_back(i);
      cost.push_back(layer_cost[u(i)]);
    }
  }
}

// The GPU memory left for activations on each stage after weights, gradients and optimizer
// state; InputError when a stage's state alone does not fit.
std::vector<double> activation_caps(const MultimodalSetup& setup, const std::vector<double>& stage_params) {
  std::vector<double> cap;
  for (std::size_t s = 0; s < stage_params.size(); ++s) {
    const double state = stage_params[s] * models::state_bytes_per_param(setup.tp, setup.dp);
    const double left = 0.9 * setup.hbm_bytes - state;
    if (setup.hbm_bytes > 0 && left <= 0) {
      throw sim::InputError(setup.source, "/multimodal",
                            fmt::format("a partition that cannot fit memory: stage {} holds {:.1f} GB of weights, gradients and optimizer state "
                                        "(tp {}, dp {}), more than 90% of the GPU's {:.1f} GB",
                                        s, state / 1e9, setup.tp, setup.dp, setup.hbm_bytes / 1e9));
    }
    cap.push_back(setup.hbm_bytes > 0 ? left : 0.0);
  }
  return cap;
}

double stage_param_count(const models::MultimodalModel& m, const std::vector<Unit>& units) {
  double n = 0;
  for (const Unit& x : units) {
    n += x.layers * layer_params(m.modules[u(x.module)]);
    if (m.modules[u(x.module)].kind == ModuleKind::llm && x.layers > 0) n += static_cast<double>(m.modules[u(x.module)].shape.embedding_params()) / 2;
  }
  return n;
}

// Per-layer cost (forward + backward) of each module over a profiling set of samples.
std::vector<double> profiled_layer_cost(const models::MultimodalModel& m, const std::vector<MultimodalSample>& profile, const ModuleCostCache& costs) {
  std::vector<double> c;
  for (std::size_t i = 0; i < m.modules.size(); ++i) c.push_back(costs.layer(static_cast<int>(i), profile).total());
  return c;
}

// ---------------------------------------------------------------------------------------
// Static partitions with 1F1B over fixed micro-batches.

class StaticPipeline : public models::MultimodalPipelinePolicy {
 public:
  // `chunks` > 1: the partition has stages x chunks parts, placed on the stages as `schedule`
  // places them (interleaved: part vs = chunk * stages + stage on `stage`; zb-v and stp: in a V);
  // `schedule` empty: Megatron's 1F1B, interleaved when chunks > 1.
  explicit StaticPipeline(int chunks, std::string schedule = "") : chunks_(chunks), schedule_name_(std::move(schedule)) {
    if (schedule_name_.empty()) schedule_name_ = chunks_ > 1 ? "interleaved-1f1b" : "1f1b";
    schedule_ = pipeline_schedules().create(schedule_name_, {}, {"<policy>", "megatron-1f1b/schedule"});
  }

  MultimodalStep rank_step(const MultimodalSetup& setup, const std::vector<MultimodalSample>& samples, const ModuleCostCache& costs) override {
    const models::MultimodalModel& m = *setup.model;
    std::vector<std::vector<MultimodalSample>> mbs;
    for (std::size_t k = 0; k < samples.size(); k += u(setup.micro_batch)) {
      mbs.emplace_back(samples.begin() + static_cast<std::ptrdiff_t>(k),
                       samples.begin() + static_cast<std::ptrdiff_t>(std::min(samples.size(), k + u(setup.micro_batch))));
    }
    const int p = setup.pp, parts = p * chunks_, nmb = static_cast<int>(mbs.size());
    models::PipelineShape shape(p, nmb, chunks_, schedule_->placement());
    // Each part's passes for each micro-batch: F, B (B and W together where the schedule does
    // not split them) and W; of each, the tensor-parallel all-reduces.
    struct Pass {
      double f = 0, b = 0, w = 0, tp_f = 0, tp_b = 0, act = 0, out = 0;
    };
    std::vector<Pass> pass(u(parts * nmb));
    const auto at = [&](int vs, int mb) -> Pass& { return pass[u(mb * parts + vs)]; };
    for (int mb = 0; mb < nmb; ++mb) {
      for (int vs = 0; vs < parts; ++vs) {
        Pass& x = at(vs, mb);
        for (const Unit& unit : partition_[u(vs)]) {
          const models::LayerSeconds ls = costs.layer(unit.module, mbs[u(mb)]);
          x.f += unit.layers * ls.f, x.b += unit.layers * ls.b, x.w += unit.layers * ls.w;
          x.tp_f += unit.layers * ls.tp_f, x.tp_b += unit.layers * ls.tp_b;
          const models::ModuleWork w = costs.work(unit.module, mbs[u(mb)]);
          x.act += unit.layers * models::activation_bytes_per_token(m.modules[u(unit.module)], setup.tp, setup.cp) * static_cast<double>(w.tokens);
          x.out = 2.0 * static_cast<double>(m.modules[u(unit.module)].shape.hidden) * static_cast<double>(w.out_tokens) / setup.tp /
                  cp_share(setup, m.modules[u(unit.module)]);
        }
      }
    }
    shape.costs = {0, 0, 0};
    for (const Pass& x : pass) shape.costs.f += x.f, shape.costs.b += x.b, shape.costs.w += x.w;
    const models::PipelinePlan plan = schedule_->plan(shape, setup.source, "/multimodal/micro_batch");
    // One node per op of the plan; its dependencies once every node is known.
    PipeProgram prog;
    prog.stages = p;
    prog.order.assign(u(p), {});
    std::map<std::tuple<int, int, int>, int> node;  // (kind 0 F / 1 B / 2 W, vs, mb) -> op
    for (int st = 0; st < p; ++st) {
      for (const models::PipeOp& op : plan[u(st)]) {
        const int vs = shape.virtual_stage(st, op.chunk), mb = op.micro_batch;
        const Pass& x = at(vs, mb);
        PipeNode n;
        n.stage = st;
        int kind = 0;
        // A braided or overlapped pair hides each one's TP all-reduces behind the other's compute.
        const auto hidden = [&](double tp, double partner) { return op.paired ? std::min(tp, std::max(0.0, partner)) : 0.0; };
        switch (op.kind) {
          case models::PipeOpKind::forward:
            n.seconds = x.f - hidden(x.tp_f, x.b - x.tp_b);
            n.activation_bytes = x.act;
            n.out_bytes = x.out;
            n.label = fmt::format("F s{} c{} mb{}", st, op.chunk, mb);
            break;
          case models::PipeOpKind::backward:
          case models::PipeOpKind::backward_input:
            kind = 1;
            n.backward = true;
            n.seconds = x.b + (op.kind == models::PipeOpKind::backward ? x.w : 0.0) - hidden(x.tp_b, x.f - x.tp_f);
            n.out_bytes = vs > 0 ? at(vs - 1, mb).out : 0;
            n.label = fmt::format("B s{} c{} mb{}", st, op.chunk, mb);
            break;
          case models::PipeOpKind::backward_weight:
            kind = 2;
            n.seconds = x.w;
            n.label = fmt::format("W s{} c{} mb{}", st, op.chunk, mb);
            break;
        }
        node[{kind, vs, mb}] = static_cast<int>(prog.ops.size());
        prog.order[u(st)].push_back(static_cast<int>(prog.ops.size()));
        prog.ops.push_back(std::move(n));
      }
    }
    for (const auto& [key, id] : node) {
      const auto& [kind, vs, mb] = key;
      PipeNode& n = prog.ops[u(id)];
      if (kind == 0 && vs > 0) n.deps.push_back(node.at({0, vs - 1, mb}));
      if (kind == 1) {
        n.deps.push_back(node.at({0, vs, mb}));
        if (vs + 1 < parts) n.deps.push_back(node.at({1, vs + 1, mb}));
        n.releases = node.at({0, vs, mb});
      }
      if (kind == 2) n.deps.push_back(node.at({1, vs, mb}));
    }
    MultimodalStep out;
    out.run = models::run_program(prog, setup.p2p);
    models::check_memory(out.run, caps_, name(), setup.source);
    out.step_s = out.run.makespan;
    out.bubble_fraction = out.run.bubble_fraction();
    out.stage_imbalance = out.run.stage_imbalance();
    out.program = std::move(prog);
    return out;
  }

 protected:
  // `partition`: stages x chunks parts in virtual-stage order.
  void set_partition(const MultimodalSetup& setup, Partition partition) {
    std::vector<double> params(u(setup.pp), 0.0);
    const models::PipelineShape shape(setup.pp, 1, chunks_, schedule_->placement());
    for (std::size_t vs = 0; vs < partition.size(); ++vs) {
      ORRERY_CHECK(!partition[vs].empty(), "empty pipeline part in a partition of {} parts", partition.size());
      params[u(shape.slot(static_cast<int>(vs), 0).stage)] += stage_param_count(*setup.model, partition[vs]);
    }
    caps_ = activation_caps(setup, params);
    partition_ = std::move(partition);
  }
  int chunks_;
  std::string schedule_name_;
  Partition partition_;
  std::vector<double> caps_;
  std::unique_ptr<models::PipelineSchedule> schedule_;
};

class Megatron final : public StaticPipeline {
 public:
  Megatron(int chunks, std::string schedule) : StaticPipeline(chunks, std::move(schedule)), name_(label()) {}
  std::string_view name() const override { return name_; }
  void prepare(const MultimodalSetup& setup, const std::vector<MultimodalSample>&, const ModuleCostCache&) override {
    const models::MultimodalModel& m = *setup.model;
    std::vector<int> all(m.modules.size());
    std::iota(all.begin(), all.end(), 0);
    std::vector<int> layers_of;
    std::vector<double> cost;
    flatten(m, all, std::vector<double>(m.modules.size(), 1.0), layers_of, cost);  // by count
    set_partition(setup, split(layers_of, cost, setup.pp * chunks_, setup.source));
  }

 private:
  std::string label() const {
    if (schedule_name_ == "1f1b") return "megatron-1f1b";
    if (schedule_name_ == "interleaved-1f1b") return "megatron-interleaved";
    return "megatron-" + schedule_name_;
  }
  std::string name_;
};

class ModalityStatic final : public StaticPipeline {
 public:
  ModalityStatic() : StaticPipeline(1) {}
  std::string_view name() const override { return "modality-static"; }
  void prepare(const MultimodalSetup& setup, const std::vector<MultimodalSample>& profile, const ModuleCostCache& costs) override {
    const models::MultimodalModel& m = *setup.model;
    const std::vector<double> c = profiled_layer_cost(m, profile, costs);
    const int sink = static_cast<int>(m.modules.size()) - 1;
    std::vector<int> enc(u(sink));
    std::iota(enc.begin(), enc.end(), 0);
    std::vector<int> enc_layers, sink_layers;
    std::vector<double> enc_cost, sink_cost;
    flatten(m, enc, c, enc_layers, enc_cost);
    flatten(m, {sink}, c, sink_layers, sink_cost);
    const double ca = std::accumulate(enc_cost.begin(), enc_cost.end(), 0.0), cb = std::accumulate(sink_cost.begin(), sink_cost.end(), 0.0);
    const int p = setup.pp;
    if (p == 1 || enc_layers.empty() || ca <= 0) {
      std::vector<int> all = enc_layers;
      all.insert(all.end(), sink_layers.begin(), sink_layers.end());
      std::vector<double> cost = enc_cost;
      cost.insert(cost.end(), sink_cost.begin(), sink_cost.end());
      set_partition(setup, split(all, cost, p, setup.source));
      return;
    }
    const int pa = std::clamp(static_cast<int>(std::lround(p * ca / (ca + cb))), 1, p - 1);
    Partition a = split(enc_layers, enc_cost, pa, setup.source), b = split(sink_layers, sink_cost, p - pa, setup.source);
    a.insert(a.end(), b.begin(), b.end());
    set_partition(setup, std::move(a));
  }
};

// ---------------------------------------------------------------------------------------
// PipeWeaver

class PipeWeaver final : public models::MultimodalPipelinePolicy {
 public:
  PipeWeaver(double efficiency, int extra_segments, bool online)
      : efficiency_(efficiency), extra_segments_(extra_segments), online_(online) {}
  std::string_view name() const override { return online_ ? "pipeweaver" : "pipeweaver (offline plan)"; }

  void prepare(const MultimodalSetup& setup, const std::vector<MultimodalSample>& profile, const ModuleCostCache& costs) override {
    const models::MultimodalModel& m = *setup.model;
    const int p = setup.pp;
    const int sink = static_cast<int>(m.modules.size()) - 1;
    const std::vector<double> c = profiled_layer_cost(m, profile, costs);
    modalities_.clear();
    // A modality: an encoder (or frozen text encoder) with its projector, or the backbone.
    for (int i = 0; i <= sink; ++i) {
      const models::ModuleSpec& s = m.modules[u(i)];
      if (s.kind == ModuleKind::projector) continue;
      Modality mod;
      mod.modules = {i};
      for (const models::ModuleEdge& e : m.edges) {
        if (e.from == i && m.modules[u(e.to)].kind == ModuleKind::projector) mod.modules.push_back(e.to);
      }
      mod.trainable = s.trainable;
      mod.sink = i == sink;
      for (const int x : mod.modules) mod.latency += m.modules[u(x)].pipeline_layers() * c[u(x)];
      modalities_.push_back(std::move(mod));
    }
    // Segments in proportion to latency (largest remainder), at least one each, and no more
    // chunks than layers.
    const int total = static_cast<int>(modalities_.size()) + extra_segments_;
    double lat = 0;
    for (const Modality& x : modalities_) lat += x.latency;
    std::vector<std::pair<double, std::size_t>> remainder;
    int given = 0;
    for (std::size_t i = 0; i < modalities_.size(); ++i) {
      Modality& x = modalities_[i];
      const double share = lat > 0 ? total * x.latency / lat : 1.0;
      x.segments = std::max(1, static_cast<int>(share));
      given += x.segments;
      remainder.emplace_back(-(share - std::floor(share)), i);
    }
    std::sort(remainder.begin(), remainder.end());
    for (std::size_t k = 0; given < total && k < remainder.size(); ++k, ++given) ++modalities_[remainder[k].second].segments;
    std::vector<double> stage_params(u(p), 0.0);
    for (Modality& x : modalities_) {
      std::vector<int> layers_of;
      std::vector<double> cost;
      flatten(m, x.modules, c, layers_of, cost);
      x.segments = std::max(1, std::min(x.segments, static_cast<int>(layers_of.size()) / p));
      const int chunks = std::min(static_cast<int>(layers_of.size()), x.segments * p);
      x.chunks = split(layers_of, cost, chunks, setup.source);
      for (int ch = 0; ch < chunks; ++ch) stage_params[u(ch % p)] += stage_param_count(m, x.chunks[u(ch)]);
      x.sub_batch = sub_batch_size(m, x, profile, costs);
    }
    caps_ = activation_caps(setup, stage_params);
    if (!online_) {
      // One plan for every batch: the search's choice on the profile's first data-parallel share.
      std::vector<MultimodalSample> share;
      for (std::size_t k = 0; k < profile.size(); k += u(setup.dp)) share.push_back(profile[k]);
      search(setup, share, costs, &fixed_);
    }
  }

  MultimodalStep rank_step(const MultimodalSetup& setup, const std::vector<MultimodalSample>& samples, const ModuleCostCache& costs) override {
    const auto t0 = std::chrono::steady_clock::now();
    MultimodalStep best;
    if (online_) {
      best = search(setup, samples, costs, nullptr);
    } else {
      // The plan chosen offline, on this batch's samples; its sub-micro-batches halve while
      // they do not fit this batch's activations.
      int max_sub = 1;
      for (const Modality& x : modalities_) max_sub = std::max(max_sub, x.sub_batch);
      for (int shrink = fixed_.shrink;; shrink *= 2) {
        PipeProgram prog = build(setup, samples, costs, fixed_.order, fixed_.style, shrink);
        best.run = models::schedule_program(prog, setup.p2p, caps_);
        best.step_s = best.run.makespan;
        best.program = std::move(prog);
        if (best.run.over_memory(caps_) < 0 || shrink >= max_sub) break;
      }
    }
    models::check_memory(best.run, caps_, name(), setup.source);
    best.bubble_fraction = best.run.bubble_fraction();
    best.stage_imbalance = best.run.stage_imbalance();
    best.search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return best;
  }

 private:
  // How ready forwards are ranked: by modality order, then sub-micro-batch; by progress
  // through the batch, then modality order; or by the longest path from the op to the end of
  // the step (list scheduling's bottom level), then modality order.
  enum class Style { modality_major, progress, critical_path };
  struct Choice {
    std::vector<int> order;
    Style style = Style::progress;
    int shrink = 1;
  };

  // Candidates: every ordering of the modalities, each in three priority styles, at the
  // offline sub-micro-batch sizes and at a half and a quarter of them (finer pieces pipeline
  // better, coarser ones run kernels more efficiently: the emulator decides). While no
  // candidate fits the activation memory, sizes keep halving down to one item.
  MultimodalStep search(const MultimodalSetup& setup, const std::vector<MultimodalSample>& samples, const ModuleCostCache& costs, Choice* chosen) const {
    MultimodalStep best;
    int max_sub = 1;
    for (const Modality& x : modalities_) max_sub = std::max(max_sub, x.sub_batch);
    for (int shrink = 1;; shrink *= 2) {
      std::vector<int> order(modalities_.size());
      std::iota(order.begin(), order.end(), 0);
      do {
        for (const Style style : {Style::modality_major, Style::progress, Style::critical_path}) {
          PipeProgram prog = build(setup, samples, costs, order, style, shrink);
          const models::PipeRun run = models::schedule_program(prog, setup.p2p, caps_);
          ++best.candidates;
          // Candidates within memory first; among them (or among all, when none fits), the fastest.
          const bool fits = run.over_memory(caps_) < 0;
          const bool best_fits = !best.program.ops.empty() && best.run.over_memory(caps_) < 0;
          if (best.program.ops.empty() || (fits && !best_fits) || (fits == best_fits && run.makespan < best.step_s - 1e-12)) {
            best.step_s = run.makespan;
            best.run = run;
            best.program = std::move(prog);
            if (chosen != nullptr) *chosen = {order, style, shrink};
          }
        }
      } while (std::next_permutation(order.begin(), order.end()));
      if (shrink >= max_sub) break;                               // every size is one item
      if (shrink >= 4 && best.run.over_memory(caps_) < 0) break;  // tried 1, 1/2, 1/4 and one fits
    }
    return best;
  }

  struct Modality {
    std::vector<int> modules;  // the main module, then its projector
    bool trainable = true, sink = false;
    double latency = 0;
    int segments = 1;
    Partition chunks;          // chunk c on stage c mod pp
    int sub_batch = 1;         // items (samples carrying the modality) per sub-micro-batch
  };

  // Does the sample feed this modality?
  static bool carries(const models::MultimodalModel& m, const Modality& x, const MultimodalSample& s) {
    switch (m.modules[u(x.modules[0])].kind) {
      case ModuleKind::vision_encoder: return !s.images.empty() || !s.videos.empty();
      case ModuleKind::audio_encoder: return !s.audio_seconds.empty();
      default: return true;
    }
  }

  // The smallest sub-micro-batch whose tokens per second on the modality's main module stay
  // within `efficiency_` of the best size's: sizes 1, 2, 4, ... 64 of the profile's median item
  // (by the module's tokens), so that only the batch size varies.
  int sub_batch_size(const models::MultimodalModel& m, const Modality& x, const std::vector<MultimodalSample>& profile,
                     const ModuleCostCache& costs) const {
    std::vector<std::pair<std::int64_t, std::size_t>> items;
    for (std::size_t k = 0; k < profile.size(); ++k) {
      if (carries(m, x, profile[k])) items.emplace_back(costs.work(x.modules[0], {profile[k]}).tokens, k);
    }
    if (items.empty()) return 1;
    std::sort(items.begin(), items.end());
    const MultimodalSample& median = profile[items[items.size() / 2].second];
    std::vector<std::pair<int, double>> rate;
    for (int b = 1; b <= 64; b *= 2) {
      const std::vector<MultimodalSample> same(static_cast<std::size_t>(b), median);
      const double t = costs.layer(x.modules[0], same).total();
      rate.emplace_back(b, t > 0 ? static_cast<double>(costs.work(x.modules[0], same).tokens) / t : 0.0);
    }
    double peak = 0;
    for (const auto& [b, r] : rate) peak = std::max(peak, r);
    for (const auto& [b, r] : rate) {
      if (r >= efficiency_ * peak) return b;
    }
    return rate.back().first;
  }

  PipeProgram build(const MultimodalSetup& setup, const std::vector<MultimodalSample>& samples, const ModuleCostCache& costs,
                    const std::vector<int>& rank, Style style, int shrink) const {
    const models::MultimodalModel& m = *setup.model;
    const int p = setup.pp;
    PipeProgram prog;
    prog.stages = p;
    struct Sub {
      std::vector<int> samples;  // indices into `samples`
      std::vector<MultimodalSample> content;
    };
    std::vector<std::vector<Sub>> subs(modalities_.size());
    std::vector<std::vector<std::vector<int>>> fwd(modalities_.size()), bwd(modalities_.size());  // [modality][chunk][sub] -> op
    std::size_t sink = 0;
    for (std::size_t i = 0; i < modalities_.size(); ++i) {
      const Modality& x = modalities_[i];
      if (x.sink) sink = i;
      for (std::size_t k = 0; k < samples.size(); ++k) {
        if (!carries(m, x, samples[k])) continue;
        if (subs[i].empty() || static_cast<int>(subs[i].back().samples.size()) == std::max(1, x.sub_batch / shrink)) subs[i].emplace_back();
        subs[i].back().samples.push_back(static_cast<int>(k));
        subs[i].back().content.push_back(samples[k]);
      }
    }
    const auto position = [&](std::size_t i) { return static_cast<double>(std::find(rank.begin(), rank.end(), static_cast<int>(i)) - rank.begin()); };
    for (std::size_t i = 0; i < modalities_.size(); ++i) {
      const Modality& x = modalities_[i];
      const auto nsub = subs[i].size();
      const auto nchunk = x.chunks.size();
      fwd[i].assign(nchunk, std::vector<int>(nsub, -1));
      bwd[i].assign(nchunk, std::vector<int>(nsub, -1));
      for (std::size_t j = 0; j < nsub; ++j) {
        for (std::size_t c = 0; c < nchunk; ++c) {
          PipeNode f, b;
          f.stage = b.stage = static_cast<int>(c % u(p));
          b.backward = true;
          for (const Unit& unit : x.chunks[c]) {
            const models::LayerSeconds ls = costs.layer(unit.module, subs[i][j].content);
            const models::ModuleWork w = costs.work(unit.module, subs[i][j].content);
            f.seconds += unit.layers * ls.f;
            b.seconds += unit.layers * (ls.b + ls.w);
            f.activation_bytes += unit.layers * models::activation_bytes_per_token(m.modules[u(unit.module)], setup.tp, setup.cp) * static_cast<double>(w.tokens);
            f.out_bytes = 2.0 * static_cast<double>(m.modules[u(unit.module)].shape.hidden) * static_cast<double>(w.out_tokens) / setup.tp /
                          cp_share(setup, m.modules[u(unit.module)]);
          }
          // Priority among ready forwards: by modality rank then sub-micro-batch (modality-major),
          // or by progress through the batch then modality rank.
          const double progress = static_cast<double>(j) / static_cast<double>(nsub);
          f.priority = style == Style::modality_major ? position(i) * 1e6 + static_cast<double>(j) * 1e3 + static_cast<double>(c)
                                                      : progress * 1e6 + position(i) * 1e3 + static_cast<double>(c);
          f.label = fmt::format("F {} c{} sub{}", m.modules[u(x.modules[0])].name, c, j);
          fwd[i][c][j] = static_cast<int>(prog.ops.size());
          if (c > 0) f.deps.push_back(fwd[i][c - 1][j]);
          prog.ops.push_back(std::move(f));
          if (x.trainable) {
            b.label = fmt::format("B {} c{} sub{}", m.modules[u(x.modules[0])].name, c, j);
            b.releases = fwd[i][c][j];
            bwd[i][c][j] = static_cast<int>(prog.ops.size());
            prog.ops.push_back(std::move(b));
          }
        }
      }
    }
    // Dependencies: chunk order inside a modality, and between the encoders and the backbone
    // through the samples they share.
    const auto shares = [](const Sub& a, const Sub& b) {
      return std::any_of(a.samples.begin(), a.samples.end(), [&](int s) { return std::find(b.samples.begin(), b.samples.end(), s) != b.samples.end(); });
    };
    for (std::size_t i = 0; i < modalities_.size(); ++i) {
      const Modality& x = modalities_[i];
      const std::size_t last = x.chunks.size() - 1;
      for (std::size_t j = 0; j < subs[i].size(); ++j) {
        for (std::size_t c = 0; c <= last && x.trainable; ++c) {
          PipeNode& b = prog.ops[u(bwd[i][c][j])];
          b.deps.push_back(fwd[i][c][j]);
          if (c < last) b.deps.push_back(bwd[i][c + 1][j]);
          b.out_bytes = c > 0 ? prog.ops[u(fwd[i][c - 1][j])].out_bytes : 0;
        }
        if (i == sink) continue;
        for (std::size_t k = 0; k < subs[sink].size(); ++k) {
          if (!shares(subs[i][j], subs[sink][k])) continue;
          prog.ops[u(fwd[sink][0][k])].deps.push_back(fwd[i][last][j]);
          if (x.trainable && modalities_[sink].trainable) prog.ops[u(bwd[i][last][j])].deps.push_back(bwd[sink][0][k]);
        }
      }
    }
    if (style == Style::critical_path) {
      // Bottom levels by a reverse topological pass (Kahn's order over the dependencies).
      const std::size_t n = prog.ops.size();
      std::vector<std::vector<int>> dependants(n);
      std::vector<int> missing(n, 0), topo;
      for (std::size_t o = 0; o < n; ++o) {
        missing[o] = static_cast<int>(prog.ops[o].deps.size());
        for (const int d : prog.ops[o].deps) dependants[u(d)].push_back(static_cast<int>(o));
      }
      for (std::size_t o = 0; o < n; ++o) {
        if (missing[o] == 0) topo.push_back(static_cast<int>(o));
      }
      for (std::size_t k = 0; k < topo.size(); ++k) {
        for (const int d : dependants[u(topo[k])]) {
          if (--missing[u(d)] == 0) topo.push_back(d);
        }
      }
      std::vector<double> level(n, 0.0);
      for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
        double below = 0;
        for (const int d : dependants[u(*it)]) below = std::max(below, level[u(d)]);
        level[u(*it)] = prog.ops[u(*it)].seconds + below;
      }
      for (std::size_t o = 0; o < n; ++o) {
        if (!prog.ops[o].backward) prog.ops[o].priority = -level[o] + prog.ops[o].priority * 1e-12;
      }
    }
    return prog;
  }

  double efficiency_;
  int extra_segments_;
  bool online_;
  Choice fixed_;
  std::vector<Modality> modalities_;
  std::vector<double> caps_;
};

class DenseAttention final : public models::DitAttentionPolicy {
 public:
  std::string_view name() const override { return "dense"; }
  models::DitAttention configure(const models::DitAttention& scenario, const models::ModuleSpec&, const std::string&) const override {
    models::DitAttention a = scenario;
    a.head_sparsity.clear();
    return a;
  }
};

class Dsv final : public models::DitAttentionPolicy {
 public:
  Dsv(double sparsity, double spread, int rank) : sparsity_(sparsity), spread_(spread), rank_(rank) {}
  std::string_view name() const override { return "dsv"; }
  models::DitAttention configure(const models::DitAttention& scenario, const models::ModuleSpec& dit, const std::string& source) const override {
    models::DitAttention a = scenario;
    if (sparsity_ >= 0) a.head_sparsity = models::spread_sparsity(dit.shape.heads, sparsity_, spread_, "<policy>", "dsv/sparsity");
    if (!a.sparse()) {
      throw sim::InputError(source, "/multimodal/attention",
                            "dsv: found no head sparsities, expected the scenario's attention/head_sparsity (or sparsity) or the policy's dsv:sparsity=...");
    }
    if (rank_ >= 0) a.estimator_rank = rank_;
    a.validate(dit.shape.heads, dit.shape.head_dim, "<policy>", "dsv");
    return a;
  }

 private:
  double sparsity_, spread_;
  int rank_;
};

}  // namespace

const sim::Registry<models::DitAttentionPolicy>& dit_attentions() {
  static const sim::Registry<models::DitAttentionPolicy> registry = [] {
    sim::Registry<models::DitAttentionPolicy> r("video attention policy");
    r.add({"dense", "full attention; context parallelism per the scenario (hybrid: the cheaper of head-parallel and ring per layer)", {},
           [](const sim::Params&) { return std::make_unique<DenseAttention>(); }});
    r.add({"dsv", "DSV: per-head block-sparse attention with a low-rank estimator, sparsity-aware hybrid context parallelism",
           {{"sparsity", sim::ParamType::number, -1.0, "mean fraction of key blocks a head skips, in [0, 1) (-1: the scenario's head sparsities)"},
            {"spread", sim::ParamType::number, 0.05, "with sparsity: the heads' sparsities spread evenly over sparsity +- spread"},
            {"rank", sim::ParamType::integer, std::int64_t{-1}, "the estimator's rank (-1: the scenario's, else 16; 0: no estimator)"}},
           [](const sim::Params& p) {
             const double s = p.get_number("sparsity"), spread = p.get_number("spread");
             if (s != -1 && !(s >= 0 && s < 1)) {
               throw sim::InputError("<policy>", "dsv/sparsity", fmt::format("found {}, expected a sparsity in [0, 1) (or -1)", s));
             }
             if (!(spread >= 0 && spread < 1)) throw sim::InputError("<policy>", "dsv/spread", fmt::format("found {}, expected a spread in [0, 1)", spread));
             const std::int64_t k = p.get_int("rank");
             if (k < -1 || k > 1024) throw sim::InputError("<policy>", "dsv/rank", fmt::format("found {}, expected -1 (the scenario's) or 0 to 1024", k));
             return std::make_unique<Dsv>(s, spread, static_cast<int>(k));
           }});
    return r;
  }();
  return registry;
}

const sim::Registry<models::MultimodalPipelinePolicy>& multimodal_pipelines() {
  static const sim::Registry<models::MultimodalPipelinePolicy> registry = [] {
    sim::Registry<models::MultimodalPipelinePolicy> r("multimodal pipeline policy");
    r.add({"megatron-1f1b", "Megatron-LM: layers split evenly by count over the stages (encoders included), fixed micro-batches, 1F1B",
           {{"chunks", sim::ParamType::integer, std::int64_t{1}, "model chunks per stage (> 1: interleaved 1F1B; micro-batches a multiple of pp)"},
            {"schedule", sim::ParamType::string, std::string(),
             "the pipeline schedule (empty: 1f1b, or interleaved-1f1b with chunks > 1); gpipe, 1f1b, zb-h1, zb-h2 on one chunk, interleaved-1f1b, "
             "zb-v and stp (two chunks, in a V; STP braids forward and backward units so TP all-reduces hide)"}},
           [](const sim::Params& p) {
             std::int64_t v = p.get_int("chunks");
             if (v < 1 || v > 16) throw sim::InputError("<policy>", "megatron-1f1b/chunks", fmt::format("found {}, expected 1 to 16", v));
             const std::string schedule = p.get_string("schedule");
             if (!schedule.empty() && !pipeline_schedules().contains(schedule)) {
               (void)pipeline_schedules().create(schedule, {}, {"<policy>", "megatron-1f1b/schedule"});  // names the valid ones
             }
             if (schedule == "dualpipe") {
               throw sim::InputError("<policy>", "megatron-1f1b/schedule", "found \"dualpipe\": its two directions need the LLM step emulator; "
                                                                           "expected gpipe, 1f1b, zb-h1, zb-h2, interleaved-1f1b, zb-v or stp");
             }
             if (!schedule.empty() && v == 1 && !pipeline_schedules().create(schedule, {}, {"<policy>", "megatron-1f1b/schedule"})->runs_chunks(1)) {
               v = 2;  // a schedule of several chunks (a V for zb-v and stp): two
             }
             return std::make_unique<Megatron>(static_cast<int>(v), schedule);
           }});
    r.add({"modality-static", "Optimus/nnScaler: encoders on their own stages, stages shared by profiled compute, 1F1B", {},
           [](const sim::Params&) { return std::make_unique<ModalityStatic>(); }});
    r.add({"pipeweaver", "PipeWeaver: modality-aware chunks and sub-micro-batches, a per-batch schedule search on the pipeline emulator",
           {{"efficiency", sim::ParamType::number, 0.95, "the fraction of peak kernel efficiency a sub-micro-batch keeps"},
            {"extra_segments", sim::ParamType::integer, std::int64_t{1}, "segments beyond one per modality, shared by latency"},
            {"online", sim::ParamType::boolean, true, "search per batch (false: plan once on the profiling batch and reuse the plan)"}},
           [](const sim::Params& p) {
             const double e = p.get_number("efficiency");
             if (!(e > 0 && e <= 1)) throw sim::InputError("<policy>", "pipeweaver/efficiency", fmt::format("found {}, expected (0, 1]", e));
             const std::int64_t k = p.get_int("extra_segments");
             if (k < 0 || k > 16) throw sim::InputError("<policy>", "pipeweaver/extra_segments", fmt::format("found {}, expected 0 to 16", k));
             return std::make_unique<PipeWeaver>(e, static_cast<int>(k), p.get_bool("online"));
           }});
    add_compound_pipelines(r);  // megascale-omni, maestro (policies/compound.hpp)
    return r;
  }();
  return registry;
}

}  // namespace orrery::policies
