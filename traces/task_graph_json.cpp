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
  // id -> task; the keys view the document's strings, which outlive this function. Tasks are
  // added one per node, in order, so a task's index is its node's.
  std::unordered_map<std::string_view, sim::TaskId> by_id;
  by_id.reserve(nodes.size());
  graph.reserve(nodes.size(), nodes.size() * 2);

  for (const JsonNode& node : nodes) {
    JsonObject fields = node.as_object();
    const JsonNode id_node = fields.required("id");
    (void)id_node.as_string();  // checks the type
    const std::string& id = id_node.json().get_ref<const std::string&>();
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
    ORRERY_CHECK(sim::index_of(task) + 1 == graph.task_count(), "task {} added out of order", sim::index_of(task));
    const auto [it, inserted] = by_id.try_emplace(id, task);
    if (!inserted) id_node.fail(fmt::format("duplicate id {}, first used at {}", sim::quote(id), nodes[sim::index_of(it->second)].pointer()));
    if (deps) pending.push_back(Pending{*deps, task});
  }

  // Dependencies may name tasks defined later in the file.
  for (const Pending& p : pending) {
    std::vector<std::uint32_t> seen;
    for (const JsonNode& dep : p.deps.as_array()) {
      (void)dep.as_string();  // checks the type
      const std::string& dep_id = dep.json().get_ref<const std::string&>();
      const auto it = by_id.find(dep_id);
      if (it == by_id.end()) {
        std::vector<std::string> ids;
        ids.reserve(by_id.size());
        for (const auto& entry : by_id) ids.emplace_back(entry.first);
        std::sort(ids.begin(), ids.end());
        dep.fail(fmt::format("dependency on unknown node {}{}", sim::quote(dep_id), sim::did_you_mean(dep_id, ids)));
      }
      const sim::TaskId before = it->second;
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
    for (const auto& [id, task] : by_id) ids[sim::index_of(task)] = id;
    // The first tasks of a long cycle, then a count: one bounded line.
    constexpr std::size_t kShown = 10;
    for (std::size_t i = 0; i < cycle.size() && i < kShown; ++i) path += sim::quote(ids[sim::index_of(cycle[i])]) + " -> ";
    if (cycle.size() > kShown) {
      path += fmt::format("... ({} more tasks) -> ", sim::with_thousands(cycle.size() - kShown));
    }
    path += sim::quote(ids[sim::index_of(cycle.front())]);
    throw sim::InputError(doc.source(), nodes[sim::index_of(cycle.front())].pointer() + "/deps",
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
