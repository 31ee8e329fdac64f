// `orrery plan`: plan search. Enumerate, prune (divisibility, memory), rank by the closed-form
// estimate, confirm the best few with the step emulator.
#include "runs/runs.hpp"
#include "runs/options.hpp"
#include "studies/plan_search.hpp"
#include "runs/progress.hpp"
#include "runs/report_out.hpp"
#include "runs/step_cost.hpp"

#include "models/hardware/cost.hpp"
#include "models/hardware/step_params.hpp"
#include "models/training/step.hpp"
#include "policies/pipeline.hpp"
#include "sim/error.hpp"
#include "traces/hardware_json.hpp"
#include "traces/json_input.hpp"
#include "reports/report.hpp"
#include "traces/step_json.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <chrono>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <tuple>

namespace orrery::studies {

using namespace runs;  // the runs a study repeats

namespace {

std::vector<int> divisors(int n, int limit) {
  std::vector<int> out;
  for (int d = 1; d <= std::min(n, limit); ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double gib(double bytes) { return bytes / 1073741824.0; }

}  // namespace

std::string plan_label(const models::ParallelPlan& p) {
  std::string s = fmt::format("tp{} pp{}", p.tp, p.pp);
  if (p.vp > 1) s += fmt::format(" vp{}", p.vp);
  s += fmt::format(" dp{}", p.dp);
  if (p.cp > 1) s += fmt::format(" cp{}", p.cp);
  if (p.ep > 1) s += fmt::format(" ep{}", p.ep);
  s += fmt::format(" mb{} {} zero{}", p.micro_batch, p.schedule, p.zero);
  if (p.recompute != models::Recompute::none) s += fmt::format(" rc-{}", models::to_string(p.recompute));
  return s;
}

PlanSearchSpec read_plan_search(std::string_view json_text, const std::string& source, const models::HardwareCatalog& gpus) {
  const auto doc = traces::parse_json(json_text, source);
  traces::JsonObject top = doc->root().as_object();
  PlanSearchSpec s;
  s.source = source;
  if (auto n = top.optional("name")) s.name = n->as_string();
  top.optional("description");
  s.model = traces::read_step_model(top.required("model"));
  const traces::JsonNode cluster_node = top.required("cluster");
  const traces::StepCluster cluster = traces::read_step_cluster(cluster_node, gpus);
  if (cluster.contention == models::Contention::fabric) {
    throw sim::InputError(source, cluster_node.pointer() + "/contention",
                          "found \"fabric\", but the plan search ranks plans by the closed-form estimate, which costs each group's collectives alone; "
                          "expected \"isolated\" (then run the chosen plan with `orrery step` on a scenario with contention \"fabric\")");
  }
  s.gpu = cluster.gpu;
  s.topology = cluster.topology;
  s.gpus = cluster.gpus;
  s.global_batch = top.required("global_batch").as_int_in(1, 1 << 30);
  if (auto v = top.optional("seq_len")) {
    s.seq_len = v->as_int();
    if (s.seq_len < 1 || s.seq_len > models::kMaxSeqLen) {
      v->fail_expected(fmt::format("a sequence length from 1 to {} tokens ({})", models::kMaxSeqLen, models::kMaxSeqLenReason));
    }
  }
  // The memory rule of step and sweep (models::memory_budget); a limit may only be stricter.
  const models::MemoryBudget budget = models::memory_budget(s.gpu);
  s.memory_limit = budget.usable_bytes;
  if (auto v = top.optional("memory_limit")) {
    s.memory_limit = v->as_bytes().value();
    if (!(s.memory_limit > 0)) v->fail_expected("a positive size such as \"70 GiB\"");
    if (s.memory_limit > budget.usable_bytes) {
      v->fail(fmt::format("found {}, expected at most the {}'s memory ({}): a plan above it runs out of memory", sim::to_string(sim::Bytes(s.memory_limit)),
                          s.gpu.name, budget.describe()));
    }
  }
  if (auto v = top.optional("cluster_sizes")) {
    for (const traces::JsonNode& n : v->as_array()) {
      s.cluster_sizes.push_back(n.as_int_in(1, 1 << 20));
      (void)models::topology_with_gpus(s.topology, s.cluster_sizes.back(), source, n.pointer());
    }
    if (s.cluster_sizes.empty()) v->fail_expected("at least one GPU count");
  }
  if (auto c = top.optional("constraints")) {
    traces::JsonObject o = c->as_object();
    if (auto v = o.optional("max_tp")) s.max_tp = v->as_int_in(1, 1 << 20);
    if (auto v = o.optional("max_pp")) s.max_pp = v->as_int_in(1, 1 << 20);
    if (auto v = o.optional("max_cp")) s.max_cp = v->as_int_in(1, 1 << 20);
    if (auto v = o.optional("max_ep")) s.max_ep = v->as_int_in(1, 1 << 20);
    if (auto v = o.optional("max_vp")) s.max_vp = v->as_int_in(1, 64);
    if (auto v = o.optional("top_k")) s.top_k = v->as_int_in(0, 100);
    if (auto v = o.optional("overlap_tp_comm")) s.overlap_tp_comm = v->as_bool();
    if (auto v = o.optional("precision")) {
      s.precision = v->as_string();
      models::ParallelPlan probe;
      probe.precision = s.precision;
      models::validate_precision(probe, s.gpu, source, c->pointer());  // an unknown name, or one the GPU cannot run
    }
    if (auto v = o.optional("grad_reduce")) {
      s.grad_reduce = v->as_string();
      if (const std::string why = models::check_grad_reduce(s.grad_reduce); !why.empty()) v->fail(why);
    }
    if (auto v = o.optional("micro_batches")) {
      s.micro_batches.clear();
      for (const traces::JsonNode& n : v->as_array()) s.micro_batches.push_back(n.as_int_in(1, 1 << 20));
      if (s.micro_batches.empty()) v->fail_expected("at least one micro-batch size");
    }
    if (auto v = o.optional("schedules")) {
      s.schedules.clear();
      for (const traces::JsonNode& n : v->as_array()) {
        s.schedules.push_back(n.as_string());
        policies::pipeline_schedules().create(s.schedules.back(), {}, {source, n.pointer()});  // unknown names list the valid ones
      }
      if (s.schedules.empty()) v->fail_expected("at least one schedule");
    }
    if (auto v = o.optional("recompute")) {
      s.recompute.clear();
      for (const traces::JsonNode& n : v->as_array()) {
        const std::string r = n.as_string();
        if (r == "none") s.recompute.push_back(models::Recompute::none);
        else if (r == "selective") s.recompute.push_back(models::Recompute::selective);
        else if (r == "full") s.recompute.push_back(models::Recompute::full);
        else n.fail(fmt::format("found {}, expected none, selective or full", sim::quote(r)));
      }
      if (s.recompute.empty()) v->fail_expected("at least one recompute mode");
    }
    if (auto v = o.optional("zero")) {
      s.zero.clear();
      for (const traces::JsonNode& n : v->as_array()) s.zero.push_back(n.as_int_in(0, 3));
      if (s.zero.empty()) v->fail_expected("at least one ZeRO stage");
    }
    o.finish();
  }
  top.finish();
  return s;
}

PlanSearchResult search_plans(const PlanSearchSpec& s) {
  const auto t0 = std::chrono::steady_clock::now();
  PlanSearchResult result;
  const int per_unit = models::link_rates(s.topology).gpus_per_unit;
  const int max_tp = s.max_tp > 0 ? s.max_tp : per_unit;
  const models::RooflineCostModel cost(s.gpu, models::training_roofline_params(s.gpu, models::StepContext{"megatron", s.precision}));
  models::FabricCosts fabric(s.topology, models::CommModel::nccl_closed);
  std::map<std::string, std::unique_ptr<models::PipelineSchedule>> schedules;
  for (const std::string& name : s.schedules) schedules[name] = policies::pipeline_schedules().create(name, {}, {s.source, "/constraints/schedules"});
  // Schedules of several chunks per stage (interleaving, zb-v, stp) and of one.
  const auto chunked = [&](const std::string& name) { return !schedules.at(name)->runs_chunks(1); };
  const bool interleaved = std::any_of(s.schedules.begin(), s.schedules.end(), chunked);
  std::vector<std::string> flat;  // one-chunk schedules (pp = 1 runs only the first)
  for (const std::string& name : s.schedules) {
    if (!chunked(name)) flat.push_back(name);
  }

  std::string first_reason;
  double smallest = 0;
  std::string smallest_plan;
  std::vector<PlanCandidate> survivors;
  models::StepScenario sc{s.model, {}, s.gpu, s.topology};
  const std::size_t variants = s.recompute.size() * s.zero.size();
  for (const int tp : divisors(s.gpus, max_tp)) {
    for (const int cp : divisors(s.gpus / tp, s.max_cp)) {
      for (const int pp : divisors(s.gpus / (tp * cp), s.max_pp)) {
        const int dp = s.gpus / (tp * cp * pp);
        const std::vector<int> eps = s.model.moe.enabled() ? divisors(dp * cp, s.max_ep) : std::vector<int>{1};
        for (const int ep : eps) {
          for (const int mb : s.micro_batches) {
            for (int vp = 1; vp <= (pp > 1 ? s.max_vp : 1); ++vp) {
              if (vp > 1 && !interleaved) break;
              std::vector<std::string> names = flat;
              if (vp > 1) {
                names.clear();
                for (const std::string& name : s.schedules) {
                  if (schedules.at(name)->runs_chunks(vp)) names.push_back(name);
                }
              }
              if (pp == 1 && names.size() > 1) names.resize(1);
              if (names.empty()) continue;
              for (const std::string& name : names) {
                models::ParallelPlan& p = sc.plan;
                p = models::ParallelPlan{};
                p.tp = tp, p.cp = cp, p.pp = pp, p.dp = dp, p.ep = ep, p.vp = vp;
                p.micro_batch = mb;
                p.global_batch = s.global_batch;
                p.seq_len = s.seq_len;
                p.schedule = name;
                p.overlap_tp_comm = s.overlap_tp_comm;
                p.grad_reduce = s.grad_reduce;
                p.precision = s.precision;
                result.enumerated += variants;
                const models::PipelineSchedule& schedule = *schedules.at(name);
                models::PipelinePlan order;
                try {
                  models::validate_plan(p, s.model, s.gpus, s.source, "/plan");
                  order = schedule.plan(models::pipeline_shape(p), s.source, "/plan/schedule");
                } catch (const sim::InputError& e) {
                  if (first_reason.empty()) first_reason = e.what();
                  result.pruned_divisibility += variants;
                  continue;
                }
                for (const models::Recompute rc : s.recompute) {
                  for (const int z : s.zero) {
                    p.recompute = rc;
                    p.zero = z;
                    // A schedule that orders by the op costs (the zero-bubble heuristic) holds what
                    // its order on the estimate's costs holds: the estimate's memory.
                    std::optional<models::StepEstimate> est;
                    if (schedule.orders_by_cost()) est = models::estimate_step(sc, cost, schedule, fabric);
                    const models::MemoryEstimate mem = est ? est->memory : models::estimate_memory(p, s.model, order, models::fp8_any_layout(s.gpu));
                    if (smallest == 0 || mem.total() < smallest) {
                      smallest = mem.total();
                      smallest_plan = plan_label(p);
                    }
                    if (mem.total() > s.memory_limit) {
                      ++result.pruned_memory;
                      continue;
                    }
                    survivors.push_back({p, est ? *est : models::estimate_step(sc, cost, schedule, fabric), std::nullopt});
                    ++result.estimated;
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  if (result.enumerated == result.pruned_divisibility) {
    throw sim::InputError(s.source, "/global_batch",
                          fmt::format("no plan of tp <= {}, cp <= {}, pp <= {} and micro-batches {} divides global batch {} of {} on {} GPUs "
                                      "(the first reason: {})",
                                      max_tp, s.max_cp, s.max_pp, fmt::join(s.micro_batches, "/"), s.global_batch, s.model.name, s.gpus,
                                      first_reason));
  }
  if (survivors.empty()) {
    throw sim::InputError(s.source, "/memory_limit",
                          fmt::format("no plan fits in {} per GPU: the smallest of {} plans that divide needs {} ({}); expected more GPUs, "
                                      "a larger limit or looser constraints",
                                      sim::to_string(sim::Bytes(s.memory_limit)), result.enumerated - result.pruned_divisibility,
                                      sim::to_string(sim::Bytes(smallest)), smallest_plan));
  }
  std::stable_sort(survivors.begin(), survivors.end(), [](const PlanCandidate& a, const PlanCandidate& b) {
    if (a.estimate.step_time_s != b.estimate.step_time_s) return a.estimate.step_time_s < b.estimate.step_time_s;
    if (a.plan.zero != b.plan.zero) return a.plan.zero < b.plan.zero;  // equal time: the simpler sharding
    return a.estimate.memory.total() < b.estimate.memory.total();
  });
  // One row per layout: the best ZeRO stage and recompute mode of each.
  std::set<std::tuple<int, int, int, int, int, int, int, std::string>> seen;
  for (PlanCandidate& c : survivors) {
    const auto& p = c.plan;
    if (!seen.insert({p.tp, p.pp, p.vp, p.dp, p.cp, p.ep, p.micro_batch, p.schedule}).second) continue;
    result.top.push_back(std::move(c));
    if (static_cast<int>(result.top.size()) >= std::max(1, s.top_k)) break;
  }
  result.search_s = seconds_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  Progress progress("plan: confirming", std::min<std::int64_t>(s.top_k, static_cast<std::int64_t>(result.top.size())), "plans");
  for (PlanCandidate& c : result.top) {
    if (static_cast<int>(result.confirmed) >= s.top_k) break;
    sc.plan = c.plan;
    c.emulated = models::run_step(sc, cost, *schedules.at(c.plan.schedule));
    ++result.confirmed;
    progress.advance();
  }
  progress.finish();
  result.confirm_s = seconds_since(t1);
  return result;
}

PlanSearchSpec at_cluster_size(const PlanSearchSpec& spec, int gpus, std::string_view source, std::string_view where) {
  PlanSearchSpec s = spec;
  s.topology = models::topology_with_gpus(spec.topology, gpus, source, where);
  s.gpus = gpus;
  return s;
}

namespace {

// "--cluster-sizes 64,128,256": GPU counts, each 1 to 2^20.
std::vector<int> parse_cluster_sizes(const std::string& text) {
  std::vector<int> out;
  if (text.empty()) return out;
  std::string_view rest = text;
  while (true) {
    const std::size_t comma = std::min(rest.find(','), rest.size());
    const std::string item(rest.substr(0, comma));
    std::size_t used = 0;
    long long v = 0;
    try {
      v = item.empty() || item.front() == '+' || item.front() == ' ' ? -1 : std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || v < 1 || v > (1 << 20)) {
      throw sim::InputError("<command line>", "--cluster-sizes",
                            fmt::format("found {}, expected GPU counts from 1 to {} separated by commas, such as 64,128,256", sim::quote(item), 1 << 20));
    }
    out.push_back(static_cast<int>(v));
    if (comma == rest.size()) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

// The step time a plan's row stands on: the emulator's when it confirmed the plan, else the estimate.
double best_step_time(const PlanCandidate& c) { return c.emulated ? c.emulated->step_time.to_seconds() : c.estimate.step_time_s; }

void print_search(std::ostream& out, const PlanSearchSpec& spec, const PlanSearchResult& r, std::optional<double> train_tokens) {
  const models::MemoryBudget budget = models::memory_budget(spec.gpu);
  out << fmt::format("cluster     {} x {} ({}), global batch {} x {} tokens, memory limit {}\n", spec.gpus, spec.gpu.name, spec.topology,
                     spec.global_batch, spec.seq_len,
                     spec.memory_limit == budget.usable_bytes ? budget.describe()
                                                              : fmt::format("{:.1f} GiB per GPU (memory_limit; {})", gib(spec.memory_limit), budget.describe()));
  out << fmt::format("candidates  {} enumerated, {} pruned by divisibility, {} pruned by memory, {} estimated ({:.2f} s); "
                     "{} confirmed by the emulator ({:.2f} s)\n\n",
                     r.enumerated, r.pruned_divisibility, r.pruned_memory, r.estimated, r.search_s, r.confirmed, r.confirm_s);
  out << fmt::format("{:>4}  {:<52} {:>10} {:>7} {:>10} {:>7} {:>7} {:>8}{}  {}\n", "rank", "plan", "est. step", "est MFU", "emul. step", "emu MFU",
                     "diff", "GiB/GPU", train_tokens ? fmt::format(" {:>12}", "to train") : "", "layers per stage");
  for (std::size_t i = 0; i < r.top.size(); ++i) {
    const PlanCandidate& c = r.top[i];
    const std::string emu = c.emulated ? fmt::format("{:>9.3f}s {:>6.1f}% {:>+6.1f}%", c.emulated->step_time.to_seconds(), 100 * c.emulated->mfu,
                                                     100 * (c.estimate.step_time_s / c.emulated->step_time.to_seconds() - 1))
                                       : fmt::format("{:>10} {:>7} {:>7}", "-", "-", "-");
    const std::string train =
        train_tokens ? fmt::format(" {:>12}", human_duration(models::training_time(*train_tokens, c.plan, best_step_time(c)).seconds)) : "";
    out << fmt::format("{:>4}  {:<52} {:>9.3f}s {:>6.1f}% {} {:>8.1f}{}  {}\n", i + 1, plan_label(c.plan), c.estimate.step_time_s, 100 * c.estimate.mfu,
                       emu, gib(c.estimate.memory.total()), train, models::describe_stage_layers(c.plan, spec.model));
  }
  if (train_tokens) {
    out << fmt::format("to train    on {} tokens at the emulated step time (the estimate's where not confirmed)\n", token_count_text(*train_tokens));
  }
}

void set_search_report(reports::Report& rep, const std::string& base, const PlanSearchSpec& spec, const PlanSearchResult& r,
                       std::optional<double> train_tokens) {
  rep.set(base + "/gpus", static_cast<std::int64_t>(spec.gpus));
  rep.set(base + "/topology", spec.topology);
  rep.set(base + "/memory_limit_bytes", spec.memory_limit);
  rep.set(base + "/search/enumerated", static_cast<std::int64_t>(r.enumerated));
  rep.set(base + "/search/pruned_divisibility", static_cast<std::int64_t>(r.pruned_divisibility));
  rep.set(base + "/search/pruned_memory", static_cast<std::int64_t>(r.pruned_memory));
  rep.set(base + "/search/estimated", static_cast<std::int64_t>(r.estimated));
  rep.set(base + "/search/confirmed", static_cast<std::int64_t>(r.confirmed));
  for (std::size_t i = 0; i < r.top.size(); ++i) {
    const PlanCandidate& c = r.top[i];
    const models::ParallelPlan& p = c.plan;
    const std::string b = fmt::format("{}/plans/{}", base, i);
    rep.set(b + "/label", plan_label(p));
    rep.set(b + "/tp", static_cast<std::int64_t>(p.tp));
    rep.set(b + "/pp", static_cast<std::int64_t>(p.pp));
    rep.set(b + "/vp", static_cast<std::int64_t>(p.vp));
    rep.set(b + "/dp", static_cast<std::int64_t>(p.dp));
    rep.set(b + "/cp", static_cast<std::int64_t>(p.cp));
    rep.set(b + "/ep", static_cast<std::int64_t>(p.ep));
    rep.set(b + "/micro_batch", static_cast<std::int64_t>(p.micro_batch));
    rep.set(b + "/schedule", p.schedule);
    rep.set(b + "/zero", static_cast<std::int64_t>(p.zero));
    rep.set(b + "/recompute", models::to_string(p.recompute));
    rep.set(b + "/peak_memory_bytes", c.estimate.memory.total());
    rep.set(b + "/oom", models::out_of_memory(c.estimate.memory, spec.gpu));
    rep.set(b + "/estimated/step_time_s", c.estimate.step_time_s);
    rep.set(b + "/estimated/mfu", c.estimate.mfu);
    rep.set(b + "/estimated/tflops_per_gpu", c.estimate.tflops_per_gpu);
    if (c.emulated) {
      rep.set(b + "/emulated/step_time_s", c.emulated->step_time.to_seconds());
      rep.set(b + "/emulated/mfu", c.emulated->mfu);
      rep.set(b + "/emulated/tflops_per_gpu", c.emulated->tflops_per_gpu);
      rep.set(b + "/emulated/oom", c.emulated->oom);
    }
    const std::vector<std::vector<int>> stages = models::stage_layers(p, spec.model);
    for (std::size_t k = 0; k < stages.size(); ++k) {
      int layers = 0;
      for (const int l : stages[k]) layers += l;
      rep.set(fmt::format("{}/layers_per_stage/{}", b, k), static_cast<std::int64_t>(layers));
    }
    if (train_tokens) {
      const models::TrainingTime t = models::training_time(*train_tokens, p, best_step_time(c));
      rep.set(b + "/train/tokens", t.tokens);
      rep.set(b + "/train/steps", t.steps);
      rep.set(b + "/train/time_s", t.seconds);
      rep.set(b + "/train/days", t.seconds / 86400);
      rep.set(b + "/train/from", c.emulated ? "emulated" : "estimated");
    }
  }
}

}  // namespace

void plan(const PlanOptions& o, std::ostream& out) {
  if (o.top_k) check_count(*o.top_k, "--top", 0, 100, "plans to confirm with the emulator; 0: rank by the estimate only");
  check_outputs({{"--report", o.report_path}});
  const std::optional<double> train_tokens = parse_token_count(o.train_tokens, "<command line>", "--train-tokens");
  const std::vector<int> cli_sizes = parse_cluster_sizes(o.cluster_sizes);
  const models::HardwareCatalog gpus = traces::load_gpu_catalog(o.gpus_path);
  PlanSearchSpec spec = read_plan_search(traces::read_text_file(o.plan_path), o.plan_path, gpus);
  if (o.top_k) spec.top_k = *o.top_k;
  // The cluster sizes to search, each checked before any search runs.
  std::vector<PlanSearchSpec> specs;
  if (!cli_sizes.empty()) {
    for (const int n : cli_sizes) specs.push_back(at_cluster_size(spec, n, "<command line>", "--cluster-sizes"));
  } else if (!spec.cluster_sizes.empty()) {
    for (std::size_t i = 0; i < spec.cluster_sizes.size(); ++i) {
      specs.push_back(at_cluster_size(spec, spec.cluster_sizes[i], o.plan_path, fmt::format("/cluster_sizes/{}", i)));
    }
  } else {
    specs.push_back(spec);
  }

  out << fmt::format("plan search {}\n", spec.name.empty() ? o.plan_path : spec.name);
  out << fmt::format("model       {} ({:.1f}B parameters, {} layers)\n", spec.model.name, static_cast<double>(spec.model.params()) / 1e9,
                     spec.model.layers);
  if (specs.size() == 1) {
    const PlanSearchResult r = search_plans(specs.front());
    print_search(out, specs.front(), r, train_tokens);
    if (report_wanted(o.report_path, o.report_json)) {
      reports::Report rep;
      rep.set("/name", spec.name.empty() ? o.plan_path : spec.name);
      rep.set("/model", spec.model.name);
      rep.set("/gpu", spec.gpu.name);
      set_search_report(rep, "", specs.front(), r, train_tokens);
      emit_report(rep, o.report_path, o.report_json);
    }
    return;
  }
  // Several sizes: each search in full, then one line per size with its best plan. A size where
  // no plan divides or fits is a row with the reason, not the end of the run.
  struct SizeRow {
    const PlanSearchSpec* spec;
    std::optional<PlanSearchResult> result;
    std::string reason;
  };
  std::vector<SizeRow> rows;
  for (const PlanSearchSpec& s : specs) {
    out << "\n";
    SizeRow row{&s, std::nullopt, ""};
    try {
      row.result = search_plans(s);
      print_search(out, s, *row.result, train_tokens);
    } catch (const sim::InputError& e) {
      row.reason = e.what();
      out << fmt::format("cluster     {} x {} ({}): {}\n", s.gpus, s.gpu.name, s.topology, row.reason);
    }
    rows.push_back(std::move(row));
  }
  out << fmt::format("\ncapacity    the best plan at each size (step time and MFU from the emulator where confirmed){}\n",
                     train_tokens ? fmt::format("; time to train on {} tokens", token_count_text(*train_tokens)) : "");
  out << fmt::format("{:>6}  {:<52} {:>10} {:>7} {:>14}{}\n", "GPUs", "plan", "step", "MFU", "tokens/s", train_tokens ? fmt::format(" {:>12}", "to train") : "");
  for (const SizeRow& row : rows) {
    if (!row.result) {
      out << fmt::format("{:>6}  none: {}\n", row.spec->gpus, row.reason);
      continue;
    }
    const PlanCandidate& c = row.result->top.front();
    const double step = best_step_time(c);
    const double mfu = c.emulated ? c.emulated->mfu : c.estimate.mfu;
    const double tokens_per_s = static_cast<double>(c.plan.global_batch) * static_cast<double>(c.plan.seq_len) / step;
    out << fmt::format("{:>6}  {:<52} {:>9.3f}s {:>6.1f}% {:>14.0f}{}\n", row.spec->gpus, plan_label(c.plan), step, 100 * mfu, tokens_per_s,
                       train_tokens ? fmt::format(" {:>12}", human_duration(models::training_time(*train_tokens, c.plan, step).seconds)) : "");
  }
  if (report_wanted(o.report_path, o.report_json)) {
    reports::Report rep;
    rep.set("/name", spec.name.empty() ? o.plan_path : spec.name);
    rep.set("/model", spec.model.name);
    rep.set("/gpu", spec.gpu.name);
    for (std::size_t k = 0; k < rows.size(); ++k) {
      const std::string base = fmt::format("/sizes/{}", k);
      if (rows[k].result) {
        set_search_report(rep, base, *rows[k].spec, *rows[k].result, train_tokens);
      } else {
        rep.set(base + "/gpus", static_cast<std::int64_t>(rows[k].spec->gpus));
        rep.set(base + "/topology", rows[k].spec->topology);
        rep.set(base + "/error", rows[k].reason);
      }
    }
    emit_report(rep, o.report_path, o.report_json);
  }
}

}  // namespace orrery::studies
