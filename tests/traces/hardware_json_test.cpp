#include "traces/curves_json.hpp"
#include "traces/hardware_json.hpp"
#include "sim/error.hpp"
#include "approx.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace orrery;

TEST_CASE("GPU catalog files add GPUs and override built-in ones") {
  models::HardwareCatalog c = models::HardwareCatalog::builtin();
  traces::merge_gpu_catalog(c, R"({"gpus": [
    {"name": "H100-PCIe", "base": "H100", "peak_flops": {"bf16": "756 TFLOP/s", "fp8": null},
     "hbm_bandwidth": "2 TB/s", "sm_count": 114, "source": "NVIDIA H100 PCIe datasheet"},
    {"name": "H200", "hbm": "141 GB", "hbm_bandwidth": "4.0 TB/s"},
    {"name": "TPU-like", "peak_flops": {"bf16": "459 TFLOP/s"}, "hbm": "95 GB", "hbm_bandwidth": "2.76 TB/s", "sm_count": 4, "gemm_tile": 256},
    {"name": "B200-700W", "base": "B200", "peak_flops": {"bf16": "1800 TFLOP/s"}},
    {"name": "B300-1100W", "base": "B300", "sm_count": 160},
    {"name": "B200-SFU", "base": "B200", "sfu_scale": 1.5}]})",
                            "gpus.json");
  const models::GpuSpec& pcie = c.gpu("H100-PCIe");
  CHECK(pcie.peak(models::DType::bf16).value() == 756e12);
  CHECK_FALSE(pcie.supports(models::DType::fp8));
  CHECK(pcie.peak(models::DType::fp32).value() == 67e12);  // inherited from the base
  CHECK(pcie.hbm_bytes == 80e9);
  CHECK(pcie.sm_count == 114);
  CHECK(c.gpu("H100").peak(models::DType::bf16).value() == 989e12);  // the base is untouched
  CHECK(c.gpu("H200").hbm_bandwidth == 4.0e12);                       // overridden in place
  CHECK(c.gpu("H200").peak(models::DType::bf16).value() == 989e12);
  CHECK(c.gpu("TPU-like").sm_count == 4);
  CHECK(c.gpu("TPU-like").gemm_tile == 256);
  CHECK(pcie.gemm_tile == 128);                   // Hopper's, from the base
  CHECK(c.gpu("B200-700W").gemm_tile == 256);     // Blackwell's 2-SM tile, from the base
  CHECK(c.gpu("B300-1100W").sfu_scale == 2);      // Blackwell Ultra's doubled SFUs, from the base
  CHECK(c.gpu("B200-SFU").sfu_scale == 1.5);
  CHECK(c.gpu("TPU-like").sfu_scale == 1);
  CHECK(c.gpus().size() == models::HardwareCatalog::builtin().gpus().size() + 5);
}

