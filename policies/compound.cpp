#include "policies/compound.hpp"

#include "models/multimodal/compound.hpp"
#include "sim/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <string>

namespace orrery::policies {

namespace {

using models::ModuleCostCache;
using models::ModuleKind;
using models::MultimodalModel;
using models::MultimodalSample;
using models::MultimodalSetup;
using models::MultimodalStep;
using models::SectionSpec;
using models::WaveMicroBatch;
using models::WavePlan;

std::size_t u(int i) { return static_cast<std::size_t>(i); }

// Cost caches by tensor-parallel degree (sections and rank sets pick their own).
class CostsByTp {
 public:
  const ModuleCostCache& at(const MultimodalSetup& setup, int tp) {
    auto& c = caches_[tp];
    if (!c) c = std::make_unique<ModuleCostCache>(*setup.model, *setup.cost, tp, setup.nvlink, setup.reuse);
    return *c;
  }

 private:
  std::map<int, std::unique_ptr<ModuleCostCache>> caches_;
};

// Forward and backward (input and weight gradients) seconds of some modules over `samples`.
struct PassSeconds {
  double f = 0, b = 0, tokens = 0, activation = 0;
};
PassSeconds pass_seconds(const MultimodalSetup& setup, const ModuleCostCache& costs, const std::vector<int>& modules,
                         const std::vector<MultimodalSample>& samples, int tp) {
  PassSeconds p;
  for (const int i : modules) {
    const models::ModuleSpec& m = setup.model->modules[u(i)];
    const models::LayerSeconds ls = costs.layer(i, samples);
    const double n = m.pipeline_layers();
    p.f += n * ls.f;
    if (m.trainable) p.b += n * (ls.b + ls.w);
    const auto tokens = static_cast<double>(costs.work(i, samples).tokens);
    p.tokens += tokens;
    p.activation += n * models::activation_bytes_per_token(m, tp) * tokens;
  }
  return p;
}

// The GPU memory left for activations once a rank holds `params` parameters' state (frozen:
// bf16 weights only), 90% of HBM usable as the multimodal baselines take it; 0: unlimited.
double activation_cap(const MultimodalSetup& setup, double params, bool trainable, int tp, int dp) {
  if (setup.hbm_bytes <= 0) return 0;
  const double state = params * (trainable ? models::state_bytes_per_param(tp, dp) : 2.0 / tp);
  return std::max(1.0, 0.9 * setup.hbm_bytes - state);
}

// Mean of 1 - busy/makespan and max/mean busy over stages [first, last).
void stage_stats(const models::PipeRun& run, int first, int last, MultimodalStep& out) {
  double idle = 0, busiest = 0, total = 0;
  for (int s = first; s < last; ++s) {
    idle += 1 - run.busy[u(s)] / run.makespan;
    busiest = std::max(busiest, run.busy[u(s)]);
    total += run.busy[u(s)];
  }
  const double n = last - first;
  out.bubble_fraction = run.makespan > 0 ? idle / n : 0;
  out.stage_imbalance = total > 0 ? busiest * n / total : 1;
}

// ---------------------------------------------------------------------------------------
// MegaScale-Omni. The brief (../shared/reference/policies.md section 5; the paper's abstract,
// arXiv 2605.08962) names the mechanisms; their details below are this file's assumptions:
//   - rank sets: the LLM keeps the scenario's tp x pp and takes d replicas; the other
//     tp x pp x dp - d x tp x pp GPUs run the encoders and projectors at tp 1 (a 675M ViT needs
//     no TP). d is searched on the profiling batch (the fastest step), or set by encoder_gpus;
//   - long/short sequence parallelism: an item (one sample's encoder work) of fewer than
//     long_tokens encoder tokens runs whole on one encoder GPU (each GPU a stage of the joint
//     program, items placed longest first on the least-loaded GPU, round by round); a longer one
//     is split over sp GPUs Ulysses-style, paying per layer four all-to-alls (Q, K, V, O; the same back) of
//     (sp - 1)/sp of its tokens x hidden x 2 bytes over NVLink;
//   - decentralised grouped reordering: the loader of each replica gets the round-robin deal;
//     replicas in groups of `group` pool their samples and deal them again by LPT on the LLM's
//     cost, then pack equal-sized micro-batches by LPT, and order them text-only first (those
//     need no encoder, so the LLM pipeline fills while the encoders work);
//   - adaptive resharding: per micro-batch index, every encoder GPU sends its items' projected
//     embeddings (bf16, the LLM's width) to the owning replica's first-stage tp GPUs;
//     models::reshard gives its time on the scenario's p2p link (each GPU its own NIC), and the
//     gradients return the same way;
//   - colocate=true: a third-party summary of the paper speaks of "unified colocation"
//     (pith.science's digest of arXiv 2605.08962), the issue of separate rank sets; with it the
//     encoders keep their own parallelism (tp 1, data-parallel) but run on the LLM's GPUs, each
//     tensor-parallel group a worker whose items queue with its LLM work (the encoders' weights
//     and activations there are not counted against its memory);
//   - the joint pipeline: encoder set, fabric and LLM stages are stages of one program
//     (models::wavefront_program) scheduled greedily, backward first, under each LLM stage's
//     activation memory; gradient synchronisation is not modelled (nor is it for the baselines).
class MegaScaleOmni final : public models::MultimodalPipelinePolicy {
 public:
  MegaScaleOmni(int encoder_gpus, int sp, std::int64_t long_tokens, int group, bool reorder, bool colocate)
      : encoder_gpus_(encoder_gpus), sp_(sp), long_tokens_(long_tokens), group_(group), reorder_(reorder), colocate_(colocate) {}
  std::string_view name() const override { return colocate_ ? "megascale-omni (colocated)" : "megascale-omni"; }

