// `orrery sweep`: plans, designs, in-process points, results, resume (studies/sweep.hpp).
#include "studies/sweep.hpp"

#include "reports/html_pages.hpp"
#include "reports/human.hpp"

#include "runs/runs.hpp"
#include "reports/html_pages.hpp"
#include "runs/options.hpp"
#include "runs/progress.hpp"
#include "runs/step_cost.hpp"
#include "sim/error.hpp"
#include "traces/atomic_file.hpp"
#include "traces/json_input.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>


#include <algorithm>
#include <atomic>
#include <cctype>
#include <exception>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <thread>

namespace orrery::studies {

using namespace runs;  // the runs a study repeats

namespace {

using nlohmann::json;
using sim::InputError;
using traces::JsonNode;
using traces::JsonObject;

constexpr std::int64_t kMaxPoints = 10'000'000;
// Threads beyond a few thousand only add contention: no machine has that many cores.
constexpr std::int64_t kMaxThreads = 4096;

const std::vector<std::string> kCommands = {"step", "estimate", "compare", "cluster", "collective"};

// The options each command takes from a plan's "options" (and option axes), and their JSON types.
struct OptionSpec {
  const char* name;
  json::value_t type;
  const char* help;
};
const std::map<std::string, std::vector<OptionSpec>>& command_options() {
  static const std::map<std::string, std::vector<OptionSpec>> options = {
      {"step",
       {{"gpus", json::value_t::string, "a GPU catalog file"},
        {"no_reuse", json::value_t::boolean, "simulate every rank"},
        {"train_tokens", json::value_t::string, "tokens to train on (\"15T\"): the train.time_s and train.days columns"}}},
      {"estimate",
       {{"gpus", json::value_t::string, "a GPU catalog file"},
        {"train_tokens", json::value_t::string, "tokens to train on (\"15T\"): the train.time_s and train.days columns"}}},
      {"compare",
       {{"policies", json::value_t::string, "comma-separated policies"},
        {"steps", json::value_t::number_integer, "steps per policy"},
        {"iterations", json::value_t::number_integer, "RL iterations per policy"},
        {"gpus", json::value_t::string, "a GPU catalog file"},
        {"jobs", json::value_t::string, "a job trace (cluster scenarios)"},
        {"skip_bad_rows", json::value_t::boolean, "skip malformed trace rows"}}},
      {"cluster",
       {{"policy", json::value_t::string, "a scheduler"},
        {"jobs", json::value_t::string, "a job trace"},
        {"skip_bad_rows", json::value_t::boolean, "skip malformed trace rows"}}},
      {"collective", {}},
  };
  return options;
}

// The fields of a collective "scenario" (the options of `orrery collective`).
const std::vector<std::string> kCollectiveFields = {"topology", "op", "algo", "proto", "nvls", "size", "ranks", "channels", "chunks", "root", "peer", "alltoallv", "quantum"};

std::string type_name(const json& v) {
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  return "null";
}

bool same_kind(const json& a, const json& b) { return (a.is_number() && b.is_number()) || a.type() == b.type(); }

std::string resolve_beside(const std::string& anchor, const std::string& path) {
  const std::filesystem::path p(path);
  if (p.is_absolute()) return path;
  const std::filesystem::path dir = std::filesystem::path(anchor).parent_path();
  return dir.empty() ? path : (dir / p).string();
}

std::string describe(const json& v) {
  std::string text = v.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return fmt::format("{} {}", type_name(v), text);
}

// The keys an object at `pointer` of the base has, for an error about a missing field.
std::string keys_at(const json& base, const std::string& pointer) {
  const std::size_t slash = pointer.rfind('/');
  const std::string parent = slash == std::string::npos ? "" : pointer.substr(0, slash);
  try {
    const json& p = base.at(json::json_pointer(parent));
    if (!p.is_object()) return "";
    std::string keys;
    for (const auto& [k, v] : p.items()) keys += (keys.empty() ? "" : ", ") + k;
    return fmt::format("; {} has: {}", parent.empty() ? "the base" : parent, keys);
  } catch (const json::exception&) {
    return "";
  }
}

// Whether any string in `j` holds `text`.
bool mentions(const json& j, const std::string& text) {
  if (j.is_string()) return j.get_ref<const std::string&>().find(text) != std::string::npos;
  if (j.is_structured()) {
    for (const auto& child : j) {
      if (mentions(child, text)) return true;
    }
  }
  return false;
}

SweepAxis read_axis(const JsonNode& node, const SweepPlan& plan) {
  JsonObject o = node.as_object();
  SweepAxis axis;
  const auto pointer = o.optional("pointer");
  const auto pointers = o.optional("pointers");
  const auto option = o.optional("option");
  const auto variable = o.optional("variable");
  if ((pointer ? 1 : 0) + (pointers ? 1 : 0) + (option ? 1 : 0) + (variable ? 1 : 0) != 1) {
    node.fail("expected exactly one of \"pointer\" (a scenario field), \"pointers\" (fields varied together), \"option\" (a command option) "
              "or \"variable\" (a ${name} written into the base's strings)");
  }
  if (variable) {
    axis.variable = variable->as_string();
    if (axis.variable.empty() || axis.variable.find_first_of("${}") != std::string::npos) {
      variable->fail(fmt::format("found {}, expected a name such as \"nic\" (the base then holds ${{nic}})", sim::quote(axis.variable)));
    }
    if (!mentions(plan.base, "${" + axis.variable + "}") && !mentions(plan.options, "${" + axis.variable + "}")) {
      variable->fail(fmt::format("the base scenario and the options hold no ${{{}}}; write it into a string, e.g. \"dgx-h100:nodes=8,nic=${{{}}}\"",
                                 axis.variable, axis.variable));
    }
  }
  if (pointer) axis.pointers.push_back(pointer->as_string());
  if (pointers) {
    for (const JsonNode& p : pointers->as_array()) axis.pointers.push_back(p.as_string());
    if (axis.pointers.empty()) pointers->fail("found an empty array, expected at least one pointer");
  }
  if (option) axis.option = option->as_string();
  const auto name = o.optional("name");
  axis.name = name ? name->as_string() : !axis.option.empty() ? axis.option : !axis.variable.empty() ? axis.variable : axis.pointers.front();
  for (std::size_t i = 0; i < axis.pointers.size(); ++i) {
    const std::string& p = axis.pointers[i];
    const JsonNode where = pointer ? *pointer : pointers->as_array()[i];  // a copy: as_array() is a temporary
    if (p.empty() || p.front() != '/') where.fail(fmt::format("found {}, expected a JSON pointer into the base scenario such as \"/plan/tp\"", sim::quote(p)));
    json::json_pointer jp;
    try {
      jp = json::json_pointer(p);
    } catch (const json::exception&) {
      where.fail(fmt::format("found {}, expected a JSON pointer (RFC 6901: \"/a/b\", ~0 for ~ and ~1 for /)", sim::quote(p)));
    }
    if (!plan.base.contains(jp)) {
      where.fail(fmt::format("{} is not in the base scenario ({}); write the field there to vary it{}", p, plan.base_path.empty() ? "inline" : plan.base_path,
                             keys_at(plan.base, p)));
    }
  }
  const OptionSpec* spec = nullptr;
  if (!axis.option.empty()) {
    for (const OptionSpec& s : command_options().at(plan.command)) {
      if (axis.option == s.name) spec = &s;
    }
    if (spec == nullptr) {
      std::string known;
      for (const OptionSpec& s : command_options().at(plan.command)) known += (known.empty() ? "" : ", ") + std::string(s.name);
      option->fail(fmt::format("found {}, expected an option of `{}`: {}", sim::quote(axis.option), plan.command, known.empty() ? "(none)" : known));
    }
  }

  const auto values = o.optional("values");
  const auto range = o.optional("range");
  if ((values ? 1 : 0) + (range ? 1 : 0) != 1) node.fail("expected exactly one of \"values\" (a list) or \"range\" ({\"min\", \"max\", ...})");
  // The field (or option) each value must match in type.
  const auto check_value = [&](const json& v, const JsonNode& at, std::size_t k) {
    if (!axis.variable.empty()) {
      if (!v.is_string() && !v.is_number() && !v.is_boolean()) at.fail(fmt::format("found {}, expected a string, number or boolean to write in", describe(v)));
      return;
    }
    if (spec != nullptr) {
      const json prototype = spec->type == json::value_t::string ? json("") : spec->type == json::value_t::boolean ? json(false) : json(0);
      if (!same_kind(v, prototype)) at.fail(fmt::format("found {}, expected {} for option {} ({})", describe(v), type_name(prototype), axis.option, spec->help));
      if (spec->type == json::value_t::number_integer && !v.is_number_integer()) at.fail(fmt::format("found {}, expected a whole number", describe(v)));
      return;
    }
    const json& field = plan.base.at(json::json_pointer(axis.pointers[k]));
    if (!same_kind(v, field)) {
      at.fail(fmt::format("found {}, expected {} like the base's {} ({})", describe(v), type_name(field), axis.pointers[k], describe(field)));
    }
  };
  if (values) {
    const std::vector<JsonNode> list = values->as_array();
    if (list.empty()) values->fail("found an empty list, expected at least one value");
    for (const JsonNode& v : list) {
      if (axis.pointers.size() > 1) {
        if (!v.json().is_array() || v.json().size() != axis.pointers.size()) {
          v.fail_expected(fmt::format("an array of {} values, one per pointer", axis.pointers.size()));
        }
        const std::vector<JsonNode> parts = v.as_array();
        for (std::size_t k = 0; k < parts.size(); ++k) check_value(parts[k].json(), parts[k], k);
      } else {
        check_value(v.json(), v, 0);
      }
      axis.values.push_back(v.json());
    }
    if (const auto labels = o.optional("labels")) {
      const std::vector<JsonNode> names = labels->as_array();
      if (names.size() != axis.values.size()) {
        labels->fail(fmt::format("found {} labels, expected one per value ({})", names.size(), axis.values.size()));
      }
      for (const JsonNode& n : names) axis.labels.push_back(n.as_string());
    }
  } else {
    if (axis.pointers.size() > 1) range->fail("a range sets one field; fields varied together need \"values\"");
    JsonObject r = range->as_object();
    axis.is_range = true;
    axis.min = r.required("min").as_number();
    const JsonNode max = r.required("max");
    axis.max = max.as_number();
    if (!(axis.max >= axis.min)) max.fail(fmt::format("found {}, expected a maximum no less than the minimum {}", axis.max, axis.min));
    if (const auto steps = r.optional("steps")) axis.steps = steps->as_int_in(1, 1'000'000);
    if (const auto log = r.optional("log")) axis.log = log->as_bool();
    if (const auto integer = r.optional("integer")) axis.integer = integer->as_bool();
    if (axis.log && !(axis.min > 0)) range->fail(fmt::format("a log range needs a positive minimum, found {}", axis.min));
    r.finish();
    check_value(axis.integer ? json(0) : json(0.5), *range, 0);
    if (plan.design == "grid" && axis.steps == 0) range->fail("a grid needs \"steps\" (how many values from min to max)");
  }
  o.finish();
  return axis;
}

// Uniform doubles in [0, 1) from 53 random bits: the same on every platform (std's
// distributions are not).
struct Uniform {
  std::uint64_t state;
  std::uint64_t next() {  // SplitMix64 (Steele, Lea and Flood, OOPSLA 2014)
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double operator()() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  std::size_t below(std::size_t n) { return static_cast<std::size_t>((*this)() * static_cast<double>(n)); }
};

// The axis value at fraction u in [0, 1).
json value_at(const SweepAxis& axis, double u) {
  if (!axis.is_range) return axis.values[std::min(axis.values.size() - 1, static_cast<std::size_t>(u * static_cast<double>(axis.values.size())))];
  const double x = axis.log ? std::exp(std::log(axis.min) + u * (std::log(axis.max) - std::log(axis.min))) : axis.min + u * (axis.max - axis.min);
  if (axis.integer) return json(static_cast<std::int64_t>(std::llround(std::clamp(x, axis.min, axis.max))));
  return json(x);
}

// The grid's values of an axis.
std::vector<json> grid_values(const SweepAxis& axis) {
  if (!axis.is_range) return axis.values;
  std::vector<json> out;
  for (int i = 0; i < axis.steps; ++i) {
    const double t = axis.steps == 1 ? 0.0 : static_cast<double>(i) / (axis.steps - 1);
    const double x = axis.log ? std::exp(std::log(axis.min) + t * (std::log(axis.max) - std::log(axis.min))) : axis.min + t * (axis.max - axis.min);
    json v = axis.integer ? json(static_cast<std::int64_t>(std::llround(x))) : json(x);
    if (axis.integer && !out.empty() && out.back() == v) continue;  // rounding merged two steps
    out.push_back(std::move(v));
  }
  return out;
}

// Writes `value` wherever `${name}` stands in a string of `j`: a string that is only the
// reference takes the value itself (a number stays a number); elsewhere its text is spliced in.
void substitute(json& j, const std::string& reference, const json& value) {
  if (j.is_string()) {
    const std::string& text = j.get_ref<const std::string&>();
    if (text == reference) {
      j = value;
      return;
    }
    if (text.find(reference) == std::string::npos) return;
    const std::string with = value.is_string() ? value.get<std::string>() : value.dump();
    std::string out;
    std::size_t at = 0;
    for (std::size_t hit = text.find(reference); hit != std::string::npos; hit = text.find(reference, at)) {
      out += text.substr(at, hit - at) + with;
      at = hit + reference.size();
    }
    j = out + text.substr(at);
  } else if (j.is_structured()) {
    for (auto& child : j) substitute(child, reference, value);
  }
}

void set_values(json& scenario, json& options, const std::vector<SweepAxis>& axes, const std::vector<json>& values) {
  for (std::size_t a = 0; a < axes.size(); ++a) {
    const SweepAxis& axis = axes[a];
    if (!axis.variable.empty()) {
      substitute(scenario, "${" + axis.variable + "}", values[a]);
      substitute(options, "${" + axis.variable + "}", values[a]);
    } else if (!axis.option.empty()) {
      options[axis.option] = values[a];
    } else if (axis.pointers.size() == 1) {
      scenario[json::json_pointer(axis.pointers[0])] = values[a];
    } else {
      for (std::size_t k = 0; k < axis.pointers.size(); ++k) scenario[json::json_pointer(axis.pointers[k])] = values[a][k];
    }
  }
}

// The plan's options checked against the command (types, known names).
void check_options(const JsonNode& node, const std::string& command) {
  JsonObject o = node.as_object();
  for (const OptionSpec& s : command_options().at(command)) {
    if (const auto v = o.optional(s.name)) {
      if (s.type == json::value_t::string) v->as_string();
      if (s.name == std::string_view("train_tokens")) (void)parse_token_count(v->as_string(), v->source(), v->pointer());
      if (s.type == json::value_t::boolean) v->as_bool();
      if (s.type == json::value_t::number_integer) v->as_int_in(1, 1'000'000);
    }
  }
  o.finish();
}

std::string opt_string(const json& options, const char* key, const std::string& fallback) {
  return options.contains(key) ? options.at(key).get<std::string>() : fallback;
}

// Runs the command on the point's scenario (already overlaid at `path`); returns the report JSON.
std::string run_command(const SweepPlan& plan, const std::string& path, const json& scenario, const json& options) {
  std::ostringstream discard;
  std::string report;
  const auto file_option = [&](const char* key) { return options.contains(key) ? resolve_beside(plan.source, options.at(key).get<std::string>()) : ""; };
  if (plan.command == "step" || plan.command == "estimate") {
    StepOptions o;
    o.scenario_path = path;
    o.gpus_path = file_option("gpus");
    o.no_reuse = options.value("no_reuse", false);
    o.estimate = plan.command == "estimate";
    o.train_tokens = opt_string(options, "train_tokens", "");
    o.report_json = &report;
    step(o, discard);
  } else if (plan.command == "compare") {
    CompareOptions o;
    o.scenario_path = path;
    o.policies = opt_string(options, "policies", "");
    o.steps = options.value("steps", o.steps);
    o.iterations = options.value("iterations", o.iterations);
    o.gpus_path = file_option("gpus");
    o.jobs_path = file_option("jobs");
    o.skip_bad_rows = options.value("skip_bad_rows", false);
    o.report_json = &report;
    compare(o, discard);
  } else if (plan.command == "cluster") {
    ClusterOptions o;
    o.scenario_path = path;
    o.policy = opt_string(options, "policy", o.policy);
    o.jobs_path = file_option("jobs");
    o.skip_bad_rows = options.value("skip_bad_rows", false);
    o.report_json = &report;
    cluster(o, discard);
  } else {
    CollectiveOptions o;
    JsonNode root(scenario, path, "");
    JsonObject s = root.as_object();
    if (const auto v = s.optional("topology")) {
      o.topology = v->as_string();
      if (o.topology.ends_with(".json")) o.topology = resolve_beside(path, o.topology);
    }
    if (const auto v = s.optional("op")) o.op = v->as_string();
    if (const auto v = s.optional("algo")) o.algo = v->as_string();
    if (const auto v = s.optional("proto")) o.proto = v->as_string();
    if (const auto v = s.optional("nvls")) o.nvls = v->as_bool();
    if (const auto v = s.optional("size")) o.size = v->json().is_number() ? std::to_string(v->as_int()) : v->as_string();
    if (const auto v = s.optional("ranks")) o.ranks = v->as_int_in(0, 1 << 24);
    if (const auto v = s.optional("channels")) o.channels = v->as_int_in(1, 64);
    if (const auto v = s.optional("chunks")) o.chunks = v->as_int_in(1, 1 << 20);
    if (const auto v = s.optional("root")) o.root = v->as_int_in(0, 1 << 24);
    if (const auto v = s.optional("peer")) o.peer = v->as_int_in(0, 1 << 24);
    if (const auto v = s.optional("alltoallv")) o.alltoallv_path = resolve_beside(path, v->as_string());
    if (const auto v = s.optional("quantum")) o.quantum = v->as_string();
    s.finish();
    o.report_json = &report;
    collective(o, discard);
  }
  return report;
}

void flatten_into(const json& v, const std::string& key, json& out) {
  if (v.is_object()) {
    for (const auto& [k, child] : v.items()) flatten_into(child, key.empty() ? k : key + "." + k, out);
  } else if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      const json& e = v[i];
      const bool named = e.is_object() && e.contains("name") && e.at("name").is_string();
      const std::string part = named ? e.at("name").get<std::string>() : std::to_string(i);
      if (named) {
        json rest = e;
        rest.erase("name");
        flatten_into(rest, key.empty() ? part : key + "." + part, out);
      } else {
        flatten_into(e, key.empty() ? part : key + "." + part, out);
      }
    }
  } else {
    out[key] = v;
  }
}

// FNV-1a, 64 bits: a stable fingerprint of the plan for the journal.
std::string fingerprint(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return fmt::format("{:016x}", h);
}

std::string csv_cell(const json& v) {
  if (v.is_null()) return "";
  std::string text = v.is_string() ? v.get<std::string>() : v.dump();
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

// What the results show for an axis value: its label when the axis has labels.
json shown(const SweepAxis& axis, const json& v) {
  for (std::size_t i = 0; i < axis.labels.size(); ++i) {
    if (axis.values[i] == v) return json(axis.labels[i]);
  }
  return v;
}

}  // namespace

SweepPlan read_sweep_plan(std::string_view text, const std::string& source) {
  const auto doc = traces::parse_json(text, source);
  JsonObject top = doc->root().as_object();
  SweepPlan plan;
  plan.source = source;
  const JsonNode command = top.required("command");
  plan.command = command.as_string();
  if (std::find(kCommands.begin(), kCommands.end(), plan.command) == kCommands.end()) {
    command.fail(fmt::format("found {}, expected step, estimate, compare, cluster or collective", sim::quote(plan.command)));
  }
  const JsonNode base = top.required("base");
  if (base.json().is_string()) {
    plan.base_path = resolve_beside(source, base.as_string());
    plan.base = traces::load_json_file(plan.base_path)->root().json();
    if (!plan.base.is_object()) base.fail(fmt::format("{} holds {}, expected a scenario object", plan.base_path, type_name(plan.base)));
  } else if (base.json().is_object()) {
    plan.base = base.json();
  } else {
    base.fail_expected("a scenario file name or an inline scenario object");
  }
  if (plan.command == "collective") {
    for (const auto& [key, value] : plan.base.items()) {
      if (std::find(kCollectiveFields.begin(), kCollectiveFields.end(), key) == kCollectiveFields.end()) {
        base.fail(fmt::format("the collective base has an unknown field {}; expected: topology, op, algo, size, ranks, channels, chunks, root, peer, alltoallv, quantum",
                              sim::quote(key)));
      }
    }
  }
  if (const auto options = top.optional("options")) {
    check_options(*options, plan.command);
    plan.options = options->json();
  }
  if (const auto design = top.optional("design")) {
    JsonObject d = design->as_object();
    const JsonNode kind = d.required("kind");
    plan.design = kind.as_string();
    if (plan.design != "grid" && plan.design != "random" && plan.design != "lhs") {
      kind.fail(fmt::format("found {}, expected grid, random or lhs (Latin hypercube)", sim::quote(plan.design)));
    }
    const auto samples = d.optional("samples");
    if (plan.design == "grid") {
      if (samples) samples->fail("a grid takes every combination; \"samples\" is for random and lhs designs");
    } else {
      if (!samples) design->fail(fmt::format("a {} design needs \"samples\" (how many points)", plan.design));
      plan.samples = samples->as_int_in(1, static_cast<int>(kMaxPoints));
    }
    if (const auto seed = d.optional("seed")) plan.seed = static_cast<std::uint64_t>(seed->as_int());
    d.finish();
  }
  const JsonNode axes = top.required("axes");
  const std::vector<JsonNode> list = axes.as_array();
  if (list.empty()) axes.fail("found an empty list, expected at least one axis");
  std::set<std::string> names;
  for (const JsonNode& a : list) {
    plan.axes.push_back(read_axis(a, plan));
    if (!names.insert(plan.axes.back().name).second) a.fail(fmt::format("a second axis named {}; give one a \"name\"", sim::quote(plan.axes.back().name)));
  }
  if (plan.design == "grid") {
    std::int64_t n = 1;
    for (const SweepAxis& a : plan.axes) {
      n *= static_cast<std::int64_t>(grid_values(a).size());
      if (n > kMaxPoints) axes.fail(fmt::format("the grid has more than {} points; use a random or lhs design", kMaxPoints));
    }
  }
  if (const auto objective = top.optional("objective")) {
    JsonObject o = objective->as_object();
    plan.objective = o.required("metric").as_string();
    if (const auto show = o.optional("show")) {
      for (const JsonNode& m : show->as_array()) plan.show.push_back(m.as_string());
    }
    if (const auto how_many = o.optional("top")) plan.top = static_cast<std::size_t>(how_many->as_int_in(1, 1000));
    if (const auto goal = o.optional("goal")) {
      const std::string g = goal->as_string();
      if (g != "max" && g != "min") goal->fail(fmt::format("found {}, expected max or min", sim::quote(g)));
      plan.maximize = g == "max";
    }
    o.finish();
  }
  top.finish();
  return plan;
}

SweepPlan load_sweep_plan(const std::string& path) { return read_sweep_plan(traces::read_text_file(path), path); }

std::vector<std::vector<json>> sweep_points(const SweepPlan& plan) {
  std::vector<std::vector<json>> points;
  const std::size_t dims = plan.axes.size();
  if (plan.design == "grid") {
    std::vector<std::vector<json>> values;
    for (const SweepAxis& a : plan.axes) values.push_back(grid_values(a));
    std::vector<std::size_t> at(dims, 0);
    while (true) {
      std::vector<json> p;
      for (std::size_t d = 0; d < dims; ++d) p.push_back(values[d][at[d]]);
      points.push_back(std::move(p));
      std::size_t d = dims;  // the last axis varies fastest
      while (d > 0 && ++at[d - 1] == values[d - 1].size()) at[--d] = 0;
      if (d == 0) break;
    }
    return points;
  }
  Uniform rng{plan.seed};
  const auto n = static_cast<std::size_t>(plan.samples);
  if (plan.design == "random") {
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<json> p;
      for (const SweepAxis& a : plan.axes) p.push_back(value_at(a, rng()));
      points.push_back(std::move(p));
    }
    return points;
  }
  // Latin hypercube (McKay, Beckman and Conover, Technometrics 1979): each axis is cut into n
  // equal strata, each stratum used by exactly one point, paired across axes at random.
  points.assign(n, std::vector<json>(dims));
  for (std::size_t d = 0; d < dims; ++d) {
    std::vector<std::size_t> strata(n);
    for (std::size_t i = 0; i < n; ++i) strata[i] = i;
    for (std::size_t i = n; i > 1; --i) std::swap(strata[i - 1], strata[rng.below(i)]);  // Fisher-Yates
    for (std::size_t i = 0; i < n; ++i) points[i][d] = value_at(plan.axes[d], (static_cast<double>(strata[i]) + rng()) / static_cast<double>(n));
  }
  return points;
}

