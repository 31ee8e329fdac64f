#include "runs/runs.hpp"
#include "runs/options.hpp"

#include "models/network/topology.hpp"
#include "traces/topology_json.hpp"

#include <fmt/format.h>

#include <map>
#include <ostream>

namespace orrery::runs {

void topology(const TopologyOptions& o, std::ostream& out) {
  check_outputs({{"--save", o.save_path}});
  const models::Topology t = traces::load_topology(o.topology);
  std::map<std::string_view, int> nodes;
  for (const models::TopoNode& n : t.nodes()) ++nodes[models::to_string(n.kind)];
  std::map<std::string_view, std::pair<int, double>> links;  // kind -> directed links, total bandwidth
  for (const models::TopoLink& l : t.links()) {
    auto& [count, bandwidth] = links[models::to_string(l.kind)];
    ++count;
    bandwidth += l.bandwidth.value();
  }
  out << fmt::format("topology   {}\n", o.topology);
  out << fmt::format("GPUs       {} on {} servers\n", t.gpus().size(), t.servers());
  std::string kinds;
  for (const auto& [kind, count] : nodes) kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", count, kind);
  out << fmt::format("nodes      {} ({})\n", t.nodes().size(), kinds);
  for (const auto& [kind, entry] : links) {
    out << fmt::format("links      {:<8} {} directed, {} in all\n", kind, entry.first, sim::to_string(sim::BytesPerSecond(entry.second)));
  }
  if (t.gpus().size() > 1) {
    const models::NodeIndex a = t.gpus().front(), z = t.gpus().back();
    out << fmt::format("route      {} -> {}: {} hops\n", t.node(a).name, t.node(z).name, t.route(a, z, 0).size());
  }
  if (!o.save_path.empty()) {
    traces::write_topology_file(o.save_path, t);
    out << fmt::format("saved to   {}\n", o.save_path);
  }
}

}  // namespace orrery::runs
