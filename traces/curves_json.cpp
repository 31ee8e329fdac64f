#include "traces/curves_json.hpp"

#include "sim/error.hpp"
#include "traces/atomic_file.hpp"
#include "traces/json_input.hpp"

#include <cmath>
#include <fmt/format.h>

namespace orrery::traces {

namespace {

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

double optional_number(JsonObject& f, std::string_view key) {
  auto v = f.optional(key);
  if (!v || v->is_null()) return std::numeric_limits<double>::quiet_NaN();
  return v->as_number();
}

std::size_t count(JsonObject& f, std::string_view key) {
  auto v = f.optional(key);
  if (!v) return 0;
  const std::int64_t n = v->as_int();
  if (n < 0) v->fail_expected("a count of zero or more");
  return static_cast<std::size_t>(n);
}

}  // namespace

models::CostCurves read_curves(std::string_view json_text, const std::string& source) {
  const auto doc = parse_json(json_text, source);
  JsonObject top = doc->root().as_object();
  const JsonNode schema = top.required("schema");
  if (schema.as_string() != kCurvesSchema) {
    schema.fail(fmt::format("found schema {}, expected {} (a file from `orrery calibrate fit`)", sim::quote(schema.as_string()),
                            sim::quote(kCurvesSchema)));
  }
  models::CostCurves out;
  out.device = top.required("device").as_string();
  if (auto s = top.optional("source")) out.source = s->as_string();
  if (auto m = top.optional("metadata")) {
    const auto& j = m->json();
    if (!j.is_object()) m->fail_expected("an object of strings");
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!it.value().is_string()) {
        JsonNode(it.value(), source, m->pointer() + "/" + pointer_token(it.key())).fail_expected("a string");
      }
      out.metadata.emplace_back(it.key(), it.value().get<std::string>());
    }
  }
  for (const JsonNode& c : top.required("curves").as_array()) {
    JsonObject f = c.as_object();
    models::CostCurve curve;
    const JsonNode kind_node = f.required("kind");
    const std::string kind = kind_node.as_string();
    const auto k = models::parse_kernel_kind(kind);
    if (!k) {
      kind_node.fail(fmt::format("unknown kernel kind {}{}", sim::quote(kind), sim::did_you_mean(kind, models::kernel_kind_names())));
    }
    curve.kind = *k;
    const JsonNode dtype_node = f.required("dtype");
    const auto t = models::parse_dtype(dtype_node.as_string());
    if (!t) dtype_node.fail_expected(fmt::format("a dtype ({})", fmt::join(models::dtype_names(), ", ")));
    curve.dtype = *t;
    if (auto v = f.optional("causal")) curve.causal = v->as_bool();
    const std::vector<std::string> expected = models::feature_names(curve.kind);
    const JsonNode features_node = f.required("features");
    std::vector<std::string> features;
    for (const JsonNode& n : features_node.as_array()) features.push_back(n.as_string());
    if (features != expected) {
      features_node.fail(fmt::format("found features [{}], expected [{}] for {}", fmt::join(features, ", "),
                                     fmt::join(expected, ", "), kind));
    }
    const JsonNode axes_node = f.required("axes");
    const std::vector<JsonNode> axes = axes_node.as_array();
    if (axes.size() != expected.size()) axes_node.fail_expected(fmt::format("{} axes, one per feature", expected.size()));
    for (const JsonNode& a : axes) {
      std::vector<double> values;
      for (const JsonNode& v : a.as_array()) {
        const double x = v.as_number();
        if (!(x > 0) || !std::isfinite(x)) v.fail_expected("a positive feature value");
        if (!values.empty() && !(x > values.back())) v.fail_expected(fmt::format("a value above {} (axes ascend)", values.back()));
        values.push_back(x);
      }
      if (values.empty()) a.fail_expected("at least one value");
      curve.axes.push_back(std::move(values));
    }
    const JsonNode seconds_node = f.required("seconds");
    for (const JsonNode& v : seconds_node.as_array()) {
      const double s = v.as_number();
      if (!(s > 0) || !std::isfinite(s)) v.fail_expected("a positive time in seconds");
      curve.log_seconds.push_back(std::log(s));
    }
    if (curve.log_seconds.size() != curve.cells()) {
      seconds_node.fail(fmt::format("found {} times, expected {} (one per grid cell)", curve.log_seconds.size(), curve.cells()));
    }
    curve.points = count(f, "points");
    curve.filled = count(f, "filled");
    curve.repaired = count(f, "repaired");
    curve.loo_interpolation_mape = optional_number(f, "loo_interpolation_mape");
    curve.loo_fit_mape = optional_number(f, "loo_fit_mape");
    if (auto v = f.optional("fit_coefficients")) {
      for (const JsonNode& x : v->as_array()) curve.fit_coefficients.push_back(x.as_number());
    }
    f.finish();
    out.curves.push_back(std::move(curve));
  }
  top.finish();
  return out;
}

models::CostCurves load_curves(const std::string& path) { return read_curves(read_text_file(path), path); }

std::string curves_to_json(const models::CostCurves& curves) {
  nlohmann::ordered_json top;
  top["schema"] = kCurvesSchema;
  top["device"] = curves.device;
  top["source"] = curves.source;
  nlohmann::ordered_json meta = nlohmann::ordered_json::object();
  for (const auto& [k, v] : curves.metadata) meta[k] = v;
  top["metadata"] = meta;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const models::CostCurve& c : curves.curves) {
    nlohmann::ordered_json j;
    j["kind"] = models::to_string(c.kind);
    j["dtype"] = models::to_string(c.dtype);
    j["causal"] = c.causal;
    j["features"] = models::feature_names(c.kind);
    j["axes"] = c.axes;
    nlohmann::ordered_json seconds = nlohmann::ordered_json::array();
    for (const double l : c.log_seconds) seconds.push_back(std::exp(l));
    j["seconds"] = seconds;
    j["points"] = c.points;
    j["filled"] = c.filled;
    j["repaired"] = c.repaired;
    j["loo_interpolation_mape"] = number_or_null(c.loo_interpolation_mape);
    j["loo_fit_mape"] = number_or_null(c.loo_fit_mape);
    j["fit_coefficients"] = c.fit_coefficients;
    list.push_back(std::move(j));
  }
  top["curves"] = list;
  return top.dump(1) + "\n";
}

void write_curves(const models::CostCurves& curves, const std::string& path) { write_file_atomically(path, curves_to_json(curves)); }

}  // namespace orrery::traces