  void prepare(const MultimodalSetup& setup, const std::vector<MultimodalSample>& profile, const ModuleCostCache& costs) override {
    const MultimodalModel& m = *setup.model;
    encoders_.clear();
    llm_ = -1;
    for (std::size_t i = 0; i < m.modules.size(); ++i) {
      const ModuleKind k = m.modules[i].kind;
      if (k == ModuleKind::llm) llm_ = static_cast<int>(i);
      else if (k == ModuleKind::vision_encoder || k == ModuleKind::audio_encoder || k == ModuleKind::projector) encoders_.push_back(static_cast<int>(i));
      else {
        throw sim::InputError(setup.source, "/multimodal/model",
                              fmt::format("megascale-omni: found module {} ({}); expected encoders and projectors feeding an LLM", sim::quote(m.modules[i].name),
                                          models::to_string(k)));
      }
    }
    if (llm_ < 0) throw sim::InputError(setup.source, "/multimodal/model", fmt::format("megascale-omni: {} has no LLM; expected one", sim::quote(m.name)));
    const int gpus = setup.tp * setup.pp * setup.dp, replica = setup.tp * setup.pp;
    if (setup.pp > m.modules[u(llm_)].shape.layers) {
      throw sim::InputError(setup.source, "/multimodal/pp", fmt::format("megascale-omni: found pp {} for an LLM of {} layers; expected at most {}", setup.pp,
                                                                        m.modules[u(llm_)].shape.layers, m.modules[u(llm_)].shape.layers));
    }
    if (colocate_) {
      if (encoder_gpus_ > 0) {
        throw sim::InputError(setup.source, "/multimodal", fmt::format("megascale-omni: found encoder_gpus={} with colocate=true; expected 0 (colocated "
                                                                       "encoders run on all {} GPUs)", encoder_gpus_, gpus));
      }
      replicas_ = setup.dp;
      return;
    }
    if (encoder_gpus_ > gpus - replica) {
      throw sim::InputError(setup.source, "/multimodal",
                            fmt::format("megascale-omni: found an encoder rank set of encoder_gpus={} GPUs; expected 1 to {} (the scenario's {} GPUs "
                                        "less one LLM replica of tp {} x pp {})",
                                        encoder_gpus_, gpus - replica, gpus, setup.tp, setup.pp));
    }
    if (gpus - replica < 1) {
      throw sim::InputError(setup.source, "/multimodal/dp",
                            fmt::format("megascale-omni: found dp {}; expected 2 or more, so that GPUs beyond one LLM replica can run the encoders", setup.dp));
    }
    if (encoder_gpus_ > 0) {
      replicas_ = (gpus - encoder_gpus_) / replica;
      return;
    }
    // The rank sets' split: the fastest step on the profiling batch.
    double best = 0;
    for (int d = setup.dp - 1; d >= 1; --d) {
      replicas_ = d;
      const double t = step(setup, profile, costs).step_s;
      if (d == setup.dp - 1 || t < best) best = t, chosen_ = d;
    }
    replicas_ = chosen_;
  }

  MultimodalStep rank_step(const MultimodalSetup& setup, const std::vector<MultimodalSample>& samples, const ModuleCostCache& costs) override {
    return step(setup, samples, costs);
  }

