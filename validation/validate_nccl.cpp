// The NCCL cost model (models/network/nccl.hpp) against the published nccl-tests sweeps in
// ../shared/data/nccl-tests-sweeps: a few physical parameters fitted in stages (inside a node,
// then each network kind on its own sweeps), and every sweep predicted by a fit without it.
#include "validation/validation.hpp"

#include "models/network/expert_dispatch.hpp"
#include "models/network/nccl.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"
#include "traces/csv.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace orrery::validation {

namespace {

using models::CollectiveOp;
using models::CommParams;
using models::CommShape;
using models::NcclRequest;

// One published sweep and the system it ran on, as this model states it (SOURCE.md of the
// data folder describes each; what a line adds to it is said beside it).
struct Sweep {
  const char* file;
  const char* topology;
  // NCCL settings the run used: "ring" or "nvls" (NCCL_ALGO), "nvls-off", "min-channels-24",
  // "no-nvswitch", "process-N" (one process drives N GPUs, nccl-tests -g N); "unstated": the
  // source does not state the fabric (assumed or inferred here), so the targets, which
  // are for stated fabrics, do not apply to it.
  const char* setting;
  const char* note;
};

// clang-format off
const std::vector<Sweep>& sweeps() {
  static const std::vector<Sweep> all = {
    // ALCF Sophia: DGX A100 nodes (8 x 200 Gb/s HDR InfiniBand, the DGX A100 datasheet; the repo records no fabric).
    {"a100_16gpu_2node_allgather_alcf-sophia.csv", "dgx-a100:nodes=2,nic=200Gb/s,net=ib", "unstated", "fabric assumed from the DGX A100 datasheet"},
    {"a100_16gpu_2node_allreduce_alcf-sophia.csv", "dgx-a100:nodes=2,nic=200Gb/s,net=ib", "unstated", "fabric assumed from the DGX A100 datasheet"},
    {"a100_16gpu_2node_alltoall_alcf-sophia.csv", "dgx-a100:nodes=2,nic=200Gb/s,net=ib", "unstated", "fabric assumed from the DGX A100 datasheet"},
    // p4de: 4 x 100 Gb/s EFA per node, so 50 Gb/s per GPU.
    {"a100_16gpu_2node_allreduce_aws-p4de-efa.csv", "dgx-a100:nodes=2,nic=50Gb/s,net=efa", "", ""},
    // Polaris: 4 A100 per node, 2 Slingshot 11 NICs of 200 Gb/s (100 Gb/s per GPU).
    {"a100_32gpu_8node_allreduce_alcf-polaris-slingshot.csv", "dgx-a100:nodes=8,gpus_per_node=4,nic=100Gb/s,net=slingshot", "", "NVLink mesh of 4 taken as a switch"},
    {"a100_32gpu_8node_alltoall_alcf-polaris-slingshot.csv", "dgx-a100:nodes=8,gpus_per_node=4,nic=100Gb/s,net=slingshot", "", "NVLink mesh of 4 taken as a switch"},
    {"a100_8gpu_1node_allreduce_azure-nda100v4-busbwonly.csv", "dgx-a100:nodes=1", "process-8", "busbw only (in place)"},
    {"b200_16gpu_2node_allgather_gcp-a4-dranet.csv", "dgx-b200:nodes=2,nic=400Gb/s,net=roce", "", ""},
    {"b200_16gpu_2node_sendrecv_together-use3a.csv", "dgx-b200:nodes=2,nic=400Gb/s,net=ib", "", ""},
    {"b200_2gpu_2node_allgather_gcp-a4-dranet.csv", "dgx-b200:nodes=2,gpus_per_node=1,nic=400Gb/s,net=roce", "", ""},
    // Two racks of 16 trays (64 GPUs each), NVLink inside the rack.
    {"gb200_128gpu_32node_allreduce_coreweave-2rack.csv", "nvl72:domains=2,gpus_per_domain=64,nic=400Gb/s,net=ib", "", ""},
    {"gb200_128gpu_32node_allreduce_oci-oke.csv", "nvl72:domains=2,gpus_per_domain=64,nic=400Gb/s,net=roce", "", ""},
    {"gb200_4gpu_1node_allreduce_azure-ndgb200v6-busbwonly.csv", "nvl72:domains=1,gpus_per_domain=4", "ring,process-4", "busbw only (in place), Ring"},
    {"gb200_72gpu_18node_allreduce_coreweave-nvl72.csv", "nvl72:domains=1", "nvls-off", "multi-node NVLink, NVLS off"},
    // p5: 3,200 Gb/s of EFA per node, 400 Gb/s per GPU.
    {"h100_16gpu_2node_allreduce_aws-p5-efa.csv", "dgx-h100:nodes=2,nic=400Gb/s,net=efa", "", ""},
    // A3 Mega: 8 x 200 Gb/s NICs with GPUDirect-TCPXO (GCP's machine description).
    {"h100_16gpu_2node_allreduce_gcp-a3mega.csv", "dgx-h100:nodes=2,nic=200Gb/s,net=tcpxo", "unstated", "platform from the repository's name"},
    {"h100_16gpu_2node_allreduce_ncclt309-ib400-ring.csv", "dgx-h100:nodes=2,net=ib", "ring,min-channels-24", "NCCL_ALGO=Ring, NCCL_MIN_CTAS=24"},
    {"h100_16gpu_2node_allreduce_ncclt309-xe9680-ib.csv", "dgx-h100:nodes=2,net=ib", "", ""},
    {"h100_32gpu_4node_allreduce_ncclt309-vm-ib.csv", "dgx-h100:nodes=4,net=ib", "", "VMs"},
    // Snellius: 4 H100 per node on an NVLink mesh (no NVSwitch, so no NVLS), 4 x 200 Gb/s IB per node.
    {"h100_4gpu_1node_allgather_snellius.csv", "dgx-h100:nodes=1,gpus_per_node=4", "no-nvswitch,process-4", "NVLink mesh of 4 taken as a switch"},
    {"h100_4gpu_1node_allreduce_snellius.csv", "dgx-h100:nodes=1,gpus_per_node=4", "no-nvswitch,process-4", "NVLink mesh of 4 taken as a switch"},
    {"h100_4gpu_1node_reducescatter_snellius.csv", "dgx-h100:nodes=1,gpus_per_node=4", "no-nvswitch,process-4", "NVLink mesh of 4 taken as a switch"},
    {"h100_64gpu_8node_allreduce_ncclt309-ib400-default.csv", "dgx-h100:nodes=8,net=ib", "", ""},
    {"h100_64gpu_8node_allreduce_ncclt309-ib400-minctas24.csv", "dgx-h100:nodes=8,net=ib", "min-channels-24", "NCCL_MIN_CTAS=24"},
    // xxrjun cluster01: the NIC is not stated; about one 400 Gb/s link per GPU by the data folder's inference.
    {"h100_80gpu_10node_allgather_xxrjun-cluster01.csv", "dgx-h100:nodes=10,net=ib", "unstated", "NIC inferred"},
    {"h100_80gpu_10node_allreduce_xxrjun-cluster01.csv", "dgx-h100:nodes=10,net=ib", "unstated", "NIC inferred"},
    {"h100_80gpu_10node_alltoall_xxrjun-cluster01.csv", "dgx-h100:nodes=10,net=ib", "unstated", "NIC inferred"},
    {"h100_80gpu_10node_reducescatter_xxrjun-cluster01.csv", "dgx-h100:nodes=10,net=ib", "unstated", "NIC inferred"},
    {"h100_80gpu_10node_sendrecv_xxrjun-cluster01.csv", "dgx-h100:nodes=10,net=ib", "unstated", "NIC inferred"},
    {"h100_8gpu_1node_allgather_together-ring.csv", "dgx-h100:nodes=1", "ring,nvls-off,process-8", "NCCL_ALGO=RING, NVLS off, one process"},
    {"h100_8gpu_1node_allgather_xxrjun-cluster01.csv", "dgx-h100:nodes=1", "", ""},
    {"h100_8gpu_1node_allreduce_aws-batch-p5.csv", "dgx-h100:nodes=1", "", ""},
    {"h100_8gpu_1node_allreduce_azure-ndh100v5-busbwonly.csv", "dgx-h100:nodes=1", "nvls,process-8", "busbw only (in place), NCCL_ALGO=NVLS"},
    {"h100_8gpu_1node_allreduce_together-ring.csv", "dgx-h100:nodes=1", "ring,nvls-off,process-8", "NCCL_ALGO=RING, NVLS off, one process"},
    {"h100_8gpu_1node_allreduce_xxrjun-cluster01.csv", "dgx-h100:nodes=1", "", ""},
    {"h100_8gpu_1node_alltoall_xxrjun-cluster01.csv", "dgx-h100:nodes=1", "", ""},
    {"h100_8gpu_1node_reducescatter_together-ring.csv", "dgx-h100:nodes=1", "ring,nvls-off,process-8", "NCCL_ALGO=RING, NVLS off, one process"},
    {"h100_8gpu_1node_reducescatter_xxrjun-cluster01.csv", "dgx-h100:nodes=1", "", ""},
    {"h100_8gpu_1node_sendrecv_xxrjun-cluster01.csv", "dgx-h100:nodes=1", "", ""},
    {"h100_8gpu_2node_allgather_snellius-ib.csv", "dgx-h100:nodes=2,gpus_per_node=4,nic=200Gb/s,net=ib", "no-nvswitch", "NVLink mesh of 4 taken as a switch"},
    {"h100_8gpu_2node_allreduce_snellius-ib.csv", "dgx-h100:nodes=2,gpus_per_node=4,nic=200Gb/s,net=ib", "no-nvswitch", "NVLink mesh of 4 taken as a switch"},
    {"h100_8gpu_2node_reducescatter_snellius-ib.csv", "dgx-h100:nodes=2,gpus_per_node=4,nic=200Gb/s,net=ib", "no-nvswitch", "NVLink mesh of 4 taken as a switch"},
    // A3 Ultra: 8 x 400 Gb/s RoCE NICs per node; these pods hold one GPU and one NIC.
    {"h200_2gpu_2node_allgather_gcp-a3ultra-dranet.csv", "dgx-h200:nodes=2,gpus_per_node=1,nic=400Gb/s,net=roce", "", ""},
    {"h200_2gpu_2node_allreduce_gcp-dranet-mpijob.csv", "dgx-h200:nodes=2,gpus_per_node=1,nic=400Gb/s,net=roce", "", ""},
    {"h200_8gpu_1node_allreduce_azure-ndh200v5-busbwonly.csv", "dgx-h200:nodes=1", "nvls,process-8", "busbw only (in place), NCCL_ALGO=NVLS"},
  };
  return all;
}
// clang-format on

// Sweeps left out, with the reason.
const std::vector<std::pair<const char*, const char*>>& left_out() {
  static const std::vector<std::pair<const char*, const char*>> all = {
      {"h200_16gpu_2node_allreduce_schmaustech-socket-1nic.csv",
       "TCP sockets over one shared interface whose speed is not stated; the builders give each GPU its own NIC"},
  };
  return all;
}

struct Point {
  double bytes;
  double measured_s;
  std::string line;  // file:line
};

// A sweep ready to predict: its shape, the request its settings make, and per row NCCL's choice
// (which depends on NCCL's constants only, so the fit never changes it).
struct Prepared {
  const Sweep* sweep;
  CommShape shape;
  NcclRequest request;
  bool unstated = false;  // the source does not state the fabric
  std::vector<Point> points;
  std::vector<std::pair<models::NcclAlgo, models::NcclProto>> choice;
};

CollectiveOp op_of(std::string_view file) {
  if (file.find("_allreduce_") != std::string_view::npos) return CollectiveOp::all_reduce;
  if (file.find("_allgather_") != std::string_view::npos) return CollectiveOp::all_gather;
  if (file.find("_reducescatter_") != std::string_view::npos) return CollectiveOp::reduce_scatter;
  if (file.find("_alltoall_") != std::string_view::npos) return CollectiveOp::all_to_all;
  if (file.find("_sendrecv_") != std::string_view::npos) return CollectiveOp::send_recv;
  throw sim::InternalError(fmt::format("no collective in the sweep name {}", file));
}

int ranks_of(std::string_view file) {
  const std::size_t u = file.find('_'), g = file.find("gpu_");
  return std::stoi(std::string(file.substr(u + 1, g - u - 1)));
}

Prepared prepare(const std::string& dir, const Sweep& s, std::map<std::string, std::unique_ptr<models::Topology>>& topologies) {
  Prepared p;
  p.sweep = &s;
  auto& topo = topologies[s.topology];
  if (!topo) topo = std::make_unique<models::Topology>(models::build_topology(s.topology));
  const CollectiveOp op = op_of(s.file);
  const int ranks = ranks_of(s.file);
  p.shape = models::comm_shape(*topo, op, ranks);
  const std::string setting = s.setting;
  p.unstated = setting.find("unstated") != std::string::npos;
  if (setting.find("no-nvswitch") != std::string::npos) p.shape.nvls = false;
  if (setting.find("nvls-off") != std::string::npos) p.request.nvls_enable = false;
  if (setting.find("ring") != std::string::npos) p.request.any_algo = false, p.request.algo = models::NcclAlgo::ring;
  if (setting.find("min-channels-24") != std::string::npos) p.request.min_channels = 24;
  if (setting.find("nvls,") != std::string::npos) p.request.any_algo = false, p.request.algo = models::NcclAlgo::nvls;
  if (const std::size_t at = setting.find("process-"); at != std::string::npos) p.request.gpus_per_process = std::stoi(setting.substr(at + 8));
  const traces::CsvTable t = traces::read_csv_file(dir + "/" + s.file);
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    Point pt;
    pt.bytes = t.number(r, "size_bytes");
    pt.line = fmt::format("{}:{}", s.file, t.lines[r]);
    if (!t.at(r, "time_us").empty()) {
      pt.measured_s = t.number(r, "time_us") * 1e-6;
    } else {
      // busbw-only rows: time = size x bus factor / busbw.
      const double busbw = t.number(r, "busbw_GBps") * 1e9;
      if (busbw <= 0) continue;
      pt.measured_s = pt.bytes * models::bus_factor(op, ranks) / busbw;
    }
    if (pt.measured_s <= 0) continue;
    p.points.push_back(pt);
    const models::NcclCost c = models::nccl_cost(p.shape, pt.bytes, CommParams::nccl(), p.request);
    p.choice.emplace_back(c.algo, c.proto);
  }
  return p;
}

