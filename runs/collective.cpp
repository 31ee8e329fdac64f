#include "runs/runs.hpp"
#include "runs/options.hpp"
#include "runs/report_out.hpp"

#include "models/network/collectives.hpp"
#include "models/network/nccl.hpp"
#include "sim/unit_parse.hpp"
#include "traces/atomic_file.hpp"
#include "reports/chrome_trace.hpp"
#include "traces/csv.hpp"
#include "reports/report.hpp"
#include "traces/topology_json.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

#include <cmath>
#include <ostream>

namespace orrery::runs {

namespace {
// One message of at most 1 PiB: over 3,000 times the largest GPU memory (288 GB).
constexpr sim::Bytes kMaxMessage{0x1p50};
constexpr std::string_view kMaxMessageReason = "over 3,000 times the largest GPU memory";
// 16,777,216 transfers: a plan of about 1 GB, hours of simulation; 1,024 GPUs all-to-all on 8
// channels is half of it.
constexpr std::size_t kMaxTransfers = std::size_t{1} << 24;
// Per-pair sizes are an n x n table.
constexpr std::size_t kMaxAlltoallvRanks = 4096;
}  // namespace

void collective(const CollectiveOptions& o, std::ostream& out) {
  check_outputs({{"--trace", o.trace_path}, {"--report", o.report_path}});
  const models::Topology topology = traces::load_topology(o.topology);
  models::CollectiveSpec spec;
  spec.op = models::parse_collective_op(o.op, "<command line>", "--op");
  spec.size = sim::parse_bytes(o.size, {"<command line>", "--size"});
  if (spec.size > kMaxMessage) {
    throw sim::InputError("<command line>", "--size",
                          fmt::format("found {}, expected at most 1 PiB ({})", sim::quote(o.size), kMaxMessageReason));
  }
  const auto gpus = static_cast<int>(topology.gpus().size());
  if (o.ranks < 0 || o.ranks == 1 || o.ranks > gpus) {
    throw sim::InputError("<command line>", "--ranks",
                          fmt::format("found {}, expected 0 (all GPUs) or 2 to {} (the GPUs of the topology)", o.ranks, gpus));
  }
  // NCCL runs at most 64 channels (MAXCHANNELS); pieces finer than 1/1024 of a step only
  // multiply the flows of a fluid model.
  if (o.channels != -1 && (o.channels < 1 || o.channels > 64)) {
    throw sim::InputError("<command line>", "--channels",
                          fmt::format("found {}, expected 1 to 64 (NCCL runs at most 64 channels; leave it out for NCCL's own)", o.channels));
  }
  if (o.chunks < 1 || o.chunks > 1024) {
    throw sim::InputError("<command line>", "--chunks",
                          fmt::format("found {}, expected 1 to 1024 (finer pieces only multiply the flows)", o.chunks));
  }
  spec.max_transfers = kMaxTransfers;
  spec.ranks = o.ranks;
  spec.channels = std::max(0, o.channels);
  spec.chunks = o.chunks;
  spec.root = o.root;
  spec.peer = o.peer;
  spec.quantum = o.quantum == "0" ? sim::Duration::zero() : sim::parse_duration(o.quantum, {"<command line>", "--quantum"});
  if (!o.alltoallv_path.empty()) {
    if (spec.op != models::CollectiveOp::all_to_all) {
      throw sim::InputError("<command line>", "--alltoallv", "per-pair sizes need --op all-to-all");
    }
    const traces::CsvTable csv = traces::read_csv_file(o.alltoallv_path);
    const auto n = static_cast<std::size_t>(spec.ranks > 0 ? spec.ranks : gpus);
    if (n > kMaxAlltoallvRanks) {
      throw sim::InputError("<command line>", "--alltoallv",
                            fmt::format("{} ranks, expected at most {} for per-pair sizes (a table of n x n pairs)", n, kMaxAlltoallvRanks));
    }
    spec.pair_bytes.assign(n * n, 0.0);
    for (std::size_t r = 0; r < csv.rows.size(); ++r) {
      const std::string where = fmt::format("line {}", csv.lines[r]);
      const auto rank = [&](std::string_view column) {
        const double v = csv.number(r, column);
        if (v < 0 || v >= static_cast<double>(n) || v != std::floor(v)) {
          throw sim::InputError(csv.source, where, fmt::format("{} {} is not a rank of 0..{}", column, csv.at(r, column), n - 1));
        }
        return static_cast<std::size_t>(v);
      };
      const std::size_t from = rank("from"), to = rank("to");
      if (from == to) throw sim::InputError(csv.source, where, fmt::format("from and to are both rank {}; expected two ranks", from));
      const sim::Bytes bytes = sim::parse_bytes(csv.at(r, "bytes"), {csv.source, where});
      if (bytes > kMaxMessage) {
        throw sim::InputError(csv.source, where, fmt::format("bytes {}: expected at most 1 PiB ({})", sim::quote(csv.at(r, "bytes")), kMaxMessageReason));
      }
      spec.pair_bytes[from * n + to] += bytes.value();
    }
  }

  // NCCL's model: its choice of algorithm and protocol (or the one asked for), and its time.
  // `--algo auto` runs the flow plan of the algorithm NCCL picks.
  models::NcclRequest request;
  request.nvls_enable = o.nvls;
  request.channels = std::max(0, o.channels);
  // The names the command takes, checked first so that a typo is answered with these (CollNet,
  // which no topology here can run, is not among them).
  const std::vector<std::string> algos = {"auto", "ring", "tree", "nvls", "nvls-tree", "pat", "hierarchical", "direct"};
  if (std::find(algos.begin(), algos.end(), o.algo) == algos.end()) {
    throw sim::InputError("<command line>", "--algo",
                          fmt::format("unknown algorithm {}{}; valid: {}", sim::quote(o.algo), sim::did_you_mean(o.algo, algos), fmt::join(algos, ", ")));
  }
  const bool flow_only = o.algo == "hierarchical" || o.algo == "direct";
  if (o.algo != "auto" && !flow_only) {
    request.any_algo = false;
    request.algo = models::parse_nccl_algo(o.algo, "<command line>", "--algo");
  }
  if (o.proto != "auto") {
    request.any_proto = false;
    request.proto = models::parse_nccl_proto(o.proto, "<command line>", "--proto");
  }
  // NCCL's choice as flows (nccl.hpp): its latency paid at the start, the links at the
  // model's rates and its protocol's ceiling; --algo hierarchical or direct runs that flow
  // plan instead, with NCCL's latency and rates beside it.
  const models::CommShape shape = models::comm_shape(topology, spec.op, spec.ranks);
  models::NcclFlows flows = models::nccl_flows(topology, spec, request);
  const models::NcclCost& nccl = flows.nccl;
  if (flow_only) flows.spec.algo = models::parse_collective_algo(o.algo, "<command line>", "--algo");
  spec = flows.spec;

  const bool counters = !o.trace_path.empty();
  models::CollectiveResult r;
  sim::Duration estimate;
  try {
    r = models::run_collective(topology, spec, flows.efficiency, counters);
    estimate = models::alpha_beta(topology, spec, flows.efficiency) + spec.latency;
  } catch (const sim::DurationOverflow& e) {
    // Sizes and bandwidths are each in range, but together too far apart.
    throw sim::InputError("<command line>", "--size",
                          fmt::format("{} on {}: {}; expected a smaller size or faster links", sim::quote(o.size), sim::quote(o.topology), e.what()));
  }

  out << fmt::format("collective {} ({}) of {} on {} ranks, {} channels\n", models::to_string(spec.op),
                     models::to_string(spec.algo), sim::to_string(spec.size), r.ranks, r.channels);
  out << fmt::format("topology   {} ({} GPUs, {} links)\n", o.topology, topology.gpus().size(), topology.links().size());
  out << fmt::format("time       {}\n", sim::to_string(r.time));
  out << fmt::format("algbw      {:.2f} GB/s\n", r.algbw / 1e9);
  out << fmt::format("busbw      {:.2f} GB/s\n", r.busbw / 1e9);
  out << fmt::format("alpha-beta {} with NCCL's latency ({:+.1f}% vs simulated)\n", sim::to_string(estimate),
                     100.0 * (static_cast<double>(estimate.ns()) / static_cast<double>(r.time.ns()) - 1.0));
  out << fmt::format("nccl model {}/{} on {} of {} channels: {} (latency {}), busbw {:.2f} GB/s{}\n", models::to_string(nccl.algo),
                     models::to_string(nccl.proto), nccl.channels_used, nccl.channels, sim::to_string(sim::ceil_duration_ns(nccl.time_s * 1e9)),
                     sim::to_string(sim::ceil_duration_ns(nccl.latency_s * 1e9)), nccl.busbw_Bps / 1e9,
                     spec.pair_bytes.empty() ? "" : " (uniform all-to-all of the largest sender's bytes)");
  if (shape.arch_assumed) out << "           the topology names no GPU: the NCCL model assumes Hopper\n";
  out << fmt::format("flows      {} ({} re-solves visiting {} flow-links, {} events)\n", r.flows, r.solves, r.solve_work, r.events);
  if (r.units > 0) {
    out << fmt::format("classes    one of {} symmetric units simulated under the others' load (exact: models/network/symmetry.hpp)\n", r.units);
  }
  if (r.extrapolated_steps > 0) {
    out << fmt::format("ring       {} steps costed from two short runs of the ring (exact on its steady state)\n", r.extrapolated_steps);
  }
  if (spec.quantum > sim::Duration::zero()) {
    out << fmt::format("quantum    {}: departures re-solved on this grid (an approximation; 0 is exact)\n", sim::to_string(spec.quantum));
  }

  if (counters) {
    // Link utilisation as trace-event counters, one track per link that carried traffic.
    std::string json = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
    bool first = true;
    for (const models::LinkLoadSample& s : r.link_loads) {
      json += first ? "\n" : ",\n";
      first = false;
      json += "{\"name\":";
      reports::append_json_string(json, models::fabric_link_name(topology, s.link));
      fmt::format_to(std::back_inserter(json), ",\"ph\":\"C\",\"pid\":1,\"tid\":0,\"ts\":{}.{:03},\"args\":{{\"GB/s\":{}}}}}",
                     s.at.ns() / 1000, s.at.ns() % 1000, s.bytes_per_second / 1e9);
    }
    json += first ? "\n" : ",\n";
    json += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"link utilisation\"}}\n]}\n";
    traces::write_file_atomically(o.trace_path, json);
  }
  if (report_wanted(o.report_path, o.report_json)) {
    reports::Report report;
    report.set("/command", "collective");
    report.set("/op", models::to_string(spec.op));
    report.set("/algo", models::to_string(spec.algo));
    report.set("/topology", o.topology);
    report.set("/size_bytes", spec.size.value());
    report.set("/ranks", std::int64_t{r.ranks});
    report.set("/channels", std::int64_t{r.channels});
    report.set("/time_s", r.time.to_seconds());
    report.set("/time_ns", r.time.ns());
    report.set("/algbw_GBps", r.algbw / 1e9);
    report.set("/busbw_GBps", r.busbw / 1e9);
    report.set("/alpha_beta_s", estimate.to_seconds());
    report.set("/nccl/algo", models::to_string(nccl.algo));
    report.set("/nccl/proto", models::to_string(nccl.proto));
    report.set("/nccl/channels", std::int64_t{nccl.channels});
    report.set("/nccl/channels_used", std::int64_t{nccl.channels_used});
    report.set("/nccl/time_s", nccl.time_s);
    report.set("/nccl/latency_s", nccl.latency_s);
    report.set("/nccl/busbw_GBps", nccl.busbw_Bps / 1e9);
    report.set("/nccl/gpu_assumed", shape.arch_assumed);
    report.set("/flows", static_cast<std::int64_t>(r.flows));
    report.set("/solves", static_cast<std::int64_t>(r.solves));
    report.set("/solve_work", static_cast<std::int64_t>(r.solve_work));
    report.set("/events", static_cast<std::int64_t>(r.events));
    report.set("/symmetric_units", std::int64_t{r.units});
    report.set("/extrapolated_steps", std::int64_t{r.extrapolated_steps});
    report.set("/quantum_s", spec.quantum.to_seconds());
    emit_report(report, o.report_path, o.report_json);
  }
}

}  // namespace orrery::runs
