// MegaScale-Omni and Maestro (policies/compound.hpp) and the compound programs under them
// (models/multimodal/compound.hpp): closed forms, dependencies, determinism, rankings, bad input.
#include "models/hardware/hardware.hpp"
#include "models/multimodal/compound.hpp"
#include "models/multimodal/multimodal_pipeline.hpp"
#include "policies/multimodal.hpp"
#include "sim/error.hpp"
#include "traces/multimodal_json.hpp"
#include "approx.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

using namespace orrery;

namespace {

struct Fixture {
  const models::GpuSpec& gpu = models::HardwareCatalog::builtin().gpu("h100");
  models::RooflineCostModel cost{gpu, models::RooflineParams{}};
  models::MultimodalSetup setup;
  Fixture(const models::MultimodalModel& m, int tp, int pp, int dp, int micro_batch) : setup(models::multimodal_setup(m, cost, gpu, tp, pp, dp, micro_batch, 50e9)) {
    setup.nvlink = 360e9;
    setup.source = "test.json";
  }
};

// Mean step time and GPUs held of a policy over `steps` batches of a mix (the first batch of
// another seed profiles).
struct Mean {
  double step_s = 0, gpu_s = 0;
};
Mean run(const std::string& name, const sim::GivenParams& params, Fixture& fx, const models::MultimodalMix& mix, int steps, std::uint64_t seed = 11) {
  auto policy = policies::multimodal_pipelines().create(name, params, {"test", ""});
  const models::ModuleCostCache costs(*fx.setup.model, fx.cost, fx.setup.tp, fx.setup.nvlink);
  policy->prepare(fx.setup, models::MultimodalBatchGenerator(mix, 99).next(), costs);
  models::MultimodalBatchGenerator gen(mix, seed);
  Mean out;
  for (int k = 0; k < steps; ++k) {
    const models::MultimodalStep s = models::multimodal_step(*policy, fx.setup, gen.next(), costs);
    out.step_s += s.step_s / steps;
    out.gpu_s += s.step_s * (s.gpus > 0 ? s.gpus : fx.setup.tp * fx.setup.pp * fx.setup.dp) / steps;
  }
  return out;
}

models::MultimodalModel distill_model() { return models::distillation_model("distill", "llama3-70b", "llama3-8b"); }

models::MultimodalMix text_mix() {
  models::MultimodalMix mix;
  mix.samples = 64;
  mix.text_only = 1;
  mix.images_mean = 0;
  mix.video_fraction = 0;
  mix.text_median = 2048;
  mix.text_p99 = 8192;
  return mix;
}

// Scenario files go to the system's temporary directory, never the working directory.
std::string write(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / "orrery_compound_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("reshard: the busiest sender or receiver over the link") {
  // Two encoder GPUs send 4 GB and 2 GB; four LLM GPUs receive 1.5 GB each; a 50 GB/s NIC per
  // GPU: the 4 GB sender is the bottleneck, 4e9 / 50e9 = 0.08 s; 6 GB move in all.
  const models::Reshard r = models::reshard({4e9, 2e9}, {1.5e9, 1.5e9, 1.5e9, 1.5e9}, 50e9);
  CHECK(r.bytes == doctest::Approx(6e9));
  CHECK(r.seconds == doctest::Approx(0.08));
  // One receiver holding everything: 6e9 / 50e9.
  CHECK(models::reshard({3e9, 3e9}, {6e9}, 50e9).seconds == doctest::Approx(0.12));
}

TEST_CASE("embedding bytes: projected tokens x the LLM's width x 2") {
  // Qwen2-VL: a 448x448 image is 32 x 32 patches of 14 pixels, merged 2x2 to 256 tokens of the
  // LLM's 3584 (Qwen2-7B), bf16: 256 x 3584 x 2 bytes. A text-only sample moves nothing.
  const auto& m = models::MultimodalCatalog::builtin().model("qwen2-vl-7b");
  models::MultimodalSample s;
  s.text_tokens = 100;
  CHECK(models::embedding_bytes(m, s) == 0);
  s.images.push_back({448, 448});
  CHECK(models::embedding_bytes(m, s) == doctest::Approx(256.0 * 3584 * 2));
}

TEST_CASE("wavefront: independent sections overlap, dependent ones chain") {
  // Two sections of one replica each, one micro-batch of 1 s forward and 1 s backward over the
  // same sample. Without an edge they run side by side: 2 s (max), not 4 s (sum).
  models::WavePlan p;
  p.replicas = {1, 1};
  p.trainable = {true, true};
  p.micro_batches = {{0, 0, {0}, 1.0, 1.0, 0, 0, "a"}, {1, 0, {0}, 1.0, 1.0, 0, 0, "b"}};
  models::PipeProgram prog = models::wavefront_program(p);
  CHECK(models::schedule_program(prog, 0, {}).makespan == doctest::Approx(2.0));
  // With a -> b: F a, F b, B b, B a in turn: 4 s; plus 1 GB each way on a 10 GB/s link: 4.2 s.
  p.edges = {{0, 1}};
  prog = models::wavefront_program(p);
  CHECK(models::schedule_program(prog, 0, {}).makespan == doctest::Approx(4.0));
  p.micro_batches[0].out_bytes = 1e9;
  prog = models::wavefront_program(p);
  CHECK(models::schedule_program(prog, 10e9, {}).makespan == doctest::Approx(4.2));
  // Samples that do not meet do not wait: b's micro-batch holds another sample.
  p.micro_batches[1].samples = {1};
  prog = models::wavefront_program(p);
  CHECK(models::schedule_program(prog, 10e9, {}).makespan == doctest::Approx(2.0));
  // The same two sections colocated on one stage (b on a's GPUs) queue: 4 s, the sum.
  p.colocated = {{}, {0}};
  CHECK(p.stages() == 1);
  prog = models::wavefront_program(p);
  CHECK(models::schedule_program(prog, 10e9, {}).makespan == doctest::Approx(4.0));
}

TEST_CASE("wavefront: every dependency ends before its dependant starts, on random plans") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 30; ++trial) {
    models::WavePlan p;
    const int sections = 2 + static_cast<int>(rng() % 3);
    for (int s = 0; s < sections; ++s) {
      p.replicas.push_back(1 + static_cast<int>(rng() % 3));
      p.trainable.push_back(rng() % 4 != 0);
      if (s > 0) p.edges.emplace_back(static_cast<int>(rng() % static_cast<unsigned>(s)), s);
    }
    for (int s = 0; s < sections; ++s) {
      for (int k = 0; k < 6; ++k) {
        std::vector<int> samples;
        for (int j = 0; j < 12; ++j) {
          if (rng() % 3 == 0) samples.push_back(j);
        }
        p.micro_batches.push_back({s, static_cast<int>(rng() % static_cast<unsigned>(p.replicas[static_cast<std::size_t>(s)])), samples,
                                   0.1 + static_cast<double>(rng() % 10) * 0.1, static_cast<double>(rng() % 10) * 0.1, 1e8, 1e9, "x"});
      }
    }
    models::PipeProgram prog = models::wavefront_program(p);
    const models::PipeRun run = models::schedule_program(prog, 20e9, std::vector<double>(static_cast<std::size_t>(prog.stages), 2.5e9));
    for (std::size_t i = 0; i < prog.ops.size(); ++i) {
      for (const int d : prog.ops[i].deps) CHECK(run.spans[i].start >= run.spans[static_cast<std::size_t>(d)].end - 1e-12);
    }
  }
}

