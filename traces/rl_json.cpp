#include "traces/rl_json.hpp"

#include "models/rl/generation.hpp"
#include "models/training/llm.hpp"
#include "sim/error.hpp"
#include "traces/json_input.hpp"
#include "traces/rollouts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace orrery::traces {

namespace {

models::RlPool read_pool(const JsonNode& node) {
  JsonObject o = node.as_object();
  models::RlPool p;
  const JsonNode gpu = o.required("gpu");
  p.gpu = models::HardwareCatalog::builtin().gpu(gpu.as_string(), gpu.source(), gpu.pointer());
  p.fabric = models::server_fabric(p.gpu);
  if (p.fabric.empty()) {
    gpu.fail(fmt::format("found {}, which has no server fabric here; expected A100, H100, H200, H800, H20 or B200", sim::quote(p.gpu.name)));
  }
  const JsonNode gpus = o.required("gpus");
  p.gpus = gpus.as_int_in(1, 1 << 20);
  if (auto v = o.optional("gpus_per_node")) p.gpus_per_node = v->as_int_in(1, 1024);
  if (auto v = o.optional("dollars_per_gpu_hour")) {
    p.dollars_per_gpu_hour = v->as_number();
    if (!(p.dollars_per_gpu_hour >= 0 && p.dollars_per_gpu_hour < 1e6)) v->fail_expected("a price per GPU-hour in [0, 1e6)");
  }
  if (auto v = o.optional("datacenter")) p.datacenter = v->as_string();
  o.finish();
  if (p.gpus > p.gpus_per_node && p.gpus % p.gpus_per_node != 0) {
    gpus.fail(fmt::format("found {} GPUs, expected whole servers of {} (gpus_per_node)", p.gpus, p.gpus_per_node));
  }
  return p;
}

models::DocLengthModel read_lengths(JsonObject& o, const JsonNode& node, double p99_default) {
  // Lengths up to 2^30 tokens: longer than any context window (traces/doclens.hpp's limit too).
  constexpr std::int64_t kMaxLength = std::int64_t{1} << 30;
  const JsonNode median = o.required("median");
  const double m = median.as_number();
  if (!(m >= 1 && m < 1e7)) median.fail_expected("a median of 1 to 1e7 tokens");
  double p99 = p99_default * m;
  if (auto v = o.optional("p99")) {
    p99 = v->as_number();
    if (!(p99 > m && p99 < 1e8)) v->fail(fmt::format("found a p99 of {}, expected more than the median {} and less than 1e8 tokens", p99, m));
  }
  const JsonNode max = o.required("max");
  const std::int64_t mx = max.as_int();
  if (!(static_cast<double>(mx) > p99 && mx <= kMaxLength)) {
    max.fail(fmt::format("found a max of {}, expected more than the p99 {} and at most {} tokens (longer than any context window)", mx, p99,
                         kMaxLength));
  }
  try {
    return models::DocLengthModel::lognormal(m, p99, mx);
  } catch (const sim::InputError& e) {
    node.fail(e.message());
  }
}

}  // namespace

bool is_rl_scenario(const std::string& path) {
  const auto doc = load_json_file(path);
  const auto& j = doc->root().json();
  return j.is_object() && j.contains("rollouts");
}

