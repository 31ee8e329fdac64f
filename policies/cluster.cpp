#include "policies/cluster.hpp"

#include "sim/error.hpp"

#include <coin/ClpSimplex.hpp>

#include <algorithm>
#include <fmt/format.h>
#include <cmath>
#include <numeric>
#include <optional>
#include <tuple>

namespace orrery::policies {

namespace {

using models::ClusterView;
using models::JobState;
using models::Placement;

// The job's requested GPUs on its requested type (the baselines keep the user's request); a job
// that asks for no type takes the type with the most free GPUs that fits and can run it.
std::optional<Placement> place(const ClusterView& view, const JobState& s, std::map<std::string, int, std::less<>>& free) {
  const int g = s.job->gpus;
  if (!s.job->gpu_type.empty()) {
    const auto it = free.find(s.job->gpu_type);
    if (it != free.end() && it->second >= g) return Placement{it->first, g};
    return std::nullopt;
  }
  const std::pair<const std::string, int>* best = nullptr;
  for (const auto& kv : free) {
    if (kv.second >= g && (best == nullptr || kv.second > best->second) && view.rate(*s.job, kv.first, g) > 0) best = &kv;
  }
  if (best == nullptr) return std::nullopt;
  return Placement{best->first, g};
}

// Greedy in the given order: running jobs keep their place (non-preemptive), queued ones start
// while they fit; without backfill the first that does not fit blocks the rest.
std::map<int, Placement> greedy(const ClusterView& view, const std::vector<const JobState*>& order, bool backfill) {
  std::map<int, Placement> out;
  auto free = view.free_gpus;
  for (const JobState* s : view.active) {
    if (s->running) out[s->index] = s->placement;
  }
  for (const JobState* s : order) {
    if (s->running) continue;
    if (auto p = place(view, *s, free)) {
      free[p->gpu_type] -= p->gpus;
      out[s->index] = *p;
    } else if (!backfill) {
      break;
    }
  }
  return out;
}

class Fifo final : public models::ClusterScheduler {
 public:
  explicit Fifo(bool backfill) : backfill_(backfill) {}
  std::string_view name() const override { return backfill_ ? "fifo (backfill)" : "fifo"; }
  std::map<int, Placement> schedule(const ClusterView& view) override { return greedy(view, view.active, backfill_); }

 private:
  bool backfill_;
};

class Sjf final : public models::ClusterScheduler {
 public:
  std::string_view name() const override { return "sjf"; }
  std::map<int, Placement> schedule(const ClusterView& view) override {
    std::vector<const JobState*> order = view.active;
    std::stable_sort(order.begin(), order.end(), [&](const JobState* a, const JobState* b) {
      return view.throughput->work(*a->job) < view.throughput->work(*b->job);
    });
    return greedy(view, order, true);
  }
};

class Tiresias final : public models::ClusterScheduler {
 public:
  Tiresias(std::vector<double> thresholds, double promote_after, double interval)
      : thresholds_(std::move(thresholds)), promote_after_(promote_after), interval_(interval) {}
  std::string_view name() const override { return "tiresias"; }
  double interval_s() const override { return interval_; }
  std::map<int, Placement> schedule(const ClusterView& view) override {
    // Queue of each job by attained GPU-seconds; a starving job goes back to the top.
    const auto queue = [&](const JobState* s) {
      const double waited = view.now - s->waiting_since;
      if (!s->running && s->executed_s > 0 && waited > promote_after_ * s->executed_s) return 0;
      int q = 0;
      while (q < static_cast<int>(thresholds_.size()) && s->attained_gpu_s >= thresholds_[static_cast<std::size_t>(q)]) ++q;
      return q;
    };
    std::vector<const JobState*> order = view.active;
    std::stable_sort(order.begin(), order.end(), [&](const JobState* a, const JobState* b) { return queue(a) < queue(b); });
    // Preemptive: place by priority from an empty cluster; running jobs keep their GPU type
    // when it still has room (no needless migration).
    std::map<int, Placement> out;
    std::map<std::string, int, std::less<>> free;
    for (const auto& [type, n] : view.free_gpus) free[type] = n;
    for (const JobState* s : view.active) {
      if (s->running) free[s->placement.gpu_type] += s->placement.gpus;
    }
    for (const JobState* s : order) {
      if (s->running && free[s->placement.gpu_type] >= s->placement.gpus) {
        free[s->placement.gpu_type] -= s->placement.gpus;
        out[s->index] = s->placement;
        continue;
      }
      if (auto p = place(view, *s, free)) {
        free[p->gpu_type] -= p->gpus;
        out[s->index] = *p;
      }
    }
    return out;
  }

