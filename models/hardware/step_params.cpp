#include "models/hardware/step_params.hpp"

#include "sim/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>

namespace orrery::models {

// The built-in file's text, generated from step_params.json at build time (step_params_data.cpp.in).
extern const char* const kStepParamsJson;

namespace {

constexpr std::array<std::string_view, 3> kFrameworks = {"megatron", "pytorch", "pytorch-compile"};

// Priors: the isolated-kernel parameters of RooflineParams (cost.cpp cites each), no overhead
// beyond the isolated kernels' 2 us, full overlap and grouped GEMMs as fast as plain ones; each
// with the spread (a factor) within which the quantity is known before any training row:
// efficiencies of GEMMs and attention within 2x of their best isolated shapes; a streaming
// kernel's share of HBM bandwidth within 1.5x of 0.9 (STREAM-like kernels on H100 and A100 reach
// 80-93% of the datasheet bandwidth); eager PyTorch's memory-bound share within 4x (it stands for
// unfused kernels' extra passes too); overlap and grouped GEMMs loosely (4x); a kernel's overhead
// is the device's gap between kernels (the host's share is `host`): inside a CUDA graph within 4x
// of the isolated kernels' 2 us, outside one within 10x (PyTorch eager's rows put there what the
// model's kernels leave out). The host's time to issue one kernel: within 4x of
// 10 us (the CPU-side path of one eager PyTorch op, Python to cudaLaunchKernel, takes about
// 5-25 us: J. Lin, "From PyTorch op to kernel launch", jiahuanglin.xyz/all_lessons/
// gpu_kernel_serving/18_pytorch_to_kernel.html, its table of each layer's cost). The host's time
// for each further GEMM of a grouped GEMM's C++ loop: within 4x of 5 us (one launch through the
// CUDA driver and runtime takes 4 to 6 us, measured with CUDA 13.0: "pegainfer (3): From Launch
// Overhead to CUDA Graph", susun-blog.com/blog/pegainfer-3-cuda-graph).
struct Prior {
  std::string_view kind;
  double value;
  bool bounded;
  double spread;
};
constexpr std::array<Prior, 16> kPriors = {{
    {"gemm.bf16", 0.8149, true, 2},
    {"gemm.fp8", 0.7162, true, 2},
    {"gemm.fp8-block", 0.7162, true, 2},
    {"gemm.mxfp8", 0.7162, true, 2},
    {"gemm.nvfp4", 0.7162, true, 2},
    {"attention", 1.0, true, 2},
    {"memory", 0.90, true, 1.5},
    {"memory.eager", 0.90, true, 4},
    {"overhead", 2.0, false, 10},
    {"overhead.graph", 2.0, false, 4},
    {"host", 10.0, false, 4},
    {"host.launch", 5.0, false, 4},
    {"overlap", 1.0, true, 4},
    {"overlap.ep", 1.0, true, 4},
    {"overlap.dp", 1.0, true, 4},
    {"grouped_gemm", 1.0, true, 4},
}};

const Prior* find_prior(std::string_view kind) {
  for (const Prior& p : kPriors) {
    if (p.kind == kind) return &p;
  }
  return nullptr;
}

// The framework family a parameter name carries: pytorch-compile shares PyTorch's parameters but
// for its memory-bound kernels (fused by torch.compile; eager's are memory.eager).
std::string_view family(std::string_view framework) { return framework == "megatron" ? "megatron" : "pytorch"; }

// fp8-delayed differs from fp8 only in where the scale comes from: the same GEMMs.
std::string gemm_kind(std::string_view precision) {
  return fmt::format("gemm.{}", precision == "fp8-delayed" ? std::string_view("fp8") : precision);
}

}  // namespace

std::vector<std::string> step_framework_names() { return {kFrameworks.begin(), kFrameworks.end()}; }

// The ratio of a GPU's FP8 GEMM efficiency to its bf16 one, per architecture: the geometric mean
// over the GPUs that Stas Bekman's maximum achievable matmul FLOPS table measures in both
// (../shared/data/ml-engineering/mamf_matmul_tflops.csv, each at its best shape: MAMF over the
// datasheet's dense peak): Hopper 0.9072 (H100 SXM 1402.6/1979 over 794.5/989, 0.882; GH200
// 1535.0/1979 over 828.6/989, 0.926; H200's fp8 1453.4/1979 over H100's bf16, "H200 is the same",
// 0.914), Blackwell 0.9743 (B200 3432.5/4500 over 1745.0/2250, 0.984; GB200 3615.6/5000 over
// 1822.0/2500, 0.992; B300 3353.3/4500 over 1769.0/2250, 0.948). Across a generation's GPUs the
// ln ratio varies by 0.025 (one standard deviation); a step's shapes are not MAMF's best, so the
// tie allows 1.1x, four times that. It ties Megatron's GEMMs (Transformer Engine's cuBLAS GEMMs,
// MXFP8's block scales applied by Blackwell's tensor cores at FP8's rate), not PyTorch's:
// torchtitan's float8 rows all run under torch.compile, which fuses into neighbouring kernels the
// casts the model charges apart, and their FP8 efficiency takes that share (fitted untied it sits
// at its bound, 1.0, against bf16's 0.62).
// No table measures FP4 GEMMs: NVFP4 stays untied.
std::optional<StepParameterTie> step_parameter_tie(std::string_view name) {
  const std::size_t a = name.find('.'), b = name.find('.', a == std::string_view::npos ? a : a + 1);
  if (a == std::string_view::npos || b == std::string_view::npos) return std::nullopt;
  const std::string_view arch = name.substr(0, a), framework = name.substr(a + 1, b - a - 1), kind = name.substr(b + 1);
  if (framework != "megatron" || (kind != "gemm.fp8" && kind != "gemm.mxfp8")) return std::nullopt;
  const double ratio = arch == "hopper" ? 0.9072 : arch == "blackwell" ? 0.9743 : 0.0;
  if (ratio == 0) return std::nullopt;
  return StepParameterTie{fmt::format("{}.{}.gemm.bf16", arch, framework), ratio, 1.1};
}

double step_parameter_prior(std::string_view kind) {
  const Prior* p = find_prior(kind);
  ORRERY_CHECK(p != nullptr, "no prior for step parameter kind {}", kind);
  return p->value;
}

double step_parameter_prior_spread(std::string_view kind) {
  const Prior* p = find_prior(kind);
  ORRERY_CHECK(p != nullptr, "no prior for step parameter kind {}", kind);
  return p->spread;
}

bool step_parameter_bounded(std::string_view kind) {
  const Prior* p = find_prior(kind);
  ORRERY_CHECK(p != nullptr, "no prior for step parameter kind {}", kind);
  return p->bounded;
}

std::string gpu_architecture(const GpuSpec& gpu) {
  const std::string& n = gpu.name;
  if (n.rfind("A100", 0) == 0) return "ampere";
  if (n.rfind("H100", 0) == 0 || n == "H200" || n == "H800" || n == "H20") return "hopper";
  if (n == "B200" || n == "GB200" || n == "B300" || n == "GB300") return "blackwell";
  return "";
}

std::vector<StepParameterUse> step_parameter_uses(const GpuSpec& gpu, const StepContext& ctx, const StepParameters& params) {
  std::string arch = gpu_architecture(gpu);
  if (arch.empty()) arch = "hopper";
  const std::string_view fam = family(ctx.framework);
  std::vector<std::string> kinds = {"gemm.bf16"};
  if (ctx.precision != "bf16") kinds.push_back(gemm_kind(ctx.precision));
  for (const std::string& q : ctx.module_precisions) {
    if (q != "bf16" && q != ctx.precision) kinds.push_back(gemm_kind(q));
  }
  kinds.insert(kinds.end(), {"attention", ctx.framework == "pytorch" ? "memory.eager" : "memory", ctx.cuda_graphs ? "overhead.graph" : "overhead", "overlap",
                                  "grouped_gemm"});
  if (ctx.ep_overlap) kinds.emplace_back("overlap.ep");
  if (ctx.dp_overlap) kinds.emplace_back("overlap.dp");
  if (!ctx.cuda_graphs) kinds.insert(kinds.end(), {"host", "host.launch"});  // a graph's kernels are issued by no one
  std::vector<StepParameterUse> out;
  for (const std::string& kind : kinds) {
    StepParameterUse u;
    u.kind = kind;
    u.name = fmt::format("{}.{}.{}", arch, fam, kind);
    for (const std::string& name : {u.name, fmt::format("{}.megatron.{}", arch, kind), fmt::format("hopper.megatron.{}", kind)}) {
      if (const auto it = params.values.find(name); it != params.values.end()) {
        u.used = name;
        u.value = it->second.value;
        break;
      }
    }
    if (u.used.empty()) u.value = step_parameter_prior(kind);
    out.push_back(u);
  }
  return out;
}

RooflineParams training_roofline_params(const GpuSpec& gpu, const StepContext& ctx, const StepParameters& params) {
  RooflineParams p;
  const double fwd = p.attention_fwd_efficiency, bwd = p.attention_bwd_efficiency;
  for (const StepParameterUse& u : step_parameter_uses(gpu, ctx, params)) {
    if (u.kind == "gemm.bf16") p.gemm_efficiency = u.value;
    else if (u.kind == "gemm.nvfp4") p.gemm_efficiency_fp4 = u.value;
    else if (u.kind.rfind("gemm.", 0) == 0) p.gemm_efficiency_fp8 = u.value;
    else if (u.kind == "attention") p.attention_fwd_efficiency = fwd * u.value, p.attention_bwd_efficiency = bwd * u.value;
    else if (u.kind == "memory" || u.kind == "memory.eager") p.memory_efficiency = u.value;
    else if (u.kind == "overhead" || u.kind == "overhead.graph") p.kernel_overhead = sim::ceil_duration_ns(u.value * 1e3);
    else if (u.kind == "overlap") p.overlap_efficiency = u.value;
    else if (u.kind == "overlap.ep") p.overlap_ep_efficiency = u.value;
    else if (u.kind == "overlap.dp") p.overlap_dp_efficiency = u.value;
    else if (u.kind == "grouped_gemm") p.grouped_gemm_efficiency = u.value;
    else if (u.kind == "host") p.host_issue = sim::ceil_duration_ns(u.value * 1e3);
    else if (u.kind == "host.launch") p.host_launch = sim::ceil_duration_ns(u.value * 1e3);
  }
  p.step_efficiency = 1;
  p.source = fmt::format("{} {} {}{}", gpu_architecture(gpu).empty() ? "hopper (no fit for this GPU)" : gpu_architecture(gpu), ctx.framework,
                         ctx.precision, ctx.cuda_graphs ? " in a CUDA graph" : "");
  return p;
}

RooflineParams training_roofline_params(const GpuSpec& gpu) { return training_roofline_params(gpu, StepContext{}); }

bool has_training_calibration(const GpuSpec& gpu) { return !gpu_architecture(gpu).empty(); }

std::unique_ptr<CostModel> training_cost_model(const GpuSpec& gpu, const StepContext& ctx, std::optional<CostCurves> curves) {
  if (curves) return std::make_unique<CalibratedCostModel>(std::move(*curves), gpu, training_roofline_params(gpu, ctx));
  return std::make_unique<RooflineCostModel>(gpu, training_roofline_params(gpu, ctx));
}

StepParameters parse_step_parameters(std::string_view text, std::string_view source) {
  const std::string src(source);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // a syntax error, or a number out of range (1e400)
    throw sim::InputError(src, "", fmt::format("malformed JSON: {}", e.what()));
  }
  const auto fail = [&](const std::string& pointer, const std::string& what) { throw sim::InputError(src, pointer, what); };
  if (!j.is_object()) fail("", "expected an object with version, fitted_by and parameters");
  for (const auto& [key, v] : j.items()) {
    if (key != "version" && key != "fitted_by" && key != "parameters" && key != "description" && key != "leave_one_out" &&
        key != "leave_one_out_exact") {
      fail("/" + key, "unknown key, expected version, fitted_by, description, parameters, leave_one_out or leave_one_out_exact");
    }
  }
  StepParameters out;
  for (const char* key : {"version", "fitted_by"}) {
    if (!j.contains(key) || !j[key].is_string()) fail(fmt::format("/{}", key), "expected a string");
  }
  out.version = j["version"].get<std::string>();
  out.fitted_by = j["fitted_by"].get<std::string>();
  if (!j.contains("parameters") || !j["parameters"].is_object()) fail("/parameters", "expected an object of named parameters");
  // A parameter's name, "<arch>.<framework>.<kind>", at `at`: its kind.
  const auto check_name = [&](const std::string& name, const std::string& at) {
    const std::size_t a = name.find('.'), b = a == std::string::npos ? a : name.find('.', a + 1);
    const std::string arch = a == std::string::npos ? "" : name.substr(0, a);
    const std::string fw = b == std::string::npos ? "" : name.substr(a + 1, b - a - 1);
    std::string kind = b == std::string::npos ? "" : name.substr(b + 1);
    if ((arch != "ampere" && arch != "hopper" && arch != "blackwell") || (fw != "megatron" && fw != "pytorch") || find_prior(kind) == nullptr) {
      fail(at, "expected a name <ampere|hopper|blackwell>.<megatron|pytorch>.<kind> with a known kind (gemm.<precision>, attention, memory, "
               "memory.eager, overhead, overhead.graph, host, host.launch, overlap, overlap.ep, overlap.dp, grouped_gemm)");
    }
    return kind;
  };
  const auto check_value = [&](double value, const std::string& kind, const std::string& at) {
    if (!(value > 0) || !std::isfinite(value) || (step_parameter_bounded(kind) && value > 1) || value > 1e6) {
      fail(at, fmt::format("found {}, expected a positive number{}", value, step_parameter_bounded(kind) ? " at most 1" : ""));
    }
  };
  for (const auto& [name, v] : j["parameters"].items()) {
    const std::string at = "/parameters/" + name;
    const std::string kind = check_name(name, at);
    if (!v.is_object() || !v.contains("value") || !v["value"].is_number()) fail(at, "expected an object with a numeric value and its rows");
    StepParameter p;
    p.value = v["value"].get<double>();
    check_value(p.value, kind, at + "/value");
    for (const auto& [key, x] : v.items()) {
      if (key != "value" && key != "rows") fail(at + "/" + key, "unknown key, expected value or rows");
    }
    if (v.contains("rows")) {
      if (!v["rows"].is_array()) fail(at + "/rows", "expected an array of row names");
      for (const auto& r : v["rows"]) {
        if (!r.is_string()) fail(at + "/rows", "expected strings");
        p.rows.push_back(r.get<std::string>());
      }
    }
    out.values.emplace(name, std::move(p));
  }
  if (j.contains("leave_one_out")) {
    if (!j["leave_one_out"].is_object()) fail("/leave_one_out", "expected an object of configurations (each named by its first row)");
    for (const auto& [config, fit] : j["leave_one_out"].items()) {
      const std::string at = "/leave_one_out/" + config;
      if (!fit.is_object()) fail(at, "expected an object of parameter values");
      auto& values = out.leave_one_out[config];
      for (const auto& [name, v] : fit.items()) {
        const std::string kind = check_name(name, at + "/" + name);
        if (!v.is_number()) fail(at + "/" + name, "expected a number");
        check_value(v.get<double>(), kind, at + "/" + name);
        values.emplace(name, v.get<double>());
      }
    }
  }
  if (j.contains("leave_one_out_exact")) {
    const auto& exact = j["leave_one_out_exact"];
    if (!exact.is_array()) fail("/leave_one_out_exact", "expected an array of configurations of leave_one_out");
    for (std::size_t i = 0; i < exact.size(); ++i) {
      const std::string at = fmt::format("/leave_one_out_exact/{}", i);
      if (!exact[i].is_string()) fail(at, "expected a configuration's name (its first row)");
      const std::string config = exact[i].get<std::string>();
      if (out.leave_one_out.count(config) == 0) fail(at, fmt::format("found {}, expected a configuration of leave_one_out", sim::quote(config)));
      out.leave_one_out_exact.push_back(config);
    }
    std::sort(out.leave_one_out_exact.begin(), out.leave_one_out_exact.end());
  }
  return out;
}

