#include "models/cluster/cluster.hpp"

#include "models/hardware/hardware.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/flow_network.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

namespace orrery::models {

int ClusterSpec::total_gpus() const {
  int n = 0;
  for (const NodePool& p : pools) n += p.nodes * p.gpus_per_node;
  return n;
}

int ClusterSpec::gpus_per_node(std::string_view gpu_type) const {
  int most = 0;
  for (const NodePool& p : pools) {
    if (p.gpu_type == gpu_type) most = std::max(most, p.gpus_per_node);
  }
  return most;
}

int ClusterSpec::min_nodes(std::string_view gpu_type, int gpus) const {
  const int per = gpus_per_node(gpu_type);
  return per <= 0 ? std::max(1, gpus) : std::max(1, (gpus + per - 1) / per);
}

namespace {
double fp16_peak(std::string_view type) {
  const GpuSpec* g = HardwareCatalog::builtin().find(type);
  return g == nullptr ? 0.0 : g->peak(DType::fp16).value();
}
}  // namespace

double TraceDurationModel::rate(const Job& job, std::string_view gpu_type, int gpus, int nodes) const {
  if (gpus <= 0) return 0;
  double r = std::pow(static_cast<double>(gpus) / job.gpus, exponent_);
  if (spread_ != 1.0 && nodes > cluster_.min_nodes(gpu_type, gpus)) r *= spread_;
  if (!job.gpu_type.empty() && gpu_type != job.gpu_type) {
    const double mine = fp16_peak(job.gpu_type), there = fp16_peak(gpu_type);
    if (mine > 0 && there > 0) r *= there / mine;
  }
  return r;
}

bool fits(const ClusterView& view, const Placement& p) {
  const auto it = view.free_gpus.find(p.gpu_type);
  return it != view.free_gpus.end() && it->second >= p.gpus && p.gpus > 0;
}

namespace {

// The cluster's nodes and their free GPUs. A job gets the fewest nodes that hold it: one node
// when one can (the fullest that can: best fit, which keeps large holes for large jobs), else
// the nodes with the most free GPUs first and the rest on the best-fitting node.
class NodeAllocator {
 public:
  using Grant = std::vector<std::pair<int, int>>;  // (node, GPUs)

  explicit NodeAllocator(const ClusterSpec& c) {
    std::map<std::string, int, std::less<>> count;
    for (const NodePool& p : c.pools) {
      for (int i = 0; i < p.nodes; ++i) {
        by_type_[p.gpu_type].push_back(static_cast<int>(free_.size()));
        free_.push_back(p.gpus_per_node);
        names_.push_back(fmt::format("{}-{}", p.gpu_type, count[p.gpu_type]++));
      }
    }
  }
  const std::vector<std::string>& names() const { return names_; }

  // Precondition: the type has `gpus` free GPUs in all.
  Grant take(std::string_view type, int gpus) {
    const std::vector<int>& ids = by_type_.find(type)->second;
    int best = -1;
    for (const int id : ids) {
      if (free_[u(id)] >= gpus && (best < 0 || free_[u(id)] < free_[u(best)])) best = id;
    }
    if (best >= 0) {
      free_[u(best)] -= gpus;
      return {{best, gpus}};
    }
    std::vector<int> order;
    for (const int id : ids) {
      if (free_[u(id)] > 0) order.push_back(id);
    }
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return free_[u(a)] > free_[u(b)]; });
    Grant g;
    int need = gpus;
    for (std::size_t k = 0; need > 0; ++k) {
      ORRERY_CHECK(k < order.size(), "node allocator: {} GPUs of {} asked, fewer free", gpus, type);
      if (free_[u(order[k])] >= need) {
        std::size_t m = k;  // the last (smallest) node that still holds the rest
        while (m + 1 < order.size() && free_[u(order[m + 1])] >= need) ++m;
        g.emplace_back(order[m], need);
        free_[u(order[m])] -= need;
        need = 0;
      } else {
        g.emplace_back(order[k], free_[u(order[k])]);
        need -= free_[u(order[k])];
        free_[u(order[k])] = 0;
      }
    }
    return g;
  }
  void give(const Grant& g) {
    for (const auto& [node, n] : g) free_[u(node)] += n;
  }
  void retake(const Grant& g) {
    for (const auto& [node, n] : g) free_[u(node)] -= n;
  }

 private:
  static std::size_t u(int i) { return static_cast<std::size_t>(i); }
  std::map<std::string, std::vector<int>, std::less<>> by_type_;
  std::vector<int> free_;
  std::vector<std::string> names_;
};

}  // namespace