 private:
  std::vector<double> thresholds_;
  double promote_after_;
  double interval_;
};

// Gavel (Narayanan et al., OSDI'20), heterogeneity-aware max-min fairness. An LP (solved with
// COIN-OR CLP) gives each active job j its time fractions X[j][t] on each GPU type t, to
//   maximise z  subject to  z <= sum_t X[j][t] T[j][t] / E[j]     (every job's normalised rate)
//                           sum_t X[j][t] <= 1                    (a job runs on one type at a time)
//                           sum_j X[j][t] g[j] <= G[t]            (a type's GPUs)
// where T[j][t] is the job's rate on its g[j] GPUs of type t and E[j] its rate under an equal
// share (1/n of the cluster's GPU-time, spread over the types by their sizes). Every round, jobs
// run in order of priority X[j][t] / (share of rounds received on t), each on one type, while
// GPUs last. The LP is re-solved when the set of jobs changes.
class Gavel final : public models::ClusterScheduler {
 public:
  explicit Gavel(double interval) : interval_(interval) {}
  std::string_view name() const override { return "gavel"; }
  double interval_s() const override { return interval_; }

  std::map<int, Placement> schedule(const ClusterView& view) override {
    if (view.cluster != cluster_) {  // the types and their GPUs, once per cluster
      cluster_ = view.cluster;
      types_.clear();
      capacity_.clear();
      for (const models::NodePool& p : view.cluster->pools) {
        const auto it = std::find(types_.begin(), types_.end(), p.gpu_type);
        if (it == types_.end()) {
          types_.push_back(p.gpu_type);
          capacity_.push_back(p.nodes * p.gpus_per_node);
        } else {
          capacity_[static_cast<std::size_t>(it - types_.begin())] += p.nodes * p.gpus_per_node;
        }
      }
    }
    const std::size_t nt = types_.size();
    ids_.clear();
    for (const JobState* s : view.active) ids_.push_back(s->index);
    if (ids_ != last_ids_) {
      solve(view, types_, capacity_);
      last_ids_ = ids_;
    }
    // Rounds received so far, per job and type (counted at each round this scheduler runs).
    ++rounds_;
    order_.clear();  // (-priority, position in view.active, type)
    for (std::size_t a = 0; a < view.active.size(); ++a) {
      const auto j = static_cast<std::size_t>(view.active[a]->index);
      for (std::size_t t = 0; t < nt; ++t) {
        const double x = share_[j * nt + t];
        if (x <= 1e-9) continue;
        const double received = (received_[j * nt + t] + 1.0) / rounds_;
        order_.emplace_back(-x / received, a, t);
      }
    }
    std::stable_sort(order_.begin(), order_.end());  // ties: arrival order, then type order
    std::map<int, Placement> out;
    free_.assign(capacity_.begin(), capacity_.end());
    placed_.assign(view.active.size(), 0);
    for (const auto& [neg, a, t] : order_) {
      if (placed_[a]) continue;
      const JobState* s = view.active[a];
      const int g = s->job->gpus;
      if (free_[t] < g) continue;
      free_[t] -= g;
      placed_[a] = 1;
      out.emplace(s->index, Placement{types_[t], g});
      received_[static_cast<std::size_t>(s->index) * nt + t] += 1;
    }
    return out;
  }

