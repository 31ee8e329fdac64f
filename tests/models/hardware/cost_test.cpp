#include "models/hardware/cost.hpp"
#include "models/hardware/hardware.hpp"
#include "models/hardware/kernel.hpp"
#include "sim/error.hpp"
#include "approx.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace orrery;
using namespace orrery::models;

namespace {
const GpuSpec& h100() { return HardwareCatalog::builtin().gpu("H100"); }
constexpr double kOverhead = 2e-6;
}  // namespace

TEST_CASE("the catalog has the issue's GPUs with their datasheet numbers") {
  const HardwareCatalog& c = HardwareCatalog::builtin();
  for (const char* name : {"A100-40GB", "A100-80GB", "H100", "H200", "B200", "GB200", "MI300X"}) {
    const GpuSpec& g = c.gpu(name);
    CHECK(g.supports(DType::bf16));
    CHECK(g.hbm_bytes > 0);
    CHECK(g.hbm_bandwidth > 0);
    CHECK(g.sm_count > 0);
    CHECK(!g.source.empty());
  }
  CHECK(c.gpu("H100").peak(DType::bf16).value() == 989e12);
  CHECK(c.gpu("h100-sxm").name == "H100");  // case-insensitive, aliases
  CHECK(c.gpu("H200").hbm_bytes == 141e9);
  CHECK(c.gpu("H200").hbm_bandwidth == 4.8e12);
  CHECK(c.gpu("A100").name == "A100-80GB");
  CHECK_FALSE(c.gpu("A100-40GB").supports(DType::fp8));
  CHECK(c.gpu("B200").nvlink_bandwidth == 900e9);
  CHECK(c.gpu("B200").nvlink_generation == 5);
  CHECK(c.gpu("MI300X").interconnect == "xgmi");
  CHECK_THROWS_WITH_AS(c.gpu("H10", "scenario.json", "/cluster/gpu"),
                       doctest::Contains("scenario.json:/cluster/gpu: unknown GPU \"H10\"; did you mean \"H100\"?"), sim::InputError);
  HardwareCatalog mine = c;
  GpuSpec custom = c.gpu("H100");
  custom.name = "h100";
  custom.hbm_bytes = 96e9;
  mine.add_or_replace(custom);  // replaces, by case-insensitive name
  CHECK(mine.gpus().size() == c.gpus().size());
  CHECK(mine.gpu("H100").hbm_bytes == 96e9);
}

TEST_CASE("FLOPs are counted exactly") {
  CHECK(flops(Kernel::gemm(100, 200, 300, DType::bf16)).value() == 2.0 * 100 * 200 * 300);
  CHECK(flops(Kernel::gemm(100, 200, 300, DType::bf16, 4)).value() == 4 * 2.0 * 100 * 200 * 300);
  CHECK(flops(Kernel::grouped_gemm({10, 0, 30}, 64, 128, DType::bf16)).value() == 2.0 * 40 * 64 * 128);
  // Attention: 2(d + dv) per pair and head forward; causal documents have l(l+1)/2 pairs.
  const Kernel fwd = Kernel::attention(Pass::forward, {3, 5}, 4, 2, 8, false, DType::bf16);
  CHECK(flops(fwd).value() == (9 + 25) * 2.0 * 16 * 4);
  const Kernel causal = Kernel::attention(Pass::forward, {3, 5}, 4, 2, 8, true, DType::bf16);
  CHECK(flops(causal).value() == (6 + 15) * 2.0 * 16 * 4);
  // Backward is 2.5x forward when d = dv (five matmuls against two).
  const Kernel bwd = Kernel::attention(Pass::backward, {3, 5}, 4, 2, 8, true, DType::bf16);
  CHECK(flops(bwd).value() == 2.5 * flops(causal).value());
  // MLA-style shapes: d_qk != d_v.
  const Kernel mla = Kernel::attention(Pass::forward, {4}, 1, 1, 192, false, DType::bf16, 128);
  CHECK(flops(mla).value() == 16 * 2.0 * (192 + 128));
  CHECK(flops(Kernel::memory_bound(KernelKind::norm, sim::Bytes(1e6), DType::bf16)).value() == 0);
  CHECK(min_bytes(Kernel::optimizer(1000)).value() == 30000);
  CHECK(min_bytes(Kernel::gemm(2, 3, 4, DType::bf16)).value() == (8 + 12 + 6) * 2.0);
}