  MultimodalStep step(const MultimodalSetup& setup, const std::vector<MultimodalSample>& batch, const ModuleCostCache& costs) override {
    const MultimodalModel& m = *setup.model;
    const models::ModuleSpec& llm = m.modules[u(llm_)];
    const int d = replicas_, tp = setup.tp, pp = setup.pp, gpus = tp * pp * setup.dp;
    // Encoder workers: GPUs of their own, or (colocated) the LLM's tensor-parallel groups, each
    // taking items data-parallel over its tp GPUs.
    const int enc = colocate_ ? d * pp : gpus - d * tp * pp, width = colocate_ ? tp : 1;
    const ModuleCostCache& enc_costs = by_tp_.at(setup, 1);
    const auto llm_cost = [&](int s) { return costs.layer(llm_, {batch[u(s)]}).total(); };
    // The loader: round-robin, then (reorder) LPT inside groups of replicas.
    std::vector<std::vector<int>> mine(u(d));
    for (std::size_t k = 0; k < batch.size(); ++k) mine[k % u(d)].push_back(static_cast<int>(k));
    std::vector<std::vector<std::vector<int>>> mbs(u(d));  // [replica][micro-batch] -> samples
    for (int g0 = 0; g0 < d; g0 += reorder_ ? group_ : 1) {
      const int g1 = std::min(d, g0 + (reorder_ ? group_ : 1));
      if (reorder_) {
        std::vector<int> pool;
        for (int r = g0; r < g1; ++r) pool.insert(pool.end(), mine[u(r)].begin(), mine[u(r)].end());
        std::vector<double> cost(batch.size(), 0.0);
        for (const int s : pool) cost[u(s)] = llm_cost(s);
        std::stable_sort(pool.begin(), pool.end(), [&](int a, int b) { return cost[u(a)] > cost[u(b)]; });
        std::vector<double> load(u(g1 - g0), 0.0);
        for (int r = g0; r < g1; ++r) mine[u(r)].clear();
        for (const int s : pool) {
          const auto r = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
          load[r] += cost[u(s)];
          mine[u(g0) + r].push_back(s);
        }
        for (int r = g0; r < g1; ++r) {
          // Equal-sized micro-batches, LPT on cost; text-only (encoder-free) first.
          const std::size_t n = (mine[u(r)].size() + u(setup.micro_batch) - 1) / u(setup.micro_batch);
          std::vector<std::vector<int>> bins(n);
          std::vector<double> bin_load(n, 0.0);
          for (const int s : mine[u(r)]) {
            std::size_t best = n;
            for (std::size_t b = 0; b < n; ++b) {
              if (static_cast<int>(bins[b].size()) < setup.micro_batch && (best == n || bin_load[b] < bin_load[best])) best = b;
            }
            bins[best].push_back(s);
            bin_load[best] += cost[u(s)];
          }
          const auto encoder_work = [&](const std::vector<int>& bin) {
            return std::count_if(bin.begin(), bin.end(), [&](int s) { return models::embedding_bytes(m, batch[u(s)]) > 0; });
          };
          std::stable_sort(bins.begin(), bins.end(), [&](const auto& a, const auto& b) { return encoder_work(a) < encoder_work(b); });
          for (auto& bin : bins) std::sort(bin.begin(), bin.end());
          mbs[u(r)] = std::move(bins);
        }
      } else {
        for (std::size_t k = 0; k < mine[u(g0)].size(); k += u(setup.micro_batch)) {
          mbs[u(g0)].emplace_back(mine[u(g0)].begin() + static_cast<std::ptrdiff_t>(k),
                                  mine[u(g0)].begin() + static_cast<std::ptrdiff_t>(std::min(mine[u(g0)].size(), k + u(setup.micro_batch))));
        }
      }
    }
    std::size_t rounds = 0;
    for (const auto& r : mbs) rounds = std::max(rounds, r.size());
    // Sections of the joint program: 0 the encoder set (one stage per GPU), 1 the fabric, 2 + i
    // the LLM's stage i (one stage per replica).
    WavePlan plan;
    plan.replicas = {enc, 1};
    const bool enc_trainable = std::any_of(encoders_.begin(), encoders_.end(), [&](int i) { return m.modules[u(i)].trainable; });
    plan.trainable = {enc_trainable, enc_trainable};
    plan.edges = {{0, 1}, {1, 2}};
    for (int i = 0; i < pp; ++i) {
      plan.replicas.push_back(d);
      plan.trainable.push_back(llm.trainable);
      if (i + 1 < pp) plan.edges.emplace_back(2 + i, 3 + i);
    }
    if (colocate_) {
      // Worker r x pp + i is replica r's stage i.
      plan.colocated = {std::vector<int>(u(enc), 0)};
      for (int r = 0; r < d; ++r) {
        for (int i = 0; i < pp; ++i) plan.colocated[0][u(r * pp + i)] = plan.stage(2 + i, r);
      }
    }
    std::vector<int> layers(u(pp), llm.shape.layers / pp);
    for (int i = 0; i < llm.shape.layers % pp; ++i) ++layers[u(i)];
    double moved = 0, reshard_s = 0;
    // Encoder GPUs' running loads: items of earlier rounds are placed first, so they finish first.
    std::vector<double> load(u(enc), 0.0);
    for (std::size_t k = 0; k < rounds; ++k) {
      // The round's items, longest first, each on the least-loaded GPU (a long one on the sp
      // least-loaded, split).
      struct Item {
        int sample;
        double f, b, bytes, tokens;
      };
      std::vector<Item> items;
      std::vector<double> received(u(d * tp), 0.0);
      for (int r = 0; r < d; ++r) {
        if (k >= mbs[u(r)].size()) continue;
        for (const int s : mbs[u(r)][k]) {
          const double bytes = models::embedding_bytes(m, batch[u(s)]);
          if (bytes <= 0) continue;
          const PassSeconds p = pass_seconds(setup, enc_costs, encoders_, {batch[u(s)]}, 1);
          items.push_back({s, p.f, p.b, bytes, p.tokens});
          for (int t = 0; t < tp; ++t) received[u(r * tp + t)] += bytes / tp;
        }
      }
      if (items.empty()) continue;
      std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.f + a.b > b.f + b.b; });
      std::vector<double> sent(u(enc), 0.0);
      std::vector<int> all;
      for (const Item& it : items) {
        all.push_back(it.sample);
        // GPUs the item takes, and workers (g / width of them, at least one).
        const int g = it.tokens >= static_cast<double>(long_tokens_) ? std::min(sp_, enc * width) : 1;
        const int w = std::max(1, g / width);
        double comm = 0;
        if (g > 1) {
          for (const int i : encoders_) {
            const models::ModuleSpec& e = m.modules[u(i)];
            if (e.kind == ModuleKind::projector) continue;
            const auto tokens = static_cast<double>(enc_costs.work(i, {batch[u(it.sample)]}).tokens);
            comm += e.shape.layers * 4.0 * (g - 1.0) / g * (tokens / g) * static_cast<double>(e.shape.hidden) * 2.0 / setup.nvlink;
          }
        }
        std::vector<int> order(u(enc));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return load[u(a)] < load[u(b)]; });
        // A worker of `width` GPUs runs its share of the item's GPU-time in 1/width of it (items
        // packed data-parallel across its GPUs).
        for (int j = 0; j < w; ++j) {
          const int e = order[u(j)];
          const double f = it.f / (w * width) + comm, b = enc_trainable ? it.b / (w * width) + comm : 0.0;
          load[u(e)] += f + b;
          sent[u(e)] += it.bytes / w;
          plan.micro_batches.push_back({0, e, {it.sample}, f, b, 0, 0, fmt::format("encoders w{} s{}{}", e, it.sample, w > 1 ? fmt::format(" sp{}/{}", j, w) : "")});
        }
      }
      // Per GPU: a worker's bytes leave over its `width` GPUs' NICs.
      std::vector<double> sent_gpu;
      for (const double x : sent) sent_gpu.insert(sent_gpu.end(), u(width), x / width);
      const models::Reshard rs = models::reshard(sent_gpu, received, setup.p2p);
      moved += rs.bytes;
      reshard_s += rs.seconds;
      std::sort(all.begin(), all.end());
      plan.micro_batches.push_back({1, 0, all, rs.seconds, enc_trainable ? rs.seconds : 0.0, 0, 0, fmt::format("reshard r{}", k)});
    }
    // The LLM's micro-batches, stage by stage, round-major.
    for (int i = 0; i < pp; ++i) {
      for (std::size_t k = 0; k < rounds; ++k) {
        for (int r = 0; r < d; ++r) {
          if (k >= mbs[u(r)].size()) continue;
          std::vector<MultimodalSample> content;
          for (const int s : mbs[u(r)][k]) content.push_back(batch[u(s)]);
          const models::LayerSeconds ls = costs.layer(llm_, content);
          const auto tokens = static_cast<double>(costs.work(llm_, content).tokens);
          WaveMicroBatch x;
          x.section = 2 + i;
          x.replica = r;
          x.samples = mbs[u(r)][k];
          x.f = layers[u(i)] * ls.f;
          x.b = layers[u(i)] * (ls.b + ls.w);
          x.out_bytes = i + 1 < pp ? 2.0 * static_cast<double>(llm.shape.hidden) * tokens / tp : 0.0;
          x.activation_bytes = layers[u(i)] * models::activation_bytes_per_token(llm, tp) * tokens;
          x.label = fmt::format("llm s{} d{} mb{}", i, r, k);
          plan.micro_batches.push_back(std::move(x));
        }
      }
    }
    models::PipeProgram prog = models::wavefront_program(plan);
    std::vector<double> caps(u(prog.stages), 0.0);
    const double stage_params = models::module_params(llm) / pp;
    for (int i = 0; i < pp; ++i) {
      for (int r = 0; r < d; ++r) caps[u(plan.stage(2 + i, r))] = activation_cap(setup, stage_params, llm.trainable, tp, d);
    }
    MultimodalStep out;
    out.run = models::schedule_program(prog, setup.p2p, caps);
    out.step_s = out.run.makespan;
    stage_stats(out.run, plan.stage(2, 0), prog.stages, out);
    out.program = std::move(prog);
    out.gpus = gpus;
    out.layout = fmt::format("encoders {} (tp 1, sp {} from {} tokens), llm on {} x (tp {} x pp {}); reshard {:.2f} GB, {:.3f} s{}",
                             colocate_ ? fmt::format("colocated on all {} GPUs", gpus) : fmt::format("on {} GPUs", enc), std::min(sp_, enc * width), long_tokens_, d, tp, pp, moved / 1e9, reshard_s, reorder_ ? fmt::format(", reorder groups of {}", group_) : "");
    return out;
  }

 private:
  int encoder_gpus_, sp_;
  std::int64_t long_tokens_;
  int group_;
  bool reorder_, colocate_;
  std::vector<int> encoders_;
  int llm_ = -1, replicas_ = 1, chosen_ = 1;
  CostsByTp by_tp_;
};

