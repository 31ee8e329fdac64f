#include "policies/multiplex.hpp"

#include "sim/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <limits>
#include <optional>

namespace orrery::policies {

namespace {

using models::ColocationProblem;
using models::ColocPiece;
using models::ColocPlacement;

double memory_need(const ColocationProblem& p, int module) { return p.modules[static_cast<std::size_t>(module)].memory_bytes / p.gpu.hbm_capacity; }

void check_fits(const ColocationProblem& p) {
  for (int i = 0; i < static_cast<int>(p.modules.size()); ++i) {
    if (memory_need(p, i) > 1) {
      throw sim::InputError(p.source, "/colocation/model",
                            fmt::format("module \"{}\" holds {:.1f} GiB, more than one GPU's {:.1f} GiB; expected modules that each fit a GPU",
                                        p.modules[static_cast<std::size_t>(i)].name, p.modules[static_cast<std::size_t>(i)].memory_bytes / 1073741824.0,
                                        p.gpu.hbm_capacity / 1073741824.0));
    }
  }
}

class OnePerGpu final : public models::ColocationPolicy {
 public:
  ColocPlacement place(const ColocationProblem& p) const override {
    check_fits(p);
    const auto n = static_cast<int>(p.modules.size());
    if (p.gpus < n) {
      throw sim::InputError(p.source, "/colocation/gpus", fmt::format("found {} GPUs for {} modules; one-per-gpu needs a GPU per module", p.gpus, n));
    }
    std::vector<int> count(static_cast<std::size_t>(n), 1);
    for (int g = n; g < p.gpus; ++g) {
      int slowest = 0;
      for (int i = 1; i < n; ++i) {
        const auto rate = [&](int k) { return count[static_cast<std::size_t>(k)] / p.modules[static_cast<std::size_t>(k)].step_s; };
        if (rate(i) < rate(slowest)) slowest = i;
      }
      ++count[static_cast<std::size_t>(slowest)];
    }
    ColocPlacement out;
    int gpu = 0;
    for (int i = 0; i < n; ++i) {
      for (int c = 0; c < count[static_cast<std::size_t>(i)]; ++c) out.pieces.push_back({i, gpu++, 1.0, memory_need(p, i)});
    }
    return out;
  }
};

// Every GPU holds every module and runs them in turn (data-parallel replicas of the whole model,
// each GPU one module at a time): what Mosaic's abstract calls temporal multiplexing.
class Temporal final : public models::ColocationPolicy {
 public:
  ColocPlacement place(const ColocationProblem& p) const override {
    check_fits(p);
    double need = 0;
    for (int i = 0; i < static_cast<int>(p.modules.size()); ++i) need += memory_need(p, i);
    if (need > 1 + 1e-9) {
      throw sim::InputError(p.source, "/colocation/model",
                            fmt::format("the modules hold {:.0f}% of a GPU's memory together; temporal needs them all on every GPU (one-per-gpu or "
                                        "mosaic place them apart)", 100 * need));
    }
    ColocPlacement out;
    for (int g = 0; g < p.gpus; ++g) {
      for (int i = 0; i < static_cast<int>(p.modules.size()); ++i) out.pieces.push_back({i, g, 1.0, memory_need(p, i), i});
    }
    return out;
  }
};

class Mosaic final : public models::ColocationPolicy {
 public:
  Mosaic(double quota_step, int max_per_gpu) : step_(quota_step), max_per_gpu_(max_per_gpu) {}

