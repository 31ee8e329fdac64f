#include "traces/chakra_replay.hpp"

#include "sim/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <map>
#include <tuple>

namespace orrery::traces {

namespace {

// One rank's own links, NVLink and NIC, one per direction (as the step emulator's ranks).
struct Links {
  sim::LinkId nvl_out, nvl_in, nic_out, nic_in;
};

// Where a node's dependencies enter it and where its dependants wait for it.
struct NodeTasks {
  sim::TaskId entry{}, exit{};
};

sim::Duration seconds(double s) { return sim::ceil_duration_ns(s * 1e9); }

class Replayer {
 public:
  Replayer(const ChakraWorkload& w, const ChakraReplayOptions& o)
      : w_(w), o_(o), n_(static_cast<int>(w.ranks.size())), rates_(models::link_rates(o.topology)), fabric_(o.topology, o.comm), network_(engine_) {
    const int gpus = models::cluster_gpus(o.topology);
    if (gpus != n_) {
      throw sim::InputError(o.topology, "", fmt::format("{} GPUs, but the workload has {} ranks (one per GPU)", gpus, n_));
    }
    for (int r = 0; r < n_; ++r) {
      links_.push_back({network_.add_link(sim::BytesPerSecond(rates_.nvlink), sim::Duration::zero()),
                        network_.add_link(sim::BytesPerSecond(rates_.nvlink), sim::Duration::zero()),
                        network_.add_link(sim::BytesPerSecond(rates_.nic), sim::Duration::zero()),
                        network_.add_link(sim::BytesPerSecond(rates_.nic), sim::Duration::zero())});
      tasks_.emplace_back(w.ranks[static_cast<std::size_t>(r)].nodes.size());
    }
    out_.compute_s.assign(static_cast<std::size_t>(n_), 0.0);
    out_.comm_s.assign(static_cast<std::size_t>(n_), 0.0);
  }

  ChakraReplay run() {
    for (int r = 0; r < n_; ++r) add_local_nodes(r);
    add_collectives();
    add_point_to_point();
    add_dependencies();
    const std::vector<sim::TaskId> cycle = g().find_cycle();
    if (!cycle.empty()) {
      throw sim::InputError(w_.ranks.front().path, "",
                            fmt::format("the trace deadlocks: {} waits, through {} tasks, on itself", g().name(cycle.front()), cycle.size()));
    }
    sim::Executor exec(engine_, g(), &network_);
    exec.start();
    engine_.run();
    ORRERY_CHECK(exec.finished(), "{} of {} tasks ran in an acyclic graph", exec.completed(), g().task_count());
    out_.makespan = exec.makespan();
    out_.spans = exec.spans();
    for (const auto& [task, rank] : compute_rank_) out_.compute_s[static_cast<std::size_t>(rank)] += g().duration(task).to_seconds();
    return std::move(out_);
  }

 private:
  sim::TaskGraph& g() { return out_.graph; }

  // Compute, memory and metadata nodes: tasks on the rank's own streams.
  void add_local_nodes(int r) {
    const EtRankTrace& t = w_.ranks[static_cast<std::size_t>(r)];
    const std::string device = fmt::format("rank{}", r);
    const sim::StreamId gpu = g().add_stream(device, "compute");
    std::optional<sim::StreamId> cpu, copy;
    for (std::size_t i = 0; i < t.nodes.size(); ++i) {
      const EtNode& n = t.nodes[i];
      const std::string name = fmt::format("rank{} {}", r, n.name.empty() ? fmt::format("node {}", n.id) : n.name);
      NodeTasks& nt = tasks_[static_cast<std::size_t>(r)][i];
      ++out_.nodes;
      // Host-side operators (is_cpu_op), of any type, run their recorded time on the CPU, as
      // ASTRA-sim issues them.
      switch (n.is_cpu_op ? EtNodeType::compute : n.type) {
        case EtNodeType::compute: {
          sim::StreamId s = gpu;
          if (n.is_cpu_op) {
            if (!cpu) cpu = g().add_stream(device, "cpu");
            s = *cpu;
          }
          nt.entry = nt.exit = g().add_compute(name, s, compute_time(t, i));
          if (!n.is_cpu_op) compute_rank_.emplace_back(nt.entry, r);
          break;
        }
        case EtNodeType::mem_load:
        case EtNodeType::mem_store: {
          // Host memory traffic: its bytes over the GPU's host link when it gives them.
          if (!copy) copy = g().add_stream(device, "host copy");
          const sim::Duration d = n.tensor_size && o_.gpu.host_link_bandwidth > 0
                                      ? seconds(static_cast<double>(*n.tensor_size) / o_.gpu.host_link_bandwidth)
                                      : sim::Duration::microseconds(static_cast<std::int64_t>(n.duration_micros));
          nt.entry = nt.exit = g().add_compute(name, *copy, d);
          break;
        }
        case EtNodeType::metadata:
        case EtNodeType::invalid: nt.entry = nt.exit = g().add_delay(name, sim::Duration::zero()); break;
        case EtNodeType::send:
        case EtNodeType::recv:
        case EtNodeType::collective: break;  // below
      }
    }
  }

