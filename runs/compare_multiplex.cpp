// `orrery compare` on GPU multiplexing scenarios (traces/multiplex_json.hpp): modules sharing
// GPUs (one-per-gpu, mosaic) and LoRA tasks sharing a backbone (per-task, slora, muxtune).
#include "runs/runs.hpp"
#include "models/hardware/step_params.hpp"
#include "policies/multiplex.hpp"
#include "reports/human.hpp"
#include "reports/report.hpp"
#include "runs/policy_spec.hpp"
#include "runs/progress.hpp"
#include "runs/report_out.hpp"
#include "sim/error.hpp"
#include "traces/multiplex_json.hpp"

#include <fmt/format.h>

#include <map>
#include <ostream>

namespace orrery::runs {

namespace {

void no_timelines(const CompareOptions& o) {
  if (!o.trace_path.empty() || !o.html_path.empty()) {
    throw sim::InputError("<command line>", o.trace_path.empty() ? "--html" : "--trace", "a GPU multiplexing comparison writes --report only");
  }
}

// Per GPU its pieces, phases apart by " | " and pieces of a phase by " + "; runs of identical
// GPUs once, with their count: "6 x [vision 100%] 2 x [audio 40% + llm 60% | vision 100%]".
std::string placement_text(const models::ColocationProblem& p, const models::ColocPlacement& pl) {
  std::vector<std::string> gpus;
  for (int g = 0; g < p.gpus; ++g) {
    std::map<int, std::string> phases;
    for (const models::ColocPiece& c : pl.pieces) {
      if (c.gpu != g) continue;
      std::string& text = phases[c.phase];
      text += fmt::format("{}{} {:.0f}%", text.empty() ? "" : " + ", p.modules[static_cast<std::size_t>(c.module)].name, 100 * c.sm);
    }
    std::string gpu;
    for (const auto& [phase, text] : phases) gpu += (gpu.empty() ? "" : " | ") + text;
    if (!gpu.empty()) gpus.push_back("[" + gpu + "]");
  }
  std::string out;
  for (std::size_t i = 0; i < gpus.size();) {
    std::size_t j = i;
    while (j < gpus.size() && gpus[j] == gpus[i]) ++j;
    out += fmt::format("{}{}{}", out.empty() ? "" : " ", j - i > 1 ? fmt::format("{} x ", j - i) : "", gpus[i]);
    i = j;
  }
  return out;
}

void compare_colocation(const CompareOptions& o, std::ostream& out) {
  const traces::ColocationScenario sc = traces::load_colocation_scenario(o.scenario_path);
  const models::RooflineCostModel cost(sc.gpu, models::training_roofline_params(sc.gpu));
  models::MultimodalBatchGenerator gen(sc.mix, sc.seed);
  std::vector<models::MultimodalSample> batch = gen.next();
  batch.resize(static_cast<std::size_t>(sc.micro_batch));
  models::ColocationProblem p = models::colocation_problem(sc.model, batch, sc.gpu, cost, sc.gpus, o.scenario_path);
  if (sc.bandwidth_sm_share) p.gpu.bandwidth_sm_share = *sc.bandwidth_sm_share;
  if (sc.colocation_penalty) p.gpu.colocation_penalty = *sc.colocation_penalty;
  if (sc.placement) models::check_placement(p, *sc.placement, o.scenario_path, "/colocation/placement");
  const std::vector<PolicySpec> specs = parse_policy_list(o.policies.empty() ? "one-per-gpu,temporal,mosaic" : o.policies, "--policies");
  std::vector<std::pair<std::string, models::ColocPlacement>> rows;
  for (const PolicySpec& s : specs) {
    const auto policy = policies::colocation_policies().create(s.name, s.params, {"<command line>", "--policies"});
    rows.emplace_back(s.name, policy->place(p));
  }
  if (sc.placement) rows.emplace_back("given", *sc.placement);
  if (o.progress != nullptr) o.progress->set_total(static_cast<std::int64_t>(rows.size()));
  out << fmt::format("scenario  {}: {} on {} x {}, micro-batches of {} samples\n", sc.name.empty() ? o.scenario_path : sc.name, sc.model.name, sc.gpus,
                     sc.gpu.name, sc.micro_batch);
  std::string modules;
  for (const models::ColocModule& m : p.modules) {
    modules += fmt::format("{}{} {:.1f} ms ({:.1f} GiB)", modules.empty() ? "" : ", ", m.name, 1e3 * m.step_s, m.memory_bytes / 1073741824.0);
  }
  out << fmt::format("modules   {} per micro-batch on a whole GPU\n", modules);
  out << fmt::format("{:<14} {:>11} {:>6} {:>8} {:>12} {:>8}\n", "policy", "samples/s", "GPUs", "pieces", "bottleneck", "speedup");
  reports::Report report;
  report.set("/scenario", sc.name.empty() ? o.scenario_path : sc.name);
  double base = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const models::ColocationResult r = models::evaluate_colocation(p, rows[i].second);
    if (i == 0) base = r.samples_per_s;
    out << fmt::format("{:<14} {:>11.2f} {:>6} {:>8} {:>12} {:>7.2f}x\n", rows[i].first, r.samples_per_s, r.gpus_used, rows[i].second.pieces.size(),
                       p.modules[static_cast<std::size_t>(r.bottleneck)].name, r.samples_per_s / base);
    out << fmt::format("{:<14} {}\n", "", placement_text(p, rows[i].second));
    const std::string at = fmt::format("/policies/{}", i);
    report.set(at + "/name", rows[i].first);
    report.set(at + "/samples_per_s", r.samples_per_s);
    report.set(at + "/gpus_used", static_cast<std::int64_t>(r.gpus_used));
    report.set(at + "/pieces", static_cast<std::int64_t>(rows[i].second.pieces.size()));
    report.set(at + "/speedup", r.samples_per_s / base);
    if (o.progress != nullptr) o.progress->advance();
  }
  emit_report(report, o.report_path, o.report_json);
}

void compare_peft(const CompareOptions& o, std::ostream& out) {
  const traces::PeftScenario sc = traces::load_peft_scenario(o.scenario_path);
  const models::PeftProblem& p = sc.problem;
  const models::RooflineCostModel cost(p.gpu, models::training_roofline_params(p.gpu));
  const std::vector<PolicySpec> specs = parse_policy_list(o.policies.empty() ? "per-task,slora,muxtune" : o.policies, "--policies");
  std::vector<std::unique_ptr<models::PeftPolicy>> policies;
  for (const PolicySpec& s : specs) policies.push_back(policies::peft_policies().create(s.name, s.params, {"<command line>", "--policies"}));
  if (o.progress != nullptr) o.progress->set_total(static_cast<std::int64_t>(policies.size()));
  out << fmt::format("scenario  {}: {} tasks on {} ({} pipeline stage{} of {})\n", sc.name.empty() ? o.scenario_path : sc.name, p.tasks.size(), p.backbone.name,
                     p.stages, p.stages == 1 ? "" : "s", p.gpu.name);
  out << fmt::format("{:<12} {:>10} {:>12} {:>8} {:>8} {:>12} {:>8} {:>9}\n", "policy", "step time", "tokens/s", "padding", "bubble", "memory/GPU", "speedup",
                     "memory");
  reports::Report report;
  report.set("/scenario", sc.name.empty() ? o.scenario_path : sc.name);
  double base = 0, base_memory = 0;
  for (std::size_t i = 0; i < policies.size(); ++i) {
    const models::PeftResult r = models::evaluate_peft(p, policies[i]->plan(p), cost);
    if (i == 0) {
      base = r.tokens_per_s;
      base_memory = r.memory_bytes;
    }
    const double padding = r.padded_tokens > 0 ? 1 - r.real_tokens / r.padded_tokens : 0;
    out << fmt::format("{:<12} {:>8.3f} s {:>12} {:>8} {:>8} {:>12} {:>7.2f}x {:>8.2f}x\n", specs[i].name, r.step_s, reports::human::count(r.tokens_per_s),
                       reports::human::percent(padding), reports::human::percent(r.bubble_fraction), reports::human::gib(r.memory_bytes), r.tokens_per_s / base,
                       base_memory / r.memory_bytes);
    const std::string at = fmt::format("/policies/{}", i);
    report.set(at + "/name", specs[i].name);
    report.set(at + "/step_time_s", r.step_s);
    report.set(at + "/tokens_per_s", r.tokens_per_s);
    report.set(at + "/padding_fraction", padding);
    report.set(at + "/bubble_fraction", r.bubble_fraction);
    report.set(at + "/memory_bytes", r.memory_bytes);
    report.set(at + "/speedup", r.tokens_per_s / base);
    report.set(at + "/memory_reduction", base_memory / r.memory_bytes);
    if (r.memory_bytes > p.gpu.hbm_bytes) {
      out << fmt::format("{:<12} does not fit: {} per GPU, more than the {}'s {}\n", "", reports::human::gib(r.memory_bytes), p.gpu.name,
                         reports::human::gib(p.gpu.hbm_bytes));
    }
    report.set(at + "/fits", r.memory_bytes <= p.gpu.hbm_bytes);
    if (o.progress != nullptr) o.progress->advance();
  }
  emit_report(report, o.report_path, o.report_json);
}

}  // namespace

bool compare_multiplex(const CompareOptions& o, std::ostream& out) {
  const std::string kind = traces::multiplex_kind(o.scenario_path);
  if (kind.empty()) return false;
  no_timelines(o);
  if (kind == "colocation") {
    compare_colocation(o, out);
  } else {
    compare_peft(o, out);
  }
  return true;
}

}  // namespace orrery::runs