json flatten_report(const json& report) {
  json out = json::object();
  flatten_into(report, "", out);
  return out;
}

SweepRow run_sweep_point(const SweepPlan& plan, int index, const std::vector<json>& values) {
  SweepRow row;
  row.point = index;
  row.values = values;
  json scenario = plan.base;
  json options = plan.options;
  set_values(scenario, options, plan.axes, values);
  // The point's scenario, named beside its base so relative paths resolve as they would there.
  const std::string anchor = plan.base_path.empty() ? plan.source : plan.base_path;
  const std::string path = fmt::format("{} [point {}]", anchor, index);
  try {
    std::string report;
    if (plan.command == "collective") {
      report = run_command(plan, path, scenario, options);
    } else {
      const traces::FileOverlay overlay(path, scenario.dump());
      report = run_command(plan, path, scenario, options);
    }
    row.metrics = flatten_report(json::parse(report));
    row.status = "ok";
    if (row.metrics.contains("oom") && row.metrics.at("oom") == true) {
      row.status = "oom";
      row.reason = "out of memory";
      if (row.metrics.contains("peak_memory_bytes")) {
        row.reason = fmt::format("out of memory: {:.1f} GiB per GPU", row.metrics.at("peak_memory_bytes").get<double>() / 1073741824.0);
        if (row.metrics.contains("memory.usable_bytes")) {  // the rule of models::memory_budget
          row.reason += fmt::format(", above the usable {:.1f} GiB", row.metrics.at("memory.usable_bytes").get<double>() / 1073741824.0);
        }
      }
    }
  } catch (const InputError& e) {
    row.status = "invalid";
    row.reason = e.what();
  } catch (const std::exception& e) {
    row.status = "error";
    row.reason = fmt::format("internal error: {}", e.what());
  }
  return row;
}