std::vector<double> fabric_shares(const SharedFabric& f, int nodes, const std::vector<std::vector<std::pair<int, int>>>& grants) {
  std::vector<double> share(grants.size(), 1.0);
  if (!f.enabled()) return share;
  ORRERY_CHECK(f.nic_bytes_per_s > 0 && f.oversubscription > 0, "shared fabric without NIC bandwidth or oversubscription");
  sim::Engine engine;
  sim::FlowNetwork net(engine);
  const auto leaves = (nodes + f.nodes_per_leaf - 1) / f.nodes_per_leaf;
  const sim::BytesPerSecond nic(f.nic_bytes_per_s), uplink(f.nodes_per_leaf * f.nic_bytes_per_s / f.oversubscription);
  std::vector<sim::LinkId> nic_out, nic_in, up, down;
  for (int n = 0; n < nodes; ++n) {
    nic_out.push_back(net.add_link(nic, sim::Duration::zero()));
    nic_in.push_back(net.add_link(nic, sim::Duration::zero()));
  }
  for (int l = 0; l < leaves; ++l) {
    up.push_back(net.add_link(uplink, sim::Duration::zero()));
    down.push_back(net.add_link(uplink, sim::Duration::zero()));
  }
  const auto u = [](int i) { return static_cast<std::size_t>(i); };
  std::vector<std::vector<sim::FlowId>> flows(grants.size());
  for (std::size_t j = 0; j < grants.size(); ++j) {
    const auto& g = grants[j];
    if (g.size() < 2) continue;
    std::vector<int> ring;
    for (const auto& [node, gpus] : g) ring.push_back(node);
    std::sort(ring.begin(), ring.end());
    for (std::size_t k = 0; k < ring.size(); ++k) {
      const int from = ring[k], to = ring[(k + 1) % ring.size()];
      std::vector<sim::LinkId> route = {nic_out[u(from)]};
      if (from / f.nodes_per_leaf != to / f.nodes_per_leaf) {
        route.push_back(up[u(from / f.nodes_per_leaf)]);
        route.push_back(down[u(to / f.nodes_per_leaf)]);
      }
      route.push_back(nic_in[u(to)]);
      flows[j].push_back(net.start(route, sim::Bytes(1e3 * f.nic_bytes_per_s), j));  // 1000 s at full rate: none finishes at 1 ns
    }
  }
  engine.run_until(sim::Time::from_ns(1));  // the flows activate and get their max-min rates
  for (std::size_t j = 0; j < grants.size(); ++j) {
    for (const sim::FlowId id : flows[j]) share[j] = std::min(share[j], net.rate(id).value() / f.nic_bytes_per_s);
  }
  return share;
}

ClusterSim::ClusterSim(ClusterSpec cluster, std::vector<Job> jobs, const ThroughputModel& throughput, ClusterScheduler& scheduler,
                       ClusterOptions options)
    : cluster_(std::move(cluster)), jobs_(std::move(jobs)), throughput_(throughput), scheduler_(scheduler), options_(options) {
  std::stable_sort(jobs_.begin(), jobs_.end(), [](const Job& a, const Job& b) { return a.arrival_s < b.arrival_s; });
}

