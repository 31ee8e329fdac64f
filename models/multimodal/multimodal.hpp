// Multimodal models as DAGs of modules, and the batches they train on.
//
// A module is a stack of identical transformer layers with its own shape (a ModelSpec used as
// a shape: layers, hidden, heads, kv_heads, head_dim, ffn_hidden, mlp): a vision or audio
// encoder, a projector (an MLP over the encoder's tokens), an LLM backbone, a frozen text
// encoder, or a video diffusion transformer. Edges say which module feeds which. A sample
// brings text tokens, images, video frames and audio seconds; each module turns them into
// attention documents (the sequences its attention runs over) by its kind's rule:
//   vision encoder   per image ceil(h/p) x ceil(w/p) patches; per video also ceil(frames / t)
//                    (temporal patch t); each image and each video one bidirectional document
//   audio encoder    tokens_per_second x seconds per clip, one document per clip
//   projector        the tokens of the encoder that feeds it, divided by `merge`; no attention
//   llm              one causal document per sample: text + every projector's tokens for it
//   text encoder     one causal document of the sample's text (frozen: forward only)
//   video DiT        per video: latent frames (1 + (frames - 1) / t) x (h / p) x (w / p) plus
//                    the text tokens, one bidirectional document
// An LLM-only model is the one-module case; the LLM step emulator (models/training/step.hpp) does not
// use this file, so LLM scenarios are unchanged.
//   const MultimodalModel& m = MultimodalCatalog::builtin().model("qwen2-vl-7b");
//   ModuleWork w = module_work(m, m.modules[0], batch.samples);
#pragma once

#include "models/hardware/cost.hpp"
#include "models/training/doc_lengths.hpp"
#include "models/training/llm.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::models {

enum class ModuleKind : std::uint8_t { vision_encoder, audio_encoder, projector, llm, text_encoder, video_dit };
std::string_view to_string(ModuleKind);
// "vision_encoder" ... ; InputError naming `where` for an unknown kind.
ModuleKind parse_module_kind(std::string_view text, std::string_view source, std::string_view where);

struct ModuleSpec {
  std::string name;            // unique in its model
  ModuleKind kind = ModuleKind::llm;
  ModelSpec shape;             // the layer stack (layers, hidden, heads, ...); projectors: layers 0
  bool trainable = true;       // frozen modules run forward only
  // Token rules (see above).
  int patch = 0;               // vision: pixels per patch side; video DiT: latent pixels per patch side x spatial VAE stride
  int temporal_patch = 1;      // vision: frames per temporal patch; video DiT: the VAE's temporal stride
  int merge = 1;               // projector: encoder tokens per output token
  double tokens_per_second = 0;  // audio encoder
  std::int64_t projector_hidden = 0;  // projector: its MLP's inner width (0: the output width)

  // The layers a pipeline partition splits it into (a projector is one).
  int pipeline_layers() const { return kind == ModuleKind::projector ? 1 : shape.layers; }
};

struct ModuleEdge {
  int from = 0, to = 0;  // indices into MultimodalModel::modules
};

struct MultimodalModel {
  std::string name;
  std::vector<ModuleSpec> modules;  // in a topological order after validation
  std::vector<ModuleEdge> edges;
  std::string source;
  int find(std::string_view module) const;  // index, or -1
  std::int64_t params() const;              // all modules' layer parameters (embeddings of the LLM included)
};

// Checks the graph: unique names, edges between known modules, no cycle (named by its
// modules), exactly one sink (the LLM or the video DiT), projectors fed by one encoder; shapes
// positive. Reorders `modules` topologically (edges follow). Throws InputError at `where`.
void validate_multimodal(MultimodalModel& m, std::string_view source, std::string_view where);

class MultimodalCatalog {
 public:
  // qwen2-vl-7b, qwen2-vl-72b (Qwen2-VL: a 675M ViT, a 2x2 patch merger, Qwen2 7B/72B),
  // qwen2-audio-7b (a Whisper-large-v3 encoder and Qwen 7B), hunyuan-video-13b (a 13B video
  // DiT conditioned by a frozen 8B text encoder). Sources in multimodal.cpp.
  static const MultimodalCatalog& builtin();
  const MultimodalModel* find(std::string_view name) const;
  const MultimodalModel& model(std::string_view name, std::string_view source = "<input>", std::string_view where = "") const;
  std::vector<std::string> names() const;