TEST_CASE("maestro: a sample without images never runs the vision section") {
  const auto& m = models::MultimodalCatalog::builtin().model("qwen2-vl-7b");
  Fixture fx(m, 2, 1, 4, 2);
  auto maestro = policies::multimodal_pipelines().create("maestro", {}, {"test", ""});
  models::MultimodalSample text, image;
  text.text_tokens = 1024;
  image.text_tokens = 512;
  image.images.push_back({672, 672});
  const models::ModuleCostCache costs(m, fx.cost, 2, fx.setup.nvlink);
  std::vector<models::MultimodalSample> batch(8, text);
  maestro->prepare(fx.setup, batch, costs);
  const auto vision_ops = [](const models::MultimodalStep& s) {
    return std::count_if(s.program.ops.begin(), s.program.ops.end(), [](const models::PipeNode& n) { return n.label.rfind("F vision", 0) == 0; });
  };
  // Text only: the vision section never fires.
  CHECK(vision_ops(models::multimodal_step(*maestro, fx.setup, batch, costs)) == 0);
  // One image among them: one vision micro-batch, holding only that sample.
  batch[5] = image;
  const models::MultimodalStep s = models::multimodal_step(*maestro, fx.setup, batch, costs);
  CHECK(vision_ops(s) == 1);
  // The vision forward ends before the LLM forward of the micro-batch that holds the image.
  CHECK(s.step_s > 0);
}

