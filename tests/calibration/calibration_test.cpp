#include "calibration/cpu_harness.hpp"
#include "calibration/fit.hpp"
#include "calibration/profile.hpp"
#include "models/hardware/cost.hpp"
#include "sim/error.hpp"
#include "approx.hpp"

#include <doctest/doctest.h>

#include <string>

#include <cmath>

using namespace orrery;
using namespace orrery::calibration;
using models::DType;
using models::Kernel;
using models::KernelKind;

namespace {

Measurement point(const Kernel& k, double seconds) {
  std::vector<double> samples = {seconds * 0.99, seconds, seconds * 1.02};
  return summarize(k, samples);
}

// A GEMM grid with t = 1e-12 * m * n * k (a pure power law, so log-log interpolation and the
// least-squares fit are both exact), minus the cell (1024, 256, 512).
Profile power_law_profile() {
  Profile p;
  p.harness = "synthetic";
  p.device = "test device";
  p.date = "2026-11-30T00:00:00Z";
  p.software = {{"cuda", "13.0"}};
  for (const std::int64_t m : {64, 256, 1024}) {
    for (const std::int64_t n : {64, 256, 1024}) {
      for (const std::int64_t k : {128, 512}) {
        if (m == 1024 && n == 256 && k == 512) continue;
        p.points.push_back(point(Kernel::gemm(m, n, k, DType::bf16), 1e-12 * static_cast<double>(m * n * k)));
      }
    }
  }
  return p;
}

models::GpuSpec cpu_spec() {
  models::GpuSpec g = models::HardwareCatalog::builtin().gpu("H100");
  g.name = "cpu";
  return g;
}

}  // namespace