double predict(const Prepared& p, std::size_t i, const CommParams& params) {
  return models::nccl_cost_of(p.shape, p.points[i].bytes, p.choice[i].first, p.choice[i].second, params, p.request).time_s;
}

// Mean over sweeps of each sweep's mean |log(predicted / measured)|: every sweep weighs the
// same, and the log keeps 8 B and 8 GiB rows on one scale (robust to outlier rows).
double loss(const std::vector<const Prepared*>& set, const CommParams& params) {
  if (set.empty()) return 0;
  double total = 0;
  for (const Prepared* p : set) {
    double s = 0;
    for (std::size_t i = 0; i < p->points.size(); ++i) s += std::fabs(std::log(predict(*p, i, params) / p->points[i].measured_s));
    total += s / static_cast<double>(std::max<std::size_t>(1, p->points.size()));
  }
  return total / static_cast<double>(set.size());
}

// Golden-section search of one parameter in [lo, hi], the others fixed.
void golden(double& x, double lo, double hi, const std::function<double()>& f) {
  const double phi = (std::sqrt(5.0) - 1) / 2;
  double a = lo, b = hi;
  double c = b - phi * (b - a), d = a + phi * (b - a);
  x = c;
  double fc = f();
  x = d;
  double fd = f();
  for (int i = 0; i < 40; ++i) {
    if (fc < fd) {
      b = d, d = c, fd = fc, c = b - phi * (b - a);
      x = c;
      fc = f();
    } else {
      a = c, c = d, fc = fd, d = a + phi * (b - a);
      x = d;
      fd = f();
    }
  }
  x = (a + b) / 2;
}

