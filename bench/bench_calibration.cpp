// The live CPU calibration loop (calibration/cpu_harness.hpp): measure this machine's CPU,
// fit, then predict kernels between the grid points and measure them. The error depends on how
// quiet the machine is, which is why it is a bench figure and not a test (the tests run the same
// loop on a deterministic device and on a recorded profile).
#include "bench.hpp"

#include "calibration/cpu_harness.hpp"
#include "calibration/fit.hpp"
#include "models/hardware/cost.hpp"

#include <algorithm>
#include <cmath>

namespace orrery::bench {

void bench_calibration(Figures& out, bool quick) {
  calibration::CpuHarnessOptions options;
  options.quick = true;
  options.repetitions = quick ? 2 : 5;
  calibration::Profile profile;
  const double measure_s = best_seconds(1, [&] { profile = calibration::measure_cpu(options); });
  const models::CostCurves curves = calibration::fit_profile(profile, "cpu");
  models::GpuSpec device = models::HardwareCatalog::builtin().gpu("H100");
  device.name = "cpu";
  const models::CalibratedCostModel model(curves, device);
  const std::vector<models::Kernel> held_out = {
      models::Kernel::gemm(192, 384, 320, models::DType::fp32),
      models::Kernel::gemm(448, 160, 224, models::DType::fp32),
      models::Kernel::memory_bound(models::KernelKind::copy, sim::Bytes(96 * 1048576.0), models::DType::fp32),
      models::Kernel::memory_bound(models::KernelKind::norm, sim::Bytes(192 * 1048576.0), models::DType::fp32),
      models::Kernel::attention(models::Pass::forward, {512, 320, 200, 200, 200, 100}, 2, 2, 64, false, models::DType::fp32),
  };
  double worst = 0;
  double sum = 0;
  for (std::size_t i = 0; i < held_out.size(); ++i) {
    const double measured = calibration::measure_cpu_kernel(held_out[i], options.repetitions, 100 + i).median_s;
    const double error = std::abs(model.time(held_out[i]).to_seconds() / measured - 1);
    worst = std::max(worst, error);
    sum += error;
  }
  out.push_back({"calibration.cpu.measure", measure_s, "s to measure the quick CPU grid"});
  out.push_back({"calibration.cpu.heldout_mean_error", sum / static_cast<double>(held_out.size()),
                 "mean |predicted / measured - 1| of held-out kernels (live; noise on a busy machine)"});
  out.push_back({"calibration.cpu.heldout_worst_error", worst, "worst |predicted / measured - 1| of held-out kernels"});
}

}  // namespace orrery::bench
