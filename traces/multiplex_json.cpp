#include "traces/multiplex_json.hpp"

#include "models/training/doc_lengths.hpp"
#include "models/training/parallel.hpp"
#include "sim/error.hpp"
#include "traces/json_input.hpp"
#include "traces/multimodal_json.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace orrery::traces {

namespace {

// A fraction in (0, 1]: a quota or a share; names what was found as a percentage too.
double fraction(const JsonNode& n, std::string_view what) {
  const double v = n.as_number();
  if (!(v > 0 && v <= 1)) n.fail(fmt::format("found {} ({:.4g}%), expected {} above 0 and at most 1 (100%)", v, 100 * v, what));
  return v;
}

const std::vector<std::string>& target_names() {
  static const std::vector<std::string> names = {"linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"};
  return names;
}

}  // namespace

std::string multiplex_kind(const std::string& path) {
  const auto doc = load_json_file(path);
  const auto& j = doc->root().json();
  if (!j.is_object()) return "";
  if (j.contains("colocation")) return "colocation";
  if (j.contains("peft")) return "peft";
  return "";
}

ColocationScenario load_colocation_scenario(const std::string& path) {
  const auto doc = load_json_file(path);
  JsonObject top = doc->root().as_object();
  ColocationScenario s;
  if (auto v = top.optional("name")) s.name = v->as_string();
  top.optional("description");
  JsonObject c = top.required("colocation").as_object();
  s.model = read_multimodal_model(c.required("model"));
  const JsonNode gpu = c.required("gpu");
  s.gpu = models::HardwareCatalog::builtin().gpu(gpu.as_string(), gpu.source(), gpu.pointer());
  s.gpus = c.required("gpus").as_int_in(1, 4096);
  if (auto v = c.optional("micro_batch")) s.micro_batch = v->as_int_in(1, 1 << 16);
  if (auto v = c.optional("mix")) s.mix = read_multimodal_mix(*v);
  if (auto v = c.optional("seed")) s.seed = static_cast<std::uint64_t>(v->as_int_in(0, 1 << 30));
  if (auto v = c.optional("bandwidth_sm_share")) s.bandwidth_sm_share = fraction(*v, "a share of the SMs");
  if (auto v = c.optional("colocation_penalty")) {
    s.colocation_penalty = v->as_number();
    if (!(*s.colocation_penalty >= 0 && *s.colocation_penalty < 1)) v->fail_expected("a slowdown per co-resident module in [0, 1)");
  }
  if (s.micro_batch > s.mix.samples) {
    throw sim::InputError(path, "/colocation/micro_batch", fmt::format("found {}, more than the mix's {} samples", s.micro_batch, s.mix.samples));
  }
  if (auto v = c.optional("placement")) {
    models::ColocPlacement pl;
    for (const JsonNode& n : v->as_array()) {
      JsonObject p = n.as_object();
      models::ColocPiece piece;
      const JsonNode module = p.required("module");
      const std::string name = module.as_string();
      piece.module = s.model.find(name);
      if (piece.module < 0) {
        std::vector<std::string> names;
        for (const auto& m : s.model.modules) names.push_back(m.name);
        module.fail(fmt::format("found {}, no module of {} has that name{}; expected one of {}", sim::quote(name), s.model.name,
                                sim::did_you_mean(name, names), fmt::join(names, ", ")));
      }
      const JsonNode g = p.required("gpu");
      piece.gpu = static_cast<int>(g.as_int());
      if (piece.gpu < 0 || piece.gpu >= s.gpus) g.fail(fmt::format("found GPU {}, expected 0 to {} (\"gpus\": {})", piece.gpu, s.gpus - 1, s.gpus));
      piece.sm = fraction(p.required("sm"), "an SM quota");
      piece.memory = fraction(p.required("memory"), "a memory quota");
      if (auto ph = p.optional("phase")) piece.phase = ph->as_int_in(0, 1024);
      p.finish();
      pl.pieces.push_back(piece);
    }
    if (pl.pieces.empty()) v->fail_expected("one piece or more");
    s.placement = std::move(pl);
  }
  c.finish();
  top.finish();
  return s;
}

