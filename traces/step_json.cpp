#include "traces/step_json.hpp"

#include "models/training/doc_lengths.hpp"
#include "sim/error.hpp"
#include "traces/json_input.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace orrery::traces {

namespace {

std::int64_t size(const JsonNode& n) {
  const std::int64_t v = n.as_int();
  if (v < 1) n.fail_expected("a positive size");
  return v;
}

std::int64_t sequence_tokens(const JsonNode& n) {
  const std::int64_t v = n.as_int();
  if (v < 1 || v > models::kMaxSeqLen) {
    n.fail_expected(fmt::format("a length from 1 to {} tokens ({})", models::kMaxSeqLen, models::kMaxSeqLenReason));
  }
  return v;
}

// The topology builder family of a catalog GPU ("h100" for H100 and its aliases, "a100" for
// both A100s), or "" for a GPU no builder wires (MI300X, a user's own): those take any topology.
std::string_view gpu_family(const models::GpuSpec& gpu) {
  static constexpr std::array<std::string_view, 7> kFamilies = {"a100", "h100", "h200", "h800", "h20", "b200", "gb200"};
  std::string name;
  for (const char c : gpu.name) name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::string_view base = std::string_view(name).substr(0, name.find('-'));
  for (const std::string_view f : kFamilies) {
    if (base == f) return f;
  }
  return {};
}

std::string topology_example(std::string_view family) {
  return family == "gb200" ? "nvl72:domains=1" : fmt::format("dgx-{}:nodes=1", family);
}

}  // namespace

models::ModelSpec read_step_model(const JsonNode& node) {
  if (node.json().is_string()) return models::ModelCatalog::builtin().model(node.as_string(), node.source(), node.pointer());
  JsonObject f = node.as_object();
  models::ModelSpec m;
  if (auto base = f.optional("base")) m = models::ModelCatalog::builtin().model(base->as_string(), base->source(), base->pointer());
  m.name = f.required("name").as_string();
  m.aliases.clear();
  const auto layers = f.optional("layers");
  if (layers) m.layers = layers->as_int_in(1, 100000);
  if (auto v = f.optional("hidden")) m.hidden = size(*v);
  if (auto v = f.optional("heads")) m.heads = v->as_int_in(1, 100000);
  if (auto v = f.optional("kv_heads")) m.kv_heads = v->as_int_in(1, 100000);
  else if (m.kv_heads == 0) m.kv_heads = m.heads;
  if (auto v = f.optional("head_dim")) m.head_dim = size(*v);
  else if (m.head_dim == 0 && m.heads > 0) m.head_dim = m.hidden / m.heads;
  if (auto v = f.optional("ffn_hidden")) m.ffn_hidden = size(*v);
  if (auto v = f.optional("vocab")) m.vocab = size(*v);
  if (auto v = f.optional("mlp")) {
    const std::string kind = v->as_string();
    if (kind != "swiglu" && kind != "gelu" && kind != "squared_relu") {
      v->fail(fmt::format("found {}, expected swiglu, gelu or squared_relu", sim::quote(kind)));
    }
    m.mlp = kind == "gelu" ? models::MlpKind::gelu : kind == "squared_relu" ? models::MlpKind::squared_relu : models::MlpKind::swiglu;
  }
  if (auto v = f.optional("tied_embeddings")) m.tied_embeddings = v->as_bool();
  if (auto v = f.optional("moe")) {
    JsonObject o = v->as_object();
    m.moe.experts = o.required("experts").as_int_in(1, 1 << 20);
    m.moe.top_k = o.required("top_k").as_int_in(1, 1 << 20);
    m.moe.expert_ffn = size(o.required("expert_ffn"));
    if (auto s = o.optional("shared_experts")) m.moe.shared_experts = s->as_int_in(0, 1 << 20);
    if (auto s = o.optional("dense_layers")) m.moe.dense_layers = s->as_int_in(0, 100000);
    if (auto s = o.optional("latent")) m.moe.latent = size(*s);
    o.finish();
  }
  if (auto v = f.optional("mla")) {
    JsonObject o = v->as_object();
    if (auto s = o.optional("q_lora_rank")) m.mla.q_lora_rank = s->as_int();
    m.mla.kv_lora_rank = size(o.required("kv_lora_rank"));
    m.mla.qk_nope_dim = size(o.required("qk_nope_dim"));
    if (auto s = o.optional("qk_rope_dim")) m.mla.qk_rope_dim = s->as_int();
    m.mla.v_head_dim = size(o.required("v_head_dim"));
    o.finish();
  }
  if (auto v = f.optional("mamba")) {
    JsonObject o = v->as_object();
    m.mamba.heads = o.required("heads").as_int_in(1, 1 << 20);
    m.mamba.head_dim = size(o.required("head_dim"));
    m.mamba.state_dim = size(o.required("state_dim"));
    m.mamba.groups = o.required("groups").as_int_in(1, 1 << 20);
    if (auto s = o.optional("conv_kernel")) m.mamba.conv_kernel = s->as_int_in(1, 1024);
    if (auto s = o.optional("chunk")) m.mamba.chunk = s->as_int_in(1, 1 << 20);
    o.finish();
  }
  if (auto v = f.optional("layer_pattern")) {
    m.layer_pattern = v->as_string();
    if (!layers) m.layers = static_cast<int>(m.layer_pattern.size());
  }
  if (auto v = f.optional("sliding_window")) m.sliding_window = v->as_int_in(0, static_cast<int>(models::kMaxSeqLen));
  if (auto v = f.optional("full_attention_every")) m.full_attention_every = v->as_int_in(0, 100000);
  if (auto v = f.optional("attention_sinks")) m.attention_sinks = v->as_bool();
  if (auto v = f.optional("glu_clamp")) {
    m.glu_clamp = v->as_number();
    if (!(m.glu_clamp >= 0 && m.glu_clamp <= 1e6)) v->fail_expected("a clamp limit from 0 (none) to 1e6");
  }
  if (auto v = f.optional("mtp_layers")) m.mtp_layers = v->as_int_in(0, 64);
  if (auto v = f.optional("mtp_pattern")) m.mtp_pattern = v->as_string();
  if (auto v = f.optional("source")) m.source = v->as_string();
  f.finish();
  models::validate_model(m, node.source(), node.pointer());
  return m;
}