 private:
  // Jobs with the same GPU count and rates on every type get the same fractions (averaging any
  // optimum over such a class is optimal too), so the LP has one set of variables per class.
  void solve(const ClusterView& view, const std::vector<std::string>& types, const std::vector<double>& capacity) {
    const auto n = static_cast<int>(view.active.size());
    const auto nt = static_cast<int>(types.size());
    if (n == 0) return;  // nothing to share
    const double total = std::accumulate(capacity.begin(), capacity.end(), 0.0);
    struct Class {
      int gpus;
      std::vector<double> rate;
      std::vector<int> jobs;
    };
    std::vector<Class> classes;
    std::map<std::pair<int, std::vector<double>>, std::size_t> class_of;
    for (const JobState* s : view.active) {
      std::vector<double> rate(static_cast<std::size_t>(nt));
      for (int t = 0; t < nt; ++t) rate[static_cast<std::size_t>(t)] = view.rate(*s->job, types[static_cast<std::size_t>(t)], s->job->gpus);
      const auto key = std::make_pair(s->job->gpus, rate);
      auto it = class_of.find(key);
      if (it == class_of.end()) {
        it = class_of.emplace(key, classes.size()).first;
        classes.push_back({s->job->gpus, rate, {}});
      }
      classes[it->second].jobs.push_back(s->index);
    }
    const auto nc = static_cast<int>(classes.size());
    // Columns: X[c][t] (nc * nt), then z. Rows: nc fairness rows, nc one-type rows, nt capacity rows.
    const int cols = nc * nt + 1, rows = 2 * nc + nt;
    std::vector<double> lower(static_cast<std::size_t>(cols), 0.0), upper(static_cast<std::size_t>(cols), 1.0),
        objective(static_cast<std::size_t>(cols), 0.0);
    upper.back() = COIN_DBL_MAX;
    objective.back() = 1.0;
    std::vector<double> row_lower(static_cast<std::size_t>(rows), -COIN_DBL_MAX), row_upper(static_cast<std::size_t>(rows), 0.0);
    std::vector<std::vector<std::pair<int, double>>> column(static_cast<std::size_t>(cols));
    for (int c = 0; c < nc; ++c) {
      const Class& k = classes[static_cast<std::size_t>(c)];
      // Equal share: 1/n of the GPU-time, on each type in proportion to its size.
      double equal = 0;
      for (int t = 0; t < nt; ++t) {
        equal += k.rate[static_cast<std::size_t>(t)] * std::min(1.0, total / (n * k.gpus)) * capacity[static_cast<std::size_t>(t)] / total;
      }
      if (equal <= 0) equal = 1;
      for (int t = 0; t < nt; ++t) {
        const int col = c * nt + t;
        const double r = k.rate[static_cast<std::size_t>(t)];
        if (r <= 0) {
          upper[static_cast<std::size_t>(col)] = 0;  // cannot run there
        } else {
          column[static_cast<std::size_t>(col)].emplace_back(c, -r / equal);  // z - sum_t X T / E <= 0
        }
        column[static_cast<std::size_t>(col)].emplace_back(nc + c, 1.0);  // sum_t X <= 1
        column[static_cast<std::size_t>(col)].emplace_back(2 * nc + t, static_cast<double>(k.gpus) * static_cast<double>(k.jobs.size()));
      }
      column.back().emplace_back(c, 1.0);
      row_upper[static_cast<std::size_t>(nc + c)] = 1.0;
    }
    for (int t = 0; t < nt; ++t) row_upper[static_cast<std::size_t>(2 * nc + t)] = capacity[static_cast<std::size_t>(t)];
    // Column-major arrays for CLP.
    std::vector<CoinBigIndex> start = {0};
    std::vector<int> index;
    std::vector<double> value;
    for (const auto& entries : column) {
      for (const auto& [r, v] : entries) {
        index.push_back(r);
        value.push_back(v);
      }
      start.push_back(static_cast<CoinBigIndex>(index.size()));
    }
    ClpSimplex lp;
    lp.setLogLevel(0);
    lp.loadProblem(cols, rows, start.data(), index.data(), value.data(), lower.data(), upper.data(), objective.data(), row_lower.data(),
                   row_upper.data());
    lp.setOptimizationDirection(-1);  // maximise
    lp.initialSolve();  // with presolve: primal() and dual() alone trip an assertion of CLP 1.17 on this structure
    ORRERY_CHECK(lp.isProvenOptimal(), "Gavel's LP has no optimum (status {})", lp.status());
    const double* x = lp.getColSolution();
    int most = 0;
    for (const JobState* s : view.active) most = std::max(most, s->index);
    const auto needed = static_cast<std::size_t>(most + 1) * static_cast<std::size_t>(nt);
    if (share_.size() < needed) {
      share_.resize(needed, 0.0);
      received_.resize(needed, 0.0);
    }
    for (int c = 0; c < nc; ++c) {
      for (const int j : classes[static_cast<std::size_t>(c)].jobs) {
        for (int t = 0; t < nt; ++t) share_[static_cast<std::size_t>(j * nt + t)] = x[c * nt + t];
      }
    }
  }

