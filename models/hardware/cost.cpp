#include "models/hardware/cost.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace orrery::models {

// Default roofline parameters (RooflineParams), each set by one published measurement with the
// 2 us kernel overhead included; every other row of those tables is a prediction
// (docs/validation.md, `orrery validate --only kernels`):
//  - gemm_efficiency 0.8149: H100 SXM bf16 torch.matmul at its best shape 2048x2048x13312
//    reaches 794.5 TFLOP/s (../shared/data/ml-engineering/mamf_matmul_tflops.csv);
//    gemm_efficiency_fp8 0.7162: H100 SXM fp8 at 1024x9216x14336, 1402.6 TFLOP/s (same file);
//    FP4 (NVFP4) GEMMs: no measurement in ../shared/data, FP8's efficiency assumed.
//  - attention fwd 0.9533, half_kv 197.66, half_head_dim 55.909: FlashAttention-3 forward on
//    H100 SXM5, non-causal, 16k tokens per batch: head dim 128 at seqlen 16k (648 TFLOP/s) and
//    512 (467), head dim 64 at 16k (497). Attention bwd 0.9774: FlashAttention-2 forward plus
//    backward on A100 80GB SXM4, non-causal, head dim 128, seqlen 16k (203 TFLOP/s)
//    (../shared/data/flashattention/attention_kernel_tflops_a100_h100.csv; the FlashAttention
//    benchmark counts 4 l^2 d heads FLOPs forward, halved when causal, x3.5 forward+backward).
//  - memory_efficiency 0.90 and kernel_overhead 2 us are assumptions (no measurement in
//    ../shared/data); calibration replaces both with measured curves.

namespace {

double ceil_to(std::int64_t v, std::int64_t tile) {
  return static_cast<double>((v + tile - 1) / tile) * static_cast<double>(tile);
}

// The rows of a GEMM as executed: whole tiles, except that a skinny GEMM (fewer rows than a
// tile, as in decoding, where the rows are the running batch) gets a narrower tile, the next
// power of two from 16 rows: GEMM libraries ship such tiles for small M (CUTLASS's 64xN, 32xN
// and 16xN threadblock shapes; cuBLASLt's heuristics pick them), so decode does not pay for
// 128 rows of compute on a batch of 8.
double ceil_rows(std::int64_t m, std::int64_t tile) {
  if (m >= tile) return ceil_to(m, tile);
  std::int64_t narrow = 16;
  while (narrow < m) narrow *= 2;
  return static_cast<double>(std::min(narrow, tile));
}

[[noreturn]] void unsupported(const GpuSpec& gpu, const Kernel& k) {
  std::vector<std::string> ok;
  for (const DType t : kAllDTypes) {
    if (gpu.supports(t)) ok.emplace_back(to_string(t));
  }
  throw sim::InputError("<cost model>", describe(k),
                        fmt::format("{} has no {} tensor math; it supports {}", gpu.name, to_string(k.dtype),
                                    fmt::join(ok, ", ")));
}

double gemm_efficiency(const RooflineParams& p, DType t) {
  return t == DType::fp4 ? p.gemm_efficiency_fp4 : t == DType::fp8 ? p.gemm_efficiency_fp8 : p.gemm_efficiency;
}

sim::Duration to_duration(double seconds) { return sim::ceil_duration_ns(seconds * 1e9); }

}  // namespace

RooflineCostModel::RooflineCostModel(GpuSpec gpu, RooflineParams params) : gpu_(std::move(gpu)), params_(params) {
  if (params_.gemm_tile == 0) params_.gemm_tile = gpu_.gemm_tile;
  ORRERY_CHECK(gpu_.hbm_bandwidth > 0, "GPU {} has no HBM bandwidth", gpu_.name);
  ORRERY_CHECK(params_.gemm_tile > 0 && params_.attention_tile > 0, "tile sizes must be positive");
  ORRERY_CHECK(params_.step_efficiency > 0 && params_.step_efficiency <= 1, "step efficiency {} outside (0, 1]", params_.step_efficiency);
}

