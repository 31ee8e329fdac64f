#include "traces/multimodal_json.hpp"

#include "models/multimodal/compound.hpp"
#include "models/training/llm.hpp"
#include "sim/error.hpp"
#include "traces/json_input.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace orrery::traces {

namespace {

models::ModuleSpec read_module(const JsonNode& node) {
  JsonObject o = node.as_object();
  models::ModuleSpec m;
  m.name = o.required("name").as_string();
  const JsonNode kind = o.required("kind");
  m.kind = models::parse_module_kind(kind.as_string(), kind.source(), kind.pointer());
  if (auto base = o.optional("base")) m.shape = models::ModelCatalog::builtin().model(base->as_string(), base->source(), base->pointer());
  m.shape.name = m.name;
  if (auto v = o.optional("layers")) m.shape.layers = v->as_int_in(1, 100000);
  if (auto v = o.optional("hidden")) m.shape.hidden = v->as_int_in(1, 1 << 20);
  if (auto v = o.optional("heads")) m.shape.heads = v->as_int_in(1, 100000);
  if (auto v = o.optional("kv_heads")) m.shape.kv_heads = v->as_int_in(1, 100000);
  else if (m.shape.kv_heads == 0) m.shape.kv_heads = m.shape.heads;
  if (auto v = o.optional("head_dim")) m.shape.head_dim = v->as_int_in(1, 1 << 16);
  else if (m.shape.head_dim == 0 && m.shape.heads > 0) m.shape.head_dim = m.shape.hidden / m.shape.heads;
  if (auto v = o.optional("ffn_hidden")) m.shape.ffn_hidden = v->as_int_in(1, 1 << 22);
  if (auto v = o.optional("vocab")) m.shape.vocab = v->as_int_in(1, 1 << 24);
  if (auto v = o.optional("mlp")) {
    const std::string k = v->as_string();
    if (k != "gelu" && k != "swiglu") v->fail(fmt::format("found {}, expected gelu or swiglu", sim::quote(k)));
    m.shape.mlp = k == "gelu" ? models::MlpKind::gelu : models::MlpKind::swiglu;
  }
  if (auto v = o.optional("trainable")) m.trainable = v->as_bool();
  if (auto v = o.optional("patch")) m.patch = v->as_int_in(1, 4096);
  if (auto v = o.optional("temporal_patch")) m.temporal_patch = v->as_int_in(1, 1024);
  if (auto v = o.optional("merge")) m.merge = v->as_int_in(1, 1024);
  if (auto v = o.optional("projector_hidden")) m.projector_hidden = v->as_int_in(1, 1 << 22);
  if (auto v = o.optional("tokens_per_second")) {
    m.tokens_per_second = v->as_number();
    if (!(m.tokens_per_second > 0 && m.tokens_per_second < 10000)) v->fail_expected("tokens per second in (0, 10000)");
  }
  o.finish();
  return m;
}

}  // namespace

models::MultimodalModel read_multimodal_model(const JsonNode& node) {
  if (node.json().is_string()) return models::MultimodalCatalog::builtin().model(node.as_string(), node.source(), node.pointer());
  JsonObject o = node.as_object();
  models::MultimodalModel m;
  m.name = o.required("name").as_string();
  std::vector<std::string> module_pointers;
  for (const JsonNode& mod : o.required("modules").as_array()) {
    m.modules.push_back(read_module(mod));
    const int first = m.find(m.modules.back().name);
    if (first >= 0 && static_cast<std::size_t>(first) + 1 < m.modules.size()) {
      throw sim::InputError(std::string(mod.source()), mod.pointer() + "/name",
                            fmt::format("duplicate module name {}, first used at {}; expected each module named once",
                                        sim::quote(m.modules.back().name), module_pointers[static_cast<std::size_t>(first)]));
    }
    module_pointers.push_back(mod.pointer());
  }
  for (const JsonNode& e : o.required("edges").as_array()) {
    const std::vector<JsonNode> ends = e.as_array();
    if (ends.size() != 2) e.fail_expected("[from, to] module names");
    models::ModuleEdge edge;
    for (std::size_t k = 0; k < 2; ++k) {
      const std::string name = ends[k].as_string();
      const int i = m.find(name);
      if (i < 0) {
        std::vector<std::string> names;
        for (const models::ModuleSpec& s : m.modules) names.push_back(s.name);
        ends[k].fail(fmt::format("a dangling edge: no module is named {}{}", sim::quote(name), sim::did_you_mean(name, names)));
      }
      (k == 0 ? edge.from : edge.to) = i;
    }
    m.edges.push_back(edge);
  }
  if (auto v = o.optional("source")) m.source = v->as_string();
  o.finish();
  models::validate_multimodal(m, node.source(), node.pointer());
  return m;
}

