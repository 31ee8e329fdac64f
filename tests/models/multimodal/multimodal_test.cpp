#include "models/hardware/hardware.hpp"
#include "models/hardware/step_params.hpp"
#include "models/multimodal/multimodal.hpp"
#include "sim/error.hpp"
#include "approx.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace orrery;
using models::ModuleKind;
using models::MultimodalSample;

namespace {
MultimodalSample sample(std::int64_t text, std::vector<models::ImageSize> images = {}, std::vector<models::VideoClip> videos = {},
                        std::vector<double> audio = {}) {
  MultimodalSample s;
  s.text_tokens = text;
  s.images = std::move(images);
  s.videos = std::move(videos);
  s.audio_seconds = std::move(audio);
  return s;
}
}  // namespace

TEST_CASE("multimodal catalog: module graphs in topological order, parameter counts near the published ones") {
  const auto& cat = models::MultimodalCatalog::builtin();
  const models::MultimodalModel& vl = cat.model("qwen2-vl-7b");
  REQUIRE(vl.modules.size() == 3);
  CHECK(vl.modules[0].kind == ModuleKind::vision_encoder);
  CHECK(vl.modules[2].kind == ModuleKind::llm);
  CHECK(vl.modules[1].shape.ffn_hidden == 4 * 1280);  // the merger's input: 2x2 patches of the ViT
  // Published totals (Hugging Face model cards): Qwen2-VL-7B 8.29e9, Qwen2-VL-72B 73.4e9
  // parameters. Layer norms and biases are not counted here.
  CHECK(static_cast<double>(vl.params()) == orrery::testing::Approx(8.29e9).epsilon(0.02));
  CHECK(static_cast<double>(cat.model("qwen2-vl-72b").params()) == orrery::testing::Approx(73.4e9).epsilon(0.02));
  CHECK_THROWS_WITH_AS(cat.model("qwen2-vl-8b", "s.json", "/model"), doctest::Contains("known: qwen2-vl-7b"), sim::InputError);
}

TEST_CASE("multimodal work: tokens per module follow each kind's rule") {
  const auto& cat = models::MultimodalCatalog::builtin();
  const models::MultimodalModel& vl = cat.model("qwen2-vl-7b");
  // 448 x 448 is 32 x 32 patches of 14; the merger folds 2 x 2 of them: 256 LLM tokens.
  const std::vector<MultimodalSample> one = {sample(100, {{448, 448}})};
  CHECK(models::module_work(vl, 0, one).docs == std::vector<std::int64_t>{1024});
  CHECK(models::module_work(vl, 1, one).out_tokens == 256);
  CHECK(models::module_work(vl, 2, one).docs == std::vector<std::int64_t>{356});
  // A 16-frame video: 8 temporal patches of 1024 -> one 8192-token document; a text-only sample
  // has no vision work.
  const std::vector<MultimodalSample> two = {sample(50, {}, {{16, 448, 448}}), sample(300)};
  CHECK(models::module_work(vl, 0, two).docs == std::vector<std::int64_t>{8192});
  CHECK(models::module_work(vl, 2, two).docs == std::vector<std::int64_t>{50 + 2048, 300});
  // Qwen2-Audio: 30 s -> 1500 encoder tokens -> 750 LLM tokens (its paper: 25 per second).
  const models::MultimodalModel& au = cat.model("qwen2-audio-7b");
  const std::vector<MultimodalSample> clip = {sample(20, {}, {}, {30.0})};
  CHECK(models::module_work(au, 0, clip).docs == std::vector<std::int64_t>{1500});
  CHECK(models::module_work(au, 2, clip).docs == std::vector<std::int64_t>{770});
  // HunyuanVideo: 129 frames of 720 x 1280 -> 33 latent frames of 45 x 80 tokens (its paper's
  // 119K-token sequences), plus the prompt.
  const models::MultimodalModel& t2v = cat.model("hunyuan-video-13b");
  const std::vector<MultimodalSample> vid = {sample(256, {}, {{129, 720, 1280}})};
  CHECK(models::module_work(t2v, 1, vid).docs == std::vector<std::int64_t>{33 * 45 * 80 + 256});
  CHECK(models::module_work(t2v, 0, vid).docs == std::vector<std::int64_t>{256});
}

