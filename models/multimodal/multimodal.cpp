#include "models/multimodal/multimodal.hpp"

#include "models/hardware/kernel.hpp"
#include "sim/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

namespace orrery::models {

std::vector<ImageSize> default_image_resolutions() { return {{448, 448}, {672, 672}, {896, 896}, {1344, 1344}}; }

std::string_view to_string(ModuleKind k) {
  switch (k) {
    case ModuleKind::vision_encoder: return "vision_encoder";
    case ModuleKind::audio_encoder: return "audio_encoder";
    case ModuleKind::projector: return "projector";
    case ModuleKind::llm: return "llm";
    case ModuleKind::text_encoder: return "text_encoder";
    case ModuleKind::video_dit: return "video_dit";
  }
  return "?";
}

ModuleKind parse_module_kind(std::string_view text, std::string_view source, std::string_view where) {
  for (const ModuleKind k : {ModuleKind::vision_encoder, ModuleKind::audio_encoder, ModuleKind::projector, ModuleKind::llm,
                             ModuleKind::text_encoder, ModuleKind::video_dit}) {
    if (to_string(k) == text) return k;
  }
  throw sim::InputError(std::string(source), std::string(where),
                        fmt::format("found {}, expected vision_encoder, audio_encoder, projector, llm, text_encoder or video_dit",
                                    sim::quote(text)));
}

int MultimodalModel::find(std::string_view module) const {
  for (std::size_t i = 0; i < modules.size(); ++i) {
    if (modules[i].name == module) return static_cast<int>(i);
  }
  return -1;
}

std::int64_t MultimodalModel::params() const {
  std::int64_t n = 0;
  for (const ModuleSpec& m : modules) {
    if (m.kind == ModuleKind::projector) {
      n += m.shape.ffn_hidden * (m.projector_hidden > 0 ? m.projector_hidden : m.shape.hidden) +
           (m.projector_hidden > 0 ? m.projector_hidden * m.shape.hidden : 0);
    } else {
      n += m.shape.layers * (m.shape.attention_params() + m.shape.dense_mlp_params());
      if (m.kind == ModuleKind::llm) n += m.shape.embedding_params();
    }
  }
  return n;
}

namespace {

bool is_encoder(ModuleKind k) { return k == ModuleKind::vision_encoder || k == ModuleKind::audio_encoder; }
bool is_sink(ModuleKind k) { return k == ModuleKind::llm || k == ModuleKind::video_dit; }

}  // namespace

void validate_multimodal(MultimodalModel& m, std::string_view source, std::string_view where) {
  const auto fail = [&](const std::string& what) { throw sim::InputError(std::string(source), std::string(where), what); };
  const auto n = static_cast<int>(m.modules.size());
  if (n == 0) fail("found no modules");
  for (int i = 0; i < n; ++i) {
    const ModuleSpec& s = m.modules[static_cast<std::size_t>(i)];
    if (s.name.empty()) fail(fmt::format("module {} has no name", i));
    for (int j = 0; j < i; ++j) {
      if (m.modules[static_cast<std::size_t>(j)].name == s.name) fail(fmt::format("two modules are named {}", sim::quote(s.name)));
    }
    if (s.kind != ModuleKind::projector) {
      ModelSpec shape = s.shape;  // encoders and DiTs have no vocabulary
      if (s.kind != ModuleKind::llm && shape.vocab <= 0) shape.vocab = 1;
      validate_model(shape, source, fmt::format("{}/modules/{}", where, s.name));
    } else if (s.shape.hidden <= 0 || s.merge < 1) {
      fail(fmt::format("projector {} needs a positive output width and merge", sim::quote(s.name)));
    }
    if (s.kind == ModuleKind::vision_encoder && (s.patch < 1 || s.temporal_patch < 1)) fail(fmt::format("vision encoder {} needs a patch size", sim::quote(s.name)));
    if (s.kind == ModuleKind::audio_encoder && !(s.tokens_per_second > 0)) fail(fmt::format("audio encoder {} needs tokens_per_second", sim::quote(s.name)));
    if (s.kind == ModuleKind::video_dit && (s.patch < 1 || s.temporal_patch < 1)) fail(fmt::format("video DiT {} needs a patch and a temporal stride", sim::quote(s.name)));
  }
  std::vector<std::vector<int>> out(static_cast<std::size_t>(n)), in(static_cast<std::size_t>(n));
  for (const ModuleEdge& e : m.edges) {
    if (e.from < 0 || e.from >= n || e.to < 0 || e.to >= n) fail(fmt::format("an edge {} -> {} names a module the model lacks", e.from, e.to));
    if (e.from == e.to) fail(fmt::format("an edge from {} to itself: a cycle", sim::quote(m.modules[static_cast<std::size_t>(e.from)].name)));
    out[static_cast<std::size_t>(e.from)].push_back(e.to);
    in[static_cast<std::size_t>(e.to)].push_back(e.from);
  }
  // Cycles: depth-first search, reporting the modules on the cycle.
  std::vector<int> colour(static_cast<std::size_t>(n), 0), order, stack;
  std::function<void(int)> visit = [&](int v) {
    colour[static_cast<std::size_t>(v)] = 1;
    stack.push_back(v);
    for (const int w : out[static_cast<std::size_t>(v)]) {
      if (colour[static_cast<std::size_t>(w)] == 1) {
        std::string names;
        for (auto it = std::find(stack.begin(), stack.end(), w); it != stack.end(); ++it) names += m.modules[static_cast<std::size_t>(*it)].name + " -> ";
        fail(fmt::format("the module graph has a cycle: {}{}", names, m.modules[static_cast<std::size_t>(w)].name));
      }
      if (colour[static_cast<std::size_t>(w)] == 0) visit(w);
    }
    stack.pop_back();
    colour[static_cast<std::size_t>(v)] = 2;
    order.push_back(v);
  };
  for (int v = 0; v < n; ++v) {
    if (colour[static_cast<std::size_t>(v)] == 0) visit(v);
  }
  std::reverse(order.begin(), order.end());
  int sinks = 0;
  for (int v = 0; v < n; ++v) {
    const ModuleSpec& s = m.modules[static_cast<std::size_t>(v)];
    if (out[static_cast<std::size_t>(v)].empty()) {
      if (!is_sink(s.kind)) fail(fmt::format("module {} ({}) feeds nothing: a dangling module", sim::quote(s.name), to_string(s.kind)));
      ++sinks;
    }
    if (s.kind == ModuleKind::projector) {
      if (in[static_cast<std::size_t>(v)].size() != 1 || !is_encoder(m.modules[static_cast<std::size_t>(in[static_cast<std::size_t>(v)][0])].kind)) {
        fail(fmt::format("projector {} must be fed by exactly one encoder", sim::quote(s.name)));
      }
    }
    if (is_encoder(s.kind) && (out[static_cast<std::size_t>(v)].size() != 1 ||
                               m.modules[static_cast<std::size_t>(out[static_cast<std::size_t>(v)][0])].kind != ModuleKind::projector)) {
      fail(fmt::format("encoder {} must feed exactly one projector", sim::quote(s.name)));
    }
  }
  if (sinks != 1) fail(fmt::format("found {} sink modules, expected one LLM or video DiT that every module feeds", sinks));
  // Reorder topologically, renumbering the edges; a projector's input width is its encoder's
  // width times merge.
  std::vector<int> position(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) position[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = i;
  std::vector<ModuleSpec> sorted;
  for (const int v : order) sorted.push_back(m.modules[static_cast<std::size_t>(v)]);
  for (ModuleEdge& e : m.edges) {
    e.from = position[static_cast<std::size_t>(e.from)];
    e.to = position[static_cast<std::size_t>(e.to)];
  }
  m.modules = std::move(sorted);
  for (const ModuleEdge& e : m.edges) {
    ModuleSpec& to = m.modules[static_cast<std::size_t>(e.to)];
    if (to.kind == ModuleKind::projector) to.shape.ffn_hidden = m.modules[static_cast<std::size_t>(e.from)].shape.hidden * to.merge;
  }
}

// ---------------------------------------------------------------------------------------
// Catalog

namespace {

ModelSpec stack(std::string name, int layers, std::int64_t hidden, int heads, int kv_heads, std::int64_t ffn, MlpKind mlp, std::int64_t vocab = 0) {
  ModelSpec s;
  s.name = std::move(name);
  s.layers = layers;
  s.hidden = hidden;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.head_dim = hidden / heads;
  s.ffn_hidden = ffn;
  s.mlp = mlp;
  s.vocab = vocab;
  return s;
}

ModuleSpec module(std::string name, ModuleKind kind, ModelSpec shape) {
  ModuleSpec m;
  m.name = std::move(name);
  m.kind = kind;
  m.shape = std::move(shape);
  return m;
}

// Qwen2-VL's vision tower (Wang et al., "Qwen2-VL", arXiv 2409.12191, and the Hugging Face
// configs Qwen/Qwen2-VL-7B-Instruct, -72B-Instruct): 32 layers, width 1280, 16 heads, MLP 5120
// (QuickGELU), 14-pixel patches, 2 frames per temporal patch; the merger folds 2x2 patches
// (4 x 1280 = 5120) through a 5120-wide MLP into the LLM's width.
MultimodalModel qwen2_vl(std::string name, ModelSpec llm, std::string source) {
  MultimodalModel m;
  m.name = std::move(name);
  ModuleSpec vit = module("vision", ModuleKind::vision_encoder, stack("qwen2-vl-vit", 32, 1280, 16, 16, 5120, MlpKind::gelu));
  vit.patch = 14;
  vit.temporal_patch = 2;
  ModuleSpec merger = module("merger", ModuleKind::projector, stack("qwen2-vl-merger", 0, llm.hidden, 1, 1, 0, MlpKind::gelu));
  merger.merge = 4;
  merger.projector_hidden = 5120;
  m.modules = {vit, merger, module("llm", ModuleKind::llm, std::move(llm))};
  m.edges = {{0, 1}, {1, 2}};
  m.source = std::move(source);
  return m;
}

std::vector<MultimodalModel> builtin_models() {
  std::vector<MultimodalModel> v;
  // Qwen2 7B and 72B backbones (Yang et al., "Qwen2 Technical Report", arXiv 2407.10671, Table 1;
  // HF configs): 28 x 3584, 28 heads, 4 KV heads, MLP 18944; 80 x 8192, 64 heads, 8 KV heads,
  // MLP 29568; vocabulary 152064, SwiGLU.
  v.push_back(qwen2_vl("qwen2-vl-7b", stack("qwen2-7b", 28, 3584, 28, 4, 18944, MlpKind::swiglu, 152064),
                       "Qwen2-VL (arXiv 2409.12191); Qwen2 (arXiv 2407.10671); HF Qwen/Qwen2-VL-7B-Instruct config"));
  v.push_back(qwen2_vl("qwen2-vl-72b", stack("qwen2-72b", 80, 8192, 64, 8, 29568, MlpKind::swiglu, 152064),
                       "Qwen2-VL (arXiv 2409.12191); Qwen2 (arXiv 2407.10671); HF Qwen/Qwen2-VL-72B-Instruct config"));
  {
    // Qwen2-Audio (Chu et al., arXiv 2407.10759): the Whisper-large-v3 encoder (32 layers,
    // width 1280, 20 heads, MLP 5120; 100 mel frames per second halved by its stride-2
    // convolution to 50 tokens/s; Radford et al., arXiv 2212.04356), pooled by 2 before a
    // linear projection into Qwen-7B (32 x 4096, 32 heads, MLP 11008, vocabulary 151936).
    MultimodalModel m;
    m.name = "qwen2-audio-7b";
    ModuleSpec enc = module("audio", ModuleKind::audio_encoder, stack("whisper-large-v3-encoder", 32, 1280, 20, 20, 5120, MlpKind::gelu));
    enc.tokens_per_second = 50;
    ModuleSpec proj = module("projector", ModuleKind::projector, stack("qwen2-audio-projector", 0, 4096, 1, 1, 0, MlpKind::gelu));
    proj.merge = 2;
    m.modules = {enc, proj, module("llm", ModuleKind::llm, stack("qwen-7b", 32, 4096, 32, 32, 11008, MlpKind::swiglu, 151936))};
    m.edges = {{0, 1}, {1, 2}};
    m.source = "Qwen2-Audio (arXiv 2407.10759); Whisper (arXiv 2212.04356)";
    v.push_back(std::move(m));
  }
  {
    // HunyuanVideo (Kong et al., arXiv 2412.03603; Tencent/HunyuanVideo configs): a 13B DiT of
    // 20 dual-stream and 40 single-stream blocks, width 3072, 24 heads, MLP ratio 4, patches of
    // 1x2x2 latents over a causal 3D VAE that strides 4 in time and 8 in space (so 16 pixels
    // per token side); the text comes from a frozen LLaVA-Llama-3-8B (a Llama 3 8B shape).
    // Dual- and single-stream blocks are costed alike, as one transformer layer each.
    MultimodalModel m;
    m.name = "hunyuan-video-13b";
    ModuleSpec text = module("text", ModuleKind::text_encoder, stack("llava-llama-3-8b", 32, 4096, 32, 8, 14336, MlpKind::swiglu, 128256));
    text.trainable = false;
    ModuleSpec dit = module("dit", ModuleKind::video_dit, stack("hunyuan-video-dit", 60, 3072, 24, 24, 12288, MlpKind::gelu));
    dit.patch = 16;
    dit.temporal_patch = 4;
    m.modules = {text, dit};
    m.edges = {{0, 1}};
    m.source = "HunyuanVideo (arXiv 2412.03603)";
    v.push_back(std::move(m));
  }
  for (MultimodalModel& m : v) validate_multimodal(m, "<builtin multimodal catalog>", "/" + m.name);
  return v;
}

}  // namespace

const MultimodalCatalog& MultimodalCatalog::builtin() {
  static const MultimodalCatalog catalog = [] {
    MultimodalCatalog c;
    c.models_ = builtin_models();
    return c;
  }();
  return catalog;
}

const MultimodalModel* MultimodalCatalog::find(std::string_view name) const {
  for (const MultimodalModel& m : models_) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

const MultimodalModel& MultimodalCatalog::model(std::string_view name, std::string_view source, std::string_view where) const {
  if (const MultimodalModel* m = find(name)) return *m;
  std::string known;
  for (const std::string& n : names()) known += (known.empty() ? "" : ", ") + n;
  throw sim::InputError(std::string(source), std::string(where), fmt::format("unknown multimodal model {}; known: {}", sim::quote(name), known));
}

std::vector<std::string> MultimodalCatalog::names() const {
  std::vector<std::string> out;
  for (const MultimodalModel& m : models_) out.push_back(m.name);
  return out;
}

// ---------------------------------------------------------------------------------------
// Work

void check_modalities(const MultimodalModel& m, const std::vector<MultimodalSample>& samples, std::string_view source, std::string_view where) {
  bool vision = false, audio = false;
  for (const ModuleSpec& s : m.modules) {
    vision = vision || s.kind == ModuleKind::vision_encoder || s.kind == ModuleKind::video_dit;
    audio = audio || s.kind == ModuleKind::audio_encoder;
  }
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const MultimodalSample& x = samples[i];
    std::string missing;
    if (!vision && (!x.images.empty() || !x.videos.empty())) missing = "images or video, but the model has no vision encoder or video DiT";
    if (!audio && !x.audio_seconds.empty()) missing = "audio, but the model has no audio encoder";
    if (!missing.empty()) {
      throw sim::InputError(std::string(source), fmt::format("{}/{}", where, i), fmt::format("the sample brings {} ({})", missing, m.name));
    }
  }
}

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Tokens a sample gives an encoder, per document.
void encoder_docs(const ModuleSpec& s, const MultimodalSample& x, std::vector<std::int64_t>& docs) {
  if (s.kind == ModuleKind::vision_encoder) {
    for (const ImageSize& im : x.images) docs.push_back(ceil_div(im.height, s.patch) * ceil_div(im.width, s.patch));
    for (const VideoClip& v : x.videos) docs.push_back(ceil_div(v.frames, s.temporal_patch) * ceil_div(v.height, s.patch) * ceil_div(v.width, s.patch));
  } else if (s.kind == ModuleKind::audio_encoder) {
    for (const double sec : x.audio_seconds) docs.push_back(std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(sec * s.tokens_per_second))));
  }
}

}  // namespace

