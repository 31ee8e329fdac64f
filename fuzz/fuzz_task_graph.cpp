// Task graphs as `orrery replay` reads them (traces/task_graph_json.hpp): nodes, dependencies, streams, cycles.
#include "fuzz_target.hpp"
#include "traces/task_graph_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return orrery::fuzz::run(data, size, [](std::string_view text) { orrery::traces::read_task_graph(text, "graph.json"); });
}
