// `orrery compare` (sequence policies on one workload) and `orrery doclens` (length traces).
#include "runs/runs.hpp"
#include "models/hardware/step_params.hpp"
#include "runs/options.hpp"
#include "runs/cluster_run.hpp"
#include "reports/html_pages.hpp"
#include "reports/human.hpp"
#include "runs/policy_spec.hpp"
#include "runs/progress.hpp"
#include "runs/report_out.hpp"
#include "runs/step_cost.hpp"

#include "models/training/balance.hpp"
#include "models/training/doc_lengths.hpp"
#include "models/multimodal/multimodal_pipeline.hpp"
#include "policies/cluster.hpp"
#include "policies/moe.hpp"
#include "policies/multimodal.hpp"
#include "policies/pipeline.hpp"
#include "policies/sequence.hpp"
#include "sim/error.hpp"
#include "traces/atomic_file.hpp"
#include "reports/chrome_trace.hpp"
#include "traces/curves_json.hpp"
#include "traces/doclens.hpp"
#include "traces/hardware_json.hpp"
#include "traces/multimodal_batches.hpp"
#include "traces/multimodal_json.hpp"
#include "reports/report.hpp"
#include "traces/rl_json.hpp"
#include "traces/step_json.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <memory>
#include <numeric>
#include <ostream>

namespace orrery::runs {

namespace {

constexpr std::int64_t kMaxCompareSteps = 100'000;
// `doclens` sizes: a global batch of at most 2^30 tokens (the largest published runs use 16M),
// at most a million batches, and at most 2^36 tokens in all: about 3 s and 80 MB of JSONL.
constexpr std::int64_t kMaxDoclensBatchTokens = std::int64_t{1} << 30;
constexpr std::int64_t kMaxDoclensBatches = 1'000'000;
constexpr std::int64_t kMaxDoclensTokens = std::int64_t{1} << 36;

PolicySpec parse_policy_spec_impl(std::string_view text, std::string_view flag) {
  PolicySpec p;
  const std::size_t colon = text.find(':');
  p.name = std::string(text.substr(0, colon));
  if (p.name.empty()) {
    throw sim::InputError("<command line>", std::string(flag), "found an empty policy name, expected name[:key=value;...]");
  }
  std::string_view rest = colon == std::string_view::npos ? std::string_view{} : text.substr(colon + 1);
  while (!rest.empty()) {
    const std::size_t semi = std::min(rest.find(';'), rest.size());
    const std::string_view kv = rest.substr(0, semi);
    rest = semi < rest.size() ? rest.substr(semi + 1) : std::string_view{};
    const std::size_t eq = kv.find('=');
    if (eq == std::string_view::npos) {
      throw sim::InputError("<command line>", std::string(flag), fmt::format("found {}, expected key=value", sim::quote(kv)));
    }
    const std::string key(kv.substr(0, eq)), value(kv.substr(eq + 1));
    double number = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (value == "true" || value == "false") {
      p.params[key] = value == "true";
    } else if (ec == std::errc() && end == value.data() + value.size() && !value.empty()) {
      // A whole number only where a double holds every integer (|x| < 2^53): beyond, the cast
      // to int64 is undefined (fuzz_units: "tiresias:x=1e90"); such values stay numbers.
      if (std::fabs(number) < 9007199254740992.0 && number == std::trunc(number)) {
        p.params[key] = static_cast<std::int64_t>(number);
      } else {
        p.params[key] = number;
      }
    } else {
      p.params[key] = value;
    }
  }
  return p;
}

std::vector<PolicySpec> parse_policies(const std::string& text) { return parse_policy_list(text, "--policies"); }

}  // namespace

std::vector<PolicySpec> parse_policy_list(const std::string& text, std::string_view flag) {
  std::vector<PolicySpec> out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    out.push_back(parse_policy_spec_impl(std::string_view(text).substr(begin, comma - begin), flag));
    begin = comma + 1;
  }
  return out;
}

