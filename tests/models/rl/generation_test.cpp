#include "models/rl/generation.hpp"
#include "sim/error.hpp"
#include "approx.hpp"

#include <doctest/doctest.h>

using namespace orrery;

namespace {
struct Gen {
  const models::GpuSpec& gpu = models::HardwareCatalog::builtin().gpu("h100");
  models::RooflineCostModel cost{gpu};  // inference kernels: the isolated roofline
  models::GenerationConfig config;
  Gen() {
    config.model = models::ModelCatalog::builtin().model("llama3-8b");
    config.gpu = gpu;
    config.max_context = 16384;
  }
};
}  // namespace

TEST_CASE("generation: the per-token latency comes out of the kernels, flat then rising at the roofline's knee") {
  Gen g;
  const models::GenerationInstance inst(g.config, g.cost, "test");
  // Context 1: the GEMMs alone (the KV read is negligible).
  const double one = inst.ptl(1, 1);
  CHECK(inst.ptl(64, 1) < 1.05 * one);   // weight reads dominate: flat
  CHECK(inst.ptl(128, 1) < 1.05 * one);
  CHECK(inst.ptl(1024, 1) > 2.0 * inst.ptl(64, 1));  // compute-bound: rising
  // The knee: where a GEMM's compute (2 b n k / (peak e)) overtakes its weight read (2 n k /
  // (bandwidth e_mem)): b* = peak e / (bandwidth e_mem).
  const models::RooflineParams p;
  const double knee = g.gpu.peak(models::DType::bf16).value() * p.gemm_efficiency / (g.gpu.hbm_bandwidth * p.memory_efficiency);
  int first = 0;
  for (int b = 1; b <= 4096 && first == 0; b *= 2) {
    if (inst.ptl(b, 1) > 1.2 * one) first = b;
  }
  CAPTURE(knee);
  CHECK(first >= knee / 2);
  CHECK(first <= knee * 2);
  // The KV read grows with the cached tokens.
  CHECK(inst.ptl(64, 8192) > inst.ptl(64, 1024));
}

TEST_CASE("generation: continuous batching in closed form, preemption, bad input") {
  Gen g;
  const models::GenerationInstance inst(g.config, g.cost, "test");
  // One request: its prefill, then one iteration per output token over a growing cache.
  const auto one = inst.run({{7, 1000, 300, 0}}, 5.0, "test");
  double expect = 5.0 + inst.prefill_s({1000});
  for (int i = 0; i < 300; ++i) expect += inst.decode_iteration_s(1, 1000 + i);
  REQUIRE(one.size() == 1);
  CHECK(one[0].id == 7);
  CHECK(one[0].time == orrery::testing::Approx(expect).epsilon(1e-9));
  // 32 identical requests: one prefill of all, then 32-wide iterations.
  std::vector<models::GenRequest> same;
  for (int i = 0; i < 32; ++i) same.push_back({i, 500, 200, 0});
  const auto batch = inst.run(same, 0, "test");
  double expect32 = inst.prefill_s(std::vector<std::int64_t>(32, 500));
  for (int i = 0; i < 200; ++i) expect32 += inst.decode_iteration_s(32, 32.0 * (500 + i));
  for (const auto& f : batch) CHECK(f.time == orrery::testing::Approx(expect32).epsilon(1e-9));
  CHECK(expect32 < 32 * (expect - 5.0) / 4);  // batching: far faster than one at a time
  // A cache just over one sequence: sequences are preempted and recomputed, all finish.
  models::GenerationConfig tight = g.config;
  tight.max_context = 4096;
  tight.memory_fraction = (2.0 * static_cast<double>(tight.model.params()) + 6000 * 131072.0) / g.gpu.hbm_bytes;
  const models::GenerationInstance small(tight, g.cost, "test");
  CHECK(small.kv_capacity_tokens() < 6100);
  std::vector<models::GenRequest> many;
  for (int i = 0; i < 6; ++i) many.push_back({i, 1000, 1500, 0});
  int preempted = 0;
  for (const auto& f : small.run(many, 0, "test")) {
    CHECK(f.time > 0);
    preempted += f.preemptions;
  }
  CHECK(preempted > 0);
  // Bad input.
  CHECK_THROWS_WITH_AS(inst.run({{3, 10000, 8000, 0}}, 0, "rollouts.jsonl"),
                       doctest::Contains("rollouts.jsonl:request 3: found a sample of 18000 tokens (prompt 10000 + output 8000), longer than the maximum context of 16384"),
                       sim::InputError);
  models::GenerationConfig huge = g.config;
  huge.max_context = 10'000'000;
  CHECK_THROWS_WITH_AS(models::GenerationInstance(huge, g.cost, "rl.json"), doctest::Contains("cannot hold a single sequence"), sim::InputError);
  models::GenerationConfig big = g.config;
  big.model = models::ModelCatalog::builtin().model("llama3-70b");
  CHECK_THROWS_WITH_AS(models::GenerationInstance(big, g.cost, "rl.json"), doctest::Contains("weights take"), sim::InputError);
}

TEST_CASE("generation: memory-bound decode favours bandwidth (H20 beats H800 at small batches, loses at large)") {
  const auto& cat = models::HardwareCatalog::builtin();
  models::GenerationConfig c;
  c.model = models::ModelCatalog::builtin().model("qwen2.5-7b");
  c.max_context = 16384;
  c.gpu = cat.gpu("h20");
  const models::RooflineCostModel h20_cost(c.gpu);
  const models::GenerationInstance h20(c, h20_cost, "test");
  c.gpu = cat.gpu("h800");
  const models::RooflineCostModel h800_cost(c.gpu);
  const models::GenerationInstance h800(c, h800_cost, "test");
  MESSAGE("PTL(1, 8K) H20 " << h20.ptl(1, 8192) * 1e3 << " ms, H800 " << h800.ptl(1, 8192) * 1e3 << " ms; PTL(256, 1K) H20 " << h20.ptl(256, 1024) * 1e3
                            << " ms, H800 " << h800.ptl(256, 1024) * 1e3 << " ms");
  // Batch 1: the weight read; 4.0 vs 3.35 TB/s.
  CHECK(h20.ptl(1, 8192) < h800.ptl(1, 8192));
  CHECK(h800.ptl(1, 8192) / h20.ptl(1, 8192) == orrery::testing::Approx(4.0 / 3.35).epsilon(0.1));
  // Batch 256: compute-bound on the H20 (148 vs 989 TFLOP/s).
  CHECK(h20.ptl(256, 1024) > 2 * h800.ptl(256, 1024));
}
