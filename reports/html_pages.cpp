// The `--html` pages: what each command's report shows (see cli/README.md).
#include "reports/html_pages.hpp"
#include "reports/stats.hpp"

#include "models/training/step.hpp"
#include "policies/rl.hpp"
#include "sim/error.hpp"
#include "reports/html_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

namespace orrery::reports {

namespace {


std::string pct(double share) { return fmt::format("{:.1f}%", 100 * share); }

// A step task's kind for the timeline's colors, from the names models/training/step.cpp gives them.
std::string step_category(std::string_view name, sim::TaskKind kind) {
  if (kind == sim::TaskKind::transfer) {
    if (name.find("grad reduce") != std::string_view::npos) return "grad reduce";
    if (name.find("all-gather") != std::string_view::npos) return "param all-gather";
    if (name.rfind("send", 0) == 0) return "pipeline send";
    return "transfer";
  }
  if (kind != sim::TaskKind::compute) return "wait";
  if (name.rfind("optimizer", 0) == 0) return "optimizer";
  if (name.rfind("B", 0) == 0) return "backward";  // "B3 vs1" (input grads) or "BW3 vs1" (both)
  if (name.rfind("W", 0) == 0) return "weight grad";
  if (name.rfind("F", 0) == 0) return "forward";
  return "compute";
}

// Share of all GPUs busy over time, in `bins` equal steps from the first arrival to the last
// allocation's end (from the recorded allocations).
LineSeries utilisation_series(std::string name, const models::ClusterResult& r, int total_gpus, std::size_t bins = 240) {
  LineSeries s;
  s.name = std::move(name);
  if (r.allocations.empty() || total_gpus <= 0) return s;
  double t0 = r.allocations.front().start_s, t1 = 0;
  for (const models::JobRecord& j : r.jobs) t0 = std::min(t0, j.arrival_s);
  for (const models::Allocation& a : r.allocations) {
    t0 = std::min(t0, a.start_s);
    t1 = std::max(t1, a.end_s);
  }
  if (!(t1 > t0)) return s;
  const double width = (t1 - t0) / static_cast<double>(bins);
  std::vector<double> busy(bins, 0.0);  // GPU-seconds per bin
  for (const models::Allocation& a : r.allocations) {
    if (!(a.end_s > a.start_s)) continue;
    const double x0 = (a.start_s - t0) / width, x1 = (a.end_s - t0) / width;
    const auto first = static_cast<std::size_t>(std::clamp(x0, 0.0, static_cast<double>(bins - 1)));
    const auto last = static_cast<std::size_t>(std::clamp(x1, 0.0, static_cast<double>(bins - 1)));
    for (std::size_t b = first; b <= last; ++b) {
      const double overlap = std::min(x1, static_cast<double>(b + 1)) - std::max(x0, static_cast<double>(b));
      if (overlap > 0) busy[b] += overlap * width * a.gpus;
    }
  }
  for (std::size_t b = 0; b < bins; ++b) {
    s.x.push_back((static_cast<double>(b) + 0.5) * width / 3600);
    s.y.push_back(100 * busy[b] / (width * total_gpus));
  }
  return s;
}

std::vector<double> jcts(const models::ClusterResult& r) {
  std::vector<double> v;
  for (const models::JobRecord& j : r.jobs) {
    if (j.end_s >= 0) v.push_back(j.end_s - j.arrival_s);
  }
  return v;
}

std::vector<double> queueing(const models::ClusterResult& r) {
  std::vector<double> v;
  for (const models::JobRecord& j : r.jobs) {
    if (j.start_s >= 0) v.push_back(j.start_s - j.arrival_s);
  }
  return v;
}

LineChart cdf_chart(std::string id, std::string title, std::string x_label) {
  LineChart c;
  c.id = std::move(id);
  c.title = std::move(title);
  c.x_label = std::move(x_label);
  c.y_label = "fraction of jobs";
  c.y_min = 0;
  c.y_max = 1;
  return c;
}

LineChart utilisation_chart() {
  LineChart c;
  c.id = "gpu-utilisation";
  c.title = "GPU utilisation over time";
  c.x_label = "hours since the first arrival";
  c.y_label = "GPUs busy (%)";
  c.y_min = 0;
  c.y_max = 100;
  return c;
}

}  // namespace

namespace {

// A timeline's x axis in milliseconds for runs under a second, else seconds: the factor.
double timeline_scale(Timeline& tl, double seconds) {
  const bool ms = seconds < 1;
  tl.x_label = ms ? "time (ms)" : "time (s)";
  return ms ? 1e3 : 1;
}

// A timeline's lanes by name, every stream of the graph first, then others as they come.
class StreamLanes {
 public:
  StreamLanes(Timeline& tl, const sim::TaskGraph& graph) : tl_(tl) {
    for (std::uint32_t s = 0; s < graph.stream_count(); ++s) {
      const sim::StreamInfo& info = graph.stream_info(sim::StreamId(s));
      (*this)(info.device + " " + info.name);
    }
  }
  int operator()(const std::string& name) {
    const auto [it, added] = of_.try_emplace(name, static_cast<int>(tl_.lanes.size()));
    if (added) tl_.lanes.push_back(name);
    return it->second;
  }