namespace {

struct Outcome {
  std::string name;
  std::vector<double> steps;
  double tokens = 0, time = 0, imbalance = 0;
  std::size_t deferred = 0;
};

struct Comparison {
  std::vector<Outcome> rows;
  std::int64_t budget = 0;
  std::string workload;
};

Comparison run_comparison(const traces::StepScenarioFile& file, const std::string& source, const std::string& policy_list, int steps,
                          const std::string& trace_path, int trace_step, Progress* progress = nullptr) {
  if (steps < 1) throw sim::InputError("<command line>", "--steps", fmt::format("found {}, expected 1 or more", steps));
  if (!file.has_workload) {
    throw sim::InputError(source, "", "found no \"workload\", expected {\"trace\": ...} or {\"generator\": ...} for `orrery compare`");
  }
  const std::vector<PolicySpec> specs = parse_policies(policy_list);
  std::vector<std::unique_ptr<models::SequencePolicy>> policies;
  for (const PolicySpec& s : specs) policies.push_back(policies::sequence_policies().create(s.name, s.params, {"<command line>", "--policies"}));

  const models::StepScenario& sc = file.scenario;
  const auto schedule = policies::pipeline_schedules().create(sc.plan.schedule, {}, {source, "/plan/schedule"});
  const std::unique_ptr<models::CostModel> cost = step_cost_model(file);
  models::BalanceOptions bo;
  bo.jitter = file.workload.jitter;
  bo.seed = file.workload.seed;
  const models::StepBalancer balancer(sc, *cost, *schedule, bo);
  const models::SequenceShape& shape = balancer.shape();
  Comparison c;
  c.budget = static_cast<std::int64_t>(shape.dp) * shape.micro_batches * shape.seq_len;

  // The step's documents: the trace's batches in turn, or the generator's stream.
  std::vector<traces::DocBatch> trace;
  if (!file.workload.trace_path.empty()) {
    trace = traces::load_doclens(file.workload.trace_path);
    for (const traces::DocBatch& b : trace) {
      const std::int64_t tokens = std::accumulate(b.lengths.begin(), b.lengths.end(), std::int64_t{0});
      if (tokens > c.budget) {
        throw sim::InputError(file.workload.trace_path, fmt::format("line {}", b.line),
                              fmt::format("found a batch of {} tokens, more than the step holds: dp x sequences x seq_len = {}", tokens, c.budget));
      }
    }
  }
  const auto model = file.workload.generator == "lognormal"
                         ? models::DocLengthModel::lognormal(file.workload.median, file.workload.p99, file.workload.max)
                         : (file.workload.generator.empty() ? models::DocLengthModel{}
                                                            : models::DocLengthModel::lognormal_pareto(file.workload.median, file.workload.p99,
                                                                                                       file.workload.max));
  c.workload = trace.empty() ? model.describe() : file.workload.trace_path;
  if (progress != nullptr) progress->set_total(static_cast<std::int64_t>(policies.size()) * steps, "steps");
  for (std::size_t i = 0; i < policies.size(); ++i) {
    Outcome row;
    row.name = specs[i].name;
    if (progress != nullptr) progress->note(row.name);
    models::DocSampler sampler(model, file.workload.seed);
    // After the workload's steps, steps with no new documents until the policy has placed what
    // it held back (WLB-LLM's delayed outliers), so that every policy does the same work.
    int k = 0;
    for (; k < steps || policies[i]->pending() > 0; ++k) {
      const std::vector<std::int64_t> docs = k >= steps ? std::vector<std::int64_t>{}
                                             : trace.empty() ? sampler.batch(c.budget)
                                                             : trace[static_cast<std::size_t>(k) % trace.size()].lengths;
      const models::BatchPlacement placement = policies[i]->place(docs, shape);
      const models::BalanceStep st = balancer.run(placement, static_cast<std::uint64_t>(k));
      double placed = 0;
      for (const auto& rank : placement.ranks) {
        for (const auto& mb : rank) placed += static_cast<double>(std::accumulate(mb.docs.begin(), mb.docs.end(), std::int64_t{0}));
      }
      row.steps.push_back(st.step_s);
      row.tokens += placed;
      row.time += st.step_s;
      row.imbalance += st.attention_imbalance;
      row.deferred = placement.deferred;
      if (progress != nullptr && k < steps) progress->advance();
      if (!trace_path.empty() && k == trace_step && i == 0) {
        sim::TaskGraph g;
        std::vector<sim::Span> spans;
        for (const models::OpSpan& sp : st.spans) {
          const sim::StreamId stream = g.add_stream(fmt::format("dp rank {} stage {}", st.slowest_rank, sp.stage), "compute");
          const auto d = sim::ceil_duration_ns((sp.end - sp.start) * 1e9);
          g.add_compute(fmt::format("{}{} chunk {}", models::to_string(sp.op.kind), sp.op.micro_batch, sp.op.chunk), stream, d);
          const sim::Time at = sim::Time::from_ns(static_cast<std::int64_t>(std::llround(sp.start * 1e9)));
          spans.push_back({at, at + d});
        }
        reports::write_chrome_trace(trace_path, g, spans);
      }
    }
    row.imbalance /= k;
    c.rows.push_back(std::move(row));
  }
  return c;
}

}  // namespace

PolicySpec parse_policy_spec(std::string_view text, std::string_view flag) { return parse_policy_spec_impl(text, flag); }

std::vector<std::pair<std::string, double>> policy_speedups(const std::string& scenario_json, const std::string& policy_list, int steps) {
  const traces::StepScenarioFile file = traces::read_step_scenario(scenario_json, "<scenario>");
  const Comparison c = run_comparison(file, "<scenario>", policy_list, steps, "", 0);
  std::vector<std::pair<std::string, double>> out;
  const double base = c.rows.front().tokens / c.rows.front().time;
  for (const Outcome& r : c.rows) out.emplace_back(r.name, r.tokens / r.time / base);
  return out;
}

