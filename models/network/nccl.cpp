#include "models/network/nccl.hpp"

#include "sim/error.hpp"
#include "sim/unit_parse.hpp"
#include "sim/units.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace orrery::models {

using sim::InputError;

namespace {

constexpr std::array<std::string_view, kNcclAlgos> kAlgoNames = {"tree", "ring", "collnet-direct", "collnet-chain", "nvls", "nvls-tree", "pat"};
constexpr std::array<std::string_view, kNcclProtos> kProtoNames = {"ll", "ll128", "simple"};
constexpr std::array<std::string_view, kNetKinds> kNetNames = {"ib", "roce", "efa", "tcpxo", "slingshot", "socket"};

template <typename E, std::size_t N>
E parse_name(const std::array<std::string_view, N>& names, std::string_view text, std::string_view what, std::string_view source,
             std::string_view where) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == text) return static_cast<E>(i);
  }
  const std::vector<std::string> valid(names.begin(), names.end());
  throw InputError(std::string(source), std::string(where),
                   fmt::format("unknown {} {}{}; valid: {}", what, sim::quote(text), sim::did_you_mean(text, valid), fmt::join(valid, ", ")));
}

// ---------------------------------------------------------------------------------------
// NCCL's tuning constants: src/graph/tuning.cc (ncclTunerConstantsDefaults, nvlsEfficiency,
// treeCorrectionFactor), NVIDIA/nccl master 5067397c. Indices [algo][proto] in NCCL's order.

