// The fitted step parameters: the built-in file, the lookup's fallbacks, what each kind sets in
// the roofline, and the file's reader on bad input.
#include "models/hardware/step_params.hpp"
#include "models/training/parallel.hpp"
#include "sim/error.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>

using namespace orrery;
using namespace orrery::models;

namespace {
const GpuSpec& gpu(const char* name) { return HardwareCatalog::builtin().gpu(name); }
}  // namespace

TEST_CASE("step parameters: the built-in file is the one in the source tree, every value cites its rows") {
  std::ifstream f(std::string(ORRERY_SOURCE_DIR) + "/models/hardware/step_params.json");
  std::stringstream text;
  text << f.rdbuf();
  const StepParameters& builtin = builtin_step_parameters();
  const StepParameters read = parse_step_parameters(text.str(), "step_params.json");
  REQUIRE(read.values.size() == builtin.values.size());
  CHECK(!builtin.version.empty());
  for (const auto& [name, p] : builtin.values) {
    CAPTURE(name);
    CHECK(read.values.at(name).value == p.value);
    CHECK(!p.rows.empty());  // fitted on named rows
  }
  // Written and read back, the values are the same to the digits the file keeps.
  const StepParameters again = parse_step_parameters(step_parameters_json(builtin), "again");
  for (const auto& [name, p] : builtin.values) CHECK(again.values.at(name).value == doctest::Approx(p.value).epsilon(1e-7));
  // The refit's leave-one-out fits: one per configuration, each naming parameters of the file,
  // and they survive the round trip.
  REQUIRE(!builtin.leave_one_out.empty());
  CHECK(again.leave_one_out.size() == builtin.leave_one_out.size());
  for (const auto& [config, values] : builtin.leave_one_out) {
    CAPTURE(config);
    CHECK(!values.empty());
    for (const auto& [name, v] : values) {
      CHECK(builtin.values.count(name) == 1);
      CHECK(again.leave_one_out.at(config).at(name) == doctest::Approx(v).epsilon(1e-7));
    }
  }
  // The exact (re-linearised) ones are configurations of leave_one_out, and survive it too.
  CHECK(again.leave_one_out_exact == builtin.leave_one_out_exact);
  for (const std::string& config : builtin.leave_one_out_exact) CHECK(builtin.leave_one_out.count(config) == 1);
}

TEST_CASE("step parameters: each kind sets its part of the roofline, with fallbacks by architecture and framework") {
  StepParameters p;
  p.values["hopper.megatron.gemm.bf16"] = {0.5, {"a:1"}};
  p.values["hopper.megatron.gemm.fp8"] = {0.6, {"a:1"}};
  p.values["hopper.megatron.memory"] = {0.7, {"a:1"}};
  p.values["hopper.megatron.overhead"] = {30, {"a:1"}};
  p.values["hopper.megatron.overlap"] = {0.4, {"a:1"}};
  p.values["hopper.megatron.attention"] = {0.5, {"a:1"}};
  p.values["hopper.pytorch.memory.eager"] = {0.2, {"a:1"}};
  p.values["blackwell.megatron.gemm.nvfp4"] = {0.9, {"a:1"}};
  const RooflineParams isolated;
  // Hopper under Megatron in FP8: the low-precision GEMMs take gemm.fp8, the bf16 ones gemm.bf16,
  // attention is the isolated curve times the multiplier.
  const RooflineParams h = training_roofline_params(gpu("H100"), {"megatron", "fp8"}, p);
  CHECK(h.gemm_efficiency == 0.5);
  CHECK(h.gemm_efficiency_fp8 == 0.6);
  CHECK(h.memory_efficiency == 0.7);
  CHECK(h.kernel_overhead == sim::Duration::microseconds(30));
  CHECK(h.overlap_efficiency == 0.4);
  CHECK(h.attention_fwd_efficiency == doctest::Approx(0.5 * isolated.attention_fwd_efficiency));
  CHECK(h.step_efficiency == 1);
  // fp8-delayed runs the same GEMMs as fp8.
  CHECK(training_roofline_params(gpu("H100"), {"megatron", "fp8-delayed"}, p).gemm_efficiency_fp8 == 0.6);
  // PyTorch eager on Hopper: its own memory.eager; what PyTorch has no value for comes from
  // Megatron's on the same architecture; compiled PyTorch has no eager share.
  CHECK(training_roofline_params(gpu("H100"), {"pytorch", "bf16"}, p).memory_efficiency == 0.2);
  CHECK(training_roofline_params(gpu("H100"), {"pytorch", "bf16"}, p).gemm_efficiency == 0.5);
  CHECK(training_roofline_params(gpu("H100"), {"pytorch-compile", "bf16"}, p).memory_efficiency == 0.7);
  // Blackwell: its own NVFP4 value; the rest from Hopper's Megatron values. A GPU of no known
  // architecture (MI300X) takes Hopper's. An unfitted kind keeps its prior.
  const RooflineParams b = training_roofline_params(gpu("B200"), {"megatron", "nvfp4"}, p);
  CHECK(b.gemm_efficiency_fp4 == 0.9);
  CHECK(b.gemm_efficiency == 0.5);
  CHECK(training_roofline_params(gpu("MI300X"), {"megatron", "bf16"}, p).gemm_efficiency == 0.5);
  CHECK(training_roofline_params(gpu("H100"), {"megatron", "bf16"}, p).grouped_gemm_efficiency == step_parameter_prior("grouped_gemm"));
  // The uses name what a fit of such a step would set.
  const auto uses = step_parameter_uses(gpu("GB200"), {"pytorch", "mxfp8"}, p);
  CHECK(uses[1].kind == "gemm.mxfp8");
  CHECK(uses[1].name == "blackwell.pytorch.gemm.mxfp8");
  CHECK(uses[1].used.empty());  // nobody has a value: the prior
  CHECK(uses[1].value == step_parameter_prior("gemm.mxfp8"));
}