ModuleWork module_work(const MultimodalModel& m, int index, const std::vector<MultimodalSample>& samples) {
  const ModuleSpec& s = m.modules[static_cast<std::size_t>(index)];
  ModuleWork w;
  const auto feeder = [&](int to) {
    for (const ModuleEdge& e : m.edges) {
      if (e.to == to) return e.from;
    }
    return -1;
  };
  switch (s.kind) {
    case ModuleKind::vision_encoder:
    case ModuleKind::audio_encoder:
      for (const MultimodalSample& x : samples) encoder_docs(s, x, w.docs);
      break;
    case ModuleKind::projector: {
      const ModuleSpec& enc = m.modules[static_cast<std::size_t>(feeder(index))];
      std::vector<std::int64_t> docs;
      for (const MultimodalSample& x : samples) encoder_docs(enc, x, docs);
      for (const std::int64_t d : docs) {
        w.tokens += d;
        w.out_tokens += ceil_div(d, s.merge);
      }
      return w;
    }
    case ModuleKind::llm:
      for (const MultimodalSample& x : samples) {
        std::int64_t t = x.text_tokens;
        for (const ModuleEdge& e : m.edges) {
          if (e.to != index || m.modules[static_cast<std::size_t>(e.from)].kind != ModuleKind::projector) continue;
          t += module_work(m, e.from, {x}).out_tokens;
        }
        if (t > 0) w.docs.push_back(t);
      }
      break;
    case ModuleKind::text_encoder:
      for (const MultimodalSample& x : samples) {
        if (x.text_tokens > 0) w.docs.push_back(x.text_tokens);
      }
      break;
    case ModuleKind::video_dit:
      // Latent frames of a causal VAE: 1 + (frames - 1) / stride; an image is a one-frame video.
      for (const MultimodalSample& x : samples) {
        for (const VideoClip& v : x.videos) {
          const std::int64_t latent = 1 + (std::max(1, v.frames) - 1) / s.temporal_patch;
          w.docs.push_back(latent * ceil_div(v.height, s.patch) * ceil_div(v.width, s.patch) + x.text_tokens);
        }
        for (const ImageSize& im : x.images) w.docs.push_back(ceil_div(im.height, s.patch) * ceil_div(im.width, s.patch) + x.text_tokens);
      }
      break;
  }
  for (const std::int64_t d : w.docs) w.tokens += d;
  w.out_tokens = w.tokens;
  return w;
}