TEST_CASE("profiles round-trip through JSON and record what they were measured with") {
  Profile p = power_law_profile();
  p.points.push_back(point(Kernel::attention(models::Pass::backward, {100, 300}, 8, 2, 64, true, DType::bf16), 1e-4));
  p.points.push_back(point(Kernel::memory_bound(KernelKind::norm, sim::Bytes(1 << 20), DType::bf16), 1e-5));
  p.points.push_back(point(Kernel::optimizer(1000), 2e-5));
  p.points.push_back(point(Kernel::grouped_gemm({5, 0, 7}, 64, 32, DType::fp8), 3e-5));
  const std::string json = profile_to_json(p);
  const Profile back = read_profile(json, "p.json");
  CHECK(back.device == "test device");
  CHECK(back.software == p.software);
  CHECK(back.date == p.date);
  REQUIRE(back.points.size() == p.points.size());
  CHECK(back.points.back().kernel.group_m == std::vector<std::int64_t>{5, 0, 7});
  CHECK(back.points[back.points.size() - 4].kernel.doc_lens == std::vector<std::int64_t>{100, 300});
  CHECK(back.points[0].repetitions == 3);
  CHECK(profile_to_json(back) == json);

  const auto fails = [](std::string text, std::string_view from, std::string_view to) {
    text.replace(text.find(from), from.size(), to);
    try {
      read_profile(text, "p.json");
    } catch (const sim::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(fails(json, "\"gemm\"", "\"gemmm\"").find("p.json:/points/0/kind: unknown kernel kind \"gemmm\"; did you mean \"gemm\"?") !=
        std::string::npos);
  CHECK(fails(json, "\"repetitions\": 3", "\"repetitions\": 0").find("p.json:/points/0/repetitions") != std::string::npos);
  CHECK(fails(json, "\"m\": 64", "\"m\": -64").find("p.json:/points/0/shape/m: found a number -64, expected a positive m") !=
        std::string::npos);
  CHECK(fails(json, "orrery.profile/1", "orrery.profile/2").find("p.json:/schema") != std::string::npos);
}

TEST_CASE("fitting: exact at measured points, holes filled, monotone, leave-one-out errors") {
  Profile p = power_law_profile();
  const models::CostCurves curves = fit_profile(p, "synthetic");
  REQUIRE(curves.curves.size() == 1);
  const models::CostCurve& c = curves.curves[0];
  CHECK(c.points == 17);
  CHECK(c.cells() == 18);
  CHECK(c.filled == 1);
  CHECK(c.repaired == 0);
  CHECK(c.loo_fit_mape < 1e-9);
  CHECK(c.loo_interpolation_mape < 1e-9);
  const models::CalibratedCostModel model(curves, cpu_spec());
  for (const Measurement& m : p.points) {
    CHECK(std::abs(model.time(m.kernel).to_seconds() - m.median_s) <= 1e-9);  // time() rounds up to the ns
  }
  // The hole comes from the fit, which a power law makes exact.
  CHECK(std::abs(model.time(Kernel::gemm(1024, 256, 512, DType::bf16)).to_seconds() - 1e-12 * 1024 * 256 * 512) <= 1e-9);
  CHECK(model.fallbacks(KernelKind::gemm) == 0);

  SUBCASE("a noisy point that breaks monotonicity is raised, and counted") {
    for (Measurement& m : p.points) {
      if (m.kernel.m == 256 && m.kernel.n == 256 && m.kernel.k == 512) m.median_s = 1e-12 * 64 * 256 * 512 * 0.5;
    }
    const models::CostCurves noisy = fit_profile(p, "synthetic");
    CHECK(noisy.curves[0].repaired == 1);
    CHECK(noisy.curves[0].loo_interpolation_mape > 0.01);
    const models::CalibratedCostModel m2(noisy, cpu_spec());
    sim::Duration last = sim::Duration::zero();
    for (std::int64_t m = 64; m <= 1024; m += 32) {
      const sim::Duration t = m2.time(Kernel::gemm(m, 256, 512, DType::bf16));
      CHECK(t >= last);
      last = t;
    }
  }
}

// The kernels the loop holds out: between grid points, and an uneven varlen batch.
std::vector<Kernel> held_out_kernels() {
  return {
      Kernel::gemm(192, 384, 320, DType::fp32),
      Kernel::gemm(448, 160, 224, DType::fp32),
      Kernel::memory_bound(KernelKind::copy, sim::Bytes(96 * 1048576.0), DType::fp32),
      Kernel::memory_bound(KernelKind::elementwise, sim::Bytes(160 * 1048576.0), DType::fp32),
      Kernel::memory_bound(KernelKind::norm, sim::Bytes(192 * 1048576.0), DType::fp32),
      Kernel::attention(models::Pass::forward, {384, 384, 384, 384}, 2, 2, 64, false, DType::fp32),
      Kernel::attention(models::Pass::forward, {512, 320, 200, 200, 200, 100}, 2, 2, 64, false, DType::fp32),
  };
}

// A device whose timings follow stated physics, deterministic for a seed: GEMMs at 100 GFLOP/s
// derated by tile quantisation in each dimension, memory-bound kinds at 10 GB/s (norm 8 GB/s),
// attention at 50 GFLOP/s derated for short documents, each with a launch cost; samples carry
// +-2% seeded noise. Not a power law, so the fit has real work to do.
double synthetic_seconds(const Kernel& k) {
  switch (k.kind) {
    case KernelKind::gemm: {
      const auto d = [](std::int64_t x) { return static_cast<double>(x) / (static_cast<double>(x) + 48.0); };
      return models::flops(k).value() / (100e9 * d(k.m) * d(k.n) * d(k.k)) + 5e-6;
    }
    case KernelKind::norm: return k.bytes / 8e9 + 3e-6;
    case KernelKind::copy:
    case KernelKind::elementwise: return k.bytes / 10e9 + 3e-6;
    default: {
      // The effective document length sum(l^2) / sum(l): short documents fill fewer tiles.
      double squares = 0;
      for (const std::int64_t l : k.doc_lens) squares += static_cast<double>(l) * static_cast<double>(l);
      const double effective = squares / static_cast<double>(models::tokens(k));
      return models::flops(k).value() / (50e9 * effective / (effective + 64.0)) + 10e-6;
    }
  }
}

Measurement synthetic_timer(const Kernel& k, int repetitions, std::uint64_t seed) {
  std::uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
  std::vector<double> samples;
  for (int i = 0; i < repetitions; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(state >> 11) / 9007199254740992.0;  // [0, 1)
    samples.push_back(synthetic_seconds(k) * (0.98 + 0.04 * u));
  }
  return summarize(k, samples);
}

// The loop CI runs: measure (with the synthetic device: the result cannot depend on how busy the
// machine is), write and read the profile, fit, then predict points that were not measured.
TEST_CASE("calibration loop on a deterministic device: measure, fit, predict held-out points within 5%") {
  CpuHarnessOptions options;
  options.quick = true;
  options.repetitions = 5;
  Profile header;
  header.harness = "synthetic";
  header.device = "synthetic device";
  header.date = "2026-12-01T00:00:00Z";
  const Profile profile = measure_grid(header, cpu_grid(options), &synthetic_timer, options);
  CHECK(profile.points.size() == cpu_grid(options).size());
  // The same seed measures the same profile, byte for byte.
  CHECK(profile_to_json(measure_grid(header, cpu_grid(options), &synthetic_timer, options)) == profile_to_json(profile));
  const models::CostCurves curves = fit_profile(read_profile(profile_to_json(profile), "synthetic.json"), "synthetic.json");
  const models::CalibratedCostModel model(curves, cpu_spec());
  double worst = 0;
  std::string log;
  for (const Kernel& k : held_out_kernels()) {
    const double truth = synthetic_seconds(k);
    const double predicted = model.time(k).to_seconds();
    log += models::describe(k) + ": true " + std::to_string(truth) + " s, predicted " + std::to_string(predicted) + " s\n";
    worst = std::max(worst, std::abs(predicted / truth - 1));
  }
  std::uint64_t fallbacks = 0;
  for (std::size_t k = 0; k < models::kKernelKindCount; ++k) fallbacks += model.fallbacks(static_cast<KernelKind>(k));
  CHECK(fallbacks == 0);
  INFO(log << "worst relative error " << worst);
  MESSAGE("synthetic device, held-out kernels: worst relative error " << worst);
  CHECK(worst < 0.05);
}