StepCluster read_step_cluster(const JsonNode& node, const models::HardwareCatalog& gpus) {
  StepCluster out;
  JsonObject cluster = node.as_object();
  const JsonNode gpu = cluster.required("gpu");
  out.gpu = gpus.gpu(gpu.as_string(), gpu.source(), gpu.pointer());
  const JsonNode topo = cluster.required("topology");
  out.topology = topo.as_string();
  if (out.topology.ends_with(".json")) {
    topo.fail("found a topology file; step scenarios take a builder spec such as \"dgx-h100:nodes=16\" (see `orrery topology --help`)");
  }
  // The spec as `orrery topology` reads it: the same parser, the same ranges, named here.
  const models::TopologySpecInfo info = models::check_topology_spec(out.topology, topo.source(), topo.pointer());
  out.gpus = static_cast<int>(info.gpus);
  // The topology's builder wires its own GPU (its NVLink generation and bandwidth): a scenario
  // GPU of another kind would be costed on one and connected as the other.
  const std::string_view family = gpu_family(out.gpu);
  if (!family.empty() && !sim::iequals(family, info.gpu)) {
    gpu.fail(fmt::format("found {}, but topology {} is built of {} GPUs; expected a {} GPU (or a topology of {}: e.g. {})",
                         sim::quote(gpu.as_string()), sim::quote(out.topology), info.gpu, info.gpu, out.gpu.name,
                         sim::quote(topology_example(family))));
  }
  if (auto c = cluster.optional("contention")) {
    const std::string v = c->as_string();
    if (v == "fabric") {
      out.contention = models::Contention::fabric;
    } else if (v != "isolated") {
      c->fail(fmt::format("found {}, expected isolated (each group's collectives alone on the smallest fabric that holds it) or fabric "
                          "(every group at once on the whole fabric)",
                          sim::quote(v)));
    }
  }
  cluster.finish();
  return out;
}

