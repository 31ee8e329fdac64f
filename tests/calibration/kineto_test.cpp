// PyTorch profiler (Kineto) traces: a synthetic trace of a transformer layer's kernels (written
// here, in torch.profiler's export format) becomes a profile whose fitted curves reproduce its
// kernels, and a replay with the trace's own span; bad traces are named.
#include "calibration/fit.hpp"
#include "calibration/kineto.hpp"

#include "models/hardware/cost.hpp"
#include "models/hardware/hardware.hpp"
#include "sim/error.hpp"

#include "approx.hpp"
#include "input_error.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <string>

using namespace orrery;
using namespace orrery::calibration;
using nlohmann::json;

namespace {

// Builds a trace as torch.profiler writes one: cpu_op events with Input Dims / Input type /
// Concrete Inputs and an External id, cudaLaunchKernel runtime events with a correlation, and
// the kernels themselves (args: device, stream, correlation, External id).
struct TraceWriter {
  json events = json::array();
  std::int64_t next_id = 1;
  double host = 0;  // the host's clock: launches
  std::map<std::int64_t, double> stream_end;

  // A kernel on `stream` launched `launch_gap` after the previous launch, starting when its stream
  // is free (or `not_before`), lasting `dur`.
  double kernel(const std::string& name, std::int64_t stream, double dur, const std::string& op, json dims, json types, json concrete = nullptr,
                double launch_gap = 5, double not_before = 0, json extra_args = json::object()) {
    const std::int64_t id = next_id++;
    host += launch_gap;
    json op_args = {{"External id", id}, {"Input Dims", dims}, {"Input type", types}};
    if (!concrete.is_null()) op_args["Concrete Inputs"] = concrete;
    for (auto& [k, v] : extra_args.items()) op_args[k] = v;
    events.push_back({{"ph", "X"}, {"cat", "cpu_op"}, {"name", op}, {"pid", 1}, {"tid", 1}, {"ts", host - 1}, {"dur", 3}, {"args", op_args}});
    events.push_back({{"ph", "X"}, {"cat", "cuda_runtime"}, {"name", "cudaLaunchKernel"}, {"pid", 1}, {"tid", 1}, {"ts", host}, {"dur", 2},
                      {"args", {{"correlation", id}, {"External id", id}}}});
    const double start = std::max({host + 2, stream_end[stream], not_before});
    events.push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", name}, {"pid", 0}, {"tid", stream}, {"ts", start}, {"dur", dur},
                      {"args", {{"device", 0}, {"stream", stream}, {"correlation", id}, {"External id", id}}}});
    stream_end[stream] = start + dur;
    return start + dur;
  }
  std::string text() const {
    return json{{"schemaVersion", 1}, {"deviceProperties", json::array({{{"id", 0}, {"name", "NVIDIA H100 80GB HBM3"}, {"computeMajor", 9},
                                                                          {"computeMinor", 0}, {"numSms", 132}}})},
                {"traceEvents", events}, {"baseTimeNanoseconds", 1764700000000000000.0}}
        .dump();
  }
};

// Durations of the synthetic kernels (microseconds): GEMMs at 600 TFLOP/s plus 4 us, attention
// at 400, memory-bound kernels at 2.5 TB/s plus 3 us; each repetition within +-1%.
double gemm_us(double m, double n, double k) { return 2 * m * n * k / 600e12 * 1e6 + 4; }
double memory_us(double bytes) { return bytes / 2.5e12 * 1e6 + 3; }

std::string write_layer_trace(const std::string& path) {
  TraceWriter w;
  const json bf16 = json::array({"c10::BFloat16", "c10::BFloat16"});
  for (int rep = 0; rep < 3; ++rep) {
    const double jitter = 1 + 0.01 * (rep - 1);
    for (const double m : {2048.0, 4096.0, 8192.0}) {
      for (const double n : {4096.0, 14336.0}) {
        for (const double k : {4096.0, 14336.0}) {
          w.kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", 7,
                   gemm_us(m, n, k) * jitter, "aten::mm", json::array({{m, k}, {k, n}}), bf16);
        }
      }
    }
    // Core attention, forward and backward, through SDPA's flash kernels: batch 2, 32 heads of 128, 4096 tokens, causal.
    const json q = json::array({2, 32, 4096, 128});
    const double att_flops = 4.0 * 2 * 32 * 4096.0 * 4096 * 128 / 2;
    w.kernel("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>>", 7,
             att_flops / 400e12 * 1e6 * jitter, "aten::_scaled_dot_product_flash_attention", json::array({q, q, q, json::array(), json::array()}),
             json::array({"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"}), json::array({"", "", "", "0.", "True", "False", ""}));
    w.kernel("void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8>>", 7,
             2.5 * att_flops / 400e12 * 1e6 * jitter, "aten::_scaled_dot_product_flash_attention_backward",
             json::array({q, q, q, q, q, json::array({2, 32, 4096})}), json::array({"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "float"}),
             json::array({"", "", "", "", "", "", "", "", "4096", "4096", "0.", "True", "", "", ""}));
    // A layer norm and a residual add over 8192 x 4096 bf16.
    const double act = 8192.0 * 4096 * 2;
    w.kernel("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>", 7, memory_us(2 * act + 8192) * jitter,
             "aten::native_layer_norm", json::array({{8192, 4096}, {4096}, {4096}}), json::array({"c10::BFloat16", "c10::BFloat16", "c10::BFloat16"}));
    w.kernel("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>", 7, memory_us(3 * act) * jitter, "aten::add",
             json::array({{8192, 4096}, {8192, 4096}, json::array()}), json::array({"c10::BFloat16", "c10::BFloat16", "Scalar"}));
  }
  // The gradients' all-reduce on NCCL's stream once the backward is done; the next kernel on the
  // compute stream waits for it (the trace's stream wait, which it does not name).
  const double ar_end = w.kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 20, 2000, "record_param_comms",
                                 json::array({{64 << 20}}), json::array({"c10::BFloat16"}), nullptr, 5, w.stream_end[7],
                                 {{"Collective name", "allreduce"}, {"In msg nelems", 64 << 20}, {"Out msg nelems", 64 << 20}, {"dtype", "BFloat16"},
                                  {"Group size", 8}});
  w.kernel("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>", 7, 50, "aten::add",
           json::array({{8192, 4096}, {8192, 4096}, json::array()}), json::array({"c10::BFloat16", "c10::BFloat16", "Scalar"}), nullptr, 5, ar_end);
  // A fused optimizer kernel over tensor lists: no shape Orrery fits.
  w.kernel("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<...FusedAdamMathFunctor...>", 7, 300, "aten::_fused_adam_",
           json::array({json::array(), json::array()}), json::array({"TensorList", "TensorList"}));
  std::ofstream(path) << w.text();
  return path;
}

}  // namespace