// ---------------------------------------------------------------------------------------
// Maestro. The brief (../shared/reference/policies.md section 5: the abstract and a summary of
// arXiv 2605.10501) gives the section graph, per-section parallelism, micro-batch and DP degree,
// wavefront scheduling, one-sided RDMA between sections; the rest is this file's assumption:
//   - a section runs its modules on tp x dp GPUs, no pipeline inside a section (pp 1); frozen
//     sections (a distillation teacher) hold bf16 weights only and run forward only;
//   - the search (the sizes the scenario leaves open): start from one configuration for all
//     (below), then, `rounds` times, take the best single move (one section's dp +- 1, its tp
//     halved or doubled within 1 to 8 at about the same GPUs, or its micro-batch halved or
//     doubled) while GPU-seconds per step (GPUs held x step time) on the profiling batch fall
//     and every section's state fits its GPUs;
//   - wavefront: each section's samples grouped by the set of sections they need (text-only
//     samples apart from those with images, say), in batch order inside a group, so that a
//     micro-batch never waits for a modality it does not carry; micro-batches to replicas by
//     LPT; the greedy scheduler runs whatever is ready, so independent sections overlap;
//   - activations cross sections over the p2p link (one-sided RDMA: no rendezvous cost), the
//     slower side's tp GPUs sending in parallel; a teacher hands over its last hidden states
//     (bf16), not its logits.
// `uniform=true` is the comparison the paper draws: the same sections and wavefront, but one
// configuration (the scenario's tp and micro-batch, the GPUs split evenly) for every section.
class Maestro final : public models::MultimodalPipelinePolicy {
 public:
  Maestro(bool uniform, bool wavefront, int rounds) : uniform_(uniform), wavefront_(wavefront), rounds_(rounds) {}
  std::string_view name() const override { return uniform_ ? "maestro (uniform)" : "maestro"; }