  ColocPlacement place(const ColocationProblem& p) const override {
    check_fits(p);
    // The rate's upper bound: every module alone on all the GPUs.
    double hi = 0;
    for (const auto& m : p.modules) hi = hi == 0 ? p.gpus / m.step_s : std::min(hi, p.gpus / m.step_s);
    double lo = 0;
    ColocPlacement best;
    for (int it = 0; it < 60; ++it) {
      const double mid = (lo + hi) / 2;
      if (auto placed = pack(p, mid)) {
        lo = mid;
        best = std::move(*placed);
      } else {
        hi = mid;
      }
    }
    if (!best.pieces.empty()) grow(p, best);
    // The other shapes of plan, each GPU a replica of the whole model: every module at once under
    // quotas that meet their rates, and temporal-spatial phases (modules in turn, the phases that
    // gain by it merged to run at once). The best under the performance model wins; the
    // baselines' own plans are candidates too, so mosaic never plans worse than they do.
    std::vector<ColocPlacement> candidates;
    if (auto r = replicate(p)) candidates.push_back(std::move(*r));
    if (auto r = phased(p)) candidates.push_back(std::move(*r));
    if (p.gpus >= static_cast<int>(p.modules.size())) candidates.push_back(OnePerGpu().place(p));
    for (ColocPlacement& c : candidates) {
      if (best.pieces.empty() || models::evaluate_colocation(p, c).microbatches_per_s > models::evaluate_colocation(p, best).microbatches_per_s) {
        best = std::move(c);
      }
    }
    if (best.pieces.empty()) {
      throw sim::InputError(p.source, "/colocation/gpus", fmt::format("mosaic found no placement of {} modules on {} GPUs (memory quotas)", p.modules.size(), p.gpus));
    }
    return best;
  }

 private:
  // The smallest quota on the grid at which module `m` alone reaches `rate`; 0 if none does.
  double quota_for(const ColocationProblem& p, int m, double rate) const {
    const auto steps = static_cast<int>(std::ceil(1 / step_ - 1e-9));
    for (int k = 1; k <= steps; ++k) {
      const double q = std::min(1.0, k * step_);
      if (1 / models::quota_time(p.modules[static_cast<std::size_t>(m)], p.gpu, q) >= rate) return q;
    }
    return 0;
  }

  std::optional<ColocPlacement> replicate(const ColocationProblem& p) const {
    const auto n = static_cast<int>(p.modules.size());
    double need = 0;
    for (int i = 0; i < n; ++i) need += memory_need(p, i);
    if (n > max_per_gpu_ || need > 1 + 1e-9) return std::nullopt;
    // Binary search on one GPU's rate: each module at the smallest grid quota reaching it, the
    // quotas within 100%, and the rates kept beside each other.
    double lo = 0, hi = 0;
    for (const auto& m : p.modules) hi = hi == 0 ? 1 / m.step_s : std::min(hi, 1 / m.step_s);
    std::vector<ColocPiece> best;
    for (int it = 0; it < 60; ++it) {
      const double mid = (lo + hi) / 2;
      std::vector<ColocPiece> gpu;
      double sm = 0;
      bool ok = true;
      for (int i = 0; i < n && ok; ++i) {
        const double q = quota_for(p, i, mid);
        ok = q > 0;
        sm += q;
        gpu.push_back({i, 0, q, memory_need(p, i)});
      }
      ok = ok && sm <= 1 + 1e-9 && keeps(p, gpu, std::vector<double>(gpu.size(), mid));
      if (ok) {
        lo = mid;
        best = std::move(gpu);
      } else {
        hi = mid;
      }
    }
    if (best.empty()) return std::nullopt;
    // Every GPU alike: spare quota grown on one, then copied to all.
    ColocationProblem one = p;
    one.gpus = 1;
    ColocPlacement single{best};
    grow(one, single);
    ColocPlacement out;
    for (int g = 0; g < p.gpus; ++g) {
      for (ColocPiece c : single.pieces) {
        c.gpu = g;
        out.pieces.push_back(c);
      }
    }
    return out;
  }

  // Time of one phase on a GPU running `members` at once, with the quotas that minimise it (a
  // binary search on the phase's time; each member at the smallest grid quota within it);
  // infinite when they cannot share a GPU.
  double phase_time(const ColocationProblem& p, const std::vector<int>& members, std::vector<double>& quotas) const {
    const double inf = std::numeric_limits<double>::infinity();
    quotas.assign(members.size(), 1.0);
    if (members.size() == 1) return models::quota_time(p.modules[static_cast<std::size_t>(members[0])], p.gpu, 1.0);
    if (static_cast<int>(members.size()) > max_per_gpu_) return inf;
    const double penalty = 1 + p.gpu.colocation_penalty * static_cast<double>(members.size() - 1);
    double lo = 0, hi = 0;
    for (const int m : members) hi += models::quota_time(p.modules[static_cast<std::size_t>(m)], p.gpu, step_) * penalty * 4;
    double found = inf;
    for (int it = 0; it < 50; ++it) {
      const double mid = (lo + hi) / 2;
      std::vector<double> q;
      double sum = 0;
      for (const int m : members) {
        const double need = quota_for(p, m, penalty / mid);
        q.push_back(need);
        sum += need;
      }
      bool ok = sum <= 1 + 1e-9 && std::find(q.begin(), q.end(), 0.0) == q.end();
      double slowest = 0;
      if (ok) {
        ColocationProblem one = p;
        one.gpus = 1;
        ColocPlacement pl;
        for (std::size_t k = 0; k < members.size(); ++k) pl.pieces.push_back({members[k], 0, q[k], memory_need(p, members[k]), 0});
        const models::ColocationResult r = models::evaluate_colocation(one, pl);
        slowest = *std::max_element(r.piece_s.begin(), r.piece_s.end());
        ok = slowest <= mid * (1 + 1e-9);
      }
      if (ok) {
        hi = mid;
        found = slowest;
        quotas = q;
      } else {
        lo = mid;
      }
    }
    return found;
  }