json sweep_row_to_json(const SweepRow& row) {
  return json{{"point", row.point}, {"status", row.status}, {"reason", row.reason}, {"values", row.values}, {"metrics", row.metrics}};
}

SweepRow sweep_row_from_json(const json& j) {
  SweepRow row;
  row.point = j.at("point").get<int>();
  row.status = j.at("status").get<std::string>();
  row.reason = j.at("reason").get<std::string>();
  row.values = j.at("values").get<std::vector<json>>();
  row.metrics = j.at("metrics");
  return row;
}

namespace {

// The journal: a header line with the plan's fingerprint, then one row per finished point,
// flushed as it lands. An interrupted sweep resumes from it; a torn last line is ignored.
std::map<int, SweepRow> read_journal(const std::string& path, const std::string& print, std::size_t points) {
  std::map<int, SweepRow> rows;
  std::ifstream in(path);
  if (!in) return rows;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception&) {
      if (in.peek() == EOF) break;  // the line a kill cut short
      throw InputError(path, fmt::format("line {}", line_no), "found a malformed journal line; remove the journal to start the sweep over");
    }
    if (line_no == 1) {
      if (!j.is_object() || j.value("fingerprint", "") != print) {
        throw InputError(path, "line 1",
                         "the journal was written by a different plan (or base scenario); remove it to start over, or restore the plan it ran");
      }
      continue;
    }
    try {
      SweepRow row = sweep_row_from_json(j);
      if (row.point < 0 || static_cast<std::size_t>(row.point) >= points) throw std::out_of_range("point");
      rows[row.point] = std::move(row);
    } catch (const std::exception&) {
      throw InputError(path, fmt::format("line {}", line_no), "found a row that is not a point of this plan; remove the journal to start over");
    }
  }
  return rows;
}