  double interval_;
  const models::ClusterSpec* cluster_ = nullptr;
  std::vector<std::string> types_;
  std::vector<double> capacity_;
  std::vector<int> ids_, last_ids_;
  // Per job index and type (index x types + type): the LP's time fraction, rounds received.
  std::vector<double> share_, received_;
  double rounds_ = 0;
  // Scratch of each round.
  std::vector<std::tuple<double, std::size_t, std::size_t>> order_;
  std::vector<double> free_;
  std::vector<char> placed_;
};

// Arena (EuroSys'26), its scheduler loop over grids (GPU type, GPU count) with the adaptive-
// parallelism throughput of each grid (the ThroughputModel: Arena's profiled optimal plans):
//  - pending jobs in FIFO order take their requested grid if it fits; otherwise a search over
//    plans that place the job on some grid (counts 1, 2, 4, 8, 16) after at most `depth` edits
//    to running jobs (halve one's GPUs, or move it to another type at the same count), scored
//    by the structured marginal gain: the sum over the jobs touched of the change in their
//    throughput normalised by their requested grid's; the best plan with a positive gain is
//    applied, else the job waits and later ones may pass it (opportunism);
//  - then an upgrade trial: running jobs scale up (double their GPUs) or switch type while
//    free GPUs allow and the gain is positive, largest gain per GPU first.
//  - with `migrate`, every running job kept where it is is marked for defragmenting migration:
//    the simulator moves it onto fewer nodes when the holes left by departures allow it and
//    the faster rate repays the restart (Arena's introspective "bubble" migration).
// A job with an elastic range (Job::min_gpus..max_gpus) only gets counts inside it; a resizable
// one without (Job::resizable) any grid size, up to twice its request when it is placed; any
// other keeps its requested count (it may still move to another type at that count).
// Every change pays the restart overhead (in the simulator). Rates are at the best locality
// (the grid's fewest nodes); the simulator charges the rate of the nodes a job really spans.
class Arena final : public models::ClusterScheduler {
 public:
  Arena(int depth, int searches, double interval, bool migrate)
      : depth_(depth), searches_(searches), interval_(interval), migrate_(migrate) {}
  std::string_view name() const override { return "arena"; }
  double interval_s() const override { return interval_; }

  std::map<int, Placement> schedule(const ClusterView& view) override {
    std::map<std::string, int, std::less<>> free;
    for (const models::NodePool& p : view.cluster->pools) free[p.gpu_type] += p.nodes * p.gpus_per_node;
    std::map<int, Placement> plan;
    std::map<int, const JobState*> jobs;
    for (const JobState* s : view.active) {
      jobs[s->index] = s;
      if (s->running) {
        plan[s->index] = s->placement;
        free[s->placement.gpu_type] -= s->placement.gpus;
      }
    }
    const auto norm = [&](const JobState* s, const Placement& p) {
      const double req = requested_rate(view, s);
      return req > 0 ? view.rate(*s->job, p.gpu_type, p.gpus) / req : 0.0;
    };
    // Pending jobs, FIFO; the plan search (the costly part) for the first `searches_` that do
    // not fit as asked, as Arena bounds its search effort under load.
    int searched = 0;
    for (const JobState* s : view.active) {
      if (plan.contains(s->index)) continue;
      const Placement want{s->job->gpu_type.empty() ? best_type(view, s, free) : s->job->gpu_type, s->job->gpus};
      if (!want.gpu_type.empty() && free[want.gpu_type] >= want.gpus && norm(s, want) > 0) {
        free[want.gpu_type] -= want.gpus;
        plan[s->index] = want;
        continue;
      }
      if (searched++ >= searches_) continue;
      double best_gain = 0;
      std::map<int, Placement> best_edits;
      Placement best_place;
      search(view, s, jobs, plan, free, {}, depth_, norm, best_gain, best_edits, best_place);
      if (best_gain <= 0) continue;
      for (const auto& [j, p] : best_edits) {
        free[plan[j].gpu_type] += plan[j].gpus;
        free[p.gpu_type] -= p.gpus;
        plan[j] = p;
      }
      free[best_place.gpu_type] -= best_place.gpus;
      plan[s->index] = best_place;
    }
    // Upgrade trial: scale up or switch type while it gains, best gain per GPU first.
    for (bool improved = true; improved;) {
      improved = false;
      double best = 0;
      int who = -1;
      Placement to;
      for (const auto& [j, p] : plan) {
        const JobState* s = jobs[j];
        const double now_thr = norm(s, p);
        for (const auto& [type, n] : free) {
          for (const int count : {p.gpus, 2 * p.gpus}) {
            if (!allowed(s, count) || (type == p.gpu_type && count == p.gpus)) continue;
            const int extra = type == p.gpu_type ? count - p.gpus : count;
            if (extra > n) continue;
            const double gain = (norm(s, {type, count}) - now_thr) / std::max(1, extra);
            if (gain > best + 1e-9) {
              best = gain;
              who = j;
              to = {type, count};
            }
          }
        }
      }
      if (who >= 0) {
        free[plan[who].gpu_type] += plan[who].gpus;
        free[to.gpu_type] -= to.gpus;
        plan[who] = to;
        improved = true;
      }
    }
    if (migrate_) {
      for (auto& [j, p] : plan) {
        const JobState* s = jobs[j];
        p.consolidate = s->running && p.gpu_type == s->placement.gpu_type && p.gpus == s->placement.gpus;
      }
    }
    return plan;
  }

