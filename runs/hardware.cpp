// `orrery gpus` and `orrery cost`: the hardware catalog and the kernel cost models.
#include "runs/report_out.hpp"
#include "runs/runs.hpp"
#include "runs/options.hpp"

#include "models/hardware/cost.hpp"
#include "sim/error.hpp"
#include "traces/curves_json.hpp"
#include "traces/hardware_json.hpp"
#include "reports/report.hpp"

#include <fmt/format.h>

#include <memory>
#include <ostream>

namespace orrery::runs {

namespace {
std::string tflops(const models::GpuSpec& g, models::DType t) {
  return g.supports(t) ? fmt::format("{:g}", g.peak(t).value() / 1e12) : "-";
}
}  // namespace

void gpus(const GpusOptions& o, std::ostream& out) {
  const models::HardwareCatalog catalog = traces::load_gpu_catalog(o.gpus_path);
  out << fmt::format("{:<10} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>8} {:>5} {:>12}\n", "gpu", "fp32", "tf32", "bf16", "fp16", "fp8",
                     "fp4", "HBM GB", "HBM TB/s", "SMs", "link GB/s");
  for (const models::GpuSpec& g : catalog.gpus()) {
    out << fmt::format("{:<10} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7g} {:>8g} {:>5} {:>12}\n", g.name, tflops(g, models::DType::fp32),
                       tflops(g, models::DType::tf32), tflops(g, models::DType::bf16), tflops(g, models::DType::fp16),
                       tflops(g, models::DType::fp8), tflops(g, models::DType::fp4), g.hbm_bytes / 1e9, g.hbm_bandwidth / 1e12, g.sm_count,
                       g.nvlink_bandwidth > 0 ? fmt::format("{:g} {}{}", g.nvlink_bandwidth / 1e9, g.interconnect,
                                                            g.nvlink_generation > 0 ? fmt::format("{}", g.nvlink_generation) : "")
                                              : "-");
  }
  out << "(dense TFLOP/s per dtype; link bandwidth per GPU and direction)\nsources:\n";
  for (const models::GpuSpec& g : catalog.gpus()) out << fmt::format("  {}: {}\n", g.name, g.source);
}

void cost(const CostOptions& o, std::ostream& out) {
  check_outputs({{"--report", o.report_path}});
  if (o.kernels.empty()) throw sim::InputError("<command line>", "--kernel", "expected at least one kernel, e.g. gemm:m=4096,n=4096,k=4096");
  const models::HardwareCatalog catalog = traces::load_gpu_catalog(o.gpus_path);
  const models::GpuSpec& gpu = catalog.gpu(o.gpu, "<command line>", "--gpu");
  std::vector<models::Kernel> kernels;
  for (std::size_t i = 0; i < o.kernels.size(); ++i) {
    kernels.push_back(models::parse_kernel(o.kernels[i], {"<command line>", fmt::format("--kernel #{}", i + 1)}));
  }
  const models::RooflineCostModel roofline(gpu);
  std::unique_ptr<models::CalibratedCostModel> calibrated;
  if (!o.calibration_path.empty()) calibrated = std::make_unique<models::CalibratedCostModel>(traces::load_curves(o.calibration_path), gpu);
  const models::CostModel& model = calibrated ? static_cast<const models::CostModel&>(*calibrated) : roofline;

  reports::Report report;
  report.set("/gpu", gpu.name);
  report.set("/model", model.name());
  if (calibrated) report.set("/calibration", o.calibration_path);
  out << fmt::format("gpu     {} ({:g} TFLOP/s bf16, {:g} TB/s HBM); model {}\n", gpu.name, gpu.peak(models::DType::bf16).value() / 1e12,
                     gpu.hbm_bandwidth / 1e12, model.name());
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const models::Kernel& k = kernels[i];
    const std::uint64_t before = calibrated ? calibrated->fallbacks(k.kind) : 0;
    const sim::Duration t = model.time(k);
    const bool fell_back = calibrated && calibrated->fallbacks(k.kind) > before;
    const models::RooflineCostModel::Terms terms = roofline.terms(k);
    const double seconds = t.to_seconds();
    const double f = models::flops(k).value();
    const std::string source = !calibrated ? "roofline" : fell_back ? "roofline (outside the calibrated range)" : "calibrated curve";
    out << fmt::format("kernel  {}\n  time      {}  [{}]\n", models::describe(k), sim::to_string(t), source);
    if (f > 0) {
      out << fmt::format("  achieved  {:.1f} TFLOP/s ({:.1f}% of peak)\n", f / seconds / 1e12,
                         100 * f / seconds / gpu.peak(k.dtype).value());
    }
    out << fmt::format("  memory    {} at {:.2f} TB/s\n", sim::to_string(models::min_bytes(k)), models::min_bytes(k).value() / seconds / 1e12);
    out << fmt::format("  roofline  {} bound: compute {:.3g} s, memory {:.3g} s\n", terms.memory_bound() ? "memory" : "compute", terms.compute_s,
                       terms.memory_s);
    const std::string base = fmt::format("/kernels/{}", i);
    report.set(base + "/kernel", models::describe(k));
    report.set(base + "/time_s", seconds);
    report.set(base + "/flops", f);
    report.set(base + "/bytes", models::min_bytes(k).value());
    report.set(base + "/source", fell_back || !calibrated ? "roofline" : "calibrated");
  }
  for (const auto& [name, value] : model.counters()) report.set("/counters/" + name, static_cast<std::int64_t>(value));
  if (calibrated) {
    std::uint64_t fallbacks = 0;
    for (std::size_t k = 0; k < models::kKernelKindCount; ++k) fallbacks += calibrated->fallbacks(static_cast<models::KernelKind>(k));
    out << fmt::format("fallbacks to roofline: {}\n", fallbacks);
  }
  emit_report(report, o.report_path, o.report_json);
}

}  // namespace orrery::runs