models::RlSetup load_rl_scenario(const std::string& path, int iterations) {
  const auto doc = load_json_file(path);
  JsonObject top = doc->root().as_object();
  models::RlSetup s;
  s.source = path;
  if (auto v = top.optional("name")) s.name = v->as_string();
  top.optional("description");
  const JsonNode model = top.required("model");
  s.model = models::ModelCatalog::builtin().model(model.as_string(), model.source(), model.pointer());
  if (auto v = top.optional("seed")) s.seed = static_cast<std::uint64_t>(v->as_int_in(0, 1 << 30));

  // Pools.
  auto pool = top.optional("pool");
  auto gen_pool = top.optional("generation_pool");
  auto train_pool = top.optional("training_pool");
  if (pool && (gen_pool || train_pool)) pool->fail("found \"pool\" beside separate pools, expected one pool or a generation_pool and a training_pool");
  if (pool) {
    s.generation_pool = s.training_pool = read_pool(*pool);
    s.shared = true;
  } else {
    if (!gen_pool || !train_pool) doc->root().fail("expected a \"pool\", or both a \"generation_pool\" and a \"training_pool\"");
    s.generation_pool = read_pool(*gen_pool);
    s.training_pool = read_pool(*train_pool);
    s.shared = false;
  }
  if (auto v = top.optional("size_to_match")) {
    if (s.shared) v->fail("found size_to_match with one pool, expected it only beside a generation_pool and a training_pool");
    s.size_to_match = v->as_bool();
  }
  auto cross = top.optional("cross_dc");
  if (!s.shared && s.generation_pool.datacenter != s.training_pool.datacenter) {
    if (!cross) {
      doc->root().fail(fmt::format("the pools are in datacenters {} and {}, expected a \"cross_dc\" link {{\"bandwidth\", \"latency\"}}",
                                   sim::quote(s.generation_pool.datacenter), sim::quote(s.training_pool.datacenter)));
    }
    JsonObject c = cross->as_object();
    models::CrossDcLink link;
    const JsonNode bandwidth = c.required("bandwidth");
    link.bandwidth = bandwidth.as_bandwidth().value();
    // 1 Mb/s to 1 Pb/s: below, one weight sync of a 7B model takes more than a day; above, faster
    // than any link between datacenters.
    if (!(link.bandwidth >= 1e6 / 8 && link.bandwidth <= 1e15 / 8)) {
      bandwidth.fail(fmt::format("found {}, expected 1 Mb/s to 1 Pb/s (slower, one weight sync of a 7B model takes more than a day)",
                                 sim::quote(bandwidth.as_string())));
    }
    if (auto v = c.optional("latency")) {
      link.latency = v->as_duration().to_seconds();
      if (!(link.latency <= 1)) v->fail(fmt::format("found {}, expected at most 1 s (light crosses the Earth in 0.07 s)", sim::quote(v->as_string())));
    }
    c.finish();
    s.cross_dc = link;
  } else if (cross) {
    cross->fail("found a cross-datacenter link, but the pools share a datacenter");
  }

  // Rollouts (read first: they set the default context).
  const JsonNode rollouts = top.required("rollouts");
  JsonObject r = rollouts.as_object();
  std::int64_t longest = 0;
  if (auto t = r.optional("trace")) {
    const std::filesystem::path p = t->as_string();
    const std::string trace_path = p.is_absolute() ? p.string() : (std::filesystem::path(path).parent_path() / p).string();
    s.batches = load_rollouts(trace_path);
    if (static_cast<int>(s.batches.size()) < iterations) {
      t->fail(fmt::format("found {} iterations in {}, expected at least the {} asked for", s.batches.size(), trace_path, iterations));
    }
    s.batches.resize(static_cast<std::size_t>(iterations));
  } else {
    const JsonNode prompts_node = r.required("prompts");
    const int prompts = prompts_node.as_int_in(1, 1 << 20);
    const int group = r.required("group_size").as_int_in(1, 1024);
    std::string data = "../shared/data";
    if (auto v = r.optional("data")) data = v->as_string();
    models::RolloutLengthModel m;
    const JsonNode out = r.required("output");
    JsonObject oo = out.as_object();
    if (auto src = oo.optional("source")) {
      m.empirical = load_output_lengths(src->as_string(), data, {src->source(), src->pointer()});
      m.output = read_lengths(oo, out, 25.0);
    } else {
      m.output = read_lengths(oo, out, 25.0);
    }
    oo.finish();
    if (auto v = r.optional("prompt")) {
      JsonObject po = v->as_object();
      m.prompt = read_lengths(po, *v, 4.0);
      po.finish();
    } else {
      m.prompt = models::DocLengthModel::lognormal(300, 1500, 2048);
    }
    if (auto v = r.optional("prompt_share")) {
      m.prompt_share = v->as_number();
      if (!(m.prompt_share >= 0 && m.prompt_share <= 1)) v->fail_expected("a share from 0 to 1");
    }
    auto growth = r.optional("growth");
    auto growth_from = r.optional("growth_from");
    if (growth && growth_from) growth_from->fail("found both growth and growth_from, expected one");
    if (growth) {
      m.growth = growth->as_number();
      if (!(m.growth > 0 && m.growth < 1000)) growth->fail_expected("a multiplier in (0, 1000)");
    }
    if (growth_from) {
      const LengthGrowth g = load_length_growth(growth_from->as_string(), data);
      m.growth = g.end_mean / g.start_mean;
    }
    try {
      s.batches = models::RolloutGenerator(m, s.seed).batches(iterations, prompts, group);
    } catch (const sim::InputError& e) {
      if (e.source() != "<workload>") throw;
      out.fail(e.message());  // the generator's lengths do not fit: blame the output lengths
    }
    longest = m.prompt.max_length + m.output.max_length;
  }
  r.finish();
  for (const models::RolloutBatch& b : s.batches) {
    for (const models::RolloutGroup& g : b.groups) {
      for (const std::int64_t o : g.outputs) longest = std::max(longest, g.prompt_tokens + o);
    }
  }

  // Generation.
  s.generation.model = s.model;
  s.generation.gpu = s.generation_pool.gpu;
  s.generation.nvlink = s.generation_pool.gpu.nvlink_bandwidth;
  s.generation.max_batch = 256;  // vLLM's default max_num_seqs
  s.generation.max_context = (longest + 1023) / 1024 * 1024;
  JsonObject g = top.required("generation").as_object();
  const JsonNode tp = g.required("tp");
  s.generation.tp = tp.as_int_in(1, 64);
  if (s.model.heads % s.generation.tp != 0) tp.fail(fmt::format("found tp {}, which does not divide {}'s {} heads", s.generation.tp, s.model.name, s.model.heads));
  if (auto v = g.optional("max_context")) {
    s.generation.max_context = v->as_int_in(2, 1 << 24);
    if (s.generation.max_context < longest) {
      v->fail(fmt::format("found a maximum context of {} tokens, but the rollouts hold a sample of {} (prompt + output)", s.generation.max_context,
                          longest));
    }
  }
  if (auto v = g.optional("memory_fraction")) {
    s.generation.memory_fraction = v->as_number();
    if (!(s.generation.memory_fraction > 0 && s.generation.memory_fraction <= 1)) v->fail_expected("a fraction in (0, 1]");
  }
  if (auto v = g.optional("max_batch")) s.generation.max_batch = v->as_int_in(1, 1 << 16);
  if (auto v = g.optional("dispatcher")) s.dispatcher = v->as_string();
  if (auto v = g.optional("ranker")) {
    JsonObject ro = v->as_object();
    if (auto a = ro.optional("alpha")) {
      s.alpha = a->as_number();
      if (!(s.alpha > 0 && s.alpha < 1)) a->fail_expected("a share in (0, 1)");
    }
    if (auto a = ro.optional("recall")) {
      s.recall = a->as_number();
      if (!(s.recall >= 0 && s.recall <= 1)) a->fail_expected("a recall from 0 to 1");
    }
    ro.finish();
  }
  auto split = g.optional("gpus");
  g.finish();
  const int gtp = s.generation.tp;
  if (split) {
    if (!s.shared) split->fail("found a generation split, but the generation pool is its own; give its size in generation_pool/gpus");
    s.generation_gpus = split->as_int_in(1, 1 << 20);
    if (s.generation_gpus >= s.generation_pool.gpus) {
      split->fail(fmt::format("the generation pool takes {} of the pool's {} GPUs, leaving none for training", s.generation_gpus, s.generation_pool.gpus));
    }
    if (s.generation_gpus % gtp != 0) split->fail(fmt::format("found {} generation GPUs, expected a multiple of tp {}", s.generation_gpus, gtp));
  } else if (!s.shared && s.generation_pool.gpus % gtp != 0) {
    throw sim::InputError(path, "/generation_pool/gpus", fmt::format("found {} GPUs, expected a multiple of the generation tp {}", s.generation_pool.gpus, gtp));
  }

  // The weights and one sequence of the maximum context must fit an instance (checked again
  // beside colocated training's states when a policy runs).
  {
    const models::RooflineCostModel probe(s.generation.gpu);
    const models::GenerationInstance instance(s.generation, probe, path);
  }

  // Training.
  JsonObject t = top.required("training").as_object();
  if (auto v = t.optional("tp")) s.train.tp = v->as_int_in(1, 64);
  if (auto v = t.optional("pp")) s.train.pp = v->as_int_in(1, 1024);
  if (auto v = t.optional("cp")) s.train.cp = v->as_int_in(1, 1024);
  if (auto v = t.optional("zero")) s.train.zero = v->as_int_in(0, 3);
  if (auto v = t.optional("recompute")) {
    const std::string k = v->as_string();
    if (k == "none") s.train.recompute = models::Recompute::none;
    else if (k == "selective") s.train.recompute = models::Recompute::selective;
    else if (k == "full") s.train.recompute = models::Recompute::full;
    else v->fail(fmt::format("found {}, expected none, selective or full", sim::quote(k)));
  }
  s.train.micro_batch_tokens = (longest + 127) / 128 * 128;
  if (auto v = t.optional("micro_batch_tokens")) {
    s.train.micro_batch_tokens = v->as_int_in(1, 1 << 24);
    if (s.train.micro_batch_tokens < longest) {
      v->fail(fmt::format("found {} tokens, less than the longest sample ({}); a sample must fit a micro-batch", s.train.micro_batch_tokens, longest));
    }
  }
  if (auto v = t.optional("sequence_policy")) s.sequence_policy = v->as_string();
  if (auto v = t.optional("schedule")) s.schedule = v->as_string();
  t.finish();
  top.finish();
  return s;
}

}  // namespace orrery::traces