TEST_CASE("kernel specs parse, and bad ones say what was expected") {
  const sim::InputLocation at{"<command line>", "--kernel"};
  const Kernel g = parse_kernel("gemm:m=4096,n=1024,k=512,dtype=fp8", at);
  CHECK(g.m == 4096);
  CHECK(g.dtype == DType::fp8);
  const Kernel a = parse_kernel("attention_bwd:seqlen=1024,batch=3,heads=32,kv_heads=8,head_dim=128,causal=1", at);
  CHECK(a.kind == KernelKind::attention_bwd);
  CHECK(a.doc_lens == std::vector<std::int64_t>{1024, 1024, 1024});
  CHECK(a.causal);
  CHECK(parse_kernel("attention_fwd:docs=5/7,heads=2,head_dim=64", at).doc_lens == std::vector<std::int64_t>{5, 7});
  CHECK(parse_kernel("norm:bytes=1MiB", at).bytes == 1048576);
  CHECK(parse_kernel("grouped_gemm:m=1/2/3,n=4,k=5", at).m == 6);
  CHECK_THROWS_WITH_AS(parse_kernel("gem:m=1", at), doctest::Contains("unknown kernel kind \"gem\"; did you mean \"gemm\"?"), sim::InputError);
  CHECK_THROWS_WITH_AS(parse_kernel("gemm:m=1,n=2", at), doctest::Contains("k: found 0, expected a positive size"), sim::InputError);
  CHECK_THROWS_WITH_AS(parse_kernel("gemm:m=1,n=2,k=3,dtype=bf17", at), doctest::Contains("dtype: found \"bf17\""), sim::InputError);
  CHECK_THROWS_WITH_AS(parse_kernel("gemm:m=1.5,n=2,k=3", at), doctest::Contains("m: found \"1.5\", expected a non-negative whole number"),
                       sim::InputError);
  CHECK_THROWS_WITH_AS(parse_kernel("attention_fwd:seqlen=8,heads=6,kv_heads=4,head_dim=64", at),
                       doctest::Contains("kv_heads: found 4, expected a divisor of heads=6"), sim::InputError);
  CHECK_THROWS_WITH_AS(parse_kernel("norm:byte=1MiB", at), doctest::Contains("unknown key \"byte\" for norm; did you mean \"bytes\"?"),
                       sim::InputError);
}

