// Kernel cost models: a Kernel (kernel.hpp) on a GpuSpec (hardware.hpp) -> a duration.
//  - RooflineCostModel: max(compute, memory) + a fixed per-kernel overhead, where compute is the
//    executed FLOPs (tile-padded) over peak x an efficiency curve per kind, and memory the
//    compulsory bytes over HBM bandwidth x a streaming efficiency.
//  - CalibratedCostModel: measured curves (calibration/ fits them from a profile), interpolated
//    in log space over each kind's shape features; outside the measured range it falls back to
//    the roofline, and counts every fallback.
//   RooflineCostModel roofline(HardwareCatalog::builtin().gpu("H100"));
//   sim::Duration t = roofline.time(Kernel::gemm(8192, 8192, 8192, DType::bf16));
#pragma once

#include "models/hardware/hardware.hpp"
#include "models/hardware/kernel.hpp"
#include "sim/units.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace orrery::models {

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual sim::Duration time(const Kernel&) const = 0;
  virtual std::string_view name() const = 0;
  // The fraction of overlapped tensor- or context-parallel communication that hides behind
  // compute (RooflineParams::overlap_efficiency).
  virtual double overlap_efficiency() const { return 1.0; }
  // The same for the expert-parallel all-to-alls overlapped with the other micro-batch's compute
  // (RooflineParams::overlap_ep_efficiency).
  virtual double overlap_ep_efficiency() const { return 1.0; }
  // The same for the data-parallel collectives (gradient reduce-scatters, parameter all-gathers)
  // run beside the compute (RooflineParams::overlap_dp_efficiency).
  virtual double overlap_dp_efficiency() const { return 1.0; }
  // Seconds of CPU time the framework spends to issue one kernel (RooflineParams::host_issue):
  // hidden while the GPU has queued work, the step's pace where kernels are shorter.
  virtual double host_issue_s() const { return 0.0; }
  // Seconds of CPU time for each further GEMM a grouped GEMM's loop launches (Kernel::
  // launch_per_product; RooflineParams::host_launch).
  virtual double host_launch_s() const { return 0.0; }
  // Counters for the run report, e.g. {"fallback.attention_fwd", 3}; sorted by name.
  virtual std::vector<std::pair<std::string, std::uint64_t>> counters() const { return {}; }
  // One line for the console: the model and what each kernel's time comes from, e.g.
  // "roofline (step efficiency 0.6772, 37.7 us per kernel)".
  virtual std::string summary() const { return std::string(name()); }
};

// The roofline's efficiency curves. Defaults are calibrated on one published measurement per
// parameter (see cost.cpp); docs/validation.md reports how well they predict the others.
// The H100 SXM's dense bf16 tensor FLOP/s over its FP32 FLOP/s on the CUDA cores (989 / 67
// TFLOP/s), the GPU attention_half_head_dim was measured on.
inline constexpr double kH100TensorToScalar = 989.0 / 67.0;
// The compute streams Transformer Engine spreads a grouped GEMM's products over
// (transformer_engine::num_streams = 4, transformer_engine/common/include/transformer_engine/
// gemm.h): a Kernel with launch_per_product pays one launch gap per this many products.
inline constexpr std::int64_t kGroupedGemmStreams = 4;

