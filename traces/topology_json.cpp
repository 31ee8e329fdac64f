#include "traces/topology_json.hpp"

#include "sim/error.hpp"
#include "sim/flow_network.hpp"
#include "traces/atomic_file.hpp"
#include "traces/json_input.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <map>

namespace orrery::traces {

namespace {

constexpr std::array<models::NodeKind, 6> kNodeKinds = {models::NodeKind::gpu,  models::NodeKind::nvswitch,
                                                        models::NodeKind::nic,  models::NodeKind::leaf,
                                                        models::NodeKind::spine, models::NodeKind::core};
constexpr std::array<models::LinkKind, 3> kLinkKinds = {models::LinkKind::nvlink, models::LinkKind::pcie,
                                                        models::LinkKind::network};

template <class Kind, std::size_t N>
Kind parse_kind(const JsonNode& node, const std::array<Kind, N>& kinds) {
  const std::string text = node.as_string();
  std::vector<std::string> names;
  for (const Kind k : kinds) {
    if (models::to_string(k) == text) return k;
    names.emplace_back(models::to_string(k));
  }
  std::string listed;
  for (const auto& n : names) listed += (listed.empty() ? "" : ", ") + n;
  node.fail(fmt::format("unknown kind {}{}; valid: {}", sim::quote(text), sim::did_you_mean(text, names), listed));
}

sim::BytesPerSecond positive_bandwidth(const JsonNode& node) {
  const sim::BytesPerSecond bw = node.as_bandwidth();
  if (bw.value() <= 0) node.fail(fmt::format("found {}, expected a positive bandwidth", sim::quote(node.as_string())));
  if (bw < models::kMinLinkBandwidth || bw > models::kMaxLinkBandwidth) {
    node.fail(fmt::format("found {}, expected a bandwidth from 1 Gb/s to 1 PB/s ({})", sim::quote(node.as_string()),
                          models::kLinkBandwidthRange));
  }
  return bw;
}

sim::Duration link_latency(const JsonNode& node) {
  const sim::Duration latency = node.as_duration();
  if (latency > models::kMaxLinkLatency) {
    node.fail(fmt::format("found {}, expected a latency of at most 1 s (light crosses the Earth in 70 ms)", sim::quote(node.as_string())));
  }
  return latency;
}

}  // namespace

models::Topology read_topology(std::string_view json_text, const std::string& source) {
  const auto doc = parse_json(json_text, source);
  JsonObject top = doc->root().as_object();
  top.optional("name");
  top.optional("description");
  // What the GPUs and NICs are, for the NCCL model (both optional: without "gpu" it assumes
  // Hopper and says so; "net" defaults to ib as in a spec).
  std::string gpu, net = "ib";
  if (auto g = top.optional("gpu")) {
    gpu = g->as_string();
    (void)models::gpu_link_spec(gpu, source, g->pointer());
  }
  if (auto k = top.optional("net")) {
    net = k->as_string();
    const auto& kinds = models::net_kinds();
    if (std::find(kinds.begin(), kinds.end(), net) == kinds.end()) {
      k->fail(fmt::format("unknown net {}; valid: {}", sim::quote(net), fmt::join(kinds, ", ")));
    }
  }
  const std::vector<JsonNode> nodes = top.required("nodes").as_array();
  const std::vector<JsonNode> links = top.required("links").as_array();
  top.finish();

  models::Topology t;
  std::map<std::string, std::pair<models::NodeIndex, std::string>, std::less<>> by_name;  // -> index, pointer
  for (const JsonNode& n : nodes) {
    JsonObject f = n.as_object();
    const JsonNode name_node = f.required("name");
    const std::string name = name_node.as_string();
    if (name.empty()) name_node.fail_expected("a non-empty name");
    const models::NodeKind kind = parse_kind(f.required("kind"), kNodeKinds);
    std::int32_t server = -1;
    if (auto s = f.optional("server")) {
      const std::int64_t v = s->as_int();
      if (v < 0 || v > 1'000'000) s->fail_expected("a server index from 0 to 1000000");
      server = static_cast<std::int32_t>(v);
    }
    double nvls = 0;
    if (auto r = f.optional("nvls_efficiency")) {
      nvls = r->as_number();
      if (kind != models::NodeKind::nvswitch) r->fail("only an nvswitch reduces in the network (NVLS)");
      if (!(nvls > 0 && nvls <= 1)) r->fail_expected("a fraction of line rate in (0, 1]");
    }
    f.finish();
    const auto [it, added] = by_name.try_emplace(name, 0, n.pointer());
    if (!added) name_node.fail(fmt::format("duplicate name {}, first used at {}", sim::quote(name), it->second.second));
    it->second.first = t.add_node(name, kind, server, nvls);
  }

  std::vector<std::string> names;
  for (const auto& entry : by_name) names.push_back(entry.first);
  for (const JsonNode& l : links) {
    JsonObject f = l.as_object();
    const JsonNode between = f.required("between");
    const std::vector<JsonNode> ends = between.as_array();
    if (ends.size() != 2) between.fail_expected("an array of two node names");
    models::NodeIndex end[2] = {0, 0};
    for (int i = 0; i < 2; ++i) {
      const std::string name = ends[static_cast<std::size_t>(i)].as_string();
      const auto it = by_name.find(name);
      if (it == by_name.end()) {
        ends[static_cast<std::size_t>(i)].fail(fmt::format("unknown node {}{}", sim::quote(name), sim::did_you_mean(name, names)));
      }
      end[i] = it->second.first;
    }
    if (end[0] == end[1]) between.fail("a link joins two different nodes; both ends are the same");
    const sim::BytesPerSecond bandwidth = positive_bandwidth(f.required("bandwidth"));
    std::optional<JsonNode> reverse = f.optional("bandwidth_reverse");
    const sim::BytesPerSecond back = reverse ? positive_bandwidth(*reverse) : bandwidth;
    const std::optional<JsonNode> latency = f.optional("latency");
    const sim::Duration lat = latency ? link_latency(*latency) : sim::Duration::zero();
    const std::optional<JsonNode> latency_reverse = f.optional("latency_reverse");
    const sim::Duration lat_back = latency_reverse ? link_latency(*latency_reverse) : lat;
    const models::LinkKind kind = parse_kind(f.required("kind"), kLinkKinds);
    f.finish();
    t.connect(end[0], end[1], bandwidth, back, lat, lat_back, kind);
  }

  const std::vector<std::string> problems = t.problems();
  if (!problems.empty()) {
    // Name the first GPU that is cut off, by its place in the file.
    for (const models::NodeIndex g : t.gpus()) {
      if (t.distance(g, t.gpus().front()) < 0) {
        throw sim::InputError(source, by_name.at(t.node(g).name).second,
                              fmt::format("GPU {} is disconnected: it cannot reach GPU {}", sim::quote(t.node(g).name),
                                          sim::quote(t.node(t.gpus().front()).name)));
      }
    }
    throw sim::InputError(source, "/nodes", problems.front());
  }
  t.describe(gpu, net);
  return t;
}

models::Topology read_topology_file(const std::string& path) { return read_topology(read_text_file(path), path); }

std::string topology_json(const models::Topology& t) {
  nlohmann::ordered_json out;
  if (!t.gpu_type().empty()) out["gpu"] = t.gpu_type();
  out["net"] = t.net_kind();
  out["nodes"] = nlohmann::ordered_json::array();
  for (const models::TopoNode& n : t.nodes()) {
    nlohmann::ordered_json node = {{"name", n.name}, {"kind", std::string(models::to_string(n.kind))}};
    if (n.server >= 0) node["server"] = n.server;
    if (n.reduces_in_network()) node["nvls_efficiency"] = n.nvls_efficiency;
    out["nodes"].push_back(std::move(node));
  }
  out["links"] = nlohmann::ordered_json::array();
  // Directed links come in pairs (a->b, b->a): one entry each.
  for (models::LinkIndex l = 0; l + 1 < t.links().size(); l += 2) {
    const models::TopoLink& ab = t.link(l);
    const models::TopoLink& ba = t.link(l + 1);
    nlohmann::ordered_json link = {{"between", {t.node(ab.from).name, t.node(ab.to).name}},
                                   {"bandwidth", fmt::format("{} B/s", ab.bandwidth.value())}};
    if (ba.bandwidth != ab.bandwidth) link["bandwidth_reverse"] = fmt::format("{} B/s", ba.bandwidth.value());
    link["latency"] = fmt::format("{} ns", ab.latency.ns());
    if (ba.latency != ab.latency) link["latency_reverse"] = fmt::format("{} ns", ba.latency.ns());
    link["kind"] = std::string(models::to_string(ab.kind));
    out["links"].push_back(std::move(link));
  }
  return out.dump(1) + "\n";
}

void write_topology_file(const std::string& path, const models::Topology& t) { write_file_atomically(path, topology_json(t)); }

models::Topology load_topology(const std::string& spec_or_path) {
  if (spec_or_path.ends_with(".json")) return read_topology_file(spec_or_path);
  return models::build_topology(spec_or_path);
}

}  // namespace orrery::traces