namespace {

// Cluster scenarios: the same trace under each scheduler, side by side, with the JCT speedup over
// the first.
void compare_cluster(const CompareOptions& o, std::ostream& out) {
  const std::string list = o.policies.empty() ? "fifo,tiresias,gavel,arena" : o.policies;
  const std::vector<PolicySpec> specs = parse_policies(list);
  for (const PolicySpec& s : specs) (void)policies::cluster_schedulers().create(s.name, s.params, {"<command line>", "--policies"});
  const ClusterSetup setup = load_cluster_setup(o.scenario_path, o.jobs_path, o.skip_bad_rows);
  out << fmt::format("scenario  {}: {} GPUs in {} pools; {} jobs from {}{}\n", o.scenario_path, setup.scenario.cluster.total_gpus(),
                     setup.scenario.cluster.pools.size(), setup.trace.jobs.size(), setup.jobs_path,
                     skipped_note(setup));
  out << fmt::format("{:<18} {:>9} {:>11} {:>11} {:>11} {:>11} {:>12} {:>7} {:>8}\n", "policy", "completed", "avg JCT", "p50 JCT", "p99 JCT",
                     "avg queue", "makespan", "util", "speedup");
  reports::Report report;
  report.set("/scenario", o.scenario_path);
  report.set("/jobs", static_cast<std::int64_t>(setup.trace.jobs.size()));
  double base = 0;
  std::vector<ClusterRun> runs;  // --html: every run, with its allocations
  if (o.progress != nullptr) o.progress->set_total(static_cast<std::int64_t>(specs.size() * setup.trace.jobs.size()), "jobs");
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (o.progress != nullptr) o.progress->note(specs[i].name);
    const ClusterRun run = run_cluster(setup, specs[i], "--policies", !o.html_path.empty(), [&] {
      if (o.progress != nullptr) o.progress->advance();
    });
    if (!o.html_path.empty()) runs.push_back(run);
    const models::ClusterResult& r = run.result;
    if (i == 0) base = r.avg_jct_s;
    const double speedup = r.avg_jct_s > 0 ? base / r.avg_jct_s : 0;
    out << fmt::format("{:<18} {:>9} {:>11} {:>11} {:>11} {:>11} {:>12} {:>7} {:>7.2f}x\n", run.policy, r.completed, reports::human::span(r.avg_jct_s),
                       reports::human::span(r.p50_jct_s), reports::human::span(r.p99_jct_s), reports::human::span(r.avg_queue_s), reports::human::span(r.makespan_s),
                       reports::human::percent(r.gpu_utilization), speedup);
    const std::string at = fmt::format("/policies/{}", i);
    report.set(at + "/name", run.policy);
    report.set(at + "/jobs_completed", static_cast<std::int64_t>(r.completed));
    report.set(at + "/avg_jct_s", r.avg_jct_s);
    report.set(at + "/p50_jct_s", r.p50_jct_s);
    report.set(at + "/p99_jct_s", r.p99_jct_s);
    report.set(at + "/avg_queue_s", r.avg_queue_s);
    report.set(at + "/makespan_s", r.makespan_s);
    report.set(at + "/gpu_utilization", r.gpu_utilization);
    report.set(at + "/jct_speedup", speedup);
  }
  emit_report(report, o.report_path, o.report_json);
  if (!o.html_path.empty()) {
    std::vector<reports::ClusterPageRun> shown;
    for (const ClusterRun& run : runs) shown.push_back({run.policy, &run.result});
    reports::write_cluster_compare_html(o.html_path,
                                        {"Schedulers on " + std::filesystem::path(o.scenario_path).filename().string(), cluster_subtitle(setup),
                                         setup.scenario.cluster.total_gpus()},
                                        shown);
  }
}

}  // namespace