TEST_CASE("step parameters: overlap efficiency exposes the share of overlapped TP communication that does not hide") {
  // One layer's TP communication overlapped with its GEMMs: with overlap 1 only what the GEMMs
  // do not cover is exposed; with overlap 0 all of it.
  const StepParameters& builtin = builtin_step_parameters();
  StepParameters none = builtin, full = builtin;
  for (StepParameters* p : {&none, &full}) p->values["hopper.megatron.overlap"] = {p == &none ? 1e-9 : 1.0, {"test"}};
  CHECK(training_roofline_params(gpu("H100"), {}, none).overlap_efficiency < 1e-6);
  CHECK(training_roofline_params(gpu("H100"), {}, full).overlap_efficiency == 1);
}

// host.launch sets the host's time per further GEMM of a grouped GEMM's loop; overlap.ep, the
// expert all-to-alls' share that hides, is a parameter of a step only where they overlap.
TEST_CASE("step parameters: host.launch and overlap.ep") {
  StepParameters p;
  p.values["blackwell.megatron.host.launch"] = {7, {"a:1"}};
  p.values["blackwell.megatron.overlap"] = {0.4, {"a:1"}};
  p.values["blackwell.megatron.overlap.ep"] = {0.8, {"a:1"}};
  StepContext ep{"megatron", "mxfp8"};
  ep.ep_overlap = true;
  const RooflineParams r = training_roofline_params(gpu("GB200"), ep, p);
  CHECK(r.host_launch == sim::Duration::microseconds(7));
  CHECK(r.overlap_efficiency == 0.4);
  CHECK(r.overlap_ep_efficiency == 0.8);
  const auto kinds = [&](const StepContext& ctx) {
    std::vector<std::string> out;
    for (const StepParameterUse& u : step_parameter_uses(gpu("GB200"), ctx, p)) out.push_back(u.kind);
    return out;
  };
  const auto has = [](const std::vector<std::string>& v, const char* kind) { return std::find(v.begin(), v.end(), kind) != v.end(); };
  CHECK(has(kinds(ep), "overlap.ep"));
  CHECK_FALSE(has(kinds({"megatron", "mxfp8"}), "overlap.ep"));
  CHECK(has(kinds({"megatron", "mxfp8"}), "host.launch"));
  // In a full-iteration CUDA graph the host issues nothing: neither host kind is used.
  CHECK_FALSE(has(kinds({"megatron", "mxfp8", true}), "host.launch"));
  CHECK(training_roofline_params(gpu("GB200"), {"megatron", "mxfp8", true}, p).host_launch == sim::Duration::zero());
  // No value: the priors (5 us, full overlap).
  CHECK(training_roofline_params(gpu("H100"), {}, p).host_launch == sim::Duration::microseconds(5));
  CHECK(training_roofline_params(gpu("H100"), {}, p).overlap_ep_efficiency == 1);
}

