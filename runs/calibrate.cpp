// `orrery calibrate measure` (CPU harness) and `orrery calibrate fit`.
#include "runs/runs.hpp"
#include "runs/progress.hpp"
#include "runs/options.hpp"

#include "calibration/cpu_harness.hpp"
#include "calibration/fit.hpp"
#include "calibration/kineto.hpp"
#include "sim/error.hpp"
#include "traces/curves_json.hpp"

#include <fmt/format.h>

#include <ostream>

namespace orrery::runs {

void calibrate_measure(const CalibrateMeasureOptions& o, std::ostream& out) {
  if (o.device == "cuda") {
    throw sim::InputError("<command line>", "--device",
                          "the CUDA harness is its own executable: build/bin/orrery-calibrate-cuda -o profile.json "
                          "(built when CMake finds the CUDA toolkit)");
  }
  if (o.device != "cpu") throw sim::InputError("<command line>", "--device", fmt::format("found {}, expected cpu or cuda", sim::quote(o.device)));
  check_count(o.repetitions, "--repetitions", 1, 1000, "timed runs per point; the profile keeps their median");
  if (o.out_path.empty()) throw sim::InputError("<command line>", "-o", "expected the profile file to write");
  check_outputs({{"--out", o.out_path}});
  Progress progress("calibrate: measuring", 0, "points");
  calibration::CpuHarnessOptions harness{o.quick, o.repetitions, o.seed, {}};
  harness.on_point = [&](std::size_t done, std::size_t total) {
    progress.set_total(static_cast<std::int64_t>(total));
    progress.advance();
    (void)done;
  };
  const calibration::Profile p = calibration::measure_cpu(harness);
  progress.finish();
  calibration::write_profile(p, o.out_path);
  out << fmt::format("measured {} points on {} ({} repetitions each); profile written to {}\n", p.points.size(), p.device,
                     o.repetitions, o.out_path);
}

void calibrate_fit(const CalibrateFitOptions& o, std::ostream& out) {
  check_outputs({{"--out", o.out_path}});
  const calibration::Profile p = calibration::load_profile(o.profile_path);
  const models::CostCurves curves = calibration::fit_profile(p, o.profile_path);
  out << fmt::format("{} points on {} ({} harness, {})\n", p.points.size(), p.device, p.harness, p.date);
  out << calibration::fit_report(curves);
  if (!o.out_path.empty()) {
    traces::write_curves(curves, o.out_path);
    out << fmt::format("curves written to {}\n", o.out_path);
  }
}

void calibrate_import(const CalibrateImportOptions& o, std::ostream& out) {
  check_outputs({{"--out", o.out_path}});
  const calibration::KinetoTrace trace = calibration::read_kineto_trace(o.trace_path);
  const calibration::KinetoProfile kp = calibration::kineto_profile(trace);
  if (kp.profile.points.empty()) {
    throw sim::InputError(o.trace_path, "", fmt::format("none of its {} GPU kernels is one Orrery can fit (record the trace with record_shapes=True)",
                                                        trace.kernels.size()));
  }
  std::size_t matched = 0;
  for (const auto& [kind, n] : kp.matched) matched += static_cast<std::size_t>(n);
  out << fmt::format("trace      {} ({}, {} GPU kernels over {:.3f} ms)\n", o.trace_path, trace.device, trace.kernels.size(), trace.span_us() / 1e3);
  out << fmt::format("matched    {} kernels, {:.1f}% of the kernel time, as {} points:", matched,
                     kp.total_us > 0 ? 100 * kp.matched_us / kp.total_us : 0.0, kp.profile.points.size());
  for (const auto& [kind, n] : kp.matched) out << fmt::format(" {} {}", kind, n);
  out << "\n";
  for (const auto& [why, names] : kp.skipped) {
    int n = 0;
    for (const auto& [name, c] : names) n += c;
    out << fmt::format("skipped    {} kernels: {} (e.g. {})\n", n, why, names.begin()->first.substr(0, 80));
  }
  calibration::write_profile(kp.profile, o.out_path);
  out << fmt::format("profile written to {} (then: orrery calibrate fit {})\n", o.out_path, o.out_path);
}

}  // namespace orrery::runs