models::MultimodalMix read_multimodal_mix(const JsonNode& node) {
  models::MultimodalMix out;
  JsonObject mix = node.as_object();
  const auto num = [&](const char* key, double& value) {
    if (auto v = mix.optional(key)) value = v->as_number();
  };
  if (auto v = mix.optional("samples")) out.samples = v->as_int_in(1, 1 << 20);
  num("text_median", out.text_median);
  num("text_p99", out.text_p99);
  num("text_only", out.text_only);
  num("images_mean", out.images_mean);
  num("video_fraction", out.video_fraction);
  num("frames_median", out.frames_median);
  num("frames_p99", out.frames_p99);
  num("audio_fraction", out.audio_fraction);
  num("audio_median_s", out.audio_median_s);
  if (auto v = mix.optional("frames_max")) out.frames_max = v->as_int_in(2, 1 << 20);
  const auto size = [](const JsonNode& n) {
    const std::vector<JsonNode> hw = n.as_array();
    if (hw.size() != 2) n.fail_expected("[height, width]");
    return models::ImageSize{hw[0].as_int_in(1, 1 << 16), hw[1].as_int_in(1, 1 << 16)};
  };
  if (auto v = mix.optional("resolutions")) {
    out.resolutions.clear();
    for (const JsonNode& r : v->as_array()) out.resolutions.push_back(size(r));
  }
  if (auto v = mix.optional("video_resolution")) out.video_resolution = size(*v);
  mix.finish();
  out.validate(node.source(), node.pointer());
  return out;
}

bool is_multimodal_scenario(const std::string& path) {
  const auto doc = load_json_file(path);
  return doc->root().json().is_object() && doc->root().json().contains("multimodal");
}