  sim::Duration compute_time(const EtRankTrace& t, std::size_t i) const {
    const EtNode& n = t.nodes[i];
    if (!o_.recost) return sim::Duration::microseconds(static_cast<std::int64_t>(n.duration_micros));
    if (!n.num_ops && !n.tensor_size) {
      throw sim::InputError(t.path, et_node_where(t, i), "re-costing needs num_ops or tensor_size; the node has neither");
    }
    const models::RooflineParams& p = o_.roofline;
    const double flops = n.num_ops ? static_cast<double>(*n.num_ops) : 0.0;
    const double bytes = n.tensor_size ? static_cast<double>(*n.tensor_size) : 0.0;
    const double compute = flops / (o_.gpu.peak(models::DType::bf16).value() * p.gemm_efficiency);
    const double memory = bytes / (o_.gpu.hbm_bandwidth * p.memory_efficiency);
    return seconds(std::max(compute, memory)) + p.kernel_overhead;
  }

  // The k-th collective each member issues on a group is one collective.
  void add_collectives() {
    // (group, k) -> (rank, node index) of each member, in rank order.
    std::map<std::pair<std::string, std::size_t>, std::vector<std::pair<int, std::size_t>>> instances;
    std::map<std::string, std::map<int, std::size_t>> issued;  // group -> rank -> count
    for (int r = 0; r < n_; ++r) {
      const EtRankTrace& t = w_.ranks[static_cast<std::size_t>(r)];
      for (std::size_t i = 0; i < t.nodes.size(); ++i) {
        if (t.nodes[i].type != EtNodeType::collective || t.nodes[i].is_cpu_op) continue;
        std::size_t& k = issued[t.nodes[i].pg_name][r];
        instances[{t.nodes[i].pg_name, k++}].emplace_back(r, i);
      }
    }
    for (const auto& [group, counts] : issued) {
      const std::vector<int> members = members_of(group);
      for (const int m : members) {
        const std::size_t c = counts.count(m) ? counts.at(m) : 0;
        const std::size_t first = counts.begin()->second;
        if (c != first) {
          throw sim::InputError(w_.ranks[static_cast<std::size_t>(m)].path, "",
                                fmt::format("rank {} issues {} collectives on group {}, rank {} issues {}: every member must issue the same", m,
                                            c, group.empty() ? "of all ranks" : sim::quote(group), counts.begin()->first, first));
        }
      }
    }
    for (const auto& [key, parts] : instances) {
      const auto& [group, k] = key;
      const std::vector<int> members = members_of(group);
      const auto [r0, i0] = parts.front();
      const EtRankTrace& t0 = w_.ranks[static_cast<std::size_t>(r0)];
      const EtNode& n0 = t0.nodes[i0];
      for (const auto& [r, i] : parts) {
        const EtRankTrace& t = w_.ranks[static_cast<std::size_t>(r)];
        const EtNode& n = t.nodes[i];
        if (*n.comm_type != *n0.comm_type || *n.comm_size != *n0.comm_size) {
          throw sim::InputError(t.path, et_node_where(t, i),
                                fmt::format("collective #{} on group {} is comm_type {} of {} bytes here but comm_type {} of {} bytes on rank {} ({})", k + 1,
                                            group.empty() ? "of all ranks" : sim::quote(group), *n.comm_type, *n.comm_size, *n0.comm_type,
                                            *n0.comm_size, r0, et_node_where(t0, i0)));
        }
      }
      const int stride = stride_of(group, members, t0, i0);
      const int size = static_cast<int>(members.size());
      const double bytes = static_cast<double>(*n0.comm_size);
      const double isolated = size > 1 && bytes > 0 ? fabric_.collective(*collective_of(*n0.comm_type), bytes, size, stride) : 0.0;
      const bool over_nic = static_cast<long>(stride) * size > rates_.gpus_per_unit;
      const std::string label = fmt::format("{} #{} on {}", n0.name.empty() ? "collective" : n0.name, k + 1, group.empty() ? "all" : group);
      const sim::TaskId start = g().add_delay(label + " start", sim::Duration::zero());
      const sim::TaskId done = g().add_delay(label + " done", sim::Duration::zero());
      for (const auto& [r, i] : parts) {
        const Links& l = links_[static_cast<std::size_t>(r)];
        const std::array<sim::LinkId, 2> route = over_nic ? std::array{l.nic_out, l.nic_in} : std::array{l.nvl_out, l.nvl_in};
        const sim::TaskId x = g().add_transfer(fmt::format("rank{} {}", r, label), route, sim::Bytes(isolated * (over_nic ? rates_.nic : rates_.nvlink)));
        g().add_dependency(start, x);
        g().add_dependency(x, done);
        tasks_[static_cast<std::size_t>(r)][i] = {start, done};
        out_.comm_s[static_cast<std::size_t>(r)] += isolated;
      }
      ++out_.collectives;
    }
  }