// ---------------------------------------------------------------------------------------
// A video DiT's attention: context parallelism and DSV's block sparsity

std::string_view to_string(CpMode m) {
  switch (m) {
    case CpMode::hybrid: return "hybrid";
    case CpMode::head: return "head";
    case CpMode::ring: return "ring";
  }
  return "?";
}

CpMode parse_cp_mode(std::string_view text, std::string_view source, std::string_view where) {
  for (const CpMode m : {CpMode::hybrid, CpMode::head, CpMode::ring}) {
    if (to_string(m) == text) return m;
  }
  throw sim::InputError(std::string(source), std::string(where), fmt::format("found {}, expected hybrid, head or ring", sim::quote(text)));
}

void DitAttention::validate(int heads, std::int64_t head_dim, std::string_view source, std::string_view where) const {
  const auto fail = [&](const std::string& field, const std::string& what) {
    throw sim::InputError(std::string(source), fmt::format("{}/{}", where, field), what);
  };
  for (std::size_t h = 0; h < head_sparsity.size(); ++h) {
    if (!(head_sparsity[h] >= 0 && head_sparsity[h] < 1)) {
      fail(fmt::format("head_sparsity/{}", h),
           fmt::format("found {}, expected a sparsity in [0, 1) (the fraction of key blocks the head skips)", head_sparsity[h]));
    }
  }
  if (!head_sparsity.empty() && static_cast<int>(head_sparsity.size()) != heads) {
    fail("head_sparsity", fmt::format("found {} sparsities, expected one per head of the DiT ({})", head_sparsity.size(), heads));
  }
  if (estimator_rank < 0 || estimator_rank > head_dim) {
    fail("estimator_rank", fmt::format("found {}, expected 0 (no estimator) to the head dimension {}", estimator_rank, head_dim));
  }
}

