// DSV's block-sparse attention and sparsity-aware context parallelism for a video DiT
// (models/multimodal/multimodal.hpp): closed forms of the cost, the CP choice, bad input.
#include "models/hardware/cost.hpp"
#include "models/hardware/hardware.hpp"
#include "models/multimodal/multimodal.hpp"
#include "models/multimodal/multimodal_pipeline.hpp"
#include "policies/multimodal.hpp"
#include "traces/multimodal_json.hpp"
#include "approx.hpp"
#include "input_error.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <numeric>

using namespace orrery;
using models::CpMode;
using models::DitAttention;
using models::Kernel;
using models::Pass;
using orrery::testing::Approx;
using orrery::testing::error_of;

namespace {

const models::RooflineCostModel& roofline_h100() {
  static const models::RooflineCostModel m(models::HardwareCatalog::builtin().gpu("H100"));
  return m;
}

const models::ModuleSpec& dit() {
  const models::MultimodalModel& m = models::MultimodalCatalog::builtin().model("hunyuan-video-13b");
  return m.modules[static_cast<std::size_t>(m.find("dit"))];
}

DitAttention uniform(double sparsity, int rank = 16, int cp = 1) {
  DitAttention a;
  a.head_sparsity.assign(24, sparsity);
  a.estimator_rank = rank;
  a.cp = cp;
  return a;
}

double seconds(const Kernel& k) { return roofline_h100().time(k).to_seconds(); }

// A 720p clip of 129 frames: 33 latent frames of 45 x 80 patches, and a 256-token prompt.
const std::vector<std::int64_t> kClip = {33 * 45 * 80 + 256};

}  // namespace

TEST_CASE("block-sparse attention kernel: kept x the dense FLOPs, at the efficiency of its kept key length") {
  const auto dense = Kernel::attention(Pass::forward, {12800}, 24, 24, 128, false, models::DType::bf16);
  Kernel sparse = dense;
  sparse.kept = 0.1;
  // Useful FLOPs: kept x l^2 pairs.
  CHECK(models::flops(sparse).value() == Approx(0.1 * models::flops(dense).value()).epsilon(1e-12));
  // 100 query tiles each visit 10 of the 100 key tiles: a tenth of the executed FLOPs, and the
  // efficiency of a 1280-key visit (L / (L + half_kv)) instead of 12800's.
  const auto td = roofline_h100().terms(dense), ts = roofline_h100().terms(sparse);
  CHECK(ts.executed_flops == Approx(0.1 * td.executed_flops).epsilon(1e-12));
  const models::RooflineParams p;
  CHECK(ts.efficiency / td.efficiency == Approx((1280 / (1280 + p.attention_half_kv)) / (12800 / (12800 + p.attention_half_kv))));
  // The bytes (Q, K, V and O once each) do not shrink.
  CHECK(models::min_bytes(sparse).value() == models::min_bytes(dense).value());
  // At least one key tile per query tile.
  sparse.kept = 1e-6;
  CHECK(roofline_h100().terms(sparse).executed_flops == Approx(td.executed_flops / 100));
}

TEST_CASE("DSV attention: dense at sparsity 0, (1 - s) of dense plus the estimator at sparsity s") {
  const models::ModuleSpec& d = dit();
  const double dense_f = seconds(Kernel::attention(Pass::forward, kClip, 24, 24, 128, false, models::DType::bf16));
  const double dense_b = seconds(Kernel::attention(Pass::backward, kClip, 24, 24, 128, false, models::DType::bf16));
  // Sparsity 0 without an estimator is the dense kernel; with DSV's rank-16 estimator, within 1%.
  const auto none = models::dit_attention_cost(d, kClip, roofline_h100(), 1, uniform(0, 0));
  CHECK(none.f == Approx(dense_f).epsilon(1e-12));
  CHECK(none.b == Approx(dense_b).epsilon(1e-12));
  const auto zero = models::dit_attention_cost(d, kClip, roofline_h100(), 1, uniform(0));
  CHECK((zero.f + zero.b) / (dense_f + dense_b) == Approx(1).epsilon(0.01));
  // The whole layer too.
  models::ModuleWork w;
  w.docs = kClip;
  w.tokens = w.out_tokens = kClip[0];
  const double layer_dense = models::module_layer_seconds(d, w, roofline_h100(), 1, 0).total();
  CHECK(models::module_layer_seconds(d, w, roofline_h100(), 1, 0, uniform(0)).total() / layer_dense == Approx(1).epsilon(0.01));
  // Sparsity s: the kernel's FLOPs are (1 - s) of dense; the estimator adds its projection
  // [T, hidden] x [hidden, 2 r heads] and its block-level scores [T / 128, r] x [r, T] per head.
  for (const double s : {0.5, 0.9, 0.95}) {
    CAPTURE(s);
    const auto c = models::dit_attention_cost(d, kClip, roofline_h100(), 1, uniform(s));
    Kernel k = Kernel::attention(Pass::forward, kClip, 24, 24, 128, false, models::DType::bf16);
    k.kept = 1 - s;
    CHECK(models::flops(k).value() == Approx((1 - s) * models::flops(Kernel::attention(Pass::forward, kClip, 24, 24, 128, false, models::DType::bf16)).value()));
    const std::int64_t T = kClip[0];
    const double estimator = seconds(Kernel::gemm(T, 2 * 16 * 24, 3072, models::DType::bf16)) +
                             seconds(Kernel::gemm((T + 127) / 128, T, 16, models::DType::bf16, 24));
    CHECK(c.estimator_f == Approx(estimator).epsilon(1e-12));
    CHECK(c.f == Approx(seconds(k) + estimator).epsilon(1e-12));
    CHECK(c.kept == Approx(1 - s));
    // Faster than dense, and the more so the sparser.
    CHECK(c.f + c.b < dense_f + dense_b);
  }
  const auto t = [&](double s) {
    const auto c = models::dit_attention_cost(d, kClip, roofline_h100(), 1, uniform(s));
    return c.f + c.b;
  };
  CHECK(t(0.5) > t(0.8));
  CHECK(t(0.8) > t(0.9));
  CHECK(t(0.9) > t(0.95));
}

