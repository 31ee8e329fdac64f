// GPU multiplexing validation: Mosaic/Apollo's colocated modules against one module per GPU,
// MuxTune's shared backbone against per-task instances and an S-LoRA-style shared backbone, with
// their trends (GPUs, tasks) and the closed forms the models must meet.
#include "validation/validation.hpp"

#include "models/hardware/hardware.hpp"
#include "models/hardware/step_params.hpp"
#include "models/multimodal/multimodal.hpp"
#include "models/multiplex/colocation.hpp"
#include "models/multiplex/peft.hpp"
#include "models/training/doc_lengths.hpp"
#include "policies/multiplex.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ostream>

namespace orrery::validation {

namespace {

models::ModelSpec shape(const char* name, int layers, std::int64_t hidden, int heads, int kv_heads, std::int64_t ffn, models::MlpKind mlp,
                        std::int64_t vocab = 0) {
  models::ModelSpec s;
  s.name = name;
  s.layers = layers;
  s.hidden = hidden;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.head_dim = heads > 0 ? hidden / heads : 0;
  s.ffn_hidden = ffn;
  s.mlp = mlp;
  s.vocab = vocab;
  return s;
}

models::MultimodalModel omni_small_model() {
  // SigLIP-so400m/14 (27 x 1152, 16 heads, MLP 4304), Whisper-small's encoder (12 x 768, 12 heads,
  // MLP 3072, 50 tokens/s), and a Llama-3.2-1B-shaped LLM (16 x 2048, 32 heads, 8 KV heads, MLP
  // 8192, vocabulary 128256): the shapes of their Hugging Face configs; two-layer MLP projectors.
  using models::ModuleKind;
  using models::MlpKind;
  models::MultimodalModel m;
  m.name = "omni-small";
  models::ModuleSpec vision{"vision", ModuleKind::vision_encoder, shape("siglip-so400m", 27, 1152, 16, 16, 4304, MlpKind::gelu), true};
  vision.patch = 14;
  models::ModuleSpec vproj{"vision_proj", ModuleKind::projector, shape("vision-proj", 0, 2048, 1, 1, 4608, MlpKind::gelu), true};
  vproj.merge = 4;
  vproj.projector_hidden = 2048;
  models::ModuleSpec audio{"audio", ModuleKind::audio_encoder, shape("whisper-small-encoder", 12, 768, 12, 12, 3072, MlpKind::gelu), true};
  audio.tokens_per_second = 50;
  models::ModuleSpec aproj{"audio_proj", ModuleKind::projector, shape("audio-proj", 0, 2048, 1, 1, 768, MlpKind::gelu), true};
  aproj.merge = 2;
  aproj.projector_hidden = 2048;
  models::ModuleSpec llm{"llm", ModuleKind::llm, shape("llama-3.2-1b", 16, 2048, 32, 8, 8192, MlpKind::swiglu, 128256), true};
  m.modules = {vision, vproj, audio, aproj, llm};
  m.edges = {{0, 1}, {1, 4}, {2, 3}, {3, 4}};
  models::validate_multimodal(m, "<validation>", "/omni-small");
  return m;
}

models::MultimodalMix omni_small_mix() {
  models::MultimodalMix mix;
  mix.samples = 64;
  mix.text_only = 0;
  mix.images_mean = 1;
  mix.resolutions = {{448, 448}};
  mix.video_fraction = 0;
  mix.audio_fraction = 1;
  mix.audio_median_s = 10;
  mix.text_median = 256;
  mix.text_p99 = 1024;
  return mix;
}

std::vector<models::PeftTask> lora_task_pool() {
  // Eight tasks as a fine-tuning service would hold them: ranks 8 to 64, Megatron's four targets
  // or fewer, lengths from short classification to long summarisation (medians 128-1500 tokens).
  std::vector<models::PeftTask> t(8);
  const char* names[] = {"chat", "code", "summarize", "classify", "sql", "math", "translate", "extract"};
  const int ranks[] = {16, 32, 16, 8, 16, 64, 16, 8};
  for (std::size_t i = 0; i < t.size(); ++i) {
    t[i].name = names[i];
    t[i].rank = ranks[i];
    t[i].micro_batch = 2;
    t[i].micro_batches = 8;
  }
  t[2].fc1 = t[2].fc2 = false;
  t[3].proj = t[3].fc1 = t[3].fc2 = false;
  t[7].proj = false;
  return t;
}

models::PeftProblem lora_problem(int tasks, std::uint64_t seed) {
  models::PeftProblem p;
  p.backbone = models::ModelCatalog::builtin().model("llama3-8b");
  p.gpu = models::HardwareCatalog::builtin().gpu("H100");
  p.stages = 2;
  const std::vector<models::PeftTask> pool = lora_task_pool();
  const double median[] = {600, 900, 1500, 128, 300, 700, 400, 250}, p99[] = {3000, 3500, 3000, 512, 1200, 2500, 1500, 1000};
  const std::int64_t max[] = {4096, 4096, 4096, 1024, 2048, 4096, 2048, 2048};
  for (int i = 0; i < tasks; ++i) {
    const auto k = static_cast<std::size_t>(i);
    p.tasks.push_back(pool[k]);
    models::DocSampler s(models::DocLengthModel::lognormal(median[k], p99[k], max[k]), seed + k);
    std::vector<std::int64_t> lens;
    for (int n = 0; n < pool[k].micro_batch * pool[k].micro_batches; ++n) lens.push_back(s.next());
    p.lengths.push_back(std::move(lens));
  }
  return p;
}

}  // namespace

MultiplexValidationSummary validate_multiplexing(std::string& md, std::ostream& out) {
  MultiplexValidationSummary summary;
  const auto check = [&](bool holds) {
    ++summary.checks;
    summary.held += holds ? 1 : 0;
    return holds ? "holds" : "does not hold";
  };
  const models::GpuSpec& h100 = models::HardwareCatalog::builtin().gpu("H100");
  const models::RooflineCostModel cost(h100, models::training_roofline_params(h100));

  // Mosaic / Apollo.
  md += "## GPU multiplexing: Mosaic/Apollo and MuxTune\n\n";
  md += "### Mosaic/Apollo: modules sharing GPUs under SM and memory quotas\n\n";
  md += "A small omni model (SigLIP-so400m vision encoder, Whisper-small audio encoder, two MLP projectors, a Llama-3.2-1B-shaped LLM;\n"
        "samples of one 448x448 image, about 10 s of audio and a 256-token median prompt, seed 1) on H100s. Module costs come from the\n"
        "multimodal layer costs (roofline, training efficiencies); the quota and interference model is models/multiplex/colocation.hpp\n"
        "(wave quantisation under an SM quota, HBM saturating at half the SMs, HBM contention between pieces running at once, 3% per\n"
        "extra co-resident piece). Mosaic (arXiv 2605.18710) reports up to 1.31x over deployments that give a GPU to one module at a\n"
        "time (temporal multiplexing: `temporal`, every GPU a replica running its modules in turn); `one-per-gpu` (whole GPUs, one\n"
        "module each) is the issue's baseline.\n\n";
  const models::MultimodalModel omni = omni_small_model();
  const auto one = policies::colocation_policies().create("one-per-gpu", {}, {"<validation>", ""});
  const auto temporal = policies::colocation_policies().create("temporal", {}, {"<validation>", ""});
  const auto mosaic = policies::colocation_policies().create("mosaic", {}, {"<validation>", ""});
  const auto rates = [&](int gpus, int micro_batch) {
    models::MultimodalBatchGenerator gen(omni_small_mix(), 1);
    std::vector<models::MultimodalSample> batch = gen.next();
    batch.resize(static_cast<std::size_t>(micro_batch));
    const models::ColocationProblem p = models::colocation_problem(omni, batch, h100, cost, gpus, "<validation>");
    std::vector<double> r;
    for (const auto* policy : {one.get(), temporal.get(), mosaic.get()}) r.push_back(models::evaluate_colocation(p, policy->place(p)).samples_per_s);
    return r;
  };
  md += "| GPUs | samples per micro-batch | one-per-gpu samples/s | temporal | mosaic | mosaic over temporal | over one-per-gpu |\n"
        "|---|---|---|---|---|---|---|\n";
  std::vector<double> over_temporal, over_one;
  std::vector<int> temporal_mb;  // the micro-batch of each over_temporal
  bool above = true;
  for (const auto& [gpus, mb] : std::vector<std::pair<int, int>>{{8, 1}, {8, 2}, {8, 4}, {8, 8}, {5, 2}, {16, 2}}) {
    const std::vector<double> r = rates(gpus, mb);
    above = above && r[2] >= r[0] * (1 - 1e-9) && r[2] >= r[1] * (1 - 1e-9);
    if (gpus == 8) over_temporal.push_back(r[2] / r[1]), temporal_mb.push_back(mb);
    if (mb == 2) over_one.push_back(r[2] / r[0]);
    md += fmt::format("| {} | {} | {:.2f} | {:.2f} | {:.2f} | {:.2f}x | {:.2f}x |\n", gpus, mb, r[0], r[1], r[2], r[2] / r[1], r[2] / r[0]);
  }
  const bool shrinks = std::is_sorted(over_temporal.rbegin(), over_temporal.rend());
  md += fmt::format("\n- mosaic >= both baselines in every row **{}** (by construction: their plans are among its candidates, judged by the same\n"
                    "  model); over temporal its largest gain is {:.2f}x (paper: up to 1.31x).\n", check(above),
                    *std::max_element(over_temporal.begin(), over_temporal.end()));
  // Where it does not shrink throughout, from which micro-batch on it does.
  std::size_t from = 0;
  while (from + 1 < over_temporal.size() && !std::is_sorted(over_temporal.rbegin(), over_temporal.rend() - static_cast<std::ptrdiff_t>(from))) ++from;
  const std::string partly = shrinks ? "" : fmt::format(" (from {} samples on it does: {:.2f}x to {:.2f}x)", temporal_mb[from], over_temporal[from], over_temporal.back());
  md += fmt::format("- The gain over temporal shrinks as micro-batches grow ({:.2f}x at 1 sample, {:.2f}x at 8) **{}**{}: a small micro-batch leaves\n"
                    "  most SMs of a GPU idle in the encoders' and projectors' kernels (few output tiles), which modules running at once fill;\n"
                    "  at 8 samples every module fills an H100 and only wave-quantisation tails remain to share.\n",
                    over_temporal.front(), over_temporal.back(), check(shrinks), partly);
  md += fmt::format("- Over one-per-gpu the gain shrinks as GPUs grow ({:.2f}x on 5 GPUs, {:.2f}x on 8, {:.2f}x on 16) **{}**: whole GPUs per module\n"
                    "  round the small modules' share up, which matters less on many GPUs.\n",
                    over_one[1], over_one[0], over_one[2], check(over_one[1] > over_one[0] && over_one[0] > over_one[2]));
  {
    models::MultimodalBatchGenerator gen(omni_small_mix(), 1);
    std::vector<models::MultimodalSample> batch = gen.next();
    batch.resize(8);
    const models::ColocationProblem p = models::colocation_problem(omni, batch, h100, cost, 8, "<validation>");
    bool exact = true, monotone = true;
    for (const models::ColocModule& m : p.modules) {
      exact = exact && models::quota_time(m, p.gpu, 1.0) == m.step_s;
      for (int k = 1; k < 100; ++k) monotone = monotone && models::quota_time(m, p.gpu, (k + 1) / 100.0) <= models::quota_time(m, p.gpu, k / 100.0);
    }
    md += fmt::format("- Closed forms: a module alone at a 100% quota runs at its whole-GPU time **{}**; its time never grows with its quota "
                      "(1% steps) **{}**.\n\n", check(exact), check(monotone));
  }
  md += "Why Orrery's figures differ from the paper's: the paper measures end-to-end training with its own execution engine on its\n"
        "testbed and models; here the gain comes only from the model above (wave quantisation leaving SMs idle in small kernels, HBM\n"
        "bandwidth a few SMs saturate, whole GPUs against fractional quotas), with assumed interference constants (not fitted:\n"
        "../shared/data has no MPS measurements), and without pipeline fill, inter-module transfers or data-parallel all-reduces.\n"
        "That the largest gain over temporal lands near the paper's 1.31x is not evidence: it follows from the assumed constants.\n"
        "One-per-gpu loses much more (a projector alone on an H100) because the issue's baseline gives tiny modules whole GPUs.\n\n";

  // MuxTune.
  md += "### MuxTune: LoRA tasks sharing one backbone\n\n";
  md += "Llama-3-8B (frozen, bf16) on a pipeline of 2 H100 stages; N of eight LoRA tasks (ranks 8-64, lengths drawn from\n"
        "log-normals with medians 128-1500 tokens, 16 sequences a task per step, seed 1); costs from the roofline kernel model\n"
        "(models/multiplex/peft.hpp). per-task: one backbone copy per task (HF-PEFT/NeMo), run in turn, padded to each micro-batch's\n"
        "longest; slora: one copy, the tasks' k-th micro-batches fused, padded to the fused longest; muxtune: one copy, sequences\n"
        "aligned to 128-token chunks and spread over balanced fused micro-batches (as many as keep each within the largest micro-batch\n"
        "a task runs alone). MuxTune (arXiv 2603.02885) reports up to 2.33x\n"
        "throughput and 5.29x less memory than HF-PEFT, NeMo and SL-PEFT.\n\n";
  md += "| tasks | per-task tokens/s | slora tokens/s | muxtune tokens/s | muxtune over per-task | over slora | memory/GPU per-task | muxtune | memory saved |\n"
        "|---|---|---|---|---|---|---|---|---|\n";
  std::vector<double> speed, saved;
  bool ranked = true;
  for (const int n : {1, 2, 4, 8}) {
    const models::PeftProblem p = lora_problem(n, 1);
    std::vector<models::PeftResult> r;
    for (const char* name : {"per-task", "slora", "muxtune"}) {
      r.push_back(models::evaluate_peft(p, policies::peft_policies().create(name, {}, {"<validation>", ""})->plan(p), cost));
    }
    speed.push_back(r[2].tokens_per_s / r[0].tokens_per_s);
    saved.push_back(r[0].memory_bytes / r[2].memory_bytes);
    ranked = ranked && r[2].tokens_per_s > r[1].tokens_per_s && r[2].tokens_per_s > r[0].tokens_per_s;
    md += fmt::format("| {} | {:.0f} | {:.0f} | {:.0f} | {:.2f}x | {:.2f}x | {:.1f} GiB | {:.1f} GiB | {:.2f}x |\n", n, r[0].tokens_per_s, r[1].tokens_per_s,
                      r[2].tokens_per_s, speed.back(), r[2].tokens_per_s / r[1].tokens_per_s, r[0].memory_bytes / 1073741824.0,
                      r[2].memory_bytes / 1073741824.0, saved.back());
  }
  const bool grows = std::is_sorted(speed.begin(), speed.end()) && std::is_sorted(saved.begin(), saved.end());
  md += fmt::format("\n- muxtune above both baselines in throughput at every N **{}**; muxtune needs less memory than per-task at every N "
                    "**{}**. slora, padding every sequence to the fused longest (tasks of 128 to 1500-token medians), falls below per-task\n"
                    "  as tasks are added: the padding MuxTune's chunk alignment removes. Eight per-task instances need more than an H100's\n"
                    "  80 GiB: they would not run at all, while muxtune fits.\n",
                    check(ranked), check(std::all_of(saved.begin(), saved.end(), [](double s) { return s > 1; })));
  md += fmt::format("- Both gains grow with the number of tasks **{}**: {:.2f}x throughput and {:.2f}x memory at 8 tasks (paper: up to 2.33x and "
                    "5.29x).\n", check(grows), speed.back(), saved.back());
  {
    // Closed forms on a small fixture: padding saved, and one copy plus N adapters.
    const models::PeftProblem p = lora_problem(4, 1);
    const auto slora = policies::peft_policies().create("slora", {}, {"<validation>", ""})->plan(p);
    auto chunked = slora;
    chunked.padding = models::PeftPadding::chunk;
    chunked.chunk = 128;
    std::int64_t expected = 0;
    for (const auto& mb : slora.pipelines.front()) {
      std::int64_t longest = 0, n = 0, aligned = 0;
      for (const auto& part : mb.parts) {
        for (const std::int64_t l : part.lengths) {
          longest = std::max(longest, l);
          ++n;
          aligned += (l + 127) / 128 * 128;
        }
      }
      expected += n * longest - aligned;
    }
    const models::PeftResult a = models::evaluate_peft(p, slora, cost), b = models::evaluate_peft(p, chunked, cost);
    const auto mux = models::evaluate_peft(p, policies::peft_policies().create("muxtune", {}, {"<validation>", ""})->plan(p), cost);
    double adapters = 0;
    for (const auto& t : p.tasks) adapters += 16 * models::adapter_params(p.backbone, t) / p.stages;
    const double one_copy = 2.0 * static_cast<double>(p.backbone.params()) / p.stages;
    md += fmt::format("- Closed forms (4 tasks): chunk alignment saves exactly sum(n x longest - sum ceil(l/128) x 128) = {} padded tokens "
                      "**{}**; muxtune's weights are one backbone copy plus four adapters ({:.3f} + {:.3f} GiB) **{}**.\n\n",
                      expected, check(static_cast<std::int64_t>(std::llround(a.padded_tokens - b.padded_tokens)) == expected), one_copy / 1073741824.0,
                      adapters / 1073741824.0, check(std::abs(mux.weights_bytes + mux.adapter_bytes - one_copy - adapters) < 1));
  }
  md += "Why Orrery's figures differ from the paper's: the per-task baseline here runs its instances one after another on the same GPUs\n"
        "(the paper's instances share them concurrently, and its largest gains come from its operator orchestration hiding pipeline\n"
        "stalls and communication, not modelled here); the throughput gain comes from the backbone GEMMs reading the weights once for\n"
        "all tasks instead of once per task (small per-task micro-batches are memory-bound on the roofline), from less padding, and from\n"
        "one pipeline fill instead of one per task. The memory saving here is N copies of the bf16 backbone against one; the paper's\n"
        "baselines also hold framework state per instance, and its 5.29x is its best case over its task mixes.\n\n";
  out << fmt::format("multiplexing: {} of {} claims hold\n", summary.held, summary.checks);
  return summary;
}

}  // namespace orrery::validation