namespace {

// Multimodal scenarios: the same batches under each pipeline policy.
// A policy's row name: its spec as given, "dsv:sparsity=0.8".
std::string spec_label(const PolicySpec& s) {
  std::string label = s.name;
  for (const auto& [key, value] : s.params) label += fmt::format("{}{}={}", label.size() == s.name.size() ? ":" : ";", key, sim::to_string(value));
  return label;
}

void compare_multimodal(const CompareOptions& o, std::ostream& out) {
  if (o.steps < 1) throw sim::InputError("<command line>", "--steps", fmt::format("found {}, expected 1 or more", o.steps));
  const traces::MultimodalScenario sc = traces::load_multimodal_scenario(o.scenario_path);
  // Pipeline policies on the scenario's attention, or (a scenario with a video DiT's
  // "attention", or --policies naming attention policies) video attention policies under
  // megatron-1f1b: the same batches either way.
  const std::string list = !o.policies.empty()     ? o.policies
                           : !sc.policies.empty()  ? sc.policies
                           : sc.attention_given    ? "dense,dsv"
                                                   : "megatron-1f1b,modality-static,pipeweaver";
  const std::vector<PolicySpec> specs = parse_policies(list);
  const bool attention = std::all_of(specs.begin(), specs.end(), [](const PolicySpec& s) { return policies::dit_attentions().contains(s.name); });
  const models::RooflineCostModel cost(sc.gpu, models::training_roofline_params(sc.gpu));
  std::vector<std::unique_ptr<models::MultimodalPipelinePolicy>> policies;
  // Pipeline policies share one cost cache (their layers cost alike); attention policies each
  // have their own.
  std::vector<std::unique_ptr<models::ModuleCostCache>> caches;
  if (!attention) caches.push_back(std::make_unique<models::ModuleCostCache>(sc.model, cost, sc.tp, sc.nvlink, true, sc.attention));
  std::vector<std::string> names;
  for (const PolicySpec& s : specs) {
    if (!attention) {
      policies.push_back(policies::multimodal_pipelines().create(s.name, s.params, {"<command line>", "--policies"}));
      names.emplace_back(policies.back()->name());
      continue;
    }
    const auto a = policies::dit_attentions().create(s.name, s.params, {"<command line>", "--policies"});
    const auto dit = std::find_if(sc.model.modules.begin(), sc.model.modules.end(),
                                  [](const models::ModuleSpec& m) { return m.kind == models::ModuleKind::video_dit; });
    if (dit == sc.model.modules.end()) {
      throw sim::InputError("<command line>", "--policies",
                            fmt::format("found video attention policy {}, but {} has no video DiT", sim::quote(s.name), sc.model.name));
    }
    policies.push_back(policies::multimodal_pipelines().create("megatron-1f1b", {}, {"<command line>", "--policies"}));
    caches.push_back(std::make_unique<models::ModuleCostCache>(sc.model, cost, sc.tp, sc.nvlink, true, a->configure(sc.attention, *dit, o.scenario_path)));
    names.push_back(spec_label(s));  // a row per spec: dsv at several sparsities reads apart
  }
  models::MultimodalSetup setup = models::multimodal_setup(sc.model, cost, sc.gpu, sc.tp, sc.pp, sc.dp, sc.micro_batch, sc.p2p);
  setup.nvlink = sc.nvlink;
  setup.cp = sc.cp;
  setup.sections = sc.sections;
  setup.source = o.scenario_path;
  // The batches: the trace's in turn, or the generator's; the first also profiles the static
  // decisions (partitions, sub-micro-batch sizes).
  std::vector<std::vector<models::MultimodalSample>> batches;
  if (!sc.trace_path.empty()) {
    for (traces::MultimodalBatch& b : traces::load_multimodal_batches(sc.trace_path)) {
      models::check_modalities(sc.model, b.samples, sc.trace_path, fmt::format("line {}/samples", b.line));
      batches.push_back(std::move(b.samples));
    }
  } else {
    models::MultimodalBatchGenerator gen(sc.mix, sc.seed);
    for (int k = 0; k < std::min(o.steps, 1000); ++k) batches.push_back(gen.next());
    models::check_modalities(sc.model, batches.front(), o.scenario_path, "/workload/mix");
  }
  for (const auto& b : batches) {
    if (static_cast<int>(b.size()) < sc.dp * sc.micro_batch) {
      throw sim::InputError(sc.trace_path.empty() ? o.scenario_path : sc.trace_path, "",
                            fmt::format("a batch of {} samples is smaller than dp {} x micro_batch {}", b.size(), sc.dp, sc.micro_batch));
    }
  }
  const std::string cp = sc.cp > 1 ? fmt::format(", cp {}", sc.cp) : "";
  out << fmt::format("scenario  {}: {} on {} x {} (tp {}, pp {}, dp {}{}); {} steps of {} samples\n", sc.name.empty() ? o.scenario_path : sc.name,
                     sc.model.name, sc.tp * sc.pp * sc.dp * sc.cp, sc.gpu.name, sc.tp, sc.pp, sc.dp, cp, o.steps, batches.front().size());
  if (attention) out << "pipeline  megatron-1f1b for every video attention policy\n";
  out << fmt::format("{:<26} {:>10} {:>10} {:>11} {:>8} {:>10} {:>8} {:>12}\n", "policy", "step p50", "step p99", "samples/s", "bubble",
                     "imbalance", "speedup", "candidates");
  reports::Report report;
  report.set("/scenario", sc.name.empty() ? o.scenario_path : sc.name);
  report.set("/steps", static_cast<std::int64_t>(o.steps));
  reports::StepComparePage page{sc.name.empty() ? o.scenario_path : sc.name, fmt::format("{} on {} x {} (tp {}, pp {}, dp {}); {} steps", sc.model.name,
                       sc.tp * sc.pp * sc.dp, sc.gpu.name, sc.tp, sc.pp, sc.dp, o.steps), "samples/s", {}};
  double base = 0;
  std::vector<std::pair<std::string, double>> gpu_hours;  // per policy, per 1k samples
  bool placed = false;                                    // a policy placed GPUs itself
  if (o.progress != nullptr) o.progress->set_total(static_cast<std::int64_t>(policies.size()) * o.steps, "steps");
  for (std::size_t i = 0; i < policies.size(); ++i) {
    models::MultimodalPipelinePolicy& policy = *policies[i];
    const models::ModuleCostCache& costs = *caches[attention ? i : 0];
    if (o.progress != nullptr) o.progress->note(specs[i].name);
    policy.prepare(setup, batches.front(), costs);
    std::vector<double> steps;
    double samples = 0, time = 0, bubble = 0, imbalance = 0, search = 0;
    std::size_t candidates = 0;
    double gpu_s = 0;  // GPU-seconds held (policies that place GPUs may hold fewer than all)
    std::string layout;
    for (int k = 0; k < o.steps; ++k) {
      const auto& batch = batches[static_cast<std::size_t>(k) % batches.size()];
      models::MultimodalStep st = models::multimodal_step(policy, setup, batch, costs);
      gpu_s += st.step_s * (st.gpus > 0 ? st.gpus : sc.tp * sc.pp * sc.dp * sc.cp);
      if (k == 0) layout = st.layout;
      steps.push_back(st.step_s);
      samples += static_cast<double>(batch.size());
      time += st.step_s;
      bubble += st.bubble_fraction;
      imbalance += st.stage_imbalance;
      candidates += st.candidates;
      search += st.search_s;
      if (o.progress != nullptr) o.progress->advance();
      if (k == o.trace_step && !o.trace_path.empty()) {
        // One step's slowest rank, a stream per stage.
        sim::TaskGraph g;
        std::vector<sim::Span> spans;
        std::vector<sim::StreamId> stage_stream;
        for (int s = 0; s < st.program.stages; ++s) stage_stream.push_back(g.add_stream(fmt::format("stage {}", s), "compute"));
        for (const models::PipeSpan& sp : st.run.spans) {
          const models::PipeNode& n = st.program.ops[static_cast<std::size_t>(sp.op)];
          const auto d = sim::ceil_duration_ns((sp.end - sp.start) * 1e9);
          g.add_compute(n.label, stage_stream[static_cast<std::size_t>(n.stage)], d);
          const sim::Time at = sim::Time::from_ns(static_cast<std::int64_t>(std::llround(sp.start * 1e9)));
          spans.push_back({at, at + d});
        }
        const std::filesystem::path t = o.trace_path;
        const std::string path = (t.parent_path() / (t.stem().string() + "." + specs[i].name + t.extension().string())).string();
        reports::write_chrome_trace(path, g, spans);
        // And what a runtime would execute: each stage's actions (compute, send, recv, sync).
        const std::string actions = (t.parent_path() / (t.stem().string() + "." + specs[i].name + ".actions.json")).string();
        traces::write_file_atomically(actions, models::action_lists_json(st.program, models::action_lists(st.program)));
      }
    }
    const double sps = samples / time, p50 = percentile(steps, 0.5), p99 = percentile(steps, 0.99);
    if (i == 0) base = sps;
    const double n = static_cast<double>(o.steps);
    out << fmt::format("{:<26} {:>8.3f} s {:>8.3f} s {:>11.2f} {:>7.1f}% {:>10.3f} {:>7.2f}x {:>12}\n", names[i], p50, p99, sps, 100 * bubble / n,
                       imbalance / n, sps / base, candidates);
    if (attention) {
      // One DiT layer on the first batch's first sample: its attention, and how CP ran it.
      const auto d = static_cast<int>(std::find_if(sc.model.modules.begin(), sc.model.modules.end(), [](const models::ModuleSpec& m) {
                                        return m.kind == models::ModuleKind::video_dit;
                                      }) - sc.model.modules.begin());
      const models::ModuleWork w = costs.work(d, {batches.front().front()});
      const models::DitAttentionCost c = models::dit_attention_cost(sc.model.modules[static_cast<std::size_t>(d)], w.docs, cost, sc.tp, costs.attention());
      out << fmt::format("{:<26} a {}-token sample: attention {:.1f} ms a layer (fwd+bwd), {}kept {:.3f}, estimator {:.1f}%\n", "", w.tokens,
                         (c.f + c.b) * 1e3, sc.cp > 1 ? fmt::format("cp {} {}, ", sc.cp, models::to_string(c.mode)) : "", c.kept,
                         100 * c.estimator_f / (c.f + c.b));
      report.set(fmt::format("/policies/{}/attention_layer_s", i), c.f + c.b);
      report.set(fmt::format("/policies/{}/cp_mode", i), std::string(models::to_string(c.mode)));
    }
    if (!layout.empty()) {
      out << fmt::format("{:<26} {}\n{:<26} {:.0f} GPUs, {:.3f} GPU-h per 1k samples\n", "", layout, "", gpu_s / time, gpu_s / 3600 / samples * 1000);
      report.set(fmt::format("/policies/{}/layout", i), layout);
    }
    if (candidates > 0) {
      out << fmt::format("{:<26} search: {:.0f} candidates/s, {:.3f} s per step\n", "", search > 0 ? static_cast<double>(candidates) / search : 0.0, search / n);
    }
    const std::string at = fmt::format("/policies/{}", i);
    report.set(at + "/name", names[i]);
    report.set(at + "/step_time_p50_s", p50);
    report.set(at + "/step_time_p99_s", p99);
    report.set(at + "/samples_per_s", sps);
    report.set(at + "/bubble_fraction", bubble / n);
    report.set(at + "/stage_imbalance", imbalance / n);
    report.set(at + "/speedup", sps / base);
    report.set(at + "/gpus", gpu_s / time);
    report.set(at + "/gpu_hours_per_1k_samples", gpu_s / 3600 / samples * 1000);
    report.set(at + "/candidates", static_cast<std::int64_t>(candidates));
    page.policies.push_back({names[i], steps, sps, bubble / n, imbalance / n});
    gpu_hours.emplace_back(names[i], gpu_s / 3600 / samples * 1000);
    placed = placed || !layout.empty();
  }
  if (placed) {
    // Some policy held other GPUs than the scenario's: every policy's cost on one line.
    std::string line;
    for (const auto& [name, h] : gpu_hours) line += fmt::format("{}{} {:.3f}", line.empty() ? "" : ", ", name, h);
    out << fmt::format("GPU-hours per 1k samples: {}\n", line);
  }
  if (!o.html_path.empty()) reports::write_step_compare_html(o.html_path, page);
  if (!o.trace_path.empty()) {
    out << fmt::format("step {}: timelines as {} and action lists as .actions.json, each with the policy's name before the extension\n",
                       o.trace_step, o.trace_path);
  }
  emit_report(report, o.report_path, o.report_json);
}

}  // namespace

