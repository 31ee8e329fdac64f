#include "models/training/balance.hpp"
#include "models/hardware/cost.hpp"
#include "models/hardware/step_params.hpp"
#include "models/training/llm.hpp"
#include "models/training/parallel.hpp"
#include "models/training/estimate.hpp"
#include "models/training/step.hpp"
#include "models/network/nccl.hpp"
#include "policies/pipeline.hpp"
#include "sim/error.hpp"
#include "traces/csv.hpp"
#include "input_error.hpp"

#include "shared_data.hpp"
#include "approx.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

using namespace orrery;
using namespace orrery::models;

namespace {

const ModelSpec& model(const char* name) { return ModelCatalog::builtin().model(name); }

StepResult step(const StepScenario& sc, bool reuse = true) {
  const auto schedule = policies::pipeline_schedules().create(sc.plan.schedule, {}, {"test", "/plan/schedule"});
  const RooflineCostModel cost(sc.gpu);
  StepOptions o;
  o.reuse = reuse;
  return run_step(sc, cost, *schedule, o);
}

StepScenario small(int tp, int pp, int dp, int m_per_dp, const char* schedule = "1f1b", int vp = 1) {
  StepScenario sc;
  sc.model = model("llama3-8b");
  sc.model.layers = 8;
  sc.gpu = HardwareCatalog::builtin().gpu("H100");
  sc.plan.tp = tp;
  sc.plan.pp = pp;
  sc.plan.vp = vp;
  sc.plan.dp = dp;
  sc.plan.global_batch = m_per_dp * dp;
  sc.plan.seq_len = 2048;
  sc.plan.schedule = schedule;
  sc.topology = fmt::format("dgx-h100:nodes={}", std::max(1, tp * pp * dp / 8));
  if (tp * pp * dp < 8) sc.topology = fmt::format("dgx-h100:nodes=1,gpus_per_node={}", tp * pp * dp);
  return sc;
}

// Qwen3 30B-A3B cut to `layers` layers on one H100, one sequence of 4K tokens.
StepScenario moe_on_one_h100(int layers) {
  StepScenario sc;
  sc.model = model("qwen3-30b-a3b");
  sc.model.layers = layers;
  sc.gpu = HardwareCatalog::builtin().gpu("H100");
  sc.topology = "dgx-h100:nodes=1,gpus_per_node=1";
  sc.plan.global_batch = 1;
  sc.plan.seq_len = 4096;
  return sc;
}

// The fitted training roofline of a scenario's plan with the host's issue time set to `host_ns`,
// and its time per further GEMM of a grouped GEMM's loop to `launch_ns` (-1: the same).
RooflineCostModel with_host(const StepScenario& sc, std::int64_t host_ns, std::int64_t launch_ns = -1) {
  RooflineParams p = training_roofline_params(sc.gpu, step_context(sc.plan));
  p.host_issue = sim::Duration::nanoseconds(host_ns);
  p.host_launch = sim::Duration::nanoseconds(launch_ns < 0 ? host_ns : launch_ns);
  return RooflineCostModel(sc.gpu, p);
}

// A catalog model on H100s: dp x ep (carved out of dp) with the given batch and sequence.
StepScenario on_h100(const char* name, int dp, int ep, int global_batch, std::int64_t seq_len, const char* topology) {
  StepScenario sc;
  sc.model = model(name);
  sc.gpu = HardwareCatalog::builtin().gpu("H100");
  sc.plan.dp = dp;
  sc.plan.ep = ep;
  sc.plan.global_batch = global_batch;
  sc.plan.seq_len = seq_len;
  sc.topology = topology;
  return sc;
}

}  // namespace

TEST_CASE("catalog models have their published parameter counts") {
  const auto near = [](const char* name, double total_b, double active_b) {
    const ModelSpec& m = model(name);
    CAPTURE(name);
    CHECK(static_cast<double>(m.params()) / 1e9 == orrery::testing::Approx(total_b).epsilon(0.015));
    CHECK(static_cast<double>(m.active_params()) / 1e9 == orrery::testing::Approx(active_b).epsilon(0.02));
  };
  near("gpt3-175b", 175, 175);
  near("llama3-8b", 8.03, 8.03);
  near("llama3-70b", 70.6, 70.6);
  near("llama3-405b", 405.9, 405.9);  // Llama 3.1 405B model card: 405B
  near("qwen3-8b", 8.2, 8.2);
  near("qwen3-30b-a3b", 30.5, 3.3);
  near("qwen3-235b-a22b", 235, 22);
  near("mixtral-8x7b", 46.7, 12.9);
  near("deepseek-v3", 671, 37);
  // The MTP module: 14B more (DeepSeek-V3 report: "671B ... and 14B of the MTP module"), of
  // which one MoE layer's active experts and its projection run per token.
  near("deepseek-v3-mtp", 685, 38.2);
  // gpt-oss model card (arXiv 2508.10925) Table 1: 116.83B total, 5.13B active (20b: 20.91B,
  // 3.61B); its active count leaves out the input embedding (201088 x 2880 = 0.58B).
  near("gpt-oss-120b", 116.8, 5.13 + 0.58);
  near("gpt-oss-20b", 20.9, 3.61 + 0.58);
  near("nemotron-3-nano", 31.6, 3.6);  // Nemotron 3 Nano report: 31.6B total, 3.6B active with embeddings
  near("gpt-moe-1.8t", 1831, 280);  // 120 x (16 x 0.925B + 0.46B) + embeddings; 2 of 16 experts active
  near("megatron2021-1t", 1008, 1008);
  near("megatron2024-462b", 462, 462);
  CHECK_THROWS_WITH_AS(ModelCatalog::builtin().model("llama3-7b", "s.json", "/model"),
                       doctest::Contains("s.json:/model: unknown model \"llama3-7b\"; did you mean \"llama3-8b\"?; known: gpt3-175b"),
                       sim::InputError);
}

// 6 N T (forward 2, input grads 2, weight grads 2 per matmul parameter and token) plus the
// attention terms: forward 2(d + dv) per causal query-key pair and head, backward 2(3d + 2dv)
// (flash attention recomputes QK^T).
TEST_CASE("step FLOPs are counted exactly: 6NT plus attention") {
  for (const auto& [tp, pp, dp] : {std::tuple{1, 1, 1}, {2, 2, 2}, {4, 1, 2}}) {
    StepScenario sc = small(tp, pp, dp, 4);
    const StepResult r = step(sc);
    const double T = static_cast<double>(sc.plan.global_batch) * static_cast<double>(sc.plan.seq_len);
    const double s = static_cast<double>(sc.plan.seq_len), pairs = s * (s + 1) / 2 * sc.plan.global_batch;
    const ModelSpec& m = sc.model;
    const double d = static_cast<double>(m.head_dim);
    const double attention_fwd = m.layers * pairs * 2 * (d + d) * m.heads;
    const double attention_bwd = m.layers * pairs * 2 * (3 * d + 2 * d) * m.heads;
    const double six_nt = 6 * static_cast<double>(m.active_matmul_params()) * T;
    CAPTURE(tp);
    CAPTURE(pp);
    CHECK(r.hardware_flops == orrery::testing::Approx(six_nt + attention_fwd + attention_bwd).epsilon(1e-9));
    CHECK(r.model_flops == orrery::testing::Approx(six_nt + 3 * attention_fwd).epsilon(1e-12));
  }
  // Full recompute adds one forward.
  StepScenario sc = small(2, 2, 2, 4);
  const double base = step(sc).hardware_flops;
  sc.plan.recompute = Recompute::full;
  const StepResult full = step(sc);
  CHECK(full.hardware_flops > base * 1.3);
  CHECK(full.model_flops == step(small(2, 2, 2, 4)).model_flops);
}

TEST_CASE("packed documents: attention shrinks with the sum of squared lengths") {
  StepScenario one = small(1, 1, 2, 4);
  one.plan.seq_len = 8192;
  StepScenario packed = one;
  packed.plan.documents = {4096, 2048, 1024, 512, 512};
  const StepResult a = step(one), b = step(packed);
  CHECK(b.step_time < a.step_time);
  CHECK(b.model_flops < a.model_flops);
  // Linear work is the same: the difference is exactly the attention pairs'.
  const ModelSpec& m = one.model;
  const double per_pair = 3 * 2 * static_cast<double>(2 * m.head_dim) * m.heads * m.layers * one.plan.global_batch;
  const double pairs_one = 8192.0 * 8193 / 2;
  const double pairs_packed = (4096.0 * 4097 + 2048.0 * 2049 + 1024.0 * 1025 + 2 * 512.0 * 513) / 2;
  CHECK(a.model_flops - b.model_flops == orrery::testing::Approx(per_pair * (pairs_one - pairs_packed)).epsilon(1e-9));
  packed.plan.documents = {4096, 2048};
  CHECK_THROWS_WITH_AS(step(packed), doctest::Contains("documents sum to 6144 tokens, expected seq_len = 8192"), sim::InputError);
}

TEST_CASE("attention without flash attention: every (query, key) pair computed, the scores through memory") {
  StepScenario flash = small(1, 1, 2, 4);
  flash.plan.recompute = Recompute::none;
  StepScenario unfused = flash;
  unfused.plan.flash_attention = false;
  const StepResult a = step(flash), b = step(unfused);
  CHECK(b.step_time > a.step_time);
  CHECK(b.model_flops == a.model_flops);  // the model's work is the same, the kernels' is not
  // The unfused GEMMs compute all s^2 pairs (the mask applied after): 2 (d + d_v) FLOPs per pair
  // and head forward, 4 (d + d_v) backward; flash attention the causal s(s+1)/2, its backward
  // recomputing the scores: 2 (d + d_v) + 2 (3 d + 2 d_v).
  const ModelSpec& m = flash.model;
  const double s = static_cast<double>(flash.plan.seq_len), d = static_cast<double>(m.head_dim);
  const double per_head = static_cast<double>(m.heads) * m.layers * flash.plan.global_batch;
  const double unfused_flops = 6 * (d + d) * s * s, flash_flops = (2 * (d + d) + 2 * (3 * d + 2 * d)) * s * (s + 1) / 2;
  CHECK(b.hardware_flops - a.hardware_flops == orrery::testing::Approx(per_head * (unfused_flops - flash_flops)).epsilon(1e-9));
  // The scores' passes through memory grow with s^2 per head: doubling the sequence more than
  // doubles the unfused step's extra time over flash attention.
  StepScenario flash2 = flash, unfused2 = unfused;
  flash2.plan.seq_len = unfused2.plan.seq_len = 4096;
  const double extra = (b.step_time - a.step_time).to_seconds();
  const double extra2 = (step(unfused2).step_time - step(flash2).step_time).to_seconds();
  CHECK(extra2 > 3 * extra);
}

TEST_CASE("reuse does not change results: one rank per stage equals every rank, every op costed afresh") {
  for (const auto& [schedule, vp] : {std::pair{"1f1b", 1}, {"interleaved-1f1b", 2}, {"zb-h1", 1}, {"gpipe", 1}}) {
    StepScenario sc = small(2, 2, 2, 4, schedule, vp);
    const StepResult reused = step(sc, true);
    const StepResult full = step(sc, false);
    CAPTURE(schedule);
    CHECK(reused.ranks_simulated == 2);
    CHECK(full.ranks_simulated == 8);
    CHECK(full.tasks > reused.tasks);
    CHECK(full.step_time == reused.step_time);
    CHECK(full.hardware_flops == orrery::testing::Approx(reused.hardware_flops).epsilon(1e-12));
    CHECK(full.bubble_fraction == orrery::testing::Approx(reused.bubble_fraction).epsilon(1e-12));
  }
}

TEST_CASE("schedules order the step: interleaving and zero bubble shrink the bubble") {
  const double one = step(small(1, 4, 2, 8, "1f1b")).bubble_fraction;
  const double inter = step(small(1, 4, 2, 8, "interleaved-1f1b", 2)).bubble_fraction;
  const double zb = step(small(1, 4, 2, 8, "zb-h1")).bubble_fraction;
  CHECK(one > 0.1);
  CHECK(inter < one);
  CHECK(zb < one);
  // No pipeline, no bubble.
  CHECK(step(small(2, 1, 4, 4)).bubble_fraction == 0);
}