// "stages.3.bubble_s" -> "stages.#.bubble_s": metrics that differ only in an index (a stage, a
// policy) have one shape, so a row with fewer stages does not make a later stage unknown.
std::string metric_shape(std::string_view metric) {
  std::string shape;
  for (std::size_t i = 0; i < metric.size();) {
    if (std::isdigit(static_cast<unsigned char>(metric[i])) != 0) {
      while (i < metric.size() && std::isdigit(static_cast<unsigned char>(metric[i])) != 0) ++i;
      shape += '#';
    } else {
      shape += metric[i++];
    }
  }
  return shape;
}

// The plan's objective and shown metrics must be metrics the points report. `rows` are rows that
// ran; with `by_shape`, a metric passes when one of the same shape is there (an early check on the
// first row). Throws at the metric's place in the plan, with the metrics there are.
void check_metrics(const SweepPlan& plan, const std::vector<const SweepRow*>& rows, bool by_shape) {
  if (rows.empty()) return;
  // The objective ranks points, so it is a number; a shown metric may be any value.
  std::set<std::string> names, numeric_shapes, any_shapes;
  for (const SweepRow* row : rows) {
    for (const auto& [k, v] : row->metrics.items()) {
      if (v.is_number()) {
        names.insert(k);
        numeric_shapes.insert(by_shape ? metric_shape(k) : k);
      }
      any_shapes.insert(by_shape ? metric_shape(k) : k);
    }
  }
  struct Wanted {
    std::string metric, where;
    bool number;
  };
  std::vector<Wanted> wanted;
  if (!plan.objective.empty()) wanted.push_back({plan.objective, "/objective/metric", true});
  for (std::size_t i = 0; i < plan.show.size(); ++i) wanted.push_back({plan.show[i], fmt::format("/objective/show/{}", i), false});
  for (const auto& [metric, where, number] : wanted) {
    if ((number ? numeric_shapes : any_shapes).contains(by_shape ? metric_shape(metric) : metric)) continue;
    // The headline metrics first (no dots), then the others, at most 20 in all.
    std::vector<std::string> listed(names.begin(), names.end());
    std::stable_partition(listed.begin(), listed.end(), [](const std::string& n) { return n.find('.') == std::string::npos; });
    const std::size_t more = listed.size() > 20 ? listed.size() - 20 : 0;
    std::string text;
    for (std::size_t i = 0; i < listed.size() - more; ++i) text += (i ? ", " : "") + listed[i];
    if (more > 0) text += fmt::format(" and {} more (the CSV's columns)", more);
    throw InputError(plan.source, where,
                     fmt::format("found {}, expected {} the points of `{}` report: {}{}; the journal keeps the points run, so "
                                 "fix the plan and continue with --resume",
                                 sim::quote(metric), number ? "a numeric metric" : "a metric", plan.command, text, sim::did_you_mean(metric, std::vector<std::string>(names.begin(), names.end()))));
  }
}