RooflineCostModel::Terms RooflineCostModel::terms(const Kernel& k) const {
  Terms t;
  t.overhead_s = params_.kernel_overhead.to_seconds();
  const bool streaming = is_memory_bound(k.kind);
  t.memory_s = min_bytes(k).value() / (gpu_.hbm_bandwidth * (streaming ? params_.memory_efficiency : params_.operand_memory_efficiency) * params_.step_efficiency);
  if (streaming) return t;
  if (!gpu_.supports(k.dtype)) unsupported(gpu_, k);
  const double peak = gpu_.peak(k.dtype).value();
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  switch (k.kind) {
    case KernelKind::gemm:
      t.executed_flops = 2 * ceil_rows(k.m, params_.gemm_tile) * ceil_to(k.n, params_.gemm_tile) * d(k.k) * d(k.batch);
      t.efficiency = gemm_efficiency(params_, k.dtype);
      break;
    case KernelKind::grouped_gemm:
      for (const std::int64_t gm : k.group_m) {
        t.executed_flops += 2 * ceil_rows(gm, params_.gemm_tile) * ceil_to(k.n, params_.gemm_tile) * d(k.k);
      }
      t.efficiency = gemm_efficiency(params_, k.dtype) * params_.grouped_gemm_efficiency;
      break;
    case KernelKind::attention_fwd:
    case KernelKind::attention_bwd: {
      const std::int64_t tile = params_.attention_tile;
      double q_tiles = 0, visits = 0;  // query tiles, and (query tile, key tile) pairs computed
      for (const std::int64_t l : k.doc_lens) {
        const double n_tiles = d((l + tile - 1) / tile);
        q_tiles += n_tiles;
        // A sliding window of w keys reaches back at most c key tiles (its own included).
        const double c = k.window > 0 ? d((k.window + tile - 2) / tile + 1) : n_tiles;
        // Block-sparse: each query tile visits its kept key tiles, whole ones, at least one.
        const double kept_tiles = k.kept < 1 ? std::max(1.0, std::round(k.kept * n_tiles)) : n_tiles;
        visits += !k.causal ? n_tiles * kept_tiles : n_tiles <= c ? n_tiles * (n_tiles + 1) / 2 : c * (c + 1) / 2 + (n_tiles - c) * c;
      }
      const bool fwd = k.kind == KernelKind::attention_fwd;
      const double per_pair = fwd ? 2 * (d(k.head_dim) + d(k.head_dim_v)) : 2 * (3 * d(k.head_dim) + 2 * d(k.head_dim_v));
      t.executed_flops = visits * d(tile) * d(tile) * per_pair * d(k.heads);
      const double mean_kv = q_tiles > 0 ? d(tile) * visits / q_tiles : 0;
      // The softmax's share: half_head_dim at this GPU's ratio of tensor to CUDA-core FLOP/s,
      // against the peak the products run at (an FP8 kernel's softmax takes as long as bf16's).
      const double bf16 = gpu_.peak(DType::bf16).value(), fp32 = gpu_.peak(DType::fp32).value();
      const double ratio = fp32 > 0 ? bf16 / (fp32 * gpu_.sfu_scale) / kH100TensorToScalar : 1.0;
      const double softmax = params_.attention_half_head_dim * ratio * (peak / bf16) / d(k.head_dim);
      t.efficiency = (fwd ? params_.attention_fwd_efficiency : params_.attention_bwd_efficiency) *
                     (mean_kv / (mean_kv + params_.attention_half_kv)) / (1 + softmax);
      break;
    }
    default: break;
  }
  t.overhead_s *= static_cast<double>((launches(k) + kGroupedGemmStreams - 1) / kGroupedGemmStreams);
  t.efficiency *= params_.step_efficiency;
  if (t.executed_flops > 0) t.compute_s = t.executed_flops / (peak * t.efficiency);
  return t;
}

sim::Duration RooflineCostModel::time(const Kernel& k) const { return to_duration(terms(k).seconds()); }

namespace {
// "step efficiency 0.6772, 37.7 us per kernel" (or, for isolated kernels, "no step efficiency, ...").
std::string roofline_terms(const RooflineParams& p) {
  const std::string overhead = fmt::format("{:g} us per kernel", p.kernel_overhead.to_seconds() * 1e6);
  if (!p.source.empty()) {
    return fmt::format("fitted step parameters for {}: GEMM {:.3g} of peak (low precision {:.3g}), HBM {:.3g}, {}", p.source, p.gemm_efficiency,
                       p.gemm_efficiency_fp8, p.memory_efficiency, overhead);
  }
  if (p.step_efficiency == 1) return fmt::format("isolated-kernel efficiencies, {}", overhead);
  return fmt::format("step efficiency {:g}, {}", p.step_efficiency, overhead);
}
}  // namespace

std::string RooflineCostModel::summary() const { return fmt::format("roofline ({})", roofline_terms(params_)); }

// ---------------------------------------------------------------------------------------
// Calibrated curves

std::vector<std::string> feature_names(KernelKind kind) {
  switch (kind) {
    case KernelKind::gemm:
    case KernelKind::grouped_gemm: return {"m", "n", "k"};
    case KernelKind::attention_fwd:
    case KernelKind::attention_bwd: return {"token_heads", "effective_length", "head_dim"};
    case KernelKind::optimizer: return {"params"};
    default: return {"bytes"};
  }
}

std::vector<double> kernel_features(const Kernel& k) {
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  switch (k.kind) {
    case KernelKind::gemm:
    case KernelKind::grouped_gemm: return {d(k.m), d(k.n), d(k.k)};
    case KernelKind::attention_fwd:
    case KernelKind::attention_bwd: {
      const double t = d(tokens(k));
      // A block-sparse kernel visits `kept` of the keys: a dense one of that effective length.
      return {t * d(k.heads), t > 0 ? sum_squares(k) / t * (k.causal ? 1.0 : k.kept) : 0, d(k.head_dim)};
    }
    case KernelKind::optimizer: return {d(k.params)};
    default: return {k.bytes};
  }
}