TEST_CASE("plans that cannot run are rejected with the field and the reason") {
  const auto fails = [](ParallelPlan p, const char* name, int gpus) {
    try {
      validate_plan(p, model(name), gpus, "s.json", "/plan");
    } catch (const sim::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  ParallelPlan p;
  p.tp = 3;
  p.global_batch = 8;
  CHECK(fails(p, "llama3-8b", 3).find("s.json:/plan/tp: tp=3 does not divide 32 attention heads") != std::string::npos);
  p = ParallelPlan{};
  p.dp = 4;
  p.micro_batch = 3;
  p.global_batch = 100;
  CHECK(fails(p, "llama3-8b", 4).find("s.json:/plan/global_batch: micro_batch=3 x dp=4 = 12 does not divide the global batch of 100") !=
        std::string::npos);
  p = ParallelPlan{};
  p.tp = 8;
  p.dp = 4;
  p.global_batch = 64;
  CHECK(fails(p, "llama3-8b", 64).find("s.json:/plan: tp=8 x pp=1 x dp=4 x cp=1 = 32 GPUs, but the cluster has 64") != std::string::npos);
  p = ParallelPlan{};
  p.ep = 2;
  p.dp = 2;
  p.global_batch = 2;
  CHECK(fails(p, "llama3-8b", 2).find("s.json:/plan/ep: ep=2 but llama3-8b has no experts") != std::string::npos);
  p = ParallelPlan{};
  p.pp = 64;
  p.global_batch = 64;
  CHECK(fails(p, "llama3-8b", 64).find("64 virtual stages for 32 layers") != std::string::npos);
}

TEST_CASE("MoE, MLA, context and expert parallelism run") {
  StepScenario sc;
  sc.model = model("qwen3-30b-a3b");
  sc.gpu = HardwareCatalog::builtin().gpu("H100");
  sc.plan.tp = 2;
  sc.plan.pp = 2;
  sc.plan.dp = 4;
  sc.plan.ep = 4;
  sc.plan.global_batch = 16;
  sc.plan.seq_len = 4096;
  sc.topology = "dgx-h100:nodes=2";
  const StepResult moe = step(sc);
  CHECK(moe.step_time > sim::Duration::zero());
  sc.plan.expert_imbalance = 1.5;
  CHECK(step(sc).step_time > moe.step_time);  // the busiest expert rank sets the pace

  StepScenario cp = small(2, 1, 2, 4);
  cp.plan.cp = 2;
  cp.plan.seq_len = 8192;
  cp.topology = "dgx-h100:nodes=1";
  const StepResult ring = step(cp);
  cp.plan.cp_kind = CpKind::ulysses;
  const StepResult ulysses = step(cp);
  CHECK(ring.step_time > sim::Duration::zero());
  CHECK(ulysses.step_time > sim::Duration::zero());

  StepScenario ds;
  ds.model = model("deepseek-v3");
  ds.model.layers = 8;  // its shapes (MLA, 256 experts, shared expert, dense first layers), fewer layers
  ds.gpu = HardwareCatalog::builtin().gpu("H100");
  ds.plan.tp = 1;
  ds.plan.pp = 2;
  ds.plan.dp = 8;
  ds.plan.ep = 8;
  ds.plan.global_batch = 16;
  ds.topology = "dgx-h100:nodes=2";
  CHECK(step(ds).model_flops > 0);
}

// Hybrid stacks, sliding windows and MTP: each layer kind costs what it holds.
TEST_CASE("layer kinds: Mamba-2 hybrids, sliding-window attention, MTP modules, folded expert parallelism") {
  const ModelSpec& nano = model("nemotron-3-nano");
  CHECK(nano.layers == 52);
  CHECK(nano.layer_kind(0).mixer == Mixer::mamba);
  CHECK(nano.layer_kind(1).ffn == Ffn::moe);
  CHECK(nano.layer_kind(5).mixer == Mixer::attention);
  CHECK(nano.layer_kind(5).ffn == Ffn::none);
  int mamba = 0, attention = 0, moe = 0;
  for (int l = 0; l < nano.layers; ++l) {
    mamba += nano.layer_kind(l).mixer == Mixer::mamba;
    attention += nano.layer_kind(l).mixer == Mixer::attention;
    moe += nano.layer_kind(l).ffn == Ffn::moe;
  }
  CHECK(mamba == 23);  // the report: 23 Mamba-2, 23 MoE, 6 attention layers
  CHECK(moe == 23);
  CHECK(attention == 6);

  // GPT-OSS alternates a 128-key window (even layers) and full attention.
  const ModelSpec& oss = model("gpt-oss-120b");
  CHECK(oss.layer_kind(0).windowed);
  CHECK_FALSE(oss.layer_kind(1).windowed);
  // A windowed causal document of l keys: w(w+1)/2 + (l - w) w pairs.
  const Kernel full = Kernel::attention(Pass::forward, {4096}, 64, 8, 64, true, DType::bf16);
  const Kernel win = Kernel::attention(Pass::forward, {4096}, 64, 8, 64, true, DType::bf16, 0, 128);
  CHECK(flops(win).value() / flops(full).value() == orrery::testing::Approx((128.0 * 129 / 2 + (4096 - 128) * 128.0) / (4096.0 * 4097 / 2)));
  const RooflineCostModel cost(HardwareCatalog::builtin().gpu("H100"));
  CHECK(cost.time(win) < cost.time(full) / 4);

  // A step of each runs; the hybrid on one server.
  StepScenario sc = on_h100("nemotron-3-nano", 8, 8, 16, 8192, "dgx-h100:nodes=1");
  const StepResult hybrid = step(sc);
  CHECK(hybrid.tflops_per_gpu > 0);
  CHECK(hybrid.step_time == step(sc, false).step_time);  // reuse over kinds equals every op afresh

  // MTP: the same model with one MTP module is slower, holds more on its last stage.
  StepScenario ds = on_h100("deepseek-v3", 8, 8, 16, 4096, "dgx-h100:nodes=2");
  ds.model.layers = 8;
  ds.plan.pp = 2;
  const StepResult plain = step(ds);
  const ModelSpec no_mtp = ds.model;
  ds.model.mtp_layers = 1;
  const StepResult mtp = step(ds);
  CHECK(mtp.step_time > plain.step_time);
  CHECK(mtp.model_flops > plain.model_flops);
  CHECK(chunk_params(ds.model, ds.plan, 1).total() > chunk_params(no_mtp, ds.plan, 1).total() * 1.1);
  CHECK(chunk_params(ds.model, ds.plan, 0).total() == chunk_params(no_mtp, ds.plan, 0).total());

  // Expert parallelism folded over tensor-parallel ranks (Megatron's MoE parallel folding):
  // ep 16 over tp 2 x dp 8.
  StepScenario fold = on_h100("qwen3-30b-a3b", 8, 16, 16, 4096, "dgx-h100:nodes=2");
  fold.plan.tp = 2;
  CHECK(ep_folded(fold.plan));
  CHECK(ep_stride(fold.plan) == 1);
  CHECK(expert_dp(fold.plan) == 1);
  CHECK(step(fold).step_time > sim::Duration::zero());
  fold.plan.ep = 32;  // 32 divides neither dp 8 nor tp x dp 16
  CHECK_THROWS_WITH_AS(step(fold), doctest::Contains("/plan/ep: ep=32 divides neither dp x cp = 8 nor tp x dp x cp = 16"), sim::InputError);
}

// LoRA: the base frozen (no weight gradients: about a third less compute), adapters trained.
TEST_CASE("LoRA: frozen base, adapters' GEMMs, gradients and optimizer states of the adapters only") {
  StepScenario sc = small(2, 2, 2, 8);
  const StepResult full = step(sc);
  sc.plan.lora.enabled = true;
  const StepResult lora = step(sc);
  CHECK(lora.step_time < full.step_time);
  CHECK(lora.hardware_flops < 0.75 * full.hardware_flops);
  CHECK(lora.hardware_flops > 0.6 * full.hardware_flops);
  // Model FLOPs as Megatron-Bridge's LoRA tables count them: the frozen base's matmuls forward
  // and input gradients (2 x 2NT, not 3 x), attention and the adapters 3x: just over 2/3.
  CHECK(lora.model_flops > full.model_flops * 2 / 3);
  CHECK(lora.model_flops < 0.7 * full.model_flops);
  // Rank 32 on q/k/v, o, gate/up and down of 4 layers per stage at tp 2: r (in + out) each.
  const double h = 4096, qkv = (32 + 16) * 128 / 2.0, o = 32 * 128 / 2.0, f = 14336 / 2.0;
  const double per_layer = 32 * ((h + qkv) + (o + h) + (h + 2 * f) + (f + h));
  CHECK(trainable_params(sc.model, sc.plan, 0).total() == orrery::testing::Approx(4 * per_layer));
  CHECK(lora.memory.optimizer_bytes == orrery::testing::Approx(12 * 4 * per_layer / 2));  // ZeRO-1 over dp 2
  CHECK(lora.memory.grads_bytes < full.memory.grads_bytes / 50);
  CHECK(lora.stages[0].dp_bytes < full.stages[0].dp_bytes / 50);
  sc.plan.lora.rank = 5000;
  CHECK_THROWS_WITH_AS(step(sc), doctest::Contains("/plan/lora: rank: found 5000, expected 1 to llama3-8b's hidden size 4096"), sim::InputError);
}

// PyTorch FSDP2 under pipeline parallelism (as torchtitan runs it) gathers each stage's
// parameters once per step and reduce-scatters its gradients once, after the last micro-batch:
// ZeRO-1's data-parallel traffic, where Megatron's ZeRO-3 gathers and reduces every micro-batch.
TEST_CASE("data-parallel implementations: FSDP2 under PP moves ZeRO-1's bytes, Megatron's ZeRO-3 more") {
  StepScenario sc = small(1, 2, 4, 4);
  sc.plan.zero = 1;
  const StepResult zero1 = step(sc);
  sc.plan.zero = 3;
  const StepResult megatron3 = step(sc);
  sc.plan.sharding = "fsdp2";
  const StepResult fsdp2 = step(sc);
  CHECK(dp_traffic_stage(sc.plan) == 1);
  CHECK(fsdp2.stages[0].dp_bytes == orrery::testing::Approx(zero1.stages[0].dp_bytes));
  CHECK(megatron3.stages[0].dp_bytes > 2 * fsdp2.stages[0].dp_bytes);
  // Without pipeline parallelism FSDP2 reshards after each forward: ZeRO-3's traffic.
  StepScenario flat = small(1, 1, 8, 4);
  flat.plan.zero = 3;
  flat.plan.sharding = "fsdp2";
  CHECK(dp_traffic_stage(flat.plan) == 3);
}

// Activation offload: the kept activations live on the host, the GPU holds the two layers in
// transfer; each layer's copy down after its forward and up before its backward hides behind
// that layer's compute, so only a host link slower than the compute shows in the step.
TEST_CASE("activation offload to the CPU: memory, time, and hosts that cannot take it refused") {
  StepScenario sc = small(1, 1, 8, 4);
  const StepResult gpu = step(sc);
  sc.plan.activation_offload = "cpu";
  sc.gpu.host_link_bandwidth = 1e15;  // a link no copy waits for
  const StepResult fast = step(sc);
  const double layer = layer_activation_bytes(sc.plan, sc.model, 0);  // every layer alike
  CHECK(fast.memory.activations_bytes == orrery::testing::Approx(kActivationOffloadWindow * layer));
  CHECK(fast.memory.host_activation_bytes == orrery::testing::Approx(gpu.memory.activations_bytes));
  CHECK(fast.memory.total() == orrery::testing::Approx(gpu.memory.total() - gpu.memory.activations_bytes + kActivationOffloadWindow * layer));
  // Copies that hide behind each layer's compute leave the step as it was.
  CHECK(fast.step_time == gpu.step_time);
  // Slower links: each layer's forward and backward wait for what its compute does not cover,
  // so the step grows as the link shrinks.
  sc.gpu.host_link_bandwidth = 64e9;  // PCIe 5.0 x16
  const StepResult pcie = step(sc);
  sc.gpu.host_link_bandwidth = 4e9;
  const StepResult slow = step(sc);
  CHECK(pcie.step_time >= gpu.step_time);
  CHECK(slow.step_time > pcie.step_time);
  CHECK(slow.exposed_comm_fraction > gpu.exposed_comm_fraction);
  // The closed-form estimate pays the same copies.
  const auto schedule = policies::pipeline_schedules().create(sc.plan.schedule, {}, {"test", "/plan/schedule"});
  const RooflineCostModel cost(sc.gpu);
  CHECK(estimate_step(sc, cost, *schedule).step_time_s == orrery::testing::Approx(slow.step_time.to_seconds()).epsilon(0.10));
  // Bad input: a host the catalog does not state, a host too small, an unknown mode.
  sc.gpu = HardwareCatalog::builtin().gpu("MI300X");
  CHECK_THROWS_WITH_AS(step(sc), doctest::Contains("/plan/activation_offload: activation offload needs the MI300X's host"), sim::InputError);
  sc.gpu = HardwareCatalog::builtin().gpu("H100");
  sc.gpu.host_memory_bytes = 1073741824.0;
  CHECK_THROWS_WITH_AS(step(sc), doctest::Contains("does not fit the 1.0 GiB of host memory each H100 has"), sim::InputError);
  sc.plan.activation_offload = "nvme";
  CHECK_THROWS_WITH_AS(step(sc), doctest::Contains("/plan/activation_offload: found \"nvme\", expected none or cpu"), sim::InputError);
}

// Optimizer offload: the states leave HBM; the step pays gradients down, Adam on the host at its
// memory bandwidth and the weights back up.
TEST_CASE("optimizer offload to the CPU: memory and time; hosts the catalog lacks refused") {
  StepScenario sc = small(1, 1, 8, 2);
  sc.plan.zero = 0;
  const StepResult gpu = step(sc);
  sc.plan.optimizer_offload = "cpu";
  const StepResult cpu = step(sc);
  CHECK(gpu.memory.optimizer_bytes > 0);
  CHECK(cpu.memory.optimizer_bytes == 0);
  CHECK(cpu.memory.total() == orrery::testing::Approx(gpu.memory.total() - gpu.memory.optimizer_bytes));
  // The 8-layer model's 2.1B parameters: 4 B gradients down and 2 B weights up over PCIe 5.0
  // (64 GB/s), 30 B of Adam traffic at 70% of the host's 76.8 GB/s share: the host is the bottleneck.
  const double n = chunk_params(sc.model, sc.plan, 0).total();
  const double down = n * 4 / 64e9, host = n * 30 / (0.7 * 614.4e9 / 8), up = n * 2 / 64e9;
  CHECK(offloaded_optimizer_seconds(sc.plan, sc.gpu, n, 8) == orrery::testing::Approx(host + (down + up) / 8));
  CHECK(cpu.stages[0].optimizer_s == orrery::testing::Approx(host + (down + up) / 8).epsilon(1e-6));
  CHECK(cpu.step_time > gpu.step_time);
  sc.gpu = HardwareCatalog::builtin().gpu("MI300X");
  CHECK_THROWS_WITH_AS(step(sc), doctest::Contains("/plan/optimizer_offload: cpu offload needs the MI300X's host"), sim::InputError);
  sc.gpu = HardwareCatalog::builtin().gpu("H100");
  sc.gpu.host_memory_bytes = 4 * 1073741824.0;
  CHECK_THROWS_WITH_AS(step(sc), doctest::Contains("cpu offload of 31.2 GiB of optimizer states per GPU does not fit the 4.0 GiB of host memory each H100 has"),
                       sim::InputError);
}

TEST_CASE("hybrid, window and MTP shapes: bad input named") {
  ModelSpec m = model("nemotron-3-nano");
  m.layer_pattern[3] = 'X';
  CHECK_THROWS_WITH_AS(validate_model(m, "m.json", "/model"),
                       doctest::Contains("m.json:/model: model \"nemotron-3-nano\": layer_pattern: found \"X\" at position 4, expected M (Mamba-2), "
                                         "* (attention), - (MLP) or E (MoE)"),
                       sim::InputError);
  m = model("nemotron-3-nano");
  m.layer_pattern.pop_back();
  CHECK_THROWS_WITH_AS(validate_model(m, "m.json", "/model"), doctest::Contains("found 51 letters, expected one per layer (layers=52)"),
                       sim::InputError);
  m = model("nemotron-3-nano");
  m.mamba.heads = 0;
  CHECK_THROWS_WITH_AS(validate_model(m, "m.json", "/model"), doctest::Contains("found M at position 1, but the model has no mamba section"),
                       sim::InputError);
  // A window longer than the sequence.
  StepScenario sc = on_h100("gpt-oss-20b", 8, 8, 8, 4096, "dgx-h100:nodes=1");
  sc.model.sliding_window = 8192;
  CHECK_THROWS_WITH_AS(step(sc), doctest::Contains("/plan/seq_len: gpt-oss-20b's sliding window of 8192 tokens is longer than seq_len 4096"),
                       sim::InputError);
  // Context parallelism over Mamba-2 layers.
  StepScenario h = on_h100("nemotron-3-nano", 4, 1, 8, 8192, "dgx-h100:nodes=1");
  h.plan.cp = 2;
  CHECK_THROWS_WITH_AS(step(h), doctest::Contains("/plan/cp: cp=2: context parallelism over nemotron-3-nano's Mamba-2 layers is not modelled"),
                       sim::InputError);
}

// DeepEP's dispatch sends a token across the network once per node it reaches; with top-8
// experts over 8 nodes NCCL's all-to-all sends each of its 7 remote copies: the step is faster.
// Its compute differs only by the all-to-all dispatcher's regrouping passes, which DeepEP does not
// make (checked exactly in "the all-to-all dispatcher's regrouping passes").
TEST_CASE("moe_dispatch deepep: fewer network bytes across nodes") {
  StepScenario ds;
  ds.model = model("deepseek-v3");
  ds.model.layers = 8;
  ds.gpu = HardwareCatalog::builtin().gpu("H100");
  ds.plan.dp = 64;
  ds.plan.ep = 64;
  ds.plan.global_batch = 64;
  ds.plan.seq_len = 4096;
  ds.plan.recompute = Recompute::full;
  ds.topology = "dgx-h100:nodes=8";
  const StepResult nccl = step(ds);
  ds.plan.moe_dispatch = "deepep";
  const StepResult deepep = step(ds);
  CHECK(deepep.step_time < nccl.step_time);
  CHECK(deepep.stages[0].compute_s < nccl.stages[0].compute_s);
  CHECK(deepep.stages[0].exposed_comm_s < nccl.stages[0].exposed_comm_s);
  // Imbalance slows DeepEP too.
  ds.plan.expert_imbalance = 1.5;
  CHECK(step(ds).step_time > deepep.step_time);
  // A bad name is an input error naming the field.
  ds.plan.moe_dispatch = "deepepp";
  CHECK(orrery::testing::error_of([&] { validate_plan(ds.plan, ds.model, 64, "s.json", "/plan"); })
            .find("s.json:/plan/moe_dispatch: found \"deepepp\", expected nccl or deepep") != std::string::npos);
}

// Korthikanti et al. 2022 (Figure 1): activation and weight+optimizer memory per GPU.
TEST_CASE("memory model against Korthikanti et al. 2022") {
  const std::string path = std::string(ORRERY_SOURCE_DIR) + "/../shared/data/megatron-lm/korthikanti2022_selective_recompute_a100.csv";
  if (!std::filesystem::exists(path)) {
    orrery::testing::record_skip("../shared/data/megatron-lm is absent");
    return;
  }
  const traces::CsvTable t = traces::read_csv_file(path);
  int checked = 0;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const std::string mode = t.at(r, "recompute_mode");
    if (t.at(r, "activations_gib_per_gpu").empty() || (mode != "none" && mode != "seq+selective")) continue;
    ModelSpec m;
    m.name = t.at(r, "model");
    m.layers = static_cast<int>(t.number(r, "num_layers"));
    m.hidden = static_cast<std::int64_t>(t.number(r, "hidden"));
    m.heads = static_cast<int>(t.number(r, "attn_heads"));
    m.kv_heads = m.heads;
    m.head_dim = static_cast<std::int64_t>(t.number(r, "head_dim"));
    m.ffn_hidden = static_cast<std::int64_t>(t.number(r, "ffn_hidden"));
    m.vocab = 51200;
    m.mlp = MlpKind::gelu;
    m.tied_embeddings = true;
    ParallelPlan p;
    p.tp = static_cast<int>(t.number(r, "tensor_par"));
    p.pp = static_cast<int>(t.number(r, "pipeline_par"));
    p.dp = static_cast<int>(t.number(r, "data_par"));
    p.vp = static_cast<int>(t.number(r, "pipeline_interleaving"));
    p.micro_batch = static_cast<int>(t.number(r, "micro_batch"));
    p.global_batch = static_cast<int>(t.number(r, "global_batch"));
    p.seq_len = static_cast<std::int64_t>(t.number(r, "seq_len"));
    p.flash_attention = false;
    p.sequence_parallel = mode == "seq+selective";
    p.recompute = mode == "seq+selective" ? Recompute::selective : Recompute::none;
    const auto schedule = policies::pipeline_schedules().create(p.vp > 1 ? "interleaved-1f1b" : "1f1b", {}, {"test", ""});
    const PipelinePlan order = schedule->plan({p.pp, p.micro_batches(), p.vp}, "test", "");
    const MemoryEstimate e = estimate_memory(p, m, order);
    const double gib = 1073741824.0;
    CAPTURE(m.name);
    CAPTURE(mode);
    CHECK(e.activations_bytes / gib == orrery::testing::Approx(t.number(r, "activations_gib_per_gpu")).epsilon(0.01));
    // 18 bytes per parameter (bf16 weights, fp32 grads, fp32 master and moments; DP = 1). The
    // paper counts the transformer layers only; the first stage also holds the embedding.
    const double embedding = static_cast<double>(m.vocab * m.hidden) / p.tp * 18;
    CHECK(e.stage == 0);
    CHECK((e.params_bytes + e.grads_bytes + e.optimizer_bytes - embedding) / gib ==
          orrery::testing::Approx(t.number(r, "params_and_optimizer_gib_per_gpu")).epsilon(0.001));
    ++checked;
  }
  CHECK(checked == 8);
}

// Megatron's --recompute-modules layernorm and moe_act (the Megatron-Bridge GPT-OSS recipes'):
// each keeps less and reruns a forward kernel in the backward. GPT-OSS 20B on 8 H100 at EP 8, one
// sequence of 4,096 tokens per GPU, bf16: per layer and token, layernorm drops the pre-MLP norm's
// output (the router's input, 2 x hidden bytes), moe_act each routed copy's fc2 input (top 4 x 2 x
// expert_ffn bytes); attention's input norm is fused into QKV, nothing to drop there.
TEST_CASE("selective recompute's modules: layernorm and moe_act keep less and rerun their forward") {
  StepScenario sc = on_h100("gpt-oss-20b", 8, 8, 8, 4096, "dgx-h100:nodes=1");
  sc.model.glu_clamp = 0;  // its eager clamps, rerun too, are checked by "a clamped GLU's eager passes"
  const ModelSpec& m = sc.model;
  sc.plan.recompute = Recompute::selective;  // core_attn alone: nothing to drop under flash attention
  const StepResult core = step(sc);
  sc.plan.recompute = Recompute::none;
  const StepResult none = step(sc);
  CHECK(core.memory.activations_bytes == none.memory.activations_bytes);
  CHECK(core.step_time == none.step_time);
  const double per_token_layer = static_cast<double>(4096 * m.layers);
  sc.plan.recompute = Recompute::selective;
  sc.plan.recompute_modules = {.core_attn = false, .layernorm = true};
  const StepResult norm = step(sc);
  CHECK(none.memory.activations_bytes - norm.memory.activations_bytes ==
        orrery::testing::Approx(per_token_layer * 2 * static_cast<double>(m.hidden)).epsilon(1e-9));
  sc.plan.recompute_modules = {.core_attn = false, .moe_act = true};
  const StepResult act = step(sc);
  CHECK(none.memory.activations_bytes - act.memory.activations_bytes ==
        orrery::testing::Approx(per_token_layer * m.moe.top_k * 2 * static_cast<double>(m.moe.expert_ffn)).epsilon(1e-9));
  // The reruns are memory-bound kernels: slower, by less than 3% of the step.
  CHECK(norm.step_time > none.step_time);
  CHECK(act.step_time > none.step_time);
  CHECK(act.step_time.to_seconds() < 1.03 * none.step_time.to_seconds());
  sc.plan.recompute_modules = {.core_attn = false, .layernorm = true, .moe_act = true};
  const StepResult both = step(sc);
  CHECK(none.memory.activations_bytes - both.memory.activations_bytes ==
        orrery::testing::Approx((none.memory.activations_bytes - norm.memory.activations_bytes) +
                                (none.memory.activations_bytes - act.memory.activations_bytes)).epsilon(1e-9));
  CHECK(both.step_time > act.step_time);
}

TEST_CASE("selective recompute's whole modules: moe, mlp and mla_up_proj keep their inputs alone and rerun their forward") {
  // moe: a MoE layer keeps only its input (the pre-MLP norm's output, bf16: as much as the router's
  // input it replaces), so each layer drops its routed copies' tensors: top_k x (fc1's outputs
  // 4 f, fc2's input 2 f, the dispatched input 2 h) per token.
  StepScenario sc = on_h100("gpt-oss-20b", 8, 8, 8, 4096, "dgx-h100:nodes=1");
  const ModelSpec& m = sc.model;
  const StepResult none = step(sc);
  sc.plan.recompute = Recompute::selective;
  sc.plan.recompute_modules = {.core_attn = false, .moe = true};
  const StepResult moe = step(sc);
  const double fe = static_cast<double>(m.moe.expert_ffn), h = static_cast<double>(m.hidden);
  CHECK(none.memory.activations_bytes - moe.memory.activations_bytes ==
        orrery::testing::Approx(4096.0 * m.layers * m.moe.top_k * (6 * fe + 2 * h)).epsilon(1e-9));
  // Its forward reruns, its dispatch and combine too: slower than moe_act's rerun alone.
  sc.plan.recompute_modules = {.core_attn = false, .moe_act = true};
  const StepResult act = step(sc);
  CHECK(moe.step_time > act.step_time);
  CHECK(moe.stages[0].exposed_comm_s > none.stages[0].exposed_comm_s);
  // With layernorm too, the norm's output (the moe checkpoint's input) is not kept either.
  sc.plan.recompute_modules = {.core_attn = false, .layernorm = true, .moe = true};
  CHECK(moe.memory.activations_bytes - step(sc).memory.activations_bytes ==
        orrery::testing::Approx(4096.0 * m.layers * 2 * h).epsilon(1e-9));
  // DeepSeek-V3 cut to 4 layers (3 dense, 1 MoE) on 8 GPUs: mlp drops a dense layer's MLP
  // tensors (fc1's input 2 h, its outputs 4 f, fc2's input 2 f); mla_up_proj drops Q, K and V,
  // rebuilt from the kept latents.
  StepScenario ds = on_h100("deepseek-v3", 8, 8, 8, 4096, "dgx-h100:nodes=1");
  ds.model.layers = 4;
  const ModelSpec& d = ds.model;
  const StepResult d_none = step(ds);
  ds.plan.recompute = Recompute::selective;
  ds.plan.recompute_modules = {.core_attn = false, .mlp = true};
  const StepResult d_mlp = step(ds);
  const double f = static_cast<double>(d.ffn_hidden), dh = static_cast<double>(d.hidden);
  CHECK(d_none.memory.activations_bytes - d_mlp.memory.activations_bytes ==
        orrery::testing::Approx(4096.0 * d.moe.dense_layers * (2 * dh + 6 * f)).epsilon(1e-9));
  CHECK(d_mlp.step_time > d_none.step_time);
  ds.plan.recompute_modules = {.core_attn = false, .mla_up_proj = true};
  const StepResult d_mla = step(ds);
  const double heads = d.heads, qk = static_cast<double>(d.qk_head_dim()), v = static_cast<double>(d.v_head_dim());
  CHECK(d_none.memory.activations_bytes - d_mla.memory.activations_bytes ==
        orrery::testing::Approx(4096.0 * d.layers * (2 * (2 * heads * qk) + 2 * heads * v)).epsilon(1e-9));
  CHECK(d_mla.step_time > d_none.step_time);
  // Reruns cost less than rerunning every layer's forward.
  ds.plan.recompute = Recompute::full;
  CHECK(d_mla.step_time < step(ds).step_time);
}

TEST_CASE("memory: ZeRO shards, recompute shrinks activations, OOM is reported") {
  StepScenario sc = small(1, 1, 8, 2);
  sc.model = model("llama3-8b");
  const StepResult z1 = step(sc);
  sc.plan.zero = 0;
  const StepResult z0 = step(sc);
  CHECK(z0.memory.optimizer_bytes == orrery::testing::Approx(8 * z1.memory.optimizer_bytes));
  sc.plan.zero = 3;
  const StepResult z3 = step(sc);
  CHECK(z3.memory.params_bytes == orrery::testing::Approx(z1.memory.params_bytes / 8));
  // ZeRO-3 holds full bf16 parameters of the layer computing and the one prefetched: two of the
  // 32 layer pieces run_step gathers (one stage: its parameters over its layers).
  CHECK(z1.memory.gathered_params_bytes == 0);
  CHECK(z3.memory.gathered_params_bytes == orrery::testing::Approx(2 * 2 * z3.memory.params_per_gpu / 32).epsilon(1e-12));
  sc.plan.overlap_param_gather = false;  // a whole chunk at a time
  CHECK(step(sc).memory.gathered_params_bytes == orrery::testing::Approx(2 * z3.memory.params_per_gpu).epsilon(1e-12));
  sc.plan.overlap_param_gather = true;
  sc.plan.zero = 1;
  sc.plan.recompute = Recompute::full;
  CHECK(step(sc).memory.activations_bytes < z1.memory.activations_bytes / 5);
  sc.plan.recompute = Recompute::none;
  sc.model = model("llama3-70b");
  sc.plan.seq_len = 8192;
  const StepResult big = step(sc);
  CHECK(big.oom);
  CHECK(big.memory.total() > 80e9);
}

namespace {

// Llama 3.1 8B on one pipeline stage, one micro-batch of `batch` sequences of 8192 tokens.
ParallelPlan llama8b_plan(int tp, int dp, int batch) {
  ParallelPlan p;
  p.tp = tp;
  p.dp = dp;
  p.micro_batch = batch;
  p.global_batch = batch * dp;
  p.seq_len = 8192;
  p.sequence_parallel = tp > 1;
  return p;
}

MemoryEstimate memory_of(const ParallelPlan& p, const ModelSpec& m) {
  const auto schedule = policies::pipeline_schedules().create(p.vp > 1 ? "interleaved-1f1b" : "1f1b", {}, {"test", ""});
  return estimate_memory(p, m, schedule->plan({p.pp, p.micro_batches(), p.vp}, "test", ""));
}

}  // namespace

// torchtitan's per-op selective AC keeps, per layer and token: the input (2h), the outputs of the
// 1st, 3rd, 5th and 7th matmuls in bf16 (Llama's wq: 4096, wv: 1024, w1: 14336, w2: 4096), the
// flash attention's output (2 x 4096) and its fp32 log-sum-exp per head (4 x 32). Under tensor
// parallelism with sequence parallelism the input and the two reduce-scattered outputs are split
// by tp, the column-parallel outputs too, w2's output (row-parallel, before its reduce-scatter) not.
TEST_CASE("memory: torchtitan's per-op selective recompute keeps every other matmul's output") {
  const ModelSpec& m = model("llama3.1-8b");
  ParallelPlan p = llama8b_plan(1, 8, 2);
  p.recompute = Recompute::op_selective;
  const double tokens = 2 * 8192.0;
  CHECK(layer_activation_bytes(p, m, 0) == orrery::testing::Approx(tokens * (2 * 4096 + 2 * (4096 + 1024 + 14336 + 4096) + 2 * 4096 + 4 * 32)));
  p = llama8b_plan(8, 8, 2);
  p.recompute = Recompute::op_selective;
  const double per_token = 2 * 4096 / 8.0 + 2 * ((4096 + 1024 + 14336) / 8.0 + 4096) + 2 * 4096 / 8.0 + 4 * 32 / 8.0 + 2 * (2 * 4096 / 8.0);
  CHECK(layer_activation_bytes(p, m, 0) == orrery::testing::Approx(tokens * per_token));
  // More than full recompute (the input only), less than none.
  p.recompute = Recompute::full;
  const double full = layer_activation_bytes(p, m, 0);
  p.recompute = Recompute::none;
  CHECK(tokens * per_token > full);
  CHECK(tokens * per_token < layer_activation_bytes(p, m, 0));
  CHECK(to_string(Recompute::op_selective) == "op-selective");
}

// A layer's backward holds, beside what it kept, what its recompute rebuilds (its activations
// without recompute less the kept ones) and the gradients in flight: of its input and output (2h
// each) and of its largest sublayer's first GEMM's outputs (Llama's SwiGLU: w1 and w3, 2 x 2f,
// larger than Q, K and V's 2 x (4096 + 1024 + 1024)).
TEST_CASE("memory: a layer's backward, its recompute and gradients in flight") {
  const ModelSpec& m = model("llama3.1-8b");
  ParallelPlan p = llama8b_plan(1, 8, 1);
  const double tokens = 8192, grads = tokens * (2 * 2 * 4096 + 2 * 2 * 14336);
  CHECK(layer_backward_bytes(p, m, 0) == orrery::testing::Approx(grads));  // no recompute: the gradients only
  const double all = layer_activation_bytes(p, m, 0);
  for (const Recompute rc : {Recompute::full, Recompute::op_selective}) {
    p.recompute = rc;
    CAPTURE(to_string(rc));
    CHECK(layer_backward_bytes(p, m, 0) == orrery::testing::Approx(all - layer_activation_bytes(p, m, 0) + grads));
  }
  // Megatron's selective recompute with flash attention rebuilds nothing flash does not.
  p.recompute = Recompute::selective;
  CHECK(layer_backward_bytes(p, m, 0) == orrery::testing::Approx(grads));
}

// The loss's backward on the last stage, per logit of one micro-batch (tokens x vocab / tp):
// Megatron's fused cross entropy 4 bytes (the fp32 softmax, gradient in place); PyTorch's eager
// F.cross_entropy on logits.float() 12 (log-probabilities, nll_loss's dense gradient, log_softmax's),
// 16 with loss_parallel under TP (also exp() and a sum); compiled 4 (bf16 logits and gradient).
// With them the final norm's and output layer's inputs (2h each, sequence-parallel). The peak
// takes the larger of the loss's backward and a layer's, never both.
TEST_CASE("memory: the loss's working set by cross entropy implementation") {
  const ModelSpec& m = model("llama3.1-8b");
  const double V = 128256, h = 4096;
  for (const int tp : {1, 8}) {
    ParallelPlan p = llama8b_plan(tp, 8, 2);
    const double tokens = 2 * 8192.0, inputs = tokens * 2 * 2 * h / tp;
    const std::vector<std::pair<std::string, double>> kinds = {{"fused", 4}, {"unfused", 4}, {"eager", tp > 1 ? 16 : 12}, {"compiled", 4}};
    for (const auto& [kind, bytes] : kinds) {
      p.cross_entropy = kind;
      CAPTURE(kind);
      CAPTURE(tp);
      const MemoryEstimate e = memory_of(p, m);
      CHECK(e.logits_bytes == orrery::testing::Approx(tokens * V / tp * bytes + inputs));
      CHECK(e.total() == orrery::testing::Approx(e.params_bytes + e.grads_bytes + e.optimizer_bytes + e.gathered_params_bytes +
                                                 e.activations_bytes + std::max(e.logits_bytes, e.backward_bytes)));
    }
  }
  ParallelPlan bad = llama8b_plan(1, 8, 2);
  bad.cross_entropy = "chunked";
  CHECK(orrery::testing::error_of([&] { validate_plan(bad, m, 8, "s.json", "/plan"); })
            .find("s.json:/plan/cross_entropy: found \"chunked\", expected fused, unfused, eager or compiled") != std::string::npos);
}

// Megatron's cross entropy without its loss fusion runs op by op over the fp32 logits: 38 bytes
// per logit forward and 14 backward against the fused kernel's 6 and 6, so the loss's forward on
// the last stage grows by 32 bytes per logit at the GPU's memory-bound speed (and the backward by
// 8), while the memory stays the same.
TEST_CASE("loss: Megatron's unfused cross entropy, op by op") {
  StepScenario sc = small(1, 1, 1, 1);
  sc.model.layers = 1;
  const StepResult fused = step(sc);
  sc.plan.cross_entropy = "unfused";
  const StepResult unfused = step(sc);
  CHECK(unfused.step_time > fused.step_time);
  CHECK(unfused.memory.total() == fused.memory.total());
  const RooflineCostModel cost(sc.gpu);
  const double logits = static_cast<double>(sc.plan.micro_batch * sc.plan.seq_len) * static_cast<double>(sc.model.vocab);
  const auto ce = [&](double bytes) { return cost.time(Kernel::memory_bound(KernelKind::cross_entropy, sim::Bytes(logits * bytes), DType::bf16)).to_seconds(); };
  // Under the default (isolated-kernel) roofline the added time is the eight kernels' less the two's.
  const double added = ce(6) + ce(4) + ce(8) + ce(8) + ce(4) + ce(8) + ce(8) + ce(6) - 2 * ce(6);
  CHECK(unfused.step_time.to_seconds() - fused.step_time.to_seconds() == orrery::testing::Approx(added).epsilon(0.02));
}

// FSDP2 as torchtitan applies it: the sharded parameters are the fp32 master weights, so 16 bytes
// per parameter over the data-parallel group (4 weights, 4 gradients, 8 moments) where Megatron
// holds 18 (2 + 4 + 12). Without PP two transformer layers gathered in bf16 (the running and the
// prefetched), and in the backward the root gathered (the embedding, final norm and output
// layer: 2 bytes each) with the output layer's bf16 gradient, and one layer's gradients in bf16
// and their fp32 reduce-scatter copy (6 bytes per parameter). Under PP the stage's parameters
// stay gathered (2 bytes each) and its gradients accumulate unsharded in fp32 (4 bytes each).
TEST_CASE("memory: FSDP2's states, gathered parameters and unsharded gradients") {
  const ModelSpec& m = model("llama3.1-8b");
  ParallelPlan p = llama8b_plan(1, 8, 1);
  p.zero = 3;
  p.recompute = Recompute::full;
  const MemoryEstimate megatron = memory_of(p, m);
  p.sharding = "fsdp2";
  const MemoryEstimate fsdp = memory_of(p, m);
  const double n = static_cast<double>(m.params()), table = 128256.0 * 4096, block = (n - 2 * table - 4096) / 32;
  CHECK(megatron.params_bytes + megatron.grads_bytes + megatron.optimizer_bytes == orrery::testing::Approx(18 * n / 8));
  CHECK(fsdp.params_bytes == orrery::testing::Approx(4 * n / 8));
  CHECK(fsdp.grads_bytes == orrery::testing::Approx(4 * n / 8));
  CHECK(fsdp.optimizer_bytes == orrery::testing::Approx(8 * n / 8));
  CHECK(fsdp.gathered_params_bytes == orrery::testing::Approx(2 * 2 * block));
  CHECK(fsdp.backward_bytes == orrery::testing::Approx(layer_backward_bytes(p, m, 0) + 6 * block + 2 * (2 * table + 4096) + 2 * table));
  CHECK(megatron.backward_bytes == orrery::testing::Approx(layer_backward_bytes(p, m, 0) + 4 * n / 32));  // a layer piece's fp32 gradients
  // Under PP (2 stages, 16 layers each) the peak is the last stage's (the loss): its output layer,
  // final norm and 16 layers.
  p.pp = 2;
  p.dp = 4;
  p.global_batch = 8;
  const MemoryEstimate staged = memory_of(p, m);
  const double stage = table + 4096 + 16 * block;
  CHECK(staged.stage == 1);
  CHECK(staged.gathered_params_bytes == orrery::testing::Approx(2 * stage));
  CHECK(staged.grads_bytes == orrery::testing::Approx(4 * stage / 4 + 4 * stage));
  // FSDP2 is ZeRO-3; a misspelt sharding names its field.
  p.zero = 1;
  CHECK(orrery::testing::error_of([&] { validate_plan(p, m, 8, "s.json", "/plan"); })
            .find("s.json:/plan/sharding: fsdp2 shards parameters, gradients and optimizer states (ZeRO-3); found zero=1") != std::string::npos);
  p.zero = 3;
  p.sharding = "fsdp";
  CHECK(orrery::testing::error_of([&] { validate_plan(p, m, 8, "s.json", "/plan"); })
            .find("s.json:/plan/sharding: found \"fsdp\", expected megatron or fsdp2") != std::string::npos);
}

namespace {

// Llama 3 8B (8 layers) on dp GPUs, m micro-batches per rank, at a ZeRO stage.
StepScenario zero_case(int zero, int dp, int m, std::int64_t seq, const std::string& topology, int pp = 1, const char* schedule = "1f1b") {
  StepScenario sc = small(1, pp, dp, m, schedule);
  sc.plan.zero = zero;
  sc.plan.seq_len = seq;
  sc.topology = topology;
  return sc;
}

}  // namespace

// ZeRO-1 (Megatron's distributed optimizer) accumulates the full gradients over the m
// micro-batches and reduce-scatters them once per step, then gathers the updated parameters
// once. ZeRO-2 partitions the gradients: each micro-batch's are reduce-scattered after its
// backward, m times ZeRO-1's gradient traffic (Rajbhandari et al., "ZeRO", SC'20, sec. 5.2).
// ZeRO-3 also partitions the parameters: each layer is gathered before its forward and again
// before its backward, every micro-batch (sec. 7.2.3; FSDP FULL_SHARD), and no gather follows
// the optimizer: m x (2 x P x 2 bytes + P x 4 bytes) per GPU.
TEST_CASE("ZeRO-2 and -3 move their data-parallel bytes every micro-batch") {
  const int m = 4;
  for (const char* schedule : {"1f1b", "zb-h1"}) {
    CAPTURE(schedule);
    const int pp = std::string(schedule) == "zb-h1" ? 2 : 1;
    const StepScenario base = zero_case(1, 16 / pp, m, 2048, "dgx-h100:nodes=2", pp, schedule);
    std::vector<StepResult> r;
    for (int zero = 0; zero <= 3; ++zero) {
      StepScenario sc = base;
      sc.plan.zero = zero;
      r.push_back(step(sc));
    }
    for (int stage = 0; stage < pp; ++stage) {
      CAPTURE(stage);
      const double params = chunk_params(base.model, base.plan, stage).total();
      const auto bytes = [&](int zero) { return r[static_cast<std::size_t>(zero)].stages[static_cast<std::size_t>(stage)].dp_bytes; };
      CHECK(bytes(0) == orrery::testing::Approx(params * 4).epsilon(1e-12));  // one all-reduce
      CHECK(bytes(1) == orrery::testing::Approx(params * 2 + params * 4).epsilon(1e-12));
      CHECK(bytes(2) == orrery::testing::Approx(params * 2 + m * params * 4).epsilon(1e-12));
      CHECK(bytes(3) == orrery::testing::Approx(m * (2 * params * 2 + params * 4)).epsilon(1e-12));
      // The DP stream's busy time grows with it.
      CHECK(r[2].stages[static_cast<std::size_t>(stage)].dp_comm_s > r[1].stages[static_cast<std::size_t>(stage)].dp_comm_s * 2);
      CHECK(r[3].stages[static_cast<std::size_t>(stage)].dp_comm_s > r[2].stages[static_cast<std::size_t>(stage)].dp_comm_s);
    }
    // The same bytes without overlap (one collective per op instead of one per layer).
    StepScenario sc = base;
    sc.plan.zero = 3;
    sc.plan.overlap_grad_reduce = false;
    sc.plan.overlap_param_gather = false;
    const StepResult plain = step(sc);
    CHECK(plain.stages[0].dp_bytes == orrery::testing::Approx(r[3].stages[0].dp_bytes).epsilon(1e-12));
    // Unoverlapped, every collective sits on the critical path.
    CHECK(plain.step_time > r[3].step_time);
  }
}

// Routed experts are replicated over the expert-data-parallel group only (dp x cp / ep ranks,
// ep_stride x ep apart), and their gradients reduced and shards gathered over it, after the
// dense parameters' over the data-parallel group. EP 8 on 64 H100 (8 servers): each expert's 8
// copies are one per server, so their ring runs NIC to NIC, where the dense parameters' ring over
// all 64 GPUs spreads over every NIC of a server.
TEST_CASE("expert gradients reduce over the expert-data-parallel group") {
  StepScenario sc = on_h100("qwen3-30b-a3b", 64, 8, 64, 4096, "dgx-h100:nodes=8");
  sc.model.layers = 4;
  sc.plan.zero = 1;
  const DpGroups g = dp_groups(sc.plan);
  CHECK(g.dense == 64);
  CHECK(g.dense_stride == 1);
  CHECK(g.expert == 8);
  CHECK(g.expert_stride == 8);
  ParallelPlan folded = sc.plan;  // ep 8 over tp 2 x dp 4: each expert once
  folded.tp = 2, folded.dp = 4, folded.sequence_parallel = true;
  CHECK(dp_groups(folded).expert == 1);
  ParallelPlan wide = sc.plan;  // tp 2, dp 32: EP groups 2 apart, experts' copies 16 apart
  wide.tp = 2, wide.dp = 32;
  CHECK(dp_groups(wide).expert == 4);
  CHECK(dp_groups(wide).expert_stride == 16);
  // The same bytes one per server take several times longer than over all 64 GPUs.
  FabricCosts fabric(sc.topology, CommModel::nccl);
  const double bytes = 512e6;
  CHECK(fabric.collective(CollectiveOp::reduce_scatter, bytes, 8, 8) > 3 * fabric.collective(CollectiveOp::reduce_scatter, bytes, 64, 1));
  const DpShare share = chunk_params(sc.model, sc.plan, 0);
  CHECK(share.expert > 0);
  CHECK(fabric.dp_collective(CollectiveOp::reduce_scatter, share, 2, g) ==
        orrery::testing::Approx(fabric.collective(CollectiveOp::reduce_scatter, share.dense * 2, 64, 1) +
                                fabric.collective(CollectiveOp::reduce_scatter, share.expert * 2, 8, 8))
            .epsilon(1e-12));
  // In the step: every bucket is two collectives, the experts' over their group, with the same
  // bytes as one over all GPUs; and the step waits longer for them.
  const auto schedule = policies::pipeline_schedules().create(sc.plan.schedule, {}, {"test", "/plan/schedule"});
  StepOptions o;
  o.keep_graph = true;
  const StepResult r = run_step(sc, RooflineCostModel(sc.gpu), *schedule, o);
  int dense = 0, experts = 0;
  for (const StepComm& c : r.comms) {
    if (c.p2p) continue;
    const bool mine = r.graph.name(c.task).find("(experts)") != std::string_view::npos;
    (mine ? experts : dense) += 1;
    CHECK(c.group_size == (mine ? 8 : 64));
    CHECK(c.group_stride == (mine ? 8 : 1));
  }
  CHECK(experts == dense);
  CHECK(experts > 0);
  CHECK(r.stages[0].dp_bytes == orrery::testing::Approx((share.dense + share.expert) * (2 + 4)).epsilon(1e-12));
  // EP 64: one copy of each expert, nothing of theirs to reduce.
  StepScenario unique = sc;
  unique.plan.ep = 64;
  CHECK(dp_groups(unique.plan).expert == 1);
  const StepResult u = run_step(unique, RooflineCostModel(unique.gpu), *schedule, o);
  for (const StepComm& c : u.comms) CHECK(u.graph.name(c.task).find("(experts)") == std::string_view::npos);
  const DpShare unique_share = chunk_params(unique.model, unique.plan, 0);
  CHECK(u.stages[0].dp_bytes == orrery::testing::Approx(unique_share.dense * (2 + 4)).epsilon(1e-12));
}

// Wide expert parallelism inside each NVL72 domain leaves one GPU of each expert-data-parallel
// group in a domain: the group runs on one compute tray per domain, NIC to NIC, beside the tray's
// other GPUs' groups. It costs as the same group of one GPU per DGX server at GB200's NIC rate
// (each GPU's own 400 Gb/s NIC), within 10%, and far more than the same bytes over whole trays.
TEST_CASE("expert-data-parallel groups of one GPU per NVL72 domain") {
  FabricCosts nvl72("nvl72:domains=8,gpus_per_domain=16", CommModel::nccl);
  FabricCosts dgx("dgx-b200:nodes=8", CommModel::nccl);
  const double bytes = 256e6;
  const double one_per_domain = nvl72.collective(CollectiveOp::reduce_scatter, bytes, 8, 16);
  CHECK(one_per_domain > 0);
  CHECK(one_per_domain == orrery::testing::Approx(dgx.collective(CollectiveOp::reduce_scatter, bytes, 8, 8)).epsilon(0.1));
  CHECK(one_per_domain > 3 * nvl72.collective(CollectiveOp::reduce_scatter, bytes, 32, 4));
  // Two per domain (8 apart in domains of 16), as the closed form costs them too.
  FabricCosts closed("nvl72:domains=8,gpus_per_domain=16", CommModel::nccl_closed);
  const double two_per_domain = nvl72.collective(CollectiveOp::all_gather, bytes, 16, 8);
  CHECK(closed.collective(CollectiveOp::all_gather, bytes, 16, 8) == orrery::testing::Approx(two_per_domain).epsilon(0.15));
  CHECK(two_per_domain > 0);
  // In a step: EP 16 inside each domain of 16, DP 32 over two domains' worth of replicas.
  StepScenario sc = on_h100("qwen3-30b-a3b", 32, 16, 64, 4096, "nvl72:domains=8,gpus_per_domain=16");
  sc.gpu = HardwareCatalog::builtin().gpu("GB200");
  sc.model.layers = 4;
  sc.plan.pp = 4;
  sc.plan.zero = 1;
  const DpGroups g = nvl72.dp_groups_of(sc.plan);
  CHECK(g.expert == 2);
  CHECK(g.expert_stride == 16);
  const auto schedule = policies::pipeline_schedules().create(sc.plan.schedule, {}, {"test", "/plan/schedule"});
  StepOptions o;
  o.keep_graph = true;
  const StepResult r = run_step(sc, RooflineCostModel(sc.gpu), *schedule, o);
  int experts = 0;
  for (const StepComm& c : r.comms) {
    if (c.p2p || r.graph.name(c.task).find("(experts)") == std::string_view::npos) continue;
    ++experts;
    CHECK(c.group_size == 2);
    CHECK(c.group_stride == 16);
  }
  CHECK(experts > 0);
}

// A slow network (25 Gb/s NICs), short sequences and many micro-batches: the step is bound by
// the data-parallel traffic, so it orders by the bytes above.
TEST_CASE("ZeRO stages on a communication-bound step: 3 slower than 2 slower than 1") {
  std::vector<double> t;
  for (int zero = 1; zero <= 3; ++zero) t.push_back(step(zero_case(zero, 16, 8, 1024, "dgx-h100:nodes=2,nic=25Gb/s")).step_time.to_seconds());
  CHECK(t[1] > t[0] * 2);
  CHECK(t[2] > t[1]);
}

// Long sequences on one server (NVLink): a layer's gather (and reduce-scatter) takes a fraction
// of its forward (backward), so prefetching one layer ahead hides it; ZeRO-3 pays one layer's
// gather before the first forward, as ZeRO-1 does.
TEST_CASE("ZeRO stages on a compute-bound step: the extra traffic hides") {
  std::vector<StepResult> r;
  for (int zero = 1; zero <= 3; ++zero) r.push_back(step(zero_case(zero, 8, 8, 8192, "dgx-h100:nodes=1")));
  const double z1 = r[0].step_time.to_seconds();
  CHECK(r[1].step_time.to_seconds() == orrery::testing::Approx(z1).epsilon(0.03));
  CHECK(r[2].step_time.to_seconds() == orrery::testing::Approx(z1).epsilon(0.03));
  CHECK(r[2].step_time >= r[1].step_time);
}

// Reuse stands for every rank under ZeRO-2 and -3 too.
TEST_CASE("ZeRO-2 and -3: reuse equals every rank") {
  for (int zero = 2; zero <= 3; ++zero) {
    StepScenario sc = small(2, 2, 2, 4, "zb-h1");
    sc.plan.zero = zero;
    CAPTURE(zero);
    CHECK(step(sc, true).step_time == step(sc, false).step_time);
  }
}

// ZeRO-0 and -1 step times are those from before ZeRO-2 and -3 communicated every micro-batch
// (this scenario through `orrery step --report` on the earlier build, whose defaults were the
// line-rate flows and step efficiency 0.6716 with 35 us per kernel, pinned here): ZeRO-1's
// parameter gathers still gate its first forward layer by layer, on a network slow enough to show it.
TEST_CASE("ZeRO-0 and -1 steps are unchanged by the ZeRO-2/3 communication") {
  StepScenario sc;
  sc.model = model("llama3-8b");
  sc.gpu = HardwareCatalog::builtin().gpu("H100");
  sc.plan.pp = 2;
  sc.plan.dp = 8;
  sc.plan.global_batch = 64;
  sc.plan.seq_len = 2048;
  sc.topology = "dgx-h100:nodes=2,nic=25Gb/s";
  const auto nanoseconds = [&](int zero) {
    sc.plan.zero = zero;
    const auto schedule = policies::pipeline_schedules().create("1f1b", {}, {"test", "/plan/schedule"});
    RooflineParams then;  // the isolated kernels' parameters with the step efficiency of then
    then.step_efficiency = 0.6716;
    then.kernel_overhead = sim::Duration::microseconds(35);
    then.attention_bwd_efficiency = 0.9434;  // before the softmax's share scaled with the GPU
    const RooflineCostModel cost(sc.gpu, then);
    StepOptions line_rate;
    line_rate.comm = CommModel::flows;
    return std::llround(run_step(sc, cost, *schedule, line_rate).step_time.to_seconds() * 1e9);
  };
  CHECK(nanoseconds(0) == 1122078073);
  CHECK(nanoseconds(1) == 1059803324);
}

// The step balancer (uneven micro-batches, used by `orrery compare` and the RL trainer) prices
// each op from its compute, so it must add ZeRO-3's per-micro-batch gathers itself (ZeRO-2's
// backlog is in the uniform step's tail): on the communication-bound case its uniform step
// orders 3 > 2 > 1 and tracks the emulator; on the compute-bound one the traffic hides.
TEST_CASE("the step balancer charges ZeRO-2 and -3 their per-micro-batch traffic") {
  const auto balanced = [](const StepScenario& sc) {
    const auto schedule = policies::pipeline_schedules().create(sc.plan.schedule, {}, {"test", "/plan/schedule"});
    const RooflineCostModel cost(sc.gpu);
    const StepBalancer b(sc, cost, *schedule);
    BatchPlacement uniform;
    uniform.ranks.assign(static_cast<std::size_t>(sc.plan.dp),
                         std::vector<MicroBatchPlan>(static_cast<std::size_t>(sc.plan.micro_batches()), MicroBatchPlan{{sc.plan.seq_len}}));
    return b.run(uniform, 0).step_s;
  };
  std::vector<double> slow, fast;
  for (int zero = 1; zero <= 3; ++zero) {
    CAPTURE(zero);
    const StepScenario bound = zero_case(zero, 16, 8, 1024, "dgx-h100:nodes=2,nic=25Gb/s");
    slow.push_back(balanced(bound));
    // ZeRO-1 and -2 gather the updated shards layer by layer at the step's start, and on this
    // NIC-bound case the first forward waits for them (0.21 s of the step).
    CHECK(slow.back() == orrery::testing::Approx(step(bound).step_time.to_seconds()).epsilon(0.15));
    fast.push_back(balanced(zero_case(zero, 8, 8, 8192, "dgx-h100:nodes=1")));
  }
  CHECK(slow[1] > slow[0] * 2);
  CHECK(slow[2] > slow[1]);
  CHECK(fast[1] == orrery::testing::Approx(fast[0]).epsilon(0.03));
  CHECK(fast[2] == orrery::testing::Approx(fast[0]).epsilon(0.03));
  // With a pipeline and interleaving each stage's chunks gather in turn, and a later stage's
  // first forward starts after its gathers have run for a while (the balancer is 13-14% above
  // the emulator here with or without ZeRO: its pipeline sends take the NIC's time alone).
  for (int zero = 0; zero <= 2; ++zero) {
    CAPTURE(zero);
    StepScenario sc = zero_case(zero, 8, 8, 1024, "dgx-h100:nodes=2,nic=25Gb/s", 2, "interleaved-1f1b");
    sc.plan.vp = 2;
    CHECK(balanced(sc) == orrery::testing::Approx(step(sc).step_time.to_seconds()).epsilon(0.15));
  }
}

// Issue 17 §6: how layers fall on stages, time to train, cluster sizes and the memory rule.
TEST_CASE("capacity helpers: layers per stage, time to train, scaled topologies, usable memory") {
  ModelSpec m = ModelCatalog::builtin().model("llama3-8b");  // 32 layers
  ParallelPlan p;
  p.pp = 3;
  CHECK(stage_layers(p, m) == std::vector<std::vector<int>>{{11}, {11}, {10}});
  CHECK(describe_stage_layers(p, m) == "11,11,10");
  // Interleaved: virtual stage vs runs on stage vs % pp; the first 32 % 6 = 2 take one more.
  p.vp = 2;
  CHECK(describe_stage_layers(p, m) == "6+5,6+5,5+5");
  // Deep pipelines in runs: 126 layers on 64 stages are 62 of 2 and 2 of 1.
  m.layers = 126;
  p.pp = 64;
  p.vp = 1;
  CHECK(describe_stage_layers(p, m) == "2x62,1x2");
  // Whole steps of global_batch x seq_len tokens, the last counted in full.
  p.global_batch = 4;
  p.seq_len = 1000;
  const TrainingTime t = training_time(10'001, p, 2.5);
  CHECK(t.steps == 3);
  CHECK(t.seconds == 7.5);
  CHECK(topology_with_gpus("dgx-h100:nodes=1,nic=200Gb/s", 256, "s.json", "/x") == "dgx-h100:nodes=32,gpus_per_node=8,nic=200Gb/s");
  CHECK(orrery::testing::error_of([] { (void)topology_with_gpus("dgx-h100:nodes=1", 12, "s.json", "/x"); })
            .starts_with("s.json:/x: found 12 GPUs, expected a positive multiple of the 8 GPUs per server"));
  // HBM less 2 GiB and 3%: 80 GB (74.5 GiB) leaves 70.3 GiB.
  const MemoryBudget b = memory_budget(HardwareCatalog::builtin().gpu("H100"));
  CHECK(b.usable_bytes == orrery::testing::Approx(0.97 * 80e9 - 2 * 1073741824.0));
  CHECK(b.describe() == "70.3 GiB usable (74.5 GiB HBM less a 4.2 GiB reserve)");
  MemoryEstimate e;
  e.params_bytes = b.usable_bytes;
  CHECK_FALSE(out_of_memory(e, HardwareCatalog::builtin().gpu("H100")));
  e.params_bytes = b.usable_bytes + 1;
  CHECK(out_of_memory(e, HardwareCatalog::builtin().gpu("H100")));
}

// CommModel::nccl: each collective as NCCL runs it (nccl.hpp), simulated as flows. A
// data-parallel ring across servers (one GPU each) pays NCCL's latency and the fitted NIC share,
// so it is slower than the line-rate flows, and its flows agree with NCCL's closed form.
TEST_CASE("CommModel::nccl: a cross-server ring pays NCCL's latency and NIC share, and agrees with the closed form") {
  FabricCosts nccl("dgx-h100:nodes=4", CommModel::nccl);
  FabricCosts line("dgx-h100:nodes=4", CommModel::flows);
  for (const double bytes : {4e6, 256e6}) {
    CAPTURE(bytes);
    const double t = nccl.collective(CollectiveOp::reduce_scatter, bytes, 4, 8);
    const NcclCost closed = nccl_cost(comm_shape(build_topology("dgx-h100:nodes=4,gpus_per_node=1"), CollectiveOp::reduce_scatter, 4), bytes);
    CHECK(t >= closed.latency_s);
    CHECK(t == testing::Approx(closed.time_s).epsilon(0.05));
    CHECK(t > line.collective(CollectiveOp::reduce_scatter, bytes, 4, 8));
  }
  // A whole step: NCCL's model is the default; line rate costs the same plan differently,
  // each deterministically.
  StepScenario sc = small(8, 1, 4, 4);
  const auto schedule = policies::pipeline_schedules().create(sc.plan.schedule, {}, {"test", "/plan/schedule"});
  const RooflineCostModel cost(sc.gpu);
  StepOptions o;
  o.comm = CommModel::nccl;
  const double a = run_step(sc, cost, *schedule, o).step_time.to_seconds();
  CHECK(a == step(sc).step_time.to_seconds());
  StepOptions l;
  l.comm = CommModel::flows;
  const double b = run_step(sc, cost, *schedule, l).step_time.to_seconds();
  CHECK(b == run_step(sc, cost, *schedule, l).step_time.to_seconds());
  CHECK(a != b);
}

// plan.grad_reduce: 16-bit gradients halve the data-parallel reduction's bytes and the gradient
// buffer; the reduction's time shrinks with them, the compute does not move.
TEST_CASE("grad_reduce bf16: half the gradient bytes, a shorter reduction, the same compute") {
  StepScenario sc = small(1, 1, 16, 2);  // two servers, one data-parallel group across them
  sc.plan.overlap_grad_reduce = false;   // the reduction after the last backward, all exposed
  const StepResult fp32 = step(sc);
  sc.plan.grad_reduce = "bf16";
  const StepResult bf16 = step(sc);
  CHECK(bf16.memory.grads_bytes == orrery::testing::Approx(fp32.memory.grads_bytes / 2).epsilon(1e-12));
  CHECK(bf16.stages[0].dp_bytes < fp32.stages[0].dp_bytes);
  CHECK(bf16.stages[0].compute_s == orrery::testing::Approx(fp32.stages[0].compute_s).epsilon(1e-9));
  CHECK(bf16.step_time < fp32.step_time);
  sc.plan.grad_reduce = "fp16";
  CHECK(step(sc).step_time == bf16.step_time);  // the same bytes
  sc.plan.grad_reduce = "fp8";
  CHECK(orrery::testing::error_of([&] { validate_plan(sc.plan, sc.model, 16, "s.json", "/plan"); })
            .find("s.json:/plan/grad_reduce: found \"fp8\", expected fp32, bf16 or fp16") != std::string::npos);
}

// Data-parallel collectives run beside the compute slow it by their unhidden share (overlap.dp):
// 1 leaves the step as it was; less lengthens the compute, by at most that share of the
// collectives' time; collectives that run with nothing beside them (not overlapped) slow nothing,
// and a step without data parallelism is untouched.
TEST_CASE("overlap.dp: overlapped data-parallel collectives slow the compute beside them") {
  const auto run_with = [](const StepScenario& s, double overlap_dp) {
    RooflineParams p;
    p.overlap_dp_efficiency = overlap_dp;
    const auto schedule = policies::pipeline_schedules().create(s.plan.schedule, {}, {"test", "/plan/schedule"});
    return run_step(s, RooflineCostModel(s.gpu, p), *schedule, {});
  };
  for (int zero : {1, 3}) {
    CAPTURE(zero);
    StepScenario sc = small(1, 1, 16, 4);  // two servers: the rings cross the NICs
    sc.plan.zero = zero;
    const StepResult hidden = run_with(sc, 1), half = run_with(sc, 0.5), none = run_with(sc, 0);
    CHECK(hidden.step_time == step(sc).step_time);
    const double busy = hidden.stages[0].dp_comm_s;
    REQUIRE(busy > 0);
    CHECK(half.stages[0].compute_s > hidden.stages[0].compute_s);
    CHECK(none.stages[0].compute_s > half.stages[0].compute_s);
    CHECK(half.stages[0].compute_s - hidden.stages[0].compute_s <= 0.5 * busy + 1e-9);
    CHECK(none.stages[0].compute_s - hidden.stages[0].compute_s <= busy + 1e-9);
    CHECK(half.step_time > hidden.step_time);
    CHECK(half.model_flops == hidden.model_flops);
    // Not overlapped: every collective on the critical path, beside no compute.
    sc.plan.overlap_grad_reduce = sc.plan.overlap_param_gather = false;
    CHECK(run_with(sc, 0.5).step_time == run_with(sc, 1).step_time);
  }
  const StepScenario alone = small(1, 1, 1, 4);
  CHECK(run_with(alone, 0.5).step_time == run_with(alone, 1).step_time);
  // The fitted parameter applies where the plan overlaps data-parallel collectives.
  CHECK(step_context(small(1, 1, 16, 4).plan).dp_overlap);
  CHECK_FALSE(step_context(alone.plan).dp_overlap);
}

// The host issues kernels ahead of the GPU: its time per kernel costs a step nothing while the
// GPU's queued work is longer, and sets the pace once it is shorter (each op then lasts its
// kernels' issue time); the closed-form estimate, built on the same op costs, agrees.
TEST_CASE("host issue time: hidden behind the GPU's work, the step's pace past it") {
  const StepScenario sc = small(1, 1, 1, 2);  // one H100, two micro-batches
  const auto schedule = policies::pipeline_schedules().create(sc.plan.schedule, {}, {"test", "/plan/schedule"});
  const auto at = [&](std::int64_t host_ns) { return run_step(sc, with_host(sc, host_ns), *schedule, {}).step_time.to_seconds(); };
  const double none = at(0);
  CHECK(at(1) == none);  // 1 ns per kernel: never the longer
  // A millisecond per kernel is past every op's GPU time: each further microsecond adds the same.
  const double a = at(1'000'000), b = at(2'000'000), c = at(3'000'000);
  CHECK(a > none);
  CHECK(b - a == orrery::testing::Approx(c - b).epsilon(1e-6));
  const auto estimate_at = [&](std::int64_t host_ns) { return estimate_step(sc, with_host(sc, host_ns), *schedule).step_time_s; };
  CHECK(estimate_at(1) == estimate_at(0));
  CHECK(estimate_at(3'000'000) - estimate_at(2'000'000) == orrery::testing::Approx(c - b).epsilon(1e-3));
  // A CUDA graph's kernels are issued by no one.
  StepScenario g = sc;
  g.plan.cuda_graphs = "full";
  CHECK(training_cost_model(g.gpu, step_context(g.plan))->host_issue_s() == 0);
  CHECK(training_cost_model(sc.gpu, step_context(sc.plan))->host_issue_s() > 0);
}

// A MoE layer's forward makes the host wait for the token counts, so its issue time cannot hide
// behind the next layer's long kernels: beside a heavy dense MLP layer, a host time the whole op
// hides changes nothing for a dense stack and slows the stack with a MoE layer.
TEST_CASE("host issue time: a MoE layer's forward waits for the device") {
  StepScenario sc = moe_on_one_h100(2);
  sc.model.ffn_hidden = 262144;  // the dense layer's MLP: long GEMMs
  const auto schedule = policies::pipeline_schedules().create(sc.plan.schedule, {}, {"test", "/plan/schedule"});
  const auto step_at = [&](const char* pattern, std::int64_t host_ns) {
    StepScenario s = sc;
    s.model.layer_pattern = pattern;
    return run_step(s, with_host(s, host_ns), *schedule, {}).stages[0].compute_s;
  };
  CHECK(step_at("--", 1'000'000) == step_at("--", 0));  // 1 ms per kernel hides behind the MLPs
  CHECK(step_at("E-", 1'000'000) > step_at("E-", 0));  // not behind the MoE layer's own kernels
}

// Per-layer CUDA graphs issue a graphed part's kernels with one launch a pass, so a host-bound
// MoE forward shortens with each part graphed; outside a graph the host issues one GEMM per
// local expert (Transformer Engine's multi-stream grouped GEMM, a C++ loop inside one module), so
// twice the experts cost at least one more millisecond of host_launch for each added expert, in
// both grouped GEMMs of both layers; with host_launch 0 the module's issue time does not grow
// with its experts.
TEST_CASE("host issue time: graphed layer parts, one GEMM per local expert") {
  const StepScenario sc = moe_on_one_h100(2);
  const auto schedule = policies::pipeline_schedules().create(sc.plan.schedule, {}, {"test", "/plan/schedule"});
  const auto compute = [&](const StepScenario& s, std::int64_t launch_ns = 1'000'000) {
    return run_step(s, with_host(s, 1'000'000, launch_ns), *schedule, {}).stages[0].compute_s;
  };
  const auto graphed = [&](const char* scope) {
    StepScenario s = sc;
    s.plan.cuda_graphs = scope;
    return compute(s);
  };
  CHECK(graphed("attn") < graphed("none"));
  CHECK(graphed("attn+moe_router") < graphed("attn"));
  CHECK(graphed("attn+moe_router+moe_preprocess") < graphed("attn+moe_router"));
  CHECK(graphed("moe") < graphed("moe_router"));
  CHECK(graphed("mamba") == graphed("none"));  // no Mamba layer to graph
  StepScenario half = sc;
  half.model.moe.experts /= 2;
  const double added = static_cast<double>(sc.model.moe.experts - half.model.moe.experts);
  CHECK(compute(sc) - compute(half) >= 2 * 2 * added * 1e-3);
  CHECK(std::abs(compute(sc, 0) - compute(half, 0)) < 0.1 * 2 * 2 * added * 1e-3);
}

// plan.precision: the linear layers' GEMMs at the precision's tensor-core peak, with their casts;
// attention, norms and the LM head stay in bf16. FP8 is faster than bf16 on a GEMM-bound plan,
// delayed scaling (no amax pass) faster than current scaling, and the memory holds the quantized
// weight copies while the kept linear inputs shrink.
TEST_CASE("precision: FP8 and NVFP4 GEMMs, their casts, their memory; bad pairs refused") {
  StepScenario sc = small(8, 1, 1, 4);
  sc.model.layers = 4;
  const StepResult bf16 = step(sc);
  sc.plan.precision = "fp8";
  const StepResult fp8 = step(sc);
  sc.plan.precision = "fp8-delayed";
  const StepResult delayed = step(sc);
  CHECK(fp8.step_time < bf16.step_time);
  CHECK(delayed.step_time < fp8.step_time);
  CHECK(fp8.model_flops == bf16.model_flops);  // the same model FLOPs, against the same bf16 peak
  CHECK(fp8.mfu > bf16.mfu);
  CHECK(fp8.memory.params_bytes > bf16.memory.params_bytes);            // + the FP8 copies, row- and column-wise
  CHECK(fp8.memory.activations_bytes < bf16.memory.activations_bytes);  // linear inputs kept in FP8
  CHECK(fp8.memory.optimizer_bytes == bf16.memory.optimizer_bytes);
  // fp8_param_gather: the parameters in FP8, their data-parallel gathers too.
  StepScenario dp = small(1, 1, 16, 2);
  dp.plan.precision = "fp8";
  const StepResult gather16 = step(dp);
  dp.plan.fp8_param_gather = true;
  const StepResult gather8 = step(dp);
  CHECK(gather8.stages[0].dp_bytes < gather16.stages[0].dp_bytes);
  CHECK(gather8.memory.params_bytes < gather16.memory.params_bytes);
  // On Blackwell: MXFP8 runs, NVFP4 (twice FP8's peak) is faster still.
  StepScenario bw = small(8, 1, 1, 4);
  bw.model.layers = 4;
  bw.gpu = HardwareCatalog::builtin().gpu("B200");
  bw.topology = "dgx-b200:nodes=1";
  bw.plan.precision = "mxfp8";
  const StepResult mx = step(bw);
  bw.plan.precision = "nvfp4";
  CHECK(step(bw).step_time < mx.step_time);
  // The weights' bytes: bf16, plus the quantized copies of the linear layers' weights: row- and
  // column-wise on Hopper (its FP8 GEMMs are TN only), one for per-tensor FP8 on Blackwell, two
  // for MXFP8 (block scales along the reduction dimension) there too. With fp8_param_gather the
  // linear weights are those copies and the embedding and output layer stay bf16.
  {
    ParallelPlan p = small(1, 1, 1, 2).plan;
    const ModelSpec m = model("llama3-8b");
    const auto schedule = policies::pipeline_schedules().create(p.schedule, {}, {"test", "/plan/schedule"});
    const PipelinePlan order = schedule->plan({p.pp, p.micro_batches(), p.vp}, "test", "");
    const auto weights = [&](const char* precision, bool any_layout, bool gather) {
      ParallelPlan q = p;
      q.precision = precision;
      q.fp8_param_gather = gather;
      return estimate_memory(q, m, order, any_layout).params_bytes;
    };
    const double all = static_cast<double>(m.params());
    const double embedding = static_cast<double>(m.vocab) * static_cast<double>(m.hidden) * (m.tied_embeddings ? 1 : 2);
    const double linear = all - embedding;
    CHECK(weights("bf16", false, false) == orrery::testing::Approx(2 * all));
    CHECK(weights("fp8", false, false) == orrery::testing::Approx(2 * all + 2 * linear));
    CHECK(weights("fp8", true, false) == orrery::testing::Approx(2 * all + linear));
    CHECK(weights("mxfp8", true, false) == orrery::testing::Approx(2 * all + 2 * (1 + 1.0 / 32) * linear));
    CHECK(weights("fp8", true, true) == orrery::testing::Approx(linear + 2 * embedding));
    CHECK(weights("fp8", false, true) == orrery::testing::Approx(2 * linear + 2 * embedding));
    CHECK(fp8_any_layout(HardwareCatalog::builtin().gpu("GB200")));
    CHECK_FALSE(fp8_any_layout(HardwareCatalog::builtin().gpu("H100")));
    // The attention's output, kept in bf16 for its backward: under Megatron the output
    // projection keeps that tensor too (a quantized copy besides only with delayed scaling);
    // under PyTorch its quantized input, as before.
    const double tokens = static_cast<double>(p.micro_batch) * static_cast<double>(p.seq_len);
    const double ho = static_cast<double>(m.heads * m.v_head_dim());
    const auto layer = [&](const char* precision, const char* framework) {
      ParallelPlan q = p;
      q.precision = precision;
      q.framework = framework;
      return layer_activation_bytes(q, m, 0);
    };
    CHECK(layer("fp8-delayed", "megatron") - layer("fp8", "megatron") == orrery::testing::Approx(tokens * ho));
    CHECK(layer("fp8", "megatron") - layer("fp8", "pytorch") == orrery::testing::Approx(tokens * ho));
    CHECK(layer("bf16", "megatron") == orrery::testing::Approx(layer("bf16", "pytorch")));
  }
  // Pairs the GPU cannot run, unknown names, a gather with nothing to gather in.
  const auto error = [](StepScenario s) { return orrery::testing::error_of([&] { step(s); }); };
  StepScenario a100 = small(8, 1, 1, 4);
  a100.gpu = HardwareCatalog::builtin().gpu("A100-80GB");
  a100.topology = "dgx-a100:nodes=1";
  a100.plan.precision = "fp8";
  CHECK(error(a100).find("/plan/precision: fp8 needs fp8 tensor cores (Hopper and later), which the A100-80GB lacks; on the A100-80GB: bf16") !=
        std::string::npos);
  sc.plan.precision = "nvfp4";
  CHECK(error(sc).find("/plan/precision: nvfp4 needs block-scaled tensor cores (Blackwell: B200, GB200, B300, GB300), which the H100 lacks; "
                       "on the H100: bf16, fp8, fp8-delayed, fp8-block") != std::string::npos);
  sc.plan.precision = "fp9";
  CHECK(error(sc).find("/plan/precision: found \"fp9\"; did you mean \"fp8\"?, expected one of bf16, fp8") != std::string::npos);
  sc.plan.precision = "bf16";
  sc.plan.fp8_param_gather = true;
  CHECK(error(sc).find("/plan/fp8_param_gather: fp8_param_gather needs a low precision; the plan's is bf16") != std::string::npos);
}

// bf16_layers and module_precision: Megatron's first_last_layers_bf16 and quant_recipe, as
// Megatron-Bridge's Nemotron 3 Super NVFP4 recipe sets them. A layer kept in bf16 costs what a
// bf16 plan's layer does; a module in another precision lands between the two.
TEST_CASE("bf16_layers and module_precision: layers and modules out of the plan's precision; bad ones refused") {
  StepScenario bw = small(8, 1, 1, 4);
  bw.model.layers = 4;
  bw.gpu = HardwareCatalog::builtin().gpu("B200");
  bw.topology = "dgx-b200:nodes=1";
  bw.plan.precision = "bf16";
  const double bf16 = step(bw).step_time.to_seconds();
  bw.plan.precision = "nvfp4";
  const double fp4 = step(bw).step_time.to_seconds();
  const auto with = [&](int first, int last, std::map<std::string, std::string, std::less<>> modules) {
    StepScenario s = bw;
    s.plan.bf16_layers_first = first;
    s.plan.bf16_layers_last = last;
    s.plan.module_precision = std::move(modules);
    return step(s).step_time.to_seconds();
  };
  const double last1 = with(0, 1, {}), last2 = with(0, 2, {}), all = with(1, 3, {});
  CHECK(fp4 < last1);
  CHECK(last1 < last2);
  CHECK(last2 < all);
  CHECK(all == orrery::testing::Approx(bf16).epsilon(1e-9));  // every layer in bf16: the bf16 plan's step
  CHECK(with(2, 0, {}) == orrery::testing::Approx(last2).epsilon(1e-9));  // which two layers does not matter here
  const double qkv = with(0, 0, {{"linear_qkv", "bf16"}});
  CHECK(fp4 < qkv);
  CHECK(qkv < all);
  const double fc1_mx = with(0, 0, {{"linear_fc1", "mxfp8"}}), fc1_bf16 = with(0, 0, {{"linear_fc1", "bf16"}});
  CHECK(fp4 < fc1_mx);
  CHECK(fc1_mx < fc1_bf16);
  // A kept layer ignores the module's precision: all four kept is the bf16 step, whatever the modules.
  CHECK(with(0, 4, {{"linear_fc1", "mxfp8"}}) == orrery::testing::Approx(bf16).epsilon(1e-9));
  // ... and runs its core attention outside the FP8 autocast: fp8_attention changes nothing there,
  // while it speeds up a layer in the low precision.
  bw.plan.fp8_attention = true;
  CHECK(with(0, 4, {}) == orrery::testing::Approx(bf16).epsilon(1e-9));
  CHECK(with(0, 0, {}) < fp4);
  bw.plan.fp8_attention = false;
  // The parameters a plan's step uses: an MXFP8 module in an NVFP4 plan adds MXFP8's GEMM efficiency.
  ParallelPlan mixed = bw.plan;
  mixed.module_precision = {{"mamba_out_proj", "mxfp8"}, {"linear_qkv", "bf16"}};
  CHECK(step_context(mixed).module_precisions == std::vector<std::string>{"mxfp8"});
  bool uses_mxfp8 = false;
  for (const StepParameterUse& u : step_parameter_uses(bw.gpu, step_context(mixed), builtin_step_parameters())) uses_mxfp8 |= u.kind == "gemm.mxfp8";
  CHECK(uses_mxfp8);

  const auto error = [](StepScenario s) { return orrery::testing::error_of([&] { step(s); }); };
  StepScenario bad = bw;
  bad.plan.bf16_layers_first = 3;
  bad.plan.bf16_layers_last = 2;
  CHECK(error(bad).find("/plan/bf16_layers: found first 3 and last 2, expected counts from 0 that add up to at most llama3-8b's 4 layers") !=
        std::string::npos);
  bad = bw;
  bad.plan.bf16_mtp = true;
  CHECK(error(bad).find("/plan/bf16_layers/mtp: llama3-8b has no multi-token prediction modules") != std::string::npos);
  bad = bw;
  bad.plan.precision = "bf16";
  bad.plan.bf16_layers_last = 1;
  CHECK(error(bad).find("/plan/bf16_layers: bf16_layers keeps layers out of a low precision; the plan's is bf16") != std::string::npos);
  bad = bw;
  bad.plan.module_precision = {{"linear_qk", "bf16"}};
  CHECK(error(bad).find("/plan/module_precision: found module \"linear_qk\"; did you mean \"linear_qkv\"?, expected one of linear_qkv, ") !=
        std::string::npos);
  bad.plan.module_precision = {{"linear_qkv", "fp4"}};
  CHECK(error(bad).find("/plan/module_precision/linear_qkv: found \"fp4\"") != std::string::npos);
  bad.plan.module_precision = {{"linear_qkv", "fp8"}};
  bad.plan.precision = "mxfp8";
  CHECK(error(bad).find("/plan/module_precision/linear_qkv: found fp8, which runs on the fp8 tensor cores as the plan's mxfp8 does") != std::string::npos);
  bad.plan.precision = "nvfp4";
  bad.plan.module_precision = {{"linear_qkv", "fp8"}, {"linear_proj", "mxfp8"}};
  CHECK(error(bad).find("/plan/module_precision/linear_qkv: found fp8 beside linear_proj's mxfp8, both on the fp8 tensor cores") != std::string::npos);
  bad.plan.module_precision = {{"experts", "mxfp8"}};
  CHECK(error(bad).find("/plan/module_precision/experts: llama3-8b has no experts layer: expected a module it has") != std::string::npos);
  StepScenario h100 = moe_on_one_h100(2);
  h100.plan.precision = "fp8";
  h100.plan.module_precision = {{"experts", "nvfp4"}};
  CHECK(error(h100).find("/plan/module_precision/experts: nvfp4 needs block-scaled tensor cores") != std::string::npos);
}

// pipeline_layout: Megatron's explicit layout, as Megatron-Bridge's DeepSeek-V3 recipe sets it for
// pp 4 x vp 4 (the embedding and 4 layers first, 4 on each middle stage, 1 with the MTP module and
// the loss last); bad layouts named.
TEST_CASE("pipeline_layout: layers per virtual stage as given, checked against the model") {
  const ModelSpec m = model("deepseek-v3-mtp");
  ParallelPlan p;
  p.pp = 4;
  p.vp = 4;
  p.dp = 1;
  p.ep = 1;
  p.global_batch = 16;
  p.schedule = "interleaved-1f1b";
  p.pipeline_layout = std::vector<int>(16, 4);
  p.pipeline_layout.back() = 1;
  validate_plan(p, m, 4, "s.json", "/plan");
  CHECK(layers_of(p, m, 0) == 4);
  CHECK(layers_of(p, m, 15) == 1);
  CHECK(first_layer_of(p, m, 15) == 60);
  CHECK(first_layer_of(p, m, 3) == 12);
  p.pipeline_layout.back() = 2;  // 62 layers for 61
  CHECK(orrery::testing::error_of([&] { validate_plan(p, m, 4, "s.json", "/plan"); })
            .find("s.json:/plan/pipeline_layout: the stages hold 62 layers, expected deepseek-v3-mtp's 61") != std::string::npos);
  p.pipeline_layout.pop_back();
  CHECK(orrery::testing::error_of([&] { validate_plan(p, m, 4, "s.json", "/plan"); })
            .find("/plan/pipeline_layout: found 15 stage counts, expected pp x vp = 4 x 4 = 16") != std::string::npos);
  p.pipeline_layout.push_back(-1);
  CHECK(orrery::testing::error_of([&] { validate_plan(p, m, 4, "s.json", "/plan"); })
            .find("/plan/pipeline_layout: found a stage of -1 layers, expected 0 to 61") != std::string::npos);
}

// split_embedding_and_loss: Megatron's pipeline-split flags count the embedding and the loss as
// a layer each. Llama 3.1 405B's 126 layers over pp 16 x vp 8 = 128 virtual stages: the first
// and the last hold none, every other one layer; without the flag the plan is refused.
TEST_CASE("split_embedding_and_loss: the embedding and the loss as pipeline layers") {
  ParallelPlan p;
  p.pp = 16;
  p.vp = 8;
  p.dp = 1;
  p.global_batch = 16;
  p.schedule = "interleaved-1f1b";
  const ModelSpec m = model("llama3-405b");
  CHECK(orrery::testing::error_of([&] { validate_plan(p, m, 16, "s.json", "/plan"); })
            .find("s.json:/plan/vp: pp=16 x vp=8 = 128 virtual stages for 126 layers; expected at most one stage per layer "
                  "(or split_embedding_and_loss") != std::string::npos);
  p.split_embedding_and_loss = true;
  validate_plan(p, m, 16, "s.json", "/plan");
  int total = 0;
  for (int vs = 0; vs < p.virtual_stages(); ++vs) {
    CAPTURE(vs);
    CHECK(layers_of(p, m, vs) == (vs == 0 || vs == 127 ? 0 : 1));
    total += layers_of(p, m, vs);
  }
  CHECK(total == 126);
  CHECK(first_layer_of(p, m, 127) == 126);
  // first_layer_of's closed form is the sum of the stages before, with and without the flag.
  for (const bool split : {false, true}) {
    for (const int stages : {1, 3, 7, 16, 63}) {
      ParallelPlan r;
      r.pp = stages;
      r.split_embedding_and_loss = split;
      int sum = 0;
      for (int vs = 0; vs < stages; ++vs) {
        CHECK(first_layer_of(r, m, vs) == sum);
        sum += layers_of(r, m, vs);
      }
      CHECK(sum == m.layers);
    }
  }
  // Uneven: 8 layers over 4 stages count 10 units, 3+3+2+2 less the embedding and the loss.
  ParallelPlan q;
  q.pp = 4;
  q.split_embedding_and_loss = true;
  ModelSpec small8 = model("llama3-8b");
  small8.layers = 8;
  CHECK(layers_of(q, small8, 0) == 2);
  CHECK(layers_of(q, small8, 1) == 3);
  CHECK(layers_of(q, small8, 2) == 2);
  CHECK(layers_of(q, small8, 3) == 1);
  // A whole step with such a plan runs, with the stages' layers as split.
  StepScenario sc = small(1, 4, 2, 4);
  sc.plan.split_embedding_and_loss = true;
  const StepResult r = step(sc);
  CHECK(r.step_time.to_seconds() > 0);
}

// Megatron-Core's recipe features (Megatron-Bridge's June 2026 GB200 MoE recipes): full-iteration
// CUDA graphs, the expert-parallel all-to-all beside the other micro-batch, the fused grouped
// MLP and FP8 attention, each changing what it should and nothing else; bad values named.
// A MoE model of `layers` layers on 8 GB200 of one NVLink domain at dp 8 and ep 8, sequences of
// 4096 tokens.
StepScenario gb200_ep8(const char* name, int layers, int micro_batch, int global_batch) {
  StepScenario sc;
  sc.model = model(name);
  sc.model.layers = layers;
  sc.gpu = HardwareCatalog::builtin().gpu("GB200");
  sc.topology = "nvl72:domains=1,gpus_per_domain=8";
  sc.plan.dp = 8;
  sc.plan.ep = 8;
  sc.plan.micro_batch = micro_batch;
  sc.plan.global_batch = global_batch;
  sc.plan.seq_len = 4096;
  return sc;
}

// The memory-bound kernels' time in a step's first stage: what halving the HBM efficiency adds to
// its compute (each kernel's overhead stays), with no host time and no data-parallel slowdown.
double memory_bound_s(const StepScenario& s) {
  RooflineParams p = training_roofline_params(s.gpu, step_context(s.plan));
  p.host_issue = sim::Duration::zero();
  p.overlap_dp_efficiency = 1;
  const auto compute_at = [&](double memory_efficiency) {
    RooflineParams q = p;
    q.memory_efficiency = memory_efficiency;
    const auto schedule = policies::pipeline_schedules().create(s.plan.schedule, {}, {"test", "/plan/schedule"});
    return run_step(s, RooflineCostModel(s.gpu, q), *schedule, {}).stages[0].compute_s;
  };
  return compute_at(p.memory_efficiency / 2) - compute_at(p.memory_efficiency);
}

TEST_CASE("recipe features: CUDA graphs, EP overlap, fused grouped MLP, FP8 attention") {
  StepScenario sc = gb200_ep8("qwen3-30b-a3b", 4, 2, 64);
  sc.plan.precision = "mxfp8";
  const auto run = [](const StepScenario& s) {
    const auto schedule = policies::pipeline_schedules().create(s.plan.schedule, {}, {"test", "/plan/schedule"});
    const auto cost = training_cost_model(s.gpu, step_context(s.plan));
    return run_step(s, *cost, *schedule, {});
  };
  const StepResult base = run(sc);
  // CUDA graphs: the same kernels, each paying the in-graph gap, none issued by the host.
  StepScenario g = sc;
  g.plan.cuda_graphs = "full";
  const RooflineParams host = training_roofline_params(sc.gpu, step_context(sc.plan));
  const RooflineParams graph = training_roofline_params(g.gpu, step_context(g.plan));
  CHECK(host.host_issue > sim::Duration::zero());
  CHECK(graph.host_issue == sim::Duration::zero());
  CHECK(graph.gemm_efficiency == host.gemm_efficiency);
  const StepResult graphed = run(g);
  CHECK(graphed.stages[0].compute_s < base.stages[0].compute_s);
  CHECK(graphed.model_flops == base.model_flops);
  // EP overlap: less exposed communication; the same compute where the host issues nothing
  // (with host time, what the all-to-all hid of a MoE forward's issue time shows: issue_bound).
  StepScenario o = sc;
  o.plan.overlap_ep_comm = true;
  const StepResult overlapped = run(o);
  CHECK(overlapped.stages[0].compute_s >= base.stages[0].compute_s);
  CHECK(overlapped.stages[0].exposed_comm_s < base.stages[0].exposed_comm_s);
  CHECK(overlapped.stages[0].compute_s + overlapped.stages[0].exposed_comm_s < base.stages[0].compute_s + base.stages[0].exposed_comm_s);
  const auto run_without_host = [](const StepScenario& s) {
    const auto schedule = policies::pipeline_schedules().create(s.plan.schedule, {}, {"test", "/plan/schedule"});
    return run_step(s, with_host(s, 0), *schedule, {});
  };
  const StepResult base_nh = run_without_host(sc), overlapped_nh = run_without_host(o);
  CHECK(overlapped_nh.stages[0].compute_s == orrery::testing::Approx(base_nh.stages[0].compute_s).epsilon(1e-6));  // to the ns per op
  CHECK(overlapped_nh.stages[0].exposed_comm_s < base_nh.stages[0].exposed_comm_s);
  // The overlapped all-to-alls hide by overlap_ep_efficiency, not by TP's overlap_efficiency:
  // at 0 they are all exposed again (as without the overlap); TP's share leaves them alone.
  const auto run_with = [&](const StepScenario& s, double overlap, double overlap_ep) {
    RooflineParams p = training_roofline_params(s.gpu, step_context(s.plan));
    p.host_issue = sim::Duration::zero();
    p.overlap_efficiency = overlap;
    p.overlap_ep_efficiency = overlap_ep;
    const auto schedule = policies::pipeline_schedules().create(s.plan.schedule, {}, {"test", "/plan/schedule"});
    return run_step(s, RooflineCostModel(s.gpu, p), *schedule, {});
  };
  CHECK(run_with(o, 1, 1e-9).stages[0].exposed_comm_s == orrery::testing::Approx(run_with(sc, 1, 1).stages[0].exposed_comm_s).epsilon(1e-6));
  CHECK(run_with(o, 0.5, 1).stages[0].exposed_comm_s == orrery::testing::Approx(run_with(o, 1, 1).stages[0].exposed_comm_s).epsilon(1e-6));
  CHECK(run_with(o, 1, 0.5).stages[0].exposed_comm_s > run_with(o, 1, 1).stages[0].exposed_comm_s);
  // The fused grouped MLP: fewer passes over the routed tokens, the same FLOPs.
  StepScenario f = sc;
  f.plan.fused_moe_mlp = true;
  const StepResult fused = run(f);
  CHECK(fused.stages[0].compute_s < base.stages[0].compute_s);
  CHECK(fused.model_flops == base.model_flops);
  // What it spares is the activation's kernels and two of the experts' four activation casts
  // (fc2's input, fc1's output gradient, which its kernels write quantized); fc1's input and
  // fc2's output gradient are still cast. The two steps' memory-bound times differ by exactly
  // those bytes: 4 MoE layers x 4 micro-batches of 2 x 4096 tokens, 8 routed copies each.
  {
    const RooflineParams p = training_roofline_params(sc.gpu, step_context(sc.plan));
    const double m = 2.0 * 4096 * 8, fe = 768, cast = 2 + 2 * precision_spec("mxfp8").bytes;
    const double activation = (3 + 5) * m * fe * 2, spared_casts = m * 2 * fe * cast + m * fe * cast;
    const double spared_s = 4 * 4 * (activation + spared_casts) / (sc.gpu.hbm_bandwidth * p.memory_efficiency * p.step_efficiency);
    CHECK(memory_bound_s(sc) - memory_bound_s(f) == orrery::testing::Approx(spared_s).epsilon(1e-4));
  }
  // FP8 attention: faster attention, less than twice as fast (its exponentials are bf16's).
  StepScenario a = sc;
  a.plan.fp8_attention = true;
  const StepResult fp8att = run(a);
  CHECK(fp8att.stages[0].compute_s < base.stages[0].compute_s);
  CHECK(fp8att.stages[0].compute_s * 2 > base.stages[0].compute_s);
  const RooflineCostModel cost(sc.gpu);
  const Kernel bf = Kernel::attention(Pass::forward, {8192}, 32, 4, 128, true, DType::bf16);
  const Kernel f8 = Kernel::attention(Pass::forward, {8192}, 32, 4, 128, true, DType::fp8);
  const RooflineCostModel::Terms tb = cost.terms(bf), t8 = cost.terms(f8);
  CHECK(tb.compute_s / t8.compute_s > 1.2);
  CHECK(tb.compute_s / t8.compute_s < 2);
  // Bad values named.
  const auto error = [](StepScenario s) { return orrery::testing::error_of([&] { validate_plan(s.plan, s.model, 8, "s.json", "/plan"); }); };
  StepScenario bad = sc;
  bad.plan.cuda_graphs = "partial";
  CHECK(error(bad).find("s.json:/plan/cuda_graphs: found \"partial\", expected none, full, or parts of a layer joined by '+' (attn, mlp") != std::string::npos);
  bad.plan.cuda_graphs = "attn+moe_router+attn";
  CHECK(error(bad).find("attn is listed twice") != std::string::npos);
  bad.plan.cuda_graphs = "attn+";
  CHECK(error(bad).find("found \"attn+\", expected none, full") != std::string::npos);
  bad = sc;
  bad.plan.precision = "bf16";
  bad.plan.fp8_attention = true;
  CHECK(error(bad).find("s.json:/plan/fp8_attention: fp8_attention needs a low precision") != std::string::npos);
}

TEST_CASE("EP overlap: the first forward and the last backward run their all-to-alls alone") {
  // Megatron-Core's combined 1F1B without pipelining pairs forward i+1 with backward i: of m
  // micro-batches, one forward and one backward have no partner and expose their all-to-alls
  // whole. With the overlap perfect (overlap_ep 1) and each partner longer than the all-to-alls
  // it hides, the exposed communication is the same for 4 and 8 micro-batches, and the part
  // the overlap hides is (m - 1) micro-batches' worth: 3 of the 4 that 4 more micro-batches add
  // without the overlap.
  const auto exposed = [](int global_batch, double overlap_ep) {
    StepScenario s = gb200_ep8("qwen3-30b-a3b", 4, 2, global_batch);
    s.plan.precision = "mxfp8";
    s.plan.overlap_ep_comm = true;
    RooflineParams p = training_roofline_params(s.gpu, step_context(s.plan));
    p.host_issue = sim::Duration::zero();
    p.overlap_ep_efficiency = overlap_ep;
    const auto schedule = policies::pipeline_schedules().create(s.plan.schedule, {}, {"test", "/plan/schedule"});
    return run_step(s, RooflineCostModel(s.gpu, p), *schedule, {}).stages[0].exposed_comm_s;
  };
  const double all4 = exposed(64, 1e-9), all8 = exposed(128, 1e-9);  // 4 and 8 micro-batches of 2 on 8 ranks
  const double hid4 = exposed(64, 1), hid8 = exposed(128, 1);
  const double per_micro_batch = (all8 - all4) / 4;
  CHECK(per_micro_batch > 0);
  CHECK(hid8 == orrery::testing::Approx(hid4).epsilon(1e-6));
  CHECK(all4 - hid4 == orrery::testing::Approx(3 * per_micro_batch).epsilon(1e-6));
  CHECK(all8 - hid8 == orrery::testing::Approx(7 * per_micro_batch).epsilon(1e-6));
}

// Lina (plan.ep_comm): the expert all-to-alls as flows on each GPU's links beside the
// data-parallel buckets. EP 16 over two servers of 8 puts both on the NIC: sharing fairly, the
// all-to-alls slow down and the step with them; with Lina's priority they run as if alone (the
// step of the all-to-alls inside the ops, within 0.1%). EP 8 keeps them on NVLink, where no
// bucket runs: fair and Lina agree, and match the all-to-alls inside the ops within 0.5% (the
// flows split each op into layer pieces, which meet ZeRO-1's parameter gathers a little
// differently). DP 16 leaves EP 16's experts unreplicated: only the dense parameters' buckets
// share the NIC, and EP 8's experts' buckets run over NVLink with the all-to-alls. One
// micro-batch: its backward's buckets run beside all of its all-to-alls.
// GPT-OSS's clamped GLU (glu_clamp 7): Megatron clamps each half of the experts' fc1 output and
// concatenates them before its fused activation, and masks the gradient of each half after it;
// the fused grouped MLP clamps inside its kernel. 2 MoE layers x 2 micro-batches of 4096 tokens,
// 4 routed copies each, of 2880 per half.
TEST_CASE("a clamped GLU's eager passes, none in the fused grouped MLP") {
  StepScenario sc = gb200_ep8("gpt-oss-20b", 2, 1, 16);
  REQUIRE(sc.model.glu_clamp == 7.0);
  StepScenario plain = sc;
  plain.model.glu_clamp = 0;
  const RooflineParams p = training_roofline_params(sc.gpu, step_context(sc.plan));
  const double m = 4096.0 * 4, fe = 2880;
  const double bytes = 2 * 2 * (16 + 12) * m * fe;  // layers x micro-batches x (forward 16 + backward 12 bytes per element)
  CHECK(memory_bound_s(sc) - memory_bound_s(plain) == orrery::testing::Approx(bytes / (sc.gpu.hbm_bandwidth * p.memory_efficiency * p.step_efficiency)).epsilon(1e-4));
  // moe_act's rerun clamps again.
  StepScenario rerun = sc, rerun_plain = plain;
  rerun.plan.recompute = rerun_plain.plan.recompute = Recompute::selective;
  rerun.plan.recompute_modules = rerun_plain.plan.recompute_modules = {.core_attn = false, .moe_act = true};
  const double with_rerun = 2 * 2 * (16 + 12 + 16) * m * fe;
  CHECK(memory_bound_s(rerun) - memory_bound_s(rerun_plain) ==
        orrery::testing::Approx(with_rerun / (sc.gpu.hbm_bandwidth * p.memory_efficiency * p.step_efficiency)).epsilon(1e-4));
  // The fused grouped MLP (MXFP8): the clamp costs nothing more.
  StepScenario fused = sc, fused_plain = plain;
  fused.plan.precision = fused_plain.plan.precision = "mxfp8";
  fused.plan.fused_moe_mlp = fused_plain.plan.fused_moe_mlp = true;
  CHECK(memory_bound_s(fused) == orrery::testing::Approx(memory_bound_s(fused_plain)).epsilon(1e-9));
}

// Megatron-Core's all-to-all dispatcher (moe_dispatch nccl) regroups the received tokens by local
// expert after the dispatch and back before the combine, each again backward: four passes over
// the routed tokens that DeepEP's fused calls do not make. 2 MoE layers x 2 micro-batches of 4096 tokens, 8
// routed copies each, of 2048.
TEST_CASE("the all-to-all dispatcher's regrouping passes") {
  StepScenario nccl = gb200_ep8("qwen3-30b-a3b", 2, 1, 16);
  REQUIRE(nccl.plan.moe_dispatch == "nccl");
  StepScenario deepep = nccl;
  deepep.plan.moe_dispatch = "deepep";
  const RooflineParams p = training_roofline_params(nccl.gpu, step_context(nccl.plan));
  const double routed = 4096.0 * 8, width = 2048;
  const double bytes = 2 * 2 * 4 * (2 * routed * width * 2);  // layers x micro-batches x passes x (read and write)
  CHECK(memory_bound_s(nccl) - memory_bound_s(deepep) ==
        orrery::testing::Approx(bytes / (nccl.gpu.hbm_bandwidth * p.memory_efficiency * p.step_efficiency)).epsilon(1e-4));
  StepScenario ep1 = nccl, ep1_deepep = deepep;
  ep1.plan.ep = ep1_deepep.plan.ep = 1;
  CHECK(memory_bound_s(ep1) == orrery::testing::Approx(memory_bound_s(ep1_deepep)).epsilon(1e-9));  // no dispatch, no passes
}

TEST_CASE("Lina: expert all-to-alls before the buckets on a shared NIC") {
  const auto run = [](int ep, const char* mode) {
    StepScenario sc = on_h100("qwen3-30b-a3b", 16, ep, 16, 4096, "dgx-h100:nodes=2");
    sc.plan.zero = 1;
    sc.plan.expert_imbalance = 1.2;
    sc.plan.ep_comm = mode;
    return step(sc).step_time.to_seconds();
  };
  const double inline_s = run(16, "inline"), fair = run(16, "fair"), lina = run(16, "lina");
  CHECK(fair > 1.03 * lina);
  CHECK(lina == orrery::testing::Approx(inline_s).epsilon(0.001));
  CHECK(run(8, "fair") == orrery::testing::Approx(run(8, "lina")).epsilon(1e-6));
  CHECK(run(8, "lina") == orrery::testing::Approx(run(8, "inline")).epsilon(0.005));
}

TEST_CASE("ep_comm: unknown modes and a clash with overlap_ep_comm are plan errors") {
  StepScenario sc = on_h100("qwen3-30b-a3b", 64, 16, 64, 4096, "dgx-h100:nodes=8");
  sc.plan.ep_comm = "priority";
  CHECK_THROWS_WITH_AS(validate_plan(sc.plan, sc.model, 64, "s.json", "/plan"), doctest::Contains("s.json:/plan/ep_comm: found \"priority\", expected inline, fair or lina"),
                       sim::InputError);
  sc.plan.ep_comm = "lina";
  sc.plan.overlap_ep_comm = true;
  CHECK_THROWS_WITH_AS(validate_plan(sc.plan, sc.model, 64, "s.json", "/plan"), doctest::Contains("expected one of the two"), sim::InputError);
}

// Adaptive gating's steps (plan.experts_per_token): a top-2 model with every token at one
// expert moves half the expert tokens and runs half the expert GEMMs; the step is faster, and
// the same as the default at 2.
TEST_CASE("experts per token: fewer expert tokens, a faster step") {
  StepScenario sc = on_h100("mixtral-8x7b", 8, 8, 32, 4096, "dgx-h100:nodes=1");
  const double top2 = step(sc).step_time.to_seconds();
  sc.plan.experts_per_token = 2;
  CHECK(step(sc).step_time.to_seconds() == top2);
  sc.plan.experts_per_token = 1.5;
  const double mid = step(sc).step_time.to_seconds();
  sc.plan.experts_per_token = 1;
  const double one = step(sc).step_time.to_seconds();
  CHECK(one < mid);
  CHECK(mid < top2);
}

// Whole-fabric contention: tp 8 on 16 servers makes 8 data-parallel groups of one GPU per
// server, all reducing gradients together. On a rail-optimized fabric each group has its rail to
// itself, so the step is the isolated one; on a fat-tree of one server per leaf at 2:1 every
// ring hop crosses the spine with 8 flows on 4 uplinks, which the isolated groups never see.
TEST_CASE("fabric contention: a data-parallel-heavy plan slows on an oversubscribed spine") {
  const auto run = [](const std::string& topology, Contention contention) {
    StepScenario sc = small(8, 1, 16, 1);
    sc.model.layers = 4;
    sc.plan.zero = 1;
    sc.topology = topology;
    sc.contention = contention;
    const StepResult r = step(sc);
    double dp = 0;
    for (const StageBreakdown& s : r.stages) dp += s.dp_comm_s;
    return std::pair{r.step_time.to_seconds(), dp};
  };
  const std::string rail = "dgx-h100:nodes=16";
  CHECK(run(rail, Contention::fabric) == run(rail, Contention::isolated));
  const std::string spine = "dgx-h100:nodes=16,fabric=fat-tree,leaf_ports=8,oversubscription=2,routing=spray";
  const std::string full = "dgx-h100:nodes=16,fabric=fat-tree,leaf_ports=8,routing=spray";
  const auto [alone_s, alone_dp] = run(spine, Contention::isolated);
  const auto [shared_s, shared_dp] = run(spine, Contention::fabric);
  const auto [full_s, full_dp] = run(full, Contention::fabric);
  CHECK(shared_dp > 1.9 * full_dp);  // the reductions take twice as long: half an uplink per flow
  CHECK(shared_s > alone_s);
  CHECK(shared_s > full_s);
  CHECK(full_dp == orrery::testing::Approx(alone_dp).epsilon(0.02));  // non-blocking: nothing to share
  // The line-rate rings (`--comm line-rate`) share the spine the same way.
  const auto line_rate_dp = [&](Contention contention) {
    StepScenario sc = small(8, 1, 16, 1);
    sc.model.layers = 4;
    sc.topology = spine;
    sc.contention = contention;
    const auto schedule = policies::pipeline_schedules().create(sc.plan.schedule, {}, {"test", "/plan/schedule"});
    StepOptions o;
    o.comm = CommModel::flows;
    const StepResult r = run_step(sc, RooflineCostModel(sc.gpu), *schedule, o);
    double dp = 0;
    for (const StageBreakdown& s : r.stages) dp += s.dp_comm_s;
    return dp;
  };
  CHECK(line_rate_dp(Contention::fabric) > 1.9 * line_rate_dp(Contention::isolated));
}

// Issue 21: at 2:1 spine oversubscription a data-parallel-heavy step slows by what the full
// flow simulation gives (every flow of every group, StepOptions::symmetry = false), and a plan
// whose kinds meet on the fabric (data-parallel reductions, expert all-to-alls, pipeline
// sends, each beside one of the others) costs the same both ways.
TEST_CASE("fabric contention: symmetry classes give the full simulation's step") {
  const auto run = [](StepScenario sc, bool symmetry) {
    sc.contention = Contention::fabric;
    const auto schedule = policies::pipeline_schedules().create(sc.plan.schedule, {}, {"test", "/plan/schedule"});
    StepOptions o;
    o.symmetry = symmetry;
    return run_step(sc, RooflineCostModel(sc.gpu), *schedule, o);
  };
  // Llama 3 8B (4 layers), tp 1, dp 64 on 8 servers, one server per leaf switch.
  StepScenario dp = small(1, 1, 64, 1);
  dp.model.layers = 4;
  dp.plan.zero = 1;
  const auto slowdown = [&](bool symmetry) {
    dp.topology = "dgx-h100:nodes=8,fabric=fat-tree,leaf_ports=8,oversubscription=2,routing=spray";
    const StepResult half = run(dp, symmetry);
    dp.topology = "dgx-h100:nodes=8,fabric=fat-tree,leaf_ports=8,routing=spray";
    const StepResult full = run(dp, symmetry);
    return std::pair{half.step_time.to_seconds() / full.step_time.to_seconds(), half.flows};
  };
  const auto [classes, class_flows] = slowdown(true);
  const auto [every, every_flows] = slowdown(false);
  MESSAGE("dp 64 at 2:1: step x", classes, " by classes (", class_flows, " flows), x", every, " by every flow (", every_flows, ")");
  CHECK(classes > 1.05);
  CHECK(classes == orrery::testing::Approx(every).epsilon(1e-3));
  CHECK(class_flows < every_flows);

  // A mixed plan: an MoE with tp 8, 2 stages, dp 4 and ep 4 across servers (one GPU of each
  // group per server), on a 2:1 spine.
  StepScenario moe = on_h100("qwen3-30b-a3b", 4, 4, 16, 4096, "dgx-h100:nodes=8,fabric=fat-tree,leaf_ports=8,oversubscription=2,routing=spray");
  moe.model.layers = 4;
  moe.plan.tp = 8;
  moe.plan.pp = 2;
  moe.plan.zero = 1;
  const StepResult by_classes = run(moe, true);
  const StepResult by_flows = run(moe, false);
  MESSAGE("moe mix: ", by_classes.step_time.to_seconds(), " s by classes (", by_classes.flows, " flows), ", by_flows.step_time.to_seconds(),
          " s by every flow (", by_flows.flows, ")");
  CHECK(by_classes.comm_mixes[0] > 0);  // collectives ran with the other kinds
  CHECK(by_classes.step_time.to_seconds() == orrery::testing::Approx(by_flows.step_time.to_seconds()).epsilon(1e-3));
  // The kinds slow each other: the same plan with its collectives each alone on the fabric.
  moe.contention = Contention::isolated;
  CHECK(by_classes.step_time > step(moe).step_time);
}

// Issue 21: a mix too large to simulate together (at frontier scale, past 2M transfers) is
// costed by link loads (ends_by_link_loads): with the limit lowered so that every mix of a
// small plan goes that way, the step comes out as the simulated mixes give it.
TEST_CASE("fabric contention: mixes by link loads give the simulated mixes' step") {
  const auto run = [](StepScenario sc, std::size_t mix_transfers) {
    sc.contention = Contention::fabric;
    const auto schedule = policies::pipeline_schedules().create(sc.plan.schedule, {}, {"test", "/plan/schedule"});
    StepOptions o;
    o.mix_transfers = mix_transfers;
    return run_step(sc, RooflineCostModel(sc.gpu), *schedule, o);
  };
  // An MoE with tp 8, 2 stages, dp 4 and ep 4 across servers, on a 2:1 spine, sprayed and hashed.
  for (const char* fabric : {"dgx-h100:nodes=8,fabric=fat-tree,leaf_ports=8,oversubscription=2,routing=spray",
                             "dgx-h100:nodes=8,fabric=fat-tree,leaf_ports=8,oversubscription=2"}) {
    StepScenario moe = on_h100("qwen3-30b-a3b", 4, 4, 16, 4096, fabric);
    moe.model.layers = 4;
    moe.plan.tp = 8;
    moe.plan.pp = 2;
    moe.plan.zero = 1;
    const StepResult together = run(moe, 0), by_loads = run(moe, 1);
    INFO(std::string(fabric), ": ", together.step_time.to_seconds(), " s simulated together, ", by_loads.step_time.to_seconds(), " s by link loads");
    CHECK(together.comm_mixes[0] > 0);
    CHECK(together.comm_mixes[1] == 0);
    CHECK(by_loads.comm_mixes[0] == 0);
    CHECK(by_loads.comm_mixes[1] == together.comm_mixes[0]);
    CHECK(by_loads.step_time.to_seconds() == orrery::testing::Approx(together.step_time.to_seconds()).epsilon(0.02));
    moe.contention = Contention::isolated;
    const StepResult apart = step(moe);
    CHECK(by_loads.step_time > apart.step_time);  // and the kinds still slow each other
    MESSAGE(std::string(fabric), ": ", together.step_time.to_seconds(), " s simulated together, ", by_loads.step_time.to_seconds(),
            " s by link loads, ", apart.step_time.to_seconds(), " s each collective alone");
  }
  // A frontier plan in small (DeepSeek-V3's at 8,192 GPUs: experts inside each NVLink domain,
  // data-parallel rings across domains of one scalable unit, pipeline sends between units over
  // nvl72's default rails and hashed spines at 2:1), on GB200.
  StepScenario frontier = on_h100("qwen3-30b-a3b", 32, 16, 64, 4096, "nvl72:domains=8,gpus_per_domain=16,leaf_ports=4,oversubscription=2");
  frontier.gpu = HardwareCatalog::builtin().gpu("GB200");
  frontier.model.layers = 4;
  frontier.plan.pp = 4;
  frontier.plan.zero = 1;
  const StepResult together = run(frontier, 0), by_loads = run(frontier, 1);
  CHECK(together.comm_mixes[0] > 0);
  CHECK(by_loads.comm_mixes[1] == together.comm_mixes[0]);
  CHECK(by_loads.step_time.to_seconds() == orrery::testing::Approx(together.step_time.to_seconds()).epsilon(0.02));
  frontier.contention = Contention::isolated;
  const StepResult apart = step(frontier);
  MESSAGE("frontier plan in small: ", together.step_time.to_seconds(), " s simulated together, ", by_loads.step_time.to_seconds(),
          " s by link loads, ", apart.step_time.to_seconds(), " s each collective alone");
}