ClusterResult ClusterSim::run() {
  const std::size_t n = jobs_.size();
  std::vector<JobState> state(n);
  std::vector<double> rate(n, 0.0), alone(n, 0.0), resume_at(n, 0.0), total(n, 0.0);
  std::vector<JobRecord> rec(n);
  std::vector<NodeAllocator::Grant> grant(n);
  std::vector<std::vector<std::size_t>> open_allocs(n);  // indices into result.allocations
  NodeAllocator nodes(cluster_);
  std::map<std::string, int, std::less<>> free;
  for (const NodePool& p : cluster_.pools) free[p.gpu_type] += p.nodes * p.gpus_per_node;
  for (std::size_t i = 0; i < n; ++i) {
    state[i].job = &jobs_[i];
    state[i].index = static_cast<int>(i);
    total[i] = throughput_.work(jobs_[i]);
    state[i].remaining = total[i];
    rec[i] = {jobs_[i].id, jobs_[i].arrival_s, -1, -1, jobs_[i].gpus, 0, 0, "", 0};
  }
  std::vector<int> active;  // indices, arrival order
  std::size_t next_arrival = 0;
  double now = n > 0 ? jobs_.front().arrival_s : 0;
  double next_round = std::numeric_limits<double>::infinity();
  const double interval = scheduler_.interval_s();
  double gpu_seconds = 0;
  ClusterResult result;
  result.node_names = nodes.names();
  std::vector<int> fabric_jobs;                    // the multi-node jobs of the last fabric solve
  std::vector<NodeAllocator::Grant> fabric_grants;  // and their nodes
  const auto close_allocs = [&](std::size_t u) {
    for (const std::size_t a : open_allocs[u]) result.allocations[a].end_s = now;
    open_allocs[u].clear();
  };
  const auto open_alloc = [&](std::size_t u) {
    if (!options_.record_allocations) return;
    for (const auto& [node, g] : grant[u]) {
      open_allocs[u].push_back(result.allocations.size());
      result.allocations.push_back({static_cast<int>(u), node, g, now, now});
    }
  };
  const auto stop = [&](int j) {
    const auto u = static_cast<std::size_t>(j);
    JobState& s = state[u];
    free[s.placement.gpu_type] += s.placement.gpus;
    nodes.give(grant[u]);
    grant[u].clear();
    close_allocs(u);
    s.running = false;
    s.waiting_since = now;
    rate[u] = 0;
  };
  // Seconds until the job is done from now at rate r, starting after `delay`.
  const auto time_left = [&](std::size_t u, double r, double delay) { return r > 0 ? delay + state[u].remaining / r : std::numeric_limits<double>::infinity(); };
  while (next_arrival < n || !active.empty()) {
    // Next event: an arrival, a completion, or a scheduling round.
    double t = next_arrival < n ? jobs_[next_arrival].arrival_s : std::numeric_limits<double>::infinity();
    for (const int j : active) {
      const auto u = static_cast<std::size_t>(j);
      if (state[u].running && rate[u] > 0) t = std::min(t, std::max(now, resume_at[u]) + state[u].remaining / rate[u]);
    }
    if (!active.empty()) t = std::min(t, next_round);
    ORRERY_CHECK(std::isfinite(t), "cluster simulation stalled at {} s with {} active jobs (none can run)", now, active.size());
    // Progress to t.
    for (const int j : active) {
      const auto u = static_cast<std::size_t>(j);
      JobState& s = state[u];
      if (!s.running) continue;
      const double dt = t - now;
      const double start = std::max(now, resume_at[u]);
      const double productive = std::max(0.0, t - start);
      // The job whose completion is t is done: exactly, whatever the rounding of start +
      // remaining / rate, which at large times can round to `now` and never make progress.
      const bool finishes = rate[u] > 0 && t >= start + s.remaining / rate[u];
      s.remaining = finishes ? 0.0 : std::max(0.0, s.remaining - rate[u] * productive);
      s.attained_gpu_s += s.placement.gpus * dt;
      s.executed_s += dt;
      gpu_seconds += s.placement.gpus * dt;
    }
    now = t;
    bool changed = false;
    // Completions (a millionth of the work left counts as done: rounding of rate x time).
    for (std::size_t k = 0; k < active.size();) {
      const auto u = static_cast<std::size_t>(active[k]);
      if (state[u].running && state[u].remaining <= 1e-6 * std::max(1.0, total[u]) && now >= resume_at[u]) {
        rec[u].end_s = now;
        rec[u].gpu_type = state[u].placement.gpu_type;
        rec[u].end_gpus = state[u].placement.gpus;
        rec[u].nodes = state[u].nodes;
        stop(active[k]);
        active.erase(active.begin() + static_cast<std::ptrdiff_t>(k));
        changed = true;
        if (options_.on_job_finished) options_.on_job_finished();
      } else {
        ++k;
      }
    }
    while (next_arrival < n && jobs_[next_arrival].arrival_s <= now) {
      state[next_arrival].waiting_since = jobs_[next_arrival].arrival_s;
      active.push_back(static_cast<int>(next_arrival++));
      changed = true;
    }
    if (interval > 0 && now >= next_round) changed = true;
    if (interval > 0 && (now >= next_round || !std::isfinite(next_round))) next_round = now + interval;
    if (!changed) continue;

    // Ask the policy, then apply: stop what it no longer wants where it is, start the rest.
    ClusterView view;
    view.now = now;
    view.cluster = &cluster_;
    view.free_gpus = free;
    view.throughput = &throughput_;
    for (const int j : active) view.active.push_back(&state[static_cast<std::size_t>(j)]);
    const std::map<int, Placement> want = scheduler_.schedule(view);
    ++result.scheduler_calls;
    for (const int j : active) {
      const JobState& s = state[static_cast<std::size_t>(j)];
      if (!s.running) continue;
      const auto it = want.find(j);
      if (it == want.end() || it->second.gpu_type != s.placement.gpu_type || it->second.gpus != s.placement.gpus) stop(j);
    }
    // Defragmenting migrations first (they free whole holes), then starts.
    for (const auto& [j, p] : want) {
      const auto u = static_cast<std::size_t>(j);
      JobState& s = state[u];
      if (!p.consolidate || !s.running || s.nodes <= cluster_.min_nodes(p.gpu_type, p.gpus)) continue;
      nodes.give(grant[u]);
      NodeAllocator::Grant g = nodes.take(p.gpu_type, p.gpus);
      const double r = throughput_.rate(*s.job, p.gpu_type, p.gpus, static_cast<int>(g.size()));
      if (g.size() < grant[u].size() &&
          time_left(u, r, options_.restart_overhead_s) < time_left(u, rate[u], std::max(0.0, resume_at[u] - now))) {
        close_allocs(u);
        grant[u] = std::move(g);
        open_alloc(u);
        s.nodes = static_cast<int>(grant[u].size());
        rate[u] = alone[u] = r;
        resume_at[u] = now + options_.restart_overhead_s;
        ++rec[u].restarts;
        ++result.migrations;
      } else {
        nodes.give(g);
        nodes.retake(grant[u]);
      }
    }
    for (const auto& [j, p] : want) {
      const auto u = static_cast<std::size_t>(j);
      ORRERY_CHECK(u < n, "scheduler placed job {} of {}", j, n);
      JobState& s = state[u];
      if (s.running) continue;
      ORRERY_CHECK(p.gpus > 0 && free.contains(p.gpu_type) && free[p.gpu_type] >= p.gpus, "{} placed job {} on {} {} GPUs that are not free",
                   scheduler_.name(), s.job->id, p.gpus, p.gpu_type);
      ORRERY_CHECK(s.job->allows(p.gpus), "{} placed job {} on {} GPUs, outside its range {}..{} (requested {})", scheduler_.name(), s.job->id,
                   p.gpus, s.job->min_gpus, s.job->max_gpus, s.job->gpus);
      NodeAllocator::Grant g = nodes.take(p.gpu_type, p.gpus);
      const double r = throughput_.rate(*s.job, p.gpu_type, p.gpus, static_cast<int>(g.size()));
      if (r <= 0) {  // cannot run there: stays queued
        nodes.give(g);
        continue;
      }
      free[p.gpu_type] -= p.gpus;
      grant[u] = std::move(g);
      open_alloc(u);
      s.running = true;
      s.placement = Placement{p.gpu_type, p.gpus, false};
      s.nodes = static_cast<int>(grant[u].size());
      if (s.nodes > cluster_.min_nodes(p.gpu_type, p.gpus)) ++result.spread_starts;
      rate[u] = alone[u] = r;
      if (rec[u].start_s < 0) {
        rec[u].start_s = now;
        resume_at[u] = now;
      } else {
        ++rec[u].restarts;
        resume_at[u] = now + options_.restart_overhead_s;
      }
    }
    if (options_.fabric.enabled()) {
      // Re-solve the fabric when the set of running multi-node jobs (or their nodes) changed.
      std::vector<int> spread;
      for (const int j : active) {
        if (state[static_cast<std::size_t>(j)].running && grant[static_cast<std::size_t>(j)].size() > 1) spread.push_back(j);
      }
      std::vector<NodeAllocator::Grant> grants;
      for (const int j : spread) grants.push_back(grant[static_cast<std::size_t>(j)]);
      if (spread != fabric_jobs || grants != fabric_grants) {
        const std::vector<double> share = fabric_shares(options_.fabric, static_cast<int>(nodes.names().size()), grants);
        ++result.fabric_solves;
        const double c = options_.fabric.comm_fraction;
        for (const int j : active) rate[static_cast<std::size_t>(j)] = alone[static_cast<std::size_t>(j)];
        for (std::size_t k = 0; k < spread.size(); ++k) {
          rate[static_cast<std::size_t>(spread[k])] /= (1 - c) + c / share[k];
          result.min_fabric_share = std::min(result.min_fabric_share, share[k]);
        }
        fabric_jobs = std::move(spread);
        fabric_grants = std::move(grants);
      }
    }
  }

  // Summary.
  std::vector<double> jct;
  double queue = 0;
  for (const JobRecord& r : rec) {
    if (r.end_s < 0) continue;
    jct.push_back(r.end_s - r.arrival_s);
    queue += r.start_s - r.arrival_s;
    result.makespan_s = std::max(result.makespan_s, r.end_s);
  }
  result.completed = static_cast<int>(jct.size());
  if (!jct.empty()) {
    result.avg_jct_s = std::accumulate(jct.begin(), jct.end(), 0.0) / static_cast<double>(jct.size());
    result.avg_queue_s = queue / static_cast<double>(jct.size());
    std::sort(jct.begin(), jct.end());
    const auto pct = [&](double q) { return jct[static_cast<std::size_t>(std::llround(q * static_cast<double>(jct.size() - 1)))]; };
    result.p50_jct_s = pct(0.5);
    result.p99_jct_s = pct(0.99);
  }
  // Makespan from the first arrival (traces keep their own clocks, which need not start at 0).
  const double first = n > 0 ? jobs_.front().arrival_s : 0;
  result.makespan_s = result.completed > 0 ? result.makespan_s - first : 0;
  result.gpu_utilization = result.makespan_s > 0 ? gpu_seconds / (cluster_.total_gpus() * result.makespan_s) : 0;
  result.jobs = std::move(rec);
  return result;
}

}  // namespace orrery::models
