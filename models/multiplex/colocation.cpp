#include "models/multiplex/colocation.hpp"

#include "sim/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace orrery::models {

namespace {

constexpr double kSlack = 1e-9;  // quotas summing to 1 within rounding

// Bytes a module keeps per parameter: bf16 weights (2), fp32 gradients (4), fp32 master weights
// and two Adam moments (12), Megatron's mixed precision; a frozen module only its bf16 weights.
constexpr double kTrainedBytesPerParam = 18, kFrozenBytesPerParam = 2;
// HBM traffic per parameter per micro-batch of a trained layer: the bf16 weights read in the
// forward, the input-gradient and the weight-gradient GEMMs (3 x 2) and the fp32 gradient
// accumulated (4); and per token and hidden unit, 24 two-byte reads and writes by the
// element-wise kernels (norms, activations, residuals, dropout) of the forward and backward: an
// estimate (assumed), not a measurement.
constexpr double kWeightTrafficPerParam = 10, kActivationTrafficPerElement = 48;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

double module_params(const ModuleSpec& m) {
  if (m.kind == ModuleKind::projector) {
    const std::int64_t inner = m.projector_hidden > 0 ? m.projector_hidden : m.shape.hidden;
    return static_cast<double>(m.shape.ffn_hidden * inner + (m.projector_hidden > 0 ? m.projector_hidden * m.shape.hidden : 0));
  }
  double n = static_cast<double>(m.shape.layers) * static_cast<double>(m.shape.attention_params() + m.shape.dense_mlp_params());
  if (m.kind == ModuleKind::llm) n += static_cast<double>(m.shape.embedding_params());
  return n;
}

}  // namespace

double quota_time(const ColocModule& m, const ColocationModel& gpu, double q) {
  ORRERY_CHECK(q > 0 && q <= 1 + kSlack, "quota {} outside (0, 1]", q);
  const double memory_s = std::min(m.step_s, m.hbm_bytes / gpu.hbm_bandwidth);
  const double compute_s = m.step_s - memory_s;
  const auto sms = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::floor(q * gpu.sms + kSlack)));
  const double waves = static_cast<double>(ceil_div(m.tiles, sms)) / static_cast<double>(ceil_div(m.tiles, gpu.sms));
  // Written as the whole-GPU time plus what the quota adds, so that q = 1 gives step_s exactly.
  return m.step_s + compute_s * (waves - 1) + memory_s * (std::max(1.0, gpu.bandwidth_sm_share / q) - 1);
}

ColocationResult evaluate_colocation(const ColocationProblem& p, const ColocPlacement& placement) {
  ColocationResult r;
  const std::size_t n = p.modules.size();
  r.module_rate.assign(n, 0);
  r.piece_s.assign(placement.pieces.size(), 0);
  std::vector<std::vector<std::size_t>> on_gpu(static_cast<std::size_t>(p.gpus));
  for (std::size_t i = 0; i < placement.pieces.size(); ++i) {
    const ColocPiece& c = placement.pieces[i];
    ORRERY_CHECK(c.gpu >= 0 && c.gpu < p.gpus && c.module >= 0 && static_cast<std::size_t>(c.module) < n, "piece {} out of range", i);
    on_gpu[static_cast<std::size_t>(c.gpu)].push_back(i);
  }
  for (const auto& pieces : on_gpu) {
    if (pieces.empty()) continue;
    ++r.gpus_used;
    std::map<int, std::vector<std::size_t>> phases;
    for (const std::size_t i : pieces) phases[placement.pieces[i].phase].push_back(i);
    double turn = 0;
    for (const auto& [phase, members] : phases) {
      double sm = 0, demand = 0;
      for (const std::size_t i : members) {
        const ColocPiece& c = placement.pieces[i];
        const ColocModule& m = p.modules[static_cast<std::size_t>(c.module)];
        sm += c.sm;
        demand += m.hbm_bytes / p.gpu.hbm_bandwidth / quota_time(m, p.gpu, c.sm);
      }
      ORRERY_CHECK(sm <= 1 + kSlack, "SM quotas of one GPU's phase sum to {}", sm);
      const double stretch = std::max(1.0, demand);
      const double penalty = 1 + p.gpu.colocation_penalty * static_cast<double>(members.size() - 1);
      double slowest = 0;
      for (const std::size_t i : members) {
        const ColocPiece& c = placement.pieces[i];
        const ColocModule& m = p.modules[static_cast<std::size_t>(c.module)];
        const double memory_s = std::min(m.step_s, m.hbm_bytes / p.gpu.hbm_bandwidth) * std::max(1.0, p.gpu.bandwidth_sm_share / c.sm);
        r.piece_s[i] = (quota_time(m, p.gpu, c.sm) + memory_s * (stretch - 1)) * penalty;
        slowest = std::max(slowest, r.piece_s[i]);
      }
      turn += slowest;
    }
    for (const std::size_t i : pieces) {
      if (phases.size() > 1) r.piece_s[i] = turn;  // in turn: every piece once per turn
      r.module_rate[static_cast<std::size_t>(placement.pieces[i].module)] += 1 / r.piece_s[i];
    }
  }
  r.microbatches_per_s = n == 0 ? 0 : r.module_rate[0];
  for (std::size_t i = 0; i < n; ++i) {
    if (r.module_rate[i] < r.microbatches_per_s) {
      r.microbatches_per_s = r.module_rate[i];
      r.bottleneck = static_cast<int>(i);
    }
  }
  r.samples_per_s = r.microbatches_per_s * p.micro_batch;
  return r;
}