 private:
  // Arena's grid sizes (1, 2, 4, 8, 16), within what the job allows (models::Job::allows).
  static bool allowed(const JobState* s, int count) { return count >= 1 && count <= 16 && s->job->allows(count); }
  // The rate of the requested grid; for a job that names no type, the best type's at its count.
  static double requested_rate(const ClusterView& view, const JobState* s) {
    if (!s->job->gpu_type.empty()) return view.rate(*s->job, s->job->gpu_type, s->job->gpus);
    double best = 0;
    for (const models::NodePool& p : view.cluster->pools) best = std::max(best, view.rate(*s->job, p.gpu_type, s->job->gpus));
    return best;
  }
  static std::string best_type(const ClusterView& view, const JobState* s, const std::map<std::string, int, std::less<>>& free) {
    std::string best;
    double rate = 0;
    for (const auto& [type, n] : free) {
      const double r = view.rate(*s->job, type, s->job->gpus);
      if (n >= s->job->gpus && r > rate) best = type, rate = r;
    }
    return best;
  }

  // Depth-first over edit sequences (at most `depth`): after each, try every grid for the job.
  template <class Norm>
  void search(const ClusterView& view, const JobState* s, const std::map<int, const JobState*>& jobs, const std::map<int, Placement>& plan,
              std::map<std::string, int, std::less<>> free, std::map<int, Placement> edits, int depth, const Norm& norm, double& best_gain,
              std::map<int, Placement>& best_edits, Placement& best_place) const {
    double edit_gain = 0;
    for (const auto& [j, p] : edits) edit_gain += norm(jobs.at(j), p) - norm(jobs.at(j), plan.at(j));
    for (const auto& [type, n] : free) {
      for (const int count : {1, 2, 4, 8, 16}) {
        if (count > n || !allowed(s, count) || (!s->job->elastic() && count > 2 * s->job->gpus)) continue;
        const double gain = edit_gain + norm(s, {type, count});
        if (gain > best_gain + 1e-9) {
          best_gain = gain;
          best_edits = edits;
          best_place = {type, count};
        }
      }
    }
    if (depth == 0) return;
    for (const auto& [j, current] : plan) {
      if (edits.contains(j)) continue;
      const JobState* r = jobs.at(j);
      std::vector<Placement> options;
      if (current.gpus >= 2 && allowed(r, current.gpus / 2)) options.push_back({current.gpu_type, current.gpus / 2});  // shrink
      for (const auto& [type, n] : free) {
        if (type != current.gpu_type && n >= current.gpus) options.push_back({type, current.gpus});  // change type
      }
      for (const Placement& o : options) {
        if (norm(r, o) <= 0) continue;
        auto f = free;
        f[current.gpu_type] += current.gpus;
        f[o.gpu_type] -= o.gpus;
        auto e = edits;
        e[j] = o;
        search(view, s, jobs, plan, f, e, depth - 1, norm, best_gain, best_edits, best_place);
      }
    }
  }