TEST_CASE("DSV context parallelism: LPT head placement, Ulysses and ring closed forms, the hybrid's choice") {
  SUBCASE("LPT deals the heaviest head first to the least-loaded GPU") {
    // 3, 3 -> GPUs 0 and 1; then 2 -> 0 (3 < 3? ties: the first), 2 -> 1, 2 -> 0: loads 7 and 5.
    const auto g = models::lpt_heads({2, 3, 2, 3, 2}, 2);
    REQUIRE(g.size() == 2);
    CHECK(g[0] == std::vector<int>{1, 0, 4});
    CHECK(g[1] == std::vector<int>{3, 2});
  }
  const models::ModuleSpec& d = dit();
  const double bw = 450e9;
  SUBCASE("dense, head-parallel: two exposed all-to-alls a pass of 4 (cp - 1) / cp^2 x T x heads x head_dim x 2 bytes") {
    DitAttention a;
    a.cp = 4;
    a.cp_bandwidth = bw;
    const auto c = models::dit_attention_cost(d, kClip, roofline_h100(), 2, a, CpMode::head);
    const double T = static_cast<double>(kClip[0]);
    // 12 heads per TP rank, 3 per GPU; each GPU receives 3/4 of the tokens of its 3 heads.
    CHECK(c.comm_f == Approx(4 * 3.0 / 16 * T * 12 * 128 * 2 / bw).epsilon(1e-6));
    CHECK(c.comm_b == Approx(c.comm_f));
    CHECK(c.imbalance == Approx(1));
    // Its compute: the dense kernel over 3 heads and every token.
    const double k = seconds(Kernel::attention(Pass::forward, kClip, 3, 3, 128, false, models::DType::bf16));
    CHECK(c.f == Approx(k + c.comm_f).epsilon(1e-12));
  }
  SUBCASE("ring: only the kept key-value blocks travel; a slow link is exposed") {
    const double slow = 1e9;
    DitAttention dense;
    dense.cp = 4;
    dense.cp_bandwidth = slow;
    DitAttention half = uniform(0.5, 0, 4);
    half.cp_bandwidth = slow;
    const auto cd = models::dit_attention_cost(d, kClip, roofline_h100(), 2, dense, CpMode::ring);
    const auto ch = models::dit_attention_cost(d, kClip, roofline_h100(), 2, half, CpMode::ring);
    // Three steps of a K and V chunk (T/4 tokens, 12 heads) less the kernel each hides.
    const double T = static_cast<double>(kClip[0]), chunk = std::ceil(T / 4);
    const double bytes = 2 * chunk * 12 * 128 * 2;
    const auto step = [&](double kept) {
      Kernel k = Kernel::attention(Pass::forward, {static_cast<std::int64_t>(chunk)}, 12, 12, 128, false, models::DType::bf16);
      k.kept = kept;
      return seconds(k);
    };
    CHECK(cd.comm_f == Approx(3 * (bytes / slow - step(1))).epsilon(1e-9));
    CHECK(ch.comm_f == Approx(3 * (0.5 * bytes / slow - step(0.5))).epsilon(1e-9));
    CHECK(ch.comm_f < 0.55 * cd.comm_f);
  }
  SUBCASE("heads of unequal sparsity: head placement is imbalanced, and the hybrid takes the cheaper mode") {
    // A third of the heads keep 40% of their blocks, the rest 2%: 12 heads per TP rank on 8
    // GPUs cannot be balanced (4 GPUs hold a heavy head each, 4 share the light ones).
    DitAttention a;
    a.cp = 8;
    a.cp_bandwidth = bw;
    a.estimator_rank = 16;
    for (int h = 0; h < 24; ++h) a.head_sparsity.push_back(h % 3 == 0 ? 0.6 : 0.98);
    const auto head = models::dit_attention_cost(d, kClip, roofline_h100(), 2, a, CpMode::head);
    const auto ring = models::dit_attention_cost(d, kClip, roofline_h100(), 2, a, CpMode::ring);
    CHECK(head.imbalance == Approx(0.4 / ((4 * 0.4 + 8 * 0.02) / 8)));
    const auto hybrid = models::dit_attention_cost(d, kClip, roofline_h100(), 2, a);
    CHECK(hybrid.f + hybrid.b == std::min(head.f + head.b, ring.f + ring.b));
    CHECK(hybrid.mode == (ring.f + ring.b < head.f + head.b ? CpMode::ring : CpMode::head));
  }
  SUBCASE("head placement needs a head per GPU: with more GPUs than heads per TP rank, the hybrid rings") {
    DitAttention a = uniform(0.9, 16, 16);
    a.cp_bandwidth = bw;
    CHECK(models::dit_attention_cost(d, kClip, roofline_h100(), 2, a, CpMode::head).f == std::numeric_limits<double>::infinity());
    CHECK(models::dit_attention_cost(d, kClip, roofline_h100(), 2, a).mode == CpMode::ring);
  }
  SUBCASE("the other kernels of a DiT layer run on 1/cp of the tokens") {
    models::ModuleWork w;
    w.docs = kClip;
    w.tokens = w.out_tokens = kClip[0];
    DitAttention a;
    a.cp = 4;
    const auto split = models::module_layer_seconds(d, w, roofline_h100(), 1, 0, a);
    const auto one = models::module_layer_seconds(d, w, roofline_h100(), 1, 0);
    CHECK(split.w < 0.3 * one.w);  // weight gradients: GEMMs only
    CHECK(split.w > 0.2 * one.w);
  }
}