  std::vector<int> members_of(const std::string& group) const {
    if (!group.empty()) return w_.groups.at(group);
    std::vector<int> all(static_cast<std::size_t>(n_));
    for (int r = 0; r < n_; ++r) all[static_cast<std::size_t>(r)] = r;
    return all;
  }

  // The spacing of a group's ranks, which must be even (Orrery costs a collective among ranks
  // `stride` apart).
  int stride_of(const std::string& group, const std::vector<int>& members, const EtRankTrace& t, std::size_t i) const {
    if (members.size() < 2) return 1;
    std::vector<int> sorted = members;
    std::sort(sorted.begin(), sorted.end());
    const int stride = sorted[1] - sorted[0];
    for (std::size_t j = 2; j < sorted.size(); ++j) {
      if (sorted[j] - sorted[j - 1] != stride) {
        throw sim::InputError(w_.groups_path.empty() ? t.path : w_.groups_path, group.empty() ? et_node_where(t, i) : "/" + group,
                              fmt::format("group {} has ranks {} and {} {} apart but {} and {} {} apart: Orrery costs collectives among evenly "
                                          "spaced ranks", sim::quote(group), sorted[0], sorted[1], stride, sorted[j - 1], sorted[j],
                                          sorted[j] - sorted[j - 1]));
      }
    }
    return stride;
  }