constexpr double kBaseLat[kNcclAlgos][kNcclProtos] = {
    {6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {8.0, 8.0, 8.0}};
enum Hw { kNvlink, kPci, kNet };
constexpr double kHwLat[3][kNcclAlgos][kNcclProtos] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}},
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}},
    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}},
};
// [arch][min(nodes, 3) - 1]; LL's multi-node entries are by CPU vendor (Intel assumed: index 0).
constexpr double kLlMaxBw[4][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
constexpr double kPerChMaxRingLl128[4][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {40, 40, 40}};
constexpr double kPerChMaxTreeLl128[4][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double kPerChMaxTree[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
constexpr double kPerChMaxNvlsTree[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};
constexpr double kTreeCorrection[kNcclProtos][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};
// The network post overhead of an inter-node ring step (getNetOverhead: 1 us on Intel, x3 for
// Simple).
constexpr double kNetOverheadUs = 1.0;

// src/graph/search.cc: the per-channel speeds the search tries inside a node (GB/s), by class.
constexpr std::array<double, 13> kSpeedIntra = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
constexpr std::array<double, 11> kSpeedIntraSm90 = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
constexpr std::array<double, 12> kSpeedIntraSm100 = {90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
// MAXCHANNELS / 2 (device.h: 64 channels, the search's duplication stops at half).
constexpr int kMaxGraphChannels = 32;
// src/transport/nvls.cc: NVLS_NCHANNELS_SM90 16, NVLS_NCHANNELS_SM100 32 (24 across NVL racks).
constexpr int kNvlsChannels[4] = {0, 0, 16, 32};
// device.h / comm.h: threads per channel and bytes per thread before NCCL adds a channel
// (enqueue.cc's per-size channel reduction).
constexpr int kMaxThreads[kNcclProtos] = {512, 640, 512};
constexpr int kThreadThreshold[kNcclProtos] = {8, 8, 64};

double launch_of(const CommParams& p, const NcclRequest& r) { return p.launch_us + (std::max(1, r.gpus_per_process) - 1) * p.launch_per_gpu_us; }

int size_index(int nodes) { return std::min(nodes, 3) - 1; }
int arch_index(GpuArch a) { return static_cast<int>(a); }
int log2i(std::int64_t x) {
  int l = -1;
  while (x > 0) x >>= 1, ++l;
  return l;
}

// The channel graph NCCL's search settles on, as this model states it: inside a node the
// fastest speed of the class's array that two channels fit into the GPU's NVLink share, as many
// channels as fit, then doubled (search.cc duplicates channels, halving each one's speed, up to
// 32); across nodes two channels per NIC. A ring runs at its slowest link (NCCL sets a ring's
// bwIntra = bwInter); a tree keeps both, and NCCL prices it by bwIntra up to two nodes.
struct Graph {
  int channels = 0;
  double ring_bw = 0;   // per channel, GB/s
  double intra_bw = 0;  // per channel inside the node
  double inter_bw = 0;  // per channel across nodes
  double intra = 0;     // the GPU's NVLink share, GB/s
  double inter = 0;     // the node's NIC share, GB/s
};

Graph channel_graph(const CommShape& s, const CommParams& p) {
  Graph g;
  g.intra = s.nvlink_GBps * p.nvlink_share[static_cast<std::size_t>(arch_index(s.arch))];
  if (g.intra <= 0) g.intra = 12.0;  // PCI_BW (topo.h): PCIe only
  const auto pick = [&](const auto& speeds) {
    for (const double v : speeds) {
      if (2 * v <= g.intra) return v;
    }
    return speeds.back();
  };
  const double speed = s.arch == GpuArch::blackwell ? pick(kSpeedIntraSm100) : s.arch == GpuArch::hopper ? pick(kSpeedIntraSm90) : pick(kSpeedIntra);
  const int found = std::max(1, static_cast<int>(std::floor(g.intra / speed)));
  g.channels = std::min(kMaxGraphChannels, 2 * found);
  // NCCL's graph moves speed x channels; the physical model the whole NVLink share.
  g.ring_bw = g.intra_bw = g.inter_bw = (p.physical_caps ? g.intra : speed * found) / g.channels;
  if (s.nodes > 1) {
    g.inter = s.net_GBps * p.net_share[static_cast<std::size_t>(s.net)];
    g.channels = std::clamp(2 * s.nics, 2, kMaxGraphChannels);
    g.intra_bw = g.intra / g.channels;
    g.inter_bw = g.inter / g.channels;
    g.ring_bw = std::min(g.intra_bw, g.inter_bw);
  }
  return g;
}

}  // namespace

std::string_view to_string(NcclAlgo a) { return kAlgoNames[static_cast<std::size_t>(a)]; }
std::string_view to_string(NcclProto p) { return kProtoNames[static_cast<std::size_t>(p)]; }
std::string_view to_string(NetKind k) { return kNetNames[static_cast<std::size_t>(k)]; }
std::string_view to_string(GpuArch a) {
  switch (a) {
    case GpuArch::volta: return "volta";
    case GpuArch::ampere: return "ampere";
    case GpuArch::hopper: return "hopper";
    case GpuArch::blackwell: return "blackwell";
  }
  return "?";
}

NcclAlgo parse_nccl_algo(std::string_view text, std::string_view source, std::string_view where) {
  return parse_name<NcclAlgo>(kAlgoNames, text, "NCCL algorithm", source, where);
}
NcclProto parse_nccl_proto(std::string_view text, std::string_view source, std::string_view where) {
  return parse_name<NcclProto>(kProtoNames, text, "NCCL protocol", source, where);
}
NetKind parse_net_kind(std::string_view text, std::string_view source, std::string_view where) {
  return parse_name<NetKind>(kNetNames, text, "net", source, where);
}

GpuArch gpu_arch(std::string_view gpu, std::string_view source, std::string_view where) {
  const GpuLinkSpec& spec = gpu_link_spec(gpu, source, where);  // InputError when unknown
  if (spec.name == "a100") return GpuArch::ampere;
  if (spec.name == "b200" || spec.name == "gb200") return GpuArch::blackwell;
  return GpuArch::hopper;  // h100, h200, h800, h20
}

CommShape comm_shape(const Topology& t, CollectiveOp op, int ranks, std::string_view source, std::string_view where, int stride) {
  const auto gpus = static_cast<int>(t.gpus().size());
  const int n = ranks > 0 ? ranks : gpus;
  if (n < 2 || static_cast<long>(n - 1) * stride >= gpus) {
    throw InputError(std::string(source), std::string(where), fmt::format("found {} ranks, expected 2 to {} (the GPUs of the topology)", n, gpus / stride));
  }
  const auto gpu = [&](int r) { return t.gpus()[static_cast<std::size_t>(r) * static_cast<std::size_t>(stride)]; };
  CommShape s;
  s.op = op;
  s.ranks = n;
  s.arch_assumed = t.gpu_type().empty();
  s.arch = s.arch_assumed ? GpuArch::hopper : gpu_arch(t.gpu_type(), "<topology>", "gpu");
  s.net = parse_net_kind(t.net_kind(), "<topology>", "net");
  // A GPU's NVLink domain: the NVSwitch it reaches over NVLink, or its server without one.
  const auto domain_of = [&](NodeIndex g) -> std::int64_t {
    for (const LinkIndex l : t.out_links(g)) {
      const TopoLink& link = t.link(l);
      if (link.kind == LinkKind::nvlink && t.node(link.to).kind == NodeKind::nvswitch) return link.to;
    }
    return -1 - t.node(g).server;
  };
  std::map<std::int64_t, int> members;
  for (int r = 0; r < n; ++r) ++members[domain_of(gpu(r))];
  s.nodes = static_cast<int>(members.size());
  const NodeIndex first = t.gpus().front();
  const std::int64_t home = domain_of(first);
  for (const LinkIndex l : t.out_links(first)) {
    const TopoLink& link = t.link(l);
    if (link.kind == LinkKind::nvlink) {
      s.nvlink_GBps += link.bandwidth.value() / 1e9;
      if (t.node(link.to).reduces_in_network()) s.nvls = true;
    }
  }
  // The NICs of the first node's ranks, each at the lesser of its PCIe link and its ports.
  for (int r = 0; r < n; ++r) {
    const NodeIndex g = gpu(r);
    if (domain_of(g) != home) continue;
    double direct = 0;  // a hand-written topology may wire a GPU to the network itself
    for (const LinkIndex l : t.out_links(g)) {
      if (t.link(l).kind == LinkKind::network) direct += t.link(l).bandwidth.value();
    }
    if (direct > 0) s.net_GBps += direct / 1e9, ++s.nics;
    for (const LinkIndex l : t.out_links(g)) {
      const TopoLink& pcie = t.link(l);
      if (t.node(pcie.to).kind != NodeKind::nic) continue;
      double ports = 0;
      for (const LinkIndex m : t.out_links(pcie.to)) {
        if (t.link(m).kind == LinkKind::network) ports += t.link(m).bandwidth.value();
      }
      if (ports <= 0) continue;
      s.net_GBps += std::min(pcie.bandwidth.value(), ports) / 1e9;
      ++s.nics;
    }
  }
  if (s.nodes > 1 && s.nics == 0) {
    throw InputError(std::string(source), std::string(where), fmt::format("the ranks span {} NVLink domains but their GPUs reach no NIC", s.nodes));
  }
  return s;
}

CommParams CommParams::nccl() {
  CommParams p;
  p.net_share.fill(48.0 / 50.0);  // search.cc: a 400 Gb/s port's channels run at 48 GB/s
  p.net_latency_us.fill(0.0);
  p.launch_us = 0;
  p.physical_caps = false;
  return p;
}

std::vector<std::pair<std::string, double>> CommParams::named() const {
  std::vector<std::pair<std::string, double>> out;
  for (int a = 1; a < 4; ++a) out.emplace_back(fmt::format("nvlink_share.{}", to_string(static_cast<GpuArch>(a))), nvlink_share[static_cast<std::size_t>(a)]);
  for (int a = 2; a < 4; ++a) out.emplace_back(fmt::format("nvls_share.{}", to_string(static_cast<GpuArch>(a))), nvls_share[static_cast<std::size_t>(a)]);
  for (int k = 0; k < kNetKinds; ++k) out.emplace_back(fmt::format("net_share.{}", kNetNames[static_cast<std::size_t>(k)]), net_share[static_cast<std::size_t>(k)]);
  for (int k = 0; k < kNetKinds; ++k) out.emplace_back(fmt::format("net_latency_us.{}", kNetNames[static_cast<std::size_t>(k)]), net_latency_us[static_cast<std::size_t>(k)]);
  out.emplace_back("launch_us", launch_us);
  out.emplace_back("launch_per_gpu_us", launch_per_gpu_us);
  out.emplace_back("p2p_peer_us", p2p_peer_us);
  return out;
}

std::string nccl_unsupported(const CommShape& s, NcclAlgo a, NcclProto p, const NcclRequest& request) {
  const CollectiveOp op = s.op;
  if (op == CollectiveOp::all_to_all || op == CollectiveOp::send_recv) {
    return a == NcclAlgo::ring && p == NcclProto::simple ? "" : "all-to-all and send/recv run as point-to-point sends (ring, simple)";
  }
  if ((op == CollectiveOp::broadcast || op == CollectiveOp::reduce) && a != NcclAlgo::ring) return "broadcast and reduce run only as rings";
  const bool gather_scatter = op == CollectiveOp::all_gather || op == CollectiveOp::reduce_scatter;
  if (gather_scatter && a != NcclAlgo::ring && a != NcclAlgo::pat && a != NcclAlgo::nvls && a != NcclAlgo::collnet_direct) {
    return "all-gather and reduce-scatter run as ring, PAT, NVLS or CollNet";
  }
  if (op == CollectiveOp::all_reduce && a == NcclAlgo::pat) return "PAT runs only all-gather and reduce-scatter";
  if ((a == NcclAlgo::nvls || a == NcclAlgo::nvls_tree || a == NcclAlgo::pat || a == NcclAlgo::collnet_direct || a == NcclAlgo::collnet_chain) &&
      p != NcclProto::simple) {
    return fmt::format("{} runs only the simple protocol", to_string(a));
  }
  if (a == NcclAlgo::collnet_direct || a == NcclAlgo::collnet_chain) return "CollNet needs a SHARP network plugin, which no topology here has";
  if (a == NcclAlgo::pat && s.ppn() != 1) return "PAT runs with one GPU per node only";
  if (a == NcclAlgo::nvls || a == NcclAlgo::nvls_tree) {
    if (!s.nvls) return "NVLS needs an NVSwitch that reduces in the network (NVLink SHARP, Hopper and later)";
    if (!request.nvls_enable) return "NVLS is disabled (NCCL_NVLS_ENABLE=0)";
    if (a == NcclAlgo::nvls && s.nodes > 1) return "NVLS across nodes needs CollNet; NCCL runs NVLS-tree there";
    if (a == NcclAlgo::nvls_tree && s.nodes == 1) return "NVLS-tree runs across nodes only";
    if (gather_scatter && s.nodes > 1) return "NVLS all-gather and reduce-scatter across nodes need CollNet";
  }
  // LL128 by default only where NCCL enables it: Hopper and later over NVLink and PXN paths;
  // Volta and Ampere over NVLink (tuning.cc, NCCL_LL128_C2C).
  if (p == NcclProto::ll128 && s.nvlink_GBps <= 0) return "LL128 needs NVLink inside the node";
  return "";
}

NcclCost nccl_cost_of(const CommShape& s, double bytes, NcclAlgo a, NcclProto p, const CommParams& params, const NcclRequest& request) {
  const std::size_t ai = static_cast<std::size_t>(a), pi = static_cast<std::size_t>(p);
  const int arch = arch_index(s.arch), idx = size_index(s.nodes);
  const int n = s.ranks, nodes = s.nodes;
  const double ppn = s.ppn();
  const Graph ring = channel_graph(s, params);
  NcclCost c;
  c.algo = a;
  c.proto = p;
  const double net_lat = params.net_latency_us[static_cast<std::size_t>(s.net)];
  if (s.op == CollectiveOp::all_to_all || s.op == CollectiveOp::send_recv) {
    // Point-to-point: each GPU's share of the bytes over NVLink to its node's peers and over
    // the network to the others, at the ring graph's rates; one Simple step of latency each way.
    const double intra_peers = s.op == CollectiveOp::send_recv ? (nodes == 1 ? 1.0 : 0.0) : ppn - 1;
    const double inter_peers = s.op == CollectiveOp::send_recv ? (nodes == 1 ? 0.0 : 1.0) : n - ppn;
    const double share = s.op == CollectiveOp::send_recv ? 1.0 : 1.0 / n;
    const double nic = nodes > 1 ? ring.inter / ppn : 1.0;
    const double intra_s = bytes * share * intra_peers / (ring.intra * 1e9);
    const double inter_s = nodes > 1 ? bytes * share * inter_peers / (nic * 1e9) : 0.0;
    c.channels = c.channels_used = ring.channels;
    c.latency_s = (kBaseLat[1][2] + kHwLat[kNvlink][1][2] + (nodes > 1 ? kHwLat[kNet][1][2] + net_lat : 0.0) + launch_of(params, request)) * 1e-6;
    c.latency_s += (nodes > 1 ? inter_peers * params.p2p_peer_us : 0.0) * 1e-6;
    c.time_s = c.latency_s + std::max(intra_s, inter_s);
    c.busbw_Bps = c.time_s > 0 ? bytes / c.time_s * bus_factor(s.op, n) : 0;
    return c;
  }
  const bool all_reduce = s.op == CollectiveOp::all_reduce;
  const int nsteps = all_reduce ? 2 * (n - 1) : (s.op == CollectiveOp::all_gather || s.op == CollectiveOp::reduce_scatter) ? n - 1 : n;
  // The graph this algorithm runs on.
  int channels = ring.channels;
  double bw = a == NcclAlgo::tree ? (nodes <= 2 ? ring.intra_bw : ring.inter_bw) : ring.ring_bw;
  if (a == NcclAlgo::nvls || a == NcclAlgo::nvls_tree) {
    channels = kNvlsChannels[arch];
    double intra = ring.intra / channels * params.nvls_share[static_cast<std::size_t>(arch)] * (channels - 1) / channels;
    intra *= all_reduce ? 2.0 : (ppn - 1) / ppn;
    const double inter = nodes > 1 ? ring.inter / channels * (nodes <= 2 && a == NcclAlgo::nvls_tree ? 2 : 1) : intra;
    bw = std::min(intra, inter);
    if (a == NcclAlgo::nvls_tree) bw = std::min(bw, kPerChMaxNvlsTree[arch][idx]);
  }
  if (request.channels > 0 && request.channels != channels) {
    // Fewer channels than the graph move less; more duplicate the graph's (search.cc), sharing
    // its bandwidth.
    bw *= static_cast<double>(std::min(request.channels, channels)) / request.channels;
    channels = request.channels;
  }
  double busbw = channels * bw;
  if (a == NcclAlgo::ring && p == NcclProto::ll) busbw = std::min(kLlMaxBw[arch][idx], busbw * .5);
  if (a == NcclAlgo::ring && p == NcclProto::ll128) busbw = std::min(busbw * 0.92, channels * kPerChMaxRingLl128[arch][idx]);
  if (a == NcclAlgo::tree && all_reduce) busbw = std::min(busbw * .92, channels * kPerChMaxTree[arch][idx]);
  if (a == NcclAlgo::tree && p == NcclProto::ll) busbw = std::min(busbw / 3.8, kLlMaxBw[arch][idx]);
  if (a == NcclAlgo::tree && p == NcclProto::ll128) busbw = std::min(busbw * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), channels * kPerChMaxTreeLl128[arch][idx]);
  if (a == NcclAlgo::pat) busbw *= .75;
  // Bus to algorithm bandwidth (tuning.cc), GB/s.
  double algbw = busbw;
  if (!(a != NcclAlgo::ring && (s.op == CollectiveOp::all_gather || s.op == CollectiveOp::reduce_scatter))) {
    algbw *= a == NcclAlgo::ring || a == NcclAlgo::nvls || a == NcclAlgo::nvls_tree ? static_cast<double>(n) / nsteps : 0.5;
  }
  // Latency (us).
  const int intra_hw = s.nvlink_GBps > 0 ? kNvlink : kPci;
  double intra_lat = kHwLat[intra_hw][ai][pi];
  double inter_lat = (ppn == 1 ? kHwLat[kNet][0][pi] : kHwLat[kNet][ai][pi]) + net_lat;
  if (p == NcclProto::simple) inter_lat += net_lat;  // the flush after the receive
  double lat = kBaseLat[ai][pi];
  switch (a) {
    case NcclAlgo::ring:
      if (s.op == CollectiveOp::broadcast || s.op == CollectiveOp::reduce) {
        lat += kHwLat[nodes == 1 ? intra_hw : kNet][ai][pi];
      } else {
        if (nodes > 1) intra_lat = std::max(intra_lat, kNetOverheadUs * (p == NcclProto::simple ? 3 : 1));
        const int inter_steps = nodes == 1 ? 0 : all_reduce ? 2 * (nodes - 1) : nodes - 1;
        lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
      }
      break;
    case NcclAlgo::tree:
      if (all_reduce) lat += 2 * ((ppn - 1) * intra_lat + log2i(nodes) * inter_lat);
      break;
    case NcclAlgo::nvls:
      lat = intra_lat + (nodes > 1 ? inter_lat : 0.0);
      break;
    case NcclAlgo::nvls_tree:
      lat += intra_lat + 2 * log2i(nodes) * inter_lat;
      break;
    case NcclAlgo::pat:
      lat += log2i(nodes) * (inter_lat / 3.5) + n * 2.8;
      break;
    case NcclAlgo::collnet_direct:
    case NcclAlgo::collnet_chain: break;
  }
  // ncclTopoGetAlgoTime: the tree's correction by size, the ring's multi-node plateau.
  const auto total = static_cast<std::int64_t>(bytes);
  const int log_size = log2i(total >> 6);
  if (a == NcclAlgo::tree && all_reduce && log_size >= 0 && log_size < 23) algbw *= kTreeCorrection[pi][log_size];
  if (params.physical_caps && nodes > 1 && (a == NcclAlgo::tree || a == NcclAlgo::nvls_tree)) algbw = std::min(algbw, ring.inter);
  if (a == NcclAlgo::ring && p == NcclProto::simple && nodes > 1 && all_reduce && bytes / (channels * n) >= 64) {
    lat *= arch < arch_index(GpuArch::ampere) ? 1.9 : 1.4;
  }
  // enqueue.cc: fewer channels for small sizes (ring and tree); NVLS runs its own.
  int used = channels;
  double share = 1.0;  // of the graph's channels that move the bytes
  if (a == NcclAlgo::ring || a == NcclAlgo::tree) {
    const double threshold = kThreadThreshold[pi] * (a == NcclAlgo::ring && p == NcclProto::ll ? n : 1);
    const int threads = a == NcclAlgo::ring && p == NcclProto::simple && ring.ring_bw * channels <= 12.0 ? 256 : kMaxThreads[pi];
    const double per_channel = threads * threshold;
    while (used > 1 && bytes < used * per_channel) --used;
    // The time: each channel (one thread block) moves its share at its rate. Counted as a
    // fraction (bytes / per_channel) rather than whole channels, so that the time never falls
    // as the size grows (whole channels make a saw-tooth of about one channel's worth).
    share = std::clamp(bytes / per_channel, 1.0, static_cast<double>(channels)) / channels;
  }
  if (request.min_channels > used) {
    used = std::min(channels, request.min_channels);
    share = std::max(share, static_cast<double>(used) / channels);
  }
  // NCCL's model prices the full graph; fewer channels move the same bytes more slowly.
  const double rate = algbw * share;
  c.channels = channels;
  c.channels_used = used;
  c.latency_s = (lat + launch_of(params, request)) * 1e-6;
  c.time_s = c.latency_s + (rate > 0 ? bytes / (rate * 1e9) : std::numeric_limits<double>::infinity());
  c.busbw_Bps = bytes / c.time_s * bus_factor(s.op, n);
  return c;
}

CollectiveAlgo flow_algo(NcclAlgo algo, CollectiveOp op) {
  if (op == CollectiveOp::all_to_all || op == CollectiveOp::send_recv) return CollectiveAlgo::direct;
  switch (algo) {
    case NcclAlgo::tree: return CollectiveAlgo::tree;
    case NcclAlgo::nvls: return CollectiveAlgo::nvls;
    case NcclAlgo::nvls_tree: return CollectiveAlgo::nvls_tree;
    case NcclAlgo::pat: return CollectiveAlgo::pat;
    case NcclAlgo::ring:
    case NcclAlgo::collnet_direct:
    case NcclAlgo::collnet_chain: return CollectiveAlgo::ring;
  }
  return CollectiveAlgo::ring;
}

NcclFlows nccl_flows(const Topology& topology, CollectiveSpec spec, const NcclRequest& request, const CommParams& params) {
  const CommShape shape = comm_shape(topology, spec.op, spec.ranks, "<command line>", "--ranks", spec.stride);
  NcclFlows f;
  f.nccl = nccl_cost(shape, spec.size.value(), params, request);
  spec.algo = flow_algo(f.nccl.algo, spec.op);
  spec.latency = sim::ceil_duration_ns(f.nccl.latency_s * 1e9);
  spec.link_latency = false;  // NCCL's hardware latencies hold the wire's
  // The protocol's ceiling: its bandwidth over Simple's for the same algorithm and size.
  double ceiling = 1.0;
  if (f.nccl.proto != NcclProto::simple && nccl_unsupported(shape, f.nccl.algo, NcclProto::simple, request).empty()) {
    const double bytes = spec.size.value();
    const NcclCost simple = nccl_cost_of(shape, bytes, f.nccl.algo, NcclProto::simple, params, request);
    const double own = f.nccl.time_s - f.nccl.latency_s, simple_s = simple.time_s - simple.latency_s;
    if (own > 0 && simple_s > 0) ceiling = std::min(1.0, simple_s / own);
  }
  f.efficiency.nvlink = params.nvlink_share[static_cast<std::size_t>(shape.arch)] * ceiling;
  f.efficiency.network = params.net_share[static_cast<std::size_t>(shape.net)] * ceiling;
  f.efficiency.pcie = ceiling;
  f.spec = std::move(spec);
  return f;
}

NcclCost nccl_cost(const CommShape& s, double bytes, const CommParams& params, const NcclRequest& request, const CommParams& choose_by) {
  NcclCost best;
  double best_time = std::numeric_limits<double>::infinity();
  std::string why;
  for (int ai = 0; ai < kNcclAlgos; ++ai) {
    const auto a = static_cast<NcclAlgo>(ai);
    if (!request.any_algo && a != request.algo) continue;
    for (int pi = 0; pi < kNcclProtos; ++pi) {
      const auto p = static_cast<NcclProto>(pi);
      if (!request.any_proto && p != request.proto) continue;
      const std::string reason = nccl_unsupported(s, a, p, request);
      if (!reason.empty()) {
        if (why.empty() || p == NcclProto::simple) why = reason;  // the simple protocol's says most
        continue;
      }
      const double t = nccl_cost_of(s, bytes, a, p, choose_by, request).time_s;
      if (t < best_time) {
        best_time = t;
        best.algo = a;
        best.proto = p;
      }
    }
  }
  if (!std::isfinite(best_time)) {
    throw InputError("<command line>", "--algo",
                     fmt::format("no NCCL algorithm and protocol runs {} on {} ranks over {} node(s) as asked: {}", to_string(s.op), s.ranks,
                                 s.nodes, why));
  }
  return nccl_cost_of(s, bytes, best.algo, best.proto, params, request);
}

}  // namespace orrery::models

namespace orrery::models {

// Fitted by `orrery validate --only nccl --fit` on the published sweeps named in
// validation/validate_nccl.cpp (robust fit of log time, each net kind on its own sweeps); the
// validation test checks these are what the fit returns.
CommParams CommParams::fitted() {
  CommParams p = nccl();
  p.physical_caps = true;
  // tcpxo and socket have fewer than two sweeps: the fit of all network kinds together.
  // BEGIN FITTED (scripts/refit-nccl.py writes this block)
  p.nvlink_share = {0.8, 0.75113136451867746, 0.77869742257080998, 0.92432118923731432};
  p.nvls_share = {0.0, 0.0, 0.68630139931001399, 0.42758997563574314};
  p.net_share = {0.80867164091176102, 0.63343063600234206, 0.7179211618827781, 0.78122172766760367, 0.35050460979669062, 0.78122172766760367};
  p.net_latency_us = {2.1622218920110381, 10.950907365830856, 60.031859606275731, 9.0686260716476745, 0.028189904842672878, 9.0686260716476745};
  p.launch_us = 5.2703454699849424;
  p.launch_per_gpu_us = 1.5649482992783503;
  p.p2p_peer_us = 3.402574171116127;
  // END FITTED
  return p;
}

}  // namespace orrery::models