TEST_CASE("maestro: wavefront micro-batches never mix samples that need different sections") {
  // Sections as the scenario gives them (micro-batches of 2 in both). An image sample and a
  // text-only one: with wavefront the LLM runs them in two micro-batches (the text-only one need
  // not wait for the vision section); in batch order, one mixed micro-batch.
  const auto& m = models::MultimodalCatalog::builtin().model("qwen2-vl-7b");
  Fixture fx(m, 2, 1, 4, 2);
  fx.setup.sections = {{"vision", {m.find("vision"), m.find("merger")}, 1, 1, 2}, {"llm", {m.find("llm")}, 2, 1, 2}};
  const models::ModuleCostCache costs(m, fx.cost, 2, fx.setup.nvlink);
  models::MultimodalSample text, image;
  text.text_tokens = 1024;
  image.text_tokens = 512;
  image.images.push_back({672, 672});
  const std::vector<models::MultimodalSample> batch = {image, text};
  const auto llm_forwards = [&](bool wavefront) {
    auto p = policies::multimodal_pipelines().create("maestro", {{"wavefront", wavefront}}, {"test", ""});
    p->prepare(fx.setup, batch, costs);
    const models::MultimodalStep s = models::multimodal_step(*p, fx.setup, batch, costs);
    CHECK(s.gpus == 3);  // 1 x 1 + 2 x 1, as given
    return std::count_if(s.program.ops.begin(), s.program.ops.end(), [](const models::PipeNode& n) { return n.label.rfind("F llm", 0) == 0; });
  };
  CHECK(llm_forwards(true) == 2);
  CHECK(llm_forwards(false) == 1);
}

TEST_CASE("megascale-omni and maestro: same seed, same result") {
  const auto& m = models::MultimodalCatalog::builtin().model("qwen2-vl-7b");
  models::MultimodalMix mix;
  mix.samples = 32;
  for (const char* name : {"megascale-omni", "maestro"}) {
    Fixture fx(m, 2, 2, 2, 2);
    const Mean a = run(name, {}, fx, mix, 2), b = run(name, {}, fx, mix, 2);
    CHECK(a.step_s == b.step_s);
    CHECK(a.gpu_s == b.gpu_s);
    CHECK(a.step_s > 0);
  }
}

TEST_CASE("megascale-omni above the coupled baselines on a dynamic mix") {
  // Qwen2-VL-7B on 16 GPUs (tp 2, pp 2, dp 4), 64 samples: images and videos of varying count.
  // The coupled pipelines carry the encoders on the LLM's stages and deal samples round-robin;
  // Omni's separate rank sets and balanced loaders finish the same batches sooner.
  const auto& m = models::MultimodalCatalog::builtin().model("qwen2-vl-7b");
  models::MultimodalMix mix;
  mix.samples = 64;
  mix.images_mean = 2.5;
  mix.video_fraction = 0.2;
  mix.frames_p99 = 64;
  mix.frames_max = 96;
  Fixture fx(m, 2, 2, 4, 2);
  const double omni = run("megascale-omni", {}, fx, mix, 3).step_s;
  CHECK(omni < run("megatron-1f1b", {}, fx, mix, 3).step_s);
  CHECK(omni < run("pipeweaver", {}, fx, mix, 3).step_s);
  // Colocated (the encoders on the LLM's GPUs, with their own parallelism): faster still than
  // the coupled pipelines, with no GPUs set aside.
  CHECK(run("megascale-omni", {{"colocate", true}}, fx, mix, 3).step_s < run("pipeweaver", {}, fx, mix, 3).step_s);
  // The loader's grouped reordering is part of it.
  CHECK(omni < run("megascale-omni", {{"reorder", false}}, fx, mix, 3).step_s);
}

TEST_CASE("maestro: fewer GPU-seconds than one configuration for all sections") {
  // Distillation: a frozen 70B teacher (forward only) and a trained 8B student on 32 GPUs.
  const models::MultimodalModel m = distill_model();
  Fixture fx(m, 8, 2, 2, 2);
  const double maestro = run("maestro", {}, fx, text_mix(), 2).gpu_s;
  CHECK(maestro < run("maestro", {{"uniform", true}}, fx, text_mix(), 2).gpu_s);
  CHECK(maestro < run("megatron-1f1b", {}, fx, text_mix(), 2).gpu_s);
}

