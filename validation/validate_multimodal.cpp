// Multimodal pipeline validation: PipeWeaver's ranking over the static pipelines on a VLM and a
// T2V workload, its gain against the variance of the modality mix, the constant-mix case, and
// 1F1B's closed form under uniform costs.
#include "runs/runs.hpp"
#include "models/hardware/step_params.hpp"
#include "validation/common.hpp"
#include "validation/validation.hpp"

#include "models/hardware/hardware.hpp"
#include "models/multimodal/multimodal_pipeline.hpp"
#include "policies/multimodal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <ostream>

namespace orrery::validation {

using namespace runs;     // the runs each suite repeats

namespace {

// Mean step time per policy over `steps` generated batches (the first extra batch profiles).
std::map<std::string, double> mean_steps(const models::MultimodalModel& m, const Shape& shape, const models::MultimodalMix& mix, int steps,
                                         const std::vector<std::string>& policies, std::map<std::string, double>* bubble = nullptr) {
  const models::GpuSpec& gpu = models::HardwareCatalog::builtin().gpu("h100");
  const models::RooflineCostModel cost(gpu, models::training_roofline_params(gpu));
  models::MultimodalSetup setup = models::multimodal_setup(m, cost, gpu, shape.tp, shape.pp, shape.dp, shape.micro_batch, 50e9);  // 400 Gb/s NIC
  setup.source = "<validation>";
  const models::ModuleCostCache costs(m, cost, shape.tp, setup.nvlink);
  std::map<std::string, double> out;
  for (const std::string& spec : policies) {
    const bool offline = spec == "pipeweaver (offline plan)";
    auto policy = policies::multimodal_pipelines().create(offline ? "pipeweaver" : spec, offline ? sim::GivenParams{{"online", false}} : sim::GivenParams{},
                                                          {"<validation>", ""});
    models::MultimodalBatchGenerator gen(mix, 1);
    policy->prepare(setup, gen.next(), costs);
    double total = 0, bub = 0;
    for (int k = 0; k < steps; ++k) {
      const models::MultimodalStep s = models::multimodal_step(*policy, setup, gen.next(), costs);
      total += s.step_s;
      bub += s.bubble_fraction;
    }
    out[spec] = total / steps;
    if (bubble != nullptr) (*bubble)[spec] = bub / steps;
  }
  return out;
}

// 16 clips of 480x848 with a long tail of frames (median 33, p99 129, at most 257) and a prompt.
models::MultimodalMix t2v_mix() {
  models::MultimodalMix t2v;
  t2v.samples = 16;
  t2v.text_only = 0;
  t2v.video_fraction = 1;
  t2v.text_median = 120;
  t2v.text_p99 = 256;
  t2v.frames_median = 33;
  t2v.frames_p99 = 129;
  t2v.frames_max = 257;
  t2v.video_resolution = {480, 848};
  return t2v;
}

// DSV (arXiv 2502.07590): block-sparse attention with a low-rank estimator and sparsity-aware
// context parallelism on HunyuanVideo's DiT, against dense attention, over sparsity and length.
template <class Check>
void validate_dsv(std::string& md, const Check& check) {
  const models::MultimodalModel& m = models::MultimodalCatalog::builtin().model("hunyuan-video-13b");
  const models::GpuSpec& gpu = models::HardwareCatalog::builtin().gpu("h100");
  const models::RooflineCostModel cost(gpu, models::training_roofline_params(gpu));
  const int tp = 2, cp = 4;
  const int dit = m.find("dit");
  const models::ModuleSpec& spec = m.modules[static_cast<std::size_t>(dit)];
  // One clip's training compute on its tp x cp GPUs: every layer of every module, forward and
  // backward (the frozen text encoder forward only).
  const auto clip_seconds = [&](int frames, const models::DitAttention& a) {
    models::MultimodalSample x;
    x.text_tokens = 256;
    x.videos.push_back({frames, 544, 960});
    double t = 0;
    for (std::size_t i = 0; i < m.modules.size(); ++i) {
      const models::ModuleWork w = models::module_work(m, static_cast<int>(i), {x});
      t += m.modules[i].shape.layers * models::module_layer_seconds(m.modules[i], w, cost, tp, gpu.nvlink_bandwidth, a).total();
    }
    return t;
  };
  const auto attention = [&](double sparsity) {
    models::DitAttention a;
    a.cp = cp;
    a.cp_bandwidth = gpu.nvlink_bandwidth;
    if (sparsity > 0) a.head_sparsity = models::spread_sparsity(spec.shape.heads, sparsity, std::min(0.03, sparsity), "<validation>", "/sparsity");
    return a;
  };
  const std::vector<int> frames = {33, 129, 257, 513, 1025};
  const std::vector<double> sparsity = {0.5, 0.8, 0.9, 0.95};
  md += "### DSV: block-sparse attention for video DiTs\n\n";
  md += "DSV (Tan et al., arXiv 2502.07590) predicts each head's critical key-value blocks with a low-rank estimator, computes attention on\n"
        "them only, and places heads (or ring chunks) on context-parallel GPUs by their sparsity. It reports up to 3.02x training throughput\n"
        "over dense attention, scaling to 128 GPUs and 520K tokens, with attention up to 95% of the time. Here: HunyuanVideo 13B, 544x960\n"
        "clips and a 256-token prompt, one clip's training compute (every layer, forward and backward) on tp 2 x cp 4 H100s with roofline\n"
        "costs; DSV's heads spread evenly over sparsity +- 0.03, a rank-16 estimator; dense and DSV each take, per layer, the cheaper of\n"
        "head-parallel and ring context parallelism (models/multimodal/multimodal.hpp; validation/validate_multimodal.cpp).\n\n";
  md += "| frames | tokens | dense s/clip | attention share | cp (dense) |";
  for (const double s : sparsity) md += fmt::format(" DSV {:.2f} |", s);
  md += " cp (DSV 0.90) |\n|---|---|---|---|---|";
  for (std::size_t k = 0; k < sparsity.size(); ++k) md += "---|";
  md += "---|\n";
  std::vector<std::vector<double>> speedup;
  for (const int f : frames) {
    models::MultimodalSample x;
    x.text_tokens = 256;
    x.videos.push_back({f, 544, 960});
    const models::ModuleWork w = models::module_work(m, dit, {x});
    const double dense = clip_seconds(f, attention(0));
    const models::DitAttentionCost da = models::dit_attention_cost(spec, w.docs, cost, tp, attention(0));
    const double share = spec.shape.layers * (da.f + da.b) / dense;
    md += fmt::format("| {} | {} | {:.2f} | {:.0f}% | {} |", f, w.tokens, dense, 100 * share, models::to_string(da.mode));
    speedup.emplace_back();
    for (const double s : sparsity) {
      speedup.back().push_back(dense / clip_seconds(f, attention(s)));
      md += fmt::format(" {:.2f}x |", speedup.back().back());
    }
    md += fmt::format(" {} |\n", models::to_string(models::dit_attention_cost(spec, w.docs, cost, tp, attention(0.9)).mode));
  }
  bool faster = true, with_sparsity = true, with_length = true;
  double best = 0;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    for (std::size_t k = 0; k < sparsity.size(); ++k) {
      if (sparsity[k] >= 0.8) faster = faster && speedup[i][k] > 1;
      if (k > 0) with_sparsity = with_sparsity && speedup[i][k] > speedup[i][k - 1];
      if (i > 0) with_length = with_length && speedup[i][k] > speedup[i - 1][k];
      best = std::max(best, speedup[i][k]);
    }
  }
  // At the paper's 520K-token scale, DSV at 0.9 against the paper's 3.02x (not a check: the
  // magnitude is the model's, see the text).
  const double at_scale = speedup.back()[2];
  md += fmt::format("\n- DSV is faster than dense attention at sparsity 0.8 and above, at every length **{}**.\n", check(faster));
  md += fmt::format("- Its speedup grows with sparsity at every length **{}**, and with the sequence length at every sparsity **{}**.\n",
                    check(with_sparsity), check(with_length));
  md += fmt::format("- The magnitude is above the paper's: at 520K tokens and sparsity 0.9 DSV is {:.2f}x dense here ({:.1f}x the paper's best,\n"
                    "  3.02x; the table's largest gain is {:.2f}x).\n\n",
                    at_scale, at_scale / 3.02, best);
  md += "Why the gains are larger here: they are one clip's compute with the sparsity fixed, where the paper's are end-to-end training\n"
        "throughput, whose sparsity is what its models learn (lower early in training), and which also pays its estimator's training stage,\n"
        "its Triton kernels' gap to a dense FlashAttention-class kernel, data loading, the VAE and synchronisation. The roofline charges a\n"
        "block-sparse kernel only for its shorter key visits (efficiency L / (L + half_kv), L the kept keys a query block visits), so on long\n"
        "clips, where attention is over 90% of the dense step, the gain approaches 1 / (1 - s) of the attention; the paper measures no such\n"
        "kernel here to calibrate against (../shared/data has none). Per-layer sparsities are taken equal; DSV's vary by layer and step.\n\n";
}

}  // namespace

