#include "calibration/profile.hpp"

#include "sim/error.hpp"
#include "traces/atomic_file.hpp"
#include "traces/json_input.hpp"

#include <algorithm>
#include <array>
#include <ctime>
#include <cmath>
#include <fmt/format.h>

namespace orrery::calibration {

using traces::JsonNode;
using traces::JsonObject;

namespace {

std::int64_t size_field(JsonObject& shape, std::string_view key) {
  const JsonNode v = shape.required(key);
  const std::int64_t n = v.as_int();
  if (n <= 0) v.fail_expected(fmt::format("a positive {}", key));
  return n;
}

std::vector<std::int64_t> size_list(const JsonNode& node) {
  std::vector<std::int64_t> out;
  for (const JsonNode& v : node.as_array()) {
    const std::int64_t n = v.as_int();
    if (n < 0) v.fail_expected("a size of zero or more");
    out.push_back(n);
  }
  if (out.empty()) node.fail_expected("at least one value");
  return out;
}

models::Kernel kernel_from_json(JsonObject& f) {
  const JsonNode kind_node = f.required("kind");
  const std::string kind_text = kind_node.as_string();
  const auto kind = models::parse_kernel_kind(kind_text);
  if (!kind) {
    kind_node.fail(fmt::format("unknown kernel kind {}{}; valid: {}", sim::quote(kind_text),
                               sim::did_you_mean(kind_text, models::kernel_kind_names()),
                               fmt::join(models::kernel_kind_names(), ", ")));
  }
  models::DType dtype = models::DType::bf16;
  if (auto d = f.optional("dtype")) {
    const auto t = models::parse_dtype(d->as_string());
    if (!t) d->fail(fmt::format("unknown dtype {}; valid: {}", sim::quote(d->as_string()), fmt::join(models::dtype_names(), ", ")));
    dtype = *t;
  }
  const JsonNode shape_node = f.required("shape");
  JsonObject shape = shape_node.as_object();
  models::Kernel k;
  switch (*kind) {
    case models::KernelKind::gemm: {
      const std::int64_t m = size_field(shape, "m"), n = size_field(shape, "n"), kk = size_field(shape, "k");
      std::int64_t batch = 1;
      if (shape.optional("batch")) batch = size_field(shape, "batch");
      k = models::Kernel::gemm(m, n, kk, dtype, batch);
      break;
    }
    case models::KernelKind::grouped_gemm: {
      std::vector<std::int64_t> groups = size_list(shape.required("m"));
      k = models::Kernel::grouped_gemm(std::move(groups), size_field(shape, "n"), size_field(shape, "k"), dtype);
      break;
    }
    case models::KernelKind::attention_fwd:
    case models::KernelKind::attention_bwd: {
      std::vector<std::int64_t> docs;
      if (auto d = shape.optional("docs")) {
        docs = size_list(*d);
      } else {
        const std::int64_t seqlen = size_field(shape, "seqlen");
        const std::int64_t batch = shape.optional("batch") ? size_field(shape, "batch") : 1;
        docs.assign(static_cast<std::size_t>(batch), seqlen);
      }
      const std::int64_t heads = size_field(shape, "heads");
      const std::int64_t kv_heads = shape.optional("kv_heads") ? size_field(shape, "kv_heads") : heads;
      const std::int64_t head_dim = size_field(shape, "head_dim");
      const std::int64_t head_dim_v = shape.optional("head_dim_v") ? size_field(shape, "head_dim_v") : head_dim;
      bool causal = false;
      if (auto c = shape.optional("causal")) causal = c->as_bool();
      k = models::Kernel::attention(*kind == models::KernelKind::attention_fwd ? models::Pass::forward : models::Pass::backward,
                                    std::move(docs), heads, kv_heads, head_dim, causal, dtype, head_dim_v);
      break;
    }
    case models::KernelKind::optimizer: k = models::Kernel::optimizer(size_field(shape, "params")); break;
    default: {
      const JsonNode b = shape.required("bytes");
      const double bytes = b.as_number();
      if (!(bytes > 0)) b.fail_expected("a positive byte count");
      k = models::Kernel::memory_bound(*kind, sim::Bytes(bytes), dtype);
    }
  }
  shape.finish();
  models::validate_kernel(k, shape_node.location());
  return k;
}

nlohmann::ordered_json kernel_to_json(const models::Kernel& k) {
  nlohmann::ordered_json j;
  j["kind"] = models::to_string(k.kind);
  j["dtype"] = models::to_string(k.dtype);
  nlohmann::ordered_json s;
  switch (k.kind) {
    case models::KernelKind::gemm:
      s["m"] = k.m, s["n"] = k.n, s["k"] = k.k;
      if (k.batch != 1) s["batch"] = k.batch;
      break;
    case models::KernelKind::grouped_gemm: s["m"] = k.group_m, s["n"] = k.n, s["k"] = k.k; break;
    case models::KernelKind::attention_fwd:
    case models::KernelKind::attention_bwd: {
      const bool uniform = std::all_of(k.doc_lens.begin(), k.doc_lens.end(), [&](std::int64_t l) { return l == k.doc_lens.front(); });
      if (uniform) {
        s["seqlen"] = k.doc_lens.front();
        s["batch"] = k.doc_lens.size();
      } else {
        s["docs"] = k.doc_lens;
      }
      s["heads"] = k.heads, s["kv_heads"] = k.kv_heads, s["head_dim"] = k.head_dim, s["head_dim_v"] = k.head_dim_v;
      s["causal"] = k.causal;
      break;
    }
    case models::KernelKind::optimizer: s["params"] = k.params; break;
    default: s["bytes"] = k.bytes;
  }
  j["shape"] = s;
  return j;
}

Fields read_fields(JsonObject& top, std::string_view key) {
  Fields out;
  auto node = top.optional(key);
  if (!node) return out;
  const auto& j = node->json();
  if (!j.is_object()) node->fail_expected("an object of strings");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_string()) {
      JsonNode(it.value(), node->source(), node->pointer() + "/" + traces::pointer_token(it.key())).fail_expected("a string");
    }
    out.emplace_back(it.key(), it.value().get<std::string>());
  }
  return out;
}