  std::optional<ColocPlacement> phased(const ColocationProblem& p) const {
    const auto n = static_cast<int>(p.modules.size());
    double need = 0;
    for (int i = 0; i < n; ++i) need += memory_need(p, i);
    if (need > 1 + 1e-9) return std::nullopt;
    std::vector<std::vector<int>> phases;
    std::vector<std::vector<double>> quotas;
    std::vector<double> times;
    for (int i = 0; i < n; ++i) {
      phases.push_back({i});
      quotas.emplace_back();
      times.push_back(phase_time(p, phases.back(), quotas.back()));
    }
    // Greedy: merge the pair of phases that shortens the turn most, while one does.
    for (;;) {
      double gain = 0;
      std::size_t a = 0, b = 0;
      std::vector<double> qa;
      for (std::size_t i = 0; i < phases.size(); ++i) {
        for (std::size_t j = i + 1; j < phases.size(); ++j) {
          std::vector<int> merged = phases[i];
          merged.insert(merged.end(), phases[j].begin(), phases[j].end());
          std::vector<double> q;
          const double t = phase_time(p, merged, q);
          if (times[i] + times[j] - t > gain * (1 + 1e-12) + 1e-12) {
            gain = times[i] + times[j] - t;
            a = i;
            b = j;
            qa = q;
          }
        }
      }
      if (gain <= 0) break;
      phases[a].insert(phases[a].end(), phases[b].begin(), phases[b].end());
      quotas[a] = qa;
      times[a] -= gain - times[b];
      phases.erase(phases.begin() + static_cast<std::ptrdiff_t>(b));
      quotas.erase(quotas.begin() + static_cast<std::ptrdiff_t>(b));
      times.erase(times.begin() + static_cast<std::ptrdiff_t>(b));
    }
    ColocPlacement out;
    for (int g = 0; g < p.gpus; ++g) {
      for (std::size_t k = 0; k < phases.size(); ++k) {
        for (std::size_t m = 0; m < phases[k].size(); ++m) {
          out.pieces.push_back({phases[k][m], g, quotas[k][m], memory_need(p, phases[k][m]), static_cast<int>(k)});
        }
      }
    }
    return out;
  }

  // Every piece on the GPU keeps its target rate beside the others.
  static bool keeps(const ColocationProblem& p, const std::vector<ColocPiece>& gpu, const std::vector<double>& target) {
    ColocationProblem one = p;
    one.gpus = 1;
    ColocPlacement pl{gpu};
    for (ColocPiece& c : pl.pieces) c.gpu = 0;
    const models::ColocationResult r = models::evaluate_colocation(one, pl);
    for (std::size_t i = 0; i < gpu.size(); ++i) {
      if (1 / r.piece_s[i] < target[i] * (1 - 1e-9)) return false;
    }
    return true;
  }