void check_placement(const ColocationProblem& p, const ColocPlacement& placement, std::string_view source, std::string_view where) {
  std::map<std::pair<int, int>, double> sm;
  std::vector<double> memory(static_cast<std::size_t>(p.gpus), 0);
  std::vector<int> pieces(p.modules.size(), 0);
  for (std::size_t i = 0; i < placement.pieces.size(); ++i) {
    const ColocPiece& c = placement.pieces[i];
    const auto at = [&](std::string_view field) { return fmt::format("{}/{}/{}", where, i, field); };
    const auto fail = [&](std::string_view field, const std::string& what) { throw sim::InputError(std::string(source), at(field), what); };
    if (c.gpu < 0 || c.gpu >= p.gpus) fail("gpu", fmt::format("found GPU {}, expected 0 to {} (the scenario's {} GPUs)", c.gpu, p.gpus - 1, p.gpus));
    for (const auto& [field, q] : {std::pair<std::string_view, double>{"sm", c.sm}, {"memory", c.memory}}) {
      if (!(q > 0 && q <= 1)) fail(field, fmt::format("found a quota of {:.4g} ({:.4g}%), expected more than 0 and at most 1 (100%)", q, 100 * q));
    }
    const ColocModule& m = p.modules[static_cast<std::size_t>(c.module)];
    const double need = m.memory_bytes / p.gpu.hbm_capacity;
    if (c.memory + kSlack < need) {
      fail("memory", fmt::format("found a memory quota of {:.4g}, expected at least {:.4g}: module \"{}\" holds {:.2f} GiB of the GPU's {:.2f} GiB", c.memory,
                                 need, m.name, m.memory_bytes / 1073741824.0, p.gpu.hbm_capacity / 1073741824.0));
    }
    const auto g = static_cast<std::size_t>(c.gpu);
    double& phase_sm = sm[{c.gpu, c.phase}];
    phase_sm += c.sm;
    memory[g] += c.memory;
    if (phase_sm > 1 + kSlack) {
      fail("sm", fmt::format("the SM quotas on GPU {}{} sum to {:.4g} ({:.4g}%), expected at most 1 (100%)", c.gpu,
                             c.phase == 0 ? "" : fmt::format(" in phase {}", c.phase), phase_sm, 100 * phase_sm));
    }
    if (memory[g] > 1 + kSlack) {
      fail("memory", fmt::format("the memory quotas on GPU {} sum to {:.4g} ({:.4g}%), expected at most 1 (100%)", c.gpu, memory[g], 100 * memory[g]));
    }
    ++pieces[static_cast<std::size_t>(c.module)];
  }
  for (std::size_t k = 0; k < pieces.size(); ++k) {
    if (pieces[k] == 0) {
      throw sim::InputError(std::string(source), std::string(where), fmt::format("module \"{}\" has no piece, expected every module placed at least once", p.modules[k].name));
    }
  }
}

ColocationProblem colocation_problem(const MultimodalModel& model, const std::vector<MultimodalSample>& samples, const GpuSpec& gpu,
                                     const CostModel& cost, int gpus, std::string source) {
  ColocationProblem p;
  p.gpu.sms = gpu.sm_count > 0 ? gpu.sm_count : 132;
  p.gpu.hbm_bandwidth = gpu.hbm_bandwidth;
  p.gpu.hbm_capacity = gpu.hbm_bytes;
  p.gpus = gpus;
  p.micro_batch = static_cast<int>(samples.size());
  p.source = std::move(source);
  for (int i = 0; i < static_cast<int>(model.modules.size()); ++i) {
    const ModuleSpec& spec = model.modules[static_cast<std::size_t>(i)];
    const ModuleWork work = module_work(model, i, samples);
    if (work.tokens <= 0) {
      throw sim::InputError(p.source, "/colocation/workload",
                            fmt::format("module \"{}\" gets no tokens from a micro-batch of {} samples, expected a workload that feeds every module "
                                        "(e.g. images for a vision encoder)", spec.name, samples.size()));
    }
    const LayerSeconds layer = module_layer_seconds(spec, work, cost, 1, 0);
    const double layers = std::max(1, spec.shape.layers);
    const double params = module_params(spec);
    const double tokens = static_cast<double>(std::max<std::int64_t>(1, work.tokens));
    const double hidden = static_cast<double>(spec.shape.hidden);
    ColocModule m;
    m.name = spec.name;
    m.step_s = layers * layer.total();
    m.tiles = ceil_div(std::max<std::int64_t>(1, work.tokens), 128) * ceil_div(spec.shape.hidden, 128);
    m.hbm_bytes = params * (spec.trainable ? kWeightTrafficPerParam : 2) + layers * tokens * hidden * kActivationTrafficPerElement * (spec.trainable ? 1 : 0.5);
    m.memory_bytes = params * (spec.trainable ? kTrainedBytesPerParam : kFrozenBytesPerParam) +
                     (spec.trainable ? layers * tokens * hidden * kActivationBytesPerElement : 0);
    p.modules.push_back(std::move(m));
  }
  return p;
}

}  // namespace orrery::models