struct Fit {
  CommParams params;
  std::vector<std::string> stages;  // what each stage fitted on how many sweeps
};

// Stage 1, inside a node: the NVLink share per GPU class, NVLS's share, the launch; stage 2,
// per network kind on its own sweeps: the NIC share and the latency per network step. A
// parameter with no sweep to fit it keeps NCCL's value.
Fit fit(const std::vector<Prepared>& all, const std::string& without = "") {
  Fit out;
  CommParams& p = out.params;
  p = CommParams::nccl();
  p.physical_caps = true;
  std::vector<const Prepared*> intra;
  std::map<models::NetKind, std::vector<const Prepared*>> by_net;
  for (const Prepared& s : all) {
    if (s.sweep->file == without) continue;
    if (s.shape.nodes == 1) {
      intra.push_back(&s);
    } else {
      by_net[s.shape.net].push_back(&s);
    }
  }
  const auto has = [&](const std::vector<const Prepared*>& set, const std::function<bool(const Prepared&)>& pred) {
    return std::any_of(set.begin(), set.end(), [&](const Prepared* s) { return pred(*s); });
  };
  for (int round = 0; round < 3; ++round) {
    const auto f = [&] { return loss(intra, p); };
    for (int a = 1; a < 4; ++a) {
      const auto arch = static_cast<models::GpuArch>(a);
      if (has(intra, [&](const Prepared& s) { return s.shape.arch == arch; })) golden(p.nvlink_share[static_cast<std::size_t>(a)], 0.3, 1.0, f);
    }
    for (int a = 2; a < 4; ++a) {
      const auto arch = static_cast<models::GpuArch>(a);
      const bool nvls = has(intra, [&](const Prepared& s) {
        return s.shape.arch == arch && std::any_of(s.choice.begin(), s.choice.end(), [](const auto& c) { return c.first == models::NcclAlgo::nvls; });
      });
      if (nvls) golden(p.nvls_share[static_cast<std::size_t>(a)], 0.3, 1.0, f);
    }
    if (!intra.empty()) golden(p.launch_us, 0.0, 40.0, f);
    if (has(intra, [](const Prepared& s) { return s.request.gpus_per_process > 1; })) golden(p.launch_per_gpu_us, 0.0, 10.0, f);
  }
  out.stages.push_back(fmt::format("inside a node: {} sweeps", intra.size()));
  // Every network kind together first: what a kind with fewer than two sweeps keeps.
  std::vector<const Prepared*> inter;
  for (const auto& [net, set] : by_net) inter.insert(inter.end(), set.begin(), set.end());
  if (!inter.empty()) {
    double share = p.net_share[0], latency = 0;
    const auto f = [&] {
      p.net_share.fill(share);
      p.net_latency_us.fill(latency);
      return loss(inter, p);
    };
    for (int round = 0; round < 3; ++round) {
      golden(share, 0.2, 1.0, f);
      golden(latency, 0.0, 150.0, f);
    }
    p.net_share.fill(share);
    p.net_latency_us.fill(latency);
    out.stages.push_back(fmt::format("all networks: {} sweeps", inter.size()));
  }
  // All-to-all's cost per network peer, on every multi-node all-to-all sweep together.
  std::vector<const Prepared*> a2a;
  for (const Prepared* s : inter) {
    if (s->shape.op == CollectiveOp::all_to_all) a2a.push_back(s);
  }
  if (!a2a.empty()) {
    golden(p.p2p_peer_us, 0.0, 30.0, [&] { return loss(a2a, p); });
    out.stages.push_back(fmt::format("all-to-all per network peer: {} sweeps", a2a.size()));
  }
  for (const auto& [net, set] : by_net) {
    if (set.size() < 2) continue;
    const auto k = static_cast<std::size_t>(net);
    for (int round = 0; round < 3; ++round) {
      const auto f = [&, s = &set] { return loss(*s, p); };
      golden(p.net_share[k], 0.2, 1.0, f);
      golden(p.net_latency_us[k], 0.0, 150.0, f);
    }
    out.stages.push_back(fmt::format("{}: {} sweeps", models::to_string(net), set.size()));
  }
  // NVLS's share for a GPU class with no single-node NVLS sweep: from its NVLS-tree sweeps.
  for (int a = 2; a < 4; ++a) {
    const auto arch = static_cast<models::GpuArch>(a);
    const auto uses = [&](const Prepared& s, models::NcclAlgo algo) {
      return s.shape.arch == arch && std::any_of(s.choice.begin(), s.choice.end(), [&](const auto& c) { return c.first == algo; });
    };
    if (has(intra, [&](const Prepared& s) { return uses(s, models::NcclAlgo::nvls); })) continue;
    std::vector<const Prepared*> set;
    for (const Prepared* s : inter) {
      if (uses(*s, models::NcclAlgo::nvls_tree)) set.push_back(s);
    }
    if (set.empty()) continue;
    golden(p.nvls_share[static_cast<std::size_t>(a)], 0.3, 1.0, [&] { return loss(set, p); });
    out.stages.push_back(fmt::format("NVLS-tree on {}: {} sweeps", models::to_string(arch), set.size()));
  }
  return out;
}