std::vector<double> spread_sparsity(int heads, double mean, double spread, std::string_view source, std::string_view where) {
  std::vector<double> out;
  for (int h = 0; h < heads; ++h) {
    const double v = heads == 1 ? mean : mean + spread * (1 - 2.0 * h / (heads - 1));
    if (!(v >= 0 && v < 1)) {
      throw sim::InputError(std::string(source), std::string(where),
                            fmt::format("found sparsity {} and spread {}: head {} would skip {} of its key blocks, expected every head's sparsity in [0, 1)",
                                        mean, spread, h, v));
    }
    out.push_back(v);
  }
  return out;
}

std::vector<std::vector<int>> lpt_heads(const std::vector<double>& work, int ranks) {
  std::vector<int> order(work.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return work[static_cast<std::size_t>(x)] > work[static_cast<std::size_t>(y)]; });
  std::vector<std::vector<int>> out(static_cast<std::size_t>(std::max(1, ranks)));
  std::vector<double> load(out.size(), 0.0);
  for (const int h : order) {
    const auto r = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    out[r].push_back(h);
    load[r] += work[static_cast<std::size_t>(h)];
  }
  return out;
}

namespace {

double mean_of(const std::vector<double>& v) {
  return v.empty() ? 1.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// One tensor-parallel rank's attention over its heads, whose kept fractions are `kept`.
DitAttentionCost rank_attention(const ModuleSpec& dit, const std::vector<std::int64_t>& docs, const CostModel& cost, const DitAttention& a,
                                const std::vector<double>& kept, CpMode mode) {
  const ModelSpec& sh = dit.shape;
  const std::int64_t hd = sh.head_dim, r = a.sparse() ? a.estimator_rank : 0;
  const double e = 2;  // bf16 bytes
  const auto n = static_cast<std::int64_t>(kept.size());
  const int cp = a.cp;
  std::int64_t T = 0;
  for (const std::int64_t l : docs) T += l;
  const std::int64_t local = (T + cp - 1) / cp;
  const auto sec = [&](const Kernel& k) { return cost.time(k).to_seconds(); };
  const auto attn = [&](Pass p, const std::vector<std::int64_t>& d, std::int64_t heads, double k) {
    Kernel x = Kernel::attention(p, d, heads, std::max<std::int64_t>(1, heads * sh.kv_heads / sh.heads), hd, false, DType::bf16);
    x.kept = k;
    return sec(x);
  };
  const auto comm = [&](double bytes) { return a.cp_bandwidth > 0 ? bytes / a.cp_bandwidth : 0.0; };
  // The estimator's scores of `queries` query tokens of a document of l against its l keys for
  // `heads` heads: the rank-r queries of each query block (the kernel's tile) pooled to one, as
  // DSV groups queries so that a block shares its critical key-value blocks: a [blocks, r] x
  // [r, l] GEMM per head.
  const std::int64_t block = [&] {
    const auto* roofline = dynamic_cast<const RooflineCostModel*>(&cost);
    return roofline != nullptr ? roofline->params().attention_tile : RooflineParams{}.attention_tile;
  }();
  const auto scores = [&](std::int64_t queries, std::int64_t l, std::int64_t heads) {
    return r > 0 ? sec(Kernel::gemm((queries + block - 1) / block, l, r, DType::bf16, heads)) : 0.0;
  };
  // The estimator's projection of the local tokens to rank-r Q and K for the rank's heads.
  const double projection = r > 0 ? sec(Kernel::gemm(local, 2 * r * n, sh.hidden, DType::bf16)) : 0.0;
  DitAttentionCost c;
  c.mode = mode;
  c.kept = mean_of(kept);
  if (cp == 1) {
    c.estimator_f = projection;
    for (const std::int64_t l : docs) c.estimator_f += scores(l, l, n);
    c.f = attn(Pass::forward, docs, n, c.kept) + c.estimator_f;
    c.b = attn(Pass::backward, docs, n, c.kept);
    return c;
  }
  if (mode == CpMode::head) {
    if (n < cp) {
      c.f = c.b = std::numeric_limits<double>::infinity();
      return c;
    }
    const std::vector<std::vector<int>> groups = lpt_heads(kept, cp);
    double f = 0, b = 0, est = 0, busiest = 0, phase = 0;
    for (const std::vector<int>& g : groups) {
      std::vector<double> k;
      for (const int h : g) k.push_back(kept[static_cast<std::size_t>(h)]);
      const auto m = static_cast<std::int64_t>(g.size());
      double e_r = projection;
      for (const std::int64_t l : docs) e_r += scores(l, l, m);
      f = std::max(f, attn(Pass::forward, docs, m, mean_of(k)) + e_r);
      b = std::max(b, attn(Pass::backward, docs, m, mean_of(k)));
      est = std::max(est, e_r);
      busiest = std::max(busiest, std::accumulate(k.begin(), k.end(), 0.0));
      // An all-to-all phase ends with its busiest GPU, on full-duplex links: what it receives
      // (the other GPUs' tokens of its heads) or sends (its tokens of the other heads).
      const double in = static_cast<double>(T - local) * static_cast<double>(m), out = static_cast<double>(local) * static_cast<double>(n - m);
      phase = std::max(phase, std::max(in, out) * static_cast<double>(hd) * e);
    }
    // Forward: Q, K, V (and the estimator's rank-r Q and K) in, O out; backward: dO in, dQ,
    // dK, dV out.
    c.comm_f = comm(phase * (4 + 2.0 * static_cast<double>(r) / static_cast<double>(hd)));
    c.comm_b = comm(phase * 4);
    c.f = f + c.comm_f;
    c.b = b + c.comm_b;
    c.estimator_f = est;
    c.imbalance = busiest / (std::accumulate(kept.begin(), kept.end(), 0.0) / cp);
    return c;
  }
  // Ring: cp steps over chunks of l/cp keys, all heads; the K and V chunk of the kept blocks
  // (backward also dK and dV) moves while the step before computes.
  std::vector<std::int64_t> chunk;
  for (const std::int64_t l : docs) chunk.push_back((l + cp - 1) / cp);
  const std::int64_t kv = std::max<std::int64_t>(1, n * sh.kv_heads / sh.heads);
  const double step_bytes = 2.0 * static_cast<double>(local) * static_cast<double>(kv) * static_cast<double>(hd) * e * c.kept;
  const double tf = attn(Pass::forward, chunk, n, c.kept), tb = attn(Pass::backward, chunk, n, c.kept);
  const double mf = comm(step_bytes), mb = comm(2 * step_bytes);
  c.comm_f = (cp - 1) * std::max(0.0, mf - tf);
  c.comm_b = (cp - 1) * std::max(0.0, mb - tb);
  c.estimator_f = projection;
  if (r > 0) {
    // The low-rank K of every token on every GPU (an all-gather), then its queries against all.
    c.estimator_f += comm(static_cast<double>(T - local) * static_cast<double>(r * n) * e);
    for (const std::int64_t l : docs) c.estimator_f += scores((l + cp - 1) / cp, l, n);
  }
  c.f = cp * tf + c.comm_f + c.estimator_f;
  c.b = cp * tb + c.comm_b;
  return c;
}

}  // namespace

DitAttentionCost dit_attention_cost(const ModuleSpec& dit, const std::vector<std::int64_t>& docs, const CostModel& cost, int tp, const DitAttention& a,
                                    CpMode mode) {
  const int heads = dit.shape.heads, per = std::max(1, heads / std::max(1, tp));
  DitAttentionCost worst;
  worst.f = worst.b = -1;
  // Every tensor-parallel rank holds its own heads; without sparsity they are all alike.
  for (int k = 0; k < (a.sparse() ? tp : 1); ++k) {
    std::vector<double> kept;
    for (int j = 0; j < per; ++j) kept.push_back(a.sparse() ? 1 - a.head_sparsity[static_cast<std::size_t>((k * per + j) % heads)] : 1.0);
    const DitAttentionCost c = rank_attention(dit, docs, cost, a, kept, mode);
    if (c.f + c.b > worst.f + worst.b) worst = c;
  }
  return worst;
}

DitAttentionCost dit_attention_cost(const ModuleSpec& dit, const std::vector<std::int64_t>& docs, const CostModel& cost, int tp, const DitAttention& a) {
  if (a.cp == 1 || a.cp_mode != CpMode::hybrid) return dit_attention_cost(dit, docs, cost, tp, a, a.cp_mode == CpMode::ring ? CpMode::ring : CpMode::head);
  // DSV's hybrid: per layer, whichever costs less (ties: head).
  const DitAttentionCost head = dit_attention_cost(dit, docs, cost, tp, a, CpMode::head);
  const DitAttentionCost ring = dit_attention_cost(dit, docs, cost, tp, a, CpMode::ring);
  return ring.f + ring.b < head.f + head.b ? ring : head;
}

LayerSeconds module_layer_seconds(const ModuleSpec& s, const ModuleWork& work, const CostModel& cost, int tp, double nvlink, const DitAttention& attention) {
  LayerSeconds out;
  if (work.tokens <= 0) return out;
  const auto t = [&](const Kernel& k) { return cost.time(k).to_seconds(); };
  const auto gemm = [&](std::int64_t m, std::int64_t n, std::int64_t k) {
    out.f += t(Kernel::gemm(m, n, k, DType::bf16));
    out.b += t(Kernel::gemm(m, k, n, DType::bf16));
    out.w += t(Kernel::gemm(k, n, m, DType::bf16));
  };
  const ModelSpec& sh = s.shape;
  if (s.kind == ModuleKind::projector) {
    // Merge (a reshape), then an MLP: in_width -> inner -> out, on the merged tokens.
    const std::int64_t rows = std::max<std::int64_t>(1, work.out_tokens);
    const std::int64_t inner = s.projector_hidden > 0 ? s.projector_hidden : sh.hidden;
    gemm(rows, inner / tp, sh.ffn_hidden);
    if (s.projector_hidden > 0) gemm(rows, sh.hidden, inner / tp);
  } else {
    // A video DiT under context parallelism: each GPU runs 1/cp of the tokens through the
    // layer's other kernels.
    const bool dit = s.kind == ModuleKind::video_dit;
    const int cp = dit ? std::max(1, attention.cp) : 1;
    const std::int64_t T = (work.tokens + cp - 1) / cp, h = sh.hidden, hd = sh.head_dim;
    const std::int64_t heads = std::max<std::int64_t>(1, sh.heads / tp), kv = std::max<std::int64_t>(1, sh.kv_heads / tp);
    gemm(T, (heads + 2 * kv) * hd, h);
    gemm(T, h, heads * hd);
    const bool causal = s.kind == ModuleKind::llm || s.kind == ModuleKind::text_encoder;
    if (dit && (attention.sparse() || cp > 1)) {
      const DitAttentionCost a = dit_attention_cost(s, work.docs, cost, tp, attention);
      out.f += a.f;
      out.b += a.b;
    } else {
      out.f += t(Kernel::attention(Pass::forward, work.docs, heads, kv, hd, causal, DType::bf16));
      out.b += t(Kernel::attention(Pass::backward, work.docs, heads, kv, hd, causal, DType::bf16));
    }
    const std::int64_t f = sh.ffn_hidden / tp;
    const std::int64_t up = sh.mlp == MlpKind::swiglu ? 2 * f : f;
    gemm(T, up, h);
    gemm(T, h, f);
    // Norms, residuals and the activation: memory-bound passes over the layer's activations.
    const double act_bytes = 2.0 * static_cast<double>(T) * (4.0 * static_cast<double>(h) + 2.0 * static_cast<double>(f));
    out.f += t(Kernel::memory_bound(KernelKind::elementwise, sim::Bytes(act_bytes), DType::bf16));
    out.b += t(Kernel::memory_bound(KernelKind::elementwise, sim::Bytes(2 * act_bytes), DType::bf16));
    if (tp > 1 && nvlink > 0) {
      // Two all-reduces of the layer's output per pass (attention and MLP), ring on NVLink.
      const double ar = 2.0 * (tp - 1) / tp * 2.0 * static_cast<double>(T) * static_cast<double>(h) / nvlink;
      out.f += 2 * ar, out.tp_f += 2 * ar;
      out.b += 2 * ar, out.tp_b += 2 * ar;
    }
  }
  if (!s.trainable) out.b = out.w = out.tp_b = 0;
  return out;
}

// ---------------------------------------------------------------------------------------
// Batches

void MultimodalMix::validate(std::string_view source, std::string_view where) const {
  const auto bad = [&](std::string_view field, const std::string& expected) {
    throw sim::InputError(std::string(source), fmt::format("{}/{}", where, field), "expected " + expected);
  };
  if (samples < 1) bad("samples", "1 or more samples per batch");
  if (!(text_median >= 1 && text_p99 > text_median && text_p99 < 32768)) bad("text_p99", "1 <= text_median < text_p99 < 32768");
  for (const auto& [name, v] : {std::pair{"text_only", text_only}, std::pair{"video_fraction", video_fraction}, std::pair{"audio_fraction", audio_fraction}}) {
    if (!(v >= 0 && v <= 1)) bad(name, "a probability in [0, 1]");
  }
  if (!(images_mean == 0 || (images_mean >= 1 && images_mean <= 16))) bad("images_mean", "0 (no images) or 1 to 16 images per image sample");
  if (resolutions.empty()) bad("resolutions", "at least one [height, width]");
  for (const ImageSize& r : resolutions) {
    if (r.height < 1 || r.width < 1) bad("resolutions", "positive [height, width] pairs");
  }
  if (!(frames_median >= 1 && frames_p99 > frames_median && frames_max > frames_p99)) bad("frames_p99", "1 <= frames_median < frames_p99 < frames_max");
  // The frame counts' distribution must exist (a p99 too close to the maximum has none): say so
  // here, named by the mix, not when the first batch is drawn.
  try {
    (void)DocLengthModel::lognormal_pareto(frames_median, frames_p99, frames_max);
  } catch (const sim::InputError& e) {
    throw sim::InputError(std::string(source), fmt::format("{}/frames_p99", where),
                          fmt::format("{}; expected a p99 further below frames_max, or a smaller frames_median", e.message()));
  }
  if (video_resolution.height < 1 || video_resolution.width < 1) bad("video_resolution", "a positive [height, width]");
  if (!(audio_median_s > 0 && audio_median_s < 100)) bad("audio_median_s", "a median clip length in (0, 100) seconds");
}

MultimodalBatchGenerator::MultimodalBatchGenerator(MultimodalMix mix, std::uint64_t seed)
    : mix_(std::move(mix)),
      state_(seed * 0x9E3779B97F4A7C15ULL + 1),
      text_(DocLengthModel::lognormal(mix_.text_median, mix_.text_p99, 32768), seed),
      frames_(DocLengthModel::lognormal_pareto(mix_.frames_median, mix_.frames_p99, mix_.frames_max), seed + 1),
      audio_(DocLengthModel::lognormal(mix_.audio_median_s * 100, mix_.audio_median_s * 300, 30000), seed + 2) {
  mix_.validate("<multimodal mix>", "");
}

double MultimodalBatchGenerator::uniform() {
  // splitmix64: a fixed sequence on every platform.
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

int MultimodalBatchGenerator::poisson(double mean) {
  // Knuth's product of uniforms; means here are small (< 16).
  const double limit = std::exp(-mean);
  int k = 0;
  for (double p = uniform(); p > limit; p *= uniform()) ++k;
  return k;
}

std::vector<MultimodalSample> MultimodalBatchGenerator::next() {
  std::vector<MultimodalSample> batch(static_cast<std::size_t>(mix_.samples));
  for (MultimodalSample& x : batch) {
    x.text_tokens = text_.next();
    if (uniform() >= mix_.text_only) {
      if (uniform() < mix_.video_fraction) {
        x.videos.push_back({static_cast<int>(frames_.next()), mix_.video_resolution.height, mix_.video_resolution.width});
      } else if (mix_.images_mean > 0) {
        const int n = std::min(16, 1 + poisson(mix_.images_mean - 1));
        for (int i = 0; i < n; ++i) {
          const auto pick = std::min(mix_.resolutions.size() - 1, static_cast<std::size_t>(uniform() * static_cast<double>(mix_.resolutions.size())));
          x.images.push_back(mix_.resolutions[pick]);
        }
      }
      if (uniform() < mix_.audio_fraction) x.audio_seconds.push_back(static_cast<double>(audio_.next()) / 100.0);
    }
  }
  return batch;
}

}  // namespace orrery::models