// Where a sweep writes: its results, their CSV, and the journal beside the results.
struct SweepPaths {
  std::string out, csv, journal;
};

SweepPaths sweep_paths(const SweepOptions& o) {
  const std::string out_path = o.out_path.empty() ? (std::filesystem::path(o.plan_path).replace_extension("").string() + ".results.json") : o.out_path;
  const std::string csv_path = o.csv_path.empty() ? std::filesystem::path(out_path).replace_extension(".csv").string() : o.csv_path;
  const std::string journal_path = out_path + ".journal";
  check_outputs({{"--out", out_path}, {"--csv", csv_path}, {"--html", o.html_path}, {"--out (its journal)", journal_path}});
  return {out_path, csv_path, journal_path};
}

// A sweep's points as they run, on threads or MPI ranks: the rows done (those of the journal
// too, on --resume) and the journal each new row lands in.
struct SweepRun {
  SweepRun(const SweepOptions& options, const SweepPlan& sweep_plan, const std::vector<std::vector<json>>& sweep_points, const std::string& journal_at,
           const std::string& plan_print, bool under_mpi)
      : o(options), plan(sweep_plan), points(sweep_points), journal_path(journal_at), print(plan_print), mpi(under_mpi) {}

  void run_points(int threads);
  std::vector<int> prepare();
  void record(int i, const std::string& text);