  int depth_;
  int searches_;
  double interval_;
  bool migrate_;
};

// A round length from 1 s (shorter rounds make tens of thousands of scheduler calls a day and,
// at large simulated times, cannot advance the clock) to 1e7 s (four months); 0 where `zero`
// means no rounds.
double round_interval(const sim::Params& p, const char* where, bool zero) {
  const double v = p.get_number("interval");
  if ((zero && v == 0) || (v >= 1 && v <= 1e7)) return v;
  throw sim::InputError("<policy>", where, fmt::format("found {}, expected {}1 to 1e7 seconds per round", v, zero ? "0 (no rounds) or " : ""));
}

}  // namespace

const sim::Registry<models::ClusterScheduler>& cluster_schedulers() {
  static const sim::Registry<models::ClusterScheduler> registry = [] {
    sim::Registry<models::ClusterScheduler> r("cluster scheduler");
    r.add({"fifo", "first come, first served on the requested GPUs",
           {{"backfill", sim::ParamType::boolean, false, "later jobs may start when the head of the queue does not fit"}},
           [](const sim::Params& p) { return std::make_unique<Fifo>(p.get_bool("backfill")); }});
    r.add({"gavel", "Gavel: heterogeneity-aware max-min fairness over time fractions (an LP, COIN-OR CLP), in rounds",
           {{"interval", sim::ParamType::number, 300.0, "seconds per round"}},
           [](const sim::Params& p) {
             return std::make_unique<Gavel>(round_interval(p, "gavel/interval", false));
           }});
    r.add({"arena", "Arena: grid search over (GPU type, count) with marginal-gain plans that shrink or move running jobs, upgrade trials",
           {{"depth", sim::ParamType::integer, std::int64_t{1}, "edits to running jobs a plan may make"},
            {"searches", sim::ParamType::integer, std::int64_t{4}, "pending jobs per scheduling event that get the plan search"},
            {"interval", sim::ParamType::number, 0.0, "seconds between extra rounds (0: on arrivals and departures only, as Arena)"},
            {"migrate", sim::ParamType::boolean, true, "defragmenting migration of running jobs onto fewer nodes"}},
           [](const sim::Params& p) {
             const std::int64_t d = p.get_int("depth"), k = p.get_int("searches");
             if (d < 0 || d > 3) throw sim::InputError("<policy>", "arena/depth", fmt::format("found {}, expected 0 to 3 edits", d));
             if (k < 0) throw sim::InputError("<policy>", "arena/searches", "expected 0 or more");
             if (k > 1'000'000) throw sim::InputError("<policy>", "arena/searches", fmt::format("found {}, expected 0 to 1000000 searches", k));
             const double interval = round_interval(p, "arena/interval", true);
             return std::make_unique<Arena>(static_cast<int>(d), static_cast<int>(k), interval, p.get_bool("migrate"));
           }});
    r.add({"sjf", "shortest job first with an oracle of job lengths (non-preemptive, backfilling)", {},
           [](const sim::Params&) { return std::make_unique<Sjf>(); }});
    r.add({"tiresias", "Tiresias' discretised 2D-LAS: queues by attained GPU-time, preemptive, with promotion",
           {{"threshold", sim::ParamType::number, 3600.0, "GPU-seconds of the first queue's limit; each next queue's is 10x"},
            {"queues", sim::ParamType::integer, std::int64_t{3}, "number of queues"},
            {"promote_after", sim::ParamType::number, 8.0, "a queued job that waited this many times its run time returns to the top queue"},
            {"interval", sim::ParamType::number, 300.0, "seconds between rounds (demotions take effect at rounds)"}},
           [](const sim::Params& p) {
             const std::int64_t q = p.get_int("queues");
             const double t = p.get_number("threshold");
             if (q < 1 || q > 16) throw sim::InputError("<policy>", "tiresias/queues", fmt::format("found {}, expected 1 to 16 queues", q));
             if (!(t > 0)) throw sim::InputError("<policy>", "tiresias/threshold", "expected a positive GPU-seconds threshold");
             const double interval = round_interval(p, "tiresias/interval", false);
             const double promote = p.get_number("promote_after");
             if (!(promote >= 0 && promote <= 1e6)) {
               throw sim::InputError("<policy>", "tiresias/promote_after", fmt::format("found {}, expected 0 to 1e6 times the run time", promote));
             }
             if (!(t <= 1e15)) throw sim::InputError("<policy>", "tiresias/threshold", fmt::format("found {}, expected at most 1e15 GPU-seconds", t));
             std::vector<double> thresholds;
             for (std::int64_t i = 0; i + 1 < q; ++i) thresholds.push_back(t * std::pow(10.0, static_cast<double>(i)));
             return std::make_unique<Tiresias>(thresholds, promote, interval);
           }});
    return r;
  }();
  return registry;
}

}  // namespace orrery::policies