  void prepare(const MultimodalSetup& setup, const std::vector<MultimodalSample>& profile, const ModuleCostCache&) override {
    const MultimodalModel& m = *setup.model;
    const int gpus = setup.tp * setup.pp * setup.dp;
    sections_ = setup.sections.empty() ? models::default_sections(m) : setup.sections;
    edges_ = models::section_edges(m, sections_, gpus, setup.source, "/multimodal/sections");
    const std::size_t n = sections_.size();
    if (static_cast<int>(n) > gpus) {
      throw sim::InputError(setup.source, "/multimodal/sections", fmt::format("found {} sections for {} GPUs; expected at most one section per GPU", n, gpus));
    }
    for (SectionSpec& s : sections_) {
      for (const int i : s.modules) {
        const models::ModuleSpec& x = m.modules[u(i)];
        if (s.tp > 0 && x.kind != ModuleKind::projector && x.shape.heads % s.tp != 0) {
          throw sim::InputError(setup.source, "/multimodal/sections",
                                fmt::format("section {}: found tp {}, which does not divide module {}'s {} heads", sim::quote(s.name), s.tp, sim::quote(x.name),
                                            x.shape.heads));
        }
      }
    }
    // One configuration for all: the scenario's tp (where it divides every module's heads) and
    // micro-batch, the GPUs split evenly; the given sizes win.
    const std::vector<SectionSpec> given = sections_;
    for (std::size_t k = 0; k < n; ++k) {
      SectionSpec& s = sections_[k];
      s.tp = given[k].tp > 0 ? given[k].tp : divides_heads(m, s, setup.tp) ? setup.tp : 1;
      s.micro_batch = given[k].micro_batch > 0 ? given[k].micro_batch : setup.micro_batch;
      s.dp = given[k].dp > 0 ? given[k].dp : std::max(1, gpus / (static_cast<int>(n) * s.tp));
    }
    if (uniform_) return;
    // Local search from there: one section's tp, micro-batch or data-parallel degree moves while
    // GPU-seconds per step on the profiling batch fall (so the result is never worse than the
    // start on that batch). Moving tp keeps the section's GPUs about the same.
    const auto score = [&] {
      if (used_gpus() > gpus) return -1.0;
      for (const SectionSpec& s : sections_) {
        if (setup.hbm_bytes > 0 && activation_cap(setup, params(m, s), trainable(m, s), s.tp, s.dp) <= 1.0) return -1.0;
      }
      return static_cast<double>(used_gpus()) * step(setup, profile, by_tp_.at(setup, 1)).step_s;
    };
    double current = score();
    for (int round = 0; round < rounds_; ++round) {
      double best = current;
      std::vector<SectionSpec> pick;
      for (std::size_t k = 0; k < n; ++k) {
        const SectionSpec keep = sections_[k];
        std::vector<SectionSpec> moves;
        if (given[k].dp == 0) {
          for (const int dd : {-1, 1}) {
            if (keep.dp + dd >= 1) moves.push_back({keep.name, keep.modules, keep.tp, keep.dp + dd, keep.micro_batch});
          }
        }
        if (given[k].tp == 0) {
          for (const int tp : {keep.tp / 2, keep.tp * 2}) {
            if (tp < 1 || tp > 8 || !divides_heads(m, keep, tp)) continue;
            const int dp = given[k].dp > 0 ? keep.dp : std::max(1, keep.dp * keep.tp / tp);
            moves.push_back({keep.name, keep.modules, tp, dp, keep.micro_batch});
          }
        }
        if (given[k].micro_batch == 0) {
          for (const int mb : {keep.micro_batch / 2, keep.micro_batch * 2}) {
            if (mb >= 1 && mb <= 64) moves.push_back({keep.name, keep.modules, keep.tp, keep.dp, mb});
          }
        }
        for (const SectionSpec& mv : moves) {
          sections_[k] = mv;
          const double t = score();
          if (t > 0 && (best <= 0 || t < best * (1 - 1e-9))) {
            best = t;
            pick = sections_;
          }
        }
        sections_[k] = keep;
      }
      if (pick.empty()) break;
      sections_ = pick;
      current = best;
    }
  }

