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

// A figure of a GPU within physical bounds, so that no kernel or transfer time derived from it
// outlasts the clock.
double within(const JsonNode& node, double value, std::string_view what, double lo, double hi, std::string_view range) {
  positive(node, value, what);
  if (value < lo || value > hi) node.fail(fmt::format("found {}, expected a {} from {}", node.describe(), what, range));
  return value;
}

// 1 TFLOP/s is below every accelerator in the catalog (the T4's fp32 is 8.1 TFLOP/s); 1 EFLOP/s
// is 100 times a B200's fp8.
constexpr std::string_view kFlopRateRange = "1 TFLOP/s to 1 EFLOP/s (the catalog's slowest, a T4, does 8.1 TFLOP/s fp32)";
// Memory from 1 GiB to 16 TiB (the largest HBM shipped is 288 GB), at 10 GB/s (below a T4's
// 320 GB/s) to 1 PB/s.
constexpr std::string_view kHbmRange = "1 GiB to 16 TiB (the largest HBM shipped is 288 GB)";
constexpr std::string_view kHbmBandwidthRange = "10 GB/s to 1 PB/s (the catalog's slowest, a T4, reads 320 GB/s)";
constexpr std::string_view kLinkRange = "1 Gb/s to 1 PB/s (the range of any link in a topology)";

}  // namespace

void merge_gpu_catalog(models::HardwareCatalog& catalog, std::string_view json_text, const std::string& source) {
  const auto doc = parse_json(json_text, source);
  JsonObject top = doc->root().as_object();
  top.optional("description");
  const std::vector<JsonNode> gpus = top.required("gpus").as_array();
  top.finish();
  std::vector<std::pair<std::string, std::string>> defined;  // names (and aliases) given in this file, with their pointers
  const auto first_definition = [&](std::string_view name) -> const std::string* {
    for (const auto& [n, pointer] : defined) {
      if (sim::iequals(n, name)) return &pointer;
    }
    return nullptr;
  };
  for (const JsonNode& g : gpus) {
    JsonObject f = g.as_object();
    const JsonNode name_node = f.required("name");
    const std::string name = name_node.as_string();
    if (name.empty()) name_node.fail_expected("a non-empty GPU name");
    if (const std::string* first = first_definition(name)) {
      name_node.fail(fmt::format("GPU {} is defined twice, first at {}; expected each GPU once", sim::quote(name), *first));
    }
    defined.emplace_back(name, g.pointer());
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
      for (const JsonNode& a : aliases->as_array()) {
        spec.aliases.push_back(a.as_string());
        if (const std::string* first = first_definition(spec.aliases.back())) {
          a.fail(fmt::format("alias {} names a GPU defined at {}; expected each GPU once", sim::quote(spec.aliases.back()), *first));
        }
        defined.emplace_back(spec.aliases.back(), a.pointer());
      }
    } else if (!catalog.find(name)) {
      spec.aliases.clear();  // a new GPU does not inherit its base's other names
    }
    bool have_bf16 = complete;
    if (auto flops = f.optional("peak_flops")) {
      JsonObject pf = flops->as_object();
      for (const models::DType t : models::kAllDTypes) {
        if (auto v = pf.optional(models::to_string(t))) {
          const double rate = v->is_null() ? 0.0 : within(*v, v->as_flop_rate().value(), "FLOP rate", 1e12, 1e18, kFlopRateRange);
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
    if (auto v = need("hbm")) spec.hbm_bytes = within(*v, v->as_bytes().value(), "memory size", 0x1p30, 0x1p44, kHbmRange);
    if (auto v = need("hbm_bandwidth")) {
      spec.hbm_bandwidth = within(*v, v->as_bandwidth().value(), "bandwidth", 10e9, 1e15, kHbmBandwidthRange);
    }
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
    if (auto v = f.optional("nvlink_bandwidth")) {
      spec.nvlink_bandwidth = within(*v, v->as_bandwidth().value(), "bandwidth", 1e9 / 8, 1e15, kLinkRange);
    }
    if (auto v = f.optional("host_memory")) spec.host_memory_bytes = within(*v, v->as_bytes().value(), "memory size", 0, 0x1p50, "0 to 1 PiB");
    if (auto v = f.optional("host_memory_bandwidth")) {
      spec.host_memory_bandwidth = within(*v, v->as_bandwidth().value(), "bandwidth", 0, 1e15, "0 to 1 PB/s");
    }
    if (auto v = f.optional("host_link_bandwidth")) spec.host_link_bandwidth = within(*v, v->as_bandwidth().value(), "bandwidth", 0, 1e15, "0 to 1 PB/s");
    if (auto v = f.optional("gemm_tile")) {
      const std::int64_t n = v->as_int();
      if (n < 16 || n > 1024) v->fail_expected("a GEMM tile of 16 to 1024 rows");
      spec.gemm_tile = static_cast<int>(n);
    }
    if (auto v = f.optional("sfu_scale")) {
      const double x = v->as_number();
      if (!(x >= 0.25 && x <= 16)) v->fail_expected("an SFU scale from 0.25 to 16 (special-function throughput per FP32 FLOP/s against Hopper's; 2 on Blackwell Ultra)");
      spec.sfu_scale = x;
    }
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