struct Errors {
  double sum[4] = {0, 0, 0, 0};  // < 64 KiB, 64 KiB - 16 MiB, >= 16 MiB, all
  int count[4] = {0, 0, 0, 0};
  void add(double bytes, double err) {
    const int c = bytes < 65536 ? 0 : bytes < 16777216 ? 1 : 2;
    sum[c] += err, ++count[c];
    sum[3] += err, ++count[3];
  }
  double mape(int c) const { return count[c] > 0 ? sum[c] / count[c] : 0; }
  std::string cell(int c) const { return count[c] > 0 ? fmt::format("{:.1f}%", 100 * mape(c)) : "-"; }
};

// One of the targets over a sweep's rows: its MAPE, its worst row, and why it misses.
struct Target {
  const char* what;
  double limit;
  struct Row {
    const Point* point;
    double predicted;      // leave-one-out
    double in_sample;      // with the fit that saw the sweep
    double latency_share;  // of the leave-one-out time
  };
  std::vector<Row> rows;
  // Other sweeps of the same stated fabric and operation, with their smallest rows' times: the
  // latency floor the fabric alone does not set.
  std::string peers;
  void add(const Point& p, double predicted, double in_sample, double latency_share) { rows.push_back({&p, predicted, in_sample, latency_share}); }
  double mape(double Row::*field) const {
    double sum = 0;
    for (const Row& r : rows) sum += std::fabs(r.*field / r.point->measured_s - 1);
    return rows.empty() ? 0 : sum / static_cast<double>(rows.size());
  }
  bool missed() const { return !rows.empty() && mape(&Row::predicted) > limit; }
  std::string describe() const {
    const Row* worst = &rows.front();
    double bias = 0;
    for (const Row& r : rows) {
      const auto err = [](const Row& x) { return std::fabs(x.predicted / x.point->measured_s - 1); };
      if (err(r) > err(*worst)) worst = &r;
      bias += r.predicted / r.point->measured_s - 1;
    }
    bias /= static_cast<double>(rows.size());
    const double loo = mape(&Row::predicted), ins = mape(&Row::in_sample);
    std::string text = fmt::format("{} {:.1f}% (over {:.0f}%), worst {} of {}: {} against {} measured ({})", what, 100 * loo, 100 * limit,
                                   worst->point->line, sim::to_string(sim::Bytes(worst->point->bytes)),
                                   sim::to_string(sim::ceil_duration_ns(worst->predicted * 1e9)),
                                   sim::to_string(sim::ceil_duration_ns(worst->point->measured_s * 1e9)),
                                   worst->predicted > worst->point->measured_s ? "the model is slow" : "the model is fast");
    // Why: the measurement itself, the model's form, or what the other sweeps set.
    std::vector<double> measured;
    for (const Row& r : rows) measured.push_back(r.point->measured_s);
    const double floor = monotone_floor(measured);
    if (floor > limit) {
      const Row* a = &rows.front();  // the largest fall of the measured time with size
      const Row* b = &rows.front();
      double drop = 1;
      for (std::size_t i = 0; i < rows.size(); ++i) {
        for (std::size_t j = i + 1; j < rows.size(); ++j) {
          const double d = rows[j].point->measured_s / rows[i].point->measured_s;
          if (d < drop) drop = d, a = &rows[i], b = &rows[j];
        }
      }
      return text + fmt::format(". Reason: the measurement: no time that grows with the size gets under {:.1f}% on these rows ({} takes {}, "
                                "{} only {})",
                                100 * floor, sim::to_string(sim::Bytes(a->point->bytes)), sim::to_string(sim::ceil_duration_ns(a->point->measured_s * 1e9)),
                                sim::to_string(sim::Bytes(b->point->bytes)), sim::to_string(sim::ceil_duration_ns(b->point->measured_s * 1e9)));
    }
    if (ins <= limit) {
      return text + fmt::format(". Reason: the fit without it: fitted on it too the model meets the target ({:.1f}%), so the other sweeps of its "
                                "network kind set shares or latencies this fabric does not have",
                                100 * ins);
    }
    const bool latency = worst->latency_share >= 0.5;
    return text + fmt::format(". Reason: the model's form: {:.1f}% even fitted on it, {} on average ({:+.1f}%); at the worst row NCCL's latency is "
                              "{:.0f}% of the model's time, so its {} term is the one that misses (best monotone fit {:.1f}%){}",
                              100 * ins, bias > 0 ? "slow" : "fast", 100 * bias, 100 * worst->latency_share, latency ? "latency" : "bandwidth",
                              100 * floor, latency && !peers.empty() ? fmt::format("; the same fabric and operation elsewhere: {}", peers) : "");
  }
};

}  // namespace