  MultimodalStep rank_step(const MultimodalSetup& setup, const std::vector<MultimodalSample>& samples, const ModuleCostCache& costs) override {
    return step(setup, samples, costs);
  }

  MultimodalStep step(const MultimodalSetup& setup, const std::vector<MultimodalSample>& batch, const ModuleCostCache&) override {
    const MultimodalModel& m = *setup.model;
    const std::size_t n = sections_.size();
    WavePlan plan;
    plan.edges = edges_;
    for (const SectionSpec& s : sections_) {
      plan.replicas.push_back(s.dp);
      plan.trainable.push_back(trainable(m, s));
    }
    // The set of sections each sample needs (wavefront's grouping key).
    std::vector<std::uint64_t> needs(batch.size(), 0);
    for (std::size_t k = 0; k < n; ++k) {
      for (std::size_t j = 0; j < batch.size(); ++j) {
        if (carries(m, sections_[k], batch[j])) needs[j] |= std::uint64_t{1} << std::min<std::size_t>(k, 63);
      }
    }
    std::vector<double> caps;
    for (std::size_t k = 0; k < n; ++k) {
      const SectionSpec& s = sections_[k];
      const ModuleCostCache& costs = by_tp_.at(setup, s.tp);
      std::vector<int> mine = carried(m, s, batch);
      if (wavefront_) std::stable_sort(mine.begin(), mine.end(), [&](int a, int b) { return needs[u(a)] < needs[u(b)]; });
      std::vector<double> load(u(s.dp), 0.0);
      for (std::size_t j = 0; j < mine.size();) {
        WaveMicroBatch x;
        x.section = static_cast<int>(k);
        // A micro-batch holds samples of one group only (wavefront).
        const std::uint64_t key = needs[u(mine[j])];
        for (; j < mine.size() && static_cast<int>(x.samples.size()) < s.micro_batch && (!wavefront_ || needs[u(mine[j])] == key); ++j) x.samples.push_back(mine[j]);
        std::vector<MultimodalSample> content;
        for (const int q : x.samples) content.push_back(batch[u(q)]);
        std::sort(x.samples.begin(), x.samples.end());
        const PassSeconds p = pass_seconds(setup, costs, s.modules, content, s.tp);
        x.f = p.f;
        x.b = p.b;
        x.activation_bytes = p.activation;
        x.out_bytes = out_bytes(m, s, content, k);
        x.replica = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
        load[u(x.replica)] += p.f + p.b;
        x.label = fmt::format("{} d{} mb{}", s.name, x.replica, plan.micro_batches.size());
        plan.micro_batches.push_back(std::move(x));
      }
      for (int r = 0; r < s.dp; ++r) caps.push_back(activation_cap(setup, params(m, s), trainable(m, s), s.tp, s.dp));
    }
    models::PipeProgram prog = models::wavefront_program(plan);
    MultimodalStep out;
    out.run = models::schedule_program(prog, setup.p2p, caps);
    out.step_s = out.run.makespan;
    stage_stats(out.run, 0, prog.stages, out);
    out.program = std::move(prog);
    out.gpus = used_gpus();
    std::string layout;
    for (const SectionSpec& s : sections_) layout += fmt::format("{}{} tp {} x dp {}, mb {}", layout.empty() ? "" : "; ", s.name, s.tp, s.dp, s.micro_batch);
    out.layout = layout;
    return out;
  }