  std::optional<ColocPlacement> pack(const ColocationProblem& p, double rate) const {
    ColocPlacement out;
    int gpu = 0;
    struct Frac {
      int module;
      double q, rate;
    };
    std::vector<Frac> fracs;
    for (int i = 0; i < static_cast<int>(p.modules.size()); ++i) {
      const double step = p.modules[static_cast<std::size_t>(i)].step_s;
      const auto whole = static_cast<int>(std::floor(rate * step * (1 + 1e-12)));
      for (int c = 0; c < whole; ++c) out.pieces.push_back({i, gpu++, 1.0, memory_need(p, i)});
      const double rest = rate - whole / step;
      if (rest <= rate * 1e-9) continue;
      const double q = quota_for(p, i, rest);
      if (q == 0) return std::nullopt;
      fracs.push_back({i, q, rest});
    }
    if (gpu > p.gpus) return std::nullopt;
    std::stable_sort(fracs.begin(), fracs.end(), [](const Frac& a, const Frac& b) { return a.q > b.q; });
    std::vector<std::vector<ColocPiece>> shared;
    std::vector<std::vector<double>> targets;
    for (const Frac& f : fracs) {
      const ColocPiece piece{f.module, 0, f.q, memory_need(p, f.module)};
      bool placed = false;
      for (std::size_t g = 0; g < shared.size() && !placed; ++g) {
        double sm = 0, mem = 0;
        for (const ColocPiece& c : shared[g]) {
          sm += c.sm;
          mem += c.memory;
        }
        if (static_cast<int>(shared[g].size()) >= max_per_gpu_ || sm + piece.sm > 1 + 1e-9 || mem + piece.memory > 1 + 1e-9) continue;
        shared[g].push_back(piece);
        targets[g].push_back(f.rate);
        if (keeps(p, shared[g], targets[g])) {
          placed = true;
        } else {
          shared[g].pop_back();
          targets[g].pop_back();
        }
      }
      if (!placed) {
        shared.push_back({piece});
        targets.push_back({f.rate});
        if (!keeps(p, shared.back(), targets.back())) return std::nullopt;
      }
    }
    if (gpu + static_cast<int>(shared.size()) > p.gpus) return std::nullopt;
    for (auto& g : shared) {
      for (ColocPiece c : g) {
        c.gpu = gpu;
        out.pieces.push_back(c);
      }
      ++gpu;
    }
    return out;
  }

  // Spare SM quota, a step at a time, to the bottleneck's piece on a GPU with room (or a new piece
  // on a GPU with room, or on one idle GPU: idle GPUs are all alike) while the pipeline's rate
  // improves. Per step the GPUs are summed once, so a step costs O(pieces x candidates).
  void grow(const ColocationProblem& p, ColocPlacement& pl) const {
    double rate = models::evaluate_colocation(p, pl).microbatches_per_s;
    for (int guard = 0; guard < 100000; ++guard) {
      const int slow = models::evaluate_colocation(p, pl).bottleneck;
      struct Gpu {
        double sm = 0, mem = 0;
        int mine = -1, count = 0;
      };
      std::vector<Gpu> gpus(static_cast<std::size_t>(p.gpus));
      for (std::size_t i = 0; i < pl.pieces.size(); ++i) {
        Gpu& g = gpus[static_cast<std::size_t>(pl.pieces[i].gpu)];
        g.sm += pl.pieces[i].sm;
        g.mem += pl.pieces[i].memory;
        ++g.count;
        if (pl.pieces[i].module == slow) g.mine = static_cast<int>(i);
      }
      ColocPlacement best;
      double best_rate = rate;
      bool idle_tried = false;
      for (int g = 0; g < p.gpus; ++g) {
        const Gpu& gpu = gpus[static_cast<std::size_t>(g)];
        const double add = std::min(step_, 1 - gpu.sm);
        if (add < 1e-9) continue;
        if (gpu.count == 0) {
          if (idle_tried) continue;
          idle_tried = true;
        }
        ColocPlacement trial = pl;
        if (gpu.mine >= 0) {
          trial.pieces[static_cast<std::size_t>(gpu.mine)].sm += add;
        } else {
          if (gpu.count >= max_per_gpu_ || gpu.mem + memory_need(p, slow) > 1 + 1e-9) continue;
          trial.pieces.push_back({slow, g, add, memory_need(p, slow), 0});
        }
        const double r = models::evaluate_colocation(p, trial).microbatches_per_s;
        if (r > best_rate * (1 + 1e-12)) {
          best_rate = r;
          best = std::move(trial);
        }
      }
      if (best.pieces.empty()) return;
      pl = std::move(best);
      rate = best_rate;
    }
  }