// overlap.dp, the data-parallel collectives' share that hides, is a parameter of a step only where
// they overlap the compute; its own value, not TP's overlap.
TEST_CASE("step parameters: overlap.dp") {
  StepParameters p;
  p.values["hopper.megatron.overlap"] = {0.4, {"a:1"}};
  p.values["hopper.megatron.overlap.dp"] = {0.7, {"a:1"}};
  StepContext dp{"megatron", "bf16"};
  dp.dp_overlap = true;
  const RooflineParams r = training_roofline_params(gpu("H100"), dp, p);
  CHECK(r.overlap_efficiency == 0.4);
  CHECK(r.overlap_dp_efficiency == 0.7);
  CHECK(RooflineCostModel(gpu("H100"), r).overlap_dp_efficiency() == 0.7);
  bool used = false;
  for (const StepParameterUse& u : step_parameter_uses(gpu("H100"), dp, p)) used = used || u.used == "hopper.megatron.overlap.dp";
  CHECK(used);
  CHECK(training_roofline_params(gpu("H100"), {}, p).overlap_dp_efficiency == 1);  // no data-parallel overlap
  CHECK(step_parameter_prior("overlap.dp") == 1.0);
  CHECK(step_parameter_bounded("overlap.dp"));
}

TEST_CASE("step parameters: Megatron's FP8 and MXFP8 GEMM efficiencies are tied to bf16's, per architecture") {
  // The ratios: geometric means of MAMF fp8 / bf16 efficiency over three GPUs each.
  const auto h = step_parameter_tie("hopper.megatron.gemm.fp8");
  REQUIRE(h.has_value());
  CHECK(h->to == "hopper.megatron.gemm.bf16");
  const double h100 = (1402.6 / 1979) / (794.5 / 989), gh200 = (1535.0 / 1979) / (828.6 / 989), h200 = (1453.4 / 1979) / (794.5 / 989);
  CHECK(h->ratio == doctest::Approx(std::cbrt(h100 * gh200 * h200)).epsilon(1e-4));
  CHECK(h->spread == 1.1);
  const auto b = step_parameter_tie("blackwell.megatron.gemm.mxfp8");
  REQUIRE(b.has_value());
  CHECK(b->to == "blackwell.megatron.gemm.bf16");
  const double b200 = (3432.5 / 4500) / (1745.0 / 2250), gb200 = (3615.6 / 5000) / (1822.0 / 2500), b300 = (3353.3 / 4500) / (1769.0 / 2250);
  CHECK(b->ratio == doctest::Approx(std::cbrt(b200 * gb200 * b300)).epsilon(1e-4));
  CHECK(step_parameter_tie("blackwell.megatron.gemm.fp8")->ratio == b->ratio);
  // Untied: bf16 itself, FP4 (no measurement), PyTorch's, Ampere's (no FP8), other kinds, bad names.
  for (const char* name : {"blackwell.megatron.gemm.bf16", "blackwell.megatron.gemm.nvfp4", "hopper.pytorch.gemm.fp8", "hopper.pytorch-compile.gemm.fp8",
                           "ampere.megatron.gemm.fp8", "hopper.megatron.grouped_gemm", "gemm.fp8", ""}) {
    CAPTURE(name);
    CHECK_FALSE(step_parameter_tie(name).has_value());
  }
}