struct RooflineParams {
  // GEMM: fraction of peak on tile-padded FLOPs (m and n rounded up to gemm_tile, 0 for the
  // GPU's own, GpuSpec::gemm_tile: 128, or 256 on data-center Blackwell); FP8 GEMMs
  // reach a smaller fraction of their (twice as high) peak, and FP4's is taken as FP8's.
  double gemm_efficiency = 0.8149;
  double gemm_efficiency_fp8 = 0.7162;
  double gemm_efficiency_fp4 = 0.7162;
  // Grouped GEMMs (MoE experts) reach this fraction of a plain GEMM's efficiency.
  double grouped_gemm_efficiency = 1.0;
  std::int64_t gemm_tile = 0;
  // Attention (FlashAttention-style): each document's length rounds up to attention_tile, the
  // executed FLOPs are those of the whole tiles (for a causal mask, the tiles on and below the
  // diagonal), and efficiency = e_pass * L / (L + half_kv) * d / (d + half_head_dim), where L is
  // the mean key/value tokens a query tile visits (its fixed per-tile work amortises over L) and
  // d the head dimension (the softmax work per query-key pair amortises over d). A block-sparse
  // kernel (Kernel::kept < 1) visits only its kept key tiles, so its L shrinks with them.
  // half_head_dim is the H100's. The softmax's work per query-key pair (scale, running max,
  // exponential, sum) runs on the CUDA cores and special function units, not the tensor cores, so
  // on another GPU it scales with the GPU's bf16 tensor peak over its FP32 peak against H100's
  // (kH100TensorToScalar): 1.08x on A100 (whose FlashAttention-2 rows it fits as H100's do), 1.9x
  // on B200 and 2.1x on GB200, whose tensor cores doubled per SM and clock while the units the
  // softmax runs on did not ("FlashAttention-4", Together AI blog: from H100 to B200 bf16
  // tensor throughput goes from 1 to 2.25 PFLOP/s, the SFU count stays the same, and the softmax's
  // exponentials bound the forward). At d = 128 and 16k keys this gives B200 1,157 TFLOP/s forward,
  // against cuDNN 9.13's about 1,235 there (the same blog: FlashAttention-4's 1,605 TFLOP/s is up to
  // 1.3x cuDNN's); H100's ratio would give 1,475. Blackwell Ultra (B300, GB300) doubled the
  // special function units and not the FP32 cores: the ratio divides by GpuSpec::sfu_scale (2), so
  // its share is half of B200's.
  // FP8 attention runs its products at the FP8 peak and its softmax as bf16's:
  // time = FLOPs / (e_pass * L / (L + half_kv)) * (1 / peak_fp8 + half_head_dim / (d * peak_bf16)),
  // 1.53x bf16's at d = 128 on H100 (FlashAttention-3 measured 1.62x: Shah et al., arXiv
  // 2407.08608, abstract: up to 740 TFLOP/s in BF16, close to 1.2 PFLOP/s in FP8).
  double attention_fwd_efficiency = 0.9533;
  double attention_bwd_efficiency = 0.9774;
  double attention_half_kv = 197.66;
  double attention_half_head_dim = 55.909;
  std::int64_t attention_tile = 128;
  // Memory-bound kernels: fraction of HBM peak a streaming kernel sustains.
  double memory_efficiency = 0.90;
  // The same for the operands of compute kernels (GEMMs, attention): their tiles stream at the
  // isolated kernels' rate. A training step's fitted memory efficiency (step_params.hpp) stands
  // for its memory-bound kernels (unfused passes, casts), not for a GEMM's operand reads.
  double operand_memory_efficiency = 0.90;
  // Fixed time every kernel pays on the GPU (launch latency and tail; inside a step, the gap
  // between back-to-back kernels).
  sim::Duration kernel_overhead = sim::Duration::microseconds(2);
  // CPU time to issue one kernel (Python, the framework's dispatch, the launch call): the host
  // runs ahead of the GPU, so it costs the step only where the GPU's queued work is shorter
  // (step.cpp). 0 for isolated kernels and inside a full-iteration CUDA graph (nothing issued).
  // Used by the step emulator, not by time().
  sim::Duration host_issue = sim::Duration::zero();
  // CPU time for each further product of a grouped GEMM run as one GEMM per product (Transformer
  // Engine's C++ loop, not a module of its own): the launch call and its multi-stream events.
  sim::Duration host_launch = sim::Duration::zero();
  // The fraction of this roofline's speed a kernel reaches inside a training step (1 for the
  // isolated kernels of published benchmarks; the fitted training parameters of step_params.hpp
  // set each efficiency directly and leave it 1).
  double step_efficiency = 1.0;
  // The fraction of a tensor- or context-parallel transfer that hides behind the compute it is
  // overlapped with (the rest slows the kernels: SMs and memory bandwidth are shared); 1 for
  // isolated kernels. Used by the step emulator, not by time().
  double overlap_efficiency = 1.0;
  // The fraction of an expert-parallel all-to-all that hides behind the other micro-batch's
  // compute it is scheduled beside (plan.overlap.ep_comm: NCCL's or DeepEP's kernels on SMs of
  // their own, not Transformer Engine's TP overlap); 1 for isolated kernels.
  double overlap_ep_efficiency = 1.0;
  // The fraction of a data-parallel collective (a gradient bucket's reduce-scatter, a parameter
  // all-gather) that hides behind the compute it runs beside: the rest slows those kernels, whose
  // SMs and HBM bandwidth NCCL's kernels share; 1 for isolated kernels. Used by the step
  // emulator, not by time().
  double overlap_dp_efficiency = 1.0;
  // Where these values come from, for summaries ("hopper megatron fp8"); empty for the defaults.
  std::string source;
};

