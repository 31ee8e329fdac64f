#include "runs/runs.hpp"
#include "runs/report_out.hpp"
#include "runs/options.hpp"

#include "sim/executor.hpp"
#include "reports/chrome_trace.hpp"
#include "traces/json_input.hpp"
#include "reports/report.hpp"
#include "reports/html_pages.hpp"
#include "traces/task_graph_json.hpp"
#include "traces/chakra_replay.hpp"
#include "calibration/kineto.hpp"
#include "traces/hardware_json.hpp"
#include "models/hardware/step_params.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <ostream>
#include <set>

namespace orrery::runs {

namespace {

// A Chakra workload on a fabric (traces/chakra_replay.hpp).
void replay_chakra(const ReplayOptions& o, std::ostream& out) {
  if (o.topology.empty()) throw sim::InputError("<command line>", "--topology", "--chakra needs the fabric to replay on (one GPU per rank)");
  if (o.comm != "nccl" && o.comm != "line-rate") {
    throw sim::InputError("<command line>", "--comm", fmt::format("unknown communication model {}; valid: line-rate, nccl", sim::quote(o.comm)));
  }
  const models::HardwareCatalog gpus = traces::load_gpu_catalog(o.gpus_path);
  traces::ChakraReplayOptions ro;
  ro.topology = o.topology;
  ro.gpu = gpus.gpu(o.gpu);
  ro.comm = o.comm == "nccl" ? models::CommModel::nccl : models::CommModel::flows;
  ro.recost = o.recost;
  ro.roofline = models::training_roofline_params(ro.gpu);
  const traces::ChakraWorkload w = traces::read_chakra_workload(o.chakra, o.comm_groups);
  const traces::ChakraReplay r = traces::replay_chakra(w, ro);
  const auto [lo, hi] = std::minmax_element(r.compute_s.begin(), r.compute_s.end());
  double mean = 0;
  for (const double c : r.compute_s) mean += c;
  mean /= static_cast<double>(r.compute_s.size());
  out << fmt::format("workload   {} ({} ranks, {} nodes{})\n", o.chakra, w.ranks.size(), r.nodes,
                     w.groups_path.empty() ? "" : fmt::format(", {} communicator groups from {}", w.groups.size(), w.groups_path));
  std::size_t ctrl = 0;
  for (const traces::EtRankTrace& t : w.ranks) ctrl += t.ctrl_deps;
  if (ctrl > 0) {
    out << fmt::format("order      by data dependencies; {} control dependencies not enforced (as Chakra's feeder and ASTRA-sim)\n", ctrl);
  }
  out << fmt::format("fabric     {} x {} ({})\n", w.ranks.size(), ro.gpu.name, o.topology);
  out << fmt::format("compute    {}\n", o.recost ? "re-costed from FLOPs and bytes (fitted roofline, Megatron bf16)" : "recorded durations");
  out << fmt::format("comm       {} collectives, {} send/recv pairs, {}\n", r.collectives, r.transfers,
                     o.comm == "nccl" ? "as NCCL runs them" : "at line rate");
  out << fmt::format("step time  {}\n", sim::to_string(r.makespan));
  const double step = r.makespan.to_seconds();
  out << fmt::format("compute    busy {:.1f}% of the step on average (ranks from {:.1f}% to {:.1f}%)\n", step > 0 ? 100 * mean / step : 0.0,
                     step > 0 ? 100 * *lo / step : 0.0, step > 0 ? 100 * *hi / step : 0.0);
  if (!o.trace_path.empty()) reports::write_chrome_trace(o.trace_path, r.graph, r.spans);
  if (!o.html_path.empty()) {
    reports::ReplayPage page;
    page.title = fmt::format("Chakra workload {}", o.chakra);
    page.subtitle = fmt::format("{} ranks on {} x {} ({})", w.ranks.size(), w.ranks.size(), ro.gpu.name, o.topology);
    page.figures = {{"step time", sim::to_string(r.makespan)},
                    {"nodes", std::to_string(r.nodes)},
                    {"collectives", std::to_string(r.collectives)},
                    {"send/recv pairs", std::to_string(r.transfers)},
                    {"compute", o.recost ? "re-costed from FLOPs and bytes" : "recorded durations"}};
    page.bars_title = "Busy time per rank";
    for (std::size_t k = 0; k < r.compute_s.size(); ++k) page.bars.push_back(fmt::format("rank {}", k));
    page.busy_s = r.compute_s;
    page.comm_s = r.comm_s;
    reports::write_replay_html(o.html_path, page, r.graph, r.spans);
  }
  if (report_wanted(o.report_path, o.report_json)) {
    reports::Report report;
    report.set("/command", "replay");
    report.set("/chakra/prefix", o.chakra);
    report.set("/chakra/ranks", static_cast<std::int64_t>(w.ranks.size()));
    report.set("/chakra/nodes", static_cast<std::int64_t>(r.nodes));
    report.set("/chakra/groups", static_cast<std::int64_t>(w.groups.size()));
    report.set("/chakra/collectives", static_cast<std::int64_t>(r.collectives));
    report.set("/chakra/send_recv", static_cast<std::int64_t>(r.transfers));
    report.set("/topology", o.topology);
    report.set("/gpu", ro.gpu.name);
    report.set("/recost", o.recost);
    report.set("/comm_model", o.comm);
    report.set("/makespan_ns", r.makespan.ns());
    report.set("/step_time_s", step);
    for (std::size_t k = 0; k < r.compute_s.size(); ++k) {
      report.set(fmt::format("/ranks/{}/compute_s", k), r.compute_s[k]);
      report.set(fmt::format("/ranks/{}/comm_s", k), r.comm_s[k]);
    }
    emit_report(report, o.report_path, o.report_json);
  }
}

// A PyTorch profiler trace's kernels replayed (calibration/kineto.hpp).
void replay_kineto(const ReplayOptions& o, std::ostream& out) {
  if (o.comm != "nccl" && o.comm != "line-rate") {
    throw sim::InputError("<command line>", "--comm", fmt::format("unknown communication model {}; valid: line-rate, nccl", sim::quote(o.comm)));
  }
  if (o.ranks != 0 && o.topology.empty()) throw sim::InputError("<command line>", "--ranks", "--ranks re-sizes collectives on a --topology: give one");
  if (o.ranks < 0 || o.ranks > (1 << 20)) throw sim::InputError("<command line>", "--ranks", fmt::format("found {}, expected 1 to 1048576", o.ranks));
  const calibration::KinetoTrace trace = calibration::read_kineto_trace(o.kineto);
  calibration::KinetoReplayOptions ro;
  ro.topology = o.topology;
  ro.ranks = o.ranks;
  ro.comm = o.comm == "nccl" ? models::CommModel::nccl : models::CommModel::flows;
  const calibration::KinetoReplay r = calibration::replay_kineto(trace, ro);
  const double span = trace.span_us() * 1e-6;
  out << fmt::format("trace      {} ({}, {} GPU kernels, {} NCCL)\n", o.kineto, trace.device, r.kernels, r.collectives);
  out << fmt::format("recorded   {}\n", sim::to_string(sim::ceil_duration_ns(span * 1e9)));
  out << fmt::format("replayed   {} ({:+.2f}%){}\n", sim::to_string(r.span), span > 0 ? 100 * (r.span.to_seconds() / span - 1) : 0.0,
                     o.topology.empty() ? "" : fmt::format(", NCCL kernels re-costed on {}{}", o.topology, o.ranks > 0 ? fmt::format(" at {} ranks", o.ranks) : ""));
  out << fmt::format("waits      {} kernels wait on another stream\n", r.waits);
  if (!o.trace_path.empty()) reports::write_chrome_trace(o.trace_path, r.graph, r.spans);
  if (!o.html_path.empty()) {
    reports::ReplayPage page;
    page.title = fmt::format("PyTorch profile {}", o.kineto);
    page.subtitle = fmt::format("{} GPU kernels on {}{}", r.kernels, trace.device,
                                o.topology.empty() ? "" : fmt::format("; NCCL kernels re-costed on {}", o.topology));
    page.figures = {{"recorded", sim::to_string(sim::ceil_duration_ns(span * 1e9))},
                    {"replayed", sim::to_string(r.span)},
                    {"kernels", std::to_string(r.kernels)},
                    {"NCCL kernels", std::to_string(r.collectives)},
                    {"cross-stream waits", std::to_string(r.waits)}};
    page.bars_title = "Busy time per stream";
    std::map<std::string, double> busy;
    for (std::uint32_t t = 0; t < r.graph.task_count(); ++t) {
      const auto s = r.graph.stream(sim::TaskId(t));
      if (s) busy[r.graph.stream_info(*s).device + " " + r.graph.stream_info(*s).name] += r.graph.duration(sim::TaskId(t)).to_seconds();
    }
    for (const auto& [name, b] : busy) page.bars.push_back(name), page.busy_s.push_back(b);
    reports::write_replay_html(o.html_path, page, r.graph, r.spans);
  }
  if (report_wanted(o.report_path, o.report_json)) {
    reports::Report report;
    report.set("/command", "replay");
    report.set("/kineto/path", o.kineto);
    report.set("/kineto/device", trace.device);
    report.set("/kineto/kernels", static_cast<std::int64_t>(r.kernels));
    report.set("/kineto/collectives", static_cast<std::int64_t>(r.collectives));
    report.set("/kineto/waits", static_cast<std::int64_t>(r.waits));
    report.set("/recorded_s", span);
    report.set("/step_time_s", r.span.to_seconds());
    report.set("/topology", o.topology);
    emit_report(report, o.report_path, o.report_json);
  }
}

}  // namespace

void replay(const ReplayOptions& options, std::ostream& out) {
  check_outputs({{"--trace", options.trace_path}, {"--report", options.report_path}, {"--html", options.html_path}});
  if (!options.html_path.empty() && !options.graph_path.empty()) {
    throw sim::InputError("<command line>", "--html", "the HTML page is for --chakra and --kineto replays");
  }
  if (static_cast<int>(!options.graph_path.empty()) + static_cast<int>(!options.chakra.empty()) + static_cast<int>(!options.kineto.empty()) != 1) {
    throw sim::InputError("<command line>", "", "replay expects one of a task-graph JSON file, --chakra PREFIX or --kineto TRACE");
  }
  if (!options.chakra.empty()) {
    replay_chakra(options, out);
    return;
  }
  if (!options.kineto.empty()) {
    replay_kineto(options, out);
    return;
  }
  const traces::LoadedGraph loaded = traces::read_task_graph_file(options.graph_path);
  const sim::TaskGraph& graph = loaded.graph;

  sim::Engine engine;
  sim::Executor executor(engine, graph);
  executor.start();
  engine.run();
  ORRERY_CHECK(executor.finished(), "{} of {} tasks ran in an acyclic graph", executor.completed(), graph.task_count());

  std::size_t delays = 0;
  for (std::uint32_t t = 0; t < graph.task_count(); ++t) {
    if (graph.kind(sim::TaskId(t)) == sim::TaskKind::delay) ++delays;
  }
  std::set<std::string> devices;
  for (std::uint32_t s = 0; s < graph.stream_count(); ++s) devices.insert(graph.stream_info(sim::StreamId(s)).device);
  const sim::Duration makespan = executor.makespan();
  const auto utilization = [&](sim::Duration busy) { return makespan.ns() == 0 ? 0.0 : busy / makespan; };

  // Summary on stdout.
  out << fmt::format("graph      {}{}\n", options.graph_path, loaded.name.empty() ? "" : fmt::format(" ({})", loaded.name));
  out << fmt::format("tasks      {} ({} compute, {} delay), {} dependencies\n", graph.task_count(),
                     graph.task_count() - delays, delays, graph.dependency_count());
  out << fmt::format("streams    {} on {} devices\n", graph.stream_count(), devices.size());
  out << fmt::format("makespan   {}\n", sim::to_string(makespan));
  out << fmt::format("events     {}\n", engine.events_processed());
  std::size_t width = 6;
  for (std::uint32_t s = 0; s < graph.stream_count(); ++s) {
    const sim::StreamInfo& info = graph.stream_info(sim::StreamId(s));
    width = std::max(width, info.device.size() + 1 + info.name.size());
  }
  out << fmt::format("\n{:<{}}  {:>14}  {:>6}\n", "stream", width, "busy", "util");
  for (std::uint32_t s = 0; s < graph.stream_count(); ++s) {
    const sim::StreamInfo& info = graph.stream_info(sim::StreamId(s));
    const sim::Duration busy = executor.stream_busy()[s];
    out << fmt::format("{:<{}}  {:>14}  {:>5.1f}%\n", info.device + "/" + info.name, width, sim::to_string(busy),
                       100.0 * utilization(busy));
  }

  // Files last, each atomically: bad input above has left nothing behind.
  if (!options.trace_path.empty()) reports::write_chrome_trace(options.trace_path, graph, executor.spans());
  if (report_wanted(options.report_path, options.report_json)) {
    reports::Report report;
    report.set("/command", "replay");
    report.set("/graph/path", options.graph_path);
    report.set("/graph/name", loaded.name);
    report.set("/graph/tasks", static_cast<std::int64_t>(graph.task_count()));
    report.set("/graph/compute_tasks", static_cast<std::int64_t>(graph.task_count() - delays));
    report.set("/graph/delay_tasks", static_cast<std::int64_t>(delays));
    report.set("/graph/dependencies", static_cast<std::int64_t>(graph.dependency_count()));
    report.set("/graph/streams", static_cast<std::int64_t>(graph.stream_count()));
    report.set("/graph/devices", static_cast<std::int64_t>(devices.size()));
    report.set("/makespan_ns", makespan.ns());
    report.set("/engine/events", static_cast<std::int64_t>(engine.events_processed()));
    for (std::uint32_t s = 0; s < graph.stream_count(); ++s) {
      const sim::StreamInfo& info = graph.stream_info(sim::StreamId(s));
      const std::string key = "/streams/" + traces::pointer_token(info.device + "/" + info.name);
      report.set(key + "/device", info.device);
      report.set(key + "/stream", info.name);
      report.set(key + "/busy_ns", executor.stream_busy()[s].ns());
      report.set(key + "/utilization", utilization(executor.stream_busy()[s]));
    }
    emit_report(report, options.report_path, options.report_json);
  }
}

}  // namespace orrery::runs