std::string step_parameters_json(const StepParameters& params) {
  nlohmann::ordered_json j;
  j["version"] = params.version;
  j["fitted_by"] = params.fitted_by;
  j["description"] =
      "Fitted parameters of kernels inside a training step (models/hardware/step_params.hpp says what each kind is). "
      "Each value was fitted on the rows it lists; leave_one_out holds, per configuration (named by its first row), the values "
      "its step uses when fitted without its rows, with which docs/validation.md predicts it; leave_one_out_exact names those "
      "fitted re-linearised at every step (the others keep the all-rows Jacobian).";
  nlohmann::ordered_json ps = nlohmann::ordered_json::object();
  for (const auto& [name, p] : params.values) {
    nlohmann::ordered_json e;
    // Eight significant digits: the file stays readable, a refit of the same rows writes the same bytes.
    e["value"] = std::stod(fmt::format("{:.8g}", p.value));
    e["rows"] = p.rows;
    ps[name] = e;
  }
  j["parameters"] = ps;
  if (!params.leave_one_out.empty()) {
    nlohmann::ordered_json loo = nlohmann::ordered_json::object();
    for (const auto& [config, values] : params.leave_one_out) {
      nlohmann::ordered_json e = nlohmann::ordered_json::object();
      for (const auto& [name, v] : values) e[name] = std::stod(fmt::format("{:.8g}", v));
      loo[config] = e;
    }
    j["leave_one_out"] = loo;
  }
  if (!params.leave_one_out_exact.empty()) {
    std::vector<std::string> exact = params.leave_one_out_exact;
    std::sort(exact.begin(), exact.end());
    j["leave_one_out_exact"] = exact;
  }
  return j.dump(2) + "\n";
}

const StepParameters& builtin_step_parameters() {
  static const StepParameters params = parse_step_parameters(kStepParamsJson, "models/hardware/step_params.json");
  return params;
}

}  // namespace orrery::models