class RooflineCostModel final : public CostModel {
 public:
  explicit RooflineCostModel(GpuSpec gpu, RooflineParams params = {});
  sim::Duration time(const Kernel&) const override;
  std::string_view name() const override { return "roofline"; }
  std::string summary() const override;
  double overlap_efficiency() const override { return params_.overlap_efficiency; }
  double overlap_ep_efficiency() const override { return params_.overlap_ep_efficiency; }
  double overlap_dp_efficiency() const override { return params_.overlap_dp_efficiency; }
  double host_issue_s() const override { return params_.host_issue.to_seconds(); }
  double host_launch_s() const override { return params_.host_launch.to_seconds(); }

  struct Terms {
    double executed_flops = 0;  // after tile padding
    double efficiency = 0;      // of the compute term
    double compute_s = 0;
    double memory_s = 0;
    double overhead_s = 0;
    double seconds() const { return std::max(compute_s, memory_s) + overhead_s; }
    bool memory_bound() const { return memory_s > compute_s; }
  };
  Terms terms(const Kernel&) const;
  const GpuSpec& gpu() const { return gpu_; }
  const RooflineParams& params() const { return params_; }

 private:
  GpuSpec gpu_;
  RooflineParams params_;
};

// The shape features a calibrated curve interpolates over, per kind:
//   gemm: m, n, k (a batched GEMM costs batch x one product); grouped_gemm: total m, n, k;
//   attention: query tokens x heads, the effective length sum(l^2)/sum(l) (a batch of equal
//   documents of that length has the same linear and quadratic work), head_dim;
//   memory-bound kinds: bytes; optimizer: params.
std::vector<std::string> feature_names(KernelKind);
std::vector<double> kernel_features(const Kernel&);
double feature_multiplier(const Kernel&);  // batch for gemm, else 1

// One measured cost curve: ln(seconds) on a tensor grid over the kind's features.
struct CostCurve {
  KernelKind kind = KernelKind::gemm;
  DType dtype = DType::bf16;
  bool causal = false;                     // attention only
  std::vector<std::vector<double>> axes;   // per feature, ascending, positive
  std::vector<double> log_seconds;         // row-major over axes, last axis fastest
  // Fit report (from calibration): points measured, grid cells filled from the fit, points
  // raised to keep the curve monotone, leave-one-out errors, and the least-squares fit
  // ln t = c0 + sum_i c_i ln x_i + sum_i q_i (ln x_i)^2 used to fill holes.
  std::size_t points = 0, filled = 0, repaired = 0;
  double loo_interpolation_mape = std::numeric_limits<double>::quiet_NaN();
  double loo_fit_mape = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> fit_coefficients;

  std::size_t cells() const;
  // ln(seconds) at the features, or nullopt outside the grid's range.
  std::optional<double> interpolate(const std::vector<double>& features) const;
  bool matches(const Kernel&) const;
};

struct CostCurves {
  std::string device;                      // the profile's device name
  std::string source;                      // what produced it (profile path, harness)
  std::vector<std::pair<std::string, std::string>> metadata;  // versions, clocks, date
  std::vector<CostCurve> curves;
};

class CalibratedCostModel final : public CostModel {
 public:
  CalibratedCostModel(CostCurves curves, GpuSpec gpu, RooflineParams params = {});
  sim::Duration time(const Kernel&) const override;
  std::string_view name() const override { return "calibrated"; }
  std::vector<std::pair<std::string, std::uint64_t>> counters() const override;
  // "calibrated: 12 kernels from the curves (measured times, no step efficiency), 37 from the
  // roofline (step efficiency 0.6772, 37.7 us per kernel)": the counts so far.
  std::string summary() const override;
  double overlap_efficiency() const override { return roofline_.overlap_efficiency(); }
  double overlap_ep_efficiency() const override { return roofline_.overlap_ep_efficiency(); }
  double overlap_dp_efficiency() const override { return roofline_.overlap_dp_efficiency(); }
  double host_issue_s() const override { return roofline_.host_issue_s(); }
  double host_launch_s() const override { return roofline_.host_launch_s(); }
  std::uint64_t fallbacks(KernelKind k) const { return fallback_[static_cast<std::size_t>(k)].load(); }
  std::uint64_t calibrated(KernelKind k) const { return calibrated_[static_cast<std::size_t>(k)].load(); }
  std::uint64_t fallbacks() const;   // over all kinds
  std::uint64_t calibrated() const;  // over all kinds
  const CostCurves& curves() const { return curves_; }
  // What costs the kernels the curves do not cover.
  const RooflineCostModel& fallback() const { return roofline_; }

 private:
  CostCurves curves_;
  RooflineCostModel roofline_;
  mutable std::array<std::atomic<std::uint64_t>, kKernelKindCount> calibrated_{};
  mutable std::array<std::atomic<std::uint64_t>, kKernelKindCount> fallback_{};
};

}  // namespace orrery::models
