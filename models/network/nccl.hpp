// What NCCL pays for a collective, in closed form: its tuning model (src/graph/tuning.cc and
// src/enqueue.cc of NVIDIA/nccl) with each algorithm's and protocol's latency and bandwidth,
// the channels it runs, and its choice of algorithm and protocol by size. NCCL chooses with
// its own constants (CommParams::nccl()); the time Orrery predicts uses the same formulas with
// a few physical parameters per network kind fitted on published nccl-tests sweeps
// (CommParams::fitted(), validation/validate_nccl.cpp, docs/validation.md).
//   CommShape shape = comm_shape(build_topology("dgx-h100:nodes=2"), CollectiveOp::all_reduce, 16);
//   NcclCost c = nccl_cost(shape, 1 << 20);   // c.algo, c.proto, c.channels, c.time_s
#pragma once

#include "models/network/collectives.hpp"
#include "models/network/topology.hpp"

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::models {

// NCCL's algorithms and protocols, in its order (nccl.h NCCL_ALGO_*, NCCL_PROTO_*).
enum class NcclAlgo : std::uint8_t { tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat };
enum class NcclProto : std::uint8_t { ll, ll128, simple };
inline constexpr int kNcclAlgos = 7;
inline constexpr int kNcclProtos = 3;
std::string_view to_string(NcclAlgo a);
std::string_view to_string(NcclProto p);
NcclAlgo parse_nccl_algo(std::string_view text, std::string_view source, std::string_view where);
NcclProto parse_nccl_proto(std::string_view text, std::string_view source, std::string_view where);

// NCCL's compute-capability classes (tuning.cc's compCapIndex).
enum class GpuArch : std::uint8_t { volta, ampere, hopper, blackwell };
std::string_view to_string(GpuArch a);
// The class of a GPU as gpu_link_spec() names it ("a100" -> ampere); InputError when unknown.
GpuArch gpu_arch(std::string_view gpu, std::string_view source, std::string_view where);

enum class NetKind : std::uint8_t { ib, roce, efa, tcpxo, slingshot, socket };
inline constexpr int kNetKinds = 6;
std::string_view to_string(NetKind k);
NetKind parse_net_kind(std::string_view text, std::string_view source, std::string_view where);

// What NCCL sees of a communicator: its ranks over NVLink domains (NCCL's nodes: a server, or
// an NVL72 rack with multi-node NVLink), the GPU class and the bandwidth inside and out.
struct CommShape {
  CollectiveOp op = CollectiveOp::all_reduce;
  int ranks = 0;
  int nodes = 1;               // NVLink domains the ranks span
  GpuArch arch = GpuArch::hopper;
  bool arch_assumed = false;   // the topology names no GPU: Hopper assumed
  double nvlink_GBps = 0;      // per GPU, per direction, line rate (0: no NVLink)
  double net_GBps = 0;         // per node: its ranks' NICs (each capped by its PCIe link), per direction
  int nics = 0;                // NICs of one node's ranks
  bool nvls = false;           // the NVSwitch reduces in the network (NVLink SHARP)
  NetKind net = NetKind::ib;
  double ppn() const { return static_cast<double>(ranks) / nodes; }  // NCCL's ppn: a mean when uneven
};

// The shape of the first `ranks` GPUs of a topology (0: all), or of `ranks` GPUs `stride` apart
// from the first, for an op (the NICs: those of the first node's ranks); InputError naming `where`
// in `source` on fewer than 2 ranks.
CommShape comm_shape(const Topology& topology, CollectiveOp op, int ranks = 0, std::string_view source = "<command line>",
                     std::string_view where = "--ranks", int stride = 1);

// The physical parameters of the model. NCCL's own (nccl()) are those it chooses by; the fitted
// ones (fitted()) are those Orrery predicts times with.
struct CommParams {
  // Share of the NVLink line rate a channel graph gets: NCCL's SMxx_NVLINK_BW per link over the
  // link's line rate (topo.h: 20.0 of 25 GB/s on A100, 20.6 of 25 on H100, 40.1 of 50 on B200).
  std::array<double, 4> nvlink_share{0.8, 0.8, 0.824, 0.802};
  // NVLS: the share of the NVLink graph bandwidth the switch's reduction reaches (tuning.cc
  // nvlsEfficiency: 0.85 Hopper, 0.74 Blackwell).
  std::array<double, 4> nvls_share{0.0, 0.0, 0.85, 0.74};
  // Per network kind: the share of the NICs' line rate a channel gets, and latency added to each
  // step that crosses the network (us), on top of NCCL's hwLatencies for NET.
  std::array<double, kNetKinds> net_share{};
  std::array<double, kNetKinds> net_latency_us{};
  // Start-up of one collective on the GPUs (us), added once (NCCL's model has none: the kernel
  // launch and the proxy's first post).
  double launch_us = 0;
  // Each further GPU one process drives (nccl-tests -g N): the thread launches the kernels one
  // after the other (us per GPU beyond the first).
  double launch_per_gpu_us = 0;
  // All-to-all: each peer across the network costs this much more (us) on the busiest GPU, the
  // proxy's post and completion of one more connection (NCCL's model has no all-to-all).
  double p2p_peer_us = 0;
  // Bound each algorithm by what its links carry: a tree's or NVLS-tree's algorithm bandwidth
  // by its node's NICs (every byte enters and leaves each node once). NCCL's model leaves this
  // out (with two nodes it prices trees at NVLink speed, which is why it picks them there), so
  // its choices hold but its times do not.
  bool physical_caps = true;
  // NCCL's own tuning model: each net channel at the speed NCCL's search assigns a NIC
  // (sm90SpeedArrayInter's 48 of a 50 GB/s port).
  static CommParams nccl();
  // Fitted on the published sweeps (the fit is in validation/validate_nccl.cpp, which checks that
  // these are its result).
  static CommParams fitted();
  // The parameter names and values in a fixed order, for reports and the fit.
  std::vector<std::pair<std::string, double>> named() const;
};

// What the caller fixes, as NCCL_ALGO / NCCL_PROTO / NCCL_NVLS_ENABLE / NCCL_MIN_NCHANNELS do.
struct NcclRequest {
  bool any_algo = true;
  NcclAlgo algo = NcclAlgo::ring;
  bool any_proto = true;
  NcclProto proto = NcclProto::simple;
  bool nvls_enable = true;
  int min_channels = 0;        // 0: NCCL's default
  int channels = 0;            // exactly this many (NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS); 0: the graph's
  int gpus_per_process = 1;    // nccl-tests -g: GPUs one process (thread) launches in turn
};

struct NcclCost {
  NcclAlgo algo = NcclAlgo::ring;
  NcclProto proto = NcclProto::simple;
  int channels = 0;            // of the communicator's graph for the algorithm
  int channels_used = 0;       // after NCCL's per-size reduction (enqueue.cc)
  double latency_s = 0;
  double busbw_Bps = 0;        // the model's bus bandwidth at this size
  double time_s = 0;
};

// Whether an algorithm and protocol can run the op on the shape, and if not why (empty: it can).
std::string nccl_unsupported(const CommShape& shape, NcclAlgo algo, NcclProto proto, const NcclRequest& request = {});

// The cost of one (algorithm, protocol) pair; requires nccl_unsupported() to be empty.
NcclCost nccl_cost_of(const CommShape& shape, double bytes, NcclAlgo algo, NcclProto proto, const CommParams& params,
                      const NcclRequest& request = {});

// NCCL's choice (the pair its model, with `choose_by`, finds fastest among those the request
// allows), costed with `params`. `bytes` is nccl-tests' size (collectives.hpp). InputError when
// the request allows nothing (NCCL's "no algorithm/protocol available").
NcclCost nccl_cost(const CommShape& shape, double bytes, const CommParams& params = CommParams::fitted(), const NcclRequest& request = {},
                   const CommParams& choose_by = CommParams::nccl());

// The flow plan (collectives.hpp) that runs what NCCL's algorithm does on the fabric: ring,
// tree, NVLS, NVLS-tree and PAT as themselves; all-to-all and send/recv as direct sends.
CollectiveAlgo flow_algo(NcclAlgo algo, CollectiveOp op);

// A collective as NCCL runs it, ready for the flow network: the flow plan of NCCL's choice
// (spec.algo), NCCL's latency paid before the first transfers in place of the links' own
// (spec.latency, spec.link_latency = false), and the links' rates as
// the model states them (`efficiency`): NVLink at the GPU class's share and the NICs at the
// network kind's, both of `params`, each scaled by what the chosen protocol reaches of Simple's
// bandwidth (LL's half, LL128's 92%), so that run_collective(topology, flows.spec,
// flows.efficiency) pays NCCL's latency and protocol ceiling and shares the links with
// whatever else runs on them. `spec` gives op, size and ranks; its algo is replaced.
struct NcclFlows {
  CollectiveSpec spec;
  LinkEfficiency efficiency;
  NcclCost nccl;  // the closed form of the same choice
};
NcclFlows nccl_flows(const Topology& topology, CollectiveSpec spec, const NcclRequest& request = {},
                     const CommParams& params = CommParams::fitted());

}  // namespace orrery::models