 private:
  std::vector<MultimodalModel> models_;
};

// One training sample's content.
struct ImageSize {
  int height = 0, width = 0;
};
struct VideoClip {
  int frames = 0, height = 0, width = 0;
};
struct MultimodalSample {
  std::int64_t text_tokens = 0;
  std::vector<ImageSize> images;
  std::vector<VideoClip> videos;
  std::vector<double> audio_seconds;  // one entry per clip
};

// Throws InputError (at `where`) when a sample brings a modality no module of the model takes
// (images or video without a vision encoder or video DiT, audio without an audio encoder).
void check_modalities(const MultimodalModel& m, const std::vector<MultimodalSample>& samples, std::string_view source, std::string_view where);

// A seeded generator of global batches with a documented modality mix; the same seed gives the
// same batches on every platform.
//   - text tokens per sample: lognormal with `text_median` and `text_p99` (cut at 32K);
//   - a sample is text-only with probability `text_only`; otherwise it carries a video with
//     probability `video_fraction`, else 1 + Poisson(images_mean - 1) images (at most 16; none
//     when images_mean is 0), each at
//     a resolution drawn uniformly from `resolutions`; with probability `audio_fraction` it also
//     carries an audio clip of lognormal length (`audio_median_s`, p99 3x that, cut at 300 s);
//   - video frames: lognormal + Pareto tail with `frames_median`, `frames_p99`, cut at
//     `frames_max`, at `video_resolution`.
// T2V batches: text_only 0, video_fraction 1, a prompt of ~256 tokens.
// The mix's default image resolutions: 448 to 1344 pixels square. (A function rather than an
// initializer list in the member: GCC 12 at -O1 warns, wrongly, that the list's elements may be
// used uninitialized.)
std::vector<ImageSize> default_image_resolutions();

struct MultimodalMix {
  int samples = 32;  // per global batch
  double text_median = 512, text_p99 = 4096;
  double text_only = 0.3;
  double images_mean = 1.5;
  std::vector<ImageSize> resolutions = default_image_resolutions();
  double video_fraction = 0.1;
  double frames_median = 16, frames_p99 = 128;
  int frames_max = 256;
  ImageSize video_resolution = {448, 448};
  double audio_fraction = 0;
  double audio_median_s = 10;
  // Throws InputError at `where` naming the bad field.
  void validate(std::string_view source, std::string_view where) const;
};

class MultimodalBatchGenerator {
 public:
  MultimodalBatchGenerator(MultimodalMix mix, std::uint64_t seed);
  std::vector<MultimodalSample> next();

 private:
  double uniform();  // in [0, 1)
  int poisson(double mean);
  MultimodalMix mix_;
  std::uint64_t state_;
  DocSampler text_, frames_, audio_;
};

// What one module does for a set of samples: its attention documents and its tokens.
struct ModuleWork {
  std::vector<std::int64_t> docs;  // attention sequences (empty for projectors)
  std::int64_t tokens = 0;         // rows through its linear layers
  std::int64_t out_tokens = 0;     // what it hands to the next module (projectors: after merging)
};
ModuleWork module_work(const MultimodalModel& m, int module, const std::vector<MultimodalSample>& samples);

// A video DiT's attention: context parallelism over each video's tokens and DSV's block
// sparsity (Tan et al., "DSV: Exploiting Dynamic Sparsity to Accelerate Large-Scale Video DiT
// Training", arXiv 2502.07590). DSV predicts, per head and query block, the critical key-value
// blocks with a low-rank estimator (a rank-r projection of Q and K and their r-wide QK^T) and
// computes attention on those blocks only; heads differ in how sparse they are. Costed here:
//   - each head keeps 1 - sparsity of its key blocks: a block-sparse attention kernel
//     (Kernel::kept) over the heads of a rank at their mean kept fraction, forward and backward;
//   - the estimator, forward only (the block choice is not differentiated through): the
//     projection GEMM [tokens, hidden] x [hidden, 2 r heads] and, per document and head, the
//     low-rank QK^T at block granularity, [l / b, r] x [r, l] (b the kernel's tile: the rank-r
//     queries of a block pooled to one, DSV's query grouping);
//   - with cp > 1 GPUs per video, per layer the cheaper of (cp_mode hybrid; or the one named)
//       head   Ulysses-style: two all-to-alls per pass (Q, K, V in, O out; backward dO in, dQ,
//              dK, dV out), each head's whole sequence on one GPU, heads dealt to the GPUs by
//              LPT on their kept work (DSV's sparsity-aware head placement); needs cp <= heads
//              per TP rank; the all-to-alls are exposed;
//       ring   ring attention: each GPU keeps its 1/cp of the queries and every head, the K and
//              V chunks go round cp - 1 times (backward also dK and dV) and only the kept
//              blocks travel; each step's transfer overlaps that step's kernel, over a chunk of
//              l/cp keys; the estimator's low-rank K is all-gathered first.
// Dense attention (no sparsities) takes the same choice with every head kept whole.
enum class CpMode : std::uint8_t { hybrid, head, ring };
std::string_view to_string(CpMode);
// "hybrid", "head" or "ring"; InputError at `where` otherwise.
CpMode parse_cp_mode(std::string_view text, std::string_view source, std::string_view where);