double feature_multiplier(const Kernel& k) { return k.kind == KernelKind::gemm ? static_cast<double>(k.batch) : 1.0; }

std::size_t CostCurve::cells() const {
  std::size_t n = axes.empty() ? 0 : 1;
  for (const auto& a : axes) n *= a.size();
  return n;
}

std::optional<double> CostCurve::interpolate(const std::vector<double>& x) const {
  if (x.size() != axes.size() || axes.empty()) return std::nullopt;
  // Per axis: the cell [lo, lo+1] holding x and the log-space weight of its upper end.
  const std::size_t dims = axes.size();
  std::vector<std::size_t> lo(dims);
  std::vector<double> w(dims);
  std::vector<std::size_t> stride(dims);
  std::size_t s = 1;
  for (std::size_t i = dims; i-- > 0;) {
    stride[i] = s;
    s *= axes[i].size();
  }
  for (std::size_t i = 0; i < dims; ++i) {
    const std::vector<double>& a = axes[i];
    const double v = x[i];
    // A point on the boundary, up to rounding, is inside.
    const double tol = 1e-9 * a.back();
    if (!(v >= a.front() - tol && v <= a.back() + tol)) return std::nullopt;
    if (a.size() == 1) {
      lo[i] = 0;
      w[i] = 0;
      continue;
    }
    std::size_t j = static_cast<std::size_t>(std::upper_bound(a.begin(), a.end(), v) - a.begin());
    j = std::clamp<std::size_t>(j, 1, a.size() - 1);
    lo[i] = j - 1;
    const double t = (std::log(std::clamp(v, a[j - 1], a[j])) - std::log(a[j - 1])) / (std::log(a[j]) - std::log(a[j - 1]));
    w[i] = std::clamp(t, 0.0, 1.0);
  }
  double sum = 0;
  for (std::size_t corner = 0; corner < (std::size_t{1} << dims); ++corner) {
    double weight = 1;
    std::size_t index = 0;
    for (std::size_t i = 0; i < dims; ++i) {
      const bool up = ((corner >> i) & 1U) != 0;
      if (up && axes[i].size() == 1) {
        weight = 0;
        break;
      }
      weight *= up ? w[i] : 1 - w[i];
      index += (lo[i] + (up ? 1 : 0)) * stride[i];
    }
    if (weight != 0) sum += weight * log_seconds[index];
  }
  return sum;
}

bool CostCurve::matches(const Kernel& k) const {
  if (k.kind != kind || k.dtype != dtype) return false;
  const bool attention = k.kind == KernelKind::attention_fwd || k.kind == KernelKind::attention_bwd;
  return !attention || k.causal == causal;
}

CalibratedCostModel::CalibratedCostModel(CostCurves curves, GpuSpec gpu, RooflineParams params)
    : curves_(std::move(curves)), roofline_(std::move(gpu), params) {
  for (const CostCurve& c : curves_.curves) {
    ORRERY_CHECK(c.axes.size() == feature_names(c.kind).size(), "curve for {} has {} axes", to_string(c.kind),
                 c.axes.size());
    ORRERY_CHECK(c.log_seconds.size() == c.cells(), "curve for {} has {} values for {} cells", to_string(c.kind),
                 c.log_seconds.size(), c.cells());
  }
}

sim::Duration CalibratedCostModel::time(const Kernel& k) const {
  const std::size_t i = static_cast<std::size_t>(k.kind);
  for (const CostCurve& c : curves_.curves) {
    if (!c.matches(k)) continue;
    if (const std::optional<double> ln = c.interpolate(kernel_features(k))) {
      calibrated_[i].fetch_add(1, std::memory_order_relaxed);
      return to_duration(std::exp(*ln) * feature_multiplier(k));
    }
  }
  fallback_[i].fetch_add(1, std::memory_order_relaxed);
  return roofline_.time(k);
}

std::uint64_t CalibratedCostModel::fallbacks() const {
  std::uint64_t n = 0;
  for (const auto& c : fallback_) n += c.load();
  return n;
}

std::uint64_t CalibratedCostModel::calibrated() const {
  std::uint64_t n = 0;
  for (const auto& c : calibrated_) n += c.load();
  return n;
}

std::string CalibratedCostModel::summary() const {
  return fmt::format("calibrated: {} kernels from the curves (measured times, no step efficiency), {} from the roofline ({})", calibrated(),
                     fallbacks(), roofline_terms(roofline_.params()));
}

std::vector<std::pair<std::string, std::uint64_t>> CalibratedCostModel::counters() const {
  std::vector<std::pair<std::string, std::uint64_t>> out;
  for (std::size_t i = 0; i < kKernelKindCount; ++i) {
    const auto kind = static_cast<KernelKind>(i);
    out.emplace_back(fmt::format("calibrated.{}", to_string(kind)), calibrated_[i].load());
    out.emplace_back(fmt::format("fallback.{}", to_string(kind)), fallback_[i].load());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace orrery::models
