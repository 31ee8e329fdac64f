// `orrery step`: one training step of a scenario.
#include "runs/runs.hpp"
#include "runs/options.hpp"
#include "reports/html_pages.hpp"
#include "traces/chakra_replay.hpp"
#include "reports/human.hpp"
#include "runs/step_cost.hpp"
#include "runs/report_out.hpp"
#include "runs/step_cost.hpp"

#include "models/hardware/cost.hpp"
#include "models/hardware/step_params.hpp"
#include "models/training/step.hpp"
#include "policies/pipeline.hpp"
#include "sim/error.hpp"
#include "reports/chrome_trace.hpp"
#include "traces/curves_json.hpp"
#include "traces/hardware_json.hpp"
#include "reports/report.hpp"
#include "traces/step_json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <ostream>

namespace orrery::runs {

std::unique_ptr<models::CostModel> step_cost_model(const traces::StepScenarioFile& file) {
  if (file.calibration_path.empty()) return models::training_cost_model(file.scenario.gpu, models::step_context(file.scenario.plan));
  return models::training_cost_model(file.scenario.gpu, models::step_context(file.scenario.plan), traces::load_curves(file.calibration_path));
}

void check_fail_on_oom(const traces::StepScenarioFile& file, const std::string& source, const models::MemoryEstimate& memory, bool oom) {
  if (!oom || !file.fail_on_oom) return;
  const models::GpuSpec& gpu = file.scenario.gpu;
  throw sim::InputError(source, "/plan",
                        fmt::format("out of memory: stage {} needs {} per GPU, the {} has {} (fail_on_oom is set)", memory.stage,
                                    sim::to_string(sim::Bytes(memory.total())), gpu.name, models::memory_budget(gpu).describe()));
}

void set_step_headline(reports::Report& rep, const std::string& scenario_name, const models::StepScenario& sc, const StepHeadline& h) {
  rep.set("/scenario", scenario_name);
  rep.set("/model", sc.model.name);
  rep.set("/gpu", sc.gpu.name);
  rep.set("/gpus", static_cast<std::int64_t>(sc.plan.gpus()));
  rep.set("/step_time_s", h.step_time_s);
  rep.set("/tokens_per_s", h.tokens_per_s);
  rep.set("/tflops_per_gpu", h.tflops_per_gpu);
  rep.set("/mfu", h.mfu);
  rep.set("/mfu_peak", "bf16");  // MFU is against the GPU's dense bf16 peak, whatever the precision
  rep.set("/precision", sc.plan.precision);
  rep.set("/bubble_fraction", h.bubble_fraction);
  rep.set("/exposed_comm_fraction", h.exposed_comm_fraction);
  rep.set("/peak_memory_bytes", h.memory.total());
  rep.set("/oom", h.oom);
  rep.set("/memory/stage", static_cast<std::int64_t>(h.memory.stage));
  rep.set("/memory/usable_bytes", models::memory_budget(sc.gpu).usable_bytes);  // what oom compares the peak with
  rep.set("/memory/hbm_bytes", sc.gpu.hbm_bytes);
  rep.set("/memory/params_bytes", h.memory.params_bytes);
  rep.set("/memory/grads_bytes", h.memory.grads_bytes);
  rep.set("/memory/optimizer_bytes", h.memory.optimizer_bytes);
  rep.set("/memory/activations_bytes", h.memory.activations_bytes);
  rep.set("/memory/logits_bytes", h.memory.logits_bytes);
  rep.set("/memory/backward_bytes", h.memory.backward_bytes);
  // Only where the plan has them (a sweep's table gets a column per key any point reports).
  if (h.memory.gathered_params_bytes > 0) rep.set("/memory/gathered_params_bytes", h.memory.gathered_params_bytes);
  if (h.memory.host_activation_bytes > 0) rep.set("/memory/host_activation_bytes", h.memory.host_activation_bytes);
  rep.set("/micro_batches", static_cast<std::int64_t>(h.micro_batches));
}

std::string plan_line(const models::ParallelPlan& p) {
  std::string line = fmt::format("tp={} pp={} vp={} dp={} cp={} ep={} zero={} micro_batch={} global_batch={} seq_len={} {} recompute={}", p.tp, p.pp,
                                 p.vp, p.dp, p.cp, p.ep, p.zero, p.micro_batch, p.global_batch, p.seq_len, p.schedule, models::to_string(p.recompute));
  if (p.recompute == models::Recompute::selective && p.recompute_modules != models::RecomputeModules{}) {
    line += fmt::format(" recompute_modules=[{}]", models::to_string(p.recompute_modules));
  }
  if (p.precision != "bf16") line += fmt::format(" precision={}", p.precision);
  if (p.fp8_param_gather) line += " fp8_param_gather";
  if (p.grad_reduce != "fp32") line += fmt::format(" grad_reduce={}", p.grad_reduce);
  if (p.fp8_attention) line += " fp8_attention";
  if (p.bf16_layers_first + p.bf16_layers_last > 0 || p.bf16_mtp) {
    line += fmt::format(" bf16_layers={}+{}{}", p.bf16_layers_first, p.bf16_layers_last, p.bf16_mtp ? "+mtp" : "");
  }
  for (const auto& [module, name] : p.module_precision) line += fmt::format(" {}={}", module, name);
  if (p.cuda_graphs != "none") line += fmt::format(" cuda_graphs={}", p.cuda_graphs);
  if (p.overlap_ep_comm) line += " overlap_ep_comm";
  if (p.ep_comm != "inline") line += " ep_comm=" + p.ep_comm;
  if (p.fused_moe_mlp) line += " fused_moe_mlp";
  if (p.ep > 1 && p.moe_dispatch != "nccl") line += " moe_dispatch=" + p.moe_dispatch;
  if (p.cross_entropy != "fused") line += " cross_entropy=" + p.cross_entropy;
  if (p.lora.enabled) {
    std::string targets;
    for (const auto& [on, name] : {std::pair{p.lora.qkv, "qkv"}, {p.lora.proj, "proj"}, {p.lora.fc1, "fc1"}, {p.lora.fc2, "fc2"}}) {
      if (on) targets += (targets.empty() ? "" : "+") + std::string(name);
    }
    line += fmt::format(" lora=rank{}:{}", p.lora.rank, targets);
  }
  if (!p.documents.empty()) line += fmt::format(" documents={}", p.documents.size());
  return line;
}

std::string default_step_scenario() {
  return R"json({
  "name": "Llama 3 8B on 2 DGX H100 (TP 2, PP 2, DP 4, 1F1B)",
  "model": "llama3-8b",
  "cluster": {"gpu": "H100", "topology": "dgx-h100:nodes=2"},
  "plan": {"tp": 2, "pp": 2, "dp": 4, "micro_batch": 1, "global_batch": 64, "seq_len": 8192,
           "schedule": "1f1b", "recompute": "none", "zero": 1}
}
)json";
}