  const SweepOptions& o;
  const SweepPlan& plan;
  const std::vector<std::vector<json>>& points;
  const std::string& journal_path;
  const std::string& print;
  const bool mpi;
  std::map<int, SweepRow> done;
  std::size_t ran = 0;
  std::vector<int> per_rank;  // under MPI
  std::unique_ptr<std::ofstream> journal;
  bool root = true;
  std::mutex lock;
  std::unique_ptr<Progress> progress;
  const ProgressSettings sweep_progress = current_progress_settings();  // before the points' commands are silenced
  bool metrics_checked = false;
};

// Runs the pending points on `threads` threads (of each MPI rank under mpirun).
void SweepRun::run_points(int threads) {
  const auto evaluate = [&](int i) { return sweep_row_to_json(run_sweep_point(plan, i, points[static_cast<std::size_t>(i)])).dump(); };
  const auto record_row = [this](int i, const std::string& text) { record(i, text); };
  {
    // The points' own commands report nothing beneath the sweep's line.
    const ProgressTarget quiet_points(nullptr, false);
    if (mpi) {
      root = sweep_run_mpi([this] { return prepare(); }, threads, evaluate, record_row, per_rank);
    } else {
      sweep_run_local(prepare(), threads, evaluate, record_row);
    }
  }
  if (progress) progress->finish();
}

// The points still to run (at most --max-points of them), with the journal open for their rows
// and the progress report started.
std::vector<int> SweepRun::prepare() {
  std::vector<int> pending;
  if (o.resume) done = read_journal(journal_path, print, points.size());
  for (int i = 0; i < static_cast<int>(points.size()); ++i) {
    if (!done.contains(i)) pending.push_back(i);
  }
  if (o.max_points > 0 && pending.size() > static_cast<std::size_t>(o.max_points)) pending.resize(static_cast<std::size_t>(o.max_points));
  journal = std::make_unique<std::ofstream>(journal_path, o.resume ? std::ios::app : std::ios::trunc);
  if (!*journal) throw InputError(journal_path, "", "cannot write the sweep's journal here (the results' folder must exist and be writable)");
  if (!o.resume || done.empty()) {
    journal->close();
    journal->open(journal_path, std::ios::trunc);
    *journal << json{{"fingerprint", print}, {"plan", plan.source}, {"points", points.size()}}.dump() << '\n';
  }
  ProgressSettings settings = sweep_progress;
  if (o.quiet) settings.stream = nullptr;
  progress = std::make_unique<Progress>(fmt::format("sweep {}", plan.source), static_cast<std::int64_t>(points.size()), "points",
                                        static_cast<std::int64_t>(done.size()), std::move(settings));
  ran = pending.size();
  return pending;
}

