#include "models/multimodal/multimodal_pipeline.hpp"

#include "sim/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>

namespace orrery::models {

double PipeRun::bubble_fraction() const {
  if (busy.empty() || makespan <= 0) return 0;
  double idle = 0;
  for (const double b : busy) idle += 1 - b / makespan;
  return idle / static_cast<double>(busy.size());
}

double PipeRun::stage_imbalance() const {
  if (busy.empty()) return 1;
  const double mean = std::accumulate(busy.begin(), busy.end(), 0.0) / static_cast<double>(busy.size());
  return mean > 0 ? *std::max_element(busy.begin(), busy.end()) / mean : 1;
}

int PipeRun::over_memory(const std::vector<double>& caps) const {
  for (std::size_t s = 0; s < caps.size() && s < peak_memory.size(); ++s) {
    if (caps[s] > 0 && peak_memory[s] > caps[s] * (1 + 1e-12)) return static_cast<int>(s);
  }
  return -1;
}

void check_memory(const PipeRun& run, const std::vector<double>& caps, std::string_view policy, const std::string& source) {
  const int s = run.over_memory(caps);
  if (s < 0) return;
  throw sim::InputError(source, "/multimodal",
                        fmt::format("{}: a partition that cannot fit memory: stage {} needs {:.1f} GB of activations at its peak, more than the "
                                    "{:.1f} GB left after weights and optimizer state (lower micro_batch, or raise pp or tp)",
                                    policy, s, run.peak_memory[static_cast<std::size_t>(s)] / 1e9, caps[static_cast<std::size_t>(s)] / 1e9));
}

namespace {

// When an op's inputs are on its stage: its dependencies' ends, plus their transfers when they
// ran elsewhere.
double ready_time(const PipeProgram& p, const std::vector<double>& end, int op, double p2p) {
  double t = 0;
  for (const int d : p.ops[static_cast<std::size_t>(op)].deps) {
    const PipeNode& dep = p.ops[static_cast<std::size_t>(d)];
    double arrive = end[static_cast<std::size_t>(d)];
    if (dep.stage != p.ops[static_cast<std::size_t>(op)].stage && p2p > 0) arrive += dep.out_bytes / p2p;
    t = std::max(t, arrive);
  }
  return t;
}

void account(const PipeProgram& p, PipeRun& run, std::vector<double>& memory, int op, double start, double end) {
  const PipeNode& n = p.ops[static_cast<std::size_t>(op)];
  const auto s = static_cast<std::size_t>(n.stage);
  run.busy[s] += end - start;
  run.makespan = std::max(run.makespan, end);
  run.spans[static_cast<std::size_t>(op)] = {op, start, end};
  if (!n.backward) {
    memory[s] += n.activation_bytes;
    run.peak_memory[s] = std::max(run.peak_memory[s], memory[s]);
  } else if (n.releases >= 0) {
    memory[s] -= p.ops[static_cast<std::size_t>(n.releases)].activation_bytes;
  }
}

PipeRun empty_run(const PipeProgram& p) {
  PipeRun run;
  run.busy.assign(static_cast<std::size_t>(p.stages), 0.0);
  run.peak_memory.assign(static_cast<std::size_t>(p.stages), 0.0);
  run.spans.resize(p.ops.size());
  return run;
}

}  // namespace

PipeRun run_program(const PipeProgram& p, double p2p) {
  PipeRun run = empty_run(p);
  const std::size_t n = p.ops.size();
  std::vector<double> end(n, -1.0), free(static_cast<std::size_t>(p.stages), 0.0), memory(static_cast<std::size_t>(p.stages), 0.0);
  std::vector<std::size_t> next(static_cast<std::size_t>(p.stages), 0);
  std::size_t done = 0;
  while (done < n) {
    bool progressed = false;
    for (int s = 0; s < p.stages; ++s) {
      const auto& order = p.order[static_cast<std::size_t>(s)];
      auto& k = next[static_cast<std::size_t>(s)];
      while (k < order.size()) {
        const int op = order[k];
        const auto& deps = p.ops[static_cast<std::size_t>(op)].deps;
        if (std::any_of(deps.begin(), deps.end(), [&](int d) { return end[static_cast<std::size_t>(d)] < 0; })) break;
        const double start = std::max(free[static_cast<std::size_t>(s)], ready_time(p, end, op, p2p));
        end[static_cast<std::size_t>(op)] = start + p.ops[static_cast<std::size_t>(op)].seconds;
        free[static_cast<std::size_t>(s)] = end[static_cast<std::size_t>(op)];
        account(p, run, memory, op, start, end[static_cast<std::size_t>(op)]);
        ++k;
        ++done;
        progressed = true;
      }
    }
    ORRERY_CHECK(progressed, "pipeline program deadlocks: {} of {} ops ran", done, n);
  }
  return run;
}

PipeRun schedule_program(PipeProgram& p, double p2p, const std::vector<double>& cap) {
  PipeRun run = empty_run(p);
  const std::size_t n = p.ops.size();
  const auto stages = static_cast<std::size_t>(p.stages);
  std::vector<double> end(n, -1.0), free(stages, 0.0), memory(stages, 0.0);
  std::vector<int> missing(n, 0);
  std::vector<std::vector<int>> dependants(n);
  for (std::size_t i = 0; i < n; ++i) {
    missing[i] = static_cast<int>(p.ops[i].deps.size());
    for (const int d : p.ops[i].deps) dependants[static_cast<std::size_t>(d)].push_back(static_cast<int>(i));
  }
  // Ops whose dependencies are all done, per stage, with the time their inputs arrive.
  std::vector<std::vector<std::pair<int, double>>> ready(stages);
  for (std::size_t i = 0; i < n; ++i) {
    if (missing[i] == 0) ready[static_cast<std::size_t>(p.ops[i].stage)].emplace_back(static_cast<int>(i), 0.0);
  }
  p.order.assign(stages, {});
  const auto fits = [&](std::size_t s, int op) {
    const PipeNode& o = p.ops[static_cast<std::size_t>(op)];
    return o.backward || cap.empty() || cap[s] <= 0 || memory[s] + o.activation_bytes <= cap[s] || memory[s] == 0;
  };
  // Among the stage's ready ops that have arrived by `t` and fit: a backward, else the forward of
  // lowest priority; ties by op index.
  const auto choose = [&](std::size_t s, double t) {
    int best = -1;
    for (const auto& [op, at] : ready[s]) {
      if (at > t || !fits(s, op)) continue;
      const PipeNode& o = p.ops[static_cast<std::size_t>(op)];
      if (best < 0) {
        best = op;
        continue;
      }
      const PipeNode& b = p.ops[static_cast<std::size_t>(best)];
      if (o.backward != b.backward ? o.backward : (o.priority != b.priority ? o.priority < b.priority : op < best)) best = op;
    }
    return best;
  };
  for (std::size_t done = 0; done < n; ++done) {
    // The stage that can start something soonest: at max(free, the earliest arrival that fits).
    std::size_t stage = stages;
    double start = std::numeric_limits<double>::infinity();
    for (std::size_t s = 0; s < stages; ++s) {
      double earliest = std::numeric_limits<double>::infinity();
      for (const auto& [op, at] : ready[s]) {
        if (fits(s, op)) earliest = std::min(earliest, at);
      }
      const double t = std::max(free[s], earliest);
      if (t < start) start = t, stage = s;
    }
    int op = -1;
    if (stage < stages) {
      op = choose(stage, start);
    } else {
      // Every ready op is a forward that does not fit, and no backward can free memory until
      // one of them runs: run the highest-priority one anyway. The run's peak memory then
      // exceeds the cap, which the caller sees.
      for (std::size_t s = 0; s < stages; ++s) {
        for (const auto& [o, at] : ready[s]) {
          const PipeNode& x = p.ops[static_cast<std::size_t>(o)];
          if (op < 0 || x.priority < p.ops[static_cast<std::size_t>(op)].priority) op = o, stage = s, start = std::max(free[s], at);
        }
      }
      ORRERY_CHECK(op >= 0, "pipeline schedule stalls: {} of {} ops ran with none ready (a dependency cycle)", done, n);
    }
    auto& r = ready[stage];
    r.erase(std::find_if(r.begin(), r.end(), [&](const auto& e) { return e.first == op; }));
    const auto u = static_cast<std::size_t>(op);
    end[u] = start + p.ops[u].seconds;
    free[stage] = end[u];
    p.order[stage].push_back(op);
    account(p, run, memory, op, start, end[u]);
    for (const int d : dependants[u]) {
      if (--missing[static_cast<std::size_t>(d)] == 0) {
        ready[static_cast<std::size_t>(p.ops[static_cast<std::size_t>(d)].stage)].emplace_back(d, ready_time(p, end, d, p2p));
      }
    }
  }
  return run;
}

LayerSeconds ModuleCostCache::layer(int module, const std::vector<MultimodalSample>& samples) const {
  const ModuleWork w = work(module, samples);
  const ModuleSpec& spec = model_.modules[static_cast<std::size_t>(module)];
  if (!reuse_) {
    ++misses_;
    return module_layer_seconds(spec, w, cost_, tp_, nvlink_, attention_);
  }
  // Projectors see no documents: their key is their token counts.
  auto key = std::make_pair(module, w.docs.empty() ? std::vector<std::int64_t>{w.tokens, w.out_tokens} : w.docs);
  if (const auto it = cache_.find(key); it != cache_.end()) {
    ++hits_;
    return it->second;
  }
  ++misses_;
  const LayerSeconds s = module_layer_seconds(spec, w, cost_, tp_, nvlink_, attention_);
  cache_.emplace(std::move(key), s);
  return s;
}

double activation_bytes_per_token(const ModuleSpec& module, int tp, int cp) {
  if (!module.trainable) return 0;
  const int split = module.kind == ModuleKind::video_dit ? std::max(1, cp) : 1;
  return 34.0 * static_cast<double>(module.shape.hidden) / std::max(1, tp) / split;
}

MultimodalStep MultimodalPipelinePolicy::step(const MultimodalSetup& setup, const std::vector<MultimodalSample>& batch, const ModuleCostCache& costs) {
  return deal_round_robin(*this, setup, batch, costs);
}

MultimodalStep multimodal_step(MultimodalPipelinePolicy& policy, const MultimodalSetup& setup, const std::vector<MultimodalSample>& batch,
                               const ModuleCostCache& costs) {
  return policy.step(setup, batch, costs);
}

MultimodalStep deal_round_robin(MultimodalPipelinePolicy& policy, const MultimodalSetup& setup, const std::vector<MultimodalSample>& batch,
                                const ModuleCostCache& costs) {
  MultimodalStep slowest;
  std::size_t candidates = 0;
  double search = 0;
  for (int r = 0; r < setup.dp; ++r) {
    std::vector<MultimodalSample> mine;
    for (std::size_t k = static_cast<std::size_t>(r); k < batch.size(); k += static_cast<std::size_t>(setup.dp)) mine.push_back(batch[k]);
    if (mine.empty()) continue;
    MultimodalStep s = policy.rank_step(setup, mine, costs);
    candidates += s.candidates;
    search += s.search_s;
    if (s.step_s > slowest.step_s) slowest = std::move(s);
  }
  slowest.candidates = candidates;
  slowest.search_s = search;
  return slowest;
}

MultimodalSetup multimodal_setup(const MultimodalModel& model, const CostModel& cost, const GpuSpec& gpu, int tp, int pp, int dp, int micro_batch,
                                 double p2p) {
  MultimodalSetup s;
  s.model = &model;
  s.cost = &cost;
  s.tp = tp;
  s.pp = pp;
  s.dp = dp;
  s.micro_batch = micro_batch;
  s.nvlink = gpu.nvlink_bandwidth;
  s.p2p = p2p;
  s.hbm_bytes = gpu.hbm_bytes;
  return s;
}

double state_bytes_per_param(int tp, int dp) { return (2.0 + 4.0 + 12.0 / std::max(1, dp)) / std::max(1, tp); }

std::string_view to_string(ActionKind k) {
  switch (k) {
    case ActionKind::compute: return "compute";
    case ActionKind::send: return "send";
    case ActionKind::recv: return "recv";
    case ActionKind::sync: return "sync";
  }
  return "?";
}

ActionLists action_lists(const PipeProgram& p) {
  std::vector<std::vector<int>> dependants(p.ops.size());
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    for (const int d : p.ops[i].deps) dependants[static_cast<std::size_t>(d)].push_back(static_cast<int>(i));
  }
  ActionLists out(static_cast<std::size_t>(p.stages));
  for (int s = 0; s < p.stages; ++s) {
    auto& list = out[static_cast<std::size_t>(s)];
    for (const int op : p.order[static_cast<std::size_t>(s)]) {
      const PipeNode& n = p.ops[static_cast<std::size_t>(op)];
      for (const int d : n.deps) {
        const PipeNode& dep = p.ops[static_cast<std::size_t>(d)];
        if (dep.stage != s) list.push_back({ActionKind::recv, d, dep.stage, dep.out_bytes});
      }
      list.push_back({ActionKind::compute, op, -1, 0});
      // One send per destination stage (a stage that needs the output twice gets it once).
      std::vector<int> to;
      for (const int d : dependants[static_cast<std::size_t>(op)]) {
        const int stage = p.ops[static_cast<std::size_t>(d)].stage;
        if (stage != s && std::find(to.begin(), to.end(), stage) == to.end()) to.push_back(stage);
      }
      for (const int stage : to) list.push_back({ActionKind::send, op, stage, n.out_bytes});
    }
    list.push_back({ActionKind::sync, -1, -1, 0});
  }
  return out;
}