  // A send and the receive that names it (source, destination, tag), in order, are one transfer.
  void add_point_to_point() {
    using Key = std::tuple<int, int, std::int32_t>;  // src, dst, tag
    std::map<Key, std::deque<std::size_t>> sends, recvs;
    for (int r = 0; r < n_; ++r) {
      const EtRankTrace& t = w_.ranks[static_cast<std::size_t>(r)];
      for (std::size_t i = 0; i < t.nodes.size(); ++i) {
        const EtNode& n = t.nodes[i];
        if (n.is_cpu_op) continue;
        if (n.type == EtNodeType::send) sends[{r, *n.comm_dst, n.comm_tag.value_or(0)}].push_back(i);
        if (n.type == EtNodeType::recv) recvs[{*n.comm_src, r, n.comm_tag.value_or(0)}].push_back(i);
      }
    }
    const auto unmatched = [&](int rank, std::size_t i, std::string_view what) {
      const EtRankTrace& t = w_.ranks[static_cast<std::size_t>(rank)];
      throw sim::InputError(t.path, et_node_where(t, i), std::string(what));
    };
    for (auto& [key, list] : sends) {
      const auto [src, dst, tag] = key;
      std::deque<std::size_t>& other = recvs[key];
      while (!list.empty()) {
        if (other.empty()) unmatched(src, list.front(), fmt::format("a send to rank {} with tag {} that rank {} never receives", dst, tag, dst));
        const std::size_t si = list.front(), ri = other.front();
        list.pop_front(), other.pop_front();
        const EtRankTrace& ts = w_.ranks[static_cast<std::size_t>(src)];
        const EtRankTrace& td = w_.ranks[static_cast<std::size_t>(dst)];
        const EtNode& s = ts.nodes[si];
        const EtNode& d = td.nodes[ri];
        if (*s.comm_size != *d.comm_size) {
          unmatched(dst, ri, fmt::format("receives {} bytes from rank {}, which sends {} ({})", *d.comm_size, src, *s.comm_size, et_node_where(ts, si)));
        }
        const double bytes = static_cast<double>(*s.comm_size);
        const bool over_nic = src / rates_.gpus_per_unit != dst / rates_.gpus_per_unit;
        const double rate = over_nic ? rates_.nic : rates_.nvlink;
        const double alone = bytes > 0 ? fabric_.p2p(bytes, std::abs(dst - src)) : 0.0;
        const Links& a = links_[static_cast<std::size_t>(src)];
        const Links& b = links_[static_cast<std::size_t>(dst)];
        const std::array<sim::LinkId, 2> route = over_nic ? std::array{a.nic_out, b.nic_in} : std::array{a.nvl_out, b.nvl_in};
        const std::string label = fmt::format("{} rank{}->rank{}", s.name.empty() ? "send" : s.name, src, dst);
        const sim::TaskId meet = g().add_delay(label + " ready", sim::Duration::zero());
        const sim::TaskId x = g().add_transfer(label, route, sim::Bytes(bytes), seconds(std::max(0.0, alone - bytes / rate)));
        g().add_dependency(meet, x);
        tasks_[static_cast<std::size_t>(src)][si] = {meet, x};
        tasks_[static_cast<std::size_t>(dst)][ri] = {meet, x};
        out_.comm_s[static_cast<std::size_t>(src)] += alone;
        ++out_.transfers;
      }
    }
    for (const auto& [key, list] : recvs) {
      if (!list.empty()) {
        const auto [src, dst, tag] = key;
        unmatched(dst, list.front(), fmt::format("a receive from rank {} with tag {} that rank {} never sends", src, tag, src));
      }
    }
  }

  void add_dependencies() {
    for (int r = 0; r < n_; ++r) {
      const EtRankTrace& t = w_.ranks[static_cast<std::size_t>(r)];
      const std::vector<NodeTasks>& nt = tasks_[static_cast<std::size_t>(r)];
      for (std::size_t i = 0; i < t.nodes.size(); ++i) {
        for (const std::uint64_t d : t.nodes[i].data_deps) g().add_dependency(nt[t.index.at(d)].exit, nt[i].entry);
      }
    }
  }

