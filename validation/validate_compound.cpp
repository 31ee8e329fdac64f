// Compound and disaggregated training: MegaScale-Omni against the coupled multimodal pipelines as
// the modality mix varies, and Maestro's GPU-hours against one configuration for every section
// on a distillation and an MLLM workload (policies/compound.hpp).
#include "validation/common.hpp"
#include "validation/validation.hpp"

#include "models/hardware/hardware.hpp"
#include "models/hardware/step_params.hpp"
#include "models/multimodal/compound.hpp"
#include "models/multimodal/multimodal_pipeline.hpp"
#include "policies/multimodal.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

namespace orrery::validation {

namespace {

struct Result {
  double step_s = 0, gpus = 0, gpu_h_per_1k = 0;
  std::string layout;
};

// One policy over `steps` generated batches (seed 1; the first extra batch profiles).
Result measure(const models::MultimodalModel& m, const Shape& shape, const models::MultimodalMix& mix, int steps, const std::string& policy,
               const sim::GivenParams& params) {
  const models::GpuSpec& gpu = models::HardwareCatalog::builtin().gpu("h100");
  const models::RooflineCostModel cost(gpu, models::training_roofline_params(gpu));
  models::MultimodalSetup setup = models::multimodal_setup(m, cost, gpu, shape.tp, shape.pp, shape.dp, shape.micro_batch, 50e9);  // 400 Gb/s NIC
  setup.source = "<validation>";
  const models::ModuleCostCache costs(m, cost, shape.tp, setup.nvlink);
  auto p = policies::multimodal_pipelines().create(policy, params, {"<validation>", ""});
  models::MultimodalBatchGenerator gen(mix, 1);
  p->prepare(setup, gen.next(), costs);
  Result r;
  double gpu_s = 0;
  for (int k = 0; k < steps; ++k) {
    const models::MultimodalStep s = models::multimodal_step(*p, setup, gen.next(), costs);
    r.step_s += s.step_s / steps;
    gpu_s += s.step_s * (s.gpus > 0 ? s.gpus : shape.tp * shape.pp * shape.dp);
    if (k == 0) r.layout = s.layout;
  }
  r.gpus = gpu_s / (r.step_s * steps);
  r.gpu_h_per_1k = gpu_s / 3600 / (static_cast<double>(mix.samples) * steps) * 1000;
  return r;
}

models::MultimodalModel distill_model() { return models::distillation_model("distill-llama3-70b-8b", "llama3-70b", "llama3-8b"); }

}  // namespace

CompoundValidationSummary validate_compound(std::string& md, std::ostream& out) {
  CompoundValidationSummary summary;
  const auto check = [&](bool holds) {
    ++summary.checks;
    summary.held += holds ? 1 : 0;
    return holds ? "holds" : "does not hold";
  };
  const auto& cat = models::MultimodalCatalog::builtin();
  md += "## Compound training: MegaScale-Omni and Maestro\n\n";
  md += "Step times from the pipeline emulator (models/multimodal/compound.hpp runs the disaggregated programs) with roofline H100\n"
        "costs and generated batches (models::MultimodalMix; seed 1; the first batch profiles), 8 steps per row\n"
        "(validation/validate_compound.cpp). Neither paper's production data is public: the mixes are synthetic.\n\n";
  // MegaScale-Omni (arXiv 2605.08962, abstract): 1.27-7.57x over four state-of-the-art systems on
  // production dynamic workloads.
  md += "### MegaScale-Omni against the coupled pipelines\n\n"
        "Qwen2-VL-7B on 32 H100 (tp 2, pp 2, dp 8, micro-batches of 2), 64 samples a batch with about one 672x672 image's worth\n"
        "of patches each, ever more unevenly spread (every sample one image; half of them two; a quarter four of 448 or 896\n"
        "pixels). The coupled baselines run the ViT on the LLM's pipeline stages and deal samples round-robin to the replicas;\n"
        "megascale-omni searches its encoder rank set on the profiling batch. The paper reports 1.27-7.57x over four systems\n"
        "on production dynamic workloads.\n\n";
  md += "| mix | megatron-1f1b | pipeweaver | megascale-omni | over megatron-1f1b | over pipeweaver | colocated | omni's layout |\n"
        "|---|---|---|---|---|---|---|---|\n";
  // About one 672-pixel image's worth of patches per sample (the multimodal section's mixes),
  // ever more unevenly spread, then a mix with videos on top.
  auto [steady, mixed, dynamic] = image_variance_mixes();
  steady.samples = mixed.samples = dynamic.samples = 64;
  const Shape omni_shape{2, 2, 8, 2};
  std::vector<double> gains;
  bool above = true;
  int row = 0, steady_encoders = 0;
  std::vector<double> colocated;  // pipeweaver's step over colocated omni's, per mix
  for (const auto& [name, mix] : {std::pair<const char*, const models::MultimodalMix&>{"steady: one 672x672 image each", steady},
                                  {"half the samples, two images", mixed},
                                  {"a quarter, four of 448 or 896", dynamic}}) {
    const Result mg = measure(cat.model("qwen2-vl-7b"), omni_shape, mix, 8, "megatron-1f1b", {});
    const Result pw = measure(cat.model("qwen2-vl-7b"), omni_shape, mix, 8, "pipeweaver", {});
    const Result om = measure(cat.model("qwen2-vl-7b"), omni_shape, mix, 8, "megascale-omni", {});
    const Result co = measure(cat.model("qwen2-vl-7b"), omni_shape, mix, 8, "megascale-omni", {{"colocate", true}});
    colocated.push_back(pw.step_s / co.step_s);
    // The claim is about dynamic mixes: the rows whose samples differ.
    if (row++ > 0) above = above && om.step_s < mg.step_s && om.step_s < pw.step_s;
    else if (std::sscanf(om.layout.c_str(), "encoders on %d GPUs", &steady_encoders) != 1) steady_encoders = 0;
    gains.push_back(std::min(mg.step_s, pw.step_s) / om.step_s);
    md += fmt::format("| {} | {:.3f} s | {:.3f} s | {:.3f} s | {:.2f}x | {:.2f}x | {:.3f} s | {} |\n", name, mg.step_s, pw.step_s, om.step_s,
                      mg.step_s / om.step_s, pw.step_s / om.step_s, co.step_s, om.layout);
  }
  md += fmt::format("\n- On the two varying mixes, megascale-omni > pipeweaver and megatron-1f1b **{}**.\n", check(above));
  md += fmt::format("- Its gain over the better coupled baseline grows as the mix gets more uneven ({:.2f}x, {:.2f}x, {:.2f}x) **{}**.\n\n", gains[0],
                    gains[1], gains[2], check(gains[0] < gains[1] && gains[1] < gains[2]));
  // The encoders' share of the steady mix's compute (one GPU, forward and backward).
  double encoder_s = 0, all_s = 0;
  {
    const models::MultimodalModel& m = cat.model("qwen2-vl-7b");
    const models::GpuSpec& gpu = models::HardwareCatalog::builtin().gpu("h100");
    const models::RooflineCostModel cost(gpu, models::training_roofline_params(gpu));
    const auto batch = models::MultimodalBatchGenerator(steady, 1).next();
    for (std::size_t i = 0; i < m.modules.size(); ++i) {
      const models::ModuleSpec& x = m.modules[i];
      const double t = (x.kind == models::ModuleKind::projector ? 1 : x.shape.layers) *
                       models::module_layer_seconds(x, models::module_work(m, static_cast<int>(i), batch), cost, 1, 0).total();
      all_s += t;
      if (x.kind != models::ModuleKind::llm) encoder_s += t;
    }
  }
  const int gpus = omni_shape.tp * omni_shape.pp * omni_shape.dp, replica = omni_shape.tp * omni_shape.pp;
  md += fmt::format("On the steady mix megascale-omni is slower than pipeweaver: the rank sets split in whole LLM replicas (tp x pp = {}\n"
                    "GPUs), so the encoders get {:.1f}% of the GPUs (the next split: {:.1f}%) for {:.0f}% of the compute, and one side waits\n"
                    "for the other either way, while pipeweaver balances a constant load inside each replica with no GPU set aside.\n"
                    "Disaggregation pays once the load varies from batch to batch and replica to replica.\n\n",
                    replica, 100.0 * steady_encoders / gpus, 100.0 * (steady_encoders + replica) / gpus, 100 * encoder_s / all_s);
  md += fmt::format("*colocated* is `megascale-omni:colocate=true`: the encoders keep their own parallelism but run on the LLM's GPUs\n"
                    "(a summary of the paper speaks of unified colocation; the issue of separate rank sets). Over pipeweaver it gains\n"
                    "{:.2f}x, {:.2f}x and {:.2f}x on the three mixes: no GPUs set aside, so the steady mix loses nothing to the split.\n"
                    "Colocated, megascale-omni > pipeweaver on every mix, by more as the mix gets more uneven **{}**.\n\n",
                    colocated[0], colocated[1], colocated[2],
                    check(colocated[0] > 1 && colocated[0] < colocated[1] && colocated[1] < colocated[2]));
  md += "Why the gains are smaller than the paper's 1.27-7.57x: the baselines here are the strongest coupled pipelines Orrery has\n"
        "(PipeWeaver already balances modalities inside a replica), the model is a 675M ViT beside a 7B LLM (the paper's omni-modal\n"
        "encoders are larger and its sequences longer), 32 GPUs rather than thousands (less data-parallel straggling to remove),\n"
        "and data-parallel gradient synchronisation is left out for every policy. The decentralised reordering, the reshard and\n"
        "the long/short split follow the abstract; their parameters are this simulator's assumptions (policies/compound.cpp).\n\n";
  // Maestro (arXiv 2605.10501): about 40% less GPU consumption in production.
  md += "### Maestro: GPU-hours against one configuration for all sections\n\n"
        "GPU-hours per 1,000 samples (the GPUs a policy holds x its step time). *megatron-1f1b* is one configuration for the\n"
        "whole compound model (every section in one pipeline on all GPUs); *maestro (uniform)* keeps Maestro's sections and\n"
        "wavefront but gives every section the scenario's tp and micro-batch and an equal share of GPUs; *maestro* chooses each\n"
        "section's tp, micro-batch and data-parallel degree. Maestro reports about 40% less GPU consumption in production.\n\n";
  md += "| workload | GPUs (tp x pp x dp) | policy | GPUs held | step | GPU-h per 1k samples | vs megatron-1f1b | layout |\n"
        "|---|---|---|---|---|---|---|---|\n";
  models::MultimodalMix text;
  text.samples = 64;
  text.text_only = 1;
  text.images_mean = 0;
  text.video_fraction = 0;
  text.text_median = 2048;
  text.text_p99 = 8192;
  models::MultimodalMix mllm;
  mllm.samples = 64;
  mllm.text_only = 0.5;
  mllm.images_mean = 2;
  mllm.video_fraction = 0.1;
  mllm.frames_p99 = 64;
  mllm.frames_max = 96;
  struct Workload {
    const char* what;
    models::MultimodalModel model;
    Shape shape;
    models::MultimodalMix mix;
  };
  std::vector<double> savings;
  std::string claims;
  for (const Workload& w : {Workload{"distillation: frozen Llama-3-70B teacher, Llama-3-8B student", distill_model(), {8, 2, 2, 2}, text},
                            Workload{"MLLM: Qwen2-VL-7B, 50% text-only", cat.model("qwen2-vl-7b"), {2, 4, 4, 2}, mllm}}) {
    const Result mg = measure(w.model, w.shape, w.mix, 8, "megatron-1f1b", {});
    const Result un = measure(w.model, w.shape, w.mix, 8, "maestro", {{"uniform", true}});
    const Result ma = measure(w.model, w.shape, w.mix, 8, "maestro", {});
    for (const auto& [label, r] : {std::pair<const char*, const Result&>{"megatron-1f1b", mg}, {"maestro (uniform)", un}, {"maestro", ma}}) {
      md += fmt::format("| {} | {} ({} x {} x {}) | {} | {:.0f} | {:.3f} s | {:.3f} | {:+.0f}% | {} |\n", w.what, w.shape.tp * w.shape.pp * w.shape.dp,
                        w.shape.tp, w.shape.pp, w.shape.dp, label, r.gpus, r.step_s, r.gpu_h_per_1k, 100 * (r.gpu_h_per_1k / mg.gpu_h_per_1k - 1),
                        r.layout.empty() ? "-" : r.layout);
    }
    savings.push_back(1 - ma.gpu_h_per_1k / std::min(mg.gpu_h_per_1k, un.gpu_h_per_1k));
    claims += fmt::format("- {}: maestro uses fewer GPU-hours than both one-configuration runs ({:.0f}% less than the better) **{}**.\n", w.what,
                          100 * savings.back(), check(ma.gpu_h_per_1k < mg.gpu_h_per_1k && ma.gpu_h_per_1k < un.gpu_h_per_1k));
  }
  md += "\n" + claims + "\n";
  md += "Where the figures differ from the paper's ~40%: the distillation saving comes mostly from running the frozen teacher\n"
        "forward-only on its own GPUs at its own tensor parallelism instead of inside the student's pipeline, which this small\n"
        "two-section workload exaggerates or understates depending on the teacher-to-student ratio; the MLLM saving depends on how\n"
        "much of the batch is text-only (those samples never enter the vision section). Sections here have no pipeline of\n"
        "their own (pp 1), the search is a local one on the profiling batch, and transfers between sections are plain\n"
        "transfers on the 400 Gb/s link (one-sided RDMA assumed free of rendezvous).\n\n";
  out << fmt::format("compound: {} of {} claims hold\n", summary.held, summary.checks);
  return summary;
}

}  // namespace orrery::validation