// Step policies side by side on a step scenario without a workload: pipeline schedules (each
// with the scenario's vp where it runs that many chunks (PipelineSchedule::runs_chunks), else
// one, else two: dualpipe holds its two directions by itself) and MoE communication and routing
// policies (on the scenario's schedule); the emulated step under each.
void compare_step_policies(const CompareOptions& o, const traces::StepScenarioFile& file, const std::string& policy_list, std::ostream& out) {
  const std::vector<PolicySpec> specs = parse_policies(policy_list);
  struct Entry {
    std::string name;
    models::StepScenario sc;
    std::unique_ptr<models::PipelineSchedule> schedule;
    std::vector<policies::RoutingStep> routing;  // per step, for a routing policy
  };
  std::vector<Entry> entries;
  for (const PolicySpec& s : specs) {
    Entry e{spec_label(s), file.scenario, nullptr, {}};
    if (!policies::moe_routings().contains(s.name) && !policies::ep_comm_policies().contains(s.name) && !policies::pipeline_schedules().contains(s.name)) {
      const auto join = [](const std::vector<std::string>& v) { return fmt::format("{}", fmt::join(v, ", ")); };
      throw sim::InputError("<command line>", "--policies",
                            fmt::format("unknown step policy {}; a step scenario without a workload takes pipeline schedules ({}), MoE communication "
                                        "({}) or MoE routing ({})",
                                        sim::quote(s.name), join(policies::pipeline_schedules().names()), join(policies::ep_comm_policies().names()),
                                        join(policies::moe_routings().names())));
    }
    if (policies::moe_routings().contains(s.name)) {
      e.routing = policies::moe_routings().create(s.name, s.params, {"<command line>", "--policies"})->steps(e.sc.model, e.sc.plan, o.steps, o.scenario_path);
      e.schedule = policies::pipeline_schedules().create(e.sc.plan.schedule, {}, {o.scenario_path, "/plan/schedule"});
    } else if (policies::ep_comm_policies().contains(s.name)) {
      policies::ep_comm_policies().create(s.name, s.params, {"<command line>", "--policies"})->apply(e.sc.plan);
      e.schedule = policies::pipeline_schedules().create(e.sc.plan.schedule, {}, {o.scenario_path, "/plan/schedule"});
    } else {
      e.schedule = policies::pipeline_schedules().create(s.name, s.params, {"<command line>", "--policies"});
      // The scenario's vp where the schedule runs it, else one chunk, else two.
      if (!e.schedule->runs_chunks(e.sc.plan.vp)) e.sc.plan.vp = e.schedule->runs_chunks(1) ? 1 : 2;
      e.sc.plan.schedule = s.name;
    }
    entries.push_back(std::move(e));
  }
  const std::unique_ptr<models::CostModel> cost = step_cost_model(file);
  if (o.progress != nullptr) o.progress->set_total(static_cast<int>(entries.size()));
  out << fmt::format("scenario  {}\n", file.name.empty() ? o.scenario_path : file.name);
  out << fmt::format("{:<32} {:>4} {:>12} {:>16} {:>8} {:>12} {:>9}\n", "policy", "vp", "step time", "tokens/s", "bubble", "peak memory", "speedup");
  reports::Report report;
  report.set("/scenario", file.name.empty() ? o.scenario_path : file.name);
  double base = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const models::StepScenario& sc = entries[i].sc;
    const std::string& name = entries[i].name;
    models::StepResult r = models::run_step(sc, *cost, *entries[i].schedule, {});
    if (!entries[i].routing.empty()) {
      // A routing policy's steps differ: the mean over them.
      const double mean = policies::mean_routed_step_s(sc, *cost, *entries[i].schedule, entries[i].routing);
      r.step_time = sim::ceil_duration_ns(mean * 1e9);
      r.tokens_per_s = static_cast<double>(sc.plan.global_batch) * static_cast<double>(sc.plan.seq_len) / mean;
    }
    if (i == 0) base = r.tokens_per_s;
    const double peak = r.memory.total();
    out << fmt::format("{:<32} {:>4} {:>12} {:>16} {:>8} {:>12} {:>8.2f}x\n", name, sc.plan.vp, sim::to_string(r.step_time),
                       reports::human::rate(r.tokens_per_s, "tokens/s"), reports::human::percent(r.bubble_fraction), reports::human::gib(peak),
                       r.tokens_per_s / base);
    const std::string at = fmt::format("/policies/{}", i);
    report.set(at + "/name", name);
    report.set(at + "/vp", static_cast<std::int64_t>(sc.plan.vp));
    report.set(at + "/step_time_s", r.step_time.to_seconds());
    report.set(at + "/tokens_per_s", r.tokens_per_s);
    report.set(at + "/bubble_fraction", r.bubble_fraction);
    report.set(at + "/peak_memory_bytes", peak);
    report.set(at + "/oom", r.oom);
    report.set(at + "/speedup", r.tokens_per_s / base);
    if (o.progress != nullptr) o.progress->advance();
  }
  emit_report(report, o.report_path, o.report_json);
}