TEST_CASE("bad GPU catalog files name the file, the pointer and what was expected") {
  models::HardwareCatalog c = models::HardwareCatalog::builtin();
  const auto fails = [&](const char* json) {
    try {
      traces::merge_gpu_catalog(c, json, "gpus.json");
    } catch (const sim::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(fails(R"({"gpus": [{"name": "X", "peak_flops": {"bf16": "1 PFLOP/s"}, "hbm": "80 GB", "sm_count": 100}]})")
            .find("gpus.json:/gpus/0: missing \"hbm_bandwidth\" for new GPU \"X\"") != std::string::npos);
  CHECK(fails(R"({"gpus": [{"name": "X", "base": "H10"}]})").find("gpus.json:/gpus/0/base: unknown GPU \"H10\"; did you mean \"H100\"?") !=
        std::string::npos);
  CHECK(fails(R"({"gpus": [{"name": "X", "base": "H100", "hbm_bandwidth": "-2 TB/s"}]})").find("gpus.json:/gpus/0/hbm_bandwidth") !=
        std::string::npos);
  CHECK(fails(R"({"gpus": [{"name": "X", "base": "H100", "peak_flops": {"bf8": "1 PFLOP/s"}}]})")
            .find("gpus.json:/gpus/0/peak_flops/bf8: unknown key \"bf8\"") != std::string::npos);
  CHECK(fails(R"({"gpus": [{"name": "X", "base": "H100", "sm_cont": 3}]})").find("did you mean \"sm_count\"?") != std::string::npos);
  CHECK(fails(R"({"gpus": [{"name": "X", "base": "H100", "gemm_tile": 8}]})").find("gpus.json:/gpus/0/gemm_tile") != std::string::npos);
  CHECK(fails(R"({"gpus": [{"name": "X", "base": "H100", "gemm_tile": 2000}]})").find("found a number 2000, expected a GEMM tile of 16 to 1024 rows") != std::string::npos);
  CHECK(fails(R"({"gpus": [{"name": "X", "base": "H100", "sfu_scale": 0}]})").find("gpus.json:/gpus/0/sfu_scale") != std::string::npos);
  CHECK(fails(R"({"gpus": [{"name": "X", "base": "H100", "sfu_scale": 40}]})").find("found a number 40, expected an SFU scale from 0.25 to 16") != std::string::npos);
  CHECK(fails(R"({"gpus": [{"name": "X", "base": "H100", "sfu_scale": "2x"}]})").find("/gpus/0/sfu_scale") != std::string::npos);
  CHECK(fails(R"({"gpus": [{"name": "X", "base": "H100", "peak_flops": {"bf16": null}}]})").find("has no bf16 peak") != std::string::npos);
}

TEST_CASE("cost curves round-trip through JSON and bad files are rejected") {
  models::CostCurves curves;
  curves.device = "dev";
  curves.source = "p.json";
  curves.metadata = {{"software.cuda", "13.0"}};
  models::CostCurve c;
  c.kind = models::KernelKind::attention_fwd;
  c.dtype = models::DType::bf16;
  c.causal = true;
  c.axes = {{1024, 4096}, {128, 512}, {128}};
  c.log_seconds = {std::log(1e-5), std::log(2e-5), std::log(3e-5), std::log(8e-5)};
  c.points = 4;
  c.loo_fit_mape = 0.05;
  c.fit_coefficients = {1, 2, 3, 0, 0, 0, 0};
  curves.curves.push_back(c);
  const std::string json = traces::curves_to_json(curves);
  const models::CostCurves back = traces::read_curves(json, "c.json");
  REQUIRE(back.curves.size() == 1);
  CHECK(back.device == "dev");
  CHECK(back.metadata == curves.metadata);
  CHECK(back.curves[0].causal);
  CHECK(back.curves[0].axes == c.axes);
  CHECK(std::exp(back.curves[0].log_seconds[3]) == orrery::testing::Approx(8e-5));
  CHECK(back.curves[0].loo_fit_mape == 0.05);
  CHECK(std::isnan(back.curves[0].loo_interpolation_mape));
  CHECK(traces::curves_to_json(back) == json);  // stable when written again

  const auto fails = [](const std::string& text) {
    try {
      traces::read_curves(text, "c.json");
    } catch (const sim::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string wrong = json;
  wrong.replace(wrong.find("orrery.curves/1"), 15, "orrery.curves/9");
  CHECK(fails(wrong).find("c.json:/schema: found schema \"orrery.curves/9\"") != std::string::npos);
  wrong = json;
  wrong.replace(wrong.find("\"token_heads\""), 13, "\"tokens\"");
  CHECK(fails(wrong).find("c.json:/curves/0/features: found features [tokens, effective_length, head_dim]") != std::string::npos);
  wrong = json;
  wrong.replace(wrong.find("4096"), 4, "1000");
  INFO(fails(wrong));
  CHECK(fails(wrong).find("c.json:/curves/0/axes/0/1: found a number 1000") != std::string::npos);
}