 private:
  Timeline& tl_;
  std::map<std::string, int> of_;
};

}  // namespace

void write_step_html(const std::string& path, const std::string& title, const models::StepScenario& sc, const models::StepResult& r) {
  const models::ParallelPlan& p = sc.plan;
  HtmlReport page(title, fmt::format("{} on {} x {} ({}); tp {} pp {} vp {} dp {} cp {} ep {}, {} schedule, micro-batch {}, global batch {}, "
                                     "sequence {}",
                                     sc.model.name, p.gpus(), sc.gpu.name, sc.topology, p.tp, p.pp, p.vp, p.dp, p.cp, p.ep, p.schedule, p.micro_batch,
                                     p.global_batch, p.seq_len));
  const auto gib = [](double b) { return fmt::format("{:.1f} GiB", b / 1073741824.0); };
  page.section("Key figures");
  page.key_values({{"step time", sim::to_string(r.step_time)},
                   {"throughput", fmt::format("{:.0f} tokens/s", r.tokens_per_s)},
                   {"per GPU", fmt::format("{:.1f} TFLOP/s", r.tflops_per_gpu)},
                   {"MFU (HFU)", fmt::format("{} ({})", pct(r.mfu), pct(r.hfu))},
                   {"pipeline bubble", pct(r.bubble_fraction)},
                   {"exposed communication", pct(r.exposed_comm_fraction)},
                   {"micro-batches", std::to_string(r.micro_batches)},
                   {"peak memory per GPU", fmt::format("{} of {} (stage {}){}", gib(r.memory.total()), gib(sc.gpu.hbm_bytes), r.memory.stage,
                                                       r.oom ? ": OUT OF MEMORY" : "")},
                   {"simulated", fmt::format("{} ranks, {} tasks, {} flows", r.ranks_simulated, r.tasks, r.flows)}});

  page.section("Where the step goes");
  StackedBarChart breakdown;
  breakdown.id = "step-breakdown";
  breakdown.title = "Step time per pipeline stage";
  breakdown.category_label = "";
  breakdown.value_label = "seconds per GPU";
  breakdown.horizontal = true;
  breakdown.segments = {{"compute", {}, {}}, {"exposed communication", {}, {}}, {"bubble", {}, {}}, {"idle", {}, {}}};
  for (const models::StageBreakdown& s : r.stages) {
    breakdown.categories.push_back(fmt::format("stage {}", s.stage));
    breakdown.segments[0].values.push_back(s.compute_s);
    breakdown.segments[1].values.push_back(s.exposed_comm_s);
    breakdown.segments[2].values.push_back(s.bubble_s);
    breakdown.segments[3].values.push_back(s.idle_s);
  }
  page.figure(stacked_bar_chart(breakdown));

  StackedBarChart memory;
  memory.id = "memory";
  memory.title = fmt::format("Peak memory per GPU (stage {}) against {} of HBM", r.memory.stage, gib(sc.gpu.hbm_bytes));
  memory.value_label = "GiB";
  memory.horizontal = true;
  memory.categories = {fmt::format("stage {}", r.memory.stage)};
  const double g = 1073741824.0;
  memory.segments = {{"weights", {r.memory.params_bytes / g}, {}},
                     {"gradients", {r.memory.grads_bytes / g}, {}},
                     {"optimizer", {r.memory.optimizer_bytes / g}, {}},
                     {"activations", {r.memory.activations_bytes / g}, {}},
                     {"gathered weights", {r.memory.gathered_params_bytes / g}, {}},
                     {"transient (loss or a layer's backward)", {std::max(r.memory.logits_bytes, r.memory.backward_bytes) / g}, {}}};
  page.figure(stacked_bar_chart(memory));

  page.section("Timeline");
  Timeline tl;
  tl.id = "timeline";
  tl.title = "The simulated ranks' streams over one step";
  tl.category_order = {"forward", "backward", "weight grad", "optimizer", "grad reduce", "param all-gather", "pipeline send", "transfer", "wait"};
  const double scale = timeline_scale(tl, r.step_time.to_seconds());
  StreamLanes lane(tl, r.graph);
  for (std::uint32_t t = 0; t < r.graph.task_count() && t < r.spans.size(); ++t) {
    const sim::Span& span = r.spans[t];
    if (span.end == sim::Time::max()) continue;
    const auto task = sim::TaskId(t);
    const std::string name(r.graph.name(task));
    std::string where;
    if (const auto stream = r.graph.stream(task)) {
      const sim::StreamInfo& info = r.graph.stream_info(*stream);
      where = info.device + " " + info.name;
    } else if (r.graph.kind(task) == sim::TaskKind::transfer) {
      // Data-parallel traffic is named after its stage ("stage0 grad reduce"); the rest are sends.
      where = name.rfind("stage", 0) == 0 ? name.substr(0, name.find(' ')) + " data-parallel" : "pipeline sends";
    } else {
      where = "waits";
    }
    tl.spans.push_back({lane(where), span.start.since_start().to_seconds() * scale, span.end.since_start().to_seconds() * scale,
                        step_category(name, r.graph.kind(task)), name});
  }
  if (tl.spans.empty()) {
    page.paragraph("No timeline: the step was not simulated as a task graph.");
  } else {
    page.figure(timeline_chart(tl));
  }
  page.write(path);
}

void write_replay_html(const std::string& path, const ReplayPage& pg, const sim::TaskGraph& graph, const std::vector<sim::Span>& spans) {
  HtmlReport page(pg.title, pg.subtitle);
  page.section("Key figures");
  page.key_values(pg.figures);
  page.section("Where the time goes");
  StackedBarChart busy;
  busy.id = "busy";
  busy.title = pg.bars_title;
  busy.value_label = "seconds";
  busy.horizontal = true;
  busy.categories = pg.bars;
  busy.segments = {{"compute", pg.busy_s, {}}};
  if (!pg.comm_s.empty()) busy.segments.push_back({"communication (alone)", pg.comm_s, {}});
  page.figure(stacked_bar_chart(busy));
  page.section("Timeline");
  Timeline tl;
  tl.id = "timeline";
  tl.title = "Every stream and transfer of the replay";
  sim::Time last = sim::Time::zero();
  for (const sim::Span& s : spans) {
    if (s.end != sim::Time::max()) last = std::max(last, s.end);
  }
  const double scale = timeline_scale(tl, last.since_start().to_seconds());
  StreamLanes lane(tl, graph);
  for (std::uint32_t t = 0; t < graph.task_count() && t < spans.size(); ++t) {
    const sim::Span& span = spans[t];
    const auto task = sim::TaskId(t);
    if (span.end == sim::Time::max() || graph.kind(task) == sim::TaskKind::delay) continue;
    std::string where = "transfers";
    if (const auto stream = graph.stream(task)) {
      const sim::StreamInfo& info = graph.stream_info(*stream);
      where = info.device + " " + info.name;
    }
    tl.spans.push_back({lane(where), span.start.since_start().to_seconds() * scale, span.end.since_start().to_seconds() * scale,
                        graph.kind(task) == sim::TaskKind::transfer ? "transfer" : "compute", std::string(graph.name(task))});
  }
  page.figure(timeline_chart(tl));
  page.write(path);
}

void write_step_compare_html(const std::string& path, const StepComparePage& pg) {
  HtmlReport page(pg.title, pg.subtitle);
  std::vector<std::vector<std::string>> rows;
  BarChart steps;
  steps.id = "step-time";
  steps.title = "Step time per policy: p50 bar, p99 whisker";
  steps.y_label = "seconds";
  steps.series = {{"p50", {}, {}}};
  BarChart throughput;
  throughput.id = "throughput";
  throughput.title = "Throughput per policy";
  throughput.y_label = pg.throughput_unit;
  throughput.series = {{pg.throughput_unit, {}, {}}};
  BarChart bubble;
  bubble.id = "bubble";
  bubble.title = "Pipeline bubble per policy";
  bubble.y_label = "% of the step";
  bubble.series = {{"bubble", {}, {}}};
  LineChart cdf;
  cdf.id = "step-cdf";
  cdf.title = "Step time CDF per policy";
  cdf.x_label = "step time (s)";
  cdf.y_label = "fraction of steps";
  cdf.y_min = 0;
  cdf.y_max = 1;
  bool bubbles = false;
  const double base = pg.policies.empty() ? 0 : pg.policies.front().throughput;
  for (const PolicySteps& p : pg.policies) {
    const double p50 = p.step_s.empty() ? 0 : percentile(p.step_s, 0.5), p99 = p.step_s.empty() ? 0 : percentile(p.step_s, 0.99);
    steps.categories.push_back(p.name);
    steps.series[0].values.push_back(p50);
    steps.series[0].high.push_back(p99);
    throughput.categories.push_back(p.name);
    throughput.series[0].values.push_back(p.throughput);
    bubble.categories.push_back(p.name);
    bubble.series[0].values.push_back(p.bubble >= 0 ? 100 * p.bubble : kNoValue);
    bubbles = bubbles || p.bubble >= 0;
    cdf.series.push_back(cdf_series(p.name, p.step_s));
    std::vector<std::string> row = {p.name, fmt::format("{:.3f} s", p50), fmt::format("{:.3f} s", p99), format_value(p.throughput),
                                    base > 0 ? fmt::format("{:.2f}x", p.throughput / base) : "-"};
    if (p.bubble >= 0) row.push_back(pct(p.bubble));
    if (p.imbalance >= 0) row.push_back(fmt::format("{:.3f}", p.imbalance));
    rows.push_back(std::move(row));
  }
  std::vector<std::string> header = {"policy", "step p50", "step p99", pg.throughput_unit, "speedup"};
  if (bubbles) header.push_back("bubble");
  if (!pg.policies.empty() && pg.policies.front().imbalance >= 0) header.push_back("imbalance");
  page.section("Policies");
  page.table(header, rows);
  page.figure(bar_chart(steps));
  page.figure(bar_chart(throughput));
  if (bubbles) page.figure(bar_chart(bubble));
  page.figure(line_chart(cdf));
  page.write(path);
}

void write_cluster_compare_html(const std::string& path, const ClusterPage& about, const std::vector<ClusterPageRun>& runs) {
  HtmlReport page(about.title, about.subtitle);
  BarChart jct;
  jct.id = "jct";
  jct.title = "Job completion time per scheduler";
  jct.y_label = "seconds";
  jct.series = {{"average", {}, {}}, {"p50", {}, {}}, {"p99", {}, {}}};
  LineChart jct_cdf = cdf_chart("jct-cdf", "JCT CDF per scheduler", "job completion time (s, log scale)");
  jct_cdf.log_x = true;
  LineChart queue_cdf = cdf_chart("queue-cdf", "Queueing delay CDF per scheduler", "queueing delay (s)");
  LineChart util = utilisation_chart();
  std::vector<std::vector<std::string>> rows;
  for (const ClusterPageRun& run : runs) {
    const models::ClusterResult& r = *run.result;
    jct.categories.push_back(run.policy);
    jct.series[0].values.push_back(r.avg_jct_s);
    jct.series[1].values.push_back(r.p50_jct_s);
    jct.series[2].values.push_back(r.p99_jct_s);
    jct_cdf.series.push_back(cdf_series(run.policy, jcts(r)));
    queue_cdf.series.push_back(cdf_series(run.policy, queueing(r)));
    util.series.push_back(utilisation_series(run.policy, r, about.total_gpus));
    rows.push_back({run.policy, std::to_string(r.completed), fmt::format("{:.0f} s", r.avg_jct_s), fmt::format("{:.0f} s", r.p50_jct_s),
                    fmt::format("{:.0f} s", r.p99_jct_s), fmt::format("{:.0f} s", r.avg_queue_s), fmt::format("{:.0f} s", r.makespan_s),
                    pct(r.gpu_utilization)});
  }
  page.section("Schedulers");
  page.table({"scheduler", "completed", "avg JCT", "p50 JCT", "p99 JCT", "avg queue", "makespan", "GPU utilisation"}, rows);
  page.figure(bar_chart(jct));
  page.figure(line_chart(jct_cdf));
  page.figure(line_chart(queue_cdf));
  page.figure(line_chart(util));
  page.write(path);
}

void write_cluster_html(const std::string& path, const ClusterPage& about, const ClusterPageRun& run) {
  const models::ClusterResult& r = *run.result;
  HtmlReport page(about.title, about.subtitle + "; scheduler " + run.policy);
  page.section("Key figures");
  page.key_values({{"jobs completed", std::to_string(r.completed)},
                   {"JCT", fmt::format("avg {:.0f} s, p50 {:.0f} s, p99 {:.0f} s", r.avg_jct_s, r.p50_jct_s, r.p99_jct_s)},
                   {"queueing", fmt::format("avg {:.0f} s", r.avg_queue_s)},
                   {"makespan", fmt::format("{:.0f} s", r.makespan_s)},
                   {"GPU utilisation", pct(r.gpu_utilization)},
                   {"placement", fmt::format("{} spread starts, {} migrations", r.spread_starts, r.migrations)}});
  page.section("Jobs");
  LineChart jct_cdf = cdf_chart("jct-cdf", "Job completion time CDF", "job completion time (s, log scale)");
  jct_cdf.log_x = true;
  jct_cdf.series.push_back(cdf_series(run.policy, jcts(r)));
  LineChart queue_cdf = cdf_chart("queue-cdf", "Queueing delay CDF", "queueing delay (s)");
  queue_cdf.series.push_back(cdf_series(run.policy, queueing(r)));
  page.figure(line_chart(jct_cdf));
  page.figure(line_chart(queue_cdf));
  page.section("Cluster");
  LineChart util = utilisation_chart();
  util.series.push_back(utilisation_series(run.policy, r, about.total_gpus));
  page.figure(line_chart(util));
  page.write(path);
}

void write_rl_compare_html(const std::string& path, const std::string& title, const std::vector<std::string>& labels,
                           const std::vector<policies::RlRun>& runs) {
  HtmlReport page(title, fmt::format("{} RL policies over {} iterations", runs.size(), runs.empty() ? 0 : runs.front().iteration_s.size()));
  BarChart sps;
  sps.id = "samples-per-s";
  sps.title = "Throughput per policy";
  sps.y_label = "samples/s";
  sps.series = {{"samples/s", {}, {}}};
  BarChart iter;
  iter.id = "iteration-time";
  iter.title = "Iteration time per policy: p50 bar, p99 whisker";
  iter.y_label = "seconds";
  iter.series = {{"p50", {}, {}}};
  StackedBarChart split;
  split.id = "bubble-split";
  split.title = "Where GPU time goes per policy";
  split.value_label = "% of all GPU time";
  split.horizontal = true;
  split.segments = {{"busy", {}, {}}, {"pipeline bubble", {}, {}}, {"skewness bubble", {}, {}}};
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const policies::RlRun& r = runs[i];
    const std::string& name = i < labels.size() ? labels[i] : r.policy;
    const double p50 = r.iteration_s.empty() ? 0 : percentile(r.iteration_s, 0.5), p99 = r.iteration_s.empty() ? 0 : percentile(r.iteration_s, 0.99);
    sps.categories.push_back(name);
    sps.series[0].values.push_back(r.samples_per_s);
    iter.categories.push_back(name);
    iter.series[0].values.push_back(p50);
    iter.series[0].high.push_back(p99);
    split.categories.push_back(name);
    split.segments[0].values.push_back(100 * std::max(0.0, 1 - r.pipeline_bubble - r.skewness_bubble));
    split.segments[1].values.push_back(100 * r.pipeline_bubble);
    split.segments[2].values.push_back(100 * r.skewness_bubble);
    rows.push_back({name, fmt::format("{:.1f} s", p50), fmt::format("{:.1f} s", p99), fmt::format("{:.2f}", r.samples_per_s), format_value(r.tokens_per_s),
                    pct(r.pipeline_bubble), pct(r.skewness_bubble), fmt::format("{:.1f}", r.samples_per_dollar),
                    fmt::format("{} / {}", r.generation_gpus, r.training_gpus)});
  }
  page.section("Policies");
  page.table({"policy", "iter p50", "iter p99", "samples/s", "tokens/s", "pipeline bubble", "skewness bubble", "samples/$", "GPUs gen / train"}, rows);
  page.figure(bar_chart(sps));
  page.figure(bar_chart(iter));
  page.figure(stacked_bar_chart(split));
  page.paragraph("Pipeline bubble: GPU time idle waiting on the other stage (or a sync); skewness bubble: generation instances idle while "
                 "others finish their long tails.");
  page.section("The last iteration");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const policies::RlRun& r = runs[i];
    Timeline tl;
    tl.id = fmt::format("timeline-{}", i);
    tl.title = (i < labels.size() ? labels[i] : r.policy) + ": the last iteration";
    tl.category_order = {"generation", "trainer", "weight sync"};
    std::map<std::string, int> lane_of;
    double origin = r.timeline.empty() ? 0 : r.timeline.front().start;
    for (const policies::RlSpan& s : r.timeline) origin = std::min(origin, s.start);
    for (const policies::RlSpan& s : r.timeline) {
      const auto [it, added] = lane_of.try_emplace(s.lane, static_cast<int>(tl.lanes.size()));
      if (added) tl.lanes.push_back(s.lane);
      tl.spans.push_back({it->second, s.start - origin, s.end - origin, s.lane.rfind("generation", 0) == 0 ? "generation" : s.lane, s.name});
    }
    page.figure(timeline_chart(tl));
  }
  page.write(path);
}

}  // namespace orrery::reports