void compare(const CompareOptions& given, std::ostream& shown) {
  check_outputs({{"--report", given.report_path}, {"--trace", given.trace_path}, {"--html", given.html_path}});
  // One progress line for the whole comparison; each kind of scenario sets its total. The rows,
  // printed as each policy ends, go beneath it.
  Progress progress("compare", 0, "policies");
  ProgressStream out(shown, progress);
  CompareOptions o = given;
  o.progress = &progress;
  // Each step (iteration) is simulated: beyond these a run takes hours.
  check_count(o.steps, "--steps", 1, kMaxCompareSteps, "steps per policy, each one simulated");
  check_count(o.iterations, "--iterations", 1, kMaxCompareSteps, "RL iterations per policy, each one simulated");
  if (o.trace_path.empty() && o.trace_step != 0) {
    throw sim::InputError("<command line>", "--trace-step",
                          fmt::format("found {} without --trace; expected --trace FILE with it (it picks the step that file shows)", o.trace_step));
  }
  if (compare_multiplex(o, out)) {
    progress.finish();
    return;
  }
  if (traces::is_rl_scenario(o.scenario_path)) {
    if (o.trace_step != 0) {
      throw sim::InputError("<command line>", "--trace-step",
                            fmt::format("found {}; RL scenarios trace the last iteration of each policy, expected no --trace-step", o.trace_step));
    }
    compare_rl(o, out);
    return;
  }
  const bool cluster = !traces::is_multimodal_scenario(o.scenario_path) && traces::is_cluster_scenario(o.scenario_path);
  if (cluster && !o.trace_path.empty()) {
    throw sim::InputError("<command line>", "--trace",
                          "cluster scenarios have no step timeline to trace; `orrery cluster --timeline` writes one run's allocations");
  }
  // The step --trace shows must be one of the steps run: a step past them would write no trace.
  if (!cluster && !o.trace_path.empty() && (o.trace_step < 0 || o.trace_step >= o.steps)) {
    throw sim::InputError("<command line>", "--trace-step",
                          fmt::format("found {}, expected a step of the run: 0 to {} (--steps {})", o.trace_step, o.steps - 1, o.steps));
  }
  if (traces::is_multimodal_scenario(o.scenario_path)) {
    compare_multimodal(o, out);
    return;
  }
  if (cluster) {
    compare_cluster(o, out);
    return;
  }
  if (!o.jobs_path.empty()) throw sim::InputError("<command line>", "--jobs", "expected a cluster scenario (a \"jobs\" section) with --jobs");
  const models::HardwareCatalog gpus = traces::load_gpu_catalog(o.gpus_path);
  const traces::StepScenarioFile file = traces::load_step_scenario(o.scenario_path, gpus);
  // A step scenario without a workload compares pipeline schedules.
  if (!file.has_workload) {
    if (!o.trace_path.empty() || !o.html_path.empty()) {
      throw sim::InputError("<command line>", o.trace_path.empty() ? "--html" : "--trace", "a comparison of pipeline schedules writes --report only");
    }
    compare_step_policies(o, file, o.policies.empty() ? "1f1b,interleaved-1f1b,zb-h1,zb-h2,zb-v,stp,dualpipe" : o.policies, out);
    progress.finish();
    return;
  }
  const std::string policy_list = o.policies.empty() ? "packing,wlb-llm,libra" : o.policies;
  const Comparison c = run_comparison(file, o.scenario_path, policy_list, o.steps, o.trace_path, o.trace_step, o.progress);
  progress.finish();
  out << fmt::format("scenario  {}\nworkload  {} steps of {} tokens ({}), jitter {}\n", file.name.empty() ? o.scenario_path : file.name, o.steps,
                     c.budget, c.workload, file.workload.jitter);
  out << fmt::format("{:<16} {:>12} {:>12} {:>14} {:>10} {:>9}\n", "policy", "step p50", "step p99", "tokens/s", "imbalance", "speedup");
  const double base = c.rows.front().tokens / c.rows.front().time;
  reports::Report report;
  report.set("/scenario", file.name.empty() ? o.scenario_path : file.name);
  report.set("/steps", static_cast<std::int64_t>(o.steps));
  for (std::size_t i = 0; i < c.rows.size(); ++i) {
    const Outcome& r = c.rows[i];
    const double p50 = percentile(r.steps, 0.5), p99 = percentile(r.steps, 0.99), tps = r.tokens / r.time;
    out << fmt::format("{:<16} {:>10.3f} s {:>10.3f} s {:>14} {:>10.3f} {:>8.2f}x\n", r.name, p50, p99, reports::human::count(tps), r.imbalance, tps / base);
    const std::string at = fmt::format("/policies/{}", i);
    report.set(at + "/name", r.name);
    report.set(at + "/step_time_p50_s", p50);
    report.set(at + "/step_time_p99_s", p99);
    report.set(at + "/tokens_per_s", tps);
    report.set(at + "/imbalance", r.imbalance);
    report.set(at + "/speedup", tps / base);
    report.set(at + "/deferred_documents", static_cast<std::int64_t>(r.deferred));
  }
  emit_report(report, o.report_path, o.report_json);
  if (!o.html_path.empty()) {
    reports::StepComparePage page{file.name.empty() ? o.scenario_path : file.name, fmt::format("{} steps of {} tokens ({})", o.steps, c.budget, c.workload),
                         "tokens/s", {}};
    for (const Outcome& r : c.rows) page.policies.push_back({r.name, r.steps, r.tokens / r.time, -1, r.imbalance});
    reports::write_step_compare_html(o.html_path, page);
  }
}