  double step_;
  int max_per_gpu_;
};

using models::PeftMicroBatch;
using models::PeftPlan;
using models::PeftProblem;

// Task t's micro-batch k: its sequences k x micro_batch onwards.
PeftMicroBatch::Part micro_batch_of(const PeftProblem& p, int t, int k) {
  const auto& task = p.tasks[static_cast<std::size_t>(t)];
  const auto& lens = p.lengths[static_cast<std::size_t>(t)];
  const auto begin = static_cast<std::size_t>(k) * static_cast<std::size_t>(task.micro_batch);
  const std::size_t end = std::min(lens.size(), begin + static_cast<std::size_t>(task.micro_batch));
  return {t, std::vector<std::int64_t>(lens.begin() + static_cast<std::ptrdiff_t>(begin), lens.begin() + static_cast<std::ptrdiff_t>(end))};
}

class PerTask final : public models::PeftPolicy {
 public:
  PeftPlan plan(const PeftProblem& p) const override {
    PeftPlan out;
    out.shared_backbone = false;
    out.padding = models::PeftPadding::longest;
    for (int t = 0; t < static_cast<int>(p.tasks.size()); ++t) {
      std::vector<PeftMicroBatch> pipeline;
      for (int k = 0; k < p.tasks[static_cast<std::size_t>(t)].micro_batches; ++k) pipeline.push_back({{micro_batch_of(p, t, k)}});
      out.pipelines.push_back(std::move(pipeline));
    }
    return out;
  }
};

class SharedLongest final : public models::PeftPolicy {
 public:
  PeftPlan plan(const PeftProblem& p) const override {
    PeftPlan out;
    out.padding = models::PeftPadding::longest;
    int most = 0;
    for (const auto& t : p.tasks) most = std::max(most, t.micro_batches);
    std::vector<PeftMicroBatch> pipeline;
    for (int k = 0; k < most; ++k) {
      PeftMicroBatch mb;
      for (int t = 0; t < static_cast<int>(p.tasks.size()); ++t) {
        if (k < p.tasks[static_cast<std::size_t>(t)].micro_batches) mb.parts.push_back(micro_batch_of(p, t, k));
      }
      pipeline.push_back(std::move(mb));
    }
    out.pipelines.push_back(std::move(pipeline));
    return out;
  }
};

class MuxTune final : public models::PeftPolicy {
 public:
  MuxTune(std::int64_t chunk, std::int64_t tokens) : chunk_(chunk), tokens_(tokens) {}
  PeftPlan plan(const PeftProblem& p) const override {
    PeftPlan out;
    out.padding = models::PeftPadding::chunk;
    out.chunk = chunk_;
    struct Seq {
      std::int64_t aligned, length;
      int task;
    };
    std::vector<Seq> all;
    std::int64_t total = 0, budget = tokens_;
    for (int t = 0; t < static_cast<int>(p.tasks.size()); ++t) {
      for (const std::int64_t l : p.lengths[static_cast<std::size_t>(t)]) {
        all.push_back({(l + chunk_ - 1) / chunk_ * chunk_, l, t});
        total += all.back().aligned;
      }
      // Default budget: the largest micro-batch a task would run alone (padded to its longest), so
      // that a fused micro-batch keeps no more activations than an instance's.
      if (tokens_ == 0) {
        for (int k = 0; k < p.tasks[static_cast<std::size_t>(t)].micro_batches; ++k) {
          budget = std::max(budget, models::padded_tokens({{micro_batch_of(p, t, k)}}, models::PeftPadding::longest, 1));
        }
      }
    }
    const auto m = static_cast<std::size_t>(std::max<std::int64_t>(1, (total + budget - 1) / budget));
    std::stable_sort(all.begin(), all.end(), [](const Seq& a, const Seq& b) { return a.aligned > b.aligned; });
    std::vector<std::vector<std::vector<std::int64_t>>> bins(m, std::vector<std::vector<std::int64_t>>(p.tasks.size()));
    std::vector<std::int64_t> load(m, 0);
    for (const Seq& s : all) {
      const auto b = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
      load[b] += s.aligned;
      bins[b][static_cast<std::size_t>(s.task)].push_back(s.length);
    }
    std::vector<PeftMicroBatch> pipeline;
    for (auto& bin : bins) {
      PeftMicroBatch mb;
      for (int t = 0; t < static_cast<int>(bin.size()); ++t) {
        if (!bin[static_cast<std::size_t>(t)].empty()) mb.parts.push_back({t, std::move(bin[static_cast<std::size_t>(t)])});
      }
      if (!mb.parts.empty()) pipeline.push_back(std::move(mb));
    }
    out.pipelines.push_back(std::move(pipeline));
    return out;
  }