TEST_CASE("kineto: a trace's kernels become a profile whose fitted curves reproduce them") {
  const KinetoTrace t = read_kineto_trace(write_layer_trace("kineto_layer.json"));
  CHECK(t.device == "NVIDIA H100 80GB HBM3");
  CHECK(t.kernels.size() == 3 * 16 + 3);
  const KinetoProfile kp = kineto_profile(t);
  CHECK(kp.matched.at("gemm") == 36);
  CHECK(kp.matched.at("attention_fwd") == 3);
  CHECK(kp.matched.at("attention_bwd") == 3);
  CHECK(kp.matched.at("norm") == 3);
  CHECK(kp.matched.at("elementwise") == 4);
  CHECK(kp.skipped.at("a collective (NCCL): the network model, not a kernel curve").size() == 1);
  CHECK(kp.skipped.at("no Orrery kernel kind for this name").size() == 1);  // the fused Adam
  CHECK(kp.profile.points.size() == 12 + 2 + 1 + 1);
  // The GEMM's shape as the operator recorded it: aten::mm of [m, k] x [k, n].
  std::string why;
  const std::optional<models::Kernel> g = kineto_kernel(t.kernels.front(), why);
  REQUIRE(g.has_value());
  CHECK(g->kind == models::KernelKind::gemm);
  // Fitted curves reproduce every matched kernel's median within 5%.
  const models::CostCurves curves = fit_profile(kp.profile, "kineto_layer.json");
  const models::CalibratedCostModel cost(curves, models::HardwareCatalog::builtin().gpu("H100"));
  for (const Measurement& m : kp.profile.points) {
    CAPTURE(models::describe(m.kernel));
    CHECK(cost.time(m.kernel).to_seconds() == orrery::testing::Approx(m.median_s).epsilon(0.05));
  }
  CHECK(cost.fallbacks() == 0);
}

TEST_CASE("kineto: the replay keeps the trace's span; NCCL kernels re-cost on a fabric") {
  const KinetoTrace t = read_kineto_trace(write_layer_trace("kineto_layer.json"));
  const KinetoReplay r = replay_kineto(t, {});
  CHECK(r.span.to_seconds() == orrery::testing::Approx(t.span_us() * 1e-6).epsilon(0.05));
  CHECK(r.collectives == 1);
  CHECK(r.waits >= 1);  // the add after the all-reduce
  // On a fabric: the all-reduce of 128 MiB over 8 GPUs as Orrery's NCCL model costs it there.
  KinetoReplayOptions o;
  o.topology = "dgx-h100:nodes=1";
  const KinetoReplay fabric = replay_kineto(t, o);
  CHECK(fabric.span != r.span);
  o.topology = "dgx-h100:nodes=8";
  o.ranks = 64;
  const KinetoReplay wide = replay_kineto(t, o);
  CHECK(wide.span > fabric.span);  // the same bytes over 64 GPUs across servers take longer
}

TEST_CASE("kineto: bad traces named") {
  const auto error = orrery::testing::error_of;
  CHECK(error([] { parse_kineto_trace("{\"traceEvents\": [", "t.json"); }).find("t.json") == 0);
  CHECK(error([] { parse_kineto_trace(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}]})", "t.json"); }) ==
        "t.json:/traceEvents: no GPU kernels (events of category \"kernel\"): record the trace with ProfilerActivity.CUDA");
  CHECK(error([] { parse_kineto_trace(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, "args": {}}]})", "t.json"); }) ==
        "t.json:/traceEvents/0: GPU event \"k\" has no args.stream, expected the CUDA stream it ran on");
  CHECK(error([] { parse_kineto_trace(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": -2, "args": {"stream": 7}}]})", "t.json"); }) ==
        "t.json:/traceEvents/0: dur is -2, expected 0 to 8.64e+10 (microseconds)");
  CHECK(error([] { parse_kineto_trace("[1, 2]", "t.json"); }) == "t.json:/0: expected an event object");
  CHECK(error([] { parse_kineto_trace("{\"events\": []}", "t.json"); }).find("t.json:/: found an object, expected a Chrome trace") == 0);
  CHECK(error([] { read_kineto_trace("no-such-trace.json"); }) == "no-such-trace.json: cannot open the trace");
}