void doclens(const DoclensOptions& o, std::ostream& out) {
  check_outputs({{"--out", o.out_path}});
  if (o.out_path.empty()) throw sim::InputError("<command line>", "--out", "expected the JSONL file to write");
  check_count(o.tokens, "--tokens", 1, kMaxDoclensBatchTokens, "tokens per global batch; the largest trained models use 16M");
  check_count(o.batches, "--batches", o.action == "generate" ? 1 : 0, kMaxDoclensBatches,
              o.action == "generate" ? "batches to generate: one line each" : "batches to keep, 0: all the source holds");
  if (o.action == "generate" && o.tokens * o.batches > kMaxDoclensTokens) {
    throw sim::InputError("<command line>", "--tokens x --batches",
                          fmt::format("found {} x {} = {} tokens, expected at most {} (2^36) in all, about 80 MB of JSONL; write several "
                                      "traces instead",
                                      o.tokens, o.batches, o.tokens * o.batches, kMaxDoclensTokens));
  }
  // Batches go to the file as they are made: memory holds one batch, whatever the trace's length.
  traces::AtomicFile file(o.out_path);
  const auto write_batch = [&](const std::vector<std::int64_t>& batch) { file.write(fmt::format("[{}]\n", fmt::join(batch, ", "))); };
  std::int64_t written = 0;
  if (o.action == "convert") {
    const std::vector<std::int64_t> lengths = traces::read_length_source(o.source, o.data_dir);
    std::vector<std::int64_t> batch;
    std::int64_t room = o.tokens;
    for (std::int64_t l : lengths) {
      while (l > 0 && (o.batches == 0 || written < o.batches)) {
        const std::int64_t piece = std::min(l, room);
        batch.push_back(piece);
        room -= piece;
        l -= piece;
        if (room == 0) {
          write_batch(batch);
          ++written;
          batch.clear();
          room = o.tokens;
        }
      }
      if (o.batches > 0 && written == o.batches) break;
    }
    if (written == 0) {
      throw sim::InputError(o.source, "", fmt::format("holds fewer than {} tokens: not one full batch", o.tokens));
    }
    out << fmt::format("{}: {} documents, {} full batches of {} tokens\n", o.source, lengths.size(), written, o.tokens);
  } else if (o.action == "generate") {
    if (!(o.median >= 1 && o.p99 > o.median && static_cast<double>(o.max) > o.p99)) {
      throw sim::InputError("<command line>", "--median/--p99/--max", "expected 1 <= median < p99 < max");
    }
    models::DocLengthModel m;
    if (o.model == "lognormal") {
      m = models::DocLengthModel::lognormal(o.median, o.p99, o.max);
    } else if (o.model == "lognormal_pareto") {
      m = models::DocLengthModel::lognormal_pareto(o.median, o.p99, o.max);
    } else {
      throw sim::InputError("<command line>", "--model", fmt::format("found {}, expected lognormal or lognormal_pareto", sim::quote(o.model)));
    }
    models::DocSampler sampler(m, o.seed);
    for (; written < o.batches; ++written) write_batch(sampler.batch(o.tokens));
    out << fmt::format("{}: {} batches of {} tokens\n", m.describe(), written, o.tokens);
  } else {
    throw sim::InputError("<command line>", "doclens", fmt::format("found {}, expected convert or generate", sim::quote(o.action)));
  }
  file.commit();
  out << fmt::format("written to {}\n", o.out_path);
}

}  // namespace orrery::runs