std::array<models::MultimodalMix, 3> image_variance_mixes() {
  models::MultimodalMix a;
  a.text_only = 0;
  a.video_fraction = 0;
  a.images_mean = 1;
  a.resolutions = {{672, 672}};
  a.text_median = 500;
  a.text_p99 = 520;
  models::MultimodalMix b = a;
  b.text_only = 0.5;
  b.images_mean = 2;
  b.text_p99 = 2000;
  models::MultimodalMix c = b;
  c.text_only = 0.75;
  c.images_mean = 4;
  c.resolutions = {{448, 448}, {896, 896}};
  return {a, b, c};
}

MultimodalValidationSummary validate_multimodal(std::string& md, std::ostream& out) {
  MultimodalValidationSummary summary;
  const auto& cat = models::MultimodalCatalog::builtin();
  const std::vector<std::string> three = {"megatron-1f1b", "modality-static", "pipeweaver"};
  md += "## Multimodal pipelines: PipeWeaver against static pipelines\n\n";
  md += "Step times from the pipeline emulator (models/multimodal/multimodal_pipeline.hpp) with roofline H100 costs, generated batches\n"
        "(models::MultimodalMix; seed 1; the first batch profiles the static decisions), 40 steps per row\n"
        "(validation/validate_multimodal.cpp). PipeWeaver (arXiv 2504.14145) reports VLM +15.6-76.2% and T2V +36.6-97.3% throughput\n"
        "over Megatron-LM, and DIP > nnScaler*/Optimus > Megatron 1F1B.\n\n";
  md += "| workload | GPUs (tp x pp x dp) | policy | samples/s | over megatron-1f1b | bubble |\n|---|---|---|---|---|---|\n";
  const auto check = [&](bool holds) {
    ++summary.checks;
    summary.held += holds ? 1 : 0;
    return holds ? "holds" : "does not hold";
  };
  std::string rankings;
  {
    models::MultimodalMix vlm;
    vlm.samples = 256;
    vlm.frames_p99 = 64;
    vlm.frames_max = 96;
    const models::MultimodalMix t2v = t2v_mix();
    struct Row {
      const char* what;
      const models::MultimodalModel& model;
      Shape shape;
      models::MultimodalMix mix;
    };
    for (const Row& r : {Row{"VLM: Qwen2-VL-7B, 256 samples (30% text-only, 1.5 images or 10% video)", cat.model("qwen2-vl-7b"), {2, 4, 8, 2}, vlm},
                         Row{"T2V: HunyuanVideo 13B, 16 clips of 480x848, frames median 33, p99 129", cat.model("hunyuan-video-13b"), {8, 4, 2, 1}, t2v}}) {
      std::map<std::string, double> bubble;
      const auto t = mean_steps(r.model, r.shape, r.mix, 40, three, &bubble);
      const double samples = r.mix.samples;
      for (const std::string& p : three) {
        md += fmt::format("| {} | {} ({} x {} x {}) | {} | {:.2f} | {:.2f}x | {:.1f}% |\n", r.what, r.shape.tp * r.shape.pp * r.shape.dp, r.shape.tp, r.shape.pp,
                          r.shape.dp, p, samples / t.at(p), t.at("megatron-1f1b") / t.at(p), 100 * bubble.at(p));
      }
      rankings += fmt::format("- {}: pipeweaver > modality-static > megatron-1f1b in throughput **{}**.\n", r.what,
                              check(t.at("pipeweaver") < t.at("modality-static") && t.at("modality-static") < t.at("megatron-1f1b")));
    }
  }
  md += "\n" + rankings + "\n";
  {
    // Batch-to-batch variability of the T2V workload: each batch's compute on one GPU.
    const models::MultimodalModel& t2v = cat.model("hunyuan-video-13b");
    const models::GpuSpec& gpu = models::HardwareCatalog::builtin().gpu("h100");
    const models::RooflineCostModel cost(gpu, models::training_roofline_params(gpu));
    models::MultimodalBatchGenerator gen(t2v_mix(), 1);
    double lo = 0, hi = 0;
    for (int k = 0; k < 100; ++k) {
      const auto batch = gen.next();
      double w = 0;
      for (std::size_t i = 0; i < t2v.modules.size(); ++i) {
        w += t2v.modules[i].shape.layers *
             models::module_layer_seconds(t2v.modules[i], models::module_work(t2v, static_cast<int>(i), batch), cost, 1, 0).total();
      }
      lo = k == 0 ? w : std::min(lo, w);
      hi = std::max(hi, w);
    }
    md += fmt::format("**Variability.** Over 100 batches of the T2V workload above, the heaviest batch has {:.2f}x the compute of the lightest\n"
                      "(PipeWeaver reports 4.15x between its lightest and heaviest packed T2V batches): within 3x to 6x **{}**.\n\n",
                      hi / lo, check(hi / lo >= 3 && hi / lo <= 6));
  }
  // Variance: about one 672-pixel image's worth of patches per sample, ever more unevenly spread.
  md += "**Variance of the mix.** Qwen2-VL-7B on 8 GPUs (tp 2, pp 4, micro-batches of 2), 32 samples a batch with\n"
        "about one 672x672 image's worth of patches each: every sample one image; half of them two; a quarter four of\n"
        "448 or 896 pixels. *pipeweaver (offline plan)* searches once, on the profiling batch, and reuses that plan.\n\n";
  md += "| mix | megatron-1f1b | modality-static | pipeweaver (offline plan) | pipeweaver | over megatron | over modality-static |\n"
        "|---|---|---|---|---|---|---|\n";
  const auto [a, b, c] = image_variance_mixes();
  std::vector<std::pair<double, double>> gains;
  std::map<std::string, double> constant;
  const std::vector<std::string> four = {"megatron-1f1b", "modality-static", "pipeweaver (offline plan)", "pipeweaver"};
  for (const auto& [name, mix] : {std::pair<const char*, const models::MultimodalMix&>{"constant: one image each", a},
                                  {"half the samples, two images", b}, {"a quarter, four of 448 or 896", c}}) {
    const auto t = mean_steps(cat.model("qwen2-vl-7b"), {2, 4, 1, 2}, mix, 40, four);
    if (constant.empty()) constant = t;
    gains.emplace_back(t.at("megatron-1f1b") / t.at("pipeweaver"), t.at("modality-static") / t.at("pipeweaver"));
    md += fmt::format("| {} | {:.3f} s | {:.3f} s | {:.3f} s | {:.3f} s | {:.2f}x | {:.2f}x |\n", name, t.at("megatron-1f1b"), t.at("modality-static"),
                      t.at("pipeweaver (offline plan)"), t.at("pipeweaver"), gains.back().first, gains.back().second);
  }
  const bool grows = gains[0].first < gains[1].first && gains[1].first < gains[2].first && gains[0].second < gains[1].second &&
                     gains[1].second < gains[2].second;
  const double best_static = std::min({constant.at("megatron-1f1b"), constant.at("modality-static"), constant.at("pipeweaver (offline plan)")});
  const double close = constant.at("pipeweaver") / best_static;
  md += fmt::format("\nThe gain grows with the variance of the mix **{}**. With a constant mix, pipeweaver is within 5% of the best static plan\n"
                    "**{}** ({:.3f}x its step time). Most of the gain over the 1F1B pipelines comes from the modality-aware chunks and the\n"
                    "greedy interleaving themselves (the offline plan already has them); per-batch search adds the rest as batches vary.\n\n",
                    check(grows), check(close <= 1.05), close);
  // Degenerate case: an LLM alone, identical samples.
  {
    models::MultimodalModel llm = cat.model("qwen2-vl-7b");
    llm.modules = {llm.modules[2]};
    llm.edges = {};
    models::validate_multimodal(llm, "<validation>", "/llm");
    const models::GpuSpec& gpu = models::HardwareCatalog::builtin().gpu("h100");
    const models::RooflineCostModel cost(gpu, models::training_roofline_params(gpu));
    models::MultimodalSetup setup = models::multimodal_setup(llm, cost, gpu, 1, 4, 1, 2, 0);
    setup.nvlink = 0;
    models::MultimodalSample s;
    s.text_tokens = 2048;
    const std::vector<models::MultimodalSample> batch(16, s);
    const models::ModuleCostCache costs(llm, cost, 1, 0);
    auto megatron = policies::multimodal_pipelines().create("megatron-1f1b", {}, {"<validation>", ""});
    auto pw = policies::multimodal_pipelines().create("pipeweaver", {{"efficiency", 0.01}, {"extra_segments", std::int64_t{0}}}, {"<validation>", ""});
    megatron->prepare(setup, batch, costs);
    pw->prepare(setup, batch, costs);
    const double m1 = models::multimodal_step(*megatron, setup, batch, costs).step_s, m2 = models::multimodal_step(*pw, setup, batch, costs).step_s;
    const double f1 = 11 * 7 * costs.layer(0, {s, s}).total(), f2 = 19 * 7 * costs.layer(0, {s}).total();
    md += fmt::format("**Uniform costs.** Qwen2-7B alone, 16 identical 2048-token samples, 4 stages of 7 layers: megatron-1f1b takes {:.4f} s against\n"
                      "1F1B's (m + p - 1)(F + B) = {:.4f} s (m = 8 micro-batches of 2); pipeweaver with one segment and one-sample sub-micro-\n"
                      "batches takes {:.4f} s against {:.4f} s (m = 16): the closed form {} for both.\n\n",
                      m1, f1, m2, f2, check(std::abs(m1 - f1) < 1e-9 * f1 && std::abs(m2 - f2) < 1e-9 * f2));
  }
  validate_dsv(md, check);
  out << fmt::format("multimodal: {} of {} claims hold\n", summary.held, summary.checks);
  return summary;
}

}  // namespace orrery::validation
