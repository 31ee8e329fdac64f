// Task-graph JSON (format in traces/README.md) -> sim::TaskGraph, fully validated: unknown
// keys, wrong types, missing fields, bad units, unknown or repeated ids, and cycles are InputErrors.
//   LoadedGraph g = read_task_graph_file("examples/graphs/gpipe.json");
#pragma once

#include "sim/task_graph.hpp"

#include <string>
#include <string_view>

namespace orrery::traces {

struct LoadedGraph {
  sim::TaskGraph graph;
  std::string name;  // the file's optional "name", else empty
};

LoadedGraph read_task_graph_file(const std::string& path);
// `source` names the text in error messages.
LoadedGraph read_task_graph(std::string_view json_text, const std::string& source);

}  // namespace orrery::traces