  const std::vector<SectionSpec>& sections() const { return sections_; }

 private:
  int used_gpus() const {
    int g = 0;
    for (const SectionSpec& s : sections_) g += s.tp * s.dp;
    return g;
  }
  static bool divides_heads(const MultimodalModel& m, const SectionSpec& s, int tp) {
    return std::all_of(s.modules.begin(), s.modules.end(), [&](int i) {
      const models::ModuleSpec& x = m.modules[u(i)];
      return x.kind == ModuleKind::projector || x.shape.heads % tp == 0;
    });
  }
  static bool trainable(const MultimodalModel& m, const SectionSpec& s) {
    return std::any_of(s.modules.begin(), s.modules.end(), [&](int i) { return m.modules[u(i)].trainable; });
  }
  static double params(const MultimodalModel& m, const SectionSpec& s) {
    double p = 0;
    for (const int i : s.modules) p += models::module_params(m.modules[u(i)]);
    return p;
  }
  // A section fires for a sample when any of its modules has work for it.
  static bool carries(const MultimodalModel& m, const SectionSpec& s, const MultimodalSample& x) {
    return std::any_of(s.modules.begin(), s.modules.end(), [&](int i) { return models::has_work(m, i, x); });
  }
  static std::vector<int> carried(const MultimodalModel& m, const SectionSpec& s, const std::vector<MultimodalSample>& batch) {
    std::vector<int> out;
    for (std::size_t j = 0; j < batch.size(); ++j) {
      if (carries(m, s, batch[j])) out.push_back(static_cast<int>(j));
    }
    return out;
  }
  // Bytes a section's micro-batch hands to other sections: each module feeding another section
  // sends its output tokens at its width in bf16, over the smaller tp of the two sides.
  double out_bytes(const MultimodalModel& m, const SectionSpec& s, const std::vector<MultimodalSample>& content, std::size_t self) const {
    double bytes = 0;
    for (const models::ModuleEdge& e : m.edges) {
      if (std::find(s.modules.begin(), s.modules.end(), e.from) == s.modules.end()) continue;
      if (std::find(s.modules.begin(), s.modules.end(), e.to) != s.modules.end()) continue;
      int tp = s.tp;
      for (std::size_t k = 0; k < sections_.size(); ++k) {
        if (k != self && std::find(sections_[k].modules.begin(), sections_[k].modules.end(), e.to) != sections_[k].modules.end()) tp = std::min(tp, sections_[k].tp);
      }
      bytes += 2.0 * static_cast<double>(m.modules[u(e.from)].shape.hidden) * static_cast<double>(models::module_work(m, e.from, content).out_tokens) / tp;
    }
    return bytes;
  }