TEST_CASE("roofline closed forms") {
  const RooflineCostModel m(h100());
  const RooflineParams p;
  SUBCASE("a large GEMM is compute-bound at gemm_efficiency of peak, plus the overhead") {
    const Kernel g = Kernel::gemm(8192, 8192, 8192, DType::bf16);
    const double expected = 2.0 * 8192 * 8192 * 8192 / (989e12 * p.gemm_efficiency) + kOverhead;
    CHECK(m.terms(g).seconds() == orrery::testing::Approx(expected).epsilon(1e-12));
    CHECK(std::abs(m.time(g).to_seconds() - expected) <= 1e-9);  // time() rounds up to the ns
    CHECK_FALSE(m.terms(g).memory_bound());
  }
  SUBCASE("m and n round up to 128-wide tiles") {
    CHECK(m.terms(Kernel::gemm(129, 4096, 4096, DType::bf16)).compute_s ==
          orrery::testing::Approx(m.terms(Kernel::gemm(256, 4096, 4096, DType::bf16)).compute_s));
    CHECK(m.terms(Kernel::gemm(4096, 2880, 2880, DType::bf16)).executed_flops == 2.0 * 4096 * 2944 * 2880);
  }
  SUBCASE("on data-center Blackwell, to the 2-SM MMA's 256-wide tiles (GpuSpec::gemm_tile)") {
    for (const char* name : {"B200", "GB200", "B300", "GB300"}) {
      const RooflineCostModel b(HardwareCatalog::builtin().gpu(name));
      CHECK(b.params().gemm_tile == 256);
      // GPT-OSS's width: 2880 = 11.25 tiles of 256, executed as 12.
      CHECK(b.terms(Kernel::gemm(4096, 2880, 2880, DType::bf16)).executed_flops == 2.0 * 4096 * 3072 * 2880);
      CHECK(b.terms(Kernel::gemm(4096, 3072, 2880, DType::bf16)).compute_s ==
            orrery::testing::Approx(b.terms(Kernel::gemm(4096, 2880, 2880, DType::bf16)).compute_s));
    }
    RooflineParams own;
    own.gemm_tile = 64;  // a tile the caller sets stands
    CHECK(RooflineCostModel(HardwareCatalog::builtin().gpu("B200"), own).params().gemm_tile == 64);
    CHECK(m.params().gemm_tile == 128);
  }
  SUBCASE("memory-bound kernels take their bytes at 90% of HBM bandwidth") {
    const Kernel n = Kernel::memory_bound(KernelKind::norm, sim::Bytes(3.35e9), DType::bf16);
    CHECK(m.terms(n).seconds() == orrery::testing::Approx(1e-3 / 0.9 + kOverhead));
    CHECK(m.terms(Kernel::optimizer(1'000'000'000)).seconds() == orrery::testing::Approx(30e9 / (3.35e12 * 0.9) + kOverhead));
  }
  SUBCASE("a skinny GEMM is memory-bound") {
    CHECK(m.terms(Kernel::gemm(1, 16384, 16384, DType::bf16)).memory_bound());
  }
  SUBCASE("attention rounds lengths up to 128-token tiles") {
    const auto fwd = [&](std::int64_t l, bool causal) {
      return m.terms(Kernel::attention(Pass::forward, {l}, 32, 8, 128, causal, DType::bf16));
    };
    CHECK(fwd(129, false).executed_flops == fwd(256, false).executed_flops);
    CHECK(fwd(129, false).compute_s == orrery::testing::Approx(fwd(256, false).compute_s));
    // Non-causal l = 1024: 8 x 8 tiles; causal: the 36 on and below the diagonal.
    CHECK(fwd(1024, false).executed_flops == orrery::testing::Approx(64 * 128.0 * 128 * 4 * 128 * 32));
    CHECK(fwd(1024, true).executed_flops == orrery::testing::Approx(36 * 128.0 * 128 * 4 * 128 * 32));
    // Efficiency e * L/(L + half_kv) * d/(d + half_d), L the mean key tokens per query tile.
    const double L = 1024, d = 128;
    CHECK(fwd(1024, false).efficiency ==
          orrery::testing::Approx(p.attention_fwd_efficiency * L / (L + p.attention_half_kv) * d / (d + p.attention_half_head_dim)));
    const double Lc = 128 * 36.0 / 8;
    CHECK(fwd(1024, true).efficiency ==
          orrery::testing::Approx(p.attention_fwd_efficiency * Lc / (Lc + p.attention_half_kv) * d / (d + p.attention_half_head_dim)));
  }
  SUBCASE("varlen: many short documents cost less than one long one of the same tokens") {
    const Kernel one = Kernel::attention(Pass::forward, {8192}, 32, 8, 128, true, DType::bf16);
    const Kernel many = Kernel::attention(Pass::forward, std::vector<std::int64_t>(64, 128), 32, 8, 128, true, DType::bf16);
    CHECK(m.time(many) < m.time(one));
  }
  SUBCASE("a grouped GEMM launched per product pays a launch gap per four products") {
    Kernel g = Kernel::grouped_gemm(std::vector<std::int64_t>(9, 512), 2048, 2048, DType::bf16);
    const double one = m.terms(g).seconds();
    g.launch_per_product = true;  // nine GEMMs on four streams: three gaps
    CHECK(m.terms(g).seconds() == orrery::testing::Approx(one + 2 * kOverhead).epsilon(1e-12));
    Kernel w = Kernel::gemm(2048, 2048, 512, DType::bf16, 4);
    const double batched = m.terms(w).seconds();
    w.launch_per_product = true;  // four GEMMs: one gap, as one kernel
    CHECK(m.terms(w).seconds() == batched);
  }
  SUBCASE("attention's softmax share scales with the GPU's tensor over CUDA-core FLOP/s") {
    const HardwareCatalog& c = HardwareCatalog::builtin();
    // bf16 tensor peak over FP32 peak, against H100's 989 / 67.
    const auto ratio = [&](const char* gpu) {
      return c.gpu(gpu).peak(DType::bf16).value() / c.gpu(gpu).peak(DType::fp32).value() / (989.0 / 67.0);
    };
    CHECK(ratio("H100") == orrery::testing::Approx(1).epsilon(1e-12));
    CHECK(ratio("A100") == orrery::testing::Approx(312 / 19.5 * 67 / 989.0).epsilon(1e-12));  // 1.08
    CHECK(ratio("B200") == orrery::testing::Approx(2250 / 80.0 * 67 / 989.0).epsilon(1e-12)); // 1.91
    const double L = 1024;
    const double kv = p.attention_fwd_efficiency * L / (L + p.attention_half_kv);
    const auto efficiency = [&](const GpuSpec& gpu, std::int64_t d, DType t) {
      return RooflineCostModel(gpu, p).terms(Kernel::attention(Pass::forward, {1024}, 32, 8, d, false, t)).efficiency;
    };
    for (const std::int64_t hd : {64, 128}) {
      const auto d = static_cast<double>(hd);
      for (const char* gpu : {"H100", "A100", "B200", "GB200"}) {
        CHECK(efficiency(c.gpu(gpu), hd, DType::bf16) == orrery::testing::Approx(kv * d / (d + p.attention_half_head_dim * ratio(gpu))).epsilon(1e-12));
      }
      // Blackwell Ultra's special function units doubled (GpuSpec::sfu_scale): its share halves.
      // GB300 has GB200's tensor and FP32 peaks, so only the softmax differs.
      for (const char* gpu : {"B300", "GB300"}) {
        CHECK(c.gpu(gpu).sfu_scale == 2);
        CHECK(efficiency(c.gpu(gpu), hd, DType::bf16) == orrery::testing::Approx(kv * d / (d + p.attention_half_head_dim * ratio(gpu) / 2)).epsilon(1e-12));
      }
      CHECK(efficiency(c.gpu("GB300"), hd, DType::bf16) > efficiency(c.gpu("GB200"), hd, DType::bf16));
      // A GPU without an FP32 peak takes H100's ratio.
      GpuSpec bare = c.gpu("B200");
      bare.peak_flops[static_cast<std::size_t>(DType::fp32)] = 0;
      CHECK(efficiency(bare, hd, DType::bf16) == orrery::testing::Approx(kv * d / (d + p.attention_half_head_dim)).epsilon(1e-12));
    }
    // FP8 attention: products at the FP8 peak, softmax as bf16's: bf16's time over FP8's is
    // (1 + h / d) / bf16 peak over (1 / fp8 peak + h / (d bf16 peak)), about 2 (d + h) / (d + 2 h):
    // 1.53x on H100 at d = 128 (FlashAttention-3 measured 1.62x).
    const auto time = [&](const char* gpu, std::int64_t d, DType t) {
      return RooflineCostModel(c.gpu(gpu), p).terms(Kernel::attention(Pass::forward, {8192}, 32, 8, d, true, t)).compute_s;
    };
    const auto gain = [&](const char* gpu, double d) {
      const double bf = c.gpu(gpu).peak(DType::bf16).value(), f8 = c.gpu(gpu).peak(DType::fp8).value();
      const double h = p.attention_half_head_dim * ratio(gpu);
      return ((1 + h / d) / bf) / (1 / f8 + h / (d * bf));
    };
    CHECK(time("H100", 128, DType::bf16) / time("H100", 128, DType::fp8) == orrery::testing::Approx(gain("H100", 128)).epsilon(1e-12));
    CHECK(gain("H100", 128) == orrery::testing::Approx(1.535).epsilon(1e-3));
    // On B200 the softmax weighs about twice as much: FP8 gains less, least at d = 64.
    CHECK(time("B200", 64, DType::bf16) / time("B200", 64, DType::fp8) == orrery::testing::Approx(gain("B200", 64)).epsilon(1e-12));
    CHECK(gain("B200", 64) < gain("B200", 128));
    CHECK(gain("B200", 128) < gain("H100", 128));
    // GEMMs do not use the special function units: GB300's are GB200's.
    const Kernel g = Kernel::gemm(8192, 8192, 8192, DType::bf16);
    CHECK(RooflineCostModel(c.gpu("GB300"), p).terms(g).compute_s == RooflineCostModel(c.gpu("GB200"), p).terms(g).compute_s);
    for (const char* gpu : {"H100", "A100", "B200", "GB200", "MI300X"}) CHECK(c.gpu(gpu).sfu_scale == 1);
  }
  SUBCASE("a dtype the GPU lacks is a clear error") {
    const RooflineCostModel a100(HardwareCatalog::builtin().gpu("A100-40GB"));
    CHECK_THROWS_WITH_AS(a100.time(Kernel::gemm(64, 64, 64, DType::fp8)),
                         doctest::Contains("A100-40GB has no fp8 tensor math; it supports fp32, tf32, bf16, fp16"), sim::InputError);
  }
}

namespace {
// A 2-D GEMM-like curve: t = 1e-9 * m * n * k over m, n in {64, 256, 1024}, k = 512.
CostCurves grid_curves() {
  CostCurve c;
  c.kind = KernelKind::gemm;
  c.dtype = DType::bf16;
  c.axes = {{64, 256, 1024}, {64, 256, 1024}, {512}};
  for (const double mm : c.axes[0]) {
    for (const double nn : c.axes[1]) c.log_seconds.push_back(std::log(1e-12 * mm * nn * 512));
  }
  CostCurves curves;
  curves.device = "test";
  curves.curves.push_back(c);
  return curves;
}
}  // namespace

TEST_CASE("calibrated curves: exact at measured points, monotone between, roofline outside") {
  const CalibratedCostModel m(grid_curves(), h100());
  SUBCASE("exact at the grid points") {
    for (const std::int64_t mm : {64, 256, 1024}) {
      for (const std::int64_t nn : {64, 256, 1024}) {
        const double expected = 1e-12 * static_cast<double>(mm * nn) * 512;
        CHECK(std::abs(m.time(Kernel::gemm(mm, nn, 512, DType::bf16)).to_seconds() - expected) <= 1e-9);  // to the ns
      }
    }
    CHECK(m.calibrated(KernelKind::gemm) == 9);
    CHECK(m.fallbacks(KernelKind::gemm) == 0);
  }
  SUBCASE("log-log interpolation reproduces a power law between points, and is monotone") {
    CHECK(std::abs(m.time(Kernel::gemm(128, 512, 512, DType::bf16)).to_seconds() - 1e-12 * 128 * 512 * 512) <= 1e-9);
    sim::Duration last = sim::Duration::zero();
    for (std::int64_t mm = 64; mm <= 1024; mm += 37) {
      const sim::Duration t = m.time(Kernel::gemm(mm, 300, 512, DType::bf16));
      CHECK(t >= last);
      last = t;
    }
    // Batched GEMMs cost batch x one product.
    CHECK(std::abs(m.time(Kernel::gemm(256, 256, 512, DType::bf16, 3)).to_seconds() - 3e-12 * 256 * 256 * 512) <= 1e-9);
  }
  SUBCASE("outside the measured range, or another kind or dtype, falls back to roofline and is counted") {
    const RooflineCostModel roofline(h100());
    const Kernel big = Kernel::gemm(2048, 256, 512, DType::bf16);
    const Kernel other_k = Kernel::gemm(256, 256, 1024, DType::bf16);
    const Kernel fp8 = Kernel::gemm(256, 256, 512, DType::fp8);
    const Kernel norm = Kernel::memory_bound(KernelKind::norm, sim::Bytes(1e6), DType::bf16);
    CHECK(m.time(big) == roofline.time(big));
    CHECK(m.time(other_k) == roofline.time(other_k));
    CHECK(m.time(fp8) == roofline.time(fp8));
    CHECK(m.time(norm) == roofline.time(norm));
    CHECK(m.fallbacks(KernelKind::gemm) == 3);
    CHECK(m.fallbacks(KernelKind::norm) == 1);
    bool found = false;
    for (const auto& [name, value] : m.counters()) {
      if (name == "fallback.gemm") found = value == 3;
    }
    CHECK(found);
  }
}