PipeRun run_actions(const PipeProgram& p, const ActionLists& actions, double p2p) {
  PipeRun run = empty_run(p);
  const auto stages = static_cast<std::size_t>(p.stages);
  std::vector<double> clock(stages, 0.0), memory(stages, 0.0);
  std::vector<std::size_t> next(stages, 0);
  std::map<std::pair<int, int>, double> arrived;  // (op, destination stage) -> when its output is there
  std::size_t left = 0, synced = 0;
  for (const auto& l : actions) left += l.size();
  while (left > 0) {
    bool progressed = false;
    for (std::size_t s = 0; s < stages; ++s) {
      while (next[s] < actions[s].size()) {
        const Action& a = actions[s][next[s]];
        if (a.kind == ActionKind::recv) {
          const auto it = arrived.find({a.op, static_cast<int>(s)});
          if (it == arrived.end()) break;  // its send has not run yet
          clock[s] = std::max(clock[s], it->second);
        } else if (a.kind == ActionKind::compute) {
          const double start = clock[s];
          clock[s] += p.ops[static_cast<std::size_t>(a.op)].seconds;
          account(p, run, memory, a.op, start, clock[s]);
        } else if (a.kind == ActionKind::send) {
          arrived[{a.op, a.peer}] = clock[s] + (p2p > 0 ? a.bytes / p2p : 0.0);
        } else {
          ++synced;  // the barrier: the step ends when every stage is here
        }
        ++next[s];
        --left;
        progressed = true;
      }
    }
    ORRERY_CHECK(progressed, "action lists deadlock: {} actions left", left);
  }
  ORRERY_CHECK(synced == stages, "action lists: {} syncs for {} stages", synced, stages);
  return run;
}

std::string action_lists_json(const PipeProgram& p, const ActionLists& actions) {
  std::string out = "{\"stages\": [";
  for (std::size_t s = 0; s < actions.size(); ++s) {
    out += s > 0 ? ",\n  [" : "\n  [";
    for (std::size_t k = 0; k < actions[s].size(); ++k) {
      const Action& a = actions[s][k];
      out += fmt::format("{}{{\"action\": \"{}\"", k > 0 ? ", " : "", to_string(a.kind));
      if (a.op >= 0) out += fmt::format(", \"op\": \"{}\"", p.ops[static_cast<std::size_t>(a.op)].label);
      if (a.kind == ActionKind::send) out += fmt::format(", \"to\": {}, \"bytes\": {:.0f}", a.peer, a.bytes);
      if (a.kind == ActionKind::recv) out += fmt::format(", \"from\": {}, \"bytes\": {:.0f}", a.peer, a.bytes);
      out += "}";
    }
    out += "]";
  }
  out += "\n]}\n";
  return out;
}

}  // namespace orrery::models