  bool uniform_, wavefront_;
  int rounds_;
  std::vector<SectionSpec> sections_;
  std::vector<std::pair<int, int>> edges_;
  CostsByTp by_tp_;
};

}  // namespace

void add_compound_pipelines(sim::Registry<models::MultimodalPipelinePolicy>& r) {
  r.add({"megascale-omni",
         "MegaScale-Omni: encoders and the LLM on separate rank sets, long/short sequence parallelism for encoders, grouped reordering in the loader, "
         "adaptive resharding to LLM ranks, one joint pipeline",
         {{"encoder_gpus", sim::ParamType::integer, std::int64_t{0}, "GPUs of the encoder rank set (0: searched on the profiling batch); the LLM keeps tp x pp in whole replicas, the GPUs left over go to the encoders"},
          {"sp", sim::ParamType::integer, std::int64_t{8}, "sequence-parallel GPUs for a long encoder item (Ulysses all-to-alls on NVLink)"},
          {"long_tokens", sim::ParamType::integer, std::int64_t{16384}, "encoder tokens from which an item is long (split over sp GPUs)"},
          {"group", sim::ParamType::integer, std::int64_t{4}, "LLM replicas per reordering group (the loader balances inside a group only)"},
          {"reorder", sim::ParamType::boolean, true, "grouped reordering in the loader (false: the round-robin deal, micro-batches in order)"},
          {"colocate", sim::ParamType::boolean, false,
           "encoders multiplexed on the LLM's GPUs (each tensor-parallel group takes encoder items data-parallel) instead of a rank set of their own"}},
         [](const sim::Params& p) {
           const std::int64_t e = p.get_int("encoder_gpus"), sp = p.get_int("sp"), lt = p.get_int("long_tokens"), g = p.get_int("group");
           if (e < 0 || e > (1 << 20)) throw sim::InputError("<policy>", "megascale-omni/encoder_gpus", fmt::format("found {}, expected 0 (searched) or more", e));
           if (sp < 1 || sp > 1024) throw sim::InputError("<policy>", "megascale-omni/sp", fmt::format("found {}, expected 1 to 1024", sp));
           if (lt < 1) throw sim::InputError("<policy>", "megascale-omni/long_tokens", fmt::format("found {}, expected a positive token count", lt));
           if (g < 1 || g > (1 << 20)) throw sim::InputError("<policy>", "megascale-omni/group", fmt::format("found {}, expected 1 or more", g));
           return std::make_unique<MegaScaleOmni>(static_cast<int>(e), static_cast<int>(sp), lt, static_cast<int>(g), p.get_bool("reorder"), p.get_bool("colocate"));
         }});
  r.add({"maestro",
         "Maestro: a section graph (modality sections, a teacher and a student), each section with its own tp, dp and micro-batch; wavefront scheduling",
         {{"uniform", sim::ParamType::boolean, false, "one configuration for every section (the scenario's tp and micro-batch, GPUs split evenly)"},
          {"wavefront", sim::ParamType::boolean, true, "group samples by the sections they need (false: batch order, mixed micro-batches)"},
          {"rounds", sim::ParamType::integer, std::int64_t{16}, "local-search rounds over the sections' data-parallel degrees"}},
         [](const sim::Params& p) {
           const std::int64_t k = p.get_int("rounds");
           if (k < 0 || k > 1000) throw sim::InputError("<policy>", "maestro/rounds", fmt::format("found {}, expected 0 to 1000", k));
           return std::make_unique<Maestro>(p.get_bool("uniform"), p.get_bool("wavefront"), static_cast<int>(k));
         }});
}

}  // namespace orrery::policies