double seconds(JsonObject& f, std::string_view key) {
  const JsonNode v = f.required(key);
  const double s = v.as_number();
  if (!(s > 0) || !std::isfinite(s)) v.fail_expected("a positive time in seconds");
  return s;
}

}  // namespace

Profile read_profile(std::string_view json_text, const std::string& source) {
  const auto doc = traces::parse_json(json_text, source);
  JsonObject top = doc->root().as_object();
  const JsonNode schema = top.required("schema");
  if (schema.as_string() != kProfileSchema) {
    schema.fail(fmt::format("found schema {}, expected {}", sim::quote(schema.as_string()), sim::quote(kProfileSchema)));
  }
  Profile p;
  p.harness = top.required("harness").as_string();
  p.device = top.required("device").as_string();
  p.identity = read_fields(top, "identity");
  p.software = read_fields(top, "software");
  p.clocks = read_fields(top, "clocks");
  p.date = top.required("date").as_string();
  const JsonNode points = top.required("points");
  for (const JsonNode& n : points.as_array()) {
    JsonObject f = n.as_object();
    Measurement m;
    m.kernel = kernel_from_json(f);
    m.median_s = seconds(f, "median_s");
    m.p10_s = seconds(f, "p10_s");
    m.p90_s = seconds(f, "p90_s");
    if (!(m.p10_s <= m.median_s && m.median_s <= m.p90_s)) {
      n.fail(fmt::format("found p10 {} s, median {} s, p90 {} s, expected p10 <= median <= p90", m.p10_s, m.median_s, m.p90_s));
    }
    const JsonNode reps = f.required("repetitions");
    const std::int64_t r = reps.as_int();
    if (r < 1 || r > 1'000'000'000) reps.fail_expected("a repetition count of at least 1");
    m.repetitions = static_cast<int>(r);
    f.finish();
    p.points.push_back(std::move(m));
  }
  if (p.points.empty()) points.fail_expected("at least one measured point");
  if (auto collectives = top.optional("collectives")) {
    for (const JsonNode& n : collectives->as_array()) {
      JsonObject f = n.as_object();
      CollectiveMeasurement c;
      c.op = f.required("op").as_string();
      const JsonNode bytes = f.required("bytes");
      c.bytes = bytes.as_number();
      if (!(c.bytes > 0)) bytes.fail_expected("a positive byte count");
      const JsonNode ranks = f.required("ranks");
      const std::int64_t r = ranks.as_int();
      if (r < 2 || r > 1'000'000) ranks.fail_expected("2 or more ranks");
      c.ranks = static_cast<int>(r);
      c.median_s = seconds(f, "median_s");
      c.p10_s = seconds(f, "p10_s");
      c.p90_s = seconds(f, "p90_s");
      const JsonNode reps = f.required("repetitions");
      if (reps.as_int() < 1) reps.fail_expected("a repetition count of at least 1");
      c.repetitions = static_cast<int>(reps.as_int());
      f.finish();
      p.collectives.push_back(std::move(c));
    }
  }
  top.finish();
  return p;
}

Profile load_profile(const std::string& path) { return read_profile(traces::read_text_file(path), path); }

std::string profile_to_json(const Profile& p) {
  nlohmann::ordered_json top;
  top["schema"] = kProfileSchema;
  top["harness"] = p.harness;
  top["device"] = p.device;
  const auto fields = [](const Fields& f) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (const auto& [k, v] : f) j[k] = v;
    return j;
  };
  top["identity"] = fields(p.identity);
  top["software"] = fields(p.software);
  top["clocks"] = fields(p.clocks);
  top["date"] = p.date;
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  for (const Measurement& m : p.points) {
    nlohmann::ordered_json j = kernel_to_json(m.kernel);
    j["median_s"] = m.median_s;
    j["p10_s"] = m.p10_s;
    j["p90_s"] = m.p90_s;
    j["repetitions"] = m.repetitions;
    points.push_back(std::move(j));
  }
  top["points"] = points;
  if (!p.collectives.empty()) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const CollectiveMeasurement& c : p.collectives) {
      list.push_back({{"op", c.op}, {"bytes", c.bytes}, {"ranks", c.ranks}, {"median_s", c.median_s}, {"p10_s", c.p10_s}, {"p90_s", c.p90_s},
                      {"repetitions", c.repetitions}});
    }
    top["collectives"] = list;
  }
  return top.dump(1) + "\n";
}

void write_profile(const Profile& p, const std::string& path) { traces::write_file_atomically(path, profile_to_json(p)); }

std::string utc_now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::array<char, 32> buf{};
  std::strftime(buf.data(), buf.size(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf.data();
}

Measurement summarize(const models::Kernel& kernel, std::vector<double>& samples) {
  ORRERY_CHECK(!samples.empty(), "no timing samples for {}", models::describe(kernel));
  std::sort(samples.begin(), samples.end());
  const auto at = [&](double q) {
    const double pos = q * static_cast<double>(samples.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, samples.size() - 1);
    return samples[lo] + (samples[hi] - samples[lo]) * (pos - static_cast<double>(lo));
  };
  Measurement m;
  m.kernel = kernel;
  m.median_s = at(0.5);
  m.p10_s = at(0.1);
  m.p90_s = at(0.9);
  m.repetitions = static_cast<int>(samples.size());
  return m;
}

}  // namespace orrery::calibration