struct DitAttention {
  int cp = 1;                         // GPUs sharing each video's tokens
  double cp_bandwidth = 0;            // bytes/s per GPU between them (0: communication is free)
  std::vector<double> head_sparsity;  // per head of the DiT (before TP), in [0, 1); empty: dense
  int estimator_rank = 16;            // r of DSV's low-rank estimator; 0: no estimator
  CpMode cp_mode = CpMode::hybrid;
  bool sparse() const { return !head_sparsity.empty(); }
  // InputError at `where` (naming the field) for a sparsity outside [0, 1), a list whose length
  // is not the DiT's `heads`, a rank outside 0 to head_dim, or cp < 1.
  void validate(int heads, std::int64_t head_dim, std::string_view source, std::string_view where) const;
};

// `heads` sparsities spread evenly from mean - spread to mean + spread (one head: the mean),
// head 0 the sparsest; InputError naming `where` when they leave [0, 1).
std::vector<double> spread_sparsity(int heads, double mean, double spread, std::string_view source, std::string_view where);

// Forward and backward seconds of one layer's attention (with its CP communication and the
// estimator) of a video DiT over `docs`, on the slowest of its `tp` tensor-parallel ranks
// (rank k holds heads k heads/tp to (k+1) heads/tp - 1).
struct DitAttentionCost {
  double f = 0, b = 0;
  double estimator_f = 0;           // of f: the estimator (and its all-gather)
  double comm_f = 0, comm_b = 0;    // exposed CP communication in f and b
  CpMode mode = CpMode::head;       // what ran (cp > 1)
  double imbalance = 1;             // head mode: the busiest GPU's kept work / the mean
  double kept = 1;                  // mean kept fraction of the slowest rank's heads
};
DitAttentionCost dit_attention_cost(const ModuleSpec& dit, const std::vector<std::int64_t>& docs, const CostModel& cost, int tp, const DitAttention& a);
// One CP mode's cost (head: InputError-free, infinite f and b when cp exceeds the heads per rank).
DitAttentionCost dit_attention_cost(const ModuleSpec& dit, const std::vector<std::int64_t>& docs, const CostModel& cost, int tp, const DitAttention& a,
                                    CpMode mode);
// LPT: heads (by their work, heaviest first, ties by index) each to the least-loaded of `ranks`;
// per rank its heads' indices.
std::vector<std::vector<int>> lpt_heads(const std::vector<double>& work, int ranks);

// Forward, input-gradient and weight-gradient seconds of one layer of a module (projectors:
// of the projector) over `work`, on `tp` tensor-parallel GPUs with `nvlink` bytes/s each for
// the layer's TP all-reduces (ring: 2 (tp-1)/tp x bytes / nvlink; two per pass). Frozen
// modules have no B or W. A video DiT's attention follows `attention` (above); with cp > 1 its
// other kernels and all-reduces run on 1/cp of the tokens.
struct LayerSeconds {
  double f = 0, b = 0, w = 0;
  double tp_f = 0, tp_b = 0;  // of f and b, the tensor-parallel all-reduces
  double total() const { return f + b + w; }
};
LayerSeconds module_layer_seconds(const ModuleSpec& module, const ModuleWork& work, const CostModel& cost, int tp, double nvlink,
                                  const DitAttention& attention = {});

}  // namespace orrery::models
