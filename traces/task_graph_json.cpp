#include "traces/task_graph_json.hpp"

#include "sim/error.hpp"
#include "traces/json_input.hpp"

#include <algorithm>
#include <unordered_map>

namespace orrery::traces {

namespace {

LoadedGraph build(const JsonDocument& doc) {
  LoadedGraph out;
  JsonObject top = doc.root().as_object();
  if (auto name = top.optional("name")) out.name = name->as_string();
  top.optional("description");  // free text for people
  const std::vector<JsonNode> nodes = top.required("nodes").as_array();
  top.finish();

  sim::TaskGraph& graph = out.graph;
  struct Pending {
    JsonNode deps;
    sim::TaskId task;
  };
  std::vector<Pending> pending;
  std::unordered_map<std::string, std::pair<sim::TaskId, std::string>> by_id;  // id -> task, pointer
  std::vector<std::string> pointer_of_task;
  graph.reserve(nodes.size(), nodes.size() * 2);

  for (const JsonNode& node : nodes) {
    JsonObject fields = node.as_object();
    const JsonNode id_node = fields.required("id");
    const std::string id = id_node.as_string();
    if (id.empty()) id_node.fail_expected("a non-empty id");
    std::optional<JsonNode> name_node = fields.optional("name");
    const std::string name = name_node ? name_node->as_string() : id;
    std::string kind = "compute";
    std::optional<JsonNode> kind_node = fields.optional("kind");
    if (kind_node) {
      kind = kind_node->as_string();
      if (kind != "compute" && kind != "delay") {
        kind_node->fail(fmt::format("unknown task kind {}{}; valid: compute, delay", sim::quote(kind),
                                    sim::did_you_mean(kind, {"compute", "delay"})));
      }
    }
    const sim::Duration duration = fields.required("duration").as_duration();
    std::optional<JsonNode> device = fields.optional("device");
    std::optional<JsonNode> stream = fields.optional("stream");
    std::optional<JsonNode> deps = fields.optional("deps");
    fields.finish();

    sim::TaskId task;
    if (kind == "compute") {
      if (!device) node.fail("missing required field \"device\" (a compute task runs on a device's stream)");
      if (!stream) node.fail("missing required field \"stream\" (a compute task runs on a device's stream)");
      task = graph.add_compute(name, graph.add_stream(device->as_string(), stream->as_string()), duration);
    } else {
      if (device) device->fail("a delay runs on no device; remove \"device\" or make the task \"kind\": \"compute\"");
      if (stream) stream->fail("a delay runs on no stream; remove \"stream\" or make the task \"kind\": \"compute\"");
      task = graph.add_delay(name, duration);
    }
    const auto [it, inserted] = by_id.try_emplace(id, task, node.pointer());
    if (!inserted) id_node.fail(fmt::format("duplicate id {}, first used at {}", sim::quote(id), it->second.second));
    pointer_of_task.push_back(node.pointer());
    if (deps) pending.push_back(Pending{*deps, task});
  }

  // Dependencies may name tasks defined later in the file.
  for (const Pending& p : pending) {
    std::vector<std::uint32_t> seen;
    for (const JsonNode& dep : p.deps.as_array()) {
      const std::string dep_id = dep.as_string();
      const auto it = by_id.find(dep_id);
      if (it == by_id.end()) {
        std::vector<std::string> ids;
        ids.reserve(by_id.size());
        for (const auto& entry : by_id) ids.push_back(entry.first);
        std::sort(ids.begin(), ids.end());
        dep.fail(fmt::format("dependency on unknown node {}{}", sim::quote(dep_id), sim::did_you_mean(dep_id, ids)));
      }
      const sim::TaskId before = it->second.first;
      if (std::find(seen.begin(), seen.end(), sim::index_of(before)) != seen.end()) {
        dep.fail(fmt::format("dependency on {} is listed twice", sim::quote(dep_id)));
      }
      seen.push_back(sim::index_of(before));
      graph.add_dependency(before, p.task);
    }
  }

  const std::vector<sim::TaskId> cycle = graph.find_cycle();
  if (!cycle.empty()) {
    std::string path;
    std::vector<std::string> ids(graph.task_count());
    for (const auto& [id, entry] : by_id) ids[sim::index_of(entry.first)] = id;
    // The first tasks of a long cycle, then a count: one bounded line.
    constexpr std::size_t kShown = 10;
    for (std::size_t i = 0; i < cycle.size() && i < kShown; ++i) path += sim::quote(ids[sim::index_of(cycle[i])]) + " -> ";
    if (cycle.size() > kShown) {
      path += fmt::format("... ({} more tasks) -> ", sim::with_thousands(cycle.size() - kShown));
    }
    path += sim::quote(ids[sim::index_of(cycle.front())]);
    throw sim::InputError(doc.source(), pointer_of_task[sim::index_of(cycle.front())] + "/deps",
                          fmt::format("dependency cycle{}: {}; expected an acyclic graph",
                                      cycle.size() > kShown ? fmt::format(" of {} tasks", cycle.size()) : std::string(), path));
  }
  return out;
}

}  // namespace

LoadedGraph read_task_graph(std::string_view json_text, const std::string& source) {
  return build(*parse_json(json_text, source));
}

LoadedGraph read_task_graph_file(const std::string& path) { return build(*load_json_file(path)); }

}  // namespace orrery::traces