// Pool adjacent violators into blocks whose level is their weighted median (weights 1 / m_i,
// the median that minimises sum |x - m_i| / m_i). NCCL's time for a size is the least over its
// (algorithm, protocol) pairs of times that each grow with the size, so it grows too.
double monotone_floor(const std::vector<double>& m) {
  struct Block {
    std::vector<double> values;  // measured times pooled
    double level = 0;
  };
  const auto median = [](std::vector<double> v) {  // weighted by 1/v: minimises sum |x - v| / v
    std::sort(v.begin(), v.end());
    double total = 0;
    for (const double x : v) total += 1 / x;
    double run = 0;
    for (const double x : v) {
      run += 1 / x;
      if (run >= total / 2) return x;
    }
    return v.back();
  };
  std::vector<Block> blocks;
  for (const double x : m) {
    blocks.push_back({{x}, x});
    while (blocks.size() > 1 && blocks[blocks.size() - 2].level > blocks.back().level) {
      Block b = std::move(blocks.back());
      blocks.pop_back();
      blocks.back().values.insert(blocks.back().values.end(), b.values.begin(), b.values.end());
      blocks.back().level = median(blocks.back().values);
    }
  }
  double sum = 0;
  for (const Block& b : blocks) {
    for (const double x : b.values) sum += std::fabs(b.level / x - 1);
  }
  return m.empty() ? 0 : sum / static_cast<double>(m.size());
}