// A finished point's row, from any thread: into the rows done and the journal.
void SweepRun::record(int i, const std::string& text) {
  const std::lock_guard<std::mutex> guard(lock);
  done[i] = sweep_row_from_json(json::parse(text));
  *journal << text << '\n';
  journal->flush();
  progress->advance();
  // The first row that ran tells whether the objective is a metric at all: a typo fails now,
  // not after the whole sweep (over MPI, where ranks wait on rank 0, at the end).
  if (!metrics_checked && !mpi && done[i].status == "ok") {
    metrics_checked = true;
    check_metrics(plan, {&done[i]}, true);
  }
}

// The results' table: its columns, its rows as JSON and as CSV, and how many points ended how.
struct SweepTable {
  std::vector<std::string> columns;
  json rows = json::array();
  std::string csv;
  int ok = 0, oom = 0, invalid = 0, errors = 0;
};

SweepTable sweep_table(const SweepPlan& plan, const std::map<int, SweepRow>& done) {
  SweepTable t;
  std::vector<std::string>& columns = t.columns;
  std::string& csv = t.csv;
  // Columns: the point, its status, the axes, then every metric any row reported, sorted.
  columns = {"point", "status", "reason"};
  for (const SweepAxis& a : plan.axes) columns.push_back(a.name);
  std::set<std::string> metrics;
  for (const auto& [i, row] : done) {
    for (const auto& [k, v] : row.metrics.items()) metrics.insert(k);
  }
  const std::set<std::string> axis_names(columns.begin() + 3, columns.end());
  for (const std::string& m : metrics) {
    if (!axis_names.contains(m)) columns.push_back(m);
  }
  for (std::size_t c = 0; c < columns.size(); ++c) csv += (c ? "," : "") + csv_cell(columns[c]);
  csv += "\n";
  for (const auto& [i, row] : done) {
    json r = json::object();
    r["point"] = row.point;
    r["status"] = row.status;
    r["reason"] = row.reason;
    for (std::size_t a = 0; a < plan.axes.size(); ++a) r[plan.axes[a].name] = shown(plan.axes[a], row.values[a]);
    for (const auto& [k, v] : row.metrics.items()) {
      if (!axis_names.contains(k)) r[k] = v;
    }
    for (std::size_t c = 0; c < columns.size(); ++c) csv += (c ? "," : "") + (r.contains(columns[c]) ? csv_cell(r.at(columns[c])) : std::string());
    csv += "\n";
    t.rows.push_back(std::move(r));
    t.ok += row.status == "ok";
    t.oom += row.status == "oom";
    t.invalid += row.status == "invalid";
    t.errors += row.status == "error";
  }
  return t;
}

// The plan's objective and shown metrics against the metrics of every point that ran.
void check_ran_metrics(const SweepPlan& plan, const std::map<int, SweepRow>& done) {
  std::vector<const SweepRow*> ran_ok;
  for (const auto& [i, row] : done) {
    if (row.status == "ok") ran_ok.push_back(&row);
  }
  check_metrics(plan, ran_ok, false);
}

// The results file's text: indented, but each row on one line (a grid of thousands of points
// indented cell by cell is mostly whitespace and takes longer to write than to compute).
std::string results_text(const json& results) {
  json head = results;
  head["rows"] = "@rows@";
  std::string text = head.dump(2);
  std::string rows = "[";
  const json& r = results.at("rows");
  for (std::size_t i = 0; i < r.size(); ++i) rows += (i ? ",\n    " : "\n    ") + r[i].dump();
  rows += r.empty() ? "]" : "\n  ]";
  const std::size_t at = text.find("\"@rows@\"");
  return text.replace(at, 8, rows) + "\n";
}

// The results JSON, the CSV and the optional HTML report; then the journal goes.
void write_results(const SweepOptions& o, const SweepPlan& plan, std::size_t points, const SweepPaths& paths, const SweepTable& t) {
  json results = {{"plan", plan.source}, {"command", plan.command}, {"design", plan.design}, {"seed", plan.seed}, {"points", points},
                  {"columns", t.columns}, {"rows", t.rows}};
  traces::write_file_atomically(paths.out, results_text(results));
  if (o.results != nullptr) *o.results = results;
  traces::write_file_atomically(paths.csv, t.csv);
  if (!o.html_path.empty()) {
    reports::SweepPage page{plan.source, plan.command, plan.design, plan.objective, plan.maximize, {}};
    for (const SweepAxis& a : plan.axes) page.axes.push_back(a.name);
    reports::write_sweep_html(o.html_path, page, t.columns, t.rows);
  }
  std::filesystem::remove(paths.journal);
}

// The summary's first lines: the sweep, how its points ended, where they ran, where the results went.
void print_summary(std::ostream& out, const SweepRun& run, const SweepTable& t, const SweepPaths& paths, int threads, double wall) {
  const SweepOptions& o = run.o;
  const SweepPlan& plan = run.plan;
  const std::size_t points = run.points.size();
  out << fmt::format("sweep      {} ({} `{}` over {} axes, {} design)\n", plan.source, points, plan.command, plan.axes.size(), plan.design);
  out << fmt::format("points     {} ok, {} out of memory, {} invalid, {} internal errors{}\n", t.ok, t.oom, t.invalid, t.errors,
                     o.resume ? fmt::format(" ({} resumed from the journal)", points - run.ran) : "");
  if (run.mpi) {
    out << fmt::format("ran        {} points in {:.2f} s on {} MPI ranks, {} thread{} on rank 0 (points per rank: {})\n", run.ran, wall,
                       run.per_rank.size(), threads, threads == 1 ? "" : "s", fmt::join(run.per_rank, ", "));
  } else {
    out << fmt::format("ran        {} points in {:.2f} s on {} thread{}\n", run.ran, wall, threads, threads == 1 ? "" : "s");
  }
  out << fmt::format("results    {} and {}{}\n", paths.out, paths.csv, o.html_path.empty() ? "" : fmt::format("; plots in {}", o.html_path));
}

