#include "policies/cluster.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <cmath>
#include <numeric>
#include <optional>

namespace orrery::policies {

namespace {

using models::ClusterView;
using models::JobState;
using models::Placement;

// The job's requested GPUs on its preferred type if that has room, else on the type with the
// most free GPUs that fits; nothing when no type fits.
std::optional<Placement> place(const JobState& s, std::map<std::string, int, std::less<>>& free) {
  const int g = s.job->gpus;
  if (!s.job->gpu_type.empty()) {
    const auto it = free.find(s.job->gpu_type);
    if (it != free.end() && it->second >= g) return Placement{it->first, g};
  }
  const std::pair<const std::string, int>* best = nullptr;
  for (const auto& kv : free) {
    if (kv.second >= g && (best == nullptr || kv.second > best->second)) best = &kv;
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
    if (auto p = place(*s, free)) {
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
      if (auto p = place(*s, free)) {
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

}  // namespace

const sim::Registry<models::ClusterScheduler>& cluster_schedulers() {
  static const sim::Registry<models::ClusterScheduler> registry = [] {
    sim::Registry<models::ClusterScheduler> r("cluster scheduler");
    r.add({"fifo", "first come, first served on the requested GPUs",
           {{"backfill", sim::ParamType::boolean, false, "later jobs may start when the head of the queue does not fit"}},
           [](const sim::Params& p) { return std::make_unique<Fifo>(p.get_bool("backfill")); }});
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
             if (!(p.get_number("interval") > 0)) throw sim::InputError("<policy>", "tiresias/interval", "expected a positive interval");
             std::vector<double> thresholds;
             for (std::int64_t i = 0; i + 1 < q; ++i) thresholds.push_back(t * std::pow(10.0, static_cast<double>(i)));
             return std::make_unique<Tiresias>(thresholds, p.get_number("promote_after"), p.get_number("interval"));
           }});
    return r;
  }();
  return registry;
}

}  // namespace orrery::policies
