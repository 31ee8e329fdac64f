// The CPU harness: the calibration pipeline with the CPU as the device, so that measure ->
// fit -> simulate runs anywhere (CI included). It times, with the same discipline as the CUDA
// harness (warm-up, median of repetitions, rotated input buffers, seeded random inputs):
//  - gemm (fp32, Eigen), over an m x n x k grid;
//  - copy, elementwise (y = 1.5 x + b) and norm (a layer norm over rows of 4096), over bytes;
//  - attention_fwd (fp32 reference: softmax(QK^T / sqrt(d)) V per document and head), over
//    tokens x sequence length.
//   Profile p = measure_cpu({.quick = true});
// The grid and the loop over it are separate from the timing, so the same loop runs with a
// deterministic timer in tests (measure_grid) while the live CPU timing stays a bench.
#pragma once

#include "calibration/profile.hpp"

#include <cstdint>
#include <functional>
#include <vector>

namespace orrery::calibration {

struct CpuHarnessOptions {
  bool quick = false;    // a smaller grid (seconds, for tests)
  int repetitions = 7;   // timed runs per point, after one warm-up run
  std::uint64_t seed = 1;
  std::function<void(std::size_t done, std::size_t total)> on_point;  // progress reports: after each point
};

// Measures one kernel `repetitions` times with inputs drawn from `seed`.
using KernelTimer = std::function<Measurement(const models::Kernel& kernel, int repetitions, std::uint64_t seed)>;

// The kernels the CPU harness measures: fp32 GEMMs over an m x n x k grid, memory-bound kinds
// over sizes beyond the last-level cache, forward attention over tokens x document length.
std::vector<models::Kernel> cpu_grid(const CpuHarnessOptions& options);
// Measures every kernel of `grid` with `timer` (seeds options.seed, options.seed + 1, ...) into
// `header`'s points.
Profile measure_grid(Profile header, const std::vector<models::Kernel>& grid, const KernelTimer& timer,
                     const CpuHarnessOptions& options);
// The live CPU profile: cpu_grid timed by measure_cpu_kernel, with this machine's identity.
Profile measure_cpu(const CpuHarnessOptions& options);
// Times one kernel; throws InputError for kinds or dtypes the CPU harness does not run.
Measurement measure_cpu_kernel(const models::Kernel& kernel, int repetitions, std::uint64_t seed);
bool cpu_supports(const models::Kernel& kernel);

}  // namespace orrery::calibration