CommParams fit_comm_params(const std::string& data_dir) {
  std::map<std::string, std::unique_ptr<models::Topology>> topologies;
  std::vector<Prepared> all;
  for (const Sweep& s : sweeps()) all.push_back(prepare(data_dir + "/nccl-tests-sweeps", s, topologies));
  return fit(all).params;
}

NcclValidationSummary validate_nccl(const std::string& data_dir, std::string& md, std::ostream& out, bool print_fit) {
  const std::string dir = data_dir + "/nccl-tests-sweeps";
  if (!std::filesystem::is_directory(dir)) {
    throw sim::InputError(dir, "", "expected the folder of published nccl-tests sweeps (see ../shared/data)");
  }
  std::map<std::string, std::unique_ptr<models::Topology>> topologies;
  std::vector<Prepared> all;
  for (const Sweep& s : sweeps()) all.push_back(prepare(dir, s, topologies));
  const Fit full = fit(all);

  NcclValidationSummary summary;
  summary.params = full.params;
  if (print_fit) {
    // What CommParams::fitted() must hold, to the last bit.
    for (const auto& [k, v] : full.params.named()) out << fmt::format("fit {} = {:.17g}\n", k, v);
  }
  Errors total, in_sample;
  std::string rows, misses;
  int stated = 0, met = 0;
  for (const Prepared& s : all) {
    const CommParams held = fit(all, s.sweep->file).params;
    Errors e, ins;
    // Against the targets: rows of 64 KiB and more, rows below, all-to-all rows of 1 MiB and more.
    Target big{"at 64 KiB and above", 0.10, {}, {}}, small{"below 64 KiB", 0.25, {}, {}}, a2a{"all-to-all at 1 MiB and above", 0.15, {}, {}};
    std::vector<std::string> peers;
    for (const Prepared& o : all) {
      if (&o == &s || o.unstated || o.shape.op != s.shape.op || std::string_view(o.sweep->topology) != s.sweep->topology) continue;
      for (const Point& here : s.points) {  // the smallest size below 64 KiB both measured
        if (here.bytes >= 65536) break;
        const auto there = std::find_if(o.points.begin(), o.points.end(), [&](const Point& q) { return q.bytes == here.bytes; });
        if (there == o.points.end()) continue;
        peers.push_back(fmt::format("{} at {} on {} (here {})", sim::to_string(sim::ceil_duration_ns(there->measured_s * 1e9)),
                                    sim::to_string(sim::Bytes(here.bytes)), o.sweep->file, sim::to_string(sim::ceil_duration_ns(here.measured_s * 1e9))));
        break;
      }
    }
    big.peers = small.peers = a2a.peers = fmt::format("{}", fmt::join(peers, ", "));
    for (std::size_t i = 0; i < s.points.size(); ++i) {
      const models::NcclCost c = models::nccl_cost_of(s.shape, s.points[i].bytes, s.choice[i].first, s.choice[i].second, held, s.request);
      const double predicted = c.time_s;
      const double err = std::fabs(predicted / s.points[i].measured_s - 1);
      const bool all_to_all = s.shape.op == CollectiveOp::all_to_all;
      const double fitted_too = predict(s, i, full.params);
      const double latency_share = predicted > 0 ? c.latency_s / predicted : 0;
      (s.points[i].bytes >= 65536 ? big : small).add(s.points[i], predicted, fitted_too, latency_share);
      if (all_to_all && s.points[i].bytes >= 1048576) a2a.add(s.points[i], predicted, fitted_too, latency_share);
      e.add(s.points[i].bytes, err);
      total.add(s.points[i].bytes, err);
      const double err_in = std::fabs(fitted_too / s.points[i].measured_s - 1);
      ins.add(s.points[i].bytes, err_in);
      in_sample.add(s.points[i].bytes, err_in);
    }
    const auto pick = [&](std::size_t i) {
      return fmt::format("{}/{}", models::to_string(s.choice[i].first), models::to_string(s.choice[i].second));
    };
    const std::string picks = s.points.empty() ? "-" : fmt::format("{} … {}", pick(0), pick(s.points.size() - 1));
    rows += fmt::format("| {} | `{}` | {} | {} | {} | {} | {} | {} | {} | {} |\n", s.sweep->file, s.sweep->topology, s.points.size(), picks,
                        e.cell(0), e.cell(1), e.cell(2), e.cell(3), ins.cell(3), s.sweep->note);
    summary.sweeps.push_back({s.sweep->file, static_cast<int>(s.points.size()), e.mape(3)});
    if (s.unstated) continue;
    ++stated;
    std::vector<std::string> why;
    for (const Target* t : {&big, &small, &a2a}) {
      if (t->missed()) why.push_back(t->describe());
    }
    if (why.empty()) {
      ++met;
    } else {
      misses += fmt::format("- {}: {}{}\n", s.sweep->file, fmt::join(why, "; "),
                            std::string_view(s.sweep->note).empty() ? "" : fmt::format(" ({})", s.sweep->note));
    }
  }
  for (int c = 0; c < 4; ++c) summary.loo_mape[c] = total.mape(c), summary.in_sample_mape[c] = in_sample.mape(c);
  summary.stated = stated;
  summary.meet_targets = met;

  md += "## NCCL cost model vs published nccl-tests sweeps\n\n";
  md += "Each sweep (../shared/data/nccl-tests-sweeps) is predicted by `models/network/nccl.hpp`: NCCL's tuning model\n"
        "(tuning.cc and enqueue.cc of NVIDIA/nccl: per algorithm and protocol latency, bandwidth ceilings, channels,\n"
        "its choice of algorithm and protocol by its own constants) with a few physical parameters fitted in stages:\n"
        "inside a node the NVLink share per GPU class, NVLS's share, a launch latency and the launch per further GPU\n"
        "when one process drives several (nccl-tests -g); then, for each network kind\n"
        "on its own sweeps, the share of the NICs' line rate and a latency per network step. Errors are of the time\n"
        "per row, **leave-one-out**: each sweep is predicted by a fit made without it (a sweep whose network kind has\n"
        "fewer than two other sweeps is predicted with the fit of all network kinds together).\n\n";
  md += fmt::format("**Leave-one-out error over {} rows of {} sweeps: {} below 64 KiB, {} from 64 KiB to 16 MiB, {} at 16 MiB and above, "
                    "{} in all** (in sample: {}).\n\n",
                    total.count[3], all.size(), total.cell(0), total.cell(1), total.cell(2), total.cell(3), in_sample.cell(3));
  md += "| sweep | topology | rows | NCCL's choice (smallest … largest) | < 64 KiB | 64 KiB–16 MiB | ≥ 16 MiB | all | in sample | note |\n";
  md += "|---|---|---|---|---|---|---|---|---|---|\n";
  md += rows;
  md += fmt::format("\n**Targets** (time MAPE, leave-one-out: at most 10% from 64 KiB up, 25% below, 15% for all-to-all from 1 MiB up) on the "
                    "{} sweeps whose fabric the source states: {} meet them. The others, each with the class it misses, the error there, "
                    "its worst row (the model's time against the measured one) and the reason, found by the validation itself: "
                    "*the measurement* when no time that grows with the size (as NCCL's does: the least over its algorithms of "
                    "times that each grow) fits the rows within the target (weighted isotonic regression gives the floor); "
                    "*the fit without it* when the model fitted on the sweep too meets the target; else *the model's form*, "
                    "with its bias and whether NCCL's latency or its bandwidth term dominates the worst row:\n\n",
                    stated, met);
  md += misses;
  md += "\nFitted parameters (`CommParams::fitted()`) beside NCCL's own:\n\n";
  md += "| parameter | fitted | NCCL |\n|---|---|---|\n";
  const auto nccl = CommParams::nccl().named();
  const auto fitted = full.params.named();
  for (std::size_t i = 0; i < fitted.size(); ++i) {
    md += fmt::format("| {} | {:.4g} | {:.4g} |\n", fitted[i].first, fitted[i].second, nccl[i].second);
  }
  md += "\nStages: " + fmt::format("{}", fmt::join(full.stages, "; ")) + ".\n\n";
  // DeepEP (models/network/expert_dispatch.hpp): its README's normal-kernel table, H800 with a
  // 400 Gb/s CX7 per GPU. The model's bottleneck bandwidth is the busiest link's bytes over its
  // data time; the EP 8 and 16 rows set its two shares.
  md += "DeepEP's normal kernels (`plan.moe_dispatch: deepep`), against its README's table (H800, CX7 400 Gb/s, DeepSeek-V3 "
        "pretraining shapes; github.com/deepseek-ai/DeepEP):\n\n| kernel | EP | measured bottleneck GB/s | model | role |\n|---|---|---|---|---|\n";
  for (const auto& [ep, measured] : std::vector<std::pair<int, double>>{{8, 153}, {16, 43}, {32, 58}, {64, 51}}) {
    const models::ExpertDispatch d{.ep = ep, .per_node = 8, .top_k = 8, .max_nodes = 4, .imbalance = 1.0};
    const models::DispatchCost c = models::deepep_dispatch(d, 4096, 7168, 200, 50);
    const double bytes = ep == 8 ? c.nvlink_bytes : c.rdma_bytes;
    const bool nvlink_bound = c.nvlink_bytes / (200e9 * models::DeepEpParams{}.nvlink_share) > c.rdma_bytes / (50e9 * models::DeepEpParams{}.rdma_share);
    const std::string role = ep == 8    ? "sets the NVLink share"
                             : ep == 16 ? "sets the RDMA share (43 of 50 GB/s)"
                                        : "prediction";
    md += fmt::format("| dispatch | {} | {:.0f} ({}) | {:.0f} ({}, {}-bound: {:.1f} NVLink and {:.1f} network copies per token) | {} |\n", ep, measured,
                      ep == 8 ? "NVLink" : "RDMA", bytes / (c.time_s - c.latency_s) / 1e9, ep == 8 ? "NVLink" : "RDMA",
                      nvlink_bound ? "NVLink" : "RDMA", c.nvlink_bytes / (4096.0 * 7168), c.rdma_bytes / (4096.0 * 7168), role);
  }
  md += "\nAt EP 16 this model finds NVLink forwarding the bottleneck where DeepEP reports RDMA: it counts every distinct "
        "expert GPU a token reaches inside each node as an NVLink copy; DeepEP's 58 GB/s at EP 32 (above the NIC's 50) "
        "counts bytes differently again. Open.\n";
  // HybridEP (NVIDIA's kernels in DeepEP's hybrid-ep branch, docs/README_Hybrid-EP.md, "GB200
  // Platform" table: 4096 tokens of 7168, top 8, 8 local experts, through the Torch API, BF16):
  // what Megatron's `hybridep` backend runs on GB200, and what `deepep` stands for there. Its
  // 32-SM rows (the SMs Megatron-Bridge's performance scripts give it: moe_hybridep_num_sms = 32)
  // set deepep_blackwell_params(); the 16-SM rows are predictions. The training step does not use
  // it yet (the text below says why).
  md += "\nHybridEP on GB200's NVLink (900 GB/s per direction), against its README's table (github.com/deepseek-ai/DeepEP, branch "
        "hybrid-ep, docs/README_Hybrid-EP.md: 4096 tokens of 7168, top 8, 8 local experts, Torch API, BF16 dispatch and combine; "
        "\"algorithm bandwidth\"). Its 32-SM rows, the SMs Megatron-Bridge's performance scripts give HybridEP, set a "
        "Blackwell share (`deepep_blackwell_params`: 0.619 x (8 / ranks)^0.122 of the line rate); DeepEP's H800 share beside it:\n\n"
        "| ranks | SMs | measured dispatch GB/s | measured combine GB/s | model GB/s | model / measured (mean of the two) | H800 share / measured | role |\n"
        "|---|---|---|---|---|---|---|---|\n";
  double worst = 0, fewest = 1e9, most = 0;  // the 32-SM rows' largest miss; the H800 share over the measurements
  for (const auto& [ranks, sms, dispatch, combine] : std::vector<std::tuple<int, int, double, double>>{
           {8, 32, 545.71, 568.94}, {16, 32, 523.48, 521.55}, {24, 32, 507.32, 483.76}, {32, 32, 484.22, 464.54}, {36, 32, 479.02, 447.89},
           {8, 16, 550.10, 538.44}, {16, 16, 472.84, 474.48}, {24, 16, 441.89, 444.40}, {32, 16, 485.50, 423.19}, {36, 16, 469.96, 418.27}}) {
    const models::ExpertDispatch d{.ep = ranks, .per_node = ranks, .top_k = 8, .max_nodes = 0, .imbalance = 1.0};
    const models::DispatchCost c = models::deepep_dispatch(d, 4096, 7168 * 2, 900, 50, models::deepep_blackwell_params(ranks));
    const models::DispatchCost h800 = models::deepep_dispatch(d, 4096, 7168 * 2, 900, 50);
    const double model = c.nvlink_bytes / (c.time_s - c.latency_s) / 1e9, mean = (dispatch + combine) / 2;
    const double old = h800.nvlink_bytes / (h800.time_s - h800.latency_s) / 1e9 / mean;
    if (sms == 32) worst = std::max(worst, std::abs(model / mean - 1));
    fewest = std::min(fewest, old), most = std::max(most, old);
    md += fmt::format("| {} | {} | {:.0f} | {:.0f} | {:.0f} | {:.2f} | {:.2f} | {} |\n", ranks, sms, dispatch, combine, model, model / mean, old,
                      sms == 32 ? "sets the share" : "prediction");
  }
  md += fmt::format("\nThe Blackwell share is within {:.1f}% of every 32-SM row; DeepEP's H800 share (153 of 200 GB/s) would be {:.0f} to "
                    "{:.0f}% faster than HybridEP runs over NVLink 5, where the kernels reach about half the line rate, less as more "
                    "ranks exchange. Training steps still price `deepep` dispatch at DeepEP's H800 share: with this one on "
                    "Blackwell (refits of 2026-12-06) the GB200 MoE runs on 256 GPUs, already too slow, got slower still, and "
                    "the tables crossed their bounds (Megatron-Core 2024 8.6% leave-one-out; without GPT-OSS's clamped GLU, "
                    "Megatron-Bridge's BF16 rows 10.4%).\n",
                    100 * worst, 100 * (fewest - 1), 100 * (most - 1));
  md += "\n";
  md += "Left out:\n\n";
  for (const auto& [file, why] : left_out()) md += fmt::format("- {}: {}\n", file, why);
  md += "\n";
  out << fmt::format("nccl: {} sweeps, {} rows; leave-one-out error {} (< 64 KiB {}, 64 KiB-16 MiB {}, >= 16 MiB {})\n", all.size(),
                     total.count[3], total.cell(3), total.cell(0), total.cell(1), total.cell(2));
  return summary;
}

}  // namespace orrery::validation