StepScenarioFile read_step_scenario(std::string_view json_text, const std::string& source, const models::HardwareCatalog& gpus) {
  const auto doc = parse_json(json_text, source);
  JsonObject top = doc->root().as_object();
  StepScenarioFile out;
  out.scenario.source = source;
  if (auto n = top.optional("name")) out.name = n->as_string();
  top.optional("description");
  out.scenario.model = read_step_model(top.required("model"));
  const StepCluster cluster = read_step_cluster(top.required("cluster"), gpus);
  out.scenario.gpu = cluster.gpu;
  out.scenario.topology = cluster.topology;
  out.scenario.contention = cluster.contention;
  const int cluster_gpus = cluster.gpus;

  models::ParallelPlan& p = out.scenario.plan;
  const JsonNode plan_node = top.required("plan");
  JsonObject plan = plan_node.as_object();
  if (auto v = plan.optional("tp")) p.tp = v->as_int_in(1, 1 << 20);
  if (auto v = plan.optional("pp")) p.pp = v->as_int_in(1, 1 << 20);
  if (auto v = plan.optional("vp")) p.vp = v->as_int_in(1, 1 << 20);
  if (auto v = plan.optional("cp")) p.cp = v->as_int_in(1, 1 << 20);
  if (auto v = plan.optional("ep")) p.ep = v->as_int_in(1, 1 << 20);
  if (auto v = plan.optional("dp")) {
    p.dp = v->as_int_in(1, 1 << 24);
  } else {
    p.dp = std::max(1, cluster_gpus / (p.tp * p.pp * p.cp));
  }
  if (auto v = plan.optional("cp_kind")) {
    const std::string k = v->as_string();
    if (k != "ring" && k != "ulysses") v->fail(fmt::format("found {}, expected ring or ulysses", sim::quote(k)));
    p.cp_kind = k == "ring" ? models::CpKind::ring : models::CpKind::ulysses;
  }
  if (auto v = plan.optional("zero")) p.zero = v->as_int_in(0, 3);
  if (auto v = plan.optional("micro_batch")) p.micro_batch = v->as_int_in(1, 1 << 24);
  const JsonNode gb = plan.required("global_batch");
  p.global_batch = gb.as_int_in(1, 1 << 30);
  if (auto v = plan.optional("seq_len")) p.seq_len = sequence_tokens(*v);
  if (auto v = plan.optional("recompute")) {
    const std::string r = v->as_string();
    if (r == "none") p.recompute = models::Recompute::none;
    else if (r == "selective") p.recompute = models::Recompute::selective;
    else if (r == "full") p.recompute = models::Recompute::full;
    else if (r == "op-selective") p.recompute = models::Recompute::op_selective;
    else v->fail(fmt::format("found {}, expected none, selective, full or op-selective", sim::quote(r)));
  }
  // Megatron's --recompute-modules: what selective recompute reruns (default ["core_attn"]).
  if (auto v = plan.optional("recompute_modules")) {
    if (p.recompute != models::Recompute::selective) {
      v->fail(fmt::format("found recompute_modules with recompute {}, expected recompute \"selective\" (the modules are what it reruns)",
                          sim::quote(models::to_string(p.recompute))));
    }
    p.recompute_modules = {.core_attn = false};
    for (const JsonNode& e : v->as_array()) {
      const std::string name = e.as_string();
      bool* flag = name == "core_attn"     ? &p.recompute_modules.core_attn
                   : name == "layernorm"   ? &p.recompute_modules.layernorm
                   : name == "moe_act"     ? &p.recompute_modules.moe_act
                   : name == "mla_up_proj" ? &p.recompute_modules.mla_up_proj
                   : name == "mlp"         ? &p.recompute_modules.mlp
                   : name == "moe"         ? &p.recompute_modules.moe
                                           : nullptr;
      if (flag == nullptr) {
        e.fail(fmt::format("found {}, expected core_attn, layernorm, moe_act, mla_up_proj, mlp or moe (Megatron's other modules, such as "
                           "shared_experts, are not modelled)",
                           sim::quote(name)));
      }
      if (*flag) e.fail(fmt::format("found {} twice, expected each module once", sim::quote(name)));
      *flag = true;
    }
  }
  if (auto v = plan.optional("sequence_parallel")) p.sequence_parallel = v->as_bool();
  if (auto v = plan.optional("flash_attention")) p.flash_attention = v->as_bool();
  if (auto v = plan.optional("overlap")) {
    JsonObject o = v->as_object();
    if (auto x = o.optional("grad_reduce")) p.overlap_grad_reduce = x->as_bool();
    if (auto x = o.optional("param_gather")) p.overlap_param_gather = x->as_bool();
    if (auto x = o.optional("tp_comm")) p.overlap_tp_comm = x->as_bool();
    o.finish();
  }
  if (auto v = plan.optional("schedule")) p.schedule = v->as_string();
  else if (p.vp > 1) p.schedule = "interleaved-1f1b";
  if (auto v = plan.optional("expert_imbalance")) p.expert_imbalance = v->as_number();
  if (auto v = plan.optional("moe_dispatch")) p.moe_dispatch = v->as_string();
  if (auto v = plan.optional("grad_reduce")) p.grad_reduce = v->as_string();
  if (auto v = plan.optional("precision")) p.precision = v->as_string();
  if (auto v = plan.optional("fp8_param_gather")) p.fp8_param_gather = v->as_bool();
  if (auto v = plan.optional("fp8_attention")) p.fp8_attention = v->as_bool();
  if (auto v = plan.optional("bf16_layers")) {
    // {"first": 1, "last": 1, "mtp": false}: Megatron's first_last_layers_bf16.
    JsonObject o = v->as_object();
    if (auto x = o.optional("first")) p.bf16_layers_first = x->as_int_in(0, 1 << 20);
    if (auto x = o.optional("last")) p.bf16_layers_last = x->as_int_in(0, 1 << 20);
    if (auto x = o.optional("mtp")) p.bf16_mtp = x->as_bool();
    o.finish();
  }
  if (auto v = plan.optional("module_precision")) {
    // {"linear_qkv": "bf16", "mamba_out_proj": "mxfp8"}: names checked here, precisions by validate_plan.
    JsonObject o = v->as_object();
    for (const std::string_view module : models::kLinearModules) {
      if (auto x = o.optional(module)) p.module_precision[std::string(module)] = x->as_string();
    }
    o.finish();
  }
  if (auto v = plan.optional("overlap_ep_comm")) p.overlap_ep_comm = v->as_bool();
  if (auto v = plan.optional("experts_per_token")) p.experts_per_token = v->as_number();
  if (auto v = plan.optional("ep_comm")) {
    p.ep_comm = v->as_string();
    if (p.ep_comm != "inline" && p.ep_comm != "fair" && p.ep_comm != "lina") v->fail(fmt::format("found {}, expected inline, fair or lina", sim::quote(p.ep_comm)));
  }
  if (auto v = plan.optional("fused_moe_mlp")) p.fused_moe_mlp = v->as_bool();
  if (auto v = plan.optional("cuda_graphs")) {
    p.cuda_graphs = v->as_string();
    if (const std::string why = models::check_cuda_graphs(p.cuda_graphs); !why.empty()) v->fail(why);
  }
  // Checked by validate_plan: megatron or fsdp2; fused, eager or compiled.
  if (auto v = plan.optional("sharding")) p.sharding = v->as_string();
  if (auto v = plan.optional("cross_entropy")) p.cross_entropy = v->as_string();
  if (auto v = plan.optional("framework")) {
    p.framework = v->as_string();
    const auto names = models::step_framework_names();
    if (std::find(names.begin(), names.end(), p.framework) == names.end()) {
      v->fail(fmt::format("found {}{}, expected {}", sim::quote(p.framework), sim::did_you_mean(p.framework, names), fmt::join(names, ", ")));
    }
  }
  if (auto v = plan.optional("activation_offload")) {
    p.activation_offload = v->as_string();
    if (p.activation_offload != "none" && p.activation_offload != "cpu") v->fail(fmt::format("found {}, expected none or cpu", sim::quote(p.activation_offload)));
  }
  if (auto v = plan.optional("optimizer_offload")) {
    p.optimizer_offload = v->as_string();
    if (p.optimizer_offload != "none" && p.optimizer_offload != "cpu") v->fail(fmt::format("found {}, expected none or cpu", sim::quote(p.optimizer_offload)));
  }
  if (auto v = plan.optional("lora")) {
    // true (Megatron-Bridge's defaults) or {"rank": 16, "targets": ["linear_qkv", ...]}.
    if (v->json().is_boolean()) {
      p.lora.enabled = v->as_bool();
    } else {
      JsonObject o = v->as_object();
      p.lora.enabled = true;
      if (auto r = o.optional("rank")) p.lora.rank = r->as_int_in(1, 1 << 20);
      if (auto t = o.optional("targets")) {
        p.lora.qkv = p.lora.proj = p.lora.fc1 = p.lora.fc2 = false;
        for (const JsonNode& name : t->as_array()) {
          const std::string n = name.as_string();
          if (n == "linear_qkv") p.lora.qkv = true;
          else if (n == "linear_proj") p.lora.proj = true;
          else if (n == "linear_fc1") p.lora.fc1 = true;
          else if (n == "linear_fc2") p.lora.fc2 = true;
          else name.fail(fmt::format("found {}, expected linear_qkv, linear_proj, linear_fc1 or linear_fc2", sim::quote(n)));
        }
      }
      o.finish();
    }
  }
  if (auto v = plan.optional("split_embedding_and_loss")) p.split_embedding_and_loss = v->as_bool();
  if (auto v = plan.optional("pipeline_layout")) {
    for (const JsonNode& n : v->as_array()) p.pipeline_layout.push_back(n.as_int_in(0, 1 << 20));
  }
  if (auto v = plan.optional("documents")) {
    for (const JsonNode& d : v->as_array()) p.documents.push_back(sequence_tokens(d));
  }
  plan.finish();
  models::validate_plan(p, out.scenario.model, cluster_gpus, source, plan_node.pointer());

  if (auto c = top.optional("calibration")) {
    const std::filesystem::path path = c->as_string();
    out.calibration_path = path.is_absolute() ? path.string() : (std::filesystem::path(source).parent_path() / path).string();
  }
  if (auto v = top.optional("fail_on_oom")) out.fail_on_oom = v->as_bool();
  if (auto w = top.optional("workload")) {
    JsonObject o = w->as_object();
    out.has_workload = true;
    WorkloadSpec& spec = out.workload;
    if (auto t = o.optional("trace")) {
      const std::filesystem::path path = t->as_string();
      spec.trace_path = path.is_absolute() ? path.string() : (std::filesystem::path(source).parent_path() / path).string();
    } else {
      const JsonNode g = o.required("generator");
      spec.generator = g.as_string();
      if (spec.generator != "lognormal" && spec.generator != "lognormal_pareto") {
        g.fail(fmt::format("found {}, expected lognormal or lognormal_pareto", sim::quote(spec.generator)));
      }
      const JsonNode med = o.required("median");
      spec.median = med.as_number();
      const JsonNode p99 = o.required("p99");
      spec.p99 = p99.as_number();
      const JsonNode mx = o.required("max");
      spec.max = mx.as_int();
      if (!(spec.median >= 1)) med.fail_expected("a median of at least 1 token");
      if (!(spec.p99 > spec.median)) p99.fail_expected(fmt::format("a p99 above the median {}", spec.median));
      if (!(static_cast<double>(spec.max) > spec.p99)) mx.fail_expected(fmt::format("a maximum above the p99 {}", spec.p99));
      // Some targets have no such distribution: say so here, at the workload, not when it runs.
      try {
        (void)(spec.generator == "lognormal" ? models::DocLengthModel::lognormal(spec.median, spec.p99, spec.max)
                                             : models::DocLengthModel::lognormal_pareto(spec.median, spec.p99, spec.max));
      } catch (const sim::InputError& e) {
        w->fail(e.message());
      }
      if (auto sd = o.optional("seed")) spec.seed = static_cast<std::uint64_t>(std::max<std::int64_t>(0, sd->as_int()));
    }
    if (auto j = o.optional("jitter")) {
      spec.jitter = j->as_number();
      if (spec.jitter < 0 || spec.jitter > 1) j->fail_expected("a log-sd from 0 to 1");
    }
    o.finish();
  }
  top.finish();
  return out;
}

StepScenarioFile load_step_scenario(const std::string& path, const models::HardwareCatalog& gpus) {
  return read_step_scenario(read_text_file(path), path, gpus);
}

}  // namespace orrery::traces