// With train_tokens: the fastest point to train on them (step's train.* keys).
void print_fastest(std::ostream& out, const SweepPlan& plan, const std::map<int, SweepRow>& done) {
  if (!plan.options.contains("train_tokens")) return;
  std::optional<std::pair<double, int>> fastest;
  for (const auto& [i, row] : done) {
    if (row.status != "ok" || !row.metrics.contains("train.time_s")) continue;
    const double t = row.metrics.at("train.time_s").get<double>();
    if (!fastest || t < fastest->first) fastest = std::pair{t, i};
  }
  if (fastest) {
    out << fmt::format("to train   {} tokens: fastest point {} in {} (train.time_s {:.6g})\n",
                       token_count_text(done.at(fastest->second).metrics.at("train.tokens").get<double>()), fastest->second,
                       human_duration(fastest->first), fastest->first);
  }
}

// Prints a table of cells, each column right-aligned to its widest cell.
void print_aligned(std::ostream& out, const std::vector<std::vector<std::string>>& table) {
  std::vector<std::size_t> width(table.front().size(), 0);
  for (const auto& line : table) {
    for (std::size_t c = 0; c < line.size(); ++c) width[c] = std::max(width[c], line[c].size());
  }
  for (const auto& line : table) {
    std::string text = " ";
    for (std::size_t c = 0; c < line.size(); ++c) text += fmt::format(" {:>{}}", line[c], width[c]);
    out << text << "\n";
  }
}

// The best points by the plan's objective, as a table.
void print_best(std::ostream& out, const SweepPlan& plan, const std::map<int, SweepRow>& done, const std::string& csv_path) {
  std::vector<std::pair<double, int>> ranked;
  for (const auto& [i, row] : done) {
    if (row.status == "ok" && row.metrics.contains(plan.objective) && row.metrics.at(plan.objective).is_number()) {
      ranked.push_back({row.metrics.at(plan.objective).get<double>(), i});
    }
  }
  if (ranked.empty()) {
    out << fmt::format("objective  no point that ran reports {} (see the columns of {})\n", plan.objective, csv_path);
    return;
  }
  std::stable_sort(ranked.begin(), ranked.end(), [&](const auto& a, const auto& b) { return plan.maximize ? a.first > b.first : a.first < b.first; });
  out << fmt::format("best {} of {} points by {} ({}):\n", std::min<std::size_t>(plan.top, ranked.size()), ranked.size(), plan.objective,
                     plan.maximize ? "highest" : "lowest");
  // An aligned table: the point, its axis values, the objective, then the metrics to show.
  std::vector<std::string> header = {"point"};
  for (const SweepAxis& a : plan.axes) header.push_back(a.name);
  header.push_back(plan.objective);
  header.insert(header.end(), plan.show.begin(), plan.show.end());
  std::vector<std::vector<std::string>> table = {header};
  // People's units on the console (GiB, %, tokens/s with a suffix, hours); the results keep exact values.
  const auto cell = [](const std::string& key, const json& v) { return v.is_number() ? reports::human::metric(key, v.get<double>()) : csv_cell(v); };
  for (std::size_t k = 0; k < std::min<std::size_t>(plan.top, ranked.size()); ++k) {
    const SweepRow& row = done.at(ranked[k].second);
    std::vector<std::string> line = {std::to_string(row.point)};
    for (std::size_t a = 0; a < plan.axes.size(); ++a) line.push_back(csv_cell(shown(plan.axes[a], row.values[a])));
    line.push_back(reports::human::metric(plan.objective, ranked[k].first));
    for (const std::string& m : plan.show) line.push_back(row.metrics.contains(m) ? cell(m, row.metrics.at(m)) : "-");
    table.push_back(std::move(line));
  }
  print_aligned(out, table);
}

}  // namespace

void sweep(const SweepOptions& o, std::ostream& out) {
  const auto started = std::chrono::steady_clock::now();
  check_count(o.jobs, "--jobs", 0, kMaxThreads, "threads per process; 0: one per core");
  check_count(o.max_points, "--max-points", 0, kMaxPoints, "new points to run before stopping; 0: all");
  const SweepPaths paths = sweep_paths(o);
  const SweepPlan plan = load_sweep_plan(o.plan_path);
  const std::vector<std::vector<json>> points = sweep_points(plan);
  json identity = {{"command", plan.command}, {"base", plan.base}, {"options", plan.options}, {"points", points}};
  const std::string print = fingerprint(identity.dump());

  const bool mpi = sweep_mpi_launched();
  const int threads = o.jobs > 0 ? o.jobs : mpi ? 1 : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));

  SweepRun run(o, plan, points, paths.journal, print, mpi);
  run.run_points(threads);
  if (!run.root) return;
  run.journal->close();
  if (run.done.size() < points.size()) {
    out << fmt::format("sweep      {}: stopped after {} new points ({} of {} done); continue with --resume (journal: {})\n", plan.source, run.ran,
                       run.done.size(), points.size(), paths.journal);
    return;
  }

  const SweepTable table = sweep_table(plan, run.done);
  check_ran_metrics(plan, run.done);
  write_results(o, plan, points.size(), paths, table);

  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  print_summary(out, run, table, paths, threads, wall);
  print_fastest(out, plan, run.done);
  if (!plan.objective.empty()) print_best(out, plan, run.done, paths.csv);
  if (table.errors > 0) throw sim::InternalError(fmt::format("{} points hit an internal error; their rows in {} say which", table.errors, paths.out));
}

void sweep_run_local(const std::vector<int>& pending, int threads, const SweepEvaluate& evaluate, const SweepRecord& record) {
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_lock;
  const auto work = [&] {
    try {
      for (std::size_t k = next++; k < pending.size(); k = next++) record(pending[k], evaluate(pending[k]));
    } catch (...) {
      const std::lock_guard<std::mutex> guard(failure_lock);
      if (!failure) failure = std::current_exception();
      next = pending.size();  // the others stop at their next point
    }
  };
  const int n = std::max(1, std::min(threads, static_cast<int>(pending.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace orrery::studies