 private:
  std::int64_t chunk_, tokens_;
};

sim::Registry<models::ColocationPolicy> make_colocation() {
  sim::Registry<models::ColocationPolicy> r("GPU colocation policy");
  r.add({"one-per-gpu", "baseline: one module per GPU, whole GPUs, spare GPUs to the slowest module", {}, [](const sim::Params&) {
           return std::make_unique<OnePerGpu>();
         }});
  r.add({"temporal", "baseline: every GPU holds every module and runs them in turn (data-parallel replicas, one module at a time)", {},
         [](const sim::Params&) { return std::make_unique<Temporal>(); }});
  r.add({"mosaic",
         "Mosaic/Apollo (arXiv 2605.18710): modules colocated under SM and memory quotas, placed by a performance model and first-fit heuristics",
         {{"quota_step", sim::ParamType::number, 0.05, "granularity of SM quotas (MPS active-thread percentage), in (0, 1]"},
          {"max_per_gpu", sim::ParamType::integer, std::int64_t{8}, "most module pieces sharing one GPU, 1 to 16"}},
         [](const sim::Params& ps) -> std::unique_ptr<models::ColocationPolicy> {
           const double step = ps.get_number("quota_step");
           const std::int64_t most = ps.get_int("max_per_gpu");
           if (!(step > 0 && step <= 1)) throw sim::InputError("<policy>", "mosaic/quota_step", fmt::format("found {}, expected a quota in (0, 1]", step));
           if (most < 1 || most > 16) throw sim::InputError("<policy>", "mosaic/max_per_gpu", fmt::format("found {}, expected 1 to 16", most));
           return std::make_unique<Mosaic>(step, static_cast<int>(most));
         }});
  return r;
}

sim::Registry<models::PeftPolicy> make_peft() {
  sim::Registry<models::PeftPolicy> r("multi-task PEFT policy");
  r.add({"per-task", "HF-PEFT / NeMo style: one backbone copy per task, run in turn, micro-batches padded to their longest", {},
         [](const sim::Params&) { return std::make_unique<PerTask>(); }});
  r.add({"slora", "S-LoRA-style shared backbone: every task's k-th micro-batch fused, padded to the fused longest sequence", {},
         [](const sim::Params&) { return std::make_unique<SharedLongest>(); }});
  r.add({"muxtune",
         "MuxTune (arXiv 2603.02885): shared backbone, chunk-aligned sequences fused across tasks into balanced micro-batches, interleaved in the "
         "pipeline",
         {{"chunk", sim::ParamType::integer, std::int64_t{128}, "alignment in tokens: each sequence rounds up to a multiple, 1 to 65536"},
          {"tokens", sim::ParamType::integer, std::int64_t{0},
           "padded tokens per fused micro-batch (their count follows); 0: the largest micro-batch one task runs alone"}},
         [](const sim::Params& ps) -> std::unique_ptr<models::PeftPolicy> {
           const std::int64_t chunk = ps.get_int("chunk"), tokens = ps.get_int("tokens");
           if (chunk < 1 || chunk > 65536) throw sim::InputError("<policy>", "muxtune/chunk", fmt::format("found {}, expected 1 to 65536 tokens", chunk));
           if (tokens < 0 || tokens > (std::int64_t{1} << 30)) {
             throw sim::InputError("<policy>", "muxtune/tokens", fmt::format("found {}, expected 0 (automatic) to 2^30 tokens", tokens));
           }
           return std::make_unique<MuxTune>(chunk, tokens);
         }});
  return r;
}

}  // namespace

const sim::Registry<models::ColocationPolicy>& colocation_policies() {
  static const sim::Registry<models::ColocationPolicy> r = make_colocation();
  return r;
}

const sim::Registry<models::PeftPolicy>& peft_policies() {
  static const sim::Registry<models::PeftPolicy> r = make_peft();
  return r;
}

}  // namespace orrery::policies