TEST_CASE("multimodal layer costs: attention per document, TP, frozen modules") {
  const auto& vl = models::MultimodalCatalog::builtin().model("qwen2-vl-7b");
  const models::GpuSpec& h100 = models::HardwareCatalog::builtin().gpu("h100");
  const models::RooflineCostModel cost(h100, models::training_roofline_params(h100));
  const auto& vit = vl.modules[0];
  const models::ModuleWork eight_images = models::module_work(vl, 0, {sample(0, std::vector<models::ImageSize>(8, {448, 448}))});
  const models::ModuleWork one_video = models::module_work(vl, 0, {sample(0, {}, {{16, 448, 448}})});
  REQUIRE(eight_images.tokens == one_video.tokens);
  const auto a = models::module_layer_seconds(vit, eight_images, cost, 1, 0);
  const auto b = models::module_layer_seconds(vit, one_video, cost, 1, 0);
  CHECK(a.f > 0);
  CHECK(b.f > a.f);  // same tokens, one long document: 8x the attention pairs
  const auto tp2 = models::module_layer_seconds(vit, eight_images, cost, 2, 0);
  CHECK(tp2.f < 0.65 * a.f);
  CHECK(models::module_layer_seconds(vit, eight_images, cost, 2, 300e9).f > tp2.f);  // plus the TP all-reduces
  const auto& t2v = models::MultimodalCatalog::builtin().model("hunyuan-video-13b");
  const auto frozen = models::module_layer_seconds(t2v.modules[0], models::module_work(t2v, 0, {sample(256, {}, {{9, 256, 256}})}), cost, 1, 0);
  CHECK(frozen.f > 0);
  CHECK(frozen.b == 0);
  CHECK(frozen.w == 0);
}

TEST_CASE("multimodal validation: cycles, dangling modules, missing encoders") {
  models::MultimodalModel m = models::MultimodalCatalog::builtin().model("qwen2-vl-7b");
  models::MultimodalModel cyc = m;
  cyc.edges.push_back({2, 0});
  CHECK_THROWS_WITH_AS(models::validate_multimodal(cyc, "m.json", "/model"), doctest::Contains("has a cycle: vision -> merger -> llm -> vision"),
                       sim::InputError);
  models::MultimodalModel dangling = m;
  dangling.edges = {{0, 1}, {1, 7}};
  CHECK_THROWS_WITH_AS(models::validate_multimodal(dangling, "m.json", "/model"), doctest::Contains("names a module the model lacks"), sim::InputError);
  models::MultimodalModel loose = m;
  loose.edges = {{0, 1}};
  CHECK_THROWS_WITH_AS(models::validate_multimodal(loose, "m.json", "/model"), doctest::Contains("feeds nothing"), sim::InputError);
  CHECK_THROWS_WITH_AS(models::check_modalities(m, {sample(10), sample(5, {}, {}, {3.0})}, "b.jsonl", "line 4/samples"),
                       doctest::Contains("b.jsonl:line 4/samples/1: the sample brings audio"), sim::InputError);
}

TEST_CASE("multimodal batch generator: seeded, the documented mix") {
  models::MultimodalMix mix;  // defaults: 30% text-only, 10% video, 1.5 images per image sample
  models::MultimodalBatchGenerator a(mix, 7), b(mix, 7), c(mix, 8);
  std::size_t samples = 0, text_only = 0, video = 0, image_samples = 0, images = 0;
  std::vector<std::int64_t> frames;
  bool differs = false;
  for (int k = 0; k < 300; ++k) {
    const auto x = a.next(), y = b.next(), z = c.next();
    REQUIRE(x.size() == 32);
    for (std::size_t i = 0; i < x.size(); ++i) {
      CHECK(x[i].text_tokens == y[i].text_tokens);
      CHECK(x[i].images.size() == y[i].images.size());
      differs = differs || x[i].text_tokens != z[i].text_tokens;
      ++samples;
      if (x[i].images.empty() && x[i].videos.empty()) ++text_only;
      if (!x[i].videos.empty()) {
        ++video;
        frames.push_back(x[i].videos[0].frames);
      }
      if (!x[i].images.empty()) {
        ++image_samples;
        images += x[i].images.size();
      }
    }
  }
  CHECK(differs);
  const double n = static_cast<double>(samples);
  CHECK(static_cast<double>(text_only) / n == orrery::testing::Approx(0.3).epsilon(0.1));
  CHECK(static_cast<double>(video) / (n - static_cast<double>(text_only)) == orrery::testing::Approx(0.1).epsilon(0.15));
  CHECK(static_cast<double>(images) / static_cast<double>(image_samples) == orrery::testing::Approx(1.5).epsilon(0.05));
  std::sort(frames.begin(), frames.end());
  CHECK(static_cast<double>(frames[frames.size() / 2]) == orrery::testing::Approx(16).epsilon(0.2));
  mix.text_only = 1.5;
  CHECK_THROWS_WITH_AS(mix.validate("s.json", "/workload/mix"), doctest::Contains("s.json:/workload/mix/text_only: expected a probability"), sim::InputError);
}
