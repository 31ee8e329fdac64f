// `orrery compare` on RL scenarios: the same rollouts under each RL policy, side by side.
#include "runs/runs.hpp"
#include "reports/html_pages.hpp"
#include "reports/human.hpp"
#include "runs/progress.hpp"
#include "runs/policy_spec.hpp"
#include "runs/report_out.hpp"
#include "policies/rl.hpp"
#include "sim/error.hpp"
#include "reports/chrome_trace.hpp"
#include "reports/report.hpp"
#include "traces/rl_json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <ostream>

namespace orrery::runs {

namespace {

// One iteration of a policy as Chrome trace JSON: a track per generation instance, the trainer
// and the weight sync.
void write_timeline(const std::string& path, const policies::RlRun& run) {
  sim::TaskGraph g;
  std::vector<sim::Span> spans;
  std::map<std::string, sim::StreamId> lanes;
  double origin = run.timeline.empty() ? 0.0 : run.timeline.front().start;
  for (const policies::RlSpan& s : run.timeline) origin = std::min(origin, s.start);
  for (const policies::RlSpan& s : run.timeline) {
    auto it = lanes.find(s.lane);
    if (it == lanes.end()) it = lanes.emplace(s.lane, g.add_stream(s.lane, s.lane.rfind("generation", 0) == 0 ? "generation" : s.lane)).first;
    const auto d = sim::ceil_duration_ns((s.end - s.start) * 1e9);
    g.add_compute(s.name, it->second, d);
    const sim::Time at = sim::Time::from_ns(static_cast<std::int64_t>(std::llround((s.start - origin) * 1e9)));
    spans.push_back({at, at + d});
  }
  reports::write_chrome_trace(path, g, spans);
}

}  // namespace

void compare_rl(const CompareOptions& o, std::ostream& out) {
  if (o.iterations < 1) throw sim::InputError("<command line>", "--iterations", fmt::format("found {}, expected 1 or more", o.iterations));
  const models::RlSetup setup = traces::load_rl_scenario(o.scenario_path, o.iterations);
  // Colocated needs one pool: the default list leaves it out for two.
  const std::string list = !o.policies.empty() ? o.policies
                           : setup.shared      ? "colocated,disaggregated-sync,streamrl-sync,streamrl-async"
                                               : "disaggregated-sync,streamrl-sync,streamrl-async";
  const std::vector<PolicySpec> specs = parse_policy_list(list, "--policies");
  // Every policy named must run this setup before anything is printed.
  for (const PolicySpec& s : specs) policies::rl_policies().create(s.name, s.params, {"<command line>", "--policies"})->check(setup);
  std::size_t samples = 0;
  for (const auto& g : setup.batches.front().groups) samples += g.outputs.size();
  out << fmt::format("scenario  {}: {}; {} iterations of {} prompts ({} samples)\n", setup.name.empty() ? o.scenario_path : setup.name, setup.model.name,
                     o.iterations, setup.batches.front().groups.size(), samples);
  if (setup.shared) {
    out << fmt::format("pool      {} x {} at ${:.2f}/GPU-hour\n", setup.generation_pool.gpus, setup.generation_pool.gpu.name,
                       setup.generation_pool.dollars_per_gpu_hour);
  } else {
    out << fmt::format("pools     generation {} x {} ({}, ${:.2f}/GPU-hour), training {} x {} ({}, ${:.2f}/GPU-hour){}\n", setup.generation_pool.gpus,
                       setup.generation_pool.gpu.name, setup.generation_pool.datacenter, setup.generation_pool.dollars_per_gpu_hour,
                       setup.training_pool.gpus, setup.training_pool.gpu.name, setup.training_pool.datacenter, setup.training_pool.dollars_per_gpu_hour,
                       setup.cross_dc ? fmt::format("; cross-datacenter {:.0f} Gb/s, {:.0f} ms", setup.cross_dc->bandwidth * 8 / 1e9, setup.cross_dc->latency * 1e3)
                                      : "");
  }
  // Each policy as given: its name, and its parameters when there are any.
  std::vector<std::string> labels;
  std::size_t width = 20;
  for (const PolicySpec& spec : specs) {
    std::string label = spec.name;
    char sep = ':';
    for (const auto& [key, value] : spec.params) {
      label += fmt::format("{}{}={}", sep, key, sim::to_string(value));
      sep = ';';
    }
    width = std::max(width, label.size());
    labels.push_back(std::move(label));
  }
  out << fmt::format("{:<{}} {:>9} {:>9} {:>9} {:>10} {:>9} {:>9} {:>10} {:>6} {:>8}  {}\n", "policy", width, "iter p50", "iter p99", "samples/s", "tokens/s",
                     "pipeline", "skewness", "samples/$", "stale", "speedup", "split");
  reports::Report report;
  report.set("/scenario", setup.name.empty() ? o.scenario_path : setup.name);
  report.set("/iterations", static_cast<std::int64_t>(o.iterations));
  double base = 0;
  std::vector<policies::RlRun> runs;  // --html
  if (o.progress != nullptr) o.progress->set_total(static_cast<std::int64_t>(specs.size()));
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (o.progress != nullptr) o.progress->note(labels[i]);
    const policies::RlRun r = policies::run_rl_policy(setup, specs[i].name, specs[i].params, o.iterations);
    if (o.progress != nullptr) o.progress->advance();
    if (i == 0) base = r.samples_per_s;
    const double p50 = percentile(r.iteration_s, 0.5), p99 = percentile(r.iteration_s, 0.99);
    std::string split = r.policy == "colocated" ? fmt::format("{} GPUs, {} instances", r.generation_gpus, r.instances)
                                                : fmt::format("gen {} ({} inst.) / train {}", r.generation_gpus, r.instances, r.training_gpus);
    if (r.resizes > 0) split += fmt::format(" after {} elastic moves", r.resizes);
    out << fmt::format("{:<{}} {:>7.1f} s {:>7.1f} s {:>9.2f} {:>10} {:>8.1f}% {:>8.1f}% {:>10.1f} {:>6.2f} {:>7.2f}x  {}\n", labels[i], width, p50, p99,
                       r.samples_per_s, reports::human::count(r.tokens_per_s), 100 * r.pipeline_bubble, 100 * r.skewness_bubble, r.samples_per_dollar, r.staleness,
                       r.samples_per_s / base, split);
    const std::string at = fmt::format("/policies/{}", i);
    report.set(at + "/name", r.policy);
    report.set(at + "/spec", labels[i]);
    report.set(at + "/resizes", static_cast<std::int64_t>(r.resizes));
    report.set(at + "/dispatcher", r.dispatcher);
    report.set(at + "/generation_gpus", static_cast<std::int64_t>(r.generation_gpus));
    report.set(at + "/training_gpus", static_cast<std::int64_t>(r.training_gpus));
    report.set(at + "/instances", static_cast<std::int64_t>(r.instances));
    report.set(at + "/iteration_p50_s", p50);
    report.set(at + "/iteration_p99_s", p99);
    report.set(at + "/samples_per_s", r.samples_per_s);
    report.set(at + "/tokens_per_s", r.tokens_per_s);
    report.set(at + "/pipeline_bubble", r.pipeline_bubble);
    report.set(at + "/skewness_bubble", r.skewness_bubble);
    report.set(at + "/dollars", r.dollars);
    report.set(at + "/samples_per_dollar", r.samples_per_dollar);
    report.set(at + "/staleness", r.staleness);
    report.set(at + "/weight_sync_s", r.weight_sync_s);
    report.set(at + "/generation_s", r.generation_s);
    report.set(at + "/training_s", r.training_s);
    report.set(at + "/preemptions", static_cast<std::int64_t>(r.preemptions));
    report.set(at + "/training_passes", static_cast<std::int64_t>(r.training_passes));
    report.set(at + "/speedup", r.samples_per_s / base);
    if (!o.trace_path.empty()) {
      const std::filesystem::path t = o.trace_path;
      write_timeline((t.parent_path() / (t.stem().string() + "." + r.policy + t.extension().string())).string(), r);
    }
    if (!o.html_path.empty()) runs.push_back(r);
  }
  out << "pipeline/skewness: shares of all GPU time idle waiting on the other stage (or a sync) / on other instances' long tails\n";
  if (!o.trace_path.empty()) out << fmt::format("the last iteration's timeline as {}, with each policy's name before the extension\n", o.trace_path);
  emit_report(report, o.report_path, o.report_json);
  if (!o.html_path.empty()) reports::write_rl_compare_html(o.html_path, setup.name.empty() ? o.scenario_path : setup.name, labels, runs);
}

}  // namespace orrery::runs