TEST_CASE("compound input errors name the file, the pointer, what was found and expected") {
  const auto& m = models::MultimodalCatalog::builtin().model("qwen2-vl-7b");
  // Sections grouping vision with the LLM and the merger apart: vision -> merger -> llm leaves
  // the first section and comes back, a cycle.
  std::vector<models::SectionSpec> cyc = {{"a", {m.find("vision"), m.find("llm")}, 0, 0, 0}, {"b", {m.find("merger")}, 0, 0, 0}};
  try {
    (void)models::section_edges(m, cyc, 64, "s.json", "/multimodal/sections");
    FAIL("no error");
  } catch (const sim::InputError& e) {
    CHECK(std::string(e.what()).find("s.json:/multimodal/sections: the section graph has a cycle: a -> b -> a") != std::string::npos);
  }
  // More GPUs than the scenario has.
  std::vector<models::SectionSpec> big = {{"vision", {m.find("vision"), m.find("merger")}, 1, 40, 0}, {"llm", {m.find("llm")}, 2, 16, 0}};
  CHECK_THROWS_WITH_AS((void)models::section_edges(m, big, 64, "s.json", "/multimodal/sections"),
                       doctest::Contains("s.json:/multimodal/sections: the sections take 72 GPUs"), sim::InputError);
  const auto scenario = [](const std::string& sections) {
    return R"({"multimodal": {"model": "qwen2-vl-7b", "gpu": "H100", "tp": 2, "pp": 1, "dp": 4, "sections": )" + sections +
           R"(}, "workload": {"mix": {"samples": 16}}})";
  };
  // An unknown module.
  CHECK_THROWS_WITH_AS(traces::load_multimodal_scenario(write("sec-unknown.json", scenario(R"([{"name": "v", "modules": ["visoin", "merger"]}, {"name": "l", "modules": ["llm"]}])"))),
                       doctest::Contains("sec-unknown.json:/multimodal/sections/0/modules/0: found section module \"visoin\""), sim::InputError);
  // A non-positive size.
  CHECK_THROWS_WITH_AS(traces::load_multimodal_scenario(write("sec-zero.json", scenario(R"([{"name": "v", "modules": ["vision", "merger"], "tp": 0}, {"name": "l", "modules": ["llm"]}])"))),
                       doctest::Contains("sec-zero.json:/multimodal/sections/0/tp"), sim::InputError);
  // A module in no section.
  CHECK_THROWS_WITH_AS(traces::load_multimodal_scenario(write("sec-missing.json", scenario(R"([{"name": "v", "modules": ["vision", "merger"]}])"))),
                       doctest::Contains("sec-missing.json:/multimodal/sections: module \"llm\" is in no section"), sim::InputError);
  // A well-formed graph loads.
  CHECK(traces::load_multimodal_scenario(write("sec-ok.json", scenario(R"([{"name": "v", "modules": ["vision", "merger"], "dp": 2}, {"name": "l", "modules": ["llm"]}])")))
            .sections.size() == 2);
  // MegaScale-Omni: an encoder rank set larger than the GPUs beyond one LLM replica.
  Fixture fx(m, 2, 2, 4, 2);
  auto omni = policies::multimodal_pipelines().create("megascale-omni", {{"encoder_gpus", std::int64_t{100}}}, {"test", ""});
  const models::ModuleCostCache costs(m, fx.cost, 2, fx.setup.nvlink);
  models::MultimodalMix mix;
  mix.samples = 16;
  CHECK_THROWS_WITH_AS(omni->prepare(fx.setup, models::MultimodalBatchGenerator(mix, 1).next(), costs),
                       doctest::Contains("test.json:/multimodal: megascale-omni: found an encoder rank set of encoder_gpus=100 GPUs; expected 1 to 12"),
                       sim::InputError);
  // Non-positive policy sizes.
  CHECK_THROWS_WITH_AS(policies::multimodal_pipelines().create("megascale-omni", {{"sp", std::int64_t{0}}}, {"test", ""}),
                       doctest::Contains("megascale-omni/sp: found 0, expected 1 to 1024"), sim::InputError);
  CHECK_THROWS_WITH_AS(policies::multimodal_pipelines().create("megascale-omni", {{"long_tokens", std::int64_t{-5}}}, {"test", ""}),
                       doctest::Contains("megascale-omni/long_tokens: found -5"), sim::InputError);
}