TEST_CASE("step parameters: a bad file gets one line naming the field") {
  const auto bad = [](const char* text, const char* expected) {
    CAPTURE(text);
    CHECK_THROWS_WITH_AS(parse_step_parameters(text, "p.json"), doctest::Contains(expected), sim::InputError);
  };
  bad("{", "malformed JSON");
  // The fuzzer's finding: a number beyond a double escaped as nlohmann's out_of_range.
  bad(R"({"version": "1", "fitted_by": "x", "parameters": {"hopper.megatron.overhead": {"value": 1e400}}})", "malformed JSON");
  bad(R"({"version": "1", "fitted_by": "x", "parameters": {"hopper.megatron.gemm.bf16": {"value": 1.5, "rows": []}}})",
      "/parameters/hopper.megatron.gemm.bf16/value: found 1.5, expected a positive number at most 1");
  bad(R"({"version": "1", "fitted_by": "x", "parameters": {"volta.megatron.gemm.bf16": {"value": 0.5}}})",
      "/parameters/volta.megatron.gemm.bf16: expected a name <ampere|hopper|blackwell>");
  bad(R"({"version": "1", "fitted_by": "x", "parameters": {"hopper.megatron.gemm.int4": {"value": 0.5}}})", "with a known kind");
  bad(R"({"version": "1", "fitted_by": "x", "parameters": {"hopper.megatron.overhead": {"value": -3}}})", "found -3, expected a positive number");
  bad(R"({"version": "1", "fitted_by": "x", "parameters": {"hopper.megatron.overlap.ep": {"value": 1.2}}})", "found 1.2, expected a positive number at most 1");
  bad(R"({"version": "1", "fitted_by": "x", "parameters": {"hopper.megatron.host.launches": {"value": 5}}})", "host, host.launch, overlap, overlap.ep");
  bad(R"({"version": "1", "fitted_by": "x", "parameters": {"hopper.megatron.overhead": {"value": 3, "rowz": []}}})", "/rowz: unknown key");
  bad(R"({"version": "1", "parameters": {}})", "/fitted_by: expected a string");
  bad(R"({"version": "1", "fitted_by": "x", "parameters": {}, "extra": 1})", "/extra: unknown key");
  bad(R"({"version": "1", "fitted_by": "x", "parameters": {}, "leave_one_out": []})", "/leave_one_out: expected an object of configurations");
  bad(R"({"version": "1", "fitted_by": "x", "parameters": {}, "leave_one_out": {"a.csv:2": {"hopper.megatron.gemm.bf16": 1.5}}})",
      "/leave_one_out/a.csv:2/hopper.megatron.gemm.bf16: found 1.5, expected a positive number at most 1");
  bad(R"({"version": "1", "fitted_by": "x", "parameters": {}, "leave_one_out": {"a.csv:2": {"hopper.megatron.warp": 3}}})",
      "/leave_one_out/a.csv:2/hopper.megatron.warp: expected a name");
  bad(R"({"version": "1", "fitted_by": "x", "parameters": {}, "leave_one_out": {"a.csv:2": {"hopper.megatron.host": "3"}}})",
      "/leave_one_out/a.csv:2/hopper.megatron.host: expected a number");
  bad(R"({"version": "1", "fitted_by": "x", "parameters": {}, "leave_one_out_exact": "a.csv:2"})", "/leave_one_out_exact: expected an array");
  bad(R"({"version": "1", "fitted_by": "x", "parameters": {}, "leave_one_out": {"a.csv:2": {"hopper.megatron.host": 3}}, "leave_one_out_exact": [2]})",
      "/leave_one_out_exact/0: expected a configuration's name");
  bad(R"({"version": "1", "fitted_by": "x", "parameters": {}, "leave_one_out": {"a.csv:2": {"hopper.megatron.host": 3}}, "leave_one_out_exact": ["a.csv:2", "b.csv:7"]})",
      "/leave_one_out_exact/1: found \"b.csv:7\", expected a configuration of leave_one_out");
  // Written sorted, read back the same.
  const StepParameters two = parse_step_parameters(
      R"({"version": "1", "fitted_by": "x", "parameters": {}, "leave_one_out": {"a.csv:2": {"hopper.megatron.host": 3}, "b.csv:7": {"hopper.megatron.host": 4}},
          "leave_one_out_exact": ["b.csv:7", "a.csv:2"]})",
      "two");
  CHECK(two.leave_one_out_exact == std::vector<std::string>{"a.csv:2", "b.csv:7"});
  CHECK(parse_step_parameters(step_parameters_json(two), "again").leave_one_out_exact == two.leave_one_out_exact);
}

TEST_CASE("plan.framework selects the step parameters, and an unknown one is refused") {
  ParallelPlan plan;
  plan.framework = "pytorch-compile";
  plan.precision = "fp8";
  const StepContext ctx = step_context(plan);
  CHECK(ctx.framework == "pytorch-compile");
  CHECK(ctx.precision == "fp8");
  CHECK(step_framework_names() == std::vector<std::string>{"megatron", "pytorch", "pytorch-compile"});
}