PeftScenario load_peft_scenario(const std::string& path) {
  const auto doc = load_json_file(path);
  JsonObject top = doc->root().as_object();
  PeftScenario s;
  if (auto v = top.optional("name")) s.name = v->as_string();
  top.optional("description");
  JsonObject c = top.required("peft").as_object();
  models::PeftProblem& p = s.problem;
  const JsonNode backbone = c.required("backbone");
  p.backbone = models::ModelCatalog::builtin().model(backbone.as_string(), backbone.source(), backbone.pointer());
  if (p.backbone.moe.experts > 0 || p.backbone.mla.enabled() || !p.backbone.layer_pattern.empty() || p.backbone.ffn_hidden <= 0) {
    backbone.fail(fmt::format("found {}, which is not a dense attention model (MoE, MLA or hybrid layers); expected a dense backbone such as llama3-8b, "
                              "whose linear_qkv, linear_proj, linear_fc1 and linear_fc2 adapters this model costs", p.backbone.name));
  }
  const JsonNode gpu = c.required("gpu");
  p.gpu = models::HardwareCatalog::builtin().gpu(gpu.as_string(), gpu.source(), gpu.pointer());
  if (auto v = c.optional("stages")) {
    p.stages = v->as_int_in(1, 1 << 16);
    if (p.stages > p.backbone.layers) v->fail(fmt::format("found {} stages, expected at most {}'s {} layers", p.stages, p.backbone.name, p.backbone.layers));
  }
  std::uint64_t seed = 1;
  if (auto v = c.optional("seed")) seed = static_cast<std::uint64_t>(v->as_int_in(0, 1 << 30));
  const JsonNode tasks = c.required("tasks");
  const std::vector<JsonNode> list = tasks.as_array();
  if (list.empty()) tasks.fail_expected("one task or more");
  for (std::size_t i = 0; i < list.size(); ++i) {
    JsonObject t = list[i].as_object();
    models::PeftTask task;
    task.name = t.required("name").as_string();
    for (const models::PeftTask& other : p.tasks) {
      if (other.name == task.name) t.node().fail(fmt::format("found a second task named {}, expected unique task names", sim::quote(task.name)));
    }
    const JsonNode rank = t.required("rank");
    const std::int64_t r = rank.as_int();
    if (r < 1 || r > p.backbone.hidden) {
      rank.fail(fmt::format("found rank {}, expected 1 to {}'s hidden size {} (a low-rank adapter)", r, p.backbone.name, p.backbone.hidden));
    }
    task.rank = static_cast<int>(r);
    if (auto v = t.optional("targets")) {
      task.qkv = task.proj = task.fc1 = task.fc2 = false;
      for (const JsonNode& n : v->as_array()) {
        const std::string name = n.as_string();
        if (name == "linear_qkv") task.qkv = true;
        else if (name == "linear_proj") task.proj = true;
        else if (name == "linear_fc1") task.fc1 = true;
        else if (name == "linear_fc2") task.fc2 = true;
        else {
          n.fail(fmt::format("found target {}: {} has no linear layer of that name{}; expected one of {}", sim::quote(name), p.backbone.name,
                             sim::did_you_mean(name, target_names()), fmt::join(target_names(), ", ")));
        }
      }
    }
    // The adapter against the backbone, as a LoRA plan would be checked (rank, targets).
    models::ParallelPlan plan;
    plan.lora.enabled = true;
    plan.lora.rank = task.rank;
    plan.lora.qkv = task.qkv;
    plan.lora.proj = task.proj;
    plan.lora.fc1 = task.fc1;
    plan.lora.fc2 = task.fc2;
    models::validate_lora(plan, p.backbone, path, list[i].pointer());
    task.micro_batch = t.required("micro_batch").as_int_in(1, 1 << 16);
    task.micro_batches = t.required("micro_batches").as_int_in(1, 1 << 16);
    const std::size_t n = static_cast<std::size_t>(task.micro_batch) * static_cast<std::size_t>(task.micro_batches);
    std::vector<std::int64_t> lengths;
    const JsonNode lens = t.required("lengths");
    if (lens.json().is_array()) {
      const std::vector<JsonNode> given = lens.as_array();
      if (given.size() != n) {
        lens.fail(fmt::format("found {} lengths, expected micro_batch x micro_batches = {} x {} = {}", given.size(), task.micro_batch, task.micro_batches, n));
      }
      for (const JsonNode& l : given) lengths.push_back(l.as_int_in(1, 1 << 24));
    } else {
      JsonObject d = lens.as_object();
      const JsonNode median = d.required("median"), p99 = d.required("p99"), max = d.required("max");
      const double med = median.as_number(), q = p99.as_number();
      const std::int64_t most = max.as_int_in(1, 1 << 24);
      if (!(med >= 1)) median.fail(fmt::format("found {}, expected a median length of 1 token or more", med));
      if (!(q > med)) p99.fail(fmt::format("found {}, expected a p99 above the median {}", q, med));
      if (!(static_cast<double>(most) > q)) max.fail(fmt::format("found {}, expected a maximum above the p99 {}", most, q));
      d.finish();
      models::DocLengthModel model;
      try {
        model = models::DocLengthModel::lognormal(med, q, most);
      } catch (const sim::InputError& e) {
        lens.fail(e.message());  // the distribution's own reason, at this task's lengths
      }
      models::DocSampler sampler(model, seed + i);
      for (std::size_t k = 0; k < n; ++k) lengths.push_back(sampler.next());
    }
    t.finish();
    p.tasks.push_back(std::move(task));
    p.lengths.push_back(std::move(lengths));
  }
  c.finish();
  top.finish();
  return s;
}

}  // namespace orrery::traces