void step(const StepOptions& o, std::ostream& out) {
  check_outputs({{"--report", o.report_path}, {"--trace", o.trace_path}, {"--html", o.html_path}, {"--chakra-out", o.chakra_out}});
  if (o.estimate && !o.chakra_out.empty()) throw sim::InputError("<command line>", "--chakra-out", "the traces need the emulator's graph: drop --estimate");
  if (o.estimate && !o.html_path.empty()) throw sim::InputError("<command line>", "--html", "the report needs the emulator's timeline: drop --estimate");
  const models::HardwareCatalog gpus = traces::load_gpu_catalog(o.gpus_path);
  const std::optional<double> train_tokens = parse_token_count(o.train_tokens, "<command line>", "--train-tokens");
  if (o.comm != "line-rate" && o.comm != "nccl") {
    throw sim::InputError("<command line>", "--comm", fmt::format("unknown communication model {}; valid: line-rate, nccl", sim::quote(o.comm)));
  }
  const bool nccl = o.comm == "nccl";
  const traces::StepScenarioFile file = o.scenario_path.empty() ? traces::read_step_scenario(default_step_scenario(), "<default scenario>", gpus)
                                                                : traces::load_step_scenario(o.scenario_path, gpus);
  const std::string source = o.scenario_path.empty() ? "<default scenario>" : o.scenario_path;
  const models::StepScenario& sc = file.scenario;
  const auto schedule = policies::pipeline_schedules().create(sc.plan.schedule, {}, {source, "/plan/schedule"});
  const std::unique_ptr<models::CostModel> cost_model = step_cost_model(file);
  const models::CostModel& cost = *cost_model;
  if (o.estimate) {  // the closed form instead of the emulator (runs/step_estimate.cpp)
    if (sc.contention == models::Contention::fabric) {
      throw sim::InputError(source, "/cluster/contention",
                            "found \"fabric\", but the closed-form estimate costs each group's collectives alone; drop --estimate to simulate "
                            "every group at once on the whole fabric, or set \"isolated\"");
    }
    step_estimate(file, source, cost, *schedule, o, out);
    return;
  }
  models::StepOptions options;
  options.reuse = !o.no_reuse && o.chakra_out.empty();
  options.keep_graph = !o.trace_path.empty() || !o.html_path.empty() || !o.chakra_out.empty();
  options.comm = nccl ? models::CommModel::nccl : models::CommModel::flows;
  const models::StepResult r = models::run_step(sc, cost, *schedule, options);
  check_fail_on_oom(file, source, r.memory, r.oom);

  const models::ParallelPlan& p = sc.plan;
  const auto gib = [](double b) { return b / 1073741824.0; };
  out << fmt::format("scenario   {}\n", file.name.empty() ? source : file.name);
  out << fmt::format("model      {} ({:.1f}B parameters, {:.1f}B active)\n", sc.model.name, static_cast<double>(sc.model.params()) / 1e9,
                     static_cast<double>(sc.model.active_params()) / 1e9);
  out << fmt::format("cluster    {} x {} ({}){}\n", p.gpus(), sc.gpu.name, sc.topology,
                     sc.contention == models::Contention::fabric ? ", every group's collectives at once on the whole fabric" : "");
  out << fmt::format("plan       {}\n", plan_line(p));
  out << fmt::format("step time  {}  ({} micro-batches)\n", sim::to_string(r.step_time), r.micro_batches);
  out << fmt::format("throughput {}, {:.1f} TFLOP/s per GPU, MFU {} (HFU {}){}\n", reports::human::rate(r.tokens_per_s, "tokens/s"), r.tflops_per_gpu,
                     reports::human::percent(r.mfu), reports::human::percent(r.hfu),
                     p.precision == "bf16" ? "" : fmt::format(" of the dense bf16 peak ({} runs at {} TFLOP/s dense)", p.precision,
                                                              sc.gpu.peak(models::precision_spec(p.precision).gemm).value() / 1e12));
  out << fmt::format("bubble     {:.1f}% of the step; exposed communication {:.1f}%\n", 100 * r.bubble_fraction, 100 * r.exposed_comm_fraction);
  // The parts add up to the peak: the transient term is the larger of the loss's backward and a
  // layer's backward (they never coexist).
  const bool loss_peak = r.memory.logits_bytes >= r.memory.backward_bytes;
  out << fmt::format("memory     {:.1f} GiB peak per GPU (stage {}: weights {:.1f}, grads {:.1f}, optimizer {:.1f}, activations {:.1f}{}, {} {:.1f}) "
                     "of {}{}\n",
                     gib(r.memory.total()), r.memory.stage, gib(r.memory.params_bytes), gib(r.memory.grads_bytes), gib(r.memory.optimizer_bytes),
                     gib(r.memory.activations_bytes),
                     (r.memory.host_activation_bytes > 0 ? fmt::format(" (on the host at their peak: {:.1f})", gib(r.memory.host_activation_bytes)) : "") +
                         (r.memory.gathered_params_bytes > 0 ? fmt::format(", gathered weights {:.1f}", gib(r.memory.gathered_params_bytes)) : ""),
                     loss_peak ? "loss's backward" : "a layer's backward", gib(std::max(r.memory.logits_bytes, r.memory.backward_bytes)),
                     models::memory_budget(sc.gpu).describe(), r.oom ? "  ** OUT OF MEMORY **" : "");
  print_capacity_lines(out, sc, r.step_time.to_seconds(), train_tokens);
  out << fmt::format("simulated  {} ranks, {} tasks, {} flows, model {}\n", r.ranks_simulated, r.tasks, r.flows, cost_model_line(cost, sc.gpu));
  if (sc.contention == models::Contention::fabric) {
    const auto [together, by_loads, apart, alone] = r.comm_mixes;
    out << fmt::format("contention the whole fabric: of the DP, EP, CP and PP collectives, {} ran beside every other kind on their links "
                       "simulated together, {} beside them by link loads (a mix past 2M transfers), {} apart from the others, {} with no other "
                       "kind on their links\n",
                       together, by_loads, apart, alone);
  }
  out << (nccl ? "comm       as NCCL runs it: its algorithm, protocol and latency by size, NVLink and NIC shares fitted on nccl-tests sweeps\n"
               : "comm       line rate: every collective a ring (or direct sends) at NCCL's peak efficiency on each link\n");
  out << "\nstage    compute   exposed comm     bubble       idle  (seconds per GPU)\n";
  for (const auto& s : r.stages) {
    out << fmt::format("{:>5} {:>10.4f} {:>14.4f} {:>10.4f} {:>10.4f}\n", s.stage, s.compute_s, s.exposed_comm_s, s.bubble_s, s.idle_s);
  }

  if (report_wanted(o.report_path, o.report_json)) {
    reports::Report rep;
    set_step_headline(rep, file.name.empty() ? source : file.name, sc,
                      {r.step_time.to_seconds(), r.tokens_per_s, r.tflops_per_gpu, r.mfu, r.bubble_fraction, r.exposed_comm_fraction, r.micro_batches,
                       r.memory, r.oom});
    rep.set("/hfu", r.hfu);
    rep.set("/model_flops", r.model_flops);
    rep.set("/simulated/tasks", static_cast<std::int64_t>(r.tasks));
    rep.set("/simulated/flows", static_cast<std::int64_t>(r.flows));
    rep.set("/simulated/ranks", static_cast<std::int64_t>(r.ranks_simulated));
    if (sc.contention == models::Contention::fabric) {
      rep.set("/simulated/collectives_beside_all", std::int64_t{r.comm_mixes[0]});
      rep.set("/simulated/collectives_by_link_loads", std::int64_t{r.comm_mixes[1]});
      rep.set("/simulated/collectives_apart", std::int64_t{r.comm_mixes[2]});
      rep.set("/simulated/collectives_alone", std::int64_t{r.comm_mixes[3]});
    }
    rep.set("/comm_model", o.comm);
    for (std::size_t i = 0; i < r.stages.size(); ++i) {
      const auto& s = r.stages[i];
      const std::string base = fmt::format("/stages/{}", i);
      rep.set(base + "/compute_s", s.compute_s);
      rep.set(base + "/exposed_comm_s", s.exposed_comm_s);
      rep.set(base + "/bubble_s", s.bubble_s);
      rep.set(base + "/idle_s", s.idle_s);
    }
    set_cost_model_report(rep, cost, sc.gpu);
    set_capacity_report(rep, sc, r.step_time.to_seconds(), train_tokens);
    emit_report(rep, o.report_path, o.report_json);
  }
  if (!o.trace_path.empty()) {
    std::vector<reports::CounterSample> counters;
    counters.reserve(r.link_loads.size());
    for (const models::LinkSample& s : r.link_loads) counters.push_back({s.link, s.at, s.bytes_per_second / 1e9});
    reports::write_chrome_trace(o.trace_path, r.graph, r.spans, counters, "GB/s");
  }
  if (!o.html_path.empty()) reports::write_step_html(o.html_path, file.name.empty() ? source : file.name, sc, r);
  if (!o.chakra_out.empty()) {
    const traces::ChakraWorkload w = traces::chakra_from_step(r, p.gpus());
    traces::write_chakra_workload(o.chakra_out, w);
    std::size_t nodes = 0;
    for (const traces::EtRankTrace& t : w.ranks) nodes += t.nodes.size();
    out << fmt::format("\nchakra     {} ranks, {} nodes, {} communicator groups: {}.<rank>.et, {}.comm_groups.json\n", w.ranks.size(), nodes,
                       w.groups.size(), o.chakra_out, o.chakra_out);
  }
}

}  // namespace orrery::runs