TEST_CASE("DSV bad input: sparsities outside [0, 1), the wrong count, a spread that leaves [0, 1)") {
  const models::ModuleSpec& d = dit();
  DitAttention a = uniform(0.9);
  a.head_sparsity[3] = 1;
  CHECK(error_of([&] { a.validate(24, 128, "s.json", "/multimodal/attention"); }) ==
        "s.json:/multimodal/attention/head_sparsity/3: found 1, expected a sparsity in [0, 1) (the fraction of key blocks the head skips)");
  a.head_sparsity[3] = -0.1;
  CHECK(error_of([&] { a.validate(24, 128, "s.json", "/multimodal/attention"); }) ==
        "s.json:/multimodal/attention/head_sparsity/3: found -0.1, expected a sparsity in [0, 1) (the fraction of key blocks the head skips)");
  a.head_sparsity.assign(5, 0.5);
  CHECK(error_of([&] { a.validate(24, 128, "s.json", "/multimodal/attention"); }) ==
        "s.json:/multimodal/attention/head_sparsity: found 5 sparsities, expected one per head of the DiT (24)");
  CHECK(error_of([&] { models::spread_sparsity(24, 0.98, 0.05, "s.json", "/multimodal/attention/sparsity"); })
            .starts_with("s.json:/multimodal/attention/sparsity: found sparsity 0.98 and spread 0.05: head 0 would skip 1.0"));
  // Evenly spread, head 0 the sparsest.
  const auto s = models::spread_sparsity(3, 0.9, 0.05, "s.json", "");
  CHECK(s[0] == Approx(0.95));
  CHECK(s[1] == Approx(0.9));
  CHECK(s[2] == Approx(0.85));
  // The policy's parameters and a scenario's attention, as files name them.
  CHECK(error_of([] { policies::dit_attentions().create("dsv", {{"sparsity", 1.0}}, {"<command line>", "--policies"}); }) ==
        "<policy>:dsv/sparsity: found 1, expected a sparsity in [0, 1) (or -1)");
  const auto dir = std::filesystem::temp_directory_path() / "orrery_dsv_test";
  std::filesystem::create_directories(dir);
  const auto scenario = [&](const std::string& attention) {
    const std::string path = (dir / "dsv.json").string();
    std::ofstream(path) << R"({"multimodal": {"model": "hunyuan-video-13b", "gpu": "H100", "tp": 2, "cp": 4, "attention": )" << attention
                        << R"(}, "workload": {"mix": {"samples": 4, "text_only": 0, "video_fraction": 1}}})";
    return path;
  };
  const std::string path = scenario(R"({"head_sparsity": [0.9, 0.9, 1.5]})");
  CHECK(error_of([&] { traces::load_multimodal_scenario(path); }) ==
        path + ":/multimodal/attention/head_sparsity/2: found 1.5, expected a sparsity in [0, 1) (the fraction of key blocks the head skips)");
  const std::string ok = scenario(R"({"sparsity": 0.9, "spread": 0.05})");
  const traces::MultimodalScenario sc = traces::load_multimodal_scenario(ok);
  CHECK(sc.attention.head_sparsity.size() == 24);
  CHECK(sc.attention.cp == 4);
  CHECK(sc.attention.cp_bandwidth == sc.nvlink);  // tp x cp = 8 GPUs: one node
  // DSV without sparsities to use.
  const auto dsv = policies::dit_attentions().create("dsv", {}, {"<command line>", "--policies"});
  CHECK(error_of([&] { dsv->configure(DitAttention{}, d, "s.json"); }).starts_with("s.json:/multimodal/attention: dsv: found no head sparsities"));
  std::filesystem::remove_all(dir);
}
