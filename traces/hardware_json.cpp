#include "traces/hardware_json.hpp"

#include "sim/error.hpp"
#include "traces/json_input.hpp"

#include <fmt/format.h>

namespace orrery::traces {

namespace {

double positive(const JsonNode& node, double value, std::string_view what) {
  if (!(value > 0)) node.fail(fmt::format("found {}, expected a positive {}", node.describe(), what));
  return value;
}

}  // namespace

void merge_gpu_catalog(models::HardwareCatalog& catalog, std::string_view json_text, const std::string& source) {
  const auto doc = parse_json(json_text, source);
  JsonObject top = doc->root().as_object();
  top.optional("description");
  const std::vector<JsonNode> gpus = top.required("gpus").as_array();
  top.finish();
  for (const JsonNode& g : gpus) {
    JsonObject f = g.as_object();
    const JsonNode name_node = f.required("name");
    const std::string name = name_node.as_string();
    if (name.empty()) name_node.fail_expected("a non-empty GPU name");
    models::GpuSpec spec;
    bool complete = false;  // starts from a full spec (a base, or the built-in of that name)
    if (auto base = f.optional("base")) {
      const std::string base_name = base->as_string();
      spec = catalog.gpu(base_name, source, base->pointer());
      complete = true;
    } else if (const models::GpuSpec* existing = catalog.find(name)) {
      spec = *existing;
      complete = true;
    }
    spec.name = name;
    if (auto aliases = f.optional("aliases")) {
      spec.aliases.clear();
      for (const JsonNode& a : aliases->as_array()) spec.aliases.push_back(a.as_string());
    } else if (!catalog.find(name)) {
      spec.aliases.clear();  // a new GPU does not inherit its base's other names
    }
    bool have_bf16 = complete;
    if (auto flops = f.optional("peak_flops")) {
      JsonObject pf = flops->as_object();
      for (const models::DType t : models::kAllDTypes) {
        if (auto v = pf.optional(models::to_string(t))) {
          const double rate = v->is_null() ? 0.0 : positive(*v, v->as_flop_rate().value(), "FLOP rate");
          spec.peak_flops[static_cast<std::size_t>(t)] = rate;
          if (t == models::DType::bf16) have_bf16 = rate > 0;
        }
      }
      pf.finish();
    }
    const auto need = [&](std::string_view key) -> std::optional<JsonNode> {
      std::optional<JsonNode> v = f.optional(key);
      if (!v && !complete) {
        g.fail(fmt::format("missing {} for new GPU {}, expected it (or a \"base\" GPU to start from)", sim::quote(key),
                           sim::quote(name)));
      }
      return v;
    };
    if (auto v = need("hbm")) spec.hbm_bytes = positive(*v, v->as_bytes().value(), "memory size");
    if (auto v = need("hbm_bandwidth")) spec.hbm_bandwidth = positive(*v, v->as_bandwidth().value(), "bandwidth");
    if (auto v = need("sm_count")) {
      const std::int64_t n = v->as_int();
      if (n <= 0 || n > 100000) v->fail_expected("an SM count from 1 to 100000");
      spec.sm_count = static_cast<int>(n);
    }
    if (auto v = f.optional("interconnect")) spec.interconnect = v->as_string();
    if (auto v = f.optional("nvlink_generation")) {
      const std::int64_t n = v->as_int();
      if (n < 0 || n > 20) v->fail_expected("an NVLink generation from 0 to 20");
      spec.nvlink_generation = static_cast<int>(n);
    }
    if (auto v = f.optional("nvlink_bandwidth")) spec.nvlink_bandwidth = positive(*v, v->as_bandwidth().value(), "bandwidth");
    if (auto v = f.optional("source")) spec.source = v->as_string();
    f.finish();
    if (!have_bf16) {
      g.fail(fmt::format("GPU {} has no bf16 peak, expected peak_flops.bf16 (every training GPU has one)", sim::quote(name)));
    }
    catalog.add_or_replace(std::move(spec));
  }
}

models::HardwareCatalog load_gpu_catalog(const std::string& path) {
  models::HardwareCatalog catalog = models::HardwareCatalog::builtin();
  if (!path.empty()) merge_gpu_catalog(catalog, read_text_file(path), path);
  return catalog;
}

}  // namespace orrery::traces