MultimodalScenario load_multimodal_scenario(const std::string& path) {
  const auto doc = load_json_file(path);
  JsonObject top = doc->root().as_object();
  MultimodalScenario s;
  if (auto v = top.optional("name")) s.name = v->as_string();
  top.optional("description");
  if (auto v = top.optional("policies")) {
    s.policies = v->as_string();
    if (s.policies.empty()) v->fail_expected("a comma-separated list of policies");
  }
  JsonObject mm = top.required("multimodal").as_object();
  s.model = read_multimodal_model(mm.required("model"));
  const JsonNode gpu = mm.required("gpu");
  s.gpu = models::HardwareCatalog::builtin().gpu(gpu.as_string(), gpu.source(), gpu.pointer());
  if (auto v = mm.optional("tp")) s.tp = v->as_int_in(1, 64);
  if (auto v = mm.optional("pp")) s.pp = v->as_int_in(1, 1024);
  if (auto v = mm.optional("dp")) s.dp = v->as_int_in(1, 1 << 20);
  if (auto v = mm.optional("micro_batch")) s.micro_batch = v->as_int_in(1, 1 << 20);
  // NVLink per direction at NCCL's measured efficiency is the step emulator's business; here the
  // datasheet figure, or what the scenario says. Between stages: a 400 Gb/s NIC by default.
  s.nvlink = s.gpu.nvlink_bandwidth;
  if (auto v = mm.optional("nvlink")) s.nvlink = v->as_bandwidth().value();
  s.p2p = 50e9;
  if (auto v = mm.optional("p2p")) s.p2p = v->as_bandwidth().value();
  const int dit = [&] {
    for (std::size_t i = 0; i < s.model.modules.size(); ++i) {
      if (s.model.modules[i].kind == models::ModuleKind::video_dit) return static_cast<int>(i);
    }
    return -1;
  }();
  const auto needs_dit = [&](const JsonNode& v, std::string_view what) {
    if (dit < 0) v.fail(fmt::format("found {} for model {}, which has no video DiT; expected no {}", what, sim::quote(s.model.name), what));
  };
  if (auto v = mm.optional("cp")) {
    s.cp = v->as_int_in(1, 1024);
    if (s.cp > 1) needs_dit(*v, "context parallelism");
  }
  s.attention.cp = s.cp;
  if (auto v = mm.optional("attention")) {
    needs_dit(*v, "an attention");
    s.attention_given = true;
    const models::ModuleSpec& d = s.model.modules[static_cast<std::size_t>(dit)];
    JsonObject a = v->as_object();
    if (auto h = a.optional("head_sparsity")) {
      for (const JsonNode& x : h->as_array()) s.attention.head_sparsity.push_back(x.as_number());
    }
    const auto spread = a.optional("spread");
    if (auto m = a.optional("sparsity")) {
      if (!s.attention.head_sparsity.empty()) m->fail("found both sparsity and head_sparsity; expected one of them");
      s.attention.head_sparsity = models::spread_sparsity(d.shape.heads, m->as_number(), spread ? spread->as_number() : 0.0, path, m->pointer());
    } else if (spread) {
      spread->fail("found a spread without a sparsity; expected sparsity with it");
    }
    if (auto r = a.optional("estimator_rank")) s.attention.estimator_rank = r->as_int_in(0, 1 << 16);
    if (auto c = a.optional("cp_mode")) s.attention.cp_mode = models::parse_cp_mode(c->as_string(), path, c->pointer());
    a.finish();
    s.attention.validate(d.shape.heads, d.shape.head_dim, path, v->pointer());
    if (s.attention.cp_mode == models::CpMode::head && s.cp > d.shape.heads / s.tp) {
      throw sim::InputError(path, v->pointer() + "/cp_mode",
                            fmt::format("found head with cp {}, more GPUs than the {} heads per tensor-parallel rank; expected ring or hybrid", s.cp,
                                        d.shape.heads / s.tp));
    }
  }
  if (auto v = mm.optional("sections")) {
    for (const JsonNode& node : v->as_array()) {
      JsonObject o = node.as_object();
      models::SectionSpec sec;
      sec.name = o.required("name").as_string();
      for (const JsonNode& name : o.required("modules").as_array()) {
        const std::string text = name.as_string();
        const int i = s.model.find(text);
        if (i < 0) {
          std::vector<std::string> names;
          for (const models::ModuleSpec& x : s.model.modules) names.push_back(x.name);
          name.fail(fmt::format("found section module {}, which {} lacks{}; expected one of its modules", sim::quote(text), sim::quote(s.model.name),
                                sim::did_you_mean(text, names)));
        }
        sec.modules.push_back(i);
      }
      // Sizes are positive when given; absent, the policy chooses.
      if (auto x = o.optional("tp")) sec.tp = x->as_int_in(1, 64);
      if (auto x = o.optional("dp")) sec.dp = x->as_int_in(1, 1 << 20);
      if (auto x = o.optional("micro_batch")) sec.micro_batch = x->as_int_in(1, 1 << 20);
      o.finish();
      s.sections.push_back(std::move(sec));
    }
    if (s.sections.empty()) v->fail_expected("a list of one or more sections");
    (void)models::section_edges(s.model, s.sections, s.tp * s.pp * s.dp, path, v->pointer());
  }
  mm.finish();
  // Context parallelism inside a node (8 GPUs) runs on NVLink, beyond it on the p2p link.
  s.attention.cp_bandwidth = s.tp * s.cp <= 8 ? s.nvlink : s.p2p;
  for (const models::ModuleSpec& m : s.model.modules) {
    if (m.kind == models::ModuleKind::projector) continue;
    if (m.shape.heads % s.tp != 0) {
      throw sim::InputError(path, "/multimodal/tp", fmt::format("found tp {}, which does not divide module {}'s {} heads", s.tp, sim::quote(m.name), m.shape.heads));
    }
  }
  JsonObject w = top.required("workload").as_object();
  if (auto t = w.optional("trace")) {
    const std::filesystem::path p = t->as_string();
    s.trace_path = p.is_absolute() ? p.string() : (std::filesystem::path(path).parent_path() / p).string();
  } else {
    s.mix = read_multimodal_mix(w.required("mix"));
    if (auto v = w.optional("seed")) s.seed = static_cast<std::uint64_t>(v->as_int_in(0, 1 << 30));
  }
  w.finish();
  top.finish();
  if (s.micro_batch * s.dp > s.mix.samples && s.trace_path.empty()) {
    throw sim::InputError(path, "/multimodal/micro_batch",
                          fmt::format("found micro_batch {} x dp {}, more than the {} samples of a batch", s.micro_batch, s.dp, s.mix.samples));
  }
  return s;
}

}  // namespace orrery::traces