  const ChakraWorkload& w_;
  const ChakraReplayOptions& o_;
  const int n_;
  const models::LinkRates rates_;
  models::FabricCosts fabric_;
  sim::Engine engine_;
  sim::FlowNetwork network_;
  std::vector<Links> links_;
  std::vector<std::vector<NodeTasks>> tasks_;
  std::vector<std::pair<sim::TaskId, int>> compute_rank_;
  ChakraReplay out_;
};

}  // namespace

ChakraReplay replay_chakra(const ChakraWorkload& workload, const ChakraReplayOptions& options) { return Replayer(workload, options).run(); }

ChakraWorkload chakra_from_step(const models::StepResult& result, int gpus) {
  const sim::TaskGraph& g = result.graph;
  ORRERY_CHECK(g.task_count() > 0 && !result.stream_rank.empty(), "chakra_from_step needs run_step with keep_graph");
  for (const int r : result.stream_rank) ORRERY_CHECK(r >= 0 && r < gpus, "chakra_from_step needs run_step without reuse (every rank simulated)");
  const std::size_t n_tasks = g.task_count();
  std::vector<const models::StepComm*> comm_of(n_tasks, nullptr);
  for (const models::StepComm& c : result.comms) comm_of[sim::index_of(c.task)] = &c;
  std::vector<int> rank_of(n_tasks, -1);
  for (std::uint32_t t = 0; t < n_tasks; ++t) {
    const sim::TaskId id{t};
    if (const auto s = g.stream(id)) rank_of[t] = result.stream_rank[sim::index_of(*s)];
    if (comm_of[t] != nullptr) rank_of[t] = comm_of[t]->rank;
    ORRERY_CHECK(rank_of[t] >= 0, "step task {} belongs to no rank", g.name(id));
  }
  ChakraWorkload w;
  w.ranks.resize(static_cast<std::size_t>(gpus));
  for (int r = 0; r < gpus; ++r) w.ranks[static_cast<std::size_t>(r)].path = fmt::format("rank {}", r);
  // Groups numbered from 1 in order of first use.
  std::map<std::tuple<int, int, int>, std::string> group_names;
  // Where each task's node is, per rank: (rank, index in that rank's nodes).
  std::vector<std::array<std::pair<int, std::size_t>, 2>> placed(n_tasks, {std::pair{-1, std::size_t{0}}, std::pair{-1, std::size_t{0}}});
  const auto add = [&](int rank, EtNode node, std::uint32_t t, int slot) {
    EtRankTrace& tr = w.ranks[static_cast<std::size_t>(rank)];
    placed[t][static_cast<std::size_t>(slot)] = {rank, tr.nodes.size()};
    tr.index.emplace(node.id, tr.nodes.size());
    tr.nodes.push_back(std::move(node));
  };
  for (std::uint32_t t = 0; t < n_tasks; ++t) {
    const sim::TaskId id{t};
    EtNode node;
    node.id = t;
    node.name = std::string(g.name(id));
    const models::StepComm* c = comm_of[t];
    if (c == nullptr) {
      ORRERY_CHECK(g.kind(id) == sim::TaskKind::compute, "step task {} is neither an op nor a recorded transfer", node.name);
      node.type = EtNodeType::compute;
      node.duration_micros = static_cast<std::uint64_t>(std::llround(static_cast<double>(g.duration(id).ns()) / 1e3));
      if (t < result.task_flops.size() && result.task_flops[t] > 0) node.num_ops = static_cast<std::int64_t>(std::llround(result.task_flops[t]));
      if (t < result.task_bytes.size() && result.task_bytes[t] > 0) node.tensor_size = static_cast<std::uint64_t>(std::llround(result.task_bytes[t]));
      add(rank_of[t], std::move(node), t, 0);
    } else if (!c->p2p) {
      node.type = EtNodeType::collective;
      node.comm_type = chakra_comm_type(c->op);
      node.comm_size = static_cast<std::int64_t>(std::llround(c->bytes));
      const auto key = std::tuple{c->group_first, c->group_size, c->group_stride};
      auto it = group_names.find(key);
      if (it == group_names.end()) {
        it = group_names.emplace(key, std::to_string(group_names.size() + 1)).first;
        std::vector<int>& members = w.groups[it->second];
        for (int j = 0; j < c->group_size; ++j) members.push_back(c->group_first + j * c->group_stride);
      }
      node.pg_name = it->second;
      add(c->rank, std::move(node), t, 0);
    } else {
      node.comm_size = static_cast<std::int64_t>(std::llround(c->bytes));
      node.comm_tag = static_cast<std::int32_t>(t & 0x7fffffffu);
      EtNode recv = node;
      node.type = EtNodeType::send;
      node.comm_dst = c->peer;
      recv.type = EtNodeType::recv;
      recv.comm_src = c->rank;
      add(c->rank, std::move(node), t, 0);
      add(c->peer, std::move(recv), t, 1);
    }
  }
  // Dependencies: on the rank of the dependant's node; a transfer feeds the receiver through its
  // receive node.
  for (const auto& [before, after] : g.dependencies()) {
    const std::uint32_t a = sim::index_of(before), b = sim::index_of(after);
    const auto [rb, ib] = placed[b][0];  // a send's dependencies are the sender's
    const auto& from = placed[a];
    std::optional<std::uint64_t> dep;
    for (const auto& [ra, ia] : from) {
      if (ra == rb) dep = w.ranks[static_cast<std::size_t>(ra)].nodes[ia].id;
    }
    ORRERY_CHECK(dep.has_value(), "step dependency {} -> {} crosses ranks outside a transfer", g.name(before), g.name(after));
    w.ranks[static_cast<std::size_t>(rb)].nodes[ib].data_deps.push_back(*dep);
  }
  return w;
}

}  // namespace orrery::traces
